"""The catalogue modules' constructor arguments, checked when a module is built: a bad size,
``eps`` or ``momentum`` is a ``ParamError`` naming the module and the argument, not a stray
error (or NaN) at its first call. Sizes may be numpy integers and are kept as Python ints."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParamError, message, received
from ..ops.rules import number_operand

__all__ = ["fraction", "positive", "size"]


def size(module: str, name: str, value: object, least: int = 0) -> int:
    """``value`` as an int of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        raise ParamError(
            message(
                f"cannot create {module}: {name} must be an int >= {least}.",
                [(name, received(value))],
                hint=f"give {name} as a whole number, e.g. {name}={max(least, 1) * 16}.",
            )
        )
    return int(value)


def positive(module: str, name: str, value: object) -> float:
    """``value`` as a finite float above 0 (a variance's floor: 0 or less divides by 0)."""
    if not number_operand(value) or not 0.0 < float(value) < math.inf:  # type: ignore[arg-type]
        raise ParamError(
            message(
                f"cannot create {module}: {name} must be a positive number.",
                [(name, received(value))],
                hint=f"e.g. {name}=1e-5, PyTorch's default: it keeps the variance away from 0.",
            )
        )
    return float(value)  # type: ignore[arg-type]


def fraction(module: str, name: str, value: object) -> float:
    """``value`` as a float in [0, 1] (a running average's weight of the new batch)."""
    if not number_operand(value) or not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        hint = (
            "PyTorch's momentum=None (a cumulative average) is not supported: give a number "
            "in [0, 1], e.g. 0.1 (PyTorch's default)."
            if value is None
            else "e.g. 0.1, PyTorch's default: the new batch's weight in the running average."
        )
        raise ParamError(
            message(
                f"cannot create {module}: {name} must be a number in [0, 1].",
                [(name, received(value))],
                hint=hint,
            )
        )
    return float(value)  # type: ignore[arg-type]
