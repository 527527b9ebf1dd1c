"""Explicit conversions: ``astype`` (element type) and ``to_device`` (device).

typed_nn never converts implicitly: mixing Float32 with Float64, or CPU with GPU data, is an
error (a mypy error, and a typed_nn error when the node is built). These two ops are the
explicit way across. Converting to what the data already is returns the data itself.
"""

from __future__ import annotations

from typing import TypeVar

from ..data.tensor import AnyTensor, TensorLike
from ..errors import DeviceError, ElemTypeError, message
from ..tags import DEVICE_TAGS, ELEM_TAGS, D, DeviceTag, Dv, E, ElemTag, FloatTag
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, build
from .rules import site, tensor_operands

__all__ = ["ASTYPE", "TO_DEVICE", "astype", "to_device"]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]
E2 = TypeVar("E2", bound=ElemTag)
Dv2 = TypeVar("Dv2", bound=DeviceTag)
Tag = TypeVar("Tag", bound=ElemTag | DeviceTag)


def _tag(op: str, x: AnyTensor, value: object, kind: type[Tag]) -> type[Tag]:
    """``value`` if it is a concrete tag of ``kind`` (ElemTag or DeviceTag), else an error."""
    elem = kind is ElemTag
    if isinstance(value, type) and issubclass(value, kind) and value in (ELEM_TAGS + DEVICE_TAGS):
        return value
    accepted = "Float32, Float64, Float16, BFloat16, Int32, Int64" if elem else "CPU, GPU"
    raise (ElemTypeError if elem else DeviceError)(
        message(
            f"cannot build {op}: {value!r} is not {'an element' if elem else 'a device'} tag.",
            [("operand", x.describe()), ("accepted", accepted)],
            built_at=site(),
            hint=f"pass the tag class itself, e.g. ops.{op}(x, tn.{accepted.split(',')[0]}).",
        )
    )


def _infer_astype(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    return x.shape, _tag(decl.name, x, params[0], ElemTag), x.device


def _astype_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    # tn.grad reaches this node only when its element is a float; from an integer source
    # there is nothing to differentiate.
    x = n.operands[0]
    return (astype(g, x.elem) if issubclass(x.elem, FloatTag) else None,)


ASTYPE = OpDecl("astype", 1, _infer_astype, params=("elem",), vjp=_astype_vjp)


def astype(x: TensorLike[E, Dv, D], elem: type[E2]) -> TensorLike[E2, Dv, D]:
    """``x`` with its elements converted to ``elem`` (numpy's casting: floats to ints truncate
    toward zero; NaN and out-of-range values give unspecified integers). To ``x``'s own
    element type it is ``x`` itself, as PyTorch's ``x.to(dtype)`` (numpy's ``astype`` copies).

    >>> astype(tensor([1.7, -1.7], Float64, CPU, Dim1), Int32).numpy()
    array([ 1, -1], dtype=int32)
    """
    return _converted(ASTYPE, x, elem, ElemTag)


def _infer_to_device(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = tensor_operands(decl, operands)
    return x.shape, x.elem, _tag(decl.name, x, params[0], DeviceTag)


def _to_device_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (to_device(g, n.operands[0].device),)


TO_DEVICE = OpDecl("to_device", 1, _infer_to_device, params=("device",), vjp=_to_device_vjp)


def to_device(x: TensorLike[E, Dv, D], device: type[Dv2]) -> TensorLike[E, Dv2, D]:
    """``x`` copied to ``device`` (CPU or GPU); the result node lives on ``device``.

    Building the node needs no GPU library; evaluating a move to the GPU needs cupy (a
    ``BackendUnavailableError`` names it when missing).
    """
    return _converted(TO_DEVICE, x, device, DeviceTag)


def _converted(decl: OpDecl, x: AnyTensor, tag: type, kind: type[Tag]) -> AnyTensor:
    """``x`` with its ``kind`` tag (element or device) set to ``tag``: ``x`` itself when it
    has that tag already (the caller's result type then is ``x``'s own), else a new node."""
    (t,) = tensor_operands(decl, (x,))
    _tag(decl.name, t, tag, kind)
    current = t.elem if kind is ElemTag else t.device
    return x if current is tag else build(decl, (x,), (tag,))
