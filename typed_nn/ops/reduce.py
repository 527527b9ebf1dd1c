"""Reductions: reduce_sum, reduce_mean, reduce_max over chosen dims, and argmax.

Which dims are reduced (MetaNN ReduceSum, METANN.md §2.2):

* ``dims``: an int or a tuple of ints (negative counts from the end; no duplicates);
* ``first=k``: the first ``k`` dims (MetaNN ``PModifyDimNumIs<k>``), e.g. summing a
  per-sample gradient over the batch dim;
* neither: every dim (the result is a Scalar); both: an error.

``keep_dim=True`` keeps reduced dims with size 1 (same rank). When no dim is reduced the
operand itself is returned, as in MetaNN. The result rank is in the static type:
``reduce_sum(Matrix, 0)`` is a Vector, ``reduce_sum(Matrix)`` a Scalar.
"""

from __future__ import annotations

from math import prod
from typing import Any, Literal, overload

import numpy as np

from ..data.tensor import AnyTensor, TensorLike
from ..errors import OperandError, RankError, ShapeError, flag, message
from ..tags import (
    FE,
    D,
    DeviceTag,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Dim5,
    Dim6,
    Dv,
    E,
    ElemTag,
    Int64,
)
from . import batching
from .arithmetic import sign
from .declare import NOT_DIFFERENTIABLE, OpDecl, Operand, Params
from .layout import expand, reshape_to
from .node import AnyOp, Cotangents, build
from .rules import python_int, python_ints, require_float, require_rank, site, tensor_operands

__all__ = [
    "sum_to",
    "ARGMAX",
    "REDUCE_MAX",
    "REDUCE_MEAN",
    "REDUCE_SUM",
    "argmax",
    "group_sums",
    "reduce_max",
    "reduce_mean",
    "reduce_sum",
    "reduced_dims",
]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _bad_dims(decl: OpDecl, x: AnyTensor, dims: object, what: str = "dims") -> OperandError:
    accepted = "an int" if what == "axis" else "an int or a tuple of ints"
    return OperandError(
        message(
            f"cannot build {decl.name}: {what} must be {accepted}.",
            [("operand", x.describe()), (what, repr(dims))],
            built_at=site(),
            hint="write axis=-1 for the last dim."
            if what == "axis"
            else "write dims=0, dims=(0, 2), or first=k for the first k dims.",
        )
    )


def reduced_dims(decl: OpDecl, x: AnyTensor, dims: object, first: object) -> tuple[int, ...]:
    """The canonical (non-negative, sorted) dims of ``x`` that ``dims`` / ``first`` name."""
    if dims is not None and first is not None:
        raise OperandError(
            message(
                f"cannot build {decl.name}: only one of dims or first may be set.",
                [("dims", repr(dims)), ("first", repr(first))],
                built_at=site(),
                hint="dims names the reduced dims; first=k reduces the first k dims.",
            )
        )
    if first is not None:
        first = python_int(first)
        if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first <= x.rank:
            raise RankError(
                message(
                    f"cannot build {decl.name}: first={first!r} is not a number of leading dims.",
                    [("operand", x.describe()), ("accepted", f"first from 0 to {x.rank}")],
                    built_at=site(),
                    hint="first=k reduces dims 0 .. k-1.",
                )
            )
        return tuple(range(first))
    if dims is None:
        return tuple(range(x.rank))
    given = (dims,) if isinstance(dims, int | np.integer) else dims
    items = python_ints(given) if isinstance(given, tuple) else None  # numpy's ints too
    if items is None:
        raise _bad_dims(decl, x, dims)
    canonical: list[int] = []
    for d in items:
        if not -x.rank <= d < x.rank:
            raise ShapeError(
                message(
                    f"cannot build {decl.name}: dim {d} is out of range.",
                    [("operand", x.describe()), ("valid dims", f"{-x.rank} .. {x.rank - 1}")],
                    built_at=site(),
                    hint="count dims from 0, or from -1 for the last one.",
                )
            )
        c = d + x.rank if d < 0 else d
        if c in canonical:
            raise ShapeError(
                message(
                    f"cannot build {decl.name}: dim {c} is named twice.",
                    [("operand", x.describe()), ("dims", repr(dims))],
                    built_at=site(),
                    hint="name each reduced dim once.",
                )
            )
        canonical.append(c)
    return tuple(sorted(canonical))


def _check_nonempty(decl: OpDecl, x: AnyTensor, dims: tuple[int, ...]) -> None:
    empty = [d for d in dims if x.shape[d] == 0]
    if empty:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: it reduces dim {empty[0]}, which has size 0.",
                [("operand", x.describe())],
                built_at=site(),
                hint=f"{decl.name} of no elements is undefined; check the data's shape.",
            )
        )


