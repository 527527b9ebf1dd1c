"""A compiled Step: one signature's program, the check that a call fits it, and its run.

A Step traces ``fn`` and runs the evaluator's one analysis over what it built (its outputs,
its assigns as ``out=`` targets) into a lean program ``fn(A, N, alloc)``: ``A[k]`` is a
call's argument array (``A[k][i]`` a row of one), ``N`` its float numbers; closed-over
tensors' memory is bound into it. :meth:`Step.guard` checks a call in plain Python; on a GPU
the program replays as one CUDA graph after its first run (``replay.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ..data.module import Module
from ..data.module import replaced as replaced_fields
from ..data.tensor import AnyTensor, Tensor, TensorLike, check_writable
from ..devices import data_pointer, device_of, device_of_array
from ..errors import CompileError, OperandError, message
from ..ops.node import format_site, user_site
from . import hooks
from .cache import invalidate_caches
from .codegen import Program
from .collect import Collected, collect
from .executor import FAILED, _alias, _analyse, _run, by_node  # the one analysis
from .options import options, stats
from .replay import GraphReplay, graph_replay
from .trace import Trace, floats, is_float, qualname, trace_function, unflatten

__all__ = ["Step", "memory_layout", "signature"]

MISSING = object()
_wrap = Tensor._wrap


class Value(tuple[Any, Any]):
    """The signature entry of an argument compared by value: (type, value)."""


def signature(
    fn: Callable[..., Any], names: list[str], static: frozenset[str], values: Any
) -> tuple[tuple[Any, ...], list[Any], list[float]]:
    """A call's signature, its tensors' arrays and its float numbers. Per argument: a
    tensor's (elem, device, shape), None for a float, the length of a tuple of floats, else
    a :class:`Value`."""
    key: list[Any] = []
    arrays: list[Any] = []
    numbers: list[float] = []
    for name, v in zip(names, values, strict=True):
        arrays.append(None)
        if name in static:
            key.append(_value(fn, name, v))
        elif type(v) is Tensor:
            key.append((v._elem, v._device, v._array.shape))
            arrays[-1] = v._array
        elif is_float(v):
            key.append(None)
            numbers.append(float(v))
        elif type(v) is tuple and floats(v):
            key.append(len(v))
            numbers.extend(float(x) for x in v)
        elif isinstance(v, TensorLike):
            raise OperandError(
                message(
                    f"cannot call compiled {qualname(fn)}: argument {name!r} is a lazy expression.",
                    [(name, v.describe()), ("accepted", "a principal tensor")],
                    built_at=format_site(user_site()),
                    hint="evaluate it first (tn.evaluate(x)), or build it inside the "
                    "compiled function from tensors passed in.",
                )
            )
        else:
            key.append(_value(fn, name, v))
    return tuple(key), arrays, numbers


def _value(fn: Callable[..., Any], name: str, v: Any) -> Value:
    try:
        hash(v)
    except TypeError:
        raise CompileError(
            message(
                f"cannot call compiled {qualname(fn)}: argument {name!r} is neither a "
                "tensor nor hashable.",
                [(name, type(v).__name__)],
                built_at=format_site(user_site()),
                hint="pass tensors, numbers or hashable values (tuples, not lists); tensors "
                "as separate arguments or *args (a tuple is compared by value: each call's "
                "new tensors would be a new trace).",
            )
        ) from None
    return Value((type(v), v))


class Step:
    """One signature's compiled program, how a call fits it and how its outputs come back."""

    def __init__(
        self,
        fn: Callable[..., Any],
        names: list[str],
        static: frozenset[str],
        key: tuple[Any, ...],
        values: Any,
        cuda_graph: bool | None = None,
    ) -> None:
        """Trace ``fn`` on ``values`` (of signature ``key``) and analyse what it built
        (``cuda_graph``: ``tn.compile``'s switch, see ``replay.graph_replay``)."""
        self.fn, self.names, self.static, self.key = fn, names, static, key
        trace = Trace(fn)
        outputs, assigns, structure, placeholders = trace_function(
            fn, names, static, values, trace=trace
        )
        self.number_checks = tuple(trace.number_checks)  # float arguments checked every call
        self.modes = tuple(trace.modes.values())
        """(module, training) of each module whose mode the trace read: another is a new trace."""
        self.replaced = replaced_fields[0]
        """Module fields set so far: a later set may have swapped what the program holds."""
        held: dict[int, Tensor[Any, Any, Any]] = {}
        self.program, returned, leaves = _build(outputs, assigns, placeholders, held)
        _hold_what_the_trace_merged(trace, placeholders, held)
        self.held = [(t, t._array) for t in held.values()]
        """Closed-over tensors (read or assigned) with the memory the program binds."""
        scopes = _names_read(fn, leaves)
        self.cells = [(cell, obj) for cell, _, obj in scopes if type(cell) is not dict]
        self.globals = [entry for entry in scopes if type(entry[0]) is dict]
        """(closure cell, tensor) and (globals, name, tensor) that ``fn`` read a tensor from."""
        self.assigns = bool(assigns)
        """Whether the program writes tensors in place (cached results are stale after it)."""
        self.written = _written_arguments(assigns, placeholders)
        """The arguments written into (or a row of them): checked writable before each run."""
        self.arity = len(names)
        merged = self.assigns or bool(trace.through) or trace.differentiated  # hang on sharing
        self.held_at, self.layout = _sharing(key, self.held, merged, placeholders)
        """``held_at``: where the program writes (or the trace took two tensors over one
        memory for one) and two memories could be one, a call's memory layout must be the
        trace's (its writes and reads were planned for it; None: nothing to compare)."""
        shared = any(e != k for k, e in enumerate(self.layout))
        self.objects = (
            object_pattern(values, self.held) if trace.differentiated and shared else None
        )
        """Where autodiff ran and memory was shared: which arguments are one object, or a
        closed-over one (autodiff takes them for one tensor, as eagerly); a call must match."""
        self.watch = bool(scopes or self.held or self.modes)
        """Whether a call checks the names, memory and modes the trace read."""
        self.structure, self.returned = structure, returned
        """``returned``, per output: (elem, device) of a computed one, an argument's index,
        or a closed-over tensor returned as it is."""
        seq: Any = structure if structure is not None and structure[0] in (tuple, list) else None
        self.flat: Any = seq[0] if seq and all(s is None for s in seq[1]) else None
        """``tuple`` or ``list`` when ``fn`` returns one of tensors only (rebuilt directly)."""
        one = len(returned) == 1 and structure is None and type(returned[0]) is tuple
        self.single = returned[0] if one else None
        """(elem, device) of the one computed output of a step returning just that."""
        fresh = [type(r) is tuple for r in returned]
        self.replay: GraphReplay | None
        self.replay, self.graph_reason = graph_replay(self.program, fresh, cuda_graph)

    @property
    def graph_status(self) -> str:
        """``replaying a CUDA graph``, ``waiting: ...`` or ``plain: <why not>``."""
        return self.replay.status if self.replay is not None else self.graph_reason

    def guard(self, args: Any) -> tuple[list[Any], list[float]] | None:
        """The call's arrays and numbers (as :func:`signature` gives them) when ``args`` fit
        this Step's signature and its trace still holds, else None."""
        if len(args) != self.arity:
            return None
        arrays: list[Any] = []
        numbers: list[float] = []
        for a, want in zip(args, self.key, strict=False):  # arity checked
            if type(want) is tuple:  # a tensor (the common case, first)
                if type(a) is not Tensor or a._elem is not want[0] or a._device is not want[1]:
                    return None
                x = a._array
                if x.shape != want[2]:
                    return None
                arrays.append(x)
                continue
            arrays.append(None)
            if want is None:  # a float
                if type(a) is not float and not is_float(a):
                    return None
                numbers.append(float(a))
            elif type(want) is int:  # a tuple of floats
                if type(a) is not tuple or len(a) != want or not _all_floats(a):
                    return None
                numbers.extend(map(float, a))
            elif type(a) is not want[0] or (a is not want[1] and a != want[1]):
                return None
        held_at = self.held_at
        if held_at is not None and memory_layout(arrays, held_at) != self.layout:
            return None
        if (self.watch or self.replaced != replaced_fields[0]) and self.stale():
            return None
        if self.objects is not None and object_pattern(args, self.held) != self.objects:
            return None
        return arrays, numbers

    def stale(self) -> bool:
        """Whether the trace no longer fits: a name ``fn`` read a tensor from now holds
        another object, a closed-over tensor's memory or a module's mode changed, or a module
        field was set since the trace."""
        if self.replaced != replaced_fields[0]:
            return True
        for cell, obj in self.cells:
            if cell.cell_contents is not obj:
                return True
        for scope, name, obj in self.globals:
            if scope.get(name, MISSING) is not obj:
                return True
        for t, array in self.held:
            if t._array is not array:
                return True
        for module, training in self.modes:  # noqa: SIM110 (a loop costs less than any())
            if module.training is not training:
                return True
        return False

    def run(
        self, arrays: list[Any], numbers: list[float], args: list[Any] | tuple[Any, ...]
    ) -> Any:
        """Run the program on a call's arrays and numbers; the outputs, in ``fn``'s structure."""
        values: Any
        for k in self.written:
            check_writable(args[k], "assign")
        for i, check in self.number_checks:
            check(numbers[i])
        if hooks.node_checks:
            values = FAILED
        elif self.replay is not None:
            values = self.replay.run(arrays, numbers)
        else:
            values = _run(self.program, arrays, numbers)
        if values is FAILED:
            values = self.run_by_node(list(args))
        if self.assigns:  # tensors written in place: cached results that read them are stale
            invalidate_caches()
        single = self.single
        if single is not None:
            return _wrap(values[0], single[0], single[1])
        outputs = []  # a loop: a comprehension is one more frame on a call's path
        for r, v in zip(self.returned, values, strict=True):
            outputs.append(
                _wrap(v, r[0], r[1]) if type(r) is tuple else args[r] if type(r) is int else r
            )
        if self.flat is not None:  # a tuple or list of tensors: no structure to rebuild
            return self.flat(outputs)
        return outputs[0] if self.structure is None else unflatten(self.structure, outputs)

    def run_by_node(self, args: list[Any]) -> list[Any]:
        """Debug mode, or the program failed before it wrote any target: trace ``fn`` again
        on this call's values and run that graph node by node (an error names the node and
        the line that built it). Returns the outputs' arrays. A row passed as an argument
        is read as a tensor of its own over that memory, as the Step's trace read its
        stand-in (its tensor's other rows, passed beside it and assigned, are apart)."""
        own = [
            Tensor._wrap(a._array, a._elem, a._device)
            if type(a) is Tensor and a._view_of is not None
            else a
            for a in args
        ]
        outputs, assigns = trace_function(
            self.fn, self.names, self.static, own, placeholders=False
        )[:2]
        invalidate_caches()
        results = by_node([*outputs, *(expr for _, expr in assigns)])
        invalidate_caches()
        # a value may be a tensor's memory (a tensor assigned as it is) that a write changes
        values = [r.array.copy() if assigns else r.array for r in results]
        for (target, _), value in zip(assigns, values[len(outputs) :], strict=True):
            device_of(target.device).copy(target.array, value)
        return values[: len(outputs)]


