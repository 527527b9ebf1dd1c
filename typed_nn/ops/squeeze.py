"""``squeeze`` / ``unsqueeze``: drop or insert one size-1 dim (PyTorch's, one dim at a time).

Both are ``reshape`` with the dim removed or inserted: the same zero-copy view, the same
gradient (reshaped back), no kernel of their own. Statically the rank goes down or up by one.
"""

from __future__ import annotations

from typing import overload

from ..data.tensor import AnyTensor, TensorLike
from ..errors import OperandError, RankError, ShapeError, message
from ..tags import MAX_RANK, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, E
from .layout import reshape_to
from .rules import describe, python_int, site

__all__ = ["squeeze", "unsqueeze"]


def _operand(op: str, x: object) -> AnyTensor:
    if not isinstance(x, TensorLike):
        raise OperandError(
            message(
                f"cannot build {op}: x is not typed_nn data.",
                [("x", describe(x)), ("accepted", "typed_nn data")],
                built_at=site(),
                hint="wrap arrays with tn.tensor(array, elem, device, dim).",
            )
        )
    return x


def _dim(op: str, x: AnyTensor, dim: object, rank: int) -> int:
    """``dim`` counted from 0 among ``rank`` positions (negative counts from the end)."""
    dim = python_int(dim)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
        valid = f"{-rank} .. {rank - 1}" if rank else "none: a scalar has no dim to drop"
        raise RankError(
            message(
                f"cannot build {op}: dim {dim!r} is out of range.",
                [("operand", x.describe()), ("valid dims", valid)],
                built_at=site(),
                hint="count dims from 0, or from -1 for the last one.",
            )
        )
    return dim + rank if dim < 0 else dim


# fmt: off
# --- BEGIN GENERATED SQUEEZE (scripts/gen_op_overloads.py) ---
@overload
def squeeze(x: TensorLike[E, Dv, Dim1], dim: int) -> TensorLike[E, Dv, Dim0]: ...
@overload
def squeeze(x: TensorLike[E, Dv, Dim2], dim: int) -> TensorLike[E, Dv, Dim1]: ...
@overload
def squeeze(x: TensorLike[E, Dv, Dim3], dim: int) -> TensorLike[E, Dv, Dim2]: ...
@overload
def squeeze(x: TensorLike[E, Dv, Dim4], dim: int) -> TensorLike[E, Dv, Dim3]: ...
@overload
def squeeze(x: TensorLike[E, Dv, Dim5], dim: int) -> TensorLike[E, Dv, Dim4]: ...
@overload
def squeeze(x: TensorLike[E, Dv, Dim6], dim: int) -> TensorLike[E, Dv, Dim5]: ...
# --- END GENERATED SQUEEZE ---
# fmt: on
def squeeze(x: AnyTensor, dim: int) -> AnyTensor:
    """``x`` without its dim ``dim``, which must have size 1 (negative counts from the end).

    A Tensor3(4, 1, 5) squeezed at 1 is a Matrix(4, 5); a view, its gradient reshaped back.

    >>> squeeze(zeros((4, 1, 5), Float32, CPU), 1).shape
    (4, 5)
    """
    t = _operand("squeeze", x)
    axis = _dim("squeeze", t, dim, t.rank)
    if t.shape[axis] != 1:
        raise ShapeError(
            message(
                f"cannot build squeeze: dim {dim} has size {t.shape[axis]}, not 1.",
                [("operand", t.describe()), ("declared", f"size 1 at dim {dim}")],
                built_at=site(),
                hint="squeeze only drops a size-1 dim; to merge or drop data use ops.reshape, "
                "ops.narrow or ops.reduce_sum.",
            )
        )
    return reshape_to(t, t.shape[:axis] + t.shape[axis + 1 :])


# fmt: off
# --- BEGIN GENERATED UNSQUEEZE (scripts/gen_op_overloads.py) ---
@overload
def unsqueeze(x: TensorLike[E, Dv, Dim0], dim: int) -> TensorLike[E, Dv, Dim1]: ...
@overload
def unsqueeze(x: TensorLike[E, Dv, Dim1], dim: int) -> TensorLike[E, Dv, Dim2]: ...
@overload
def unsqueeze(x: TensorLike[E, Dv, Dim2], dim: int) -> TensorLike[E, Dv, Dim3]: ...
@overload
def unsqueeze(x: TensorLike[E, Dv, Dim3], dim: int) -> TensorLike[E, Dv, Dim4]: ...
@overload
def unsqueeze(x: TensorLike[E, Dv, Dim4], dim: int) -> TensorLike[E, Dv, Dim5]: ...
@overload
def unsqueeze(x: TensorLike[E, Dv, Dim5], dim: int) -> TensorLike[E, Dv, Dim6]: ...
# --- END GENERATED UNSQUEEZE ---
# fmt: on
def unsqueeze(x: AnyTensor, dim: int) -> AnyTensor:
    """``x`` with a new size-1 dim at position ``dim`` of the result (0 .. rank; negative
    counts from the end, as ``torch.unsqueeze``); the inverse of ``squeeze``.

    >>> unsqueeze(zeros((4, 5), Float32, CPU), 0).shape
    (1, 4, 5)
    """
    t = _operand("unsqueeze", x)
    if t.rank >= MAX_RANK:
        raise RankError(
            message(
                f"cannot build unsqueeze: typed_nn data has at most {MAX_RANK} dims.",
                [("operand", f"{t.describe()}   <- already {t.rank} dims")],
                built_at=site(),
                hint="reshape to fewer dims first (ops.reshape).",
            )
        )
    axis = _dim("unsqueeze", t, dim, t.rank + 1)
    return reshape_to(t, (*t.shape[:axis], 1, *t.shape[axis:]))
