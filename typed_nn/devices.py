"""Which array library serves a device, and what the rest of typed_nn asks of device memory.

A leaf module (it imports only tags and errors), so data, the evaluator and the backends all
use it without importing each other: numpy serves the CPU; cupy, imported on first use,
serves the GPU. The first request for cupy runs the hook the GPU backend installed
(:func:`when_first_used`; ``import typed_nn`` installs it), which registers the GPU
implementations.

:func:`module_of` answers the same question for arrays an implementation was handed: most
numpy implementations run unchanged on cupy arrays (numpy hands ufuncs and array functions to
cupy through ``__array_ufunc__`` / ``__array_function__``), but calls that *make* an array
(``np.empty``, ``np.asarray``) are not dispatched, so an implementation that allocates asks
for its inputs' library.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import BackendUnavailableError, DeviceError, message
from .tags import CPU, GPU, DeviceTag

__all__ = [
    "array_module",
    "asarray_like",
    "check_array_device",
    "data_pointer",
    "device_of_array",
    "device_of_result",
    "module_of",
    "to_host",
    "when_first_used",
]

_FIRST_USE: dict[type[DeviceTag], Callable[[], None]] = {}


def when_first_used(device: type[DeviceTag], register: Callable[[], None]) -> None:
    """Run ``register`` when ``device``'s array library is requested (the GPU backend
    registers its implementations this way, so cupy is imported only when needed). It is
    called on every request, so it must return at once after its first call."""
    _FIRST_USE[device] = register


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
    register = _FIRST_USE.get(GPU)
    if register is not None:
        register()  # the GPU implementations, once: cupy is needed from here on
    return cupy


_HOST_TYPES = (np.ndarray, int, float, bool)


def module_of(*values: Any) -> ModuleType:
    """numpy, or the GPU array library when any of ``values`` is a GPU (cupy) array.

    Python numbers and numpy arrays or scalars count as host values. cupy is looked up, never
    imported here: a cupy array can only exist once cupy was imported.
    """
    for v in values:
        t = type(v)
        if t in _HOST_TYPES or isinstance(v, np.ndarray | np.generic):
            continue
        if t.__module__.startswith("cupy"):
            return array_module(GPU)
    return np


def asarray_like(value: Any, like: Any, dtype: Any = None) -> Any:
    """``value`` as an array of ``like``'s library (a 0-d array rather than a scalar)."""
    return module_of(like).asarray(value, dtype=dtype)


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