def _infer_reduce(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    dims, keep_dim = params
    assert isinstance(dims, tuple)
    assert dims == reduced_dims(decl, x, dims, None)
    if decl is REDUCE_MEAN:
        require_float(decl, x)
    if decl is not REDUCE_SUM:
        _check_nonempty(decl, x, dims)
    if keep_dim:
        shape = tuple(1 if i in dims else n for i, n in enumerate(x.shape))
    else:
        shape = tuple(n for i, n in enumerate(x.shape) if i not in dims)
    return shape, x.elem, x.device


def _infer_argmax(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    require_rank(decl, x, at_least=1)
    (axis,) = params
    assert isinstance(axis, int)
    assert 0 <= axis < x.rank
    _check_nonempty(decl, x, (axis,))
    return x.shape[:axis] + x.shape[axis + 1 :], Int64, x.device


def _spread(n: AnyOp, g: AnyTensor) -> AnyTensor:
    """``g``, shaped like the reduction ``n``, repeated back over the reduced dims."""
    x = n.operands[0]
    dims, keep_dim = n.params
    if keep_dim:
        g = reshape_to(g, tuple(size for i, size in enumerate(x.shape) if i not in dims))
    return expand(g, x.shape, dims)


def _sum_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (_spread(n, g),)


def _mean_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    shape = n.operands[0].shape
    # times 1/N, not over N: N itself may pass a 16-bit type's largest value (65504 for
    # Float16), where 1/N is still a (subnormal) number of it
    return (_spread(n, g) * (1.0 / prod(shape[d] for d in n.params[0])),)


def _max_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    # Ties share the gradient evenly (as in JAX and PyTorch's amax).
    at_max = 1.0 - sign(_spread(n, n) - n.operands[0])  # 1 where x is its group's maximum
    ties = _spread(n, build(REDUCE_SUM, (at_max,), n.params))
    return (_spread(n, g) * at_max / ties,)


def group_sums(x: AnyTensor, k: int) -> AnyTensor:
    """The sum of each group of ``x``'s last ``k`` dims, repeated over its group (x's shape)."""
    dims = tuple(range(x.rank - k, x.rank))
    return expand(build(REDUCE_SUM, (x,), (dims, False)), x.shape, dims)


REDUCE_SUM = OpDecl(
    "reduce_sum",
    1,
    _infer_reduce,
    params=("dims", "keep_dim"),
    kind="reduction",
    vjp=_sum_vjp,
    batching=batching.shift_dims,
    int_overflow=True,
    accumulates=True,
)
REDUCE_MEAN = OpDecl(
    "reduce_mean",
    1,
    _infer_reduce,
    params=("dims", "keep_dim"),
    kind="reduction",
    vjp=_mean_vjp,
    batching=batching.shift_dims,
    accumulates=True,
)
REDUCE_MAX = OpDecl(
    "reduce_max",
    1,
    _infer_reduce,
    params=("dims", "keep_dim"),
    kind="reduction",
    vjp=_max_vjp,
    batching=batching.shift_dims,
)
ARGMAX = OpDecl(
    "argmax", 1, _infer_argmax, params=("axis",), kind="reduction", vjp=NOT_DIFFERENTIABLE
)


def _reduce(decl: OpDecl, x: object, dims: object, first: object, keep_dim: bool) -> AnyTensor:
    (data,) = tensor_operands(decl, (x,))
    axes = reduced_dims(decl, data, dims, first)
    given: object = keep_dim  # callers without a type checker may pass anything
    keep = keep_dim if type(given) is bool else flag(f"cannot build {decl.name}", "keep_dim", given)
    if not axes:
        decl.infer(decl, (data,), ((), keep))  # the same checks, then MetaNN's identity
        return data
    return build(decl, (data,), (axes, keep))


def _argmax(x: object, axis: object) -> AnyTensor:
    (data,) = tensor_operands(ARGMAX, (x,))
    require_rank(ARGMAX, data, at_least=1)
    axis = python_int(axis)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise _bad_dims(ARGMAX, data, axis, "axis")
    (canonical,) = reduced_dims(ARGMAX, data, axis, None)
    return build(ARGMAX, (data,), (canonical,))


# fmt: off
# --- BEGIN GENERATED REDUCE (scripts/gen_op_overloads.py) ---
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim0], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim1], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim2], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim3], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, D]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: None = None, *, first: None = None, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: tuple[()], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, D]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: None = None, *, first: Literal[0], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, D]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim1], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim2], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim3], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim5]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim2], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim3], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim3], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim1], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim2], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim3], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim5]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim2], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim3], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim3], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[5], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[5], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[6], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: int, *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Any]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: None = None, *, first: int, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Any]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: int | None = None, *, first: None = None, keep_dim: bool) -> TensorLike[E, Dv, Any]: ...
@overload
def reduce_sum(x: TensorLike[E, Dv, D], dims: None = None, *, first: int, keep_dim: bool) -> TensorLike[E, Dv, Any]: ...
def reduce_sum(
    x: AnyTensor, dims: int | tuple[int, ...] | None = None, *, first: int | None = None,
    keep_dim: bool = False,
) -> AnyTensor:
    """Sum of ``x`` over the reduced dims (see the module docstring)."""
    return _reduce(REDUCE_SUM, x, dims, first, keep_dim)


