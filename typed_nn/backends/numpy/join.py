"""numpy implementations of concat and narrow (stack's lives with the structural ops)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.declare import implement
from ...tags import CPU

Array = Any


@implement("concat", CPU)
def concat(*items_and_axis: Any) -> Array:
    *items, axis = items_and_axis
    return np.concatenate(items, axis=axis)


@implement("narrow", CPU)
def narrow(x: Array, axis: int, start: int, length: int) -> Array:
    return x[(slice(None),) * axis + (slice(start, start + length),)]  # a view
