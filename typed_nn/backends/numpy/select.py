"""numpy implementations of maximum, minimum, where and interpolate.

Each takes the operand arrays (or, for maximum / minimum, a Python number) and an optional ``out``
array of the result's shape to write into; each is also registered as its op's write-into
form, so fused element-wise regions include it. ``maximum`` / ``minimum`` are one ufunc each
(``out`` may be an operand); ``where`` and ``interpolate`` write a partial result first (``out``
must not be).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import module_of
from ...ops.declare import implement
from ...tags import CPU

Array = Any
Out = Array | None


def _shape(v: Array) -> tuple[int, ...]:
    """An array's shape; () for a Python number."""
    shape: tuple[int, ...] = getattr(v, "shape", ())
    return shape


def _dtype(v: Array) -> Any:
    """An array's dtype, a Python number itself (numpy 2 types numbers weakly either way)."""
    return getattr(v, "dtype", v)


def _extremum(ufunc: Any) -> Any:
    """``maximum`` / ``minimum``'s kernel: ``ufunc(a, b)`` into ``out``, or into a fresh array
    of the broadcast shape and numpy's result type (either side may be a Python number)."""

    def kernel(a: Array, b: Array, out: Out = None) -> Array:
        if out is None:
            shape = np.broadcast_shapes(_shape(a), _shape(b))
            out = module_of(a, b).empty(shape, np.result_type(_dtype(a), _dtype(b)))
        return ufunc(a, b, out=out)

    return kernel


maximum = implement("maximum", CPU, writes_into=True)(_extremum(np.maximum))
minimum = implement("minimum", CPU, writes_into=True)(_extremum(np.minimum))


@implement("where", CPU, writes_into=True)
def where(cond: Array, a: Array, b: Array, out: Out = None) -> Array:
    # A fresh name, not `out` reassigned: pyright keeps an Any assigned to a variable declared
    # `Any | None` at the declared type, None included.
    dst: Array = (
        module_of(a).empty(np.broadcast_shapes(cond.shape, a.shape, b.shape), a.dtype)
        if out is None
        else out
    )
    np.copyto(dst, b)
    np.copyto(dst, a, where=cond != 0)
    return dst


@implement("interpolate", CPU, writes_into=True)
def interpolate(a: Array, b: Array, lam: Array, out: Out = None) -> Array:
    # MetaNN's a*lam + b*(1-lam), not b + lam*(a-b): lam = 1 gives exactly a.
    if out is None:
        out = module_of(a).empty(np.broadcast_shapes(a.shape, b.shape, lam.shape), a.dtype)
    np.multiply(b, np.subtract(1, lam), out=out)
    out += np.multiply(a, lam)
    return out
