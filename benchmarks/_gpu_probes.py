"""What ``benchmarks/gpu.py`` measures on a GPU besides plain time.

* ``event_time`` / ``wall_time``: medians and minimums of repeats, after a warm-up, timed
  with CUDA events (device time between two points of the stream) or with the host clock
  after a synchronisation;
* ``launches``: the kernels and copies one call puts on the device, read from PyTorch's
  profiler (CUPTI sees every kernel in the process, cupy's too);
* ``SyncCounter``: cupy's host synchronisations, counted where cupy declares them
  (``cupy._core.syncdetect._declare_synchronize``: ``.get()`` and every conversion to a host
  value, ``Device.synchronize``), with the typed_nn line that asked, and host-to-device copies;
* ``waits_for_device``: whether a call blocks the host until the device is idle (it runs
  behind a kernel that keeps the GPU busy; a call that returns first did not wait);
* ``overlap_hazard``: whether cupy's copies really go wrong where source and destination
  overlap (the emulator refuses such copies; this checks that the rule is real).

Each takes the ``cupy`` (or ``torch``) module it measures with; the emulator in
``tests/cupy_emulator.py`` has what the first three need.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

Untyped = Any


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the fastest and the median of the repeats."""

    best: float
    median: float


def event_time(
    make_event: Callable[[], Any],
    elapsed_ms: Callable[[Any, Any], float],
    fn: Callable[[], object],
    repeats: int = 20,
) -> Timing:
    """Device time of ``fn``'s work, between CUDA events recorded before and after each call
    (gaps the host leaves between its launches included), after one warm-up call."""
    start, end = make_event(), make_event()
    fn()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(elapsed_ms(start, end) / 1e3)
    return Timing(min(times), statistics.median(times))


def cupy_time(cupy: Any, fn: Callable[[], object], repeats: int = 20) -> Timing:
    """:func:`event_time` with cupy's events."""
    return event_time(cupy.cuda.Event, cupy.cuda.get_elapsed_time, fn, repeats)


def torch_time(torch: Any, fn: Callable[[], object], repeats: int = 20) -> Timing:
    """:func:`event_time` with PyTorch's events."""
    return event_time(
        lambda: torch.cuda.Event(enable_timing=True), lambda a, b: a.elapsed_time(b), fn, repeats
    )


def wall_time(fn: Callable[[], object], sync: Callable[[], object], repeats: int = 20) -> Timing:
    """Host seconds of ``fn`` with the device idle before and after each call (two warm-ups)."""
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return Timing(min(times), statistics.median(times))


@dataclass(frozen=True)
class Launches:
    """What one call put on the device: kernels (names, in order) and copies by direction,
    the kernels' summed device time, and the host waits CUPTI saw (stream and event
    synchronisations, synchronous device-to-host copies)."""

    kernels: list[str]
    copies: dict[str, int]
    kernel_seconds: float
    waits: int


def _waits(api: str) -> bool:
    """Whether a runtime or driver call blocks the host until the device catches up: stream
    and event synchronisations, synchronous copies (a device synchronisation is the probe's)."""
    if "StreamSynchronize" in api or "EventSynchronize" in api:
        return True
    synchronous_copy = api.startswith(("cudaMemcpy", "cuMemcpy")) and "Async" not in api
    return synchronous_copy and "Peer" not in api


