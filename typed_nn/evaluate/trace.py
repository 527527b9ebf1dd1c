"""Tracing a function for ``tn.compile``: run it once on stand-ins for its arguments (tensors:
placeholder tensors, their own leaves; floats: :class:`Number`\\ s, rebound at every call)
and record what it builds and assigns. Later expressions read an assigned tensor's new
value, so traced code reads like eager code; what would freeze a value at trace time (Python
arithmetic on a float argument, ``evaluate``, ``numpy()``) is a ``CompileError``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import devices
from ..data.factories import tensor
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import CompileError, OperandError, message
from ..ops.node import Operation, format_site, user_site
from ..ops.rows import slice as slice_
from ..ops.select import where
from ..ops.stop_gradient import stop_gradient
from ..tags import Int32, dim_of_rank
from ..tracing import RunTimeNumber, active, state

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


FROZEN_BITS = 0x7FF8_0000_7E5E_D0CE
"""The float a :class:`Number` is to code that reads a float's value directly (``math.sqrt``,
numpy), which no operator of it can stop: a NaN whose payload the trace finds in any number
computed from it (:func:`_check_no_frozen_numbers`)."""
_FROZEN_PAYLOAD = FROZEN_BITS & 0xFFFF_FFFF
_FROZEN: float = struct.unpack("<d", struct.pack("<Q", FROZEN_BITS))[0]


class Number(RunTimeNumber):
    """A float argument while tracing: equal only to itself, so the analysis neither merges
    two of them nor folds one (``x * 1``). Every operator but those with typed_nn data is an
    error (:func:`_frozen`): it would run once, at trace time. Its float value is a marked
    NaN (:data:`FROZEN_BITS`); ``value`` is the call's number."""

    __slots__ = ("index", "value")

    def __new__(cls, value: float, index: int) -> Number:
        self = super().__new__(cls, _FROZEN)
        self.index, self.value = index, float(value)
        return self

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
                [("argument value when traced", repr(self.value))],
                built_at=format_site(user_site()),
                hint="combine it with tensors only (-(lr * g), not -lr * g; g * lr * 2.0, not "
                "lr * 2.0 * g), or compute the number outside and pass it as the argument.",
            )
        )

    method.__name__ = name
    return method


_REFLECTED = "add sub mul truediv floordiv mod pow divmod"
_OTHERS = "neg pos abs lt le gt ge bool float int round trunc floor ceil"
for _op in [f"__{r}{op}__" for op in _REFLECTED.split() for r in ("", "r")] + [
    f"__{op}__" for op in _OTHERS.split()
]:
    setattr(Number, _op, _frozen(_op))


