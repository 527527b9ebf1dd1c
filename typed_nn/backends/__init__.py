"""The op implementations, one package per device: ``backends/numpy`` (CPU) and
``backends/cupy`` (GPU). Only the facade calls :func:`install`; nothing below this layer
imports a backend.
"""

from __future__ import annotations

from ..devices import when_first_used
from ..tags import GPU

__all__ = ["install"]


def install() -> None:
    """Register the numpy implementations now, and the cupy ones when cupy is first needed
    (``typed_nn.devices``), so that ``import typed_nn`` never imports cupy."""
    from . import numpy  # noqa: F401 - importing it registers the CPU implementations

    when_first_used(GPU, _register_gpu)


def _register_gpu() -> None:
    from .cupy import register

    register()
