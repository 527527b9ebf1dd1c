"""``tn.inference()``: forwards that will never be followed by a backward keep nothing.

A training layer pushes what its backward needs onto LIFO stacks at every ``feed_forward``
(``typed_nn.layers.stacks``). Within ``with tn.inference():`` those pushes are skipped, so a
trained model can serve any number of test-time forwards with flat memory; a
``feed_backward`` there is a ``LayerError``.

No backward follows, so ``tn.inference(compiled=True)`` may run a module's call that repeats
as a compiled program (``module_call``: ``typed_nn.evaluate.served``), evaluated at the
call as PyTorch's eager calls are; the innermost block decides. Per thread, like
``tn.compile``'s tracing state (``typed_nn.tracing``): a block in one thread changes nothing
for layers used in another. Blocks nest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from .errors import ParamError, bad_argument

__all__ = ["InferenceBlock", "inference", "inference_enabled", "serving"]


class _State(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        """How many ``inference()`` blocks this thread is in."""
        self.compiled: list[bool] = []
        """Each open block's ``compiled`` (the innermost last)."""
        self.observer: Callable[[Any, Any], None] | None = None
        """Called with (layer, outputs) after every layer's forward in this thread
        (``typed_nn.layers.summary`` records the output shapes with it)."""


state = _State()

module_call: list[Callable[..., Any]] = []
"""How a module's outermost call runs inside a compiled ``inference()`` block: ``call(fn,
module, args, kwargs)``, registered by ``typed_nn.evaluate.served`` (empty: the call runs
as written)."""


on_first_compiled: list[Callable[[], None]] = []
"""Run once, when a thread first opens a compiled ``inference()`` block (``data.module``
wraps the module classes' calls then, so that programs that never ask pay nothing)."""


class InferenceBlock:
    """The context manager ``inference()`` returns (reusable; blocks nest)."""

    __slots__ = ("compiled",)

    def __init__(self, compiled: bool) -> None:
        self.compiled = compiled

    def __enter__(self) -> None:
        if self.compiled and on_first_compiled:
            for hook in on_first_compiled:
                hook()
            on_first_compiled.clear()
        state.depth += 1
        state.compiled.append(self.compiled)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        state.depth -= 1
        state.compiled.pop()


def inference(*, compiled: bool = False) -> InferenceBlock:
    """Within the block, forwards keep nothing for a backward (this thread only).

    ``compiled=True``: a module's call whose arguments (tensors) repeat an earlier call's
    signature runs as a compiled program and returns evaluated tensors (its Python runs when
    traced, not at every call; docs/modules.md). The default builds lazy graphs as outside:
    a graph built on a tensor reads it when evaluated, which a template re-evaluated after
    writing into its input needs.

    >>> with tn.inference():
    ...     logits = net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
    """
    given: object = compiled  # callers without a type checker may pass anything
    if not isinstance(given, bool):
        hint = "with tn.inference(compiled=True): ..."
        raise bad_argument(
            ParamError, "cannot open tn.inference()", "compiled", "a bool", compiled, hint
        )
    return InferenceBlock(compiled)


def inference_enabled() -> bool:
    """Whether this thread is inside an ``inference()`` block."""
    return state.depth > 0


def serving() -> bool:
    """Whether a module call made now may run as a compiled program: inside a compiled
    ``inference()`` block, with a server registered."""
    return bool(state.compiled) and state.compiled[-1] and bool(module_call)
