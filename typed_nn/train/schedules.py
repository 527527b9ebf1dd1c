"""Learning-rate schedules: callables ``schedule(step) -> lr`` of the 0-based step number,
which every optimizer takes in place of a constant ``lr`` and which compose.

>>> schedule = warmup(cosine(0.1, total_steps=900), steps=100)  # linear warm-up, then cosine
>>> Adam(schedule)

Inside a compiled training step the learning rate is a run-time number, so a schedule never
makes the step trace again.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import ParamError, message

__all__ = ["Schedule", "constant", "cosine", "exponential", "step_decay", "warmup"]

Schedule = Callable[[int], float]
"""``schedule(step) -> learning rate`` for the 0-based step number."""


def constant(lr: float) -> Schedule:
    """``lr`` at every step."""
    _check("constant", "lr", lr, minimum=0.0)
    return lambda step: lr


def step_decay(lr: float, every: int, factor: float = 0.1) -> Schedule:
    """``lr`` multiplied by ``factor`` after every ``every`` steps: ``lr * factor**(step //
    every)`` (PyTorch's StepLR)."""
    _check("step_decay", "lr", lr, minimum=0.0)
    _check("step_decay", "every", every, minimum=1, integer=True)
    _check("step_decay", "factor", factor, minimum=0.0, maximum=1.0)
    return lambda step: lr * factor ** (step // every)


def exponential(lr: float, rate: float) -> Schedule:
    """``lr * rate**step`` (PyTorch's ExponentialLR)."""
    _check("exponential", "lr", lr, minimum=0.0)
    _check("exponential", "rate", rate, minimum=0.0, maximum=1.0)
    return lambda step: lr * rate**step


def cosine(lr: float, total_steps: int, final: float = 0.0) -> Schedule:
    """``lr`` decayed along half a cosine to ``final`` at ``total_steps`` (``final`` after)."""
    _check("cosine", "lr", lr, minimum=0.0)
    _check("cosine", "total_steps", total_steps, minimum=1, integer=True)
    _check("cosine", "final", final, minimum=0.0)
    return lambda step: (
        final
        + (lr - final) * 0.5 * (1.0 + math.cos(math.pi * min(step, total_steps) / total_steps))
    )


def warmup(then: Schedule, steps: int, start: float = 0.0) -> Schedule:
    """A linear warm-up from ``start`` to ``then(0)`` over ``steps`` steps, then ``then``
    counted from the end of the warm-up: ``warmup(cosine(lr, n), w)`` is linear warm-up then
    cosine decay."""
    _check("warmup", "steps", steps, minimum=0, integer=True)
    _check("warmup", "start", start, minimum=0.0)
    if not callable(then):
        raise ParamError(
            message(
                "warmup needs the schedule to follow it.",
                [("then", repr(then)[:80]), ("accepted", "a schedule: step -> lr")],
                hint="pass e.g. warmup(cosine(0.1, 1000), steps=100).",
            )
        )
    peak = then(0)
    return lambda step: (
        then(step - steps) if step >= steps else start + (peak - start) * step / steps
    )


def _check(
    fn: str,
    name: str,
    value: object,
    *,
    minimum: float,
    maximum: float = math.inf,
    integer: bool = False,
) -> None:
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    ok = (
        number is not None
        and (isinstance(number, int) or (not integer and math.isfinite(number)))
        and minimum <= number <= maximum
    )
    if not ok:
        what = "an int" if integer else "a finite number"
        bounds = f">= {minimum}" if maximum == math.inf else f"in [{minimum}, {maximum}]"
        raise ParamError(
            message(
                f"{fn}: {name} must be {what} {bounds}.",
                [("declared", f"{what} {bounds}"), ("received", repr(value)[:80])],
                hint=f"e.g. {fn}(...) with {name} within those bounds.",
            )
        )