def _written_arguments(
    assigns: list[tuple[Any, Any]], placeholders: dict[int, Any]
) -> tuple[int, ...]:
    """The indexes of the arguments whose memory an assign writes (it or a row of it)."""
    targets: set[int] = set()
    for target, _ in assigns:
        while target._view_of is not None:
            target = target._view_of[0]
        targets.add(id(target))
    return tuple(k for k, p in placeholders.items() if id(p) in targets)


def _all_floats(values: tuple[Any, ...]) -> bool:
    """Whether every value is a float (a loop: a generator costs more on a call's path)."""
    for x in values:  # noqa: SIM110
        if type(x) is not float and not is_float(x):
            return False
    return True


def _hold_what_the_trace_merged(
    trace: Trace, placeholders: dict[int, Any], held: dict[int, Tensor[Any, Any, Any]]
) -> None:
    """Hold the closed-over tensors the trace took for an argument's memory (read as its
    assigned value, an assign it replaced) or that autodiff reached: the program is for calls
    where they still are what they were."""
    stand_ins = {id(p) for p in placeholders.values()}
    for t in (*trace.through.values(), *trace.differentiated_through.values()):
        if id(t) not in stand_ins:
            held.setdefault(id(t), t)


def _sharing(
    key: tuple[Any, ...], held: list[tuple[Any, Any]], merged: bool, placeholders: dict[int, Any]
) -> tuple[HeldMemory | None, list[Any]]:
    """A Step's ``held_at`` (None where its program does not hang on which memories are one,
    ``merged`` False, or no two could be) and its trace's memory layout."""
    tensors = sum(type(want) is tuple for want in key)
    held_at = HeldMemory([array for _, array in held])
    compared = merged and (tensors > 1 or (tensors == 1 and bool(held)))
    traced = [placeholders[k]._array if k in placeholders else None for k in range(len(key))]
    return (held_at if compared else None), memory_layout(traced, held_at)


