"""Lazy data with no storage until evaluated: ``ZeroTensor`` and ``ConstantTensor``
(``BiasVector``, a one-hot row, lives with the slice it transposes, in ``ops/rows.py``).

They are operation nodes with no tensor inputs (their values come from their parameters), so
the evaluator treats them like any node, and can fold them away: ``x + ZeroTensor`` is ``x``.
Equality follows MetaNN: a ZeroTensor by shape, the others by their parameters.
"""

from __future__ import annotations

from typing import Any, overload

from ..data.tensor import AnyTensor, TensorLike
from ..errors import OperandError, message
from ..shape import check_shape, deprecated
from ..tags import (
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
)
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, Operation, build, user_site
from .reduce import REDUCE_SUM

__all__ = ["ConstantTensor", "Inferred", "ZeroTensor", "scalar_operand", "zeros_like"]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _infer_params(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    shape, elem, device = params
    assert isinstance(shape, tuple)
    assert isinstance(elem, type)
    assert isinstance(device, type)
    return shape, elem, device


def scalar_operand(what: str, value: object) -> TensorLike[Any, Any, Dim0]:
    if not isinstance(value, TensorLike) or value.rank != 0:
        raise OperandError(
            message(
                f"{what} needs a scalar tensor for its value.",
                [("received", value.describe() if isinstance(value, TensorLike) else repr(value))],
                hint="make one with tn.scalar(value, elem, device).",
            )
        )
    return value


def _zeros_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return ()  # no operands


ZEROS = OpDecl(
    "zeros", 0, _infer_params, params=("shape", "elem", "device"), kind="source", vjp=_zeros_vjp
)


def _infer_fill(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    shape = params[0]
    assert isinstance(shape, tuple)
    return shape, operands[0].elem, operands[0].device


def _fill_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (build(REDUCE_SUM, (g,), (tuple(range(g.rank)), False)) if g.rank else g,)


FILL = OpDecl("fill", 1, _infer_fill, params=("shape",), kind="source", vjp=_fill_vjp)


class ZeroTensor(Operation[E, Dv, D]):
    """All zeros of a given shape; no storage until evaluated. Equal when shapes are equal."""

    __slots__ = ()

    # fmt: off
    # --- BEGIN GENERATED ZERO TENSOR (scripts/gen_op_overloads.py) ---
    @overload
    def __init__(self: ZeroTensor[E, Dv, Dim2], shape: tuple[int, int], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    def __init__(self: ZeroTensor[E, Dv, Dim0], shape: tuple[()], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    def __init__(self: ZeroTensor[E, Dv, Dim1], shape: tuple[int], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    def __init__(self: ZeroTensor[E, Dv, Dim3], shape: tuple[int, int, int], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    def __init__(self: ZeroTensor[E, Dv, Dim4], shape: tuple[int, int, int, int], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    def __init__(self: ZeroTensor[E, Dv, Dim5], shape: tuple[int, int, int, int, int], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    def __init__(self: ZeroTensor[E, Dv, Dim6], shape: tuple[int, int, int, int, int, int], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    @deprecated("typed_nn data has at most 6 dims; this call raises RankError")
    def __init__(self: ZeroTensor[E, Dv, Any], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]], elem: type[E], device: type[Dv]) -> None: ...
    @overload
    def __init__(self: ZeroTensor[E, Dv, Any], shape: tuple[int, ...], elem: type[E], device: type[Dv]) -> None: ...
    # --- END GENERATED ZERO TENSOR ---
    # fmt: on
    def __init__(self, shape: tuple[int, ...], elem: type[E], device: type[Dv]) -> None:
        shape = check_shape(shape, "ZeroTensor")
        super().__init__(ZEROS, (), (shape, elem, device), shape, elem, device, user_site())

    def _kind(self) -> str:
        return "ZeroTensor"


class ConstantTensor(Operation[E, Dv, D]):
    """Every element equals one scalar (MetaNN's TrivialTensor); elem/device from the scalar."""

    __slots__ = ()

    # fmt: off
    # --- BEGIN GENERATED CONSTANT TENSOR (scripts/gen_op_overloads.py) ---
    @overload
    def __init__(self: ConstantTensor[E, Dv, Dim2], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, int]) -> None: ...
    @overload
    def __init__(self: ConstantTensor[E, Dv, Dim0], scalar: TensorLike[E, Dv, Dim0], shape: tuple[()]) -> None: ...
    @overload
    def __init__(self: ConstantTensor[E, Dv, Dim1], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int]) -> None: ...
    @overload
    def __init__(self: ConstantTensor[E, Dv, Dim3], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, int, int]) -> None: ...
    @overload
    def __init__(self: ConstantTensor[E, Dv, Dim4], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, int, int, int]) -> None: ...
    @overload
    def __init__(self: ConstantTensor[E, Dv, Dim5], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, int, int, int, int]) -> None: ...
    @overload
    def __init__(self: ConstantTensor[E, Dv, Dim6], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, int, int, int, int, int]) -> None: ...
    @overload
    @deprecated("typed_nn data has at most 6 dims; this call raises RankError")
    def __init__(self: ConstantTensor[E, Dv, Any], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, int, int, int, int, int, int, *tuple[int, ...]]) -> None: ...
    @overload
    def __init__(self: ConstantTensor[E, Dv, Any], scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, ...]) -> None: ...
    # --- END GENERATED CONSTANT TENSOR ---
    # fmt: on
    def __init__(self, scalar: TensorLike[E, Dv, Dim0], shape: tuple[int, ...]) -> None:
        value = scalar_operand("ConstantTensor", scalar)
        shape = check_shape(shape, "ConstantTensor")
        super().__init__(FILL, (value,), (shape,), shape, value.elem, value.device, user_site())

    @property
    def scalar(self) -> TensorLike[E, Dv, Dim0]:
        """The value every element has."""
        value: TensorLike[E, Dv, Dim0] = self.operands[0]
        return value

    def _kind(self) -> str:
        return "ConstantTensor"


def zeros_like(x: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]:
    """A :class:`ZeroTensor` with ``x``'s shape, element and device (no storage)."""
    return ZeroTensor(x.shape, x.elem, x.device)  # a shape of unknown length: any rank
