"""``EarlyStopping``: when ``fit`` stops, by which metric, and how much counts as better."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .callbacks import Callback

__all__ = ["EarlyStopping", "Metric"]

Metric = Literal["train_loss", "train_acc", "test_acc", "test_loss"]


@dataclass(frozen=True)
class EarlyStopping(Callback):
    """Stop when ``monitor`` has not improved by more than ``min_delta`` for ``patience``
    epochs, and give the model back the weights (parameters and buffers) of its best epoch: a
    callback of ``fit``. Loss improves downwards, accuracies upwards."""

    monitor: Metric = "test_acc"
    patience: int = 5
    min_delta: float = 0.0

    def improved(self, value: float, best: float | None) -> bool:
        """Whether ``value`` beats ``best`` by more than ``min_delta``."""
        if best is None:
            return True
        if self.monitor in ("train_loss", "test_loss"):
            return value < best - self.min_delta
        return value > best + self.min_delta