def object_pattern(args: Any, held: list[tuple[Any, Any]]) -> list[int]:
    """Per tensor argument, ``-1 - j`` when it is the j-th closed-over tensor object, else the
    index of the first argument that is the same object."""
    first: dict[int, int] = {}
    pattern: list[int] = []
    for k, a in enumerate(args):
        if type(a) is Tensor:
            j = next((j for j, (t, _) in enumerate(held) if t is a), None)
            pattern.append(-1 - j if j is not None else first.setdefault(id(a), k))
    return pattern


class HeldMemory:
    """What :func:`memory_layout` knows of the closed-over tensors' memory: the entry
    (``-1 - j``) of each by its array's identity and by its address, and every array with its
    entry (for overlaps); ``views``: whether one does not own its memory (then every call
    takes the address path)."""

    __slots__ = ("arrays", "by_address", "by_id", "views")

    def __init__(self, arrays: list[Any]) -> None:
        self.arrays = [(a, -1 - j) for j, a in enumerate(arrays)]
        self.by_id: dict[int, int] = {}
        self.by_address: dict[Any, int] = {}
        for a, entry in self.arrays:
            self.by_id.setdefault(id(a), entry)
            self.by_address.setdefault(address(a), entry)
        self.views = not all(map(_owner, arrays))


