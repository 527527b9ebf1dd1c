"""Activations: sigmoid, tanh, relu, and their gradient ops (METANN.md §2.2).

All are element-wise on float data (the evaluator fuses them with their neighbours).
``sigmoid_grad`` and ``tanh_grad`` take the forward *output* ``y`` (MetaNN's choice: the
layer keeps ``y`` for its backward pass anyway); ``relu_grad`` takes the forward *input*.
A gradient ``g`` may have lower rank than the forward value and is broadcast over its
leading dims; the result has the forward value's shape.
"""

from __future__ import annotations

from ..data.tensor_like import TensorLike
from ..tags import D2, FE, D, Dv
from .elementwise import grad, unary
from .node import build

__all__ = [
    "RELU",
    "RELU_GRAD",
    "SIGMOID",
    "SIGMOID_GRAD",
    "TANH",
    "TANH_GRAD",
    "relu",
    "relu_grad",
    "sigmoid",
    "sigmoid_grad",
    "tanh",
    "tanh_grad",
]

SIGMOID, TANH, RELU = unary("sigmoid"), unary("tanh"), unary("relu")
SIGMOID_GRAD, TANH_GRAD, RELU_GRAD = grad("sigmoid_grad"), grad("tanh_grad"), grad("relu_grad")


def sigmoid(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """1 / (1 + e^-x), element-wise; computed stably (no overflow for large |x|).

    >>> ops.sigmoid(tn.tensor([0.0], tn.Float32, tn.CPU, tn.Dim1)).numpy()
    array([0.5], dtype=float32)
    """
    return build(SIGMOID, (x,))


def tanh(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Hyperbolic tangent, element-wise."""
    return build(TANH, (x,))


def relu(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """x where x > 0, else 0, element-wise."""
    return build(RELU, (x,))


def sigmoid_grad(g: TensorLike[FE, Dv, D2], y: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of sigmoid from its OUTPUT ``y = sigmoid(x)``: g * y * (1 - y)."""
    return build(SIGMOID_GRAD, (g, y))


def tanh_grad(g: TensorLike[FE, Dv, D2], y: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of tanh from its OUTPUT ``y = tanh(x)``: g * (1 - y^2)."""
    return build(TANH_GRAD, (g, y))


def relu_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of relu from its INPUT ``x``: g where x > 0, else 0."""
    return build(RELU_GRAD, (g, x))
