"""``tn.from_dlpack``: wrap another library's array (numpy, PyTorch, JAX, cupy) as a typed
tensor without copying, through the DLPack protocol (``__dlpack__``/``__dlpack_device__``).

The element type, device and rank are checked against the declared tags; nothing is copied,
so writes through either side show in the other (``Tensor.__dlpack__`` is the way back).
"""

from __future__ import annotations

from typing import Any

from .. import devices
from ..errors import DeviceError, OperandError, message
from ..tags import CPU, DEVICE_TAGS, DIM_TAGS, ELEM_TAGS, GPU, BFloat16, D, DeviceTag, Dv, E
from .factories import check_tags
from .tensor import Tensor, no_bfloat16_dlpack

__all__ = ["dlpack_device_of", "from_dlpack"]

_DEVICE_TYPES = {1: CPU, 2: GPU, 3: CPU}
"""DLPack device types typed_nn has a device for: kDLCPU, kDLCUDA, kDLCUDAHost (pinned)."""


def dlpack_device_of(obj: object) -> type[DeviceTag] | None:
    """The device a DLPack producer says its memory is on (None: not a producer, or a device
    typed_nn has no tag for)."""
    device = getattr(obj, "__dlpack_device__", None)
    if device is None:
        return None
    try:
        kind, _ = device()
    except Exception:
        return None
    return _DEVICE_TYPES.get(int(kind))


def from_dlpack(obj: object, elem: type[E], device: type[Dv], dim: type[D]) -> Tensor[E, Dv, D]:
    """``obj``'s memory as a ``Tensor[elem, device, dim]`` (no copy).

    ``obj`` is any DLPack producer: a numpy array, a PyTorch or JAX tensor, a cupy array. Its
    dtype must be ``elem``'s and its rank ``dim``'s (an ``ElemTypeError`` / ``RankError``
    otherwise), and it must live on ``device`` (a ``DeviceError``: DLPack shares memory, it
    does not move it).

    >>> a = np.arange(3.0)
    >>> t = tn.from_dlpack(a, tn.Float64, tn.CPU, tn.Dim1)
    >>> t.assign(t * 2.0); a
    array([0., 2., 4.])
    """
    if elem not in ELEM_TAGS or device not in DEVICE_TAGS or dim not in DIM_TAGS:
        example = "tn.from_dlpack(array, tn.Float32, tn.CPU, tn.Dim2)"
        check_tags("from_dlpack", example, elem=elem, device=device, dim=dim)
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is None or not hasattr(obj, "__dlpack__"):
        raise OperandError(
            message(
                f"tn.from_dlpack needs a DLPack producer, got {type(obj).__name__}.",
                [
                    ("received", type(obj).__name__),
                    ("accepted", "numpy, PyTorch, JAX, cupy arrays"),
                ],
                hint="pass an array of a library that implements __dlpack__, or copy other data "
                "with tn.tensor(data, elem, device, dim).",
            )
        )
    kind, index = dlpack_device()
    where = _DEVICE_TYPES.get(int(kind))
    if where is not device:
        found = where.__name__ if where is not None else f"DLPack device type {kind}"
        raise DeviceError(
            message(
                f"cannot wrap a {type(obj).__name__} on {found} as a {device.__name__} tensor.",
                [("declared", device.__name__), ("received", f"{found} (device {index})")],
                hint="DLPack shares memory and never moves it: declare the device the data is "
                "on, then move it with ops.to_device, or move it in its own library first.",
            )
        )
    if elem is BFloat16:
        raise no_bfloat16_dlpack(f"cannot wrap a {type(obj).__name__} as BFloat16 data")
    array: Any = devices.array_module(device).from_dlpack(obj)
    return Tensor(array, elem, device, dim)  # checks the dtype and the rank
