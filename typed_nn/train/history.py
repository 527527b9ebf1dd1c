"""``History``: per-epoch loss and accuracy of a training run, and its plot.

>>> history.train_loss[-1], history.test_acc[-1], history.best_epoch
>>> plot_history(history, "out/history.png")   # needs matplotlib (the examples extra)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import missing_dependency
from .checks import bad_argument
from .data import EXAMPLES_INSTALL

__all__ = ["History", "plot_history"]


@dataclass
class History:
    """One entry per finished epoch: mean training loss, training accuracy (of the batches as
    they were trained) and test accuracy (after the epoch; empty without a test set); for a
    regression, no accuracies but the test loss (after the epoch).

    ``best_epoch`` is the 0-based epoch whose weights the model holds after early stopping
    restored them (None without early stopping); ``stopped_early`` says whether it stopped
    before the last epoch.
    """

    train_loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    test_loss: list[float] = field(default_factory=list)
    best_epoch: int | None = None
    stopped_early: bool = False

    @property
    def epochs(self) -> int:
        """How many epochs ran."""
        return len(self.train_loss)

    def metric(self, name: str) -> list[float]:
        """The series called ``name``: ``train_loss``, ``train_acc``, ``test_acc`` or
        ``test_loss``."""
        series: dict[str, list[float]] = {
            "train_loss": self.train_loss,
            "train_acc": self.train_acc,
            "test_acc": self.test_acc,
            "test_loss": self.test_loss,
        }
        return series[name]


def plot_history(history: History, path: str | Path) -> Path:
    """Save a PNG with the loss (left) and the accuracies (right) per epoch; returns the path.

    Uses matplotlib's Agg backend (no display needed); raises ``MissingDependencyError``
    when matplotlib is not installed.
    """
    given: tuple[object, object] = (history, path)  # callers may pass anything
    if not isinstance(given[0], History):
        hint = "pass the History that fit returns."
        raise bad_argument("cannot plot", "history", "a typed_nn.train.History", history, hint)
    if not isinstance(given[1], str | os.PathLike):
        hint = "pass e.g. 'history.png' or pathlib.Path('out') / 'history.png'."
        raise bad_argument("cannot plot", "path", "a file path (str or os.PathLike)", path, hint)
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt
    except ImportError as err:
        raise missing_dependency(
            "plotting the history", "matplotlib", "examples", install=EXAMPLES_INSTALL
        ) from err
    epochs = list(range(1, history.epochs + 1))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    try:
        left.plot(epochs, history.train_loss, marker="o", label="train loss")
        left.set(xlabel="epoch", ylabel="loss (NLL)", title="loss")
        right.plot(epochs, history.train_acc, marker="o", label="train")
        if history.test_acc:
            right.plot(epochs, history.test_acc, marker="s", label="test")
        if history.best_epoch is not None:
            right.axvline(history.best_epoch + 1, color="grey", linestyle=":", label="best")
        right.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
        for ax in (left, right):
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100)
    finally:
        plt.close(fig)
    return out
