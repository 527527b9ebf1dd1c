"""Generic layer functions (MetaNN ``interface_fun.h``): call a layer's method if it has one.

``layer_feed_forward`` / ``layer_feed_backward`` call the mandatory methods; the optional ones
(``init``, ``grad_collect``, ``save_weights``, ``neutral_invariant``) do nothing for a layer
without them, so a composite can forward each call to every sublayer.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from ..errors import OperandError, message
from .model_protocols import GradCollectorLike, InitializerLike, LoadBufferLike, SaverLike

__all__ = [
    "LayerLike",
    "layer_feed_backward",
    "layer_feed_forward",
    "layer_grad_collect",
    "layer_init",
    "layer_neutral_invariant",
    "layer_save_weights",
]


In = TypeVar("In")
Out = TypeVar("Out")
In_contra = TypeVar("In_contra", contravariant=True)
Out_co = TypeVar("Out_co", covariant=True)


class LayerLike(Protocol):
    """Anything with the two mandatory layer methods (containers in, containers out)."""

    def feed_forward(self, inputs: Any, /) -> Any: ...
    def feed_backward(self, grads: Any, /) -> Any: ...


class FeedsForward(Protocol[In_contra, Out_co]):
    """A layer whose ``feed_forward`` maps ``In`` containers to ``Out`` containers."""

    def feed_forward(self, inputs: In_contra, /) -> Out_co: ...


class FeedsBackward(Protocol[In_contra, Out_co]):
    """A layer whose ``feed_backward`` maps ``In`` containers to ``Out`` containers."""

    def feed_backward(self, grads: In_contra, /) -> Out_co: ...


def layer_feed_forward(layer: FeedsForward[In, Out], inputs: In) -> Out:
    """``layer.feed_forward(inputs)``, typed as the layer's own method."""
    _check_role(layer, "layer_feed_forward", "a layer", ("feed_forward",))
    return layer.feed_forward(inputs)


def layer_feed_backward(layer: FeedsBackward[In, Out], grads: In) -> Out:
    """``layer.feed_backward(grads)``, typed as the layer's own method."""
    _check_role(layer, "layer_feed_backward", "a layer", ("feed_backward",))
    return layer.feed_backward(grads)


def layer_init(layer: object, initializer: InitializerLike, load_buffer: LoadBufferLike) -> None:
    """``layer.init(initializer, load_buffer)`` if the layer has parameters, else nothing."""
    method = getattr(layer, "init", None)
    if method is not None:
        _check_role(initializer, "layer_init", "an initializer", INITIALIZER)
        _check_role(load_buffer, "layer_init", "a load buffer", LOAD_BUFFER)
        method(initializer, load_buffer)


def layer_grad_collect(layer: object, collector: GradCollectorLike) -> None:
    """``layer.grad_collect(collector)`` if the layer has one, else nothing."""
    method = getattr(layer, "grad_collect", None)
    if method is not None:
        _check_role(collector, "layer_grad_collect", "a gradient collector", ("collect",))
        method(collector)


def layer_save_weights(layer: object, saver: SaverLike) -> None:
    """``layer.save_weights(saver)`` if the layer has one, else nothing."""
    method = getattr(layer, "save_weights", None)
    if method is not None:
        _check_role(saver, "layer_save_weights", "a saver (a LoadBuffer)", LOAD_BUFFER)
        method(saver)


def layer_neutral_invariant(layer: object) -> None:
    """``layer.neutral_invariant()`` if the layer has one, else nothing."""
    method = getattr(layer, "neutral_invariant", None)
    if method is not None:
        method()


INITIALIZER = ("layer_name_to_param_name", "is_param_exist", "get_param", "get_filler")
LOAD_BUFFER = ("try_get", "set")


def _check_role(value: object, owner: str, role: str, methods: tuple[str, ...]) -> None:
    """``value`` has ``methods`` (what ``owner`` calls on it): an ``OperandError`` otherwise."""
    lacking = [m for m in methods if not callable(getattr(value, m, None))]
    if lacking:
        raise OperandError(
            message(
                f"{owner} needs {role}: an object with {', '.join(methods)}.",
                [("received", type(value).__name__), ("lacking", ", ".join(lacking))],
                hint="pass the typed_nn object (a layer, ParamInitializer, LoadBuffer, "
                "GradCollector), or one with those methods.",
            )
        )
