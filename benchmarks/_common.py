"""Shared benchmark helpers: single-threaded BLAS, min-of-repeats timing, aligned output."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any


def setup_threads() -> None:
    """One BLAS / OpenMP thread (call before numpy is imported): two-thread timings were
    unstable on the reference machine (PERF_NOTES.md)."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def header(title: str) -> None:
    print(f"\n== {title}")


def race(fns: dict[str, Callable[[], Any]], repeats: int = 10, inner: int = 1) -> dict[str, float]:
    """Time several callables round-robin (one repeat of each in turn, after a warm-up) and
    print each one's minimum: on a loaded machine, load changes hit every variant alike."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for label, fn in fns.items():
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            best[label] = min(best[label], (time.perf_counter() - start) / inner)
    for label, t in best.items():
        print(f"  {label:<52} {_fmt(t)}")
    return best


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:10.2f} us"
    return f"{seconds * 1e3:10.3f} ms"


def ratio(label: str, a: float, b: float) -> float:
    """Print and return ``a / b``."""
    r = a / b
    print(f"  ratio {label:<46} {r:8.2f}x")
    return r


def timed_fit(
    model: Any, train: Any, optimizer: Any, *, epochs: int, batch: int, seed: int
) -> tuple[float, Any]:
    """``typed_nn.train.fit`` of ``model``: the fastest epoch's process CPU seconds (an
    ``on_epoch_end`` callback times each), and fit's history."""
    from typed_nn.train import LambdaCallback, fit

    times: list[float] = []
    start = [time.process_time()]

    def lap(epoch: int, history: Any) -> None:
        now = time.process_time()
        times.append(now - start[0])
        start[0] = now

    history = fit(
        model,
        train,
        optimizer,
        epochs=epochs,
        batch_size=batch,
        seed=seed,
        callbacks=[LambdaCallback(on_epoch_end=lap)],
    )
    return min(times), history
