"""Tracing a function for ``tn.compile``: run it once on stand-ins for its arguments and
record what it builds and assigns.

Tensor arguments become placeholder tensors (their own leaves of the graph, whatever memory
they share) and float arguments :class:`Number`\\ s (run-time scalars: the program constant
each becomes is rebound at every call). ``t.assign(expr)`` is recorded in the :class:`Trace`,
and later expressions read ``expr`` for ``t`` (``typed_nn.tracing``), so traced code reads
like eager code. What would freeze a value at trace time — Python arithmetic on a float
argument, ``evaluate`` or ``numpy()`` — is a ``CompileError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import devices
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import CompileError, OperandError, SanitizerError, message
from ..ops.node import format_site, user_site
from ..tracing import active, state
from .options import options

__all__ = [
    "Number",
    "Trace",
    "flatten",
    "floats",
    "is_float",
    "qualname",
    "trace_function",
    "tracing",
    "unflatten",
]


class Number(float):
    """A float argument while tracing: equal only to itself, so the analysis neither merges
    two of them nor folds one (``x * 1``); its program constant is rebound at every call.
    Python arithmetic on it would run once, at trace time, and freeze its result: every
    operator but those with typed_nn data is an error (see :func:`_frozen`)."""

    __slots__ = ("index",)

    index: int

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)


def _frozen(name: str) -> Callable[..., Any]:
    def method(self: Number, *args: Any) -> Any:
        if args and isinstance(args[0], TensorLike):
            return NotImplemented  # lr * g: the tensor's operator builds the node
        raise CompileError(
            message(
                "cannot compute with a float argument in Python inside a function tn.compile "
                f"traces ({name}): it would run once, at trace time, and freeze the result.",
                [("argument value when traced", repr(float.__float__(self)))],
                built_at=format_site(user_site()),
                hint="combine it with tensors only (-(lr * g), not -lr * g; g * lr * 2.0, not "
                "lr * 2.0 * g), or compute the number outside and pass it as the argument.",
            )
        )

    method.__name__ = name
    return method


for _op in (
    *[
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__mul__",
        "__rmul__",
        "__truediv__",
        "__rtruediv__",
    ],
    *["__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__divmod__"],
    *[
        "__rdivmod__",
        "__neg__",
        "__pos__",
        "__abs__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__bool__",
    ],
    *["__float__", "__int__", "__round__", "__trunc__", "__floor__", "__ceil__"],
):
    setattr(Number, _op, _frozen(_op))


class Trace:
    """What one trace records: the assigns, in order."""

    def __init__(self) -> None:
        self.assigns: dict[int, tuple[Tensor[Any, Any, Any], AnyTensor]] = {}

    def assign(self, target: Tensor[Any, Any, Any], expr: AnyTensor) -> None:
        self.assigns[id(target)] = (target, expr)  # the last assign of a target wins

    def read(self, x: Any) -> Any:
        """What operand ``x`` of a node built now reads: an assigned tensor's new value."""
        found = self.assigns.get(id(x)) if type(x) is Tensor else None
        if found is not None:
            return found[1]
        if type(x) is Tensor and options.sanitize:
            for target, _ in self.assigns.values():
                if devices.device_of(x._device).may_share(x._array, target._array):
                    raise SanitizerError(
                        message(
                            "the sanitizer found a tensor read after an assign to its memory "
                            "through another tensor: it would read the old values.",
                            [("read", x.describe()), ("assigned", target.describe())],
                            built_at=format_site(user_site()),
                            hint="read the assigned tensor itself after its assign.",
                        )
                    )
        return x


def tracing() -> Trace | None:
    """The trace running in this thread, if any (``evaluate`` and ``assign`` ask)."""
    trace: Trace | None = state.trace
    return trace


def is_float(v: Any) -> bool:
    """A float (numpy's too): a run-time number of a compiled function."""
    t = type(v)
    return t is float or (t is not Number and isinstance(v, float | np.floating))


def floats(v: tuple[Any, ...]) -> bool:
    """A non-empty tuple of floats: run-time numbers, like a float argument."""
    return bool(v) and all(is_float(x) for x in v)


def qualname(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def trace_function(
    fn: Callable[..., Any],
    names: list[str],
    static: frozenset[str],
    values: list[Any],
    *,
    placeholders: bool = True,
) -> tuple[list[AnyTensor], list[tuple[Tensor[Any, Any, Any], AnyTensor]], Any, dict[int, Any]]:
    """Run ``fn`` on placeholders: its outputs, its assigns (target, value), the structure
    of its result, and the placeholders (argument index -> placeholder tensor). Without
    ``placeholders``, on the call's own tensors and numbers (to run it node by node)."""
    inputs: list[Any] = []
    stand_ins: dict[int, Any] = {}
    count = 0
    for k, (name, v) in enumerate(zip(names, values, strict=True)):
        if not placeholders or name in static:
            inputs.append(v)
        elif type(v) is Tensor:
            stand_ins[k] = Tensor._wrap(v._array, v._elem, v._device)
            inputs.append(stand_ins[k])
        elif is_float(v) or (type(v) is tuple and floats(v)):
            numbers = []
            items: tuple[Any, ...] = v if type(v) is tuple else (v,)
            for x in items:
                number = Number(float(x))
                number.index = count
                count += 1
                numbers.append(number)
            inputs.append(tuple(numbers) if type(v) is tuple else numbers[0])
        else:
            inputs.append(v)
    trace = Trace()
    state.trace = trace
    active[0] += 1
    try:
        result = fn(*inputs)
    finally:
        active[0] -= 1
        state.trace = None
    outputs, structure = flatten(fn, result)
    for out in outputs:
        if isinstance(out, Tensor) and id(out) in trace.assigns:
            raise CompileError(
                message(
                    f"cannot compile {qualname(fn)}: it returns a tensor it also assigns.",
                    [("tensor", out.describe())],
                    hint="return the new value's expression, or read the tensor after the call.",
                )
            )
    return outputs, list(trace.assigns.values()), structure, stand_ins


def flatten(fn: Callable[..., Any], result: Any) -> tuple[list[AnyTensor], Any]:
    """The tensors of ``fn``'s result, and how to put values back in its structure."""
    if isinstance(result, TensorLike):
        return [result], None
    if isinstance(result, tuple | list):
        items = [flatten(fn, r) for r in result]
        return [t for ts, _ in items for t in ts], (type(result), [s for _, s in items])
    if isinstance(result, Mapping):
        keys = list(result)
        items = [flatten(fn, result[k]) for k in keys]
        return [t for ts, _ in items for t in ts], (dict, keys, [s for _, s in items])
    if result is None:
        return [], ("none",)
    raise OperandError(
        message(
            f"cannot compile {fn.__qualname__}: it returns {type(result).__name__}, "
            "not typed_nn data.",
            [
                ("returned", repr(result)[:80]),
                ("accepted", "tensors, or tuples/lists/dicts of them, or None"),
            ],
            hint="return lazy expressions (they come back evaluated); compute plain numbers "
            "outside the compiled function.",
        )
    )


def unflatten(structure: Any, values: list[Any]) -> Any:
    it = iter(values)

    def build(s: Any) -> Any:
        if s is None:
            return next(it)
        if s[0] == "none":
            return None
        if s[0] is dict:
            return {k: build(sub) for k, sub in zip(s[1], s[2], strict=True)}
        kind, subs = s
        items = [build(sub) for sub in subs]
        return tuple(items) if kind is tuple else items

    return build(structure)
