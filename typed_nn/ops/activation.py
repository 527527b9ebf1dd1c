"""Activations: sigmoid, tanh, relu, and their gradient ops (METANN.md §2.2).

All are element-wise on float data (the evaluator fuses them with their neighbours).
``sigmoid_grad`` and ``tanh_grad`` take the forward *output* ``y`` (MetaNN's choice: the
layer keeps ``y`` for its backward pass anyway); ``relu_grad`` takes the forward *input*.
A gradient ``g`` may have lower rank than the forward value and is broadcast over its
leading dims; the result has the forward value's shape.
"""

from __future__ import annotations

from ..data.tensor import AnyTensor, TensorLike
from ..tags import D2, FE, D, Dv
from .elementwise import elementwise_grad, grad, unary
from .node import AnyOp, Cotangents, build

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


# vjps: sigmoid and tanh differentiate through their output (the node itself), relu through
# its input; each gradient op is linear in g, and its vjp for the forward value is c * g * f''.
def _sigmoid_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (sigmoid_grad(g, n),)


def _tanh_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (tanh_grad(g, n),)


def _relu_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (relu_grad(g, n.operands[0]),)


def _sigmoid_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    g, y = n.operands
    return sigmoid_grad(c, y), c * g * (1.0 - y * 2.0)


def _tanh_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    g, y = n.operands
    return tanh_grad(c, y), c * g * y * -2.0


def _relu_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return relu_grad(c, n.operands[1]), None  # relu' is piecewise constant


SIGMOID = unary("sigmoid", vjp=_sigmoid_vjp)
TANH = unary("tanh", vjp=_tanh_vjp)
RELU = unary("relu", vjp=_relu_vjp)
SIGMOID_GRAD = grad("sigmoid_grad", vjp=_sigmoid_grad_vjp)
TANH_GRAD = grad("tanh_grad", vjp=_tanh_grad_vjp)
RELU_GRAD = grad("relu_grad", vjp=_relu_grad_vjp)


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


@elementwise_grad
def sigmoid_grad(g: TensorLike[FE, Dv, D2], y: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of sigmoid from its OUTPUT ``y = sigmoid(x)``: g * y * (1 - y)."""
    return build(SIGMOID_GRAD, (g, y))


@elementwise_grad
def tanh_grad(g: TensorLike[FE, Dv, D2], y: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of tanh from its OUTPUT ``y = tanh(x)``: g * (1 - y^2)."""
    return build(TANH_GRAD, (g, y))


@elementwise_grad
def relu_grad(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    """Backward of relu from its INPUT ``x``: g where x > 0, else 0."""
    return build(RELU_GRAD, (g, x))
