"""numpy implementations of the element-wise ops (arithmetic, math and their gradients).

Each implementation takes the operand arrays (or Python numbers) and an optional ``out``
array to write into; numpy's broadcasting is a superset of MetaNN's, which the op
declarations have already checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import ops as _ops  # noqa: F401 - every declaration is made before it is read
from ...ops.declare import declarations, implement
from ...tags import CPU

Array = Any
Out = Array | None


def _register(name: str, fn: Callable[..., Array]) -> None:
    implement(name, CPU, writes_into=True)(fn)


# Ops that are a single numpy ufunc say so in their declaration.
for _decl in declarations():
    if _decl.ufunc is not None:
        _register(_decl.name, _decl.ufunc)


def _grad(derivative: Callable[[Array, Array], Array]) -> Callable[..., Array]:
    """g * derivative(x), computed into ``out`` (which may alias neither input)."""

    def impl(g: Array, x: Array, out: Out = None) -> Array:
        # A 0-d input makes numpy return a scalar, which cannot take the product in place.
        d = derivative(x, out if out is not None else np.empty_like(x))
        return np.multiply(g, d, out=d)

    return impl


def _abs_d(x: Array, out: Out) -> Array:
    return np.sign(x, out=out)


def _exp_d(x: Array, out: Out) -> Array:
    return np.exp(x, out=out)


def _log_d(x: Array, out: Out) -> Array:
    return np.reciprocal(x, out=out)


def _sqrt_d(x: Array, out: Out) -> Array:
    r = np.sqrt(x, out=out)
    r *= 2
    return np.reciprocal(r, out=r)


def _square_d(x: Array, out: Out) -> Array:
    return np.multiply(x, 2, out=out)


def _sin_d(x: Array, out: Out) -> Array:
    return np.cos(x, out=out)


def _cos_d(x: Array, out: Out) -> Array:
    r = np.sin(x, out=out)
    return np.negative(r, out=r)


def _tan_d(x: Array, out: Out) -> Array:
    r = np.cos(x, out=out)
    np.square(r, out=r)
    return np.reciprocal(r, out=r)


def _asin_d(x: Array, out: Out) -> Array:
    r = np.square(x, out=out)
    np.subtract(1, r, out=r)
    np.sqrt(r, out=r)
    return np.reciprocal(r, out=r)


def _acos_d(x: Array, out: Out) -> Array:
    r = _asin_d(x, out)
    return np.negative(r, out=r)


def _asinh_d(x: Array, out: Out) -> Array:
    r = np.square(x, out=out)
    r += 1
    np.sqrt(r, out=r)
    return np.reciprocal(r, out=r)


def _acosh_d(x: Array, out: Out) -> Array:
    r = np.square(x, out=out)
    r -= 1
    np.sqrt(r, out=r)
    return np.reciprocal(r, out=r)


for _name, _derivative in {
    "abs_grad": _abs_d,
    "exp_grad": _exp_d,
    "log_grad": _log_d,
    "sqrt_grad": _sqrt_d,
    "square_grad": _square_d,
    "sin_grad": _sin_d,
    "cos_grad": _cos_d,
    "tan_grad": _tan_d,
    "asin_grad": _asin_d,
    "acos_grad": _acos_d,
    "asinh_grad": _asinh_d,
    "acosh_grad": _acosh_d,
}.items():
    _register(_name, _grad(_derivative))