def memory_layout(arrays: list[Any], held: HeldMemory) -> list[Any]:
    """Per tensor argument, how its memory meets the others' (the trace merged tensors over
    exactly one memory, and its program was planned for that): ``-1 - j`` for exactly the
    j-th closed-over tensor's memory, else the index of the first tensor argument over exactly
    the same memory; one that may overlap memory seen before (another row of the same tensor,
    a tensor and a row of it, two DLPack imports of overlapping parts of one buffer) is
    ``(its index, the entries it may overlap)``."""
    if held.views:
        return _address_layout(arrays, held)
    seen: dict[int, int] = {}
    layout: list[Any] = []
    by_id = held.by_id
    for a in arrays:  # arrays owning their memory (the common case): one is another or apart
        if a is not None:
            if type(a) is not np.ndarray or not a.flags.owndata:  # _owner(a), inline
                return _address_layout(arrays, held)
            key = id(a)
            entry = by_id.get(key)
            if entry is None:
                entry = seen.setdefault(key, len(layout))
            layout.append(entry)
    return layout


def _address_layout(arrays: list[Any], held: HeldMemory) -> list[Any]:
    """:func:`memory_layout` where an array that may not be the only one over its memory is
    among them: memory compared by address (two views of one memory need not share a
    ``base``: DLPack imports each have their own, and a cupy import has none)."""
    same: dict[Any, Any] = dict(held.by_address)
    parts: list[tuple[Any, Any]] = list(held.arrays)
    layout: list[Any] = []
    for a in arrays:
        if a is not None:
            key = address(a)
            entry = same.get(key)
            if entry is None:
                tag = device_of_array(a)  # the device's own test (a null device's too)
                share = device_of(tag).may_share if tag is not None else _same_object
                overlaps = tuple(e for b, e in parts if share(a, b))
                entry = same[key] = (len(layout), overlaps) if overlaps else len(layout)
                parts.append((a, entry))
            layout.append(entry)
    return layout


def _same_object(a: Any, b: Any) -> bool:
    return a is b


def _owner(a: Any) -> bool:
    """Whether ``a`` is the one array over its memory: a numpy array that owns its data (a
    view, a DLPack import, or a device array, whose imports need not say they are views, may
    share memory with another array)."""
    return type(a) is np.ndarray and bool(a.flags.owndata)


def address(a: Any) -> tuple[Any, ...]:
    """Exactly which memory an array is: where it starts, its shape, strides and dtype."""
    return (data_pointer(a), a.shape, a.strides, a.dtype.str)


