"""GPU write-into forms: they mark which element-wise nodes join fused regions on the GPU.

On the GPU a region runs as one generated kernel (``region.py``); the write-into forms here
serve the evaluator's region finder and single nodes written into ``out=``. They are the
numpy backend's own functions (ufuncs and gradient kernels that take ``out``), which
numpy hands to cupy through ``__array_ufunc__``; only ``dot`` has a GPU form of its own.
"""

from __future__ import annotations

from typing import Any

from ...ops.declare import implement_out, implementation
from ...tags import CPU, GPU
from ..numpy.fused import ALIAS_SAFE, GRADS
from ..xp import module_of

Array = Any

SELECT_ALIAS_SAFE = ["maximum"]
SELECT = ["where", "interpolate"]


def dot_out(a: Array, b: Array, k: int, *, out: Array) -> Array:
    """``dot`` into a preallocated result (one cuBLAS call for the matrix/vector cases)."""
    xp = module_of(a)
    if k == 1 and a.ndim <= 2 and b.ndim <= 2 and out.ndim > 0:
        return xp.matmul(a, b, out=out)
    out[...] = xp.tensordot(a, b, axes=k)
    return out


def register_out_forms() -> None:
    """Register the GPU write-into forms (after the plain GPU implementations)."""
    for name in [*ALIAS_SAFE, *SELECT_ALIAS_SAFE]:
        implement_out(name, GPU, alias_safe=True)(implementation(name, CPU))
    for name in [*GRADS, *SELECT]:
        implement_out(name, GPU)(implementation(name, CPU))
    implement_out("dot", GPU)(dot_out)