class Trace:
    """What one trace records: the assigns, one per assigned memory, in order, and the modes
    of the modules it read; :meth:`read` gives what an operand reads after the assigns."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.assigns: dict[int, tuple[Tensor[Any, Any, Any], AnyTensor]] = {}
        self.modes: dict[int, tuple[Any, bool]] = {}
        self.through: dict[int, Tensor[Any, Any, Any]] = {}
        """Tensors read as another tensor's assigned value, or whose assign another tensor's
        replaced (one memory when traced: a tensor closed over and passed as an argument): the
        program holds only while they still are."""
        self.stands_for: dict[int, Tensor[Any, Any, Any]] = {}
        """id of an argument's stand-in -> the tensor passed (autodiff takes them for one)."""
        self.differentiated = False
        """Whether autodiff ran: it takes a tensor passed twice, or passed and read closed
        over, for one (its program is for calls passing the same objects)."""
        self.differentiated_through: dict[int, Tensor[Any, Any, Any]] = {}
        """The tensors autodiff reached as themselves, not through an argument's stand-in
        (held: a later call passing one of them differentiates another graph)."""
        self.values: dict[int, tuple[AnyTensor, Tensor[Any, Any, Any], AnyTensor]] = {}
        """id of the node an assigned tensor's new value is read as -> (it, the tensor, the
        expression assigned). Autodiff takes it for the tensor, as eagerly, where a later
        read is of the tensor's memory: the gradient of what reads it is the tensor's, and
        none goes into what was assigned (the node is ``stop_gradient`` of the expression)."""
        self._values_of: dict[tuple[int, int], AnyTensor] = {}
        """(id of a tensor, id of an expression) -> the node it is read as: ``values``
        holds the tensor and the expression, so neither id is reused while the trace runs."""
        self.number_checks: list[tuple[int, Callable[[object], None]]] = []
        """(index, check) of a float argument a library function checks at every call
        (``tracing.check_each_call``)."""

    def read_mode(self, module: object, training: bool) -> None:
        """``module.training`` was read while tracing, as ``training``."""
        self.modes.setdefault(id(module), (module, training))

    def assign(self, target: Tensor[Any, Any, Any], expr: AnyTensor) -> None:
        """Record ``target.assign(expr)``. A row ``t[i]`` assigns ``t`` (its other rows as they
        are now), so later reads of ``t`` and of its rows see the row's new value. A tensor
        assigned as it is (``t.assign(u)``, ``u`` or a view op that gives ``u`` back) is
        read as an operand is: after the earlier assigns."""
        expr = self.read(expr)
        value = self.values.get(id(expr))
        if value is not None:  # another assigned tensor's value: the program assigns its own
            expr = value[2]
        if type(expr) is Tensor and _same_memory(expr, target) and not self._assigned(target):
            # t.assign(t), or of a tensor over t's memory, t unchanged so far: a no-op, where
            # they are one memory (the program is for calls where they still are)
            self.through[id(expr)], self.through[id(target)] = expr, target
            return
        index: list[int] = []
        while target._view_of is not None:
            target, i = target._view_of
            index.insert(0, i)
        if index:
            current = self.read(target)
            expr = self.built_from_values(lambda: _with_rows(current, index, expr))
        for key, (t, _) in list(self.assigns.items()):
            if t is target or not _overlaps(t, target):
                continue
            if not _same_memory(t, target):
                raise self._sharing("it assigns two tensors that share memory", t, target)
            del self.assigns[key]  # the same memory assigned again: the last assign wins
            self.through[id(t)] = t
        self.assigns.pop(id(target), None)
        self.assigns[id(target)] = (target, expr)

    def _value(self, x: Tensor[Any, Any, Any], expr: AnyTensor) -> AnyTensor:
        """The node tensor ``x`` is read as after an assign of its memory gave it ``expr``'s
        value: one per tensor and assign (another tensor over the same memory is another
        leaf to autodiff, as eagerly)."""
        key = (id(x), id(expr))
        found = self._values_of.get(key)
        if found is None:
            found = self._values_of[key] = self.built_from_values(lambda: stop_gradient(expr))
            self.values[id(found)] = (found, x, expr)
        return found

    def read(self, x: Any) -> Any:
        """What operand ``x`` of a node built now reads: for a tensor whose memory was
        assigned earlier in the trace (itself, a row of it, or another tensor over the same
        memory), the new value; another tensor over part of that memory is an error."""
        if type(x) is not Tensor:
            return x
        found = self.assigns.get(id(x))
        if found is not None:
            return self._value(x, found[1])
        if x._view_of is not None:
            parent, i = x._view_of
            new = self.read(parent)
            if new is not parent or self._assigned(parent):  # (assigned its own old value)
                row = self.built_from_values(lambda: slice_(new, i))
                return self._value(x, row)  # the row itself to autodiff (a wrt, as eagerly)
        for t, expr in self.assigns.values():
            if _overlaps(t, x):
                if not _same_memory(t, x):
                    raise self._sharing(
                        "it reads a tensor over part of the memory an earlier assign changed",
                        t,
                        x,
                    )
                self.through[id(x)] = x
                return self._value(x, expr)
        return x

    def _assigned(self, x: Tensor[Any, Any, Any]) -> bool:
        """Whether an assign in the trace so far changed memory ``x`` is over."""
        return any(_overlaps(t, x) for t, _ in self.assigns.values())

    def built_from_values(self, build: Callable[[], AnyTensor]) -> AnyTensor:
        """A node built from what :meth:`read` gave: its operands are values after the
        assigns already, and read again a tensor among them (``a`` read as ``S0`` after
        ``S0.assign(a)``) would become ``a``'s own later assign."""
        assigns, self.assigns = self.assigns, {}
        try:
            return build()
        finally:
            self.assigns = assigns

    def _sharing(self, what: str, assigned: AnyTensor, other: AnyTensor) -> CompileError:
        return CompileError(
            message(
                f"cannot compile {qualname(self.fn)}: {what}.",
                [("assigned", assigned.describe()), ("also", other.describe())],
                built_at=format_site(user_site()),
                hint="read and assign the tensor itself, or rows t[i] of it taken inside the "
                "function (a row passed as an argument, or a view made outside, is another "
                "tensor over part of its memory: pass the tensor and index it inside); pass "
                "copies where the function should see separate values.",
            )
        )


