"""Checks of the training API's plain arguments (counts, seeds, choices), each failing with a
``TrainingError`` that names the argument, what it allows and what it received."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from ..errors import TrainingError, message
from ..errors import bad_argument as argument_error

__all__ = [
    "bad_argument",
    "check_choice",
    "check_finite_rows",
    "check_generator",
    "check_int",
    "check_real",
    "declared_mismatch",
    "is_int",
    "is_real",
]


def is_int(value: object) -> TypeGuard[int | np.integer[Any]]:
    """A Python or numpy integer, not a bool (``True`` is an int to Python, not a count)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def is_real(value: object) -> TypeGuard[float | np.integer[Any] | np.floating[Any]]:
    """A Python or numpy real number, not a bool."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def bad_argument(doing: str, name: str, allowed: str, value: object, hint: str) -> TrainingError:
    """``doing: name must be allowed``, with the allowed values beside the received one."""
    return argument_error(TrainingError, doing, name, allowed, value, hint)


def declared_mismatch(headline: str, declared: str, received: str, hint: str) -> TrainingError:
    """``headline``, with what was declared beside what was received."""
    return TrainingError(
        message(headline, [("declared", declared), ("received", received)], hint=hint)
    )


def check_finite_rows(subject: str, matrix: npt.NDArray[Any]) -> None:
    """``matrix`` (samples as rows) must hold finite numbers; the error names the first
    NaN or Inf and its place."""
    finite = np.isfinite(matrix)
    if not finite.all():
        row, col = (int(i[0]) for i in np.nonzero(~finite))
        raise declared_mismatch(
            f"{subject} must be finite (no NaN or Inf).",
            "finite numbers",
            f"{matrix[row, col]} at row {row}, column {col}",
            "drop or impute the samples with missing values before training.",
        )


def check_int(
    doing: str, name: str, value: object, minimum: int, example: int, hint: str | None = None
) -> int:
    """``value`` as an int, checked to be an integer >= ``minimum`` (``hint``: the fix, by
    default ``use e.g. name=example``)."""
    if not is_int(value) or value < minimum:
        fix = hint or f"use e.g. {name}={example}."
        raise bad_argument(doing, name, f"an integer >= {minimum}", value, fix)
    return int(value)


def check_generator(doing: str, rng: object) -> None:
    """``rng`` must be a numpy ``Generator`` or None (the shuffling's source)."""
    if rng is not None and not isinstance(rng, np.random.Generator):
        hint = "pass np.random.default_rng(seed), or None for the rows in order."
        raise bad_argument(doing, "rng", "a numpy Generator or None", rng, hint)


def check_real(doing: str, name: str, value: object, minimum: float, hint: str) -> float:
    """``value`` as a float, checked to be a finite real number >= ``minimum``."""
    if not is_real(value) or not math.isfinite(value) or value < minimum:
        raise bad_argument(doing, name, f"a finite number >= {minimum:g}", value, hint)
    return float(value)


def check_choice(doing: str, name: str, value: object, choices: Sequence[object]) -> None:
    """``value`` checked to be one of ``choices``."""
    if not any(value == choice and type(value) is type(choice) for choice in choices):
        allowed = "one of " + ", ".join(map(repr, choices))
        hint = f"use {name}={choices[0]!r}."
        raise bad_argument(doing, name, allowed, value, hint)
