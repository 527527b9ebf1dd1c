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

import ctypes
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import DeviceError, MissingBackendError, message, missing_dependency
from .tags import CPU, GPU, DeviceTag

__all__ = [
    "Device",
    "RegionCompiler",
    "array_module",
    "asarray_like",
    "check_array_device",
    "data_pointer",
    "device_of",
    "device_of_array",
    "device_of_result",
    "module_of",
    "register_device",
    "set_region_compiler",
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
    return device_of(device).module()


def _cupy() -> ModuleType:
    try:
        # The gpu extra, typed by stubs/cupy (pyproject's stubPath) where it is not installed.
        import cupy  # pyright: ignore[reportMissingModuleSource]
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise missing_dependency(
            "GPU data",
            "cupy",
            "gpu",
            install="pip install 'typed_nn[gpu]' (CUDA 12) or 'typed_nn[gpu-cuda13]' (CUDA 13)",
            items=[("import error", str(exc))],
            error=MissingBackendError,
        ) from exc
    register = _FIRST_USE.get(GPU)
    if register is not None:
        register()  # the GPU implementations, once: cupy is needed from here on
    return cupy


RegionCompiler = Callable[[Any, list[int]], tuple[Any, list[Any]] | None]
"""``compile(graph, members) -> (kernel, operand refs)``, or None where some member has no
kernel form (its nodes then run one by one). ``kernel(*operands, out=array)`` fills ``out``."""


@dataclass(frozen=True, slots=True)
class Device:
    """What the evaluator asks of a device, answered once when it builds a plan (never per
    call): one is registered per :class:`DeviceTag` (:func:`register_device`) and looked up
    by the tag (:func:`device_of`). The evaluator never tests a device's name."""

    tag: type[DeviceTag]
    module: Callable[[], ModuleType]
    """The device's array library (imported on first call): it allocates buffers that do
    not come from the host pool (``module().empty(shape, dtype)``)."""
    host_pool: bool
    """Buffers come from the evaluator's host buffer pool (numpy), and single kernels with
    a write-into form write into them; otherwise each kernel allocates its own result."""
    host_regions: bool
    """Fused element-wise regions run as the evaluator's blocked host passes; otherwise
    each needs :attr:`compile_region`'s kernel (without one its nodes run one by one)."""
    array_type: type | None
    """The exact type of the device's arrays, checked inline after a plain kernel (the
    common case costs no call); None: every result is checked by a call."""
    numbers_as_arrays: bool
    """A Python number operand of a float node may be passed as a 0-d array of its dtype
    (numpy converts a Python number on every ufunc call)."""
    copy: Callable[[Any, Any], Any] = np.copyto
    """``copy(dst, src)``: write ``src`` into ``dst``, correct where they overlap."""
    may_share: Callable[[Any, Any], bool] = np.may_share_memory
    """Whether two arrays may overlap in memory."""
    to_host: Callable[[Any], npt.NDArray[Any]] = lambda array: to_host(array)
    """A numpy view or copy of one of the device's arrays."""
    compile_region: RegionCompiler | None = None
    """The backend's compiler of a fused region into one kernel (unused with host regions)."""
    step_graph: Callable[..., Any] | None = None
    """``step_graph(arrays, number_dtypes, owned)``: the backend's capture of a compiled
    step's program into one replayable graph (``backends/cupy/graph.py``'s ``StepGraph``);
    None where the device has none (the program runs plainly)."""


_DEVICES: dict[type[DeviceTag], Device] = {}


def register_device(device: Device) -> None:
    """Make ``device`` what :func:`device_of` answers for its tag (replacing any before).
    Plans already built keep the answers they were built with."""
    _DEVICES[device.tag] = device


def device_of(tag: type[DeviceTag]) -> Device:
    """The registered :class:`Device` of ``tag``."""
    device = _DEVICES.get(tag)
    if device is None:
        raise DeviceError(message(f"unknown device tag {tag!r}.", hint="use tn.CPU or tn.GPU."))
    return device


def set_region_compiler(tag: type[DeviceTag], compile_region: RegionCompiler) -> None:
    """Give ``tag``'s device a compiler of fused regions (a backend registers it with its
    implementations)."""
    register_device(replace(device_of(tag), compile_region=compile_region))


register_device(
    Device(
        CPU,
        lambda: np,
        host_pool=True,
        host_regions=True,
        array_type=np.ndarray,
        numbers_as_arrays=True,
    )
)
register_device(
    Device(
        GPU,
        lambda: _cupy(),
        host_pool=False,
        host_regions=False,
        array_type=None,
        numbers_as_arrays=False,
    )
)

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
    """CPU for a numpy array, GPU for a cupy array, the device of another registered
    array type, None for anything else."""
    if isinstance(array, np.ndarray):
        return CPU
    if type(array).__module__.startswith("cupy"):
        return GPU
    for device in _DEVICES.values():
        if device.array_type is not None and isinstance(array, device.array_type):
            return device.tag
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


def _data_field() -> Callable[[int], Any] | None:
    """A reader of a numpy array's ``data`` field (``PyArrayObject_fields.data``, the first
    field after the object header) by the array's address, or None where this interpreter's
    layout is not the one probed. ``__array_interface__`` builds a dict for the same number:
    1.6 us against 0.2 us, paid by every fresh tensor an eager evaluation or a compiled
    call's guard reads."""
    if sys.implementation.name != "cpython":  # id() is an address on CPython only
        return None
    offset = object.__basicsize__  # the header: refcount and type (more on free-threaded)
    read = ctypes.c_void_p.from_address
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    probes = [base, base[1:, 2:], base.T, base[2], np.empty(0), np.array(1.0)]
    for a in probes:
        if (read(id(a) + offset).value or 0) != a.__array_interface__["data"][0]:
            return None
    return lambda address: read(address + offset).value or 0


_read_data = _data_field()


def data_pointer(array: Any) -> int:
    """Address of the first element: the identity of a tensor's memory."""
    if isinstance(array, np.ndarray):
        if _read_data is not None:
            value: int = _read_data(id(array))
            return value
        return int(array.__array_interface__["data"][0])
    return int(array.data.ptr)
