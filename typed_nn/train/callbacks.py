"""``fit``'s callbacks: what a run does beside training, as objects in ``callbacks=[...]``.

::

    fit(model, split.train, optim.Adam(model, lr=1e-3), test=split.test, callbacks=[
        ProgressBar(sys.stdout),                       # a line per epoch (a bar on a terminal)
        EarlyStopping("test_acc", patience=5),         # and the best epoch's weights at the end
        ModelCheckpoint("runs/digits.ckpt", every=2),  # resume with resume_from=
        LambdaCallback(on_epoch_end=lambda epoch, history: print(history.test_acc[-1])),
    ])

``Callback`` is the base class of every callback (Keras' and Lightning's shape): subclass it
and override ``on_train_begin``, ``on_epoch_end`` or ``on_train_end``. The built-in ones set
what the loop does (progress, early stopping, checkpoints, non-finite losses); each may be
given once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TextIO

from .history import History

__all__ = [
    "Callback",
    "LambdaCallback",
    "ModelCheckpoint",
    "NonFinite",
    "OnNonFinite",
    "ProgressBar",
]

NonFinite = Literal["raise", "continue"]
"""What ``fit`` does when a batch's loss is NaN or Inf: stop with an error, or train on."""


class Callback:
    """A hook into ``fit``'s run: every method does nothing unless overridden. In a
    data-parallel run every rank calls them (``history`` is alike on every rank)."""

    def on_train_begin(self, history: History) -> None:
        """Before the first epoch (of this call: a resumed run's history holds the epochs
        done)."""

    def on_epoch_end(self, epoch: int, history: History) -> None:
        """After epoch ``epoch`` (from 0), its metrics in ``history``."""

    def on_train_end(self, history: History) -> None:
        """After the last epoch (early stopping's best weights already restored)."""


class LambdaCallback(Callback):
    """A callback from functions, e.g. ``LambdaCallback(on_epoch_end=log)``."""

    def __init__(
        self,
        *,
        on_train_begin: Callable[[History], None] | None = None,
        on_epoch_end: Callable[[int, History], None] | None = None,
        on_train_end: Callable[[History], None] | None = None,
    ) -> None:
        self._begin, self._epoch, self._end = on_train_begin, on_epoch_end, on_train_end

    def on_train_begin(self, history: History) -> None:
        if self._begin is not None:
            self._begin(history)

    def on_epoch_end(self, epoch: int, history: History) -> None:
        if self._epoch is not None:
            self._epoch(epoch, history)

    def on_train_end(self, history: History) -> None:
        if self._end is not None:
            self._end(history)


@dataclass(frozen=True)
class ProgressBar(Callback):
    """Print one line per epoch to ``stream`` (stderr when None), with a tqdm bar over the
    epoch's batches when ``stream`` is a terminal and tqdm is installed; ``bars=True`` forces
    the bars, ``False`` prints lines only. Without a ``ProgressBar``, ``fit`` prints nothing;
    in a data-parallel run rank 0 alone prints."""

    stream: TextIO | None = None
    bars: bool | None = None


@dataclass(frozen=True)
class ModelCheckpoint(Callback):
    """Write the run's whole state to ``path`` every ``every`` epochs and after the last one
    (the model's parameters, buffers and generator states, the optimizer, the shuffling
    generator, the history, early stopping's best); ``resume_from``: continue the run saved
    there, bit for bit, up to ``fit``'s ``epochs`` in all. Either may be None."""

    path: str | os.PathLike[str] | None = None
    every: int = 1
    resume_from: str | os.PathLike[str] | None = None


@dataclass(frozen=True)
class OnNonFinite(Callback):
    """What a NaN or Inf batch loss (or weight) does: ``"raise"`` (the default without this
    callback: a ``TrainingError`` naming the epoch, batch and learning rate) or ``"continue"``
    (train on; the history shows the NaN)."""

    action: NonFinite = "raise"