def launches(torch: Any, fn: Callable[[], object], sync: Callable[[], object]) -> Launches | None:
    """The kernels and copies one call of ``fn`` launches (after a warm-up call), from PyTorch's
    profiler; None where it is unavailable or recorded no kernel at all."""
    profiler = torch.profiler
    fn()
    sync()
    with profiler.profile(activities=[profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        sync()  # a device synchronisation of our own: not counted below
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        prof.export_chrome_trace(str(path))
        events: list[dict[str, Any]] = json.loads(path.read_text()).get("traceEvents", [])
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    if not kernels:
        return None
    copies = Counter(
        "DtoH" if "DtoH" in e["name"] else "HtoD" if "HtoD" in e["name"] else "DtoD"
        for e in events
        if e.get("cat") == "gpu_memcpy"
    )
    api = [e["name"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    waits = sum(map(_waits, api))
    seconds = sum(float(e.get("dur", 0.0)) for e in kernels) / 1e6
    return Launches([e["name"] for e in kernels], dict(copies), seconds, waits)


@dataclass
class SyncCounter:
    """Counts, while entered, cupy's host synchronisations and host-to-device copies
    (``cupy.asarray`` / ``cupy.array`` of host data), each by the innermost typed_nn line
    that asked for it (or the caller's, outside typed_nn)."""

    cupy: Any
    syncs: Counter[str] = field(default_factory=Counter)
    to_device: Counter[str] = field(default_factory=Counter)
    _saved: list[tuple[Any, str, Any]] = field(default_factory=list)

    def __enter__(self) -> SyncCounter:
        detect = self.cupy._core.syncdetect
        declare = detect._declare_synchronize

        def counted_declare() -> None:
            self.syncs[_asker()] += 1
            declare()

        self._patch(detect, "_declare_synchronize", counted_declare)
        for name in ("asarray", "array"):
            self._patch(self.cupy, name, self._counting_copy(getattr(self.cupy, name)))
        return self

    def _counting_copy(self, make: Callable[..., Any]) -> Callable[..., Any]:
        def counted(obj: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(obj, self.cupy.ndarray):
                self.to_device[_asker()] += 1
            return make(obj, *args, **kwargs)

        return counted

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        while self._saved:
            owner, name, value = self._saved.pop()
            setattr(owner, name, value)


def _asker() -> str:
    """``file:line function`` of the innermost typed_nn frame on the stack (else the
    outermost benchmark frame)."""
    frames = traceback.extract_stack()[:-2]
    for frame in reversed(frames):
        if "/typed_nn/" in frame.filename:
            path = frame.filename[frame.filename.rindex("/typed_nn/") + 1 :]
            return f"{path}:{frame.lineno} {frame.name}"
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].name}"


_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


def waits_for_device(cupy: Any, fn: Callable[[], object]) -> bool | None:
    """Whether ``fn`` blocks the host until the device has finished its earlier work: it is
    called right behind a one-thread kernel that keeps the GPU busy for 10x ``fn``'s own time
    (0.1 s at least), and an event recorded after that kernel is queried when ``fn`` returns
    (done: ``fn`` waited, or ran longer than the kernel). None on the emulator."""
    if getattr(cupy, "emulated", False):
        return None
    kernel = cupy.RawKernel(_SPIN, "spin")

    def spin(cycles: float) -> None:
        kernel((1,), (1,), (np.int64(cycles),))

    host = wall_time(fn, cupy.cuda.Device().synchronize, repeats=3).median  # warm clocks too
    per_second = 1e7 / cupy_time(cupy, lambda: spin(1e7), repeats=3).median
    spun = cupy.cuda.Event()
    spin(per_second * max(0.1, 10 * host))
    spun.record()
    fn()
    waited = bool(spun.done)
    cupy.cuda.Device().synchronize()
    return waited


def overlap_hazard(cupy: Any, n: int = 2048) -> dict[str, int]:
    """Elements cupy gets wrong where a copy's destination overlaps its source: ``copyto(w,
    w.T)`` (an element-wise copy kernel) and ``v[1:] = v[:-1]`` (contiguous: a device memcpy),
    each against numpy's result. 0 means cupy happened to copy right."""
    host = np.arange(n * n, dtype=np.float32).reshape(n, n)
    w = cupy.asarray(host)
    cupy.copyto(w, w.T)
    flat = host.ravel()
    v = cupy.asarray(flat)
    v[1:] = v[:-1]
    shifted = np.concatenate([flat[:1], flat[:-1]])
    return {
        "copyto(w, w.T)": int((w.get() != host.T).sum()),
        "v[1:] = v[:-1]": int((v.get() != shifted).sum()),
    }
