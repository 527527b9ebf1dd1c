"""Optional anchors: torch and numba when installed (benchmarks skip them otherwise)."""

from __future__ import annotations

import importlib
import time
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt


def optional(name: str) -> ModuleType | None:
    """The module, or None (with a note) when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        print(f"  ({name} is not installed: skipped)")
        return None


def torch_fit(
    model: Any,
    train_x: npt.NDArray[Any],
    train_y: npt.NDArray[Any],
    test_x: npt.NDArray[Any],
    test_y: npt.NDArray[Any],
    *,
    lr: float,
    batch: int,
    epochs: int,
    seed: int,
) -> tuple[float, float]:
    """Train a torch ``model`` with SGD and cross-entropy on the batches typed_nn's ``fit``
    draws (one permutation per epoch from ``default_rng(seed)``); returns the fastest epoch's
    process time and the test accuracy."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    xs, ys = torch.from_numpy(train_x), torch.from_numpy(train_y)
    rng = np.random.default_rng(seed)
    times: list[float] = []
    for _ in range(epochs):
        start = time.process_time()
        order = torch.from_numpy(rng.permutation(len(train_x)))
        for i in range(0, len(train_x), batch):
            idx = order[i : i + batch]
            opt.zero_grad()
            loss_fn(model(xs[idx]), ys[idx]).backward()
            opt.step()
        times.append(time.process_time() - start)
    with torch.no_grad():
        pred = model(torch.from_numpy(test_x)).argmax(dim=1).numpy()
    return min(times), float(np.mean(pred == test_y))
