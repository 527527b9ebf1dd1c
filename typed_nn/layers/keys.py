"""Port keys: the classes that name layers' inputs and outputs (MetaNN ``layer_io``).

Keys are classes, never instantiated; a layer's ``input_ports`` / ``output_ports`` list them and
its containers (``VarTypeDict``) are keyed by them. ``Previous(LayerOutput)`` names the value
of ``LayerOutput`` at the previous step (recurrent layers); it returns one cached class per
key, so ``Previous(LayerOutput) is Previous(LayerOutput)``.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from ..errors import LayerError, message

__all__ = [
    "InterpolateLayerLambda",
    "InterpolateLayerWeight1",
    "InterpolateLayerWeight2",
    "LayerInput",
    "LayerOutput",
    "LeftOperand",
    "LossLayerWeight",
    "PortKey",
    "Previous",
    "PreviousKey",
    "RightOperand",
]

K = TypeVar("K")


class PortKey:
    """Base of the built-in port keys (any class may be a key; this only groups them)."""

    def __new__(cls) -> PortKey:
        raise TypeError(f"{cls.__name__} is a port key; use the class itself, not an instance")


class LeftOperand(PortKey):
    """The left operand of a binary layer (Add, Subtract, Multiply, Dot)."""


class RightOperand(PortKey):
    """The right operand of a binary layer."""


class LayerInput(PortKey):
    """The input of a unary layer (activations, math layers, NLLLoss's prediction)."""


class LayerOutput(PortKey):
    """The output of a layer."""


class LossLayerWeight(PortKey):
    """The truth (weights) input of a loss layer."""


class InterpolateLayerWeight1(PortKey):
    """InterpolateLayer's first operand ``a`` in ``a*lam + b*(1-lam)``."""


class InterpolateLayerWeight2(PortKey):
    """InterpolateLayer's second operand ``b``."""


class InterpolateLayerLambda(PortKey):
    """InterpolateLayer's mixing weight ``lam``."""


class PreviousKey(PortKey, Generic[K]):
    """The key ``Previous(K)``: the value of port ``K`` one step earlier."""

    key: type


_PREVIOUS: dict[type, type] = {}


def Previous(key: type[K]) -> type[PreviousKey[K]]:
    """The port key for the previous step's value of ``key`` (one class per key, cached)."""
    if not isinstance(key, type):
        raise LayerError(
            message(
                "cannot make Previous(...): the key is not a class.",
                [("received", f"{key!r} ({type(key).__name__})")],
                hint="pass a port key class, e.g. Previous(LayerOutput).",
            )
        )
    cls = _PREVIOUS.get(key)
    if cls is None:
        name = f"Previous({key.__name__})"
        cls = type(name, (PreviousKey,), {"key": key, "__qualname__": name})
        _PREVIOUS[key] = cls
    return cls
