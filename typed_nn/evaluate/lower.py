"""A fused region's passes, and the folds that merge neighbouring ones (docs/evaluation.md,
*Fusion*): ``-(c * v)`` -> ``(-c) * v`` for a number ``c`` (exact: the same numbers) and
``a * (1 / t)`` -> ``a / t`` (one rounding instead of two). A fold applies only where the
inner pass has no other reader, in floating regions; passes read each other by object, so a
pass is folded in place and one that nothing reads any more drops out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Pass", "fold", "readers_of", "ufunc_pass"]


@dataclass(eq=False)
class Pass:
    """One write-into call of a region: ``fn(*args, *params, out=)``. ``args`` holds
    ("num", number), ("pass", an earlier Pass) or ("val", a slot outside the region)."""

    fn: Any
    label: str
    """``fn``'s name in the generated program."""
    args: list[tuple[str, Any]]
    params: tuple[Any, ...] = ()
    alias_safe: bool = True
    """``out`` may be the register of an operand."""
    node: int = field(default=-1)
    """The member node this pass computes (all of it or one of its passes)."""


def ufunc_pass(fn: Any, args: list[tuple[str, Any]], node: int) -> Pass:
    """A numpy ufunc as a pass (ufuncs are alias-safe element by element)."""
    return Pass(fn, f"U_{fn.__name__}", args, node=node)


def fold(passes: list[Pass]) -> list[Pass]:
    """``passes`` (the root's last) with the folds applied until none applies, and the
    passes nothing reads any more dropped."""
    changed = True
    while changed:
        changed = False
        readers = readers_of(passes)
        for p in passes:
            merged = _fold_one(p, readers)
            if merged is not None:
                # in place: later passes read this one by object
                p.fn, p.label, p.args = merged.fn, merged.label, merged.args
                changed = True
                break
        if changed:
            readers = readers_of(passes)
            root = passes[-1]
            passes = [p for p in passes if p is root or readers.get(id(p), 0) > 0]
    return passes


def readers_of(passes: list[Pass]) -> dict[int, int]:
    """How many of ``passes`` read each pass, by the pass's ``id``."""
    count: dict[int, int] = {}
    for p in passes:
        for kind, v in p.args:
            if kind == "pass":
                count[id(v)] = count.get(id(v), 0) + 1
    return count


def _only_read_here(arg: tuple[str, Any], fn: Any, readers: dict[int, int]) -> Pass | None:
    """The pass ``arg`` refers to if it is a parameterless ``fn`` read by this pass only."""
    kind, v = arg
    if kind == "pass" and v.fn is fn and not v.params and readers[id(v)] == 1:
        src: Pass = v
        return src
    return None


def _fold_one(p: Pass, readers: dict[int, int]) -> Pass | None:
    if p.params:
        return None
    if p.fn is np.negative:
        product = _only_read_here(p.args[0], np.multiply, readers)
        if product is None:
            return None
        numbers = [j for j, (kind, _) in enumerate(product.args) if kind == "num"]
        if len(numbers) != 1 or not _constant(product.args[numbers[0]][1]):
            return None
        args = list(product.args)
        args[numbers[0]] = ("num", _negated(args[numbers[0]][1]))
        return ufunc_pass(np.multiply, args, p.node)
    if p.fn is np.multiply:
        for j in (0, 1):
            recip = _only_read_here(p.args[j], np.reciprocal, readers)
            if recip is not None:
                return ufunc_pass(np.divide, [p.args[1 - j], recip.args[0]], p.node)
    return None


def _constant(value: Any) -> bool:
    """A number fixed in the program (not a compiled function's number argument, which
    is read at each call)."""
    return type(value) in (float, int) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _negated(value: Any) -> Any:
    """``-value`` of the same type: a 0-d array stays a 0-d array of its dtype."""
    if isinstance(value, np.ndarray):
        return np.asarray(-value, value.dtype)
    return -value
