"""What ``fit`` needs from a model: a training layer from ``LayerInput`` to ``LayerOutput``.

The composite ``MLP`` (typed_nn.layers) satisfies it, as does any layer built with
``make_train_layer`` whose input is a ``(batch, features)`` matrix and whose output is one
score per class, ``(batch, classes)`` — logits: ``fit`` adds the softmax and the NLL loss.
Data are Float32 on the CPU (the placeholders ``fit`` feeds are ``Tensor[Float32, CPU, Dim2]``).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..layers.model_protocols import GradCollectorLike

__all__ = ["TrainableModel"]


class TrainableModel(Protocol):
    """A training layer with parameters (MetaNN's layer protocol, METANN.md §3.1).

    ``feed_forward`` takes ``input_cont().set(LayerInput, x)`` and gives ``LayerOutput``
    logits; ``feed_backward`` takes ``output_cont().set(LayerOutput, g)`` and pops what the
    forward pushed (an empty container pops without building gradients); ``grad_collect``
    hands each parameter's gradient to a collector.
    """

    def input_cont(self) -> Any: ...
    def output_cont(self) -> Any: ...
    def feed_forward(self, inputs: Any, /) -> Any: ...
    def feed_backward(self, grads: Any, /) -> Any: ...
    def grad_collect(self, collector: GradCollectorLike, /) -> None: ...