def _build(
    outputs: list[AnyTensor],
    assigns: list[tuple[Tensor[Any, Any, Any], AnyTensor]],
    placeholders: dict[int, Any],
    held: dict[int, Tensor[Any, Any, Any]],
) -> tuple[Program, list[Any], set[int]]:
    """The program of one trace, what each output is (``Step.returned``), the leaves' ids."""
    roots = [*outputs, *(expr for _, expr in assigns)]
    invalidate_caches()  # every node computed by the Step, none taken from a cache
    col = collect(roots, options.cse, -1, by_object=True)
    arg_of = {id(p): k for k, p in placeholders.items()}
    sources = _leaf_sources(col, arg_of, held)
    targets: list[tuple[int, int, int, int]] = []
    for j, (target, _) in enumerate(assigns, start=len(outputs)):
        e = len(col.env) + len(targets)
        targets.append((j, col.roots[j], e, _alias(col, target)))
        k = arg_of.get(id(target))
        sources[e] = f"A[{k}]" if k is not None else _held(target, held)
    program = _analyse(col, targets, lean=(sources, len(outputs)))
    stats.analyses += 1
    returned: list[Any] = []
    for out in outputs:
        source: Any = arg_of.get(id(out))
        if source is None and type(out) is Tensor and _view_of_argument(out, arg_of) is None:
            source = out  # a closed-over tensor, returned as it is
        returned.append(source if source is not None else (out.elem, out.device))
    return program, returned, {id(o) for o, _ in col.leaves}


def _held(t: Tensor[Any, Any, Any], held: dict[int, Tensor[Any, Any, Any]]) -> Any:
    """A closed-over tensor's memory, bound into the program (as a constant, not a name)."""
    held[id(t)] = t
    return t._array


def _leaf_sources(
    col: Collected, arg_of: dict[int, int], held: dict[int, Tensor[Any, Any, Any]]
) -> dict[int, Any]:
    """Where each leaf slot's array comes from at every call: ``A[k]`` for an argument,
    ``A[k][i]...`` for a row of one, the memory of a tensor read live otherwise."""
    sources: dict[int, Any] = {}
    for obj, s in col.leaves:
        k = arg_of.get(id(obj))
        view = _view_of_argument(obj, arg_of) if k is None else None
        if k is not None:
            sources[s] = f"A[{k}]"
        elif view is not None:
            # a number's last index [i, ...]: a view (a vector's [i] is a copy, read too early)
            last = ", ..." if obj.rank == 0 else ""
            sources[s] = f"A[{view[0]}]" + "".join(f"[{i}]" for i in view[1][:-1])
            sources[s] += f"[{view[1][-1]}{last}]"
        else:
            sources[s] = _held(obj, held)
    return sources


def _view_of_argument(obj: Any, arg_of: dict[int, int]) -> tuple[int, list[int]] | None:
    """(argument index, row indices) when ``obj`` is a row view ``x[i][j]...`` of a tensor
    argument's placeholder; else None."""
    indices: list[int] = []
    while isinstance(obj, Tensor) and obj._view_of is not None:
        obj, i = obj._view_of
        indices.append(i)
    k = arg_of.get(id(obj))
    if k is None or not indices:
        return None
    return k, indices[::-1]


def _names_read(fn: Callable[..., Any], leaves: set[int]) -> list[tuple[Any, str, Any]]:
    """(scope, name, object) of each global name (scope: the globals) and closure cell
    (scope: the cell) of ``fn`` that held, when traced, a leaf tensor, a module or one of
    typed_nn's stateful objects (an optimizer): rebound, the program no longer is ``fn``'s."""
    fn = getattr(fn, "__tn_call_of__", fn)  # a flattened call's: the function's own names
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    found: list[tuple[Any, str, Any]]
    found = [(fn.__globals__, name, fn.__globals__.get(name)) for name in code.co_names]
    cells = zip(code.co_freevars, fn.__closure__ or (), strict=True)
    found += [(cell, name, cell.cell_contents) for name, cell in cells]
    return [entry for entry in found if _traced_state(entry[2], leaves)]


def _traced_state(v: object, leaves: set[int]) -> bool:
    if isinstance(v, Tensor):
        return id(v) in leaves
    if isinstance(v, Module):
        return True
    kind = type(v)  # an optimizer, a loss scaler: typed_nn's objects holding tensors
    return kind.__module__.startswith("typed_nn.") and not isinstance(v, type | ModuleType)
