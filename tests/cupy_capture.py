"""CUDA stream capture and graphs for the cupy emulator (``cupy_emulator.py``), strict where
capture is.

What a capture means on a GPU, and what the emulator holds code to:

* between ``stream.begin_capture()`` and ``stream.end_capture()`` nothing runs: every kernel,
  ufunc, copy and fill put on the stream is *recorded*, and ``Graph.launch`` runs the recorded
  operations again, on the same memory (addresses are baked into the graph). The emulator
  computes each operation as it is recorded (so shapes, views and errors arise where they
  would), then at ``end_capture`` gives back what the capture wrote: memory that existed
  before is restored, memory allocated during the capture is filled with garbage (NaN). Code
  that uses a capture's results without launching the graph reads garbage, as on a GPU;
* a host synchronisation while capturing (``.get()``, every conversion to a host value,
  ``synchronize``) raises ``CUDARuntimeError`` (cudaErrorStreamCaptureUnsupported) and
  invalidates the capture: ``end_capture`` then raises too (cudaErrorStreamCaptureInvalidated);
* stricter than CUDA, for what would silently go wrong in a captured training step:
  a host-to-device copy while capturing (``cupy.asarray(numpy_array)``, ``a[...] = host``)
  raises: a graph would copy the capture-time host memory again at every launch; work put on
  another stream than the capturing one raises (it would run at once, outside the graph); and
  memory allocated while capturing must come from an allocator set with ``using_allocator``
  (a private ``MemoryPool``): blocks of the default pool freed during the capture would be
  handed out again while the graph still writes them.

The module keeps one capture at a time (typed_nn captures from one thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np


class CUDARuntimeError(RuntimeError):
    """cupy's ``cupy_backends.cuda.api.runtime.CUDARuntimeError``."""


_allocators: list[Any] = []
"""The allocators ``using_allocator`` set, innermost last (None: the default pool)."""
_streams: list[Stream] = []
"""The streams entered with ``with stream:``, innermost last."""
_captures: list[Capture] = []
"""The capture in progress (at most one)."""
_ptrs = itertools.count(0x1000)


class Capture:
    """A capture in progress: what it recorded, the memory it must give back."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.ops: list[tuple[str, Callable[[], object]]] = []
        self.saved: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        """Memory written while capturing that existed before: (root array, its values)."""
        self.fresh: dict[int, np.ndarray] = {}
        """Memory allocated while capturing, by its root array's id."""
        self.saved_raw: list[tuple[np.ndarray, np.ndarray]] = []
        """Memory written by address while capturing (cuBLAS): (a view of it, its values)."""
        self.invalid: str | None = None


def capturing() -> Capture | None:
    """The capture in progress, or None."""
    return _captures[0] if _captures else None


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _check(capture: Capture, what: str) -> None:
    if capture.invalid is not None:
        raise CUDARuntimeError(f"cudaErrorStreamCaptureInvalidated: {what} after {capture.invalid}")
    current = get_current_stream()
    if current is not capture.stream:
        capture.invalid = f"{what} on another stream"
        raise CUDARuntimeError(
            f"emulated cupy: {what} on stream {current.ptr:#x} while stream "
            f"{capture.stream.ptr:#x} captures: it would run now, outside the graph"
        )


def writing(host: np.ndarray, what: str) -> None:
    """Before an operation writes ``host``: while capturing, its memory is saved (restored at
    the end of the capture) unless the capture allocated it."""
    capture = capturing()
    if capture is None:
        return
    _check(capture, what)
    root = _root(host)
    if id(root) not in capture.fresh and id(root) not in capture.saved:
        capture.saved[id(root)] = (root, root.copy())


def writing_raw(view: np.ndarray, what: str) -> None:
    """Before a library call writes ``view`` (memory it was given by address) while capturing:
    its values are saved, given back at the end of the capture."""
    capture = capturing()
    if capture is not None:
        capture.saved_raw.append((view, view.copy()))


def allocated(host: np.ndarray, what: str) -> None:
    """``host`` is new device memory: while capturing it must come from a private pool."""
    capture = capturing()
    if capture is None:
        return
    _check(capture, what)
    if not _allocators or _allocators[-1] is None:
        capture.invalid = f"{what} allocated from the default pool"
        raise CUDARuntimeError(
            f"emulated cupy: {what} allocates from the default memory pool while capturing: "
            "its blocks would be handed out again while the graph still writes them (allocate "
            "from a private pool: cupy.cuda.using_allocator(pool.malloc))"
        )
    root = _root(host)
    capture.fresh[id(root)] = root


def record(what: str, replay: Callable[[], object]) -> None:
    """An operation on the device: recorded while capturing (``replay`` runs it again)."""
    capture = capturing()
    if capture is not None:
        _check(capture, what)
        capture.ops.append((what, replay))


def cublas(what: str) -> None:
    """A cuBLAS call (``matmul``, ``dot``, ``tensordot``): cupy 14 refuses it while the stream
    captures, before any CUDA call (``cupy_backends/cuda/libs/cublas.pyx``, ``setStream``),
    so the capture itself stays valid. Measured on an H200 with cupy 14.2."""
    if capturing() is not None:
        raise NotImplementedError(
            "calling cuBLAS API during stream capture is currently unsupported"
        )


