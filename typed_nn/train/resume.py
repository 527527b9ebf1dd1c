"""``fit``'s checkpoints: what a run saves after an epoch, and how a run resumes from one.

A fit checkpoint (:func:`~typed_nn.model.save_checkpoint`) holds the trainable weights (named
as the model's ``grad_collect`` names them), the optimizer's state and step count (so its
schedule's position), the epochs done, the shuffling generator's state, the history, and,
with early stopping, the best epoch's weights (``extra/best/<name>``): a run resumed from it
continues bit for bit as the uninterrupted run would have (the patience left is derived from
the history's ``best_epoch``).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, NamedTuple, TypeAlias

import numpy as np

from .. import devices
from ..data.tensor import Tensor
from ..errors import CheckpointError, message
from ..model.checkpoint import load_checkpoint, save_checkpoint
from ..model.optim import Optimizer
from ..tags import CPU, Float32, dim_of_rank
from .checks import bad_argument, check_int
from .history import History
from .stopping import EarlyStopping

__all__ = ["Resumed", "check_checkpointing", "resume", "save_progress"]

PathLike: TypeAlias = str | os.PathLike[str]
Weights: TypeAlias = list[tuple[str, Tensor[Float32, Any, Any]]]
Snapshot: TypeAlias = list[tuple[Tensor[Float32, Any, Any], Any]]
BEST = "best/"
DOING = "cannot fit"


class Resumed(NamedTuple):
    """Where a resumed run starts: the next epoch, early stopping's best (value, weights)
    and the epochs waited since."""

    epoch: int
    best: tuple[float, Snapshot] | None
    waited: int


def check_checkpointing(
    checkpoint_path: object, checkpoint_every: object, resume_from: object
) -> tuple[Path | None, int, Path | None]:
    """fit's checkpoint arguments, checked before training (a folder that does not exist would
    otherwise fail only after the first ``checkpoint_every`` epochs)."""
    every = check_int(DOING, "checkpoint_every", checkpoint_every, 1, 5)
    paths: list[Path | None] = []
    for name, value in (("checkpoint_path", checkpoint_path), ("resume_from", resume_from)):
        if value is None:
            paths.append(None)
            continue
        if not isinstance(value, str | os.PathLike):
            hint = f"pass {name}='runs/model.ckpt' (a str or pathlib.Path), or None."
            raise bad_argument(DOING, name, "a file path or None", value, hint)
        paths.append(Path(value))
    target = paths[0]
    if target is not None and (target.is_dir() or not target.parent.is_dir()):
        problem = "is a folder" if target.is_dir() else "is in a folder that does not exist"
        raise bad_argument(
            DOING,
            "checkpoint_path",
            "a file path in an existing folder",
            checkpoint_path,
            f"the path {problem}: create the folder first, or name a file in it.",
        )
    return target, every, paths[1]


def save_progress(
    path: Path,
    weights: Weights,
    optimizer: Optimizer,
    epochs_done: int,
    rng: np.random.Generator,
    history: History,
    best: tuple[float, Snapshot] | None,
) -> None:
    """Write the run's state after ``epochs_done`` epochs to ``path`` (atomically)."""
    names = {id(w): name for name, w in weights}
    extra = {}
    if best is not None:
        for weight, saved in best[1]:
            dim = dim_of_rank(weight.rank)
            extra[BEST + names[id(weight)]] = Tensor(saved, Float32, weight.device, dim)
    save_checkpoint(
        path,
        dict(weights),
        optimizer,
        epoch=epochs_done,
        rng=rng,
        history=dataclasses.asdict(history),
        extra=extra,
    )


def resume(
    path: Path,
    weights: Weights,
    optimizer: Optimizer,
    rng: np.random.Generator,
    history: History,
    early_stopping: EarlyStopping | None,
) -> Resumed:
    """Load the checkpoint at ``path`` into the weights and the optimizer, ``rng``'s state
    and ``history`` (in place); returns where the run continues."""
    ckpt = load_checkpoint(path, dict(weights), optimizer)
    source = os.fspath(path)
    saved = ckpt.history or {}
    fields = {f.name for f in dataclasses.fields(History)}
    if ckpt.rng_state is None or set(saved) != fields:
        raise CheckpointError(
            message(
                f"cannot resume from {source}: it is not a checkpoint written by fit.",
                [
                    ("needed", "a generator state and a history with " + ", ".join(sorted(fields))),
                    ("found", "history keys " + (", ".join(sorted(saved)) or "none")),
                ],
                hint="the model and the optimizer were loaded; pass a file written by fit's "
                "checkpoint_path=, or load it with load_checkpoint and train on by hand.",
            )
        )
    rng.bit_generator.state = ckpt.rng_state
    restored = History(**saved)  # type: ignore[arg-type]  # JSON data, fields checked above
    for f in dataclasses.fields(History):
        setattr(history, f.name, getattr(restored, f.name))
    best = None
    waited = 0
    if early_stopping is not None and history.best_epoch is not None:
        value = history.metric(early_stopping.monitor)[history.best_epoch]
        device = weights[0][1].device if weights else CPU
        snapshot = [
            (w, devices.array_module(device).asarray(ckpt.arrays[BEST + name]))
            if BEST + name in ckpt.arrays
            else (w, w.array.copy())
            for name, w in weights
        ]
        best = (value, snapshot)
        waited = ckpt.epoch - 1 - history.best_epoch
    return Resumed(ckpt.epoch, best, waited)
