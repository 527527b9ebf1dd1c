"""Generic layer functions (MetaNN ``interface_fun.h``): call a layer's method if it has one.

``layer_feed_forward`` / ``layer_feed_backward`` call the mandatory methods; the optional ones
(``init``, ``grad_collect``, ``save_weights``, ``neutral_invariant``) do nothing for a layer
without them, so a composite can forward each call to every sublayer.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

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
    return layer.feed_forward(inputs)


def layer_feed_backward(layer: FeedsBackward[In, Out], grads: In) -> Out:
    """``layer.feed_backward(grads)``, typed as the layer's own method."""
    return layer.feed_backward(grads)


def layer_init(layer: object, initializer: InitializerLike, load_buffer: LoadBufferLike) -> None:
    """``layer.init(initializer, load_buffer)`` if the layer has parameters, else nothing."""
    method = getattr(layer, "init", None)
    if method is not None:
        method(initializer, load_buffer)


def layer_grad_collect(layer: object, collector: GradCollectorLike) -> None:
    """``layer.grad_collect(collector)`` if the layer has one, else nothing."""
    method = getattr(layer, "grad_collect", None)
    if method is not None:
        method(collector)


def layer_save_weights(layer: object, saver: SaverLike) -> None:
    """``layer.save_weights(saver)`` if the layer has one, else nothing."""
    method = getattr(layer, "save_weights", None)
    if method is not None:
        method(saver)


def layer_neutral_invariant(layer: object) -> None:
    """``layer.neutral_invariant()`` if the layer has one, else nothing."""
    method = getattr(layer, "neutral_invariant", None)
    if method is not None:
        method()
