"""numpy implementations of embedding (a row gather) and its gradient (a scatter-add)."""

from __future__ import annotations

from typing import Any

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


@implement("embedding_grad", CPU)
def embedding_grad(g: Array, idx: Array, num: int) -> Array:
    _check_range(idx, num)
    xp = module_of(g)
    out = xp.zeros((num, g.shape[-1]), g.dtype)
    xp.add.at(out, idx.reshape(-1), g.reshape(-1, g.shape[-1]))
    return out
