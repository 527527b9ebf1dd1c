"""The check that a call has a given signature, as code written for that signature.

``Compiled`` keys its Steps by a call's signature (``Compiled._key``: each tensor argument's
element, device and shape, each float argument's place, other arguments by value, and which
tensor arguments share memory). Working the key out and comparing it takes a microsecond and
more, as long as a small Step runs; most calls repeat the last call's signature. For that
signature ``signature_guard`` writes a function that compares a call's arguments with it
directly and returns their arrays and numbers, or None: the caller then works out the key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..data.tensor import Tensor
from .trace import is_float

__all__ = ["Guard", "signature_guard"]

Guard = Callable[[tuple[Any, ...]], tuple[list[Any], list[float]] | None]
"""Positional arguments -> (arrays, numbers) as ``Compiled._key`` gives them, or None."""


def _never(args: tuple[Any, ...]) -> None:
    return None


def signature_guard(key: tuple[Any, ...], names: list[str], static: frozenset[str]) -> Guard:
    """The guard of ``key``, a signature ``Compiled._key`` computed for parameters ``names``.
    A signature with a tuple of floats gets a guard that always says no (the key decides)."""
    n = len(names)
    ns: dict[str, Any] = {"Tensor": Tensor, "IS_FLOAT": is_float}
    params = ", ".join(f"a{i}" for i in range(n))
    lines = ["def guard(args):", f"    if len(args) != {n}:", "        return None"]
    if n:
        lines.append(f"    {params}{',' if n == 1 else ''} = args")
    arrays: list[str] = []
    numbers: list[str] = []
    tensors: list[int] = []
    for i, entry in enumerate(key[:n]):
        if (
            names[i] not in static
            and type(entry) is tuple
            and len(entry) == 3
            and entry[0] != "value"
        ):
            elem, device, shape = entry
            ns[f"E{i}"], ns[f"D{i}"], ns[f"S{i}"] = elem, device, shape
            lines += [
                f"    if type(a{i}) is not Tensor or a{i}._elem is not E{i} "
                f"or a{i}._device is not D{i}:",
                "        return None",
                f"    x{i} = a{i}._array",
                f"    if x{i}.shape != S{i}:",
                "        return None",
            ]
            arrays.append(f"x{i}")
            tensors.append(i)
        elif entry is float:
            lines += [
                f"    if type(a{i}) is not float:",
                f"        if not IS_FLOAT(a{i}):",  # numpy's floats key as float too
                "            return None",
                f"        a{i} = float(a{i})",
            ]
            numbers.append(f"a{i}")
            arrays.append("None")
        elif type(entry) is tuple and entry[0] == "value":
            _, kind, value = entry
            ns[f"T{i}"], ns[f"V{i}"] = kind, value
            # As a dict compares keys: identity, then equality.
            lines += [
                f"    if type(a{i}) is not T{i} or (a{i} is not V{i} and not a{i} == V{i}):",
                "        return None",
            ]
            arrays.append("None")
        else:  # a tuple of floats
            return _never
    if len(tensors) > 1:
        # Which tensor arguments share memory must be as when traced (the key's last entry
        # when some did, else none did).
        for i in tensors:
            lines += [f"    b{i} = x{i}.base", f"    m{i} = id(x{i}) if b{i} is None else id(b{i})"]
        bases = "[" + ", ".join(f"m{i}" for i in tensors) + "]"
        if len(key) > n:
            ns["SHARING"] = key[n]
            lines += [
                f"    bases = {bases}",
                "    if tuple(bases.index(b) for b in bases) != SHARING:",
                "        return None",
            ]
        else:
            lines += [f"    if len({{{', '.join(f'm{i}' for i in tensors)}}}) != {len(tensors)}:"]
            lines.append("        return None")
    lines.append(f"    return [{', '.join(arrays)}], [{', '.join(numbers)}]")
    exec(compile("\n".join(lines), "<signature guard>", "exec"), ns)
    guard: Guard = ns["guard"]
    return guard
