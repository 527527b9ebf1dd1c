"""Recycled result and scratch buffers, keyed by (device, dtype, size).

A fresh 40 MB numpy array costs about 2 ms here (page faults), more than the arithmetic on it,
so evaluation takes large buffers from a pool. The pool never hands out memory that anything
still uses: a buffer is free only when the pool holds the *only* reference to it. Every view
numpy makes of a pooled buffer (the result tensor's array, ``x.numpy()``, ``x[i]``, a
reshape) keeps a reference to it as its ``base``, and so do result tensors, handles and node
caches that hold those views; while any of them lives, the buffer stays taken. CPython's
reference count is the ground truth, which makes the check exact and cheap.

The pool is bounded in bytes (``options.pool_max_bytes``, 512 MiB by default, per thread):
when keeping a new buffer would pass the bound, the buffers of the sizes used least recently
are dropped first. A dropped buffer that is still in use lives on with its users and is freed
with them. It also follows the working set: a size no request asked for in the last
``IDLE_REQUESTS`` pooled requests is released. A loop over a fixed set of shapes (a training
step) keeps hitting; a stream of ever new shapes (variable-length batches) holds at most the
bound, and once it settles into a loop the pool shrinks back to the loop's buffers.
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
"""Default threshold: smaller buffers are plain ``np.empty`` calls (compiled schedules call
``np.empty`` for them directly: their sizes are known when the schedule is generated)."""

IDLE_REQUESTS = 4096
"""A size no request asked for in this many pooled requests is released (a training step
asks for its sizes every few dozen requests; a stream of ever new shapes leaves its old ones
behind)."""

_getrefcount = sys.getrefcount
_FREE_REFS = 2  # the pool's list slot + getrefcount's own argument


def _mapped(size: int, dtype: np.dtype[Any]) -> Any:
    """A fresh 1-d array of its own pages (an anonymous memory map): when the pool releases it
    and its last user lets go, the pages go back to the system at once. (From malloc, memory
    of this size lands on the heap once glibc's adaptive threshold has grown, and a process
    that saw many shapes keeps its peak for good.)"""
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
    """Large host (numpy) buffers by (dtype, size), at most ``max_bytes`` of them, least recently used
    sizes dropped first; small requests go straight to ``np.empty``.

    ``per_key`` buffers at most are kept per size; ``max_bytes=None`` follows
    ``options.pool_max_bytes`` (read whenever a new buffer would be kept).
    """

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
        """Release the buffers of the sizes no request asked for in ``IDLE_REQUESTS`` (least
        recently used first): memory a process no longer reuses goes back, so a stream of new
        shapes then a steady loop returns to the loop's working set."""
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
        default :meth:`bound`) are held. (Setting ``options.pool_max_bytes`` trims the calling
        thread's pool; another thread's applies a lowered bound at its next miss.)"""
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
