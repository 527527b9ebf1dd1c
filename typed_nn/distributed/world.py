"""The world of a data-parallel run: this process's rank among ``size`` processes, and the
collectives between them, on an existing engine — MPI through mpi4py for host memory, NCCL
through cupy for GPU memory (its communicator's id sent over MPI).

A process started without a launcher (or by ``mpiexec -n 1``) lives in a one-process world:
every collective returns its input's values and nothing is imported, so the same program runs
alone. mpi4py is imported only when a launcher started more than one process; without it,
that is a ``MissingDependencyError`` naming the ``distributed`` extra.

Collectives act on principal tensors (evaluated data) and move their memory through mpi4py's
buffer interface, without copies: ``all_reduce`` writes the sum into a new tensor,
``broadcast`` overwrites its tensor on every rank but the root, ``all_gather`` stacks every
rank's tensor along a new first dim.

Every MPI collective waits at most ``World.timeout`` seconds for the other ranks (600 unless
``TYPED_NN_COLLECTIVE_TIMEOUT`` says otherwise): a rank that left the run — an error of its own,
or fewer steps than this one — ends this one with a ``DistributedError`` instead of a wait
that never ends. (MPI's non-blocking collectives, tested until the deadline; NCCL's run on the
GPU's stream and are not bounded.)
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np

from .. import tracing
from ..data.tensor import Tensor
from ..errors import CompileError, DistributedError, OperandError, message, missing_dependency
from ..evaluate.cache import invalidate_caches
from ..tags import D, Dv, E, Float32, Float64

__all__ = [
    "DEFAULT_TIMEOUT",
    "TIMEOUT_VARIABLE",
    "World",
    "collective_timeout",
    "abort_on_error",
    "launched",
    "world",
]


# What launchers tell the processes they start: MPICH's and Intel MPI's Hydra (and Slurm's
# srun with PMI-2) set PMI_RANK / PMI_SIZE, Open MPI sets OMPI_COMM_WORLD_*, MVAPICH MV2_*.
_LAUNCHER_VARIABLES = (
    ("PMI_RANK", "PMI_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
)

ReduceOp = Literal["sum", "mean"]

TIMEOUT_VARIABLE = "TYPED_NN_COLLECTIVE_TIMEOUT"
DEFAULT_TIMEOUT = 600.0
"""Seconds a collective waits for the other ranks: far longer than any step's imbalance
(a first step's compilation, rank 0 writing a checkpoint), far shorter than forever."""
_SPIN = 2e-4
"""Seconds a wait tests its request without pausing (a step's all-reduce ends well within)."""
ABORT_GRACE = 0.5
"""Seconds a failing rank waits, its output flushed, before ``MPI_Abort``."""


def launched() -> tuple[int, int]:
    """(rank, size) as the launcher set them in the environment; (0, 1) without one."""
    for rank, size in _LAUNCHER_VARIABLES:
        if size in os.environ:
            try:
                return int(os.environ.get(rank, "0")), int(os.environ[size])
            except ValueError:
                continue
    return 0, 1


class World:
    """This process's place among the processes of one run, and their collectives.

    ``rank`` (0 .. size - 1) and ``size``; rank 0 is the root, which alone prints and
    writes files in ``fit`` and the ``typed-nn`` command. A one-process world has no
    communicator: its collectives return their input's values.
    """

    def __init__(self, comm: Any = None, *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self.comm = comm
        """mpi4py's communicator (``MPI.COMM_WORLD``), or None in a one-process world."""
        self.rank: int = 0 if comm is None else int(comm.Get_rank())
        self.size: int = 1 if comm is None else int(comm.Get_size())
        self.timeout = timeout
        """Seconds an MPI collective waits for the other ranks (None: forever)."""
        self._nccl: Any = None

    @property
    def is_root(self) -> bool:
        """Whether this is rank 0 (the one that prints and writes files)."""
        return self.rank == 0

    def __repr__(self) -> str:
        return f"World(rank={self.rank}, size={self.size})"

    # --- collectives on tensors ------------------------------------------------------------

    def all_reduce(self, t: Tensor[E, Dv, D], op: ReduceOp = "sum") -> Tensor[E, Dv, D]:
        """A new tensor holding the sum (or, with ``op="mean"``, the mean) of ``t`` over
        every rank; ``t`` is unchanged."""
        _check_tensor(t, "all_reduce")
        if op not in ("sum", "mean"):
            raise OperandError(
                message(
                    "all_reduce: unknown reduction.",
                    [("received", repr(op)), ("accepted", "'sum', 'mean'")],
                )
            )
        if op == "mean" and t.elem not in (Float32, Float64):
            raise OperandError(
                message(
                    "all_reduce: the mean of integer tensors is not an integer.",
                    [("tensor", t.describe())],
                    hint="reduce with op='sum' and divide by world.size in floating point.",
                )
            )
        xp = _module(t.array)
        out = xp.empty_like(t.array)
        self.all_reduce_arrays(t.array, out)
        if op == "mean" and self.size > 1:
            out *= out.dtype.type(1.0 / self.size)
        return Tensor._wrap(out, t.elem, t.device)

    def broadcast(self, t: Tensor[E, Dv, D], root: int = 0) -> Tensor[E, Dv, D]:
        """Overwrite ``t`` on every rank with the root's values, in place; returns ``t``."""
        _check_tensor(t, "broadcast")
        self._check_root(root)
        self.broadcast_array(t.array, root)
        invalidate_caches()  # t's memory changed: results cached from it are stale
        return t

    def all_gather(self, t: Tensor[E, Dv, Any]) -> Tensor[E, Dv, Any]:
        """Every rank's ``t`` (one shape on all ranks) stacked along a new first dim, in
        rank order: ``(size, *t.shape)``."""
        _check_tensor(t, "all_gather")
        xp = _module(t.array)
        out = xp.empty((self.size, *t.shape), t.array.dtype)
        if self.comm is None:
            out[0] = t.array
        elif xp is np:
            self._wait(self.comm.Iallgather(np.ascontiguousarray(t.array), out), "all_gather")
        else:
            self.nccl().all_gather(t.array, out)
        return Tensor._wrap(out, t.elem, t.device)

    # --- collectives on arrays (the compiled step's all-reduce calls these) -------------------

    def all_reduce_arrays(self, send: Any, out: Any) -> None:
        """``out`` = the sum of ``send`` over every rank (host arrays through MPI, GPU
        arrays through NCCL; both contiguous, of one shape and dtype)."""
        if self.comm is None:
            if out is not send:
                out[...] = send
        elif isinstance(send, np.ndarray):
            from mpi4py import MPI

            self._wait(
                self.comm.Iallreduce(MPI.IN_PLACE if out is send else send, out, op=MPI.SUM),
                "all_reduce",
            )
        else:
            self.nccl().all_reduce(send, out)

    def broadcast_array(self, array: Any, root: int = 0) -> None:
        """Overwrite ``array`` with the root's, in place (host or GPU memory)."""
        if self.comm is None:
            return
        if isinstance(array, np.ndarray):
            if not array.flags.c_contiguous:
                raise OperandError(message("broadcast: the tensor's memory is not contiguous.", []))
            self._wait(self.comm.Ibcast(array, root=root), "broadcast")
        else:
            self.nccl().broadcast(array, root)

    def all_gather_object(self, obj: Any) -> list[Any]:
        """Every rank's (small, picklable) ``obj``, in rank order."""
        if self.comm is None:
            return [obj]
        data = np.frombuffer(pickle.dumps(obj), np.uint8)
        sizes = np.empty(self.size, np.int64)
        self._wait(self.comm.Iallgather(np.array([data.size], np.int64), sizes), "all_gather")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        out = np.empty(int(sizes.sum()), np.uint8)
        self._wait(self.comm.Iallgatherv(data, [out, (sizes, starts)]), "all_gather")
        return [pickle.loads(out[a : a + n].tobytes()) for a, n in zip(starts, sizes, strict=True)]

    def barrier(self) -> None:
        """Wait until every rank has reached this call."""
        if self.comm is not None:
            self._wait(self.comm.Ibarrier(), "barrier")

    def _wait(self, request: Any, collective: str) -> None:
        """Wait for a non-blocking MPI collective, at most ``timeout`` seconds: a
        ``DistributedError`` when the other ranks do not join it by then."""
        if self.timeout is None:
            request.Wait()
            return
        start = time.monotonic()
        pause = 0.0
        while not request.Test():
            waited = time.monotonic() - start
            if waited > self.timeout:
                raise self._timed_out(collective)
            if waited > _SPIN:  # a long wait: let the other ranks' work have the cores
                pause = min(1e-3, pause + 1e-5)
                time.sleep(pause)

    def _timed_out(self, collective: str) -> DistributedError:
        return DistributedError(
            message(
                f"rank {self.rank} of {self.size} waited {self.timeout:g} s in {collective} for "
                "the other ranks: a rank has left the run (an error of its own, or fewer steps "
                "than this one).",
                [
                    ("collective", collective),
                    ("waited", f"{self.timeout:g} s ({TIMEOUT_VARIABLE})"),
                ],
                hint="read the other ranks' errors; run every rank with the same data and "
                f"arguments. For steps that take longer, set {TIMEOUT_VARIABLE} (seconds).",
            )
        )

    def abort(self, code: int = 1) -> None:
        """End every process of the world now (``MPI_Abort``); alone, exit with ``code``."""
        sys.stdout.flush()
        sys.stderr.flush()
        if self.comm is not None:
            # mpiexec forwards a rank's output through its launcher and drops what it has not
            # forwarded when the abort reaches it first (a loaded machine: the failing rank's
            # message lost): give the launcher a moment to forward it.
            time.sleep(ABORT_GRACE)
            self.comm.Abort(code)
        os._exit(code)  # pragma: no cover - Abort does not return

    def nccl(self) -> Any:
        """This world's NCCL communicator for GPU memory (made at the first use)."""
        if self._nccl is None:
            from .nccl import NcclWorld

            self._nccl = NcclWorld.connect(
                self.rank, self.size, lambda uid: self.all_gather_object(uid)[0]
            )
        return self._nccl

    def _check_root(self, root: int) -> None:
        if not (type(root) is int and 0 <= root < self.size):
            raise OperandError(
                message(
                    "broadcast: the root is not a rank of the world.",
                    [("root", repr(root)), ("ranks", f"0 .. {self.size - 1}")],
                )
            )


def _check_tensor(t: object, what: str) -> None:
    if tracing.state.trace is not None:  # it would run once, on the trace's stand-ins
        raise CompileError(
            message(
                f"cannot run {what} inside a function tn.compile traces: the collective would "
                "run once, at trace time, and its result would be frozen into the program.",
                hint="compile the forward and gradients, run the collective on what the "
                "compiled call returns, then step (fit does this for you; docs/distributed.md).",
            )
        )
    if not isinstance(t, Tensor):
        describe = getattr(t, "describe", None)  # a lazy expression's (no hasattr narrowing)
        raise OperandError(
            message(
                f"{what} needs a principal tensor (evaluated data).",
                [("received", str(describe()) if callable(describe) else type(t).__name__)],
                hint="evaluate it first: tn.evaluate(x).",
            )
        )


def _module(array: Any) -> Any:
    from ..devices import module_of

    return module_of(array)


_WORLD: list[World] = []


def world() -> World:
    """This process's world (made once): MPI's when a launcher started more than one
    process, else a one-process world. A launcher's world without mpi4py is a
    ``MissingDependencyError``; an MPI that sees fewer processes than the launcher started
    (mpi4py built for another MPI than the launcher's) is a ``DistributedError``."""
    if _WORLD:
        return _WORLD[0]
    _, size = launched()
    if size <= 1:
        made = World()
    else:
        try:
            from mpi4py import MPI
        except ImportError as err:
            raise missing_dependency(
                f"data-parallel training of {size} processes", "mpi4py", "distributed"
            ) from err
        made = World(MPI.COMM_WORLD, timeout=collective_timeout())
        if made.size != size:
            raise DistributedError(
                message(
                    f"the launcher started {size} processes but MPI sees {made.size}: mpi4py "
                    "was built for another MPI than the one that launched this run.",
                    [("launcher", f"{size} processes"), ("mpi4py's MPI", str(made.size))],
                    hint="launch with the mpiexec of mpi4py's MPI (pip install "
                    "'typed_nn[distributed]' puts one next to python).",
                )
            )
    _WORLD.append(made)
    return made


def collective_timeout() -> float | None:
    """The seconds a collective waits, from ``TYPED_NN_COLLECTIVE_TIMEOUT`` (a positive
    number; ``none``: forever), else ``DEFAULT_TIMEOUT``."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip().lower()
    if not text:
        return DEFAULT_TIMEOUT
    if text == "none":
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise DistributedError(
            message(
                f"{TIMEOUT_VARIABLE} must be a positive number of seconds, or 'none'.",
                [("received", repr(os.environ[TIMEOUT_VARIABLE]))],
                hint=f"e.g. {TIMEOUT_VARIABLE}=600 (the default), or unset it.",
            )
        )
    return seconds


@contextmanager
def abort_on_error(
    w: World, collective: tuple[type[BaseException], ...] = (DistributedError,)
) -> Generator[None, None, None]:
    """Run a block in which any rank may fail alone: an exception on one rank prints that
    rank's error and ends the whole world (``MPI_Abort``), so no other rank waits forever
    in a collective. In a one-process world the exception propagates unchanged, as do the
    ``collective`` errors, which every rank raises alike (e.g. ranks that disagree on the
    model)."""
    given: tuple[object, object] = (w, collective)  # callers may pass anything
    if not isinstance(given[0], World):
        raise OperandError(
            message(
                "abort_on_error needs the world whose ranks to end.",
                [("received", type(w).__name__)],
                hint="pass typed_nn.distributed.world().",
            )
        )
    kinds = given[1]
    if not (
        isinstance(kinds, tuple)
        and all(isinstance(c, type) and issubclass(c, BaseException) for c in kinds)
    ):
        raise OperandError(
            message(
                "abort_on_error: collective must be a tuple of exception classes.",
                [("received", repr(collective)[:80])],
                hint="e.g. (DistributedError,): errors every rank raises alike.",
            )
        )
    try:
        yield
    except BaseException as exc:
        if w.size <= 1 or isinstance(exc, (SystemExit, KeyboardInterrupt, *collective)):
            raise
        # the whole message: its items and hint are what the user acts on
        print(
            f"typed-nn: rank {w.rank} of {w.size} failed, ending every rank: "
            f"{type(exc).__name__}: {exc}",
            file=sys.stderr,
            flush=True,
        )
        w.abort(1)
        raise  # pragma: no cover - abort does not return
