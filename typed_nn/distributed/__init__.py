"""Data-parallel training on an existing engine: MPI through mpi4py on the CPU, NCCL through
cupy on the GPU (docs/distributed.md).

::

    mpiexec -n 2 typed-nn train digits       # or: mpiexec -n 2 python train.py

``world()`` is this process's :class:`World` (rank, size, collectives on tensors); ``fit``
trains data-parallel in it with no other change. Importing this package imports no MPI:
mpi4py is loaded only when a launcher started more than one process (pip install
'typed_nn[distributed]').
"""

from __future__ import annotations

from .gradients import GradientAllReduce
from .world import World, abort_on_error, launched, world

__all__ = ["GradientAllReduce", "World", "abort_on_error", "launched", "world"]
