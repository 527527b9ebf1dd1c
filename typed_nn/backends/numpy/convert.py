"""numpy implementations of the conversions: astype, and to_device onto the host.

``to_device`` is implemented per *destination* device (the node's device). The CPU one
receives a numpy array (nothing to move) or a cupy array (copied to the host). Moving onto
the GPU belongs to the cupy backend; until that backend registers it, the guard below makes
evaluating such a move fail with an error naming what is missing, instead of a bare "no
implementation" (cupy is imported only then, never at import time).
"""

from __future__ import annotations

from typing import Any

from ... import backends
from ...errors import NoImplementationError, message
from ...ops.declare import implement
from ...tags import CPU, GPU, DeviceTag, ElemTag

Array = Any


@implement("astype", CPU)
def astype(x: Array, elem: type[ElemTag]) -> Array:
    return x.astype(elem.dtype)


@implement("to_device", CPU)
def to_device(x: Array, device: type[DeviceTag]) -> Array:
    return backends.to_host(x)


@implement("to_device", GPU, priority=-1)
def to_device_guard(x: Array, device: type[DeviceTag]) -> Array:
    backends.array_module(GPU)  # BackendUnavailableError naming cupy when it is missing
    raise NoImplementationError(
        message(
            "op 'to_device' has no implementation on GPU: the cupy backend is not loaded.",
            [("device", "GPU"), ("implemented on", "CPU")],
            hint="import the cupy backend (typed_nn.backends.cupy) before evaluating on GPU.",
        )
    )
