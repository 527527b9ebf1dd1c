"""What every rank of a data-parallel ``fit`` must agree on before its first step.

Ranks that disagree on any of these would not fail by themselves: different data of the
same shapes train on silently, a different number of batches leaves one rank waiting in an
all-reduce the others never join, a different batch size sends buffers of another length.
``run_settings`` lists them, in the order a message names the first that differs
(``typed_nn.distributed.data_parallel.check_same_run`` compares them across the ranks).
"""

from __future__ import annotations

import numpy as np

from ..distributed.data_parallel import Setting, data_digest
from ..model.optim import Optimizer
from ..tags import DeviceTag, tag_name
from .arrays import ArrayDataset
from .data import Dataset, n_batches
from .stopping import EarlyStopping

__all__ = ["run_settings"]

LR_SAMPLES = 5
"""Steps of the run at which a schedule's learning rate is compared (first to last)."""


def run_settings(
    train: Dataset | ArrayDataset,
    test: Dataset | ArrayDataset | None,
    optimizer: Optimizer,
    *,
    epochs: int,
    batch_size: int,
    seed: int,
    early_stopping: EarlyStopping | None,
    device: type[DeviceTag],
    resuming: bool,
) -> list[Setting]:
    """The data and the arguments a data-parallel run depends on, as text."""
    settings = [
        ("training samples", str(len(train))),
        ("training data digest", _digest(train)),
        ("batch size", str(batch_size)),
        ("epochs", str(epochs)),
        ("optimizer", f"{type(optimizer).__name__} {optimizer.hyperparameters()}"),
        ("learning rate", _learning_rates(optimizer, epochs * n_batches(len(train), batch_size))),
        ("seed", str(seed)),
    ]
    if test is None:
        settings.append(("test set", "none"))
    else:
        settings.append(("test set", f"{len(test)} samples, digest {_digest(test)}"))
    settings += [
        ("early stopping", repr(early_stopping)),
        ("device", tag_name(device)),
        ("resume_from", "a checkpoint" if resuming else "none"),
    ]
    return settings


def _digest(data: Dataset | ArrayDataset) -> str:
    if isinstance(data, Dataset):
        return data_digest(data.features, data.labels)
    return data_digest(*data.arrays)


def _learning_rates(optimizer: Optimizer, steps: int) -> str:
    """The learning rate, or a schedule's at steps spread over the run (from its step)."""
    if not callable(optimizer.lr):
        return repr(float(optimizer.lr))
    first = optimizer.step_count
    at = np.linspace(first, first + max(steps - 1, 0), LR_SAMPLES).astype(np.int64)
    return ", ".join(f"step {s}: {float(optimizer.lr(int(s)))!r}" for s in at)
