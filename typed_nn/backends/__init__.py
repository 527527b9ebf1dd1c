"""Per-device array libraries: numpy for CPU, cupy (imported on first use) for GPU.

The op implementations live in one package per backend (``backends/numpy``,
``backends/cupy``); this module answers which array library serves a device, and the first
request for cupy registers the GPU implementations.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import BackendUnavailableError, DeviceError, message
from ..tags import CPU, GPU, DeviceTag

__all__ = [
    "array_module",
    "check_array_device",
    "data_pointer",
    "device_of_array",
    "device_of_result",
    "to_host",
]


def array_module(device: type[DeviceTag]) -> ModuleType:
    """The array library of ``device``: numpy, or cupy (imported now) for GPU."""
    if device is CPU:
        return np
    if device is GPU:
        return _cupy()
    raise DeviceError(message(f"unknown device tag {device!r}.", hint="use tn.CPU or tn.GPU."))


def _cupy() -> ModuleType:
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise BackendUnavailableError(
            message(
                "GPU data needs cupy, which is not installed.",
                [("import error", str(exc))],
                hint="pip install 'typed_nn[gpu]' (CUDA 12) or 'typed_nn[gpu-cuda13]'.",
            )
        ) from exc
    from .cupy import register

    register()  # the GPU implementations, once: cupy is needed from here on
    return cupy


def device_of_array(array: Any) -> type[DeviceTag] | None:
    """CPU for a numpy array, GPU for a cupy array, None for anything else."""
    if isinstance(array, np.ndarray):
        return CPU
    if type(array).__module__.startswith("cupy"):
        return GPU
    return None


def device_of_result(value: Any) -> type[DeviceTag] | None:
    """The device of a kernel's result: as :func:`device_of_array`, with numpy scalars (0-d
    results of numpy calls) on the CPU."""
    return CPU if isinstance(value, np.generic) else device_of_array(value)


def check_array_device(array: Any, device: type[DeviceTag]) -> None:
    """Raise DeviceError unless ``array`` is the array type of ``device``."""
    found = device_of_array(array)
    if found is not device:
        raise DeviceError(
            message(
                f"a {device.__name__} tensor needs a {'numpy' if device is CPU else 'cupy'} array.",
                [("declared", device.__name__), ("received", type(array).__name__)],
                hint="move data between devices with ops.to_device.",
            )
        )


def to_host(array: Any) -> npt.NDArray[Any]:
    """A numpy view (CPU) or copy (GPU) of a backend array."""
    if isinstance(array, np.ndarray):
        return array
    result: npt.NDArray[Any] = array.get()
    return result


def data_pointer(array: Any) -> int:
    """Address of the first element: the identity of a tensor's memory."""
    if isinstance(array, np.ndarray):
        return int(array.__array_interface__["data"][0])
    return int(array.data.ptr)
