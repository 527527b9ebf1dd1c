"""Moving data onto the GPU and within it: ``to_device`` (the move to the host is the numpy
backend's ``to_host``) and the GPU device's copy into a target."""

from __future__ import annotations

from typing import Any

from ...devices import array_module
from ...tags import GPU, DeviceTag

Array = Any


def to_device(x: Array, device: type[DeviceTag]) -> Array:
    """A cupy copy of a host array (a GPU array is returned as it is).

    The module is looked up per call, so a missing cupy is a ``BackendUnavailableError``.
    """
    return array_module(GPU).asarray(x)


def may_share(a: Array, b: Array) -> bool:
    """Whether two GPU arrays may overlap: their memory bounds, compared on the host."""
    return bool(array_module(GPU).may_share_memory(a, b))


def copy(dst: Array, src: Array) -> None:
    """``dst[...] = src`` where ``src`` may be a view of ``dst`` (``w.assign(w.T)``).

    numpy's ``copyto`` copies an overlapping source aside first; cupy's does not (its copy
    kernel and ``cudaMemcpy`` read elements that other threads already wrote), so an
    overlapping source is copied first here. ``may_share_memory`` compares the arrays'
    memory bounds on the host: no device work.
    """
    xp = array_module(GPU)
    if xp.may_share_memory(dst, src) and src is not dst:
        src = src.copy()
    xp.copyto(dst, src)
