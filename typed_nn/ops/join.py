"""Joining ops: ``concat`` (along an existing dim) and ``stack`` (along a new dim).

``concat([a, b], axis)`` needs items of one rank whose dims agree except along ``axis``; the
result has the same rank. ``stack([a, b], axis)`` needs items of one shape; the result has
rank + 1 with the new dim (of size ``len(items)``) at ``axis``. Both need one element type
and one device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

from ..data.tensor_like import AnyTensor, TensorLike
from ..errors import RankError, ShapeError, message
from ..tags import D, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dim4, Dv, E, ElemTag
from .declare import OpDecl, Operand, Params
from .node import build
from .rules import common_device, common_elem, site, tensor_operands
from .structure import STACK, stack_items

__all__ = ["CONCAT", "STACK", "concat", "stack"]

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


CONCAT = OpDecl("concat", -1, _infer_concat, params=("axis",))


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


@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim0]], axis: int = 0) -> TensorLike[E, Dv, Dim1]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim1]], axis: int = 0) -> TensorLike[E, Dv, Dim2]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim2]], axis: int = 0) -> TensorLike[E, Dv, Dim3]: ...
@overload
def stack(items: Sequence[TensorLike[E, Dv, Dim3]], axis: int = 0) -> TensorLike[E, Dv, Dim4]: ...
def stack(items: Sequence[AnyTensor], axis: int = 0) -> AnyTensor:
    """Stack same-shaped items along a new dim ``axis`` (0 .. rank; negative from the end).

    ``stack([Vector(3), Vector(3)])`` is a Matrix(2, 3); ``axis=1`` gives a Matrix(3, 2).
    """
    listed = _items("stack", items)
    first = listed[0]
    if isinstance(first, TensorLike):  # else building reports the non-data operand
        axis = _axis("stack", axis, first.rank + 1, first)
    return stack_items(listed, axis)
