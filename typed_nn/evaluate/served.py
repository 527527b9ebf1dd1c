"""Module calls inside ``tn.inference()`` that repeat run as compiled programs.

An eager forward builds its graph and walks it at every call (~3 us a node): a batch-1 MLP
spent 80 % of its time there. Inside an ``inference()`` block no backward follows, so
nothing needs that graph: a module's outermost call whose tensor arguments repeat an
earlier call's signature (elements, devices, shapes) runs as a ``tn.compile`` of its
``__call__``, traced at the second such call, then bound and run (the one pipeline: no
second executor). Its result is the compiled call's: evaluated tensors, as PyTorch's eager
calls give.

A call runs as written when it is the first of its signature, when an argument is not a
principal tensor or is passed by keyword, in debug mode (each node is checked), or when the
module cannot be traced: its ``__call__`` evaluates a value, returns something other than
typed_nn data, or sets a field of a module (state kept for inspection: the trace would hold
a placeholder there). Such a module is not tried again for that ``__call__``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import inference_mode
from ..data.module import Module, replaced
from ..data.tensor import Tensor
from . import hooks
from .compiled import Compiled

__all__ = ["SIGNATURES"]

SIGNATURES = 16
"""Signatures a module call keeps compiled (the oldest dropped past it), and tenfold the
first-seen signatures remembered (a sampling loop over a growing length runs as written)."""


class _Served:
    """One module's ``__call__``: the signatures seen, its compiled twin, or why not."""

    __slots__ = ("compiled", "refused", "seen")

    def __init__(self, call: Callable[..., Any]) -> None:
        self.seen: set[tuple[Any, ...]] = set()
        self.compiled = Compiled(call, (), SIGNATURES, quiet=True)
        self.refused = False


def serve(call: Callable[..., Any], module: Module, args: tuple[Any, ...], kwargs: Any) -> Any:
    """``call(module, *args, **kwargs)``, compiled where it repeats (the module doc)."""
    if kwargs or hooks.node_checks or not all(type(a) is Tensor for a in args):
        return call(module, *args, **kwargs)
    table: dict[Any, _Served] | None = module.__dict__.get("_tn_served")
    if table is None:
        table = {}
        object.__setattr__(module, "_tn_served", table)
    served = table.get(call)
    if served is None:
        served = table[call] = _Served(call)
    if served.refused:
        return call(module, *args)
    key = tuple((a._elem, a._device, a._array.shape) for a in args)
    if key not in served.seen:
        if len(served.seen) < 10 * SIGNATURES:
            served.seen.add(key)
        return call(module, *args)
    compiled = served.compiled
    traces, fields = compiled.traces, replaced[0]
    try:
        result = compiled(module, *args)
    except Exception:
        if compiled.traces == traces:
            raise  # the program itself failed: what the call would raise
        served.refused = True  # the trace failed: the call, as written, says why if it must
        return call(module, *args)
    if compiled.traces != traces and replaced[0] != fields:
        served.refused = True  # it set a module field while traced: that state must be real
        compiled.clear()
        return call(module, *args)
    return result


inference_mode.module_call[:] = [serve]
