"""``to_device`` onto the GPU (the move to the host is the numpy backend's ``to_host``)."""

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
