"""The check that a call can replay the last call's Step, as code written for that Step.

``Compiled`` keys its Steps by a call's signature (``Compiled._key``: each tensor argument's
element, device and shape, each float argument's place, other arguments by value, and which
tensor arguments share memory), then asks the Step whether its trace still fits
(``Step.stale``: the names ``fn`` read tensors from, the closed-over tensors' memory, and
which arguments share memory with them). Working all that out takes microseconds, as long as a
small Step runs, and most calls repeat the last call's signature. For the last call's Step
``call_guard`` writes one function that checks a call's arguments against that signature and
that Step directly and returns their arrays and numbers, or None: the caller then takes the
general path (key, lookup, staleness check, a new trace if needed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..data.tensor import Tensor
from .step import MISSING, NO_MATCH, CellScope, Step, runner_code
from .trace import is_float, qualname

__all__ = ["NO_MATCH", "Guard", "Replay", "call_guard", "call_replay"]

Guard = Callable[[tuple[Any, ...]], tuple[list[Any], list[float]] | None]
"""Positional arguments -> (arrays, numbers) as ``Compiled._key`` gives them, or None."""

Replay = Callable[[tuple[Any, ...]], Any]
"""Positional arguments -> the compiled function's outputs, or ``NO_MATCH``."""


class _Code:
    """The guard's source lines and the constants they name."""

    def __init__(self, reject: Any) -> None:
        self.ns: dict[str, Any] = {"Tensor": Tensor, "IS_FLOAT": is_float, "MISSING": MISSING}
        self.ns["REJECT"] = reject  # what the function returns where a check fails
        self.lines: list[str] = []

    def reject_if(self, condition: str) -> None:
        self.lines += [f"    if {condition}:", "        return REJECT"]


def call_guard(key: tuple[Any, ...], names: list[str], static: frozenset[str], step: Step) -> Guard:
    """The guard of signature ``key`` (computed by ``Compiled._key`` for parameters
    ``names``) and of ``step``, the Step traced for it: ``call_replay``'s checks alone,
    returning what they bound (the property test of the checks reads them this way)."""
    code, arrays = _checks(key, names, static, step, None)
    code.lines.append(f"    return {arrays}, numbers")
    exec(compile("\n".join(code.lines), "<call guard>", "exec"), code.ns)
    guard: Guard = code.ns["guard"]
    return guard


def call_replay(
    key: tuple[Any, ...], names: list[str], static: frozenset[str], step: Step, owner: Any
) -> Replay:
    """The guard's checks and then ``step``'s run (``step.runner_code``) as one function of
    the positional arguments: the outputs, or NO_MATCH where the guard would say None. It
    runs under ``owner._lock`` and only while ``step`` is ``owner._last`` (the compiled
    function's last Step), as the general path does."""
    code, arrays = _checks(key, names, static, step, NO_MATCH)
    ns, body = runner_code(step)
    clash = set(ns) & set(code.ns)
    assert not clash, f"guard and runner both name {clash}"
    code.ns.update(ns)
    code.ns.update(LOCK=owner._lock, OWNER=owner, THIS=step)
    code.lines += [
        f"    arrays = {arrays}",
        "    with LOCK:  # a Step's env and numbers serve one call at a time",
        "        if OWNER._last is not THIS:",
        "            return REJECT",
        *("        " + line for line in body),
    ]
    where = f"<compiled call of {qualname(step.source[0])}>"
    exec(compile("\n".join(code.lines), where, "exec"), code.ns)
    replay: Replay = code.ns["guard"]
    return replay


def _checks(
    key: tuple[Any, ...], names: list[str], static: frozenset[str], step: Step, reject: Any
) -> tuple[_Code, str]:
    """The guard's lines up to its return (``reject`` where a check fails), and the
    expression of the call's arrays."""
    n = len(names)
    code = _Code(reject)
    code.lines += ["def guard(args):", f"    if len(args) != {n}:", "        return REJECT"]
    if n:
        code.lines.append(f"    {', '.join(f'a{i}' for i in range(n))}{',' * (n == 1)} = args")
    code.lines.append("    numbers = []")
    arrays = [_argument(code, i, entry, names[i] in static) for i, entry in enumerate(key[:n])]
    tensors = [i for i, a in enumerate(arrays) if a != "None"]
    _sharing(code, key[n] if len(key) > n else None, tensors, step)
    _closure(code, step)
    return code, f"[{', '.join(arrays)}]"