@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim0], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim1], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim2], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim3], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, Dim6]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[FE, Dv, D]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: None = None, *, first: None = None, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: tuple[()], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, D]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: None = None, *, first: Literal[0], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, D]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim1], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim2], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim3], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim2], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim3], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim3], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: tuple[int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: tuple[int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: tuple[int, int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim1], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim2], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim3], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim2], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim3], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim3], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim4], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim5], dims: None = None, *, first: Literal[5], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: None = None, *, first: Literal[5], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim1]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, Dim6], dims: None = None, *, first: Literal[6], keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Dim0]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: int, *, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Any]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: None = None, *, first: int, keep_dim: Literal[False] = False) -> TensorLike[FE, Dv, Any]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: int | None = None, *, first: None = None, keep_dim: bool) -> TensorLike[FE, Dv, Any]: ...
@overload
def reduce_mean(x: TensorLike[FE, Dv, D], dims: None = None, *, first: int, keep_dim: bool) -> TensorLike[FE, Dv, Any]: ...
def reduce_mean(
    x: AnyTensor, dims: int | tuple[int, ...] | None = None, *, first: int | None = None,
    keep_dim: bool = False,
) -> AnyTensor:
    """Mean of ``x`` over the reduced dims (float elements)."""
    return _reduce(REDUCE_MEAN, x, dims, first, keep_dim)


@overload
def reduce_max(x: TensorLike[E, Dv, Dim0], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim1], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim2], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim3], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]) -> TensorLike[E, Dv, D]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: None = None, *, first: None = None, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: tuple[()], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, D]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: None = None, *, first: Literal[0], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, D]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim1], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim2], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim3], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: int | tuple[int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim5]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim2], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim3], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim3], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: tuple[int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: tuple[int, int, int, int, int, int], *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim1], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim2], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim3], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[1], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim5]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim2], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim3], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[2], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim4]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim3], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[3], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim3]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim4], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[4], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim2]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim5], dims: None = None, *, first: Literal[5], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[5], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim1]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, Dim6], dims: None = None, *, first: Literal[6], keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Dim0]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: int, *, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Any]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: None = None, *, first: int, keep_dim: Literal[False] = False) -> TensorLike[E, Dv, Any]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: int | None = None, *, first: None = None, keep_dim: bool) -> TensorLike[E, Dv, Any]: ...
@overload
def reduce_max(x: TensorLike[E, Dv, D], dims: None = None, *, first: int, keep_dim: bool) -> TensorLike[E, Dv, Any]: ...
def reduce_max(
    x: AnyTensor, dims: int | tuple[int, ...] | None = None, *, first: int | None = None,
    keep_dim: bool = False,
) -> AnyTensor:
    """Maximum of ``x`` over the reduced dims (none of size 0)."""
    return _reduce(REDUCE_MAX, x, dims, first, keep_dim)


@overload
def argmax(x: TensorLike[E, Dv, Dim1], axis: int = -1) -> TensorLike[Int64, Dv, Dim0]: ...
@overload
def argmax(x: TensorLike[E, Dv, Dim2], axis: int = -1) -> TensorLike[Int64, Dv, Dim1]: ...
@overload
def argmax(x: TensorLike[E, Dv, Dim3], axis: int = -1) -> TensorLike[Int64, Dv, Dim2]: ...
@overload
def argmax(x: TensorLike[E, Dv, Dim4], axis: int = -1) -> TensorLike[Int64, Dv, Dim3]: ...
@overload
def argmax(x: TensorLike[E, Dv, Dim5], axis: int = -1) -> TensorLike[Int64, Dv, Dim4]: ...
@overload
def argmax(x: TensorLike[E, Dv, Dim6], axis: int = -1) -> TensorLike[Int64, Dv, Dim5]: ...
def argmax(x: AnyTensor, axis: int = -1) -> AnyTensor:
    """Int64 index of the maximum along ``axis`` (the first on ties); that dim is removed."""
    return _argmax(x, axis)
# --- END GENERATED REDUCE ---
# fmt: on


def sum_to(c: AnyTensor, shape: tuple[int, ...]) -> AnyTensor:
    """The cotangent ``c`` of a broadcast value, summed back to the operand ``shape``:
    over the leading dims the operand lacks, and over its size-1 dims that were expanded."""
    if c.shape == shape:
        return c
    lead = c.rank - len(shape)
    if lead < 0:  # a cotangent of lower rank stands for its repeats (a scalar zero, ...)
        return sum_to(expand(c, (*shape[:-lead], *c.shape), tuple(range(-lead))), shape)
    if lead:
        c = build(REDUCE_SUM, (c,), (tuple(range(lead)), False))
    ones = tuple(i for i, (n, m) in enumerate(zip(c.shape, shape, strict=True)) if m == 1 != n)
    if ones:
        c = build(REDUCE_SUM, (c,), (ones, True))
    assert c.shape == shape, f"cannot sum a cotangent {c.shape} back to {shape}"
    return c
