"""Compiled fused kernels, one per region structure.

cupy compiles an ``ElementwiseKernel`` on its first call (and keeps the binary on disk);
this cache keeps the kernel *objects*, keyed by :class:`RegionSpec` (ops, argument wiring,
input kinds and dtypes), so every plan that contains the same region shares one kernel and
a new batch size or learning rate never compiles anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .kernel_source import KernelSource, RegionSpec, kernel_source

__all__ = ["KernelCache"]

KernelFactory = Callable[[str, str, str, str], Any]
"""``cupy.ElementwiseKernel``'s constructor (in_params, out_params, operation, name)."""


class KernelCache:
    """Kernels by region structure; ``factory`` builds one from its source."""

    def __init__(self, factory: KernelFactory) -> None:
        self._factory = factory
        self._kernels: dict[RegionSpec, Any] = {}
        self.hits = 0
        self.misses = 0

    def get(self, spec: RegionSpec) -> Any:
        """The kernel computing ``spec`` (built on the first request)."""
        kernel = self._kernels.get(spec)
        if kernel is not None:
            self.hits += 1
            return kernel
        self.misses += 1
        src: KernelSource = kernel_source(spec)
        kernel = self._factory(src.in_params, src.out_params, src.operation, src.name)
        self._kernels[spec] = kernel
        return kernel

    def __len__(self) -> int:
        return len(self._kernels)

    def clear(self) -> None:
        """Forget every kernel (cupy's on-disk binaries stay)."""
        self._kernels.clear()
