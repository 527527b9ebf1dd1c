"""Recycled result and scratch buffers, keyed by (dtype, size) (docs/evaluation.md, "Buffer pool").

A fresh 40 MB numpy array costs about 2 ms (page faults), more than the arithmetic on it. A
buffer is free only when the pool holds the *only* reference to it: every view of it, result
tensor and node cache keeps one, and CPython's reference count makes the check exact and cheap.
"""

from __future__ import annotations

import math
import mmap
import sys
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from .options import POOL_LIMIT_LISTENERS, options

__all__ = ["BufferPool", "buffer_pool", "kept"]

MIN_BYTES = 1 << 16
"""Smaller buffers are plain ``np.empty`` calls."""

IDLE_REQUESTS = 4096
"""A size no request asked for in this many pooled requests is released (a training step asks
for its sizes every few dozen requests)."""

_getrefcount = sys.getrefcount
_FREE_REFS = 2  # the pool's list slot + getrefcount's own argument


def _mapped(size: int, dtype: np.dtype[Any]) -> Any:
    """A fresh 1-d array of its own pages (an anonymous memory map), given back to the system
    once released (malloc's heap would keep a process's peak for good)."""
    return np.frombuffer(mmap.mmap(-1, max(size * dtype.itemsize, 1)), dtype, size)


def kept(shape: tuple[int, ...], dtype: Any) -> Any:
    """A buffer a program keeps between runs (scratch registers, small kept values): of its
    own pages when it is large, so that evicting the plan gives the memory back."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    if size * dtype.itemsize < MIN_BYTES:
        return np.empty(shape, dtype)
    return _mapped(size, dtype).reshape(shape)


class BufferPool:
    """Large host buffers by (dtype, size): ``per_key`` per size, ``max_bytes`` in all (None:
    ``options.pool_max_bytes``), least recently used sizes dropped first."""

    def __init__(
        self, min_bytes: int = MIN_BYTES, per_key: int = 8, max_bytes: int | None = None
    ) -> None:
        self.min_bytes = min_bytes
        self.per_key = per_key
        self.max_bytes = max_bytes
        # Sizes in least- to most-recently-used order; each with its buffers, oldest first.
        self._free: OrderedDict[tuple[Any, int], list[Any]] = OrderedDict()
        self._held = 0
        self._stamp: dict[tuple[Any, int], int] = {}
        """Size -> the request (``clock``) that last asked for it."""
        self.clock = 0
        """Requests for pooled sizes so far."""
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        """Buffers dropped to stay within the bound."""

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """An uninitialised array of ``shape``: a recycled buffer when one is free."""
        size = 1
        for d in shape:
            size *= d
        dtype = np.dtype(dtype)
        if size * dtype.itemsize < self.min_bytes:
            return np.empty(shape, dtype)
        key = (dtype, size)
        self.clock += 1
        self._stamp[key] = self.clock
        if not self.clock & 63:  # now and then: a steady loop pays next to nothing
            self._age_out()
        bufs = self._free.get(key)
        if bufs is not None:
            self._free.move_to_end(key)  # most recently used: evicted last
            for i in range(len(bufs)):  # by index: a loop variable would add a reference
                if _getrefcount(bufs[i]) == _FREE_REFS:
                    self.hits += 1
                    return bufs[i].reshape(shape)
        self.misses += 1
        buf = _mapped(size, dtype)
        if bufs is None or len(bufs) < self.per_key:
            self._keep(key, buf, bufs)
        return buf.reshape(shape)

    def _keep(self, key: tuple[Any, int], buf: Any, bufs: list[Any] | None) -> None:
        """Pool ``buf`` (a miss: off the hit path), then evict down to the bound."""
        bound = self.bound()
        if buf.nbytes > bound:
            return
        if bufs is None:
            self._free[key] = [buf]
        else:
            bufs.append(buf)
        self._held += buf.nbytes
        if self._held > bound:
            self.trim(bound)

    def _age_out(self) -> None:
        """Release the buffers of the sizes no request asked for in ``IDLE_REQUESTS``."""
        free = self._free
        while free:
            key = next(iter(free))
            if self.clock - self._stamp.get(key, 0) <= IDLE_REQUESTS:
                return
            self._held -= sum(b.nbytes for b in free.pop(key))
            self._stamp.pop(key, None)
            self.evictions += 1

    def bound(self) -> int:
        """The most bytes this pool keeps: ``max_bytes``, else ``options.pool_max_bytes``."""
        return options.pool_max_bytes if self.max_bytes is None else self.max_bytes

    def trim(self, max_bytes: int | None = None) -> None:
        """Drop buffers, least recently used sizes first, until at most ``max_bytes`` (by
        default :meth:`bound`) are held."""
        bound = self.bound() if max_bytes is None else max_bytes
        free = self._free
        while self._held > bound and free:
            key = next(iter(free))
            bufs = free[key]
            self._held -= bufs.pop(0).nbytes
            self.evictions += 1
            if not bufs:
                del free[key]
                self._stamp.pop(key, None)

    def held(self) -> int:
        """Bytes the pool keeps (free or in use); at most :meth:`bound` after every request."""
        return self._held

    def clear(self) -> None:
        """Drop the pool's references (buffers still in use live on with their users)."""
        self._free.clear()
        self._stamp.clear()
        self._held = 0


_local = threading.local()


def buffer_pool() -> BufferPool:
    """This thread's pool (pools are per thread, so a free check cannot race)."""
    pool: BufferPool | None = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = BufferPool()
    return pool


def _trim_this_threads_pool() -> None:
    buffer_pool().trim()


POOL_LIMIT_LISTENERS.append(_trim_this_threads_pool)
