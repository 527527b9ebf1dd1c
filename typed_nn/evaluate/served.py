"""Module calls inside ``tn.inference(compiled=True)`` that repeat run as compiled programs.

No backward follows inside such a block, so an eager forward's graph is not needed: a
module's outermost call whose tensor arguments repeat an earlier call's signature runs as a
``tn.compile`` of its ``__call__`` (traced at the second such call), returning evaluated
tensors. A call runs as written when it is the first of its signature, takes a keyword or a
non-tensor argument, or in debug mode; a module whose ``__call__`` cannot be traced
(evaluates a value, returns other than typed_nn data, sets a module field) or whose
signatures keep changing (``SIGNATURES`` traces again: a ``RetraceWarning``) runs as written
from then on (docs/modules.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from .. import inference_mode
from ..data.module import Module, replaced
from ..data.tensor import Tensor, TensorLike
from ..errors import RetraceWarning, message
from . import hooks
from .compiled import Compiled
from .executor import execute

__all__ = ["SIGNATURES"]

SIGNATURES = 16
"""Signatures a module call keeps compiled (the oldest dropped past it), and tenfold the
first-seen signatures remembered (a sampling loop over a growing length runs as written)."""


class _Served:
    """One module's ``__call__``: the signatures seen, its compiled twin, or why not."""

    __slots__ = ("compiled", "refused", "retraced", "seen", "traced")

    def __init__(self, call: Callable[..., Any]) -> None:
        self.seen: set[tuple[Any, ...]] = set()
        self.traced: set[tuple[Any, ...]] = set()
        """Signatures traced so far: one traced again was dropped (or its trace went stale)."""
        self.retraced = 0
        self.compiled = Compiled(call, (), SIGNATURES, quiet=True)
        self.refused = False

    def thrashing(self, key: tuple[Any, ...], module: Module) -> bool:
        """After a trace of ``key``: whether signatures keep coming back to be traced again
        (then a ``RetraceWarning``, once, and the calls run as written from now on)."""
        if key not in self.traced:
            self.traced.add(key)
            return False
        self.retraced += 1
        if self.retraced < SIGNATURES:
            return False
        warnings.warn(
            message(
                f"{type(module).__name__}'s calls in tn.inference(compiled=True) were traced "
                f"again {self.retraced} times: their signature keeps changing.",
                [("signatures", f"{len(self.traced)} different shapes of the arguments")],
                hint="they run as written from now on; give the input a fixed shape (a "
                "window) to run compiled, or use tn.inference() for this loop.",
            ),
            RetraceWarning,
            stacklevel=4,
        )
        return True


def serve(call: Callable[..., Any], module: Module, args: tuple[Any, ...], kwargs: Any) -> Any:
    """``call(module, *args, **kwargs)``, compiled where it repeats (the module doc); its
    results are values either way."""
    if kwargs or hooks.node_checks:
        return _as_written(call, module, args, kwargs)
    signature = []
    for a in args:  # a loop: all() and a generator cost more, at every call
        if type(a) is not Tensor:
            return _as_written(call, module, args, kwargs)
        signature.append((a._elem, a._device, a._array.shape))
    key = tuple(signature)
    table: dict[Any, _Served] | None = module.__dict__.get("_tn_served")
    if table is None:
        table = module.__dict__["_tn_served"] = {}  # not a field: no Module.__setattr__
    served = table.get(call)
    if served is None:
        served = table[call] = _Served(call)
    if served.refused:
        return _as_written(call, module, args, {})
    if key not in served.seen:
        if len(served.seen) < 10 * SIGNATURES:
            served.seen.add(key)
        return _as_written(call, module, args, {})
    compiled = served.compiled
    traces, fields = compiled.traces, replaced[0]
    try:
        result = compiled(module, *args)
    except Exception:
        if compiled.traces == traces:
            raise  # the program itself failed: what the call would raise
        served.refused = True  # the trace failed: the call, as written, says why if it must
        return _as_written(call, module, args, {})
    if compiled.traces == traces:
        return result
    if replaced[0] != fields or served.thrashing(key, module):
        # A module field set while traced (a counter, say: Python that must run at every
        # call), or signatures that keep coming back: this call's result holds (its Python
        # ran once, in the trace); later calls run as written.
        served.refused = True
        compiled.clear()
    return result


def _as_written(
    call: Callable[..., Any], module: Module, args: tuple[Any, ...], kwargs: Any
) -> Any:
    """The call run as written, its lazy results evaluated: a block's calls return values
    whether or not they ran compiled (a result kept across a write into the input is the
    value of its call, not a graph that reads the input again)."""
    result = call(module, *args, **kwargs)
    lazy: list[Any] = []
    _lazy_in(result, lazy)
    if not lazy:
        return result
    values = dict(zip(map(id, lazy), execute(lazy), strict=True))
    return _replaced(result, values)


def _lazy_in(x: Any, found: list[Any]) -> None:
    if isinstance(x, TensorLike):
        if type(x) is not Tensor:
            found.append(x)
    elif isinstance(x, tuple | list):
        for item in x:
            _lazy_in(item, found)
    elif isinstance(x, dict):
        for item in x.values():
            _lazy_in(item, found)


def _replaced(x: Any, values: dict[int, Any]) -> Any:
    if isinstance(x, TensorLike):
        return values.get(id(x), x)
    if isinstance(x, tuple | list):
        items = [_replaced(item, values) for item in x]
        return type(x)(items) if not hasattr(x, "_fields") else type(x)(*items)
    if isinstance(x, dict):
        return {k: _replaced(v, values) for k, v in x.items()}
    return x


inference_mode.module_call[:] = [serve]
