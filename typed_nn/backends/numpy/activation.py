"""numpy implementations of the activations and their gradients.

Each takes the operand arrays and an optional ``out`` array of the result's shape to write
into (the fused evaluator passes one; it never aliases an input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import module_of
from ...fp_errors import ignore_fp_errors, restore_fp_errors
from ...ops.declare import implement, implement_passes
from ...tags import CPU

Array = Any
Out = Array | None


def _result(out: Out, *arrays: Array) -> Array:
    """``out``, or a fresh array of the operands' broadcast shape and the last one's dtype.

    Always an array: a ufunc on 0-d input returns a numpy scalar, which cannot be ``out``.
    """
    if out is not None:
        return out
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return module_of(*arrays).empty(shape, arrays[-1].dtype)


@implement("sigmoid", CPU, writes_into=True)
def sigmoid(x: Array, out: Out = None) -> Array:
    # 1 / (1 + e^-x) in place: 4 passes, no temporaries. For x < -88 (float32) e^-x overflows
    # to inf and the result is exactly 0 where the true value is below float32's smallest
    # normal: that limit is right, so the overflow is silenced rather than avoided. Measured
    # 3.4x faster than the branch-free exp(-|x|) form with the same accuracy (<= 2.4e-7
    # relative), and unlike 0.5 * (1 + tanh(x / 2)) it keeps the relative precision of small
    # results (that form is 11% off at sigmoid(-15) in float32).
    token = ignore_fp_errors()
    try:
        return run_passes(SIGMOID_PASSES, x, _result(out, x))
    finally:
        restore_fp_errors(token)


SIGMOID_PASSES = ((np.negative, ()), (np.exp, ()), (np.add, (1,)), (np.reciprocal, ()))
"""sigmoid as its passes, each ``fn(value, *numbers, out=)``: the plain kernel and a fused
region's lowering (``declare.Kernel.passes``) both run these, so a region may merge the
negation into a scale before it and the reciprocal into a product."""
implement_passes("sigmoid", CPU, SIGMOID_PASSES)


def run_passes(steps: tuple[tuple[Any, tuple[Any, ...]], ...], x: Array, out: Array) -> Array:
    """``x`` through ``steps`` (``SIGMOID_PASSES``'s form), written into ``out``."""
    value = x
    for fn, numbers in steps:
        value = fn(value, *numbers, out=out)
    return value


@implement("softplus", CPU, writes_into=True)
def softplus(x: Array, out: Out = None) -> Array:
    # log(1 + e^x) = logaddexp(x, 0): one ufunc pass, exact for large |x| (no e^x overflow)
    return np.logaddexp(x, 0, out=_result(out, x))


@implement("relu", CPU, writes_into=True)
def relu(x: Array, out: Out = None) -> Array:
    return run_passes(RELU_PASSES, x, _result(out, x))


RELU_PASSES = ((np.maximum, (0,)),)
"""relu as one pass: a region calls the ufunc itself, the 0 as a 0-d array of its dtype."""
implement_passes("relu", CPU, RELU_PASSES)


FLOATS = (np.float16, np.float32, np.float64)
ONES = {np.dtype(t): np.ones((), t) for t in FLOATS}
ZEROS = {np.dtype(t): np.zeros((), t) for t in FLOATS}
"""1 and 0 as 0-d arrays of each float dtype: the same numbers as a Python number (NEP 50 casts
it to the array's dtype), but numpy converts a Python number at every call (~0.2 us of a 1 us
pass on the small blocks of a recurrent step). Only for numpy arrays: these kernels also
run on cupy arrays (backends/cupy/registration.py), which take no numpy array operand."""


def _one(y: Array) -> Any:
    return ONES.get(y.dtype, 1) if type(y) is np.ndarray else 1


@implement("sigmoid_grad", CPU, writes_into=True)
def sigmoid_grad(g: Array, y: Array, out: Out = None) -> Array:
    r = np.subtract(_one(y), y, out=_result(out, g, y))
    r *= y
    r *= g
    return r


@implement("tanh_grad", CPU, writes_into=True)
def tanh_grad(g: Array, y: Array, out: Out = None) -> Array:
    r = np.square(y, out=_result(out, g, y))
    np.subtract(_one(r), r, out=r)
    r *= g
    return r


BITS = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}
"""Integer types of each float's width: relu_grad multiplies bit patterns by the mask."""


@implement("relu_grad", CPU, writes_into=True)
def relu_grad(g: Array, x: Array, out: Out = None) -> Array:
    # g where x > 0, else exactly +0 — also where g is inf or NaN, which g * (x > 0) would
    # turn into NaN. Multiplying g's *bit pattern* (an integer view) by the 0/1 mask keeps
    # g's bits or gives the bits of +0, in one pass as fast as the float product (np.where
    # and masked copies are 3-10x slower on random masks). ``out`` never aliases g here
    # (relu_grad is not alias-safe).
    r = _result(out, g, x)
    bits = BITS.get(r.dtype) if type(g) is np.ndarray and g.dtype == r.dtype else None
    if bits is None:  # another dtype, or g a number: the select
        r[...] = 0
        np.copyto(r, g, where=x > 0)
        return r
    zero = ZEROS.get(x.dtype, 0) if type(x) is np.ndarray else 0
    np.multiply(g.view(bits), np.greater(x, zero), out=r.view(bits))
    return r
