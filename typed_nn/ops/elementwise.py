"""Declaration helpers for element-wise ops (the ones the evaluator fuses).

An element-wise op maps each output position to a function of the operands at the same
position, with numpy broadcasting (shapes aligned on their trailing dims, size-1 dims expand;
MetaNN's rule, lower-rank operands repeated over the leading dims, is the case without 1s). Three
shapes of declaration cover the catalogue:

* ``unary(name)``: ``f(x)``;
* ``binary(name)``: ``f(a, b)``, optionally with a Python number on either side;
* ``grad(name)``: ``f(g, x)`` for backward passes, result shaped like ``x`` (``g`` may have
  lower rank, or 1s, and is broadcast).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, TypedDict, Unpack, overload

from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import ShapeError, message
from ..shape import broadcast_shapes, format_shape
from ..tags import (
    D2,
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
    ElemTag,
    FloatTag,
    IntTag,
)
from .declare import Infer, NotDifferentiable, OpDecl, Operand, Params, Vjp
from .node import Operation
from .rules import (
    broadcast_shape,
    check_numbers,
    common_device,
    common_elem,
    require_float,
    site,
    tensor_operands,
)

__all__ = ["ElementwiseGrad", "binary", "elementwise_grad", "grad", "ternary", "unary"]

_Tensor = Tensor
_Operation = Operation

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


_BROADCASTS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
"""Pairs of shapes that broadcast, and to what: a forward's biases meet the same few pairs
at every call."""


def _infer(
    float_only: bool, decl: OpDecl, operands: tuple[Operand, ...], params: Params = ()
) -> Inferred:
    # Fast path for the common case, by exact type (no ABC checks): principal tensors and
    # plain nodes of one element type and device, equal shapes, numbers where allowed.
    # Anything else takes the general path below, which also raises the detailed errors.
    elem: Any = None
    device: Any = None
    shape: Any = None
    numbers = ints = False
    for x in operands:
        t = type(x)
        if t is _Operation:
            e, d, sh = x._elem, x._device, x._shape
        elif t is _Tensor:
            e, d, sh = x._elem, x._device, x._array.shape
        elif t is float and decl.numbers:
            numbers = True
            continue
        elif t is int and decl.numbers:  # checked for every element type (2**2000)
            numbers = ints = True
            continue
        else:
            break
        if elem is None:
            elem, device, shape = e, d, sh
        elif e is not elem or d is not device:
            break
        elif sh != shape:  # a bias or a per-row value: broadcast, pair by pair
            joined = _BROADCASTS.get((shape, sh))
            if joined is None:
                joined = broadcast_shapes(shape, sh)
                if joined is None:
                    break
                if len(_BROADCASTS) < 4096:
                    _BROADCASTS[shape, sh] = joined
            shape = joined
    else:
        if elem is not None and (not float_only or issubclass(elem, FloatTag)):
            if ints or (numbers and issubclass(elem, IntTag)):
                check_numbers(decl, operands, elem)
            return shape, elem, device
    return _infer_general(decl, operands, float_only)


def _infer_general(decl: OpDecl, operands: tuple[Operand, ...], float_only: bool) -> Inferred:
    tensors = tensor_operands(decl, operands)
    first = tensors[0]
    elem, device, shape = first.elem, first.device, first.shape
    # One pass for the common case (same element, device and shape); the shared checks
    # below raise the detailed errors otherwise. Building nodes is on every hot path.
    uniform = True
    for x in tensors[1:]:
        if x.elem is not elem or x.device is not device:
            common_device(decl, tensors)
            common_elem(decl, tensors)
        if x.shape != shape:
            uniform = False
    if float_only and not issubclass(elem, FloatTag):
        require_float(decl, first)
    if decl.numbers and len(tensors) != len(operands):
        check_numbers(decl, operands, elem)
    return (shape if uniform else broadcast_shape(decl, tensors)), elem, device


# Bound once (a positional partial adds no Python frame): the decls' ``infer``.
_infer_any = partial(_infer, False)
_infer_float = partial(_infer, True)


def _infer_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    shape, elem, device = _infer(True, decl, operands)
    x: AnyTensor = operands[-1]
    if shape != x.shape:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: the gradient's shape "
                f"{format_shape(operands[0].shape)} does not broadcast to the forward "
                f"value's {format_shape(x.shape)}.",
                [("grad", operands[0].describe()), ("forward", x.describe())],
                built_at=site(),
                hint="the gradient must have the forward value's shape, or one that "
                "broadcasts to it (its trailing dims, 1s where it repeats).",
            )
        )
    return shape, elem, device


class Code(TypedDict, total=False):
    """How an element-wise op computes, where the declaration says it (see :class:`OpDecl`):
    ``ufunc`` (numpy; its implementation and write-into form on the CPU), ``cuda`` (the C
    expression of one element, for the GPU's fused kernels), ``onnx`` (the ONNX operator),
    ``alias_safe`` (default: whether there is a ufunc) and ``int_overflow``."""

    ufunc: Any
    cuda: str
    onnx: str
    alias_safe: bool
    int_overflow: bool


def _elementwise(name: str, arity: int, infer: Infer, **fields: Any) -> OpDecl:
    fields.setdefault("alias_safe", fields.get("ufunc") is not None)
    return OpDecl(name, arity, infer, kind="elementwise", **fields)


def unary(
    name: str, *, vjp: Vjp | NotDifferentiable, float_only: bool = True, **code: Unpack[Code]
) -> OpDecl:
    """Declare ``name(x)``."""
    return _elementwise(name, 1, _infer_float if float_only else _infer_any, vjp=vjp, **code)


def binary(
    name: str,
    *,
    vjp: Vjp | NotDifferentiable,
    float_only: bool = False,
    numbers: bool = True,
    **code: Unpack[Code],
) -> OpDecl:
    """Declare ``name(a, b)``; numbers may stand on either side when ``numbers``."""
    infer = _infer_float if float_only else _infer_any
    return _elementwise(name, 2, infer, numbers=numbers, vjp=vjp, **code)


def ternary(
    name: str, *, vjp: Vjp, float_only: bool = True, numbers: bool = False, **code: Unpack[Code]
) -> OpDecl:
    """Declare ``name(a, b, c)`` (interpolate)."""
    infer = _infer_float if float_only else _infer_any
    return _elementwise(name, 3, infer, numbers=numbers, vjp=vjp, **code)


def grad(name: str, *, vjp: Vjp, **code: Unpack[Code]) -> OpDecl:
    """Declare the backward op ``name(g, x)``, shaped like ``x``."""
    return _elementwise(name, 2, _infer_grad, vjp=vjp, **code)


class ElementwiseGrad(Protocol):
    """The static type of the element-wise gradient ops ``<op>_grad(g, x)``.

    ``g`` has ``x``'s element and device and at most its rank (it is broadcast over ``x``'s
    leading dims); the result has ``x``'s type. Code generic over the ranks type-checks, over
    one ``D`` or over two (``g`` of rank ``D_in``, ``x`` of rank ``D``: the last overload). A
    ``g`` of more dims than ``x`` is a ShapeError when the node is built.
    """

    @overload
    def __call__(
        self, g: TensorLike[FE, Dv, D], x: TensorLike[FE, Dv, D], /
    ) -> TensorLike[FE, Dv, D]: ...
    @overload
    def __call__(
        self, g: TensorLike[FE, Dv, Dim0], x: TensorLike[FE, Dv, D], /
    ) -> TensorLike[FE, Dv, D]: ...
    @overload
    def __call__(
        self, g: TensorLike[FE, Dv, Dim1], x: TensorLike[FE, Dv, Dim2], /
    ) -> TensorLike[FE, Dv, Dim2]: ...
    @overload
    def __call__(
        self, g: TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2], x: TensorLike[FE, Dv, Dim3], /
    ) -> TensorLike[FE, Dv, Dim3]: ...
    @overload
    def __call__(
        self,
        g: TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3],
        x: TensorLike[FE, Dv, Dim4],
        /,
    ) -> TensorLike[FE, Dv, Dim4]: ...
    @overload
    def __call__(
        self,
        g: TensorLike[FE, Dv, Dim1]
        | TensorLike[FE, Dv, Dim2]
        | TensorLike[FE, Dv, Dim3]
        | TensorLike[FE, Dv, Dim4],
        x: TensorLike[FE, Dv, Dim5],
        /,
    ) -> TensorLike[FE, Dv, Dim5]: ...
    @overload
    def __call__(
        self,
        g: TensorLike[FE, Dv, Dim1]
        | TensorLike[FE, Dv, Dim2]
        | TensorLike[FE, Dv, Dim3]
        | TensorLike[FE, Dv, Dim4]
        | TensorLike[FE, Dv, Dim5],
        x: TensorLike[FE, Dv, Dim6],
        /,
    ) -> TensorLike[FE, Dv, Dim6]: ...
    # Code generic over two ranks (g of rank D_in, x of rank D) reaches this catch-all, and so
    # does a g of a concrete rank above x's (a ShapeError when the node is built): overloads
    # that named those calls as deprecated would also be reported by pyright and ty wherever x
    # has an unknown rank, as in every custom vjp (an AnyTensor).
    @overload
    def __call__(
        self, g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D], /
    ) -> TensorLike[FE, Dv, D]: ...


def elementwise_grad(fn: Callable[[AnyTensor, AnyTensor], AnyTensor]) -> ElementwiseGrad:
    """Give a gradient-op builder ``fn(g, x)`` the static type :class:`ElementwiseGrad`
    (the function itself is returned unchanged)."""
    return fn
