"""Recycled result and scratch buffers, keyed by (device, dtype, size).

A fresh 40 MB numpy array costs about 2 ms here (page faults), more than the arithmetic on it,
so evaluation takes large buffers from a pool. The pool never hands out memory that anything
still uses: a buffer is free only when the pool holds the *only* reference to it. Every view
numpy makes of a pooled buffer (the result tensor's array, ``x.numpy()``, ``x[i]``, a
reshape) keeps a reference to it as its ``base``, and so do result tensors, handles and node
caches that hold those views; while any of them lives, the buffer stays taken. CPython's
reference count is the ground truth, which makes the check exact and cheap.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

__all__ = ["BufferPool", "buffer_pool"]

MIN_BYTES = 1 << 16
"""Default threshold: smaller buffers are plain ``np.empty`` calls (compiled schedules call
``np.empty`` for them directly: their sizes are known when the schedule is generated)."""

_getrefcount = sys.getrefcount
_FREE_REFS = 2  # the pool's list slot + getrefcount's own argument


class BufferPool:
    """Large CPU buffers by (dtype, size); small requests go straight to ``np.empty``."""

    def __init__(self, min_bytes: int = MIN_BYTES, per_key: int = 8) -> None:
        self.min_bytes = min_bytes
        self.per_key = per_key
        self._free: dict[tuple[str, Any, int], list[Any]] = {}
        self.hits = 0
        self.misses = 0

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """An uninitialised array of ``shape``: a recycled buffer when one is free."""
        size = 1
        for d in shape:
            size *= d
        dtype = np.dtype(dtype)
        if size * dtype.itemsize < self.min_bytes:
            return np.empty(shape, dtype)
        key = ("CPU", dtype, size)
        bufs = self._free.get(key)
        if bufs is None:
            bufs = self._free[key] = []
        for i in range(len(bufs)):
            if _getrefcount(bufs[i]) == _FREE_REFS:
                self.hits += 1
                return bufs[i].reshape(shape)
        self.misses += 1
        buf = np.empty(size, dtype)
        if len(bufs) < self.per_key:
            bufs.append(buf)
        return buf.reshape(shape)

    def held(self) -> int:
        """Bytes the pool keeps (free or in use)."""
        return sum(b.nbytes for bufs in self._free.values() for b in bufs)

    def clear(self) -> None:
        """Drop the pool's references (buffers still in use live on with their users)."""
        self._free.clear()


_local = threading.local()


def buffer_pool() -> BufferPool:
    """This thread's pool (pools are per thread, so a free check cannot race)."""
    pool: BufferPool | None = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = BufferPool()
    return pool
