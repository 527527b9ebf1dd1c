"""typed_nn's CPU threads: numpy's BLAS pool and the split of large element-wise passes.

``tn.set_num_threads(n)`` (PyTorch's ``torch.set_num_threads``) sets both: numpy's OpenBLAS
runs matrix products on ``n`` threads, and a fused element-wise region of at least
:data:`SPLIT_MIN` elements hands its blocks to ``n`` threads (the caller and ``n - 1`` workers
of a small persistent pool; numpy's ufuncs release the GIL on a block). Until it is called,
nothing changes: ``tn.get_num_threads()`` is the BLAS's own count — what
``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` or the core count gave it when numpy loaded —
and element-wise passes run in the calling thread, as they always did (on a busy machine a
second thread can be slower: the split is asked for, not assumed).

Each block is computed by the same calls in any thread, so a split pass gives bit-identical
numbers; reductions are never split (their summation order stays numpy's).
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Sequence
from queue import SimpleQueue
from typing import Any, TypeVar

from .blas import blas_threads, env_threads, set_blas_threads
from .errors import OptionError, message

__all__ = ["SPLIT_MIN", "get_num_threads", "run_parts", "set_num_threads", "split_count"]

T = TypeVar("T")

SPLIT_MIN = 1 << 19
"""Elements from which a fused element-wise region is split across threads (float32: 2 MB).
``benchmarks/threads.py --sweep`` on the 2-vCPU reference VM, quiet (load 0.4), four runs of
the chain at 2 threads against 1: 2^17 elements 0.83-0.93x (the hand-off costs more than
half the pass), 2^18 1.00-1.08x, 2^19 1.16-1.48x, 2^20 1.17-1.60x, 2^23 1.52-1.60x."""

_count: list[int] = []
"""The thread count once known (set, or read from the BLAS at first use)."""

split_count = 1
"""Threads a large element-wise region is split across: 1 until :func:`set_num_threads`."""


def get_num_threads() -> int:
    """The number of CPU threads typed_nn uses (matrix products and large element-wise passes).

    Until :func:`set_num_threads` is called: numpy's BLAS's own count (from
    ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS``, else the cores), or, where the BLAS cannot be
    read, those variables, else 1; element-wise passes are not split until then.
    """
    if not _count:
        _count.append(blas_threads() or env_threads() or 1)
    return _count[0]


def set_num_threads(n: int) -> None:
    """Use ``n`` CPU threads: numpy's BLAS threads and the split of large element-wise passes.

    Example::

        tn.set_num_threads(2)
        assert tn.get_num_threads() == 2

    Raises :class:`OptionError` for a count below 1, and
    :class:`BackendUnavailableError` (changing nothing) where numpy's BLAS offers no thread
    control (a numpy built with MKL or Accelerate: set its environment variables instead).
    """
    if type(n) is not int or n < 1:
        raise OptionError(
            message(
                "cannot set typed_nn's thread count: n must be an int >= 1.",
                [("declared", "an int >= 1"), ("received", repr(n))],
                hint=f"tn.set_num_threads({os.cpu_count() or 1}) uses every core; "
                "tn.set_num_threads(1) is often fastest on a shared or loaded machine.",
            )
        )
    global split_count
    set_blas_threads(n)
    _count[:] = [n]
    split_count = n


class _Worker:
    """One pool thread: runs ``body(part)`` in the caller's context for each job it is sent."""

    def __init__(self) -> None:
        self.jobs: SimpleQueue[tuple[Any, ...]] = SimpleQueue()
        threading.Thread(target=self._loop, name="typed_nn-worker", daemon=True).start()

    def _loop(self) -> None:
        while True:
            context, body, part, done = self.jobs.get()
            try:
                context.run(body, part)
                done.put(None)
            except BaseException as error:  # handed to the caller, which raises it
                done.put(error)


class _Pool:
    """Persistent workers, used by one caller at a time (another caller runs its parts
    itself rather than wait)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.workers: list[_Worker] = []


_pool = _Pool()


def _reset_after_fork() -> None:
    global _pool
    _pool = _Pool()  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_reset_after_fork)


def run_parts(body: Callable[[T], object], parts: Sequence[T]) -> None:
    """``body(part)`` for every part: the first in the calling thread, the others on the pool's
    workers, each in a copy of the caller's context (numpy's error state is a context
    variable). Returns once every part is done; raises the first error any part raised."""
    pool = _pool
    if len(parts) < 2 or not pool.lock.acquire(blocking=False):
        for part in parts:
            body(part)
        return
    errors: list[BaseException] = []
    # a queue per run: a run left by an interrupt must not hand its late results to the next
    done: SimpleQueue[BaseException | None] = SimpleQueue()
    try:
        while len(pool.workers) < len(parts) - 1:
            pool.workers.append(_Worker())
        for worker, part in zip(pool.workers, parts[1:], strict=False):
            worker.jobs.put((contextvars.copy_context(), body, part, done))
        try:
            body(parts[0])
        except BaseException as error:
            errors.append(error)
        for _ in parts[1:]:  # every worker finished before the caller goes on
            failed = done.get()
            if failed is not None:
                errors.append(failed)
    finally:
        pool.lock.release()
    if errors:
        raise errors[0]
