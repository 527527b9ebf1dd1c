"""``ArrayDataset``: any aligned numpy arrays (features, targets, weights...), one row per
sample, in shuffled mini-batches.

::

    data = ArrayDataset(features, targets)           # (n, ...) arrays of any element type
    for x, y in data.batches(32, np.random.default_rng(0), drop_last=True):
        ...                                           # x[i] and y[i] belong together

The order is the one ``batches`` gives a classification ``Dataset``: one
``rng.permutation(n)`` per call (per epoch), cut into consecutive slices. ``fit`` trains a
regression model on an ``ArrayDataset`` of (n, f) float32 features and (n, k) float32
targets with a loss of the caller's choice (``typed_nn.ops.mse_loss`` by default).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .checks import bad_argument, check_generator, check_int, declared_mismatch

__all__ = ["ArrayDataset"]

Array = npt.NDArray[Any]
DOING = "cannot make an ArrayDataset"


class ArrayDataset:
    """Aligned numpy arrays: ``arrays[k][i]`` is part ``k`` of sample ``i`` (any shapes and
    element types, the same number of rows). Checked when made: at least one array, every
    one a numpy array of rank >= 1, all of one length (a ``TrainingError`` naming them)."""

    def __init__(self, *arrays: Array) -> None:
        if not arrays:
            raise bad_argument(
                DOING,
                "arrays",
                "one or more numpy arrays",
                arrays,
                "pass e.g. ArrayDataset(features, targets).",
            )
        given: tuple[object, ...] = arrays  # checked at run time: callers may pass anything
        for k, array in enumerate(given):
            if not isinstance(array, np.ndarray) or array.ndim == 0:
                shown = f"{array!r}"[:60] if not isinstance(array, np.ndarray) else "a scalar array"
                raise declared_mismatch(
                    f"{DOING}: array {k} must be a numpy array with one row per sample.",
                    "numpy array (n, ...)",
                    f"{type(array).__name__} {shown}",
                    "convert it with np.asarray(...); give samples along the first axis.",
                )
        lengths = [len(a) for a in arrays]
        if len(set(lengths)) > 1:
            shapes = ", ".join(f"array {k}: {a.shape}" for k, a in enumerate(arrays))
            raise declared_mismatch(
                f"{DOING}: the arrays differ in length ({', '.join(map(str, lengths))} rows).",
                "the same number of rows (samples) in every array",
                shapes,
                "align them: one row per sample in each, in the same order.",
            )
        self.arrays: tuple[Array, ...] = arrays

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __repr__(self) -> str:
        parts = ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.arrays)
        return f"ArrayDataset({parts})"

    def batches(
        self, batch_size: int, rng: np.random.Generator | None = None, *, drop_last: bool = False
    ) -> Iterator[tuple[Array, ...]]:
        """Mini-batches of ``batch_size`` rows of every array (copies), in a new random order
        per call with ``rng`` (in order without); ``drop_last`` leaves out a last batch that
        would be smaller."""
        batch_size = check_int("cannot make mini-batches", "batch_size", batch_size, 1, 32)
        check_generator("cannot make mini-batches", rng)
        n = len(self)
        order = rng.permutation(n) if rng is not None else np.arange(n)
        stop = n - n % batch_size if drop_last else n
        for start in range(0, stop, batch_size):
            rows = order[start : start + batch_size]
            yield tuple(a[rows] for a in self.arrays)
