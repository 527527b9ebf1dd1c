"""``fit``'s checkpoints: what a run saves after an epoch, and how a run resumes from one.

A fit checkpoint (:func:`~typed_nn.model.save_checkpoint`) holds the model's whole state (its
parameters, buffers such as batch-norm statistics, and random-number states such as dropout's:
``model_state``, one walk over its layers), the optimizer's state and step count (so its
schedule's position), the epochs done, the shuffling generator's state, the history, and,
with early stopping, the best epoch's parameters and buffers (``extra/best/<name>``): a run
resumed from it continues bit for bit as the uninterrupted run would have (the patience left
is derived from the history's ``best_epoch``). Nothing is run to find the state: no forward
is built for a made-up batch.
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
from ..model.checkpoint import Model, load_checkpoint, save_checkpoint
from ..model.optim import Optimizer
from ..tags import dim_of_rank
from .checks import bad_argument, check_int
from .history import History
from .stopping import EarlyStopping

__all__ = ["Resumed", "check_checkpointing", "restore", "resume", "save_progress", "snapshot"]

PathLike: TypeAlias = str | os.PathLike[str]
Weights: TypeAlias = list[tuple[str, Tensor[Any, Any, Any]]]
"""Named tensors: the model's parameters and buffers."""
Snapshot: TypeAlias = list[tuple[str, Tensor[Any, Any, Any], Any]]
"""(name, tensor, a copy of its values) per parameter and buffer: early stopping's best."""
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
    every = check_int(DOING, "ModelCheckpoint.every", checkpoint_every, 1, 5)
    paths: list[Path | None] = []
    for name, value in (("path", checkpoint_path), ("resume_from", resume_from)):
        if value is None:
            paths.append(None)
            continue
        if not isinstance(value, str | os.PathLike):
            hint = f"pass ModelCheckpoint({name}='runs/model.ckpt') (a str or Path), or None."
            name = f"ModelCheckpoint.{name}"
            raise bad_argument(DOING, name, "a file path or None", value, hint)
        paths.append(Path(value))
    target = paths[0]
    if target is not None and (target.is_dir() or not target.parent.is_dir()):
        problem = "is a folder" if target.is_dir() else "is in a folder that does not exist"
        raise bad_argument(
            DOING,
            "ModelCheckpoint.path",
            "a file path in an existing folder",
            checkpoint_path,
            f"the path {problem}: create the folder first, or name a file in it.",
        )
    return target, every, paths[1]


def snapshot(weights: Weights) -> Snapshot:
    """Copies of the values of ``weights`` (on their devices)."""
    return [(name, w, w.array.copy()) for name, w in weights]


def restore(saved: Snapshot) -> None:
    """Write a snapshot's values back into its tensors."""
    for _, weight, values in saved:
        weight.assign(Tensor(values, weight.elem, weight.device, dim_of_rank(weight.rank)))


def save_progress(
    path: Path,
    model: Model,
    optimizer: Optimizer,
    epochs_done: int,
    rng: np.random.Generator,
    history: History,
    best: tuple[float, Snapshot] | None,
) -> None:
    """Write the run's state after ``epochs_done`` epochs to ``path`` (atomically)."""
    extra = {}
    for name, weight, saved in best[1] if best is not None else ():
        extra[BEST + name] = Tensor(saved, weight.elem, weight.device, dim_of_rank(weight.rank))
    save_checkpoint(
        path,
        model,
        optimizer,
        epoch=epochs_done,
        rng=rng,
        history=dataclasses.asdict(history),
        extra=extra,
    )


def resume(
    path: Path,
    model: Model,
    weights: Weights,
    optimizer: Optimizer,
    rng: np.random.Generator,
    history: History,
    early_stopping: EarlyStopping | None,
) -> Resumed:
    """Load the checkpoint at ``path`` into the model (``weights``: its parameters and
    buffers) and the optimizer, ``rng``'s state and ``history`` (in place); returns where the
    run continues."""
    ckpt = load_checkpoint(path, model, optimizer)
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
                "ModelCheckpoint, or load it with load_checkpoint and train on by hand.",
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
        best_arrays = [
            (name, w, devices.array_module(w.device).asarray(ckpt.arrays[BEST + name]))
            if BEST + name in ckpt.arrays
            else (name, w, w.array.copy())
            for name, w in weights
        ]
        best = (value, best_arrays)
        waited = ckpt.epoch - 1 - history.best_epoch
    return Resumed(ckpt.epoch, best, waited)
