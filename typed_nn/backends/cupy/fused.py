"""GPU write-into forms: they mark which element-wise nodes join fused regions on the GPU.

On the GPU a region runs as one generated kernel (``region.py``); the write-into forms here
tell the evaluator's region finder which nodes are element-wise (single GPU nodes run their
plain implementation, which allocates from cupy's memory pool). They are the numpy
backend's own functions (ufuncs and gradient kernels that take ``out``), which numpy hands
to cupy through ``__array_ufunc__``.
"""

from __future__ import annotations

from typing import Any

from ...ops.declare import implement_out, implementation
from ...tags import CPU, GPU
from ..numpy.fused import ALIAS_SAFE, GRADS

Array = Any

SELECT_ALIAS_SAFE = ["maximum"]
SELECT = ["where", "interpolate"]


def register_out_forms() -> None:
    """Register the GPU write-into forms (after the plain GPU implementations)."""
    for name in [*ALIAS_SAFE, *SELECT_ALIAS_SAFE]:
        implement_out(name, GPU, alias_safe=True)(implementation(name, CPU))
    for name in [*GRADS, *SELECT]:
        implement_out(name, GPU)(implementation(name, CPU))
