"""GPU write-into forms: they mark which element-wise nodes join fused regions on the GPU.

On the GPU a region runs as one generated kernel (``region.py``); the write-into forms here
tell the evaluator's region finder which nodes are element-wise (single GPU nodes run their
plain implementation, which allocates from cupy's memory pool). They are the numpy
backend's own functions (ufuncs and gradient kernels that take ``out``), which numpy hands
to cupy through ``__array_ufunc__``.
"""

from __future__ import annotations

from ...tags import GPU
from ..numpy.fused import register_elementwise_out_forms

__all__ = ["register_out_forms"]


def register_out_forms() -> None:
    """Register the GPU write-into forms (after the plain GPU implementations)."""
    register_elementwise_out_forms(GPU)