def _overlaps(a: Tensor[Any, Any, Any], b: Tensor[Any, Any, Any]) -> bool:
    return a._device is b._device and bool(
        devices.device_of(a._device).may_share(a._array, b._array)
    )


def _same_memory(a: Tensor[Any, Any, Any], b: Tensor[Any, Any, Any]) -> bool:
    """Whether two tensors are the same elements of the same memory."""
    x, y = a._array, b._array
    same = devices.data_pointer(x) == devices.data_pointer(y)
    return same and x.shape == y.shape and x.strides == y.strides


def _with_rows(current: AnyTensor, index: list[int], row: AnyTensor) -> AnyTensor:
    """``current`` with its row ``current[i][j]...`` replaced by ``row``."""
    shape = current.shape
    mask = np.zeros((*shape[: len(index)], *(1,) * (len(shape) - len(index))), np.int32)
    mask[tuple(index)] = 1
    cond = tensor(mask, Int32, current.device, dim_of_rank(len(shape)))
    return where(cond, row, current)


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
    trace: Trace | None = None,
) -> tuple[list[AnyTensor], list[tuple[Tensor[Any, Any, Any], AnyTensor]], Any, dict[int, Any]]:
    """Run ``fn`` on placeholders: its outputs, its assigns (target, value), the structure
    of its result, and the placeholders (argument index -> tensor). Without
    ``placeholders``, on the call's own values; ``trace``: the Trace to record into."""
    inputs: list[Any] = []
    stand_ins: dict[int, Any] = {}
    trace = trace if trace is not None else Trace(fn)
    count = 0
    for k, (name, v) in enumerate(zip(names, values, strict=True)):
        if not placeholders or name in static:
            inputs.append(v)
        elif type(v) is Tensor:
            stand_ins[k] = Tensor._wrap(v._array, v._elem, v._device)
            trace.stands_for[id(stand_ins[k])] = v
            inputs.append(stand_ins[k])
        elif is_float(v):
            inputs.append(Number(v, count))
            count += 1
        elif type(v) is tuple and floats(v):
            inputs.append(tuple(Number(x, count + i) for i, x in enumerate(v)))
            count += len(v)
        else:
            inputs.append(v)
    state.trace = trace
    active[0] += 1
    try:
        result = fn(*inputs)
    finally:
        active[0] -= 1
        state.trace = None
    outputs, structure = flatten(fn, result)
    if count:
        _check_no_frozen_numbers(fn, [*outputs, *(expr for _, expr in trace.assigns.values())])
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


def _check_no_frozen_numbers(fn: Callable[..., Any], roots: list[Any]) -> None:
    """No number of the traced graph was computed from a float argument in Python (its value
    at the trace would be frozen into the program): ``math.sqrt(lr)`` and numpy read a
    :class:`Number`'s float value, a marked NaN, past its operators."""
    seen: set[int] = set()
    stack = [r for r in roots if isinstance(r, Operation)]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for x in (*node.operands, *node.params):
            if isinstance(x, Operation):
                stack.append(x)
            elif _frozen_number(x):
                raise CompileError(
                    message(
                        f"cannot compile {qualname(fn)}: a number in it was computed from a "
                        "float argument outside typed_nn (math or numpy functions read its "
                        "value), so the trace's value would be frozen into the program.",
                        [("node", node.describe())],
                        built_at=format_site(node.site),
                        hint="compute with typed_nn data (ops.sqrt(lr * tn.ones((), "
                        "tn.Float32, tn.CPU)) for math.sqrt(lr)), or compute the number "
                        "outside and pass it as the argument.",
                    )
                )


def _frozen_number(x: object) -> bool:
    """A NaN carrying :data:`FROZEN_BITS`' payload (a float, or numpy's)."""
    if type(x) is Number or not isinstance(x, float | np.floating) or not math.isnan(x):
        return False
    bits: int = struct.unpack("<Q", struct.pack("<d", float.__float__(float(x))))[0]
    return bits & 0xFFFF_FFFF == _FROZEN_PAYLOAD


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
