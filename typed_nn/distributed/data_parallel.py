"""What ``fit`` does differently when its world has more than one rank.

* The global batch (``batch_size``) is split across the ranks: it must be divisible by the
  number of ranks (so every full batch gives every rank the same number of samples, and one
  compiled step); the last, smaller batch of an epoch is split as evenly as it goes (a rank
  left without a sample steps on a stand-in sample weighted 0, so every rank still joins the
  step's all-reduce).
* Before the first step the ranks check that they run the same training (``check_same_run``:
  the data's length and a digest of its content, the batch size, the epochs, the optimizer's
  settings, the seed, ...), then that they train the same model (a structural hash of its
  parameters', buffers' and random-number states' names, element types and shapes, and of the
  optimizer's state and the epoch it starts at); a mismatch names the first difference and the
  rank, on every rank. Then every rank takes rank 0's state (parameters, buffers, random-number
  states) and optimizer state.
* Each epoch's loss and accuracy are summed over the ranks.
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import DistributedError, message
from ..layers.state import ModelState
from ..model.optim import Optimizer
from ..tags import GPU, DeviceTag, tag_name
from .world import World

__all__ = [
    "Setting",
    "Shard",
    "check_batch",
    "check_device",
    "check_same_run",
    "data_digest",
    "epoch_totals",
    "shard",
    "sync_buffers",
    "sync_parameters",
]


def check_batch(world: World, batch_size: int) -> int:
    """Each rank's share of a full global batch; a ``DistributedError`` when the ranks
    cannot share ``batch_size`` equally."""
    if batch_size < world.size or batch_size % world.size:
        below = batch_size < world.size
        fit = max(world.size, batch_size - batch_size % world.size)
        raise DistributedError(
            message(
                f"cannot split a global batch of {batch_size} samples across {world.size} "
                "ranks: "
                + (
                    "it is smaller than the number of ranks."
                    if below
                    else "it is not divisible by the number of ranks."
                ),
                [
                    ("batch size", f"{batch_size} (global: split across the ranks)"),
                    ("ranks", str(world.size)),
                    ("rule", "the global batch size is a multiple of the number of ranks"),
                ],
                hint=f"use a batch size of {fit} or {fit + world.size}, or {_fewer(batch_size, world.size)}.",
            )
        )
    return batch_size // world.size


def _fewer(batch_size: int, size: int) -> str:
    """Start the largest number of ranks below ``size`` that divides ``batch_size``."""
    ranks = max(d for d in range(1, min(size, batch_size) + 1) if batch_size % d == 0)
    return f"start {ranks} ranks" if ranks > 1 else "train in one process"


def check_device(world: World, device: type[DeviceTag]) -> None:
    """GPU training of several ranks needs NCCL on every rank (checked on all of them, so
    every rank raises the same error)."""
    if world.size <= 1 or device is not GPU:
        return
    from .nccl import nccl_module

    try:
        nccl_module(world.size)
        ok, error = True, ""
    except DistributedError as err:
        ok, error = False, str(err)
    answers = world.all_gather_object((ok, error))
    for rank, (fine, text) in enumerate(answers):
        if not fine:
            raise DistributedError(text.replace("GPU training", f"GPU training (rank {rank})", 1))


def check_single_process(world: World, what: str) -> None:
    """Training that runs in one process only: an error on every rank of a larger world."""
    if world.size > 1:
        raise DistributedError(
            message(
                f"cannot train {what} data-parallel: fit shares classification batches only.",
                [("ranks", str(world.size))],
                hint="run it in one process (without mpiexec).",
            )
        )


class Shard(NamedTuple):
    """This rank's part of one global batch: ``rows[lo:hi]`` of the epoch's order, weighed
    ``weight`` (its samples / the batch's); ``counted`` False for a stand-in sample."""

    lo: int
    hi: int
    weight: float
    counted: bool


def shard(world: World, start: int, stop: int) -> Shard:
    """This rank's part of the global batch ``start:stop``."""
    return _part(world.rank, world.size, start, stop)


def _part(r: int, ranks: int, start: int, stop: int) -> Shard:
    """Rank ``r``'s part of ``start:stop`` among ``ranks`` (ranks in order, the first
    ``(stop - start) % ranks`` taking one sample more)."""
    m = stop - start
    base, extra = divmod(m, ranks)
    count = base + (r < extra)
    lo = start + r * base + min(r, extra)
    if count == 0:  # a last batch with fewer samples than ranks: a stand-in, weighed 0
        return Shard(start, start + 1, 0.0, False)
    return Shard(lo, lo + count, count / m, True)


def part_sizes(ranks: int, m: int) -> set[int]:
    """The sizes of every rank's part (:func:`shard`) of a batch of ``m``."""
    return {p.hi - p.lo for p in (_part(r, ranks, 0, m) for r in range(ranks))}


def local_order(world: World, order: npt.NDArray[Any], batch_size: int) -> npt.NDArray[Any]:
    """The samples this rank steps on in an epoch visiting ``order``, in step order."""
    if world.size <= 1:
        return order
    n = len(order)
    parts = [order[s.lo : s.hi] for s in _shards(world, n, batch_size) if s.counted]
    return np.concatenate(parts) if parts else order[:0]


def _shards(world: World, n: int, batch_size: int) -> list[Shard]:
    return [shard(world, start, min(start + batch_size, n)) for start in range(0, n, batch_size)]


Setting = tuple[str, str]
"""One thing every rank must agree on: (what, its value as text)."""


def check_same_run(world: World, settings: list[Setting]) -> None:
    """Every rank runs with the same ``settings`` (the data, the arguments of the run): a
    ``DistributedError`` on every rank naming the first that differs and the rank."""
    if world.size <= 1:
        return
    _check_alike(
        world,
        [f"{what}: {value}" for what, value in settings],
        "the ranks do not run the same training",
        "give every rank the same data (the same rows, in the same order) and the same fit "
        "arguments (batch size, epochs, seed, optimizer and its settings).",
    )


def data_digest(*arrays: npt.NDArray[Any]) -> str:
    """A digest of the arrays' shapes, dtypes and values: all of their bytes up to
    ``DIGEST_BYTES`` each, else ``DIGEST_ROWS`` rows spread evenly over each (cheap for any
    size; two data sets that differ only in rows it skips digest alike)."""
    h = hashlib.blake2b(digest_size=16)
    for array in arrays:
        h.update(f"{array.dtype.str}{array.shape}".encode())
        if array.nbytes > DIGEST_BYTES and len(array) > DIGEST_ROWS:
            array = array[np.linspace(0, len(array) - 1, DIGEST_ROWS).astype(np.int64)]
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


DIGEST_BYTES = 1 << 24
DIGEST_ROWS = 4096


def _structure(state: ModelState, optimizer: Optimizer, first_epoch: int) -> list[str]:
    """One line per state tensor (name, element, shape), per optimizer state tensor, and
    the optimizer's step and the epoch the run starts at."""
    lines = [f"optimizer {type(optimizer).__name__}, step {optimizer.step_count}"]
    lines.append(f"first epoch {first_epoch + 1}")
    for name, entry in state.entries.items():
        value = entry.read()
        lines.append(f"{entry.kind} {name}: {tag_name(value.elem)} {value.shape}")
        for slot, t in sorted(optimizer.state(value).items()):
            lines.append(f"optimizer state {name}/{slot}: {tag_name(t.elem)} {t.shape}")
    return lines


def sync_parameters(
    world: World, state: ModelState, optimizer: Optimizer, first_epoch: int = 0
) -> None:
    """Check that every rank trains the same model from the same epoch, then give every rank
    rank 0's state (parameters, buffers, random-number states) and optimizer state (a
    ``DistributedError`` naming the first difference, raised on every rank)."""
    if world.size <= 1:
        return
    _check_alike(
        world,
        _structure(state, optimizer, first_epoch),
        "the ranks do not train the same model",
        "build the same model (layers, widths, element type) and optimizer on every rank, "
        "and resume every rank from the same checkpoint; the initial values may differ "
        "(rank 0's are broadcast).",
    )
    for entry in state.entries.values():
        if entry.kind == "generator":
            values = entry.read().numpy().copy()
            world.broadcast_array(values)
            entry.write(values)
            continue
        w = entry.read()
        world.broadcast(w)
        for _, t in sorted(optimizer.state(w).items()):
            world.broadcast(t)


def sync_buffers(world: World, state: ModelState) -> None:
    """Give every rank rank 0's buffers (batch-norm statistics, which each rank updated from
    its part of the batches), as PyTorch's DistributedDataParallel broadcasts them: the ranks
    then score, save and stop on one model."""
    if world.size <= 1:
        return
    for entry in state.buffers.values():
        world.broadcast(entry.read())


def _check_alike(world: World, lines: list[str], headline: str, hint: str) -> None:
    """Every rank has the same ``lines``: else a ``DistributedError`` on every rank with
    ``headline``, the first line that differs on rank 0 and on the first rank that differs."""
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    digests = world.all_gather_object(digest)
    if all(d == digests[0] for d in digests):
        return
    every = world.all_gather_object(lines)
    rank = next(r for r, d in enumerate(digests) if d != digests[0])
    ours, theirs = every[0], every[rank]
    at = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )

    def shown(entries: list[str]) -> str:
        return entries[at] if at < len(entries) else "(nothing: fewer entries)"

    raise DistributedError(
        message(
            f"{headline}: rank {rank} differs from rank 0.",
            [("rank 0", shown(ours)), (f"rank {rank}", shown(theirs))],
            hint=hint,
        )
    )


def epoch_totals(world: World, nll_sum: float, hits: int, count: int) -> tuple[float, float]:
    """The epoch's (mean loss, accuracy) over every rank's samples."""
    if world.size > 1:
        totals = np.array([nll_sum, hits, count], np.float64)
        summed = np.empty_like(totals)
        world.all_reduce_arrays(totals, summed)
        nll_sum, hits, count = float(summed[0]), int(summed[1]), int(summed[2])
    return nll_sum / count, hits / count
