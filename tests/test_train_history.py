"""History and its plot (typed_nn.train.history)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import typed_nn as tn
from typed_nn.train import History, plot_history


def _history() -> History:
    return History([1.0, 0.5, 0.3], [0.6, 0.8, 0.9], [0.55, 0.75, 0.85], best_epoch=2)


def test_history_series() -> None:
    h = _history()
    assert h.epochs == 3
    assert h.metric("train_loss") == [1.0, 0.5, 0.3]
    assert h.metric("test_acc")[-1] == 0.85


def test_plot_history_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = plot_history(_history(), tmp_path / "sub" / "history.png")
    assert path == tmp_path / "sub" / "history.png"
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 5_000  # two panels with lines, not an empty image


def test_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(tn.MissingDependencyError, match="plotting the history needs matplotlib"):
        plot_history(_history(), tmp_path / "h.png")
    assert not (tmp_path / "h.png").exists()
