"""numpy implementations of the layout ops: permute, reshape, tile (and tile_grad).

permute and reshape return views of their operand (no copy); tile writes a new array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...devices import asarray_like
from ...ops.declare import implement
from ...ops.layout import mute_shape
from ...tags import CPU

Array = Any


@implement("permute", CPU)
def permute(x: Array, order: tuple[int, ...]) -> Array:
    return np.transpose(x, order)


@implement("reshape", CPU)
def reshape(x: Array, shape: tuple[int, ...]) -> Array:
    # A view whenever the operand's layout allows (always for contiguous data), as in MetaNN.
    return x.reshape(shape)


@implement("stop_gradient", CPU)
def stop_gradient(x: Array) -> Array:
    # a view: the value is the operand's, no copy (the op only cuts the gradient)
    return x.view()


@implement("tile", CPU)
def tile(x: Array, shape: tuple[int, ...], new_dims: tuple[int, ...]) -> Array:
    mute = mute_shape(x.shape, len(shape), new_dims)
    reps = tuple(out // src if src else 1 for out, src in zip(shape, mute, strict=True))
    return np.tile(x.reshape(mute), reps)


@implement("tile_grad", CPU)
def tile_grad(g: Array, shape: tuple[int, ...], new_dims: tuple[int, ...]) -> Array:
    # Split every dim into (repeats, source size) and sum the repeats away.
    mute = mute_shape(shape, g.ndim, new_dims)
    split = [
        n for out, src in zip(g.shape, mute, strict=True) for n in (out // src if src else 1, src)
    ]
    summed = g.reshape(split).sum(axis=tuple(range(0, len(split), 2)))
    return asarray_like(summed, g).reshape(shape)
