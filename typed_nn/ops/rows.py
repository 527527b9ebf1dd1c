"""Rows: ``x[i]`` (the slice along dim 0), stacking items along a new dim, and
``BiasVector``, the one-hot row (MetaNN's BiasVector / OneHotVector). They are one module
because their vjps are each other's: a slice's cotangent is its row stacked among zeros, and
a one-hot row's is the slice at its position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.tensor import ROW_INDEX_HINT, AnyTensor, TensorLike
from ..errors import RankError, ShapeError, message
from ..tags import MAX_RANK, Dim0, Dim1, Dv, E
from . import layout
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, Operation, build, user_site
from .rules import common_device, common_elem, site, tensor_operands
from .special import Inferred, scalar_operand, zeros_like

__all__ = ["BiasVector", "ONE_HOT", "SLICE", "STACK", "slice", "stack_items"]


def _infer_slice(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    (index,) = params
    assert isinstance(index, int)
    if x.rank == 0:
        raise RankError(
            message("cannot index a scalar.", [("data", x.describe())], built_at=site())
        )
    n = x.shape[0]
    if not 0 <= index < n:
        raise ShapeError(
            message(
                f"cannot take row {index} of data with {n} rows (ID out of bound).",
                [("data", x.describe()), ("index", str(index)), ("valid", f"0 .. {n - 1}")],
                built_at=site(),
                hint="index dim 0 within its size.",
            )
        )
    return x.shape[1:], x.elem, x.device


def _slice_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    # g in row ``index`` of zeros shaped like x (one ZeroTensor object: evaluated once)
    (index,), rows = n.params, n.operands[0].shape[0]
    zero = zeros_like(g)
    return (stack_items([zero] * index + [g] + [zero] * (rows - index - 1)),)


SLICE = OpDecl("slice", 1, _infer_slice, params=("index",), kind="view", vjp=_slice_vjp)


def _infer_stack(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    tensors = tensor_operands(decl, operands)
    device = common_device(decl, tensors)
    elem = common_elem(decl, tensors)
    (axis,) = params
    assert isinstance(axis, int)
    first = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != first:
            raise ShapeError(
                message(
                    f"cannot build {decl.name}: item shapes differ.",
                    [("item 1", tensors[0].describe()), (f"item {i + 1}", t.describe())],
                    built_at=site(),
                    hint="every stacked item must have the same shape.",
                )
            )
    if len(first) + 1 > MAX_RANK:
        raise RankError(
            message(
                f"cannot build {decl.name}: the result would have rank {len(first) + 1}.",
                [("item", tensors[0].describe())],
                built_at=site(),
                hint=f"typed_nn data has at most {MAX_RANK} dims.",
            )
        )
    if not 0 <= axis <= len(first):
        raise ShapeError(
            message(
                f"cannot build {decl.name}: axis {axis} is out of range.",
                [("item", tensors[0].describe()), ("valid axes", f"0 .. {len(first)}")],
                built_at=site(),
            )
        )
    return (*first[:axis], len(tensors), *first[axis:]), elem, device


def _stack_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    (axis,) = n.params
    if axis:
        order = tuple([int(axis), *(d for d in range(g.rank) if d != axis)])  # run-time length
        g = layout.permute(g, order)
    return tuple(slice(g, i) for i in range(len(n.operands)))


STACK = OpDecl("stack", -1, _infer_stack, params=("axis",), vjp=_stack_vjp)


def stack_items(items: Sequence[AnyTensor], axis: int = 0) -> AnyTensor:
    """Stack same-shaped items along a new dim ``axis`` (untyped core of ``ops.stack``)."""
    if not items:
        raise ShapeError(
            message(
                "Cannot initialize dynamic array with empty sequence.",
                hint="stack at least one item.",
            )
        )
    return build(STACK, tuple(items), (axis,))


def slice(x: AnyTensor, index: int) -> AnyTensor:
    """Row ``index`` of ``x`` along dim 0 (negative counts from the end); ``x[i]``."""
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise ShapeError(
            message(
                f"cannot index {x.describe()} with {type(index).__name__} {index!r}.",
                hint=ROW_INDEX_HINT,
            )
        )
    index = int(index)
    n = x.shape[0] if x.shape else 0
    return build(SLICE, (x,), (index + n if index < 0 else index,))


def _infer_one_hot(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    length = params[0]
    assert isinstance(length, int)
    return (length,), operands[0].elem, operands[0].device


def _one_hot_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (slice(g, n.params[1]),)


ONE_HOT = OpDecl(
    "one_hot", 1, _infer_one_hot, params=("length", "pos"), kind="source", vjp=_one_hot_vjp
)


class BiasVector(Operation[E, Dv, Dim1]):
    """A vector of zeros with one value at ``pos`` (MetaNN's BiasVector / OneHotVector)."""

    __slots__ = ()

    def __init__(self, length: int, pos: int, scalar: TensorLike[E, Dv, Dim0]) -> None:
        value = scalar_operand("BiasVector", scalar)
        if not 0 <= pos < length:
            raise ShapeError(
                message(
                    "BiasVector position is out of range.",
                    [("length", str(length)), ("pos", str(pos))],
                    hint=f"use 0 <= pos < {length}.",
                )
            )
        super().__init__(
            ONE_HOT, (value,), (length, pos), (length,), value.elem, value.device, user_site()
        )

    @property
    def hot_pos(self) -> int:
        """The index of the non-zero element."""
        pos = self.params[1]
        assert isinstance(pos, int)
        return pos

    @property
    def scalar(self) -> TensorLike[E, Dv, Dim0]:
        """The value at ``hot_pos``."""
        value: TensorLike[E, Dv, Dim0] = self.operands[0]
        return value

    def _kind(self) -> str:
        return "BiasVector"
