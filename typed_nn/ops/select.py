"""Selection: element-wise ``maximum``, ``minimum``, ``where``, ``interpolate`` (METANN.md §2.2).

All four are element-wise with numpy broadcasting (shapes aligned on their trailing dims,
size-1 dims expand; the result has the highest rank), so the evaluator
fuses them with their neighbours.

* ``maximum(a, b)``: the larger of ``a`` and ``b``; a Python number may stand on either side.
* ``minimum(a, b)``: the smaller, likewise.
* ``where(cond, a, b)``: ``a`` where ``cond`` is non-zero, else ``b``. ``cond`` may have any
  element type; ``a`` and ``b`` share theirs, which is the result's.
* ``interpolate(a, b, lam)``: ``a * lam + b * (1 - lam)`` (MetaNN Interpolate, GRU's last
  step), float elements.

Statically, operand ranks may mix Scalars and at most two distinct ranks; a Tensor3, a
Matrix and a Vector in one ``where`` / ``interpolate`` are accepted only at run time.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

from ..data.tensor import AnyTensor, TensorLike
from ..errors import ElemTypeError, message
from ..tags import FE, D, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, E, ElemTag
from .arithmetic import sign
from .declare import OpDecl, Operand, Params
from .elementwise import binary, ternary
from .node import AnyOp, Cotangents, build
from .rules import broadcast_shape, common_device, site, tensor_operands
from .special import ZeroTensor

__all__ = [
    "INTERPOLATE",
    "MAXIMUM",
    "MINIMUM",
    "WHERE",
    "interpolate",
    "maximum",
    "minimum",
    "where",
]

C = TypeVar("C", bound=ElemTag)
"""The element type of a ``where`` condition (any; non-zero means true)."""

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def _infer_where(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    tensors = tensor_operands(decl, operands)
    device = common_device(decl, tensors)
    _, a, b = tensors
    if a.elem is not b.elem:
        raise ElemTypeError(
            message(
                "cannot build where: the two branches have different element types.",
                [("a", a.describe()), ("b", b.describe())],
                built_at=site(),
                hint=f"convert one branch explicitly with ops.astype(b, {a.elem.__name__}).",
            )
        )
    return broadcast_shape(decl, tensors), a.elem, device


def _maximum_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    a, b = n.operands
    to_a = g * ((sign(a - b) + 1.0) * 0.5)  # ties split the gradient evenly, as in JAX
    return to_a, g - to_a


def _minimum_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    a, b = n.operands
    to_a = g * ((sign(b - a) + 1.0) * 0.5)  # ties split the gradient evenly, as maximum's
    return to_a, g - to_a


def _where_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    cond = n.operands[0]
    zero = ZeroTensor((), g.elem, g.device)
    return None, build(WHERE, (cond, g, zero)), build(WHERE, (cond, zero, g))


def _interpolate_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    a, b, lam = n.operands
    to_a = g * lam
    return to_a, g - to_a, g * (a - b)


MAXIMUM = binary(  # NaN wins, as np.maximum
    "maximum",
    onnx="Max",
    vjp=_maximum_vjp,
    alias_safe=True,
    cuda="(({0} > {1} || {0} != {0}) ? {0} : {1})",
)
MINIMUM = binary(  # NaN wins, as np.minimum
    "minimum",
    onnx="Min",
    vjp=_minimum_vjp,
    alias_safe=True,
    cuda="(({0} < {1} || {0} != {0}) ? {0} : {1})",
)
WHERE = OpDecl(
    "where", 3, _infer_where, kind="elementwise", vjp=_where_vjp, cuda="({0} != 0 ? {1} : {2})"
)
INTERPOLATE = ternary(  # MetaNN's order: lam = 1 gives a
    "interpolate", vjp=_interpolate_vjp, cuda="{1} * ({one} - {2}) + {0} * {2}"
)


# fmt: off
# --- BEGIN GENERATED SELECT (scripts/gen_op_overloads.py) ---
@overload
def maximum(a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...
@overload
def maximum(a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, Dim0]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def maximum(a: TensorLike[E, Dv, Dim0], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def maximum(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5] | TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def maximum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def maximum(a: TensorLike[E, Dv, Any], b: TensorLike[E, Dv, Any]) -> TensorLike[E, Dv, Any]: ...
@overload
def maximum(a: TensorLike[E, Dv, D], b: int) -> TensorLike[E, Dv, D]: ...
@overload
def maximum(a: int, b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...
@overload
def maximum(a: TensorLike[FE, Dv, D], b: float) -> TensorLike[FE, Dv, D]: ...
@overload
def maximum(a: float, b: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]: ...
def maximum(a: object, b: object) -> AnyTensor:
    """Element-wise maximum with numpy broadcasting; either side may be a number."""
    return build(MAXIMUM, (a, b))


@overload
def minimum(a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...
@overload
def minimum(a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, Dim0]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def minimum(a: TensorLike[E, Dv, Dim0], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def minimum(a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5] | TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def minimum(a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def minimum(a: TensorLike[E, Dv, Any], b: TensorLike[E, Dv, Any]) -> TensorLike[E, Dv, Any]: ...
@overload
def minimum(a: TensorLike[E, Dv, D], b: int) -> TensorLike[E, Dv, D]: ...
@overload
def minimum(a: int, b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...
@overload
def minimum(a: TensorLike[FE, Dv, D], b: float) -> TensorLike[FE, Dv, D]: ...
@overload
def minimum(a: float, b: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]: ...
def minimum(a: object, b: object) -> AnyTensor:
    """Element-wise minimum with numpy broadcasting; either side may be a number."""
    return build(MINIMUM, (a, b))


@overload
def where(cond: TensorLike[C, Dv, D], a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...
@overload
def where(cond: TensorLike[C, Dv, D], a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, Dim0]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def where(cond: TensorLike[C, Dv, D], a: TensorLike[E, Dv, Dim0], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def where(cond: TensorLike[C, Dv, D], a: TensorLike[E, Dv, Dim0], b: TensorLike[E, Dv, Dim0]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def where(cond: TensorLike[C, Dv, Dim0], a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def where(cond: TensorLike[C, Dv, Dim0], a: TensorLike[E, Dv, D], b: TensorLike[E, Dv, Dim0]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def where(cond: TensorLike[C, Dv, Dim0], a: TensorLike[E, Dv, Dim0], b: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def where(cond: TensorLike[C, Dv, Dim2], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1], a: TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1], b: TensorLike[E, Dv, Dim2]) -> TensorLike[E, Dv, Dim2]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim3], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2], a: TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2], b: TensorLike[E, Dv, Dim3]) -> TensorLike[E, Dv, Dim3]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim4], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2] | TensorLike[C, Dv, Dim3], a: TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2] | TensorLike[C, Dv, Dim3], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3], b: TensorLike[E, Dv, Dim4]) -> TensorLike[E, Dv, Dim4]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim5], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2] | TensorLike[C, Dv, Dim3] | TensorLike[C, Dv, Dim4], a: TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2] | TensorLike[C, Dv, Dim3] | TensorLike[C, Dv, Dim4], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4], b: TensorLike[E, Dv, Dim5]) -> TensorLike[E, Dv, Dim5]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim6], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5] | TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5] | TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2] | TensorLike[C, Dv, Dim3] | TensorLike[C, Dv, Dim4] | TensorLike[C, Dv, Dim5], a: TensorLike[E, Dv, Dim6], b: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5] | TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def where(cond: TensorLike[C, Dv, Dim0] | TensorLike[C, Dv, Dim1] | TensorLike[C, Dv, Dim2] | TensorLike[C, Dv, Dim3] | TensorLike[C, Dv, Dim4] | TensorLike[C, Dv, Dim5], a: TensorLike[E, Dv, Dim0] | TensorLike[E, Dv, Dim1] | TensorLike[E, Dv, Dim2] | TensorLike[E, Dv, Dim3] | TensorLike[E, Dv, Dim4] | TensorLike[E, Dv, Dim5], b: TensorLike[E, Dv, Dim6]) -> TensorLike[E, Dv, Dim6]: ...
@overload
def where(cond: TensorLike[C, Dv, Any], a: TensorLike[E, Dv, Any], b: TensorLike[E, Dv, Any]) -> TensorLike[E, Dv, Any]: ...
def where(cond: AnyTensor, a: AnyTensor, b: AnyTensor) -> AnyTensor:
    """``a`` where ``cond`` is non-zero, else ``b``; all three broadcast."""
    return build(WHERE, (cond, a, b))


@overload
def interpolate(a: TensorLike[FE, Dv, D], b: TensorLike[FE, Dv, D], lam: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, D], b: TensorLike[FE, Dv, D], lam: TensorLike[FE, Dv, Dim0]) -> TensorLike[FE, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def interpolate(a: TensorLike[FE, Dv, D], b: TensorLike[FE, Dv, Dim0], lam: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def interpolate(a: TensorLike[FE, Dv, D], b: TensorLike[FE, Dv, Dim0], lam: TensorLike[FE, Dv, Dim0]) -> TensorLike[FE, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0], b: TensorLike[FE, Dv, D], lam: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0], b: TensorLike[FE, Dv, D], lam: TensorLike[FE, Dv, Dim0]) -> TensorLike[FE, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0], b: TensorLike[FE, Dv, Dim0], lam: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]: ...  # type: ignore[overload-overlap]
@overload
def interpolate(a: TensorLike[FE, Dv, Dim2], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2]) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1], b: TensorLike[FE, Dv, Dim2], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2]) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1], lam: TensorLike[FE, Dv, Dim2]) -> TensorLike[FE, Dv, Dim2]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim3], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3]) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2], b: TensorLike[FE, Dv, Dim3], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3]) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2], lam: TensorLike[FE, Dv, Dim3]) -> TensorLike[FE, Dv, Dim3]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim4], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4]) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3], b: TensorLike[FE, Dv, Dim4], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4]) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3], lam: TensorLike[FE, Dv, Dim4]) -> TensorLike[FE, Dv, Dim4]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim5], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5]) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4], b: TensorLike[FE, Dv, Dim5], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5]) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4], lam: TensorLike[FE, Dv, Dim5]) -> TensorLike[FE, Dv, Dim5]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim6], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5] | TensorLike[FE, Dv, Dim6], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5] | TensorLike[FE, Dv, Dim6]) -> TensorLike[FE, Dv, Dim6]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5], b: TensorLike[FE, Dv, Dim6], lam: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5] | TensorLike[FE, Dv, Dim6]) -> TensorLike[FE, Dv, Dim6]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5], b: TensorLike[FE, Dv, Dim0] | TensorLike[FE, Dv, Dim1] | TensorLike[FE, Dv, Dim2] | TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim4] | TensorLike[FE, Dv, Dim5], lam: TensorLike[FE, Dv, Dim6]) -> TensorLike[FE, Dv, Dim6]: ...
@overload
def interpolate(a: TensorLike[FE, Dv, Any], b: TensorLike[FE, Dv, Any], lam: TensorLike[FE, Dv, Any]) -> TensorLike[FE, Dv, Any]: ...
def interpolate(a: AnyTensor, b: AnyTensor, lam: AnyTensor) -> AnyTensor:
    """a * lam + b * (1 - lam) element-wise; all three broadcast (MetaNN Interpolate)."""
    return build(INTERPOLATE, (a, b, lam))
# --- END GENERATED SELECT ---
# fmt: on
