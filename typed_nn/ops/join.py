"""Joining ops: ``concat`` (along an existing dim) and ``stack`` (along a new dim).

``concat([a, b], axis)`` needs items of one rank whose dims agree except along ``axis``; the
result has the same rank. ``stack([a, b], axis)`` needs items of one shape; the result has
rank + 1 with the new dim (of size ``len(items)``) at ``axis``. Both need one element type
and one device.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import overload

from ..data.tensor import AnyTensor, TensorLike
from ..errors import RankError, ShapeError, message
from ..tags import D, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, E, ElemTag
from . import batching
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, build
from .rows import STACK, stack_items
from .rules import common_device, common_elem, python_int, site, tensor_operands
from .special import ZeroTensor

__all__ = ["CONCAT", "NARROW", "STACK", "concat", "narrow", "stack"]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _infer_concat(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    tensors = tensor_operands(decl, operands)
    device = common_device(decl, tensors)
    elem = common_elem(decl, tensors)
    (axis,) = params
    assert isinstance(axis, int)
    first = tensors[0]
    if first.rank == 0 or not 0 <= axis < first.rank:
        raise ShapeError(
            message(
                f"cannot build concat: axis {axis} is not a dim of the items.",
                [("item 1", first.describe()), ("valid axes", f"0 .. {first.rank - 1}")],
                built_at=site(),
                hint="scalars have no dim to join along; use ops.stack for them.",
            )
        )
    for i, t in enumerate(tensors[1:], start=2):
        others = [
            (d, a, b)
            for d, (a, b) in enumerate(zip(first.shape, t.shape, strict=False))
            if d != axis
        ]
        if t.rank != first.rank or any(a != b for _, a, b in others):
            diff = (
                f"rank {first.rank} vs {t.rank}"
                if t.rank != first.rank
                else "; ".join(f"dim {d}: {a} vs {b}" for d, a, b in others if a != b)
            )
            raise ShapeError(
                message(
                    f"cannot build concat: item {i} does not fit item 1 (axis {axis}).",
                    [("item 1", first.describe()), (f"item {i}", f"{t.describe()}   <- {diff}")],
                    built_at=site(),
                    hint=f"every dim except dim {axis} must be the same in all items.",
                )
            )
    size = sum(t.shape[axis] for t in tensors)
    return (*first.shape[:axis], size, *first.shape[axis + 1 :]), elem, device


def _concat_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    (axis,) = n.params
    starts = accumulate((t.shape[axis] for t in n.operands), initial=0)
    return tuple(
        build(NARROW, (g,), (axis, start, t.shape[axis]))
        for start, t in zip(starts, n.operands, strict=False)
    )


CONCAT = OpDecl("concat", -1, _infer_concat, params=("axis",), vjp=_concat_vjp)


def _infer_narrow(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    axis, start, length = params
    assert isinstance(axis, int)
    assert isinstance(start, int)
    assert isinstance(length, int)
    if x.rank == 0 or not 0 <= axis < x.rank:
        raise ShapeError(
            message(
                f"cannot build narrow: axis {axis} is not a dim of the operand.",
                [("operand", x.describe()), ("valid axes", f"0 .. {x.rank - 1}")],
                built_at=site(),
                hint="narrow a tensor of rank >= 1 along one of its dims.",
            )
        )
    size = x.shape[axis]
    if start < 0 or length < 0 or start + length > size:
        raise ShapeError(
            message(
                f"cannot build narrow: [{start}, {start + length}) is outside dim {axis}.",
                [("operand", x.describe()), ("valid", f"0 <= start <= start + length <= {size}")],
                built_at=site(),
                hint=f"choose start and length within the {size} entries of dim {axis}.",
            )
        )
    return (*x.shape[:axis], length, *x.shape[axis + 1 :]), x.elem, x.device


def _narrow_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    # c between zeros along the axis: concat's adjoint
    (x,), (axis, start, length) = n.operands, n.params
    size = x.shape[axis]
    parts = [
        zero_block(c, axis, start),
        c,
        zero_block(c, axis, size - start - length),
    ]
    kept = [p for p in parts if p.shape[axis]] or [c]  # all empty: c is x's shape
    return (kept[0] if len(kept) == 1 else build(CONCAT, tuple(kept), (axis,)),)


def zero_block(like: AnyTensor, axis: int, size: int) -> AnyTensor:
    """A ZeroTensor shaped like ``like`` except ``size`` along ``axis``."""
    shape = (*like.shape[:axis], size, *like.shape[axis + 1 :])
    return ZeroTensor(shape, like.elem, like.device)  # a shape of unknown length: any rank


NARROW = OpDecl(
    "narrow",
    1,
    _infer_narrow,
    params=("axis", "start", "length"),
    kind="view",
    vjp=_narrow_vjp,
    batching=batching.narrow,
    batch_varies="start",
)


def _items(op: str, items: object) -> list[AnyTensor]:
    if not isinstance(items, Sequence) or isinstance(items, TensorLike) or not items:
        raise ShapeError(
            message(
                f"cannot build {op}: it needs a non-empty list of items, got {items!r}.",
                built_at=site(),
                hint=f"pass a list: ops.{op}([a, b], axis=0).",
            )
        )
    return list(items)


def _axis(op: str, axis: object, rank: int, first: AnyTensor) -> int:
    axis = python_int(axis)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        valid = f"{-rank} .. {rank - 1}" if rank else "none: a scalar has no dim to join along"
        raise RankError(
            message(
                f"cannot build {op}: axis {axis!r} is out of range.",
                [("item 1", first.describe()), ("valid axes", valid)],
                built_at=site(),
                hint="count axes from 0, or from -1 for the last one; stack scalars instead.",
            )
        )
    return axis + rank if axis < 0 else axis


def concat(items: Sequence[TensorLike[E, Dv, D]], axis: int = 0) -> TensorLike[E, Dv, D]:
    """Join same-rank items end to end along dim ``axis`` (negative counts from the end).

    ``concat([Matrix(2, 3), Matrix(4, 3)])`` is a Matrix(6, 3); with ``axis=1`` the items
    need equal row counts instead. Raises ShapeError when the other dims differ.
    """
    listed = _items("concat", items)
    first = listed[0]
    if isinstance(first, TensorLike):  # else building reports the non-data operand
        axis = _axis("concat", axis, first.rank, first)
    return build(CONCAT, tuple(listed), (axis,))


# fmt: off
# --- BEGIN GENERATED STACK (scripts/gen_op_overloads.py) ---
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim0]], axis: int = 0) -> TensorLike[E, Dv, Dim1]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim1]], axis: int = 0) -> TensorLike[E, Dv, Dim2]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim2]], axis: int = 0) -> TensorLike[E, Dv, Dim3]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim3]], axis: int = 0) -> TensorLike[E, Dv, Dim4]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim4]], axis: int = 0) -> TensorLike[E, Dv, Dim5]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim5]], axis: int = 0) -> TensorLike[E, Dv, Dim6]: ...
# --- END GENERATED STACK ---
# fmt: on
def stack(items: Sequence[AnyTensor], axis: int = 0) -> AnyTensor:
    """Stack same-shaped items along a new dim ``axis`` (0 .. rank; negative from the end).

    ``stack([Vector(3), Vector(3)])`` is a Matrix(2, 3); ``axis=1`` gives a Matrix(3, 2).
    """
    listed = _items("stack", items)
    first = listed[0]
    if isinstance(first, TensorLike):  # else building reports the non-data operand
        axis = _axis("stack", axis, first.rank + 1, first)
    return stack_items(listed, axis)


def narrow(x: TensorLike[E, Dv, D], axis: int, start: int, length: int) -> TensorLike[E, Dv, D]:
    """Entries ``start .. start + length - 1`` of ``x`` along dim ``axis`` (negative counts
    from the end), a view like ``torch.narrow``; concat's vjp takes its items back with it.

    >>> narrow(tensor([[1.0, 2.0, 3.0]], Float32, CPU, Dim2), 1, 1, 2).numpy()
    array([[2., 3.]], dtype=float32)
    """
    (t,) = tensor_operands(NARROW, (x,))
    axis, start, length = python_int(axis), python_int(start), python_int(length)
    for name, value in (("axis", axis), ("start", start), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ShapeError(
                message(
                    f"cannot build narrow: {name} must be an int, got {value!r}.",
                    [("operand", t.describe())],
                    built_at=site(),
                    hint="pass axis, start and length as ints.",
                )
            )
    return build(NARROW, (x,), (axis + t.rank if axis < 0 else axis, start, length))