def _argument(code: _Code, i: int, entry: Any, static: bool) -> str:
    """Check argument ``i`` against its key entry; the expression of its array (or None)."""
    a = f"a{i}"
    if not static and type(entry) is tuple and len(entry) == 3 and entry[0] != "value":
        code.ns[f"E{i}"], code.ns[f"D{i}"], code.ns[f"S{i}"] = entry
        code.reject_if(
            f"type({a}) is not Tensor or {a}._elem is not E{i} or {a}._device is not D{i}"
        )
        code.lines.append(f"    x{i} = {a}._array")
        code.reject_if(f"x{i}.shape != S{i}")
        return f"x{i}"
    if entry is float:
        code.lines += [
            f"    if type({a}) is not float:",
            f"        if not IS_FLOAT({a}):",  # numpy's floats key as float too
            "            return REJECT",
            f"        {a} = float({a})",
            f"    numbers.append({a})",
        ]
    elif type(entry) is tuple and entry[0] is float:  # a tuple of floats
        code.reject_if(f"type({a}) is not tuple or len({a}) != {entry[1]}")
        code.lines += [
            f"    for v in {a}:",
            "        if type(v) is not float and not IS_FLOAT(v):",
            "            return REJECT",
            f"    numbers.extend(map(float, {a}))",
        ]
    else:  # a value: compared as a dict compares keys (identity, then equality)
        _, kind, value = entry
        code.ns[f"T{i}"], code.ns[f"V{i}"] = kind, value
        code.reject_if(f"type({a}) is not T{i} or ({a} is not V{i} and not {a} == V{i})")
    return "None"


def _sharing(code: _Code, traced: Any, tensors: list[int], step: Step) -> None:
    """Which tensor arguments share memory, with each other and with the closed-over
    tensors, must be as when traced (``traced``: the key's sharing entry, None when no two
    arguments shared)."""
    if len(tensors) < 2 and not step.held:
        return
    for i in tensors:  # as ``memory_base``: numpy and cupy keep one owner as ``base``
        code.lines += [
            f"    b{i} = getattr(x{i}, 'base', None)",
            f"    m{i} = id(x{i}) if b{i} is None else id(b{i})",
        ]
    ids = ", ".join(f"m{i}" for i in tensors)
    if len(tensors) > 1 and traced is not None:
        code.ns["SHARING"] = traced
        code.lines.append(f"    bases = [{ids}]")
        code.reject_if("tuple(bases.index(b) for b in bases) != SHARING")
    elif len(tensors) > 1:
        code.reject_if(f"len({{{ids}}}) != {len(tensors)}")
    if step.held:
        code.ns["HELD"] = step.held_bases
        for i in tensors:
            code.reject_if(f"(m{i} in HELD) is not {i in step.shared}")


def _closure(code: _Code, step: Step) -> None:
    """The names ``fn`` read tensors from still hold them; the closed-over tensors still
    hold the memory they held when traced (``Step.stale``)."""
    for j, (scope, name, obj) in enumerate(step.names):
        code.ns[f"O{j}"] = obj
        if isinstance(scope, CellScope):  # the cell itself: no Python-level ``get`` call
            code.ns[f"SC{j}"] = scope.cell
            code.reject_if(f"SC{j}.cell_contents is not O{j}")
        else:
            code.ns[f"SC{j}"] = scope
            code.reject_if(f"SC{j}.get({name!r}, MISSING) is not O{j}")
    for j, (tensor, array) in enumerate(step.held):
        code.ns[f"H{j}"], code.ns[f"HA{j}"] = tensor, array
        code.reject_if(f"H{j}._array is not HA{j}")