def unsupported(what: str) -> None:
    """``what`` cannot be captured: raises while capturing (and invalidates the capture)."""
    capture = capturing()
    if capture is not None:
        capture.invalid = what
        raise CUDARuntimeError(
            f"cudaErrorStreamCaptureUnsupported: operation not permitted when stream is "
            f"capturing ({what})"
        )


def _new_positions(result: Any, operands: list[np.ndarray]) -> list[int]:
    """Which values of ``result`` are arrays of new memory (not views of ``operands``)."""
    values = result if isinstance(result, tuple | list) else (result,)
    return [
        k
        for k, v in enumerate(values)
        if isinstance(v, np.ndarray) and not any(np.may_share_memory(v, o) for o in operands)
    ]


def record_result(what: str, compute: Callable[[], Any], result: Any, operands: list[Any]) -> None:
    """While capturing, an operation that returned ``result``: its new arrays are the
    capture's memory, and a launch computes them again into that memory."""
    capture = capturing()
    if capture is None:
        return
    hosts = [o for o in operands if isinstance(o, np.ndarray)]
    positions = _new_positions(result, hosts)
    values = result if isinstance(result, tuple | list) else (result,)
    targets = [values[k] for k in positions]
    for t in targets:
        allocated(t, what)

    def replay() -> None:
        value = compute()
        again = value if isinstance(value, tuple | list) else (value,)
        for t, k in zip(targets, positions, strict=True):
            t[...] = again[k]

    record(what, replay)


def _poison(a: np.ndarray) -> None:
    if not a.flags.writeable:
        return
    if a.dtype.kind in "fc":
        a.fill(np.nan)
    elif a.dtype.kind == "b":
        a.fill(True)
    else:
        a.fill(np.iinfo(a.dtype).max // 3)


class Graph:
    """A captured graph: ``launch`` runs the recorded operations, in order, on their memory."""

    def __init__(self, ops: list[tuple[str, Callable[[], object]]]) -> None:
        self.ops = ops

    def launch(self, stream: Stream | None = None) -> None:
        if capturing() is not None:
            raise CUDARuntimeError("emulated cupy: a graph launched while capturing")
        for _, op in self.ops:
            op()

    def upload(self, stream: Stream | None = None) -> None:
        pass


class Stream:
    """A CUDA stream: work runs at once (the emulator is synchronous); it can capture."""

    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> None:
        self.ptr = 0 if null else next(_ptrs)

    def __enter__(self) -> Stream:
        _streams.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _streams.pop()

    def synchronize(self) -> None:
        from cupy_emulator import _declare_synchronize

        _declare_synchronize()

    def record(self, event: Any = None) -> Any:
        from cupy_emulator import _Event

        event = _Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Any) -> None:
        record("wait_event", lambda: None)

    def begin_capture(self, mode: int | None = None) -> None:
        if self.ptr == 0:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if _captures:
            raise CUDARuntimeError("emulated cupy: a capture is already in progress")
        _captures.append(Capture(self))

    def is_capturing(self) -> bool:
        return bool(_captures) and _captures[0].stream is self

    def end_capture(self) -> Graph:
        if not self.is_capturing():
            raise CUDARuntimeError("cudaErrorIllegalState: the stream is not capturing")
        capture = _captures.pop()
        for view, values in reversed(capture.saved_raw):  # the first values saved win
            view[...] = values
        for root, values in capture.saved.values():
            root[...] = values  # nothing ran: memory that existed keeps its values
        for root in capture.fresh.values():
            _poison(root)  # and what the capture allocated holds no result yet
        if capture.invalid is not None:
            raise CUDARuntimeError(f"cudaErrorStreamCaptureInvalidated: {capture.invalid}")
        return Graph(capture.ops)


Stream.null = Stream(null=True)


def get_current_stream() -> Stream:
    return _streams[-1] if _streams else Stream.null


class MemoryPool:
    """A memory pool (the emulator's arrays are host memory: it only names an allocator)."""

    def malloc(self, nbytes: int) -> Any:
        return np.empty(nbytes, np.uint8)

    def used_bytes(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        pass


@contextlib.contextmanager
def using_allocator(allocator: Any = None) -> Iterator[None]:
    _allocators.append(allocator)
    try:
        yield
    finally:
        _allocators.pop()


class PinnedMemory:
    """Page-locked host memory (``cupy.cuda.alloc_pinned_memory``): ``ptr`` is its address."""

    def __init__(self, nbytes: int) -> None:
        self._a = np.zeros(max(nbytes, 1), np.uint8)
        self.ptr = int(self._a.ctypes.data)
        self.size = nbytes


def alloc_pinned_memory(nbytes: int) -> PinnedMemory:
    return PinnedMemory(nbytes)


def memcpy_async(dst: int, src: int, size: int, kind: int, stream: int) -> None:
    """``cudaMemcpyAsync`` between addresses (host memory here, so a ``memmove``)."""
    unsupported("a copy between raw addresses (not modelled while capturing)")
    ctypes.memmove(dst, src, size)
