"""A compiled step's program captured as one CUDA graph, and its replay.

cupy launches cost 10-20 us of host time each; a compiled training step launches 40-150 of
them. A CUDA graph replays everything one run of the step put on the device with one launch.
What it records are addresses, so a :class:`StepGraph` owns everything the captured run
touched for as long as it lives:

* **inputs**: the arrays the graph reads. Captured on the call's own argument arrays, a
  replay needs the same arrays again (their contents may change: ``fit`` gathers each batch
  into the same two tensors); with ``owned`` it reads buffers of its own, and each call's
  arrays are copied into them first;
* **numbers**: a program's float numbers (learning rates, bias corrections) are kernel
  arguments, frozen into a graph; here they are 0-d device arrays, views of one device
  buffer, written (one host-to-device copy from page-locked memory, skipped when the numbers
  did not change) before each launch;
* **memory**: everything the captured run allocates comes from a private ``MemoryPool`` that
  lives as long as the graph, so no block the graph writes is ever handed to anyone else;
* **outputs**: the arrays the graph writes its results into are copied out after each launch
  (into fresh arrays of the default pool), so a result stays valid after the next call.

The capture runs on a stream of its own (CUDA cannot capture the legacy default stream),
ordered after the current stream's work and before its next; replays run on the current
stream. Nothing here synchronises the host with the device.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from ...devices import array_module
from ...tags import GPU

__all__ = ["StepGraph"]

RING = 64
"""Page-locked slots the numbers are staged in: a slot is written again only once its copy
to the device has run (the host may run this many calls ahead of the device; with 8 a step
whose numbers change at every call, Adam's bias corrections, waited for the device)."""

Array = Any


class StepGraph:
    """One compiled program's CUDA graph (see the module's docstring).

    ``arrays``: a call's arguments (None for non-tensors); ``number_dtypes``: the dtype of
    each float number (None for one the program does not read); ``owned``: read buffers of
    its own rather than the call's arrays."""

    def __init__(self, arrays: list[Array], number_dtypes: list[Any], owned: bool) -> None:
        cp = array_module(GPU)
        self.cp = cp
        self.runtime = cp.cuda.runtime
        self.pool = cp.cuda.MemoryPool()
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.owned = owned
        self.inputs = [a if a is None or not owned else a.copy() for a in arrays]
        """The arrays the graph reads (the call's own, or copies of them)."""
        self.graph: Any = None
        self.outputs: list[Array] = []
        """The arrays the graph writes its outputs into."""
        self._numbers(number_dtypes)

    def _numbers(self, dtypes: list[Any]) -> None:
        """The device buffer of the numbers, its 0-d views, and the page-locked ring."""
        cp = self.cp
        order = sorted(
            (i for i, d in enumerate(dtypes) if d is not None),
            key=lambda i: -np.dtype(dtypes[i]).itemsize,  # widest first: every view aligned
        )
        offsets, size = {}, 0
        for i in order:
            offsets[i] = size
            size += np.dtype(dtypes[i]).itemsize
        self.nbytes = size
        self.device = cp.empty(max(size, 8), np.uint8)
        self.numbers: list[Any] = [0.0] * len(dtypes)
        """What the program reads as its numbers: 0-d device arrays."""
        for i in order:
            d = np.dtype(dtypes[i])
            view = self.device[offsets[i] : offsets[i] + d.itemsize].view(d)
            self.numbers[i] = view.reshape(())
        self._pinned = cp.cuda.alloc_pinned_memory(RING * max(size, 8))
        host = np.ctypeslib.as_array(
            (ctypes.c_uint8 * (RING * max(size, 8))).from_address(self._pinned.ptr)
        )
        self._slots = []
        for r in range(RING):
            base = r * max(size, 8)
            views = [(i, host[base + offsets[i] :][: np.dtype(dtypes[i]).itemsize]) for i in order]
            typed = [(i, v.view(np.dtype(dtypes[i]))) for i, v in views]
            self._slots.append((typed, self._pinned.ptr + base, cp.cuda.Event(disable_timing=True)))
        self._turn = 0
        self._last: list[float] | None = None

    def write_numbers(self, numbers: list[float]) -> None:
        """Copy a call's numbers to the device, on the current stream (nothing when they are
        the last call's)."""
        if numbers == self._last or not self.nbytes:
            return
        typed, address, copied = self._slots[self._turn % RING]
        self._turn += 1
        if not copied.done:  # the host is RING calls ahead: wait for that slot's copy
            copied.synchronize()
        for i, view in typed:
            view[0] = numbers[i]
        stream = self.cp.cuda.get_current_stream()
        kind = self.runtime.memcpyHostToDevice
        self.runtime.memcpyAsync(self.device.data.ptr, address, self.nbytes, kind, stream.ptr)
        copied.record(stream)
        self._last = list(numbers)

    @contextlib.contextmanager
    def recording(self) -> Generator[None, None, None]:
        """Work inside runs on the graph's stream, allocates from its private pool, and is
        ordered after the current stream's work and before its next."""
        cp = self.cp
        current = cp.cuda.get_current_stream()
        self.stream.wait_event(current.record())
        try:
            with cp.cuda.using_allocator(self.pool.malloc), self.stream:
                yield
        finally:
            current.wait_event(self.stream.record())

    def capture(self, run: Callable[[], Any]) -> None:
        """Capture what ``run()`` puts on the device (inside :meth:`recording`, after one
        plain run that compiled its kernels); the arrays it returns are the outputs the
        graph writes. Raises what the capture raised (the capture is ended first)."""
        self.stream.begin_capture()
        try:
            outputs = run()
        except BaseException:
            with contextlib.suppress(Exception):  # an invalidated capture raises here too
                self.stream.end_capture()
            raise
        self.graph = self.stream.end_capture()
        self.outputs = list(outputs)

    def replay(self, arrays: list[Array], numbers: list[float], fresh: list[bool]) -> Any:
        """Launch the graph for a call: its arrays copied in (``owned``), its numbers
        written, its outputs copied out where ``fresh``. None where the graph reads the
        captured call's arrays and this call passes others (capture again, ``owned``)."""
        inputs = self.inputs
        if not self.owned:
            for a, slot in zip(arrays, inputs, strict=True):
                if a is not slot:
                    return None
        else:
            for a, slot in zip(arrays, inputs, strict=True):
                if a is not None and a is not slot:
                    self.copy(slot, a)
        self.write_numbers(numbers)
        self.graph.launch(self.cp.cuda.get_current_stream())
        return self.hand_out(self.outputs, fresh)

    def hand_out(self, values: Any, fresh: list[bool]) -> list[Array]:
        """``values`` with each ``fresh`` one copied into a new array of the default pool."""
        out = []
        for v, copy in zip(values, fresh, strict=True):
            if copy:
                mine = self.cp.empty(v.shape, v.dtype)
                self.copy(mine, v)
                v = mine
            out.append(v)
        return out

    def copy(self, dst: Array, src: Array) -> None:
        """``dst[...] = src`` on the current stream (one memcpy where both are contiguous)."""
        if dst.dtype == src.dtype and _contiguous(dst) and _contiguous(src):
            stream = self.cp.cuda.get_current_stream()
            kind = self.runtime.memcpyDeviceToDevice
            self.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, kind, stream.ptr)
        else:
            self.cp.copyto(dst, src)


def _contiguous(a: Array) -> bool:
    return bool(a.flags.c_contiguous)
