"""Whether this thread is tracing a function for ``tn.compile``: state the lower layers read
(``Tensor.numpy`` refuses to read values, ``build`` reads operands through the trace) and that
``typed_nn.evaluate.compiled`` sets. Per thread: a trace in one thread changes nothing for
nodes built in another."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["RunTimeNumber", "active", "check_each_call", "state"]


class RunTimeNumber(float):
    """A float argument of a function being traced (``evaluate.trace.Number``): its value
    now is not its value at the next call, so nothing may be decided from it."""

    __slots__ = ()

    index: int
    """Its position among the call's float numbers."""
    value: float
    """Its value at the call being traced."""


def check_each_call(x: object, check: Callable[[object], None]) -> None:
    """``check(x)`` (it raises where ``x`` is out of its range) now, and where ``x`` is a
    float argument of a function being traced, on its value at every call of the program
    (before it runs: a refused value changes nothing)."""
    check(x.value if isinstance(x, RunTimeNumber) else x)
    if isinstance(x, RunTimeNumber) and state.trace is not None:
        state.trace.number_checks.append((x.index, check))


class _State(threading.local):
    def __init__(self) -> None:
        self.trace: Any = None
        """The running trace (``typed_nn.evaluate.trace.Trace``), or None: ``trace.assigns``
        (the tensors assigned so far), ``trace.read(x)`` (what an operand ``x`` reads now),
        and ``trace.stands_for`` (id of an argument's stand-in -> the argument tensor)."""


state = _State()

active = [0]
"""How many traces run in any thread (``build`` checks this before the thread's state)."""
