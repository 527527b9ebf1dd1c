"""Collectives on GPU memory through NCCL (cupy's ``cupy.cuda.nccl``), as ChainerMN does.

Each rank drives one GPU: the rank's place among the ranks of its node (``MPI_LOCALRANKID``
or Open MPI's ``OMPI_COMM_WORLD_LOCAL_RANK``, else the world rank) modulo the node's device
count. Rank 0 makes the communicator's unique id and sends it to the others over MPI; the
collectives run on cupy's current stream, so they are ordered with the kernels around them.

Written against cupy's documented API; the CPU machines this project is tested on have no
GPU, so its tests run it on a stand-in for ``cupy.cuda.nccl`` (tests/test_distributed.py).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..errors import DistributedError, message

__all__ = ["NcclWorld", "nccl_module"]

_LOCAL_RANK_VARIABLES = (
    "MPI_LOCALRANKID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_LOCAL_RANK",
)

NO_NCCL_HINT = (
    "install NCCL for cupy (pip install nvidia-nccl-cu12 beside cupy-cuda12x; see cupy's "
    "installation guide), or train on the CPU with --device cpu"
)


def nccl_module(size: int) -> Any:
    """cupy's NCCL bindings, or a ``DistributedError`` saying GPU training of ``size`` ranks
    needs them."""
    nccl: ModuleType | None
    try:
        nccl = importlib.import_module("cupy.cuda.nccl")
        available = getattr(nccl, "available", True) and hasattr(nccl, "NcclCommunicator")
    except ImportError:
        nccl, available = None, False
    if nccl is None or not available:
        raise DistributedError(
            message(
                f"GPU training of {size} processes needs NCCL, which this cupy does not have.",
                [("device", "GPU"), ("processes", str(size)), ("cupy.cuda.nccl", "unavailable")],
                hint=NO_NCCL_HINT,
            )
        )
    return nccl


def local_rank(rank: int) -> int:
    """This process's place among the ranks of its node, as the launcher says."""
    for name in _LOCAL_RANK_VARIABLES:
        if name in os.environ:
            return int(os.environ[name])
    return rank


class NcclWorld:
    """An NCCL communicator over the ranks of a world, one GPU per rank."""

    def __init__(self, nccl: Any, cupy: Any, comm: Any) -> None:
        self.nccl, self.cupy, self.comm = nccl, cupy, comm
        self.dtypes = {
            "float32": nccl.NCCL_FLOAT32,
            "float64": nccl.NCCL_FLOAT64,
            "int32": nccl.NCCL_INT32,
            "int64": nccl.NCCL_INT64,
        }

    @classmethod
    def connect(cls, rank: int, size: int, share: Callable[[object], object]) -> NcclWorld:
        """Choose this rank's GPU and join the NCCL communicator of the ``size`` ranks
        (collective: ``share(uid)`` gives every rank rank 0's unique id, over MPI)."""
        nccl = nccl_module(size)
        cupy = importlib.import_module("cupy")
        count = cupy.cuda.runtime.getDeviceCount()
        cupy.cuda.Device(local_rank(rank) % max(count, 1)).use()
        uid = nccl.get_unique_id() if rank == 0 else None
        uid = share(uid)
        return cls(nccl, cupy, nccl.NcclCommunicator(size, uid, rank))

    def _dtype(self, array: Any) -> Any:
        code = self.dtypes.get(str(array.dtype))
        if code is None:
            raise DistributedError(
                message(
                    "NCCL cannot reduce this element type.",
                    [("dtype", str(array.dtype)), ("accepted", ", ".join(self.dtypes))],
                )
            )
        return code

    def _stream(self) -> int:
        ptr: int = self.cupy.cuda.get_current_stream().ptr
        return ptr

    def all_reduce(self, send: Any, out: Any) -> None:
        """``out`` = the sum of ``send`` over every rank (contiguous GPU arrays)."""
        self.comm.allReduce(
            send.data.ptr,
            out.data.ptr,
            send.size,
            self._dtype(send),
            self.nccl.NCCL_SUM,
            self._stream(),
        )

    def broadcast(self, array: Any, root: int) -> None:
        """Overwrite ``array`` with the root's, in place."""
        self.comm.bcast(array.data.ptr, array.size, self._dtype(array), root, self._stream())

    def all_gather(self, send: Any, out: Any) -> None:
        """``out[r]`` = rank r's ``send``."""
        self.comm.allGather(
            send.data.ptr, out.data.ptr, send.size, self._dtype(send), self._stream()
        )
