"""An epoch's training loss and accuracy, read from the probabilities of its batches, and
the error that stops ``fit`` when a batch's loss is not finite (a diverging run)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from .. import devices
from ..data.tensor import Tensor
from ..errors import TrainingError, message

__all__ = ["EpochMetrics", "Rated", "Where", "diverged", "weights_diverged"]


class Rated(Protocol):
    """An optimizer's learning rate (a number or a schedule) and its steps taken: what a
    divergence report names (a ``typed_nn.model`` or a ``typed_nn.optim`` optimizer)."""

    @property
    def lr(self) -> float | Callable[[int], float]: ...
    @property
    def step_count(self) -> int: ...


_sum = np.add.reduce  # ndarray.sum without its Python wrapper
Items = list[tuple[str, str]]


class EpochMetrics:
    """An epoch's training loss and accuracy from each batch's probabilities (computed
    before that batch's update): the mean NLL of the one-hot targets (``nll_loss``:
    -mean ln p[i, label i]) and the fraction of argmax hits.

    Batches are reduced in chunks of ``CHUNK``: one concatenate, gather and argmax per
    chunk instead of per batch (a training step's own numpy calls cost about as much).
    With ``check``, each chunk is also searched for a non-finite loss (a probability of 0
    or NaN for the true class): ``first_bad`` is then the position, in this epoch's order,
    of the first such sample.
    """

    CHUNK = 16
    CAUSE = "a probability of 0 or NaN"
    """Why a batch's loss is not finite (for the divergence error)."""
    FINITE = "a finite loss (each sample's true class has a probability > 0)"

    def __init__(
        self, labels: npt.NDArray[np.int64], batch_size: int, classes: int, check: bool = True
    ) -> None:
        n = len(labels)
        self.labels = labels
        self.batch_size = batch_size
        self.check = check
        self.first_bad: int | None = None
        # A sample's offset in its chunk's flattened (rows, classes) probabilities: every
        # chunk but the last spans CHUNK full batches.
        self.offset = np.arange(n) % (batch_size * self.CHUNK) * classes
        self.picked = np.empty(n, np.float32)
        self.predicted = np.empty(n, np.intp)
        self.pending: list[npt.NDArray[np.float32]] = []
        self.done = 0
        self.order = np.arange(n)
        self.label_at = self.offset

    def begin(self, order: npt.NDArray[np.int64]) -> None:
        """Start an epoch that visits the samples in ``order`` (in a data-parallel run,
        this rank's samples only: fewer than ``labels``)."""
        self.order = order
        self.label_at = self.labels[order] + self.offset[: len(order)]
        self.pending.clear()
        self.done = 0
        self.first_bad = None

    def add(self, probs: Any) -> None:
        """The next batch's probabilities, on any device (kept until its chunk is reduced)."""
        self.pending.append(probs)
        if len(self.pending) == self.CHUNK:
            self._reduce()

    def batch_loss(self, probs: Any, rows: npt.NDArray[np.int64]) -> float:
        """One batch's mean NLL (for a progress bar)."""
        picked = devices.to_host(probs)[np.arange(len(rows)), self.labels[rows]]
        with np.errstate(divide="ignore", invalid="ignore"):  # a loss of inf or nan is shown
            return -float(np.log(picked).mean())

    def _reduce(self) -> None:
        if not self.pending:
            return
        chunk = np.concatenate(self.pending) if len(self.pending) > 1 else self.pending[0]
        chunk = devices.to_host(chunk)  # on the GPU: one copy to the host per chunk
        start, stop = self.done, self.done + len(chunk)
        # mode "clip" writes straight into out; the indices are in range by construction
        chunk.ravel().take(self.label_at[start:stop], 0, self.picked[start:stop], "clip")
        chunk.argmax(1, self.predicted[start:stop])
        self.pending.clear()
        self.done = stop
        picked = self.picked[start:stop]
        if self.check and self.first_bad is None and not picked.min() > 0:  # 0 or NaN
            self.first_bad = start + int(np.flatnonzero(~(picked > 0))[0])

    def batch_nll(self, batch: int) -> float:
        """The mean NLL of the epoch's ``batch`` (0-based), once its chunk is reduced."""
        rows = self.picked[batch * self.batch_size : (batch + 1) * self.batch_size]
        with np.errstate(divide="ignore", invalid="ignore"):
            return -float(np.log(rows).mean())

    def end(self) -> tuple[float, float]:
        """The epoch's (loss, accuracy)."""
        nll, hits, n = self.totals()
        return nll / n, hits / n

    def totals(self) -> tuple[float, int, int]:
        """The epoch's summed NLL, hits and sample count (to sum over data-parallel ranks)."""
        self._reduce()
        n = len(self.order)
        with np.errstate(divide="ignore", invalid="ignore"):  # OnNonFinite("continue")
            nll = -float(_sum(np.log(self.picked[:n]), axis=None))
        hits = int(np.count_nonzero(self.predicted[:n] == self.labels[self.order]))
        return nll, hits, n


class Where(NamedTuple):
    """A point of a run: 0-based epoch and batch, of ``epochs`` and ``batches`` per epoch."""

    epoch: int
    epochs: int
    batch: int
    batches: int
    batch_size: int


def _error(found: str, where: Where, step: int, optimizer: Rated, items: Items) -> TrainingError:
    """``cannot train: <found> at epoch E, batch B (learning rate X)``; ``step``: the
    optimizer's step number at that batch (a schedule's learning rate is read there)."""
    lr = float(optimizer.lr(step) if callable(optimizer.lr) else optimizer.lr)
    at = f"epoch {where.epoch + 1}, batch {where.batch + 1}"
    rate = f"{lr:g}" + (f" (the schedule at step {step})" if callable(optimizer.lr) else "")
    return TrainingError(
        message(
            f"cannot train: {found} at {at} (learning rate {lr:g}).",
            [
                ("epoch", f"{where.epoch + 1} of {where.epochs}"),
                (
                    "batch",
                    f"{where.batch + 1} of {where.batches} ({where.batch_size} samples each)",
                ),
                ("learning rate", rate),
                *items,
            ],
            hint=f"lower the learning rate (e.g. {lr / 10:g}) and start again from fresh "
            "weights; callbacks=[OnNonFinite('continue')] trains on regardless.",
        )
    )


class BatchLosses(Protocol):
    """What the divergence error reads of an epoch's metrics (EpochMetrics, LossMetrics)."""

    # Read-only: the classes' CAUSE and FINITE are constants (str literals to pyright, which
    # matches a settable member invariantly).
    @property
    def CAUSE(self) -> str: ...
    @property
    def FINITE(self) -> str: ...

    batch_size: int
    first_bad: int | None

    def batch_nll(self, batch: int) -> float: ...


def diverged(metrics: BatchLosses, optimizer: Rated, where: Where) -> TrainingError:
    """The error for the first non-finite loss ``metrics`` found; ``where.batch``: the last
    batch run (the steps after the bad batch's are counted back)."""
    assert metrics.first_bad is not None  # only called once one was found
    bad = metrics.first_bad // metrics.batch_size
    loss = metrics.batch_nll(bad)
    step = optimizer.step_count - (where.batch + 1 - bad)  # one step per batch since
    items = [
        ("declared", metrics.FINITE),
        ("received", f"{loss}: {metrics.CAUSE}; the run has diverged"),
        ("weights", f"updated through batch {where.batch + 1}: they may hold NaN or Inf now"),
    ]
    return _error(f"the loss is {loss}", where._replace(batch=bad), step, optimizer, items)


def weights_diverged(
    weights: Iterable[tuple[str, Tensor[Any, Any, Any]]], optimizer: Rated, where: Where
) -> TrainingError | None:
    """The divergence error when one of the (name, weight) ``weights`` holds NaN or Inf
    after the batch at ``where`` (an epoch's last update, which no later loss would show);
    else None."""
    for name, weight in weights:
        xp = devices.array_module(weight.device)
        if not bool(xp.all(xp.isfinite(weight.array))):
            items = [("declared", "finite weights"), ("received", f"{name} holds NaN or Inf")]
            step = optimizer.step_count - 1
            return _error("a weight became NaN or Inf", where, step, optimizer, items)
    return None
