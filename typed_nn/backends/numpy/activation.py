"""numpy implementations of the activations and their gradients.

Each takes the operand arrays and an optional ``out`` array of the result's shape to write
into (the fused evaluator passes one; it never aliases an input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.declare import implement
from ...tags import CPU

Array = Any
Out = Array | None


def _result(out: Out, *arrays: Array) -> Array:
    """``out``, or a fresh array of the operands' broadcast shape and the last one's dtype.

    Always an array: a ufunc on 0-d input returns a numpy scalar, which cannot be ``out``.
    """
    if out is not None:
        return out
    return np.empty(np.broadcast_shapes(*(a.shape for a in arrays)), arrays[-1].dtype)


@implement("sigmoid", CPU)
def sigmoid(x: Array, out: Out = None) -> Array:
    # With e = exp(-|x|) in (0, 1]: 1 / (1 + e) for x >= 0, e / (1 + e) below. Nothing
    # overflows (e^-x does for x < -88 in float32) and tiny results keep their relative
    # precision (0.5 * (1 + tanh(x / 2)) rounds sigmoid(-40) to 0).
    r = np.absolute(x, out=_result(out, x))
    np.negative(r, out=r)
    np.exp(r, out=r)
    denominator = r + 1
    np.copyto(r, 1, where=x >= 0)
    r /= denominator
    return r


@implement("tanh", CPU)
def tanh(x: Array, out: Out = None) -> Array:
    return np.tanh(x, out=_result(out, x))


@implement("relu", CPU)
def relu(x: Array, out: Out = None) -> Array:
    return np.maximum(x, 0, out=_result(out, x))


@implement("sigmoid_grad", CPU)
def sigmoid_grad(g: Array, y: Array, out: Out = None) -> Array:
    r = np.subtract(1, y, out=_result(out, g, y))
    r *= y
    r *= g
    return r


@implement("tanh_grad", CPU)
def tanh_grad(g: Array, y: Array, out: Out = None) -> Array:
    r = np.square(y, out=_result(out, g, y))
    np.subtract(1, r, out=r)
    r *= g
    return r


@implement("relu_grad", CPU)
def relu_grad(g: Array, x: Array, out: Out = None) -> Array:
    # A select, not g * (x > 0): an infinite g where x <= 0 must give 0, not NaN.
    r = _result(out, g, x)
    r[...] = 0
    np.copyto(r, g, where=x > 0)
    return r
