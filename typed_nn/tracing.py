"""Whether this thread is tracing a function for ``tn.compile``: state the lower layers read
(``Tensor.numpy`` refuses to read values, ``build`` reads operands through the trace) and that
``typed_nn.evaluate.compiled`` sets. Per thread: a trace in one thread changes nothing for
nodes built in another."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["RunTimeNumber", "active", "state"]


class RunTimeNumber(float):
    """A float argument of a function being traced (``evaluate.trace.Number``): its value
    now is not its value at the next call, so nothing may be decided from it."""

    __slots__ = ()


class _State(threading.local):
    def __init__(self) -> None:
        self.trace: Any = None
        """The running trace (``typed_nn.evaluate.trace.Trace``), or None: ``trace.assigns``
        (the tensors assigned so far), ``trace.read(x)`` (what an operand ``x`` reads now),
        and ``trace.stands_for`` (id of an argument's stand-in -> the argument tensor)."""


state = _State()

active = [0]
"""How many traces run in any thread (``build`` checks this before the thread's state)."""
