"""Declare an op once; implement it per device (cl-waffe2's defnode / define-impl).

An :class:`OpDecl` carries everything about an op that does not depend on the device: its
name, arity, parameter names, whether Python numbers may stand for operands, what kind of
computation it is (the evaluator fuses ``elementwise`` ops), and ``infer``, which checks the
operands at build time and returns the result's shape, element and device.

Backends register implementations with :func:`implement`; a device may hold several for one
op, and the one with the highest priority wins. :func:`implementation` finds it, or raises
``NoImplementationError`` naming the op, the device and the devices that have one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import NoImplementationError, message
from ..tags import DeviceTag, ElemTag

__all__ = [
    "Impl",
    "Infer",
    "OpDecl",
    "OpKind",
    "Operand",
    "Params",
    "implement",
    "implementation",
    "implemented_devices",
]

Operand = Any
"""A node operand: a TensorLike, or a Python number where the op accepts one."""
Params = tuple[object, ...]
"""An op's parameters: hashable values (ints, tuples, tags), compared for equality."""
Infer = Callable[
    ["OpDecl", tuple[Operand, ...], Params], tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]
]
Impl = Callable[..., Any]
"""``impl(*operand_arrays_or_numbers, *params) -> array``."""

OpKind = Literal["elementwise", "reduction", "contraction", "view", "source", "general"]


@dataclass(frozen=True, slots=True, eq=False)
class OpDecl:
    """The device-independent declaration of one op."""

    name: str
    arity: int
    infer: Infer
    params: tuple[str, ...] = ()
    kind: OpKind = "general"
    numbers: bool = False
    """Python numbers may stand for tensor operands (``x + 1``, ``1 - x``)."""

    def __repr__(self) -> str:
        return f"OpDecl({self.name!r})"


_IMPLS: dict[str, dict[str, list[tuple[int, Impl]]]] = {}


def implement(
    op: str | OpDecl, device: type[DeviceTag], *, priority: int = 0
) -> Callable[[Impl], Impl]:
    """Register the decorated function as ``op``'s implementation on ``device``."""
    name = op if isinstance(op, str) else op.name

    def register(fn: Impl) -> Impl:
        impls = _IMPLS.setdefault(name, {}).setdefault(device.name, [])
        impls.append((priority, fn))
        impls.sort(key=lambda item: -item[0])
        return fn

    return register


def implementation(op: str, device: type[DeviceTag]) -> Impl:
    """The highest-priority implementation of ``op`` on ``device``."""
    impls = _IMPLS.get(op, {}).get(device.name)
    if not impls:
        have = sorted(dev for dev, fns in _IMPLS.get(op, {}).items() if fns)
        raise NoImplementationError(
            message(
                f"op '{op}' has no implementation on {device.name}.",
                [("device", device.name), ("implemented on", ", ".join(have) or "no device")],
                hint=f"move the operands with ops.to_device(x, {have[0]})" if have else None,
            )
        )
    return impls[0][1]


def implemented_devices(op: str) -> list[str]:
    """Names of the devices that implement ``op``."""
    return sorted(dev for dev, fns in _IMPLS.get(op, {}).items() if fns)
