"""numpy implementations of embedding (a row gather) and its gradient (a scatter-add)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import module_of
from ...errors import IndexRangeError, message
from ...ops.declare import implement
from ...tags import CPU

Array = Any


def _check_range(idx: Array, num: int) -> None:
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num):
        bad = idx[(idx < 0) | (idx >= num)]
        raise IndexRangeError(
            message(
                f"embedding index out of range: {int(bad.reshape(-1)[0])} is not in 0 .. {num - 1}.",
                [
                    ("indices", f"{idx.size} values, min {int(idx.min())}, max {int(idx.max())}"),
                    ("rows", str(num)),
                ],
                hint=f"indices select rows 0 .. {num - 1}; make the embedding larger or fix "
                "the indices.",
            )
        )


@implement("embedding", CPU)
def embedding(w: Array, idx: Array) -> Array:
    _check_range(idx, w.shape[0])
    return module_of(w).take(w, idx, axis=0)


SCATTER_BY_SORT = 2048
"""Gradient elements from which ``embedding_grad`` sums sorted runs rather than ``add.at``."""


@implement("embedding_grad", CPU)
def embedding_grad(g: Array, idx: Array, num: int) -> Array:
    _check_range(idx, num)
    xp = module_of(g)
    out = xp.zeros((num, g.shape[-1]), g.dtype)
    rows, flat = g.reshape(-1, g.shape[-1]), idx.reshape(-1)
    # cupy's add.at is one atomic kernel; numpy's takes ~14 ns an element (1024 rows of 64
    # into 90: 0.9 ms), fine for a few rows only. Sorted by index (stably: each index's rows
    # in their order), each run of equal indices is summed by one reduceat: 8x faster there
    # (~15 us fixed, then ~1.5 ns an element); the sums may round differently in the last bit.
    if type(out) is not np.ndarray or rows.size < SCATTER_BY_SORT:
        xp.add.at(out, flat, rows)
        return out
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.flatnonzero(np.diff(ordered)) + 1
    starts = np.concatenate(([0], starts))
    out[ordered[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return out
