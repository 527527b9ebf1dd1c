"""numpy implementations of concat and narrow (stack's lives with the structural ops)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.declare import implement
from ...tags import CPU

Array = Any


@implement("concat", CPU, writes_into=True)
def concat(*items_and_axis: Any, out: Array | None = None) -> Array:
    # into the plan's buffer: a fresh result of a few hundred KiB faults its pages again at
    # every call (the attention's merged q/k/v cotangent: 19 us into a buffer, 65-78 us fresh)
    *items, axis = items_and_axis
    return np.concatenate(items, axis=axis, out=out)


@implement("narrow", CPU)
def narrow(x: Array, axis: int, start: int, length: int) -> Array:
    return x[(slice(None),) * axis + (slice(start, start + length),)]  # a view
