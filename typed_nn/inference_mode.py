"""``tn.inference()``: forwards that will never be followed by a backward keep nothing.

A training layer pushes what its backward needs onto LIFO stacks at every ``feed_forward``
(``typed_nn.layers.stacks``). Within ``with tn.inference():`` those pushes are skipped, so a
trained model can serve any number of test-time forwards with flat memory; a
``feed_backward`` there is a ``LayerError``. Per thread, like ``tn.compile``'s tracing state
(``typed_nn.tracing``): a block in one thread changes nothing for layers used in another.
Blocks nest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["InferenceBlock", "inference", "inference_enabled"]


class _State(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        """How many ``inference()`` blocks this thread is in."""
        self.observer: Callable[[Any, Any], None] | None = None
        """Called with (layer, outputs) after every layer's forward in this thread
        (``typed_nn.layers.summary`` records the output shapes with it)."""


state = _State()


class InferenceBlock:
    """The context manager ``inference()`` returns (reusable; blocks nest)."""

    __slots__ = ()

    def __enter__(self) -> None:
        state.depth += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        state.depth -= 1


def inference() -> InferenceBlock:
    """Within the block, layers' forwards keep nothing for a backward (this thread only).

    >>> with tn.inference():
    ...     logits = net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
    """
    return InferenceBlock()


def inference_enabled() -> bool:
    """Whether this thread is inside an ``inference()`` block."""
    return state.depth > 0
