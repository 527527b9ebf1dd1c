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


class Timer:
    """Runs a callable ``repeats`` times (after one warm-up) and reports the minimum."""

    def __init__(self, repeats: int = 10, inner: int = 1) -> None:
        self.repeats = repeats
        self.inner = inner

    def run(self, label: str, fn: Callable[[], Any]) -> float:
        fn()
        best = float("inf")
        for _ in range(self.repeats):
            start = time.perf_counter()
            for _ in range(self.inner):
                fn()
            best = min(best, (time.perf_counter() - start) / self.inner)
        print(f"  {label:<52} {_fmt(best)}")
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
