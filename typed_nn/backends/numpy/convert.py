"""numpy implementations of the conversions: astype, and to_device onto the host.

``to_device`` is implemented per *destination* device (the node's device). The CPU one
receives a numpy array (nothing to move) or a cupy array (copied to the host). Moving onto
the GPU belongs to the cupy backend, which registers itself when cupy is first imported
(``devices.array_module(GPU)``). The guard below is what a plan built before that finds:
it imports cupy (or raises an error naming it), then hands over to the backend's own.
"""

from __future__ import annotations

from typing import Any

from ... import devices
from ...errors import NoImplementationError, message
from ...ops.declare import implement, implementation
from ...tags import CPU, GPU, DeviceTag, ElemTag

Array = Any


@implement("astype", CPU)
def astype(x: Array, elem: type[ElemTag]) -> Array:
    return x.astype(elem.dtype)


@implement("to_device", CPU)
def to_device(x: Array, device: type[DeviceTag]) -> Array:
    return devices.to_host(x)


@implement("to_device", GPU, priority=-1)
def to_device_guard(x: Array, device: type[DeviceTag]) -> Array:
    devices.array_module(GPU)  # BackendUnavailableError naming cupy; else registers the backend
    impl = implementation("to_device", GPU)
    if impl is not to_device_guard:  # the cupy backend's own, registered just now
        return impl(x, device)
    raise NoImplementationError(
        message(
            "op 'to_device' has no implementation on GPU: the cupy backend is not loaded.",
            [("device", "GPU"), ("implemented on", "CPU")],
            hint="register it with typed_nn.backends.cupy.register() before evaluating on GPU.",
        )
    )
