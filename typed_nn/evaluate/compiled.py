"""``tn.compile``: trace a function once per signature into a Step; replay the Step.

The first call with a given signature (each tensor argument's element, device and shape;
other arguments by value, float numbers excepted) runs ``fn`` on placeholder tensors: the
lazy graph it builds, and the ``assign``\\ s it makes, go through the evaluator's one
analysis (sharing, rewrites, fusion, batching, buffer plan, specialised kernels) into a
compiled program. Later calls bind their arrays into that program's inputs and run it: no
node is built, no graph is walked, nothing is analysed.

* Tensors ``fn`` closes over (parameters, optimizer state) are inputs too, read live.
* ``t.assign(expr)`` inside ``fn`` reads like eager code (later expressions see the new
  value) and writes ``t`` in place after every read of it.
* Float arguments, and tuples of floats, are run-time scalars (a learning rate may change
  every call); int, bool and other arguments, and those named in ``static=``, are part of
  the signature.
* Python control flow runs once, at trace time (as in ``jax.jit``).
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, ParamSpec, TypeVar, overload

import numpy as np

from ..data.tensor import Tensor
from ..data.tensor_like import AnyTensor, TensorLike
from ..errors import CompileError, OperandError, RetraceWarning, message
from ..ops.node import format_site, user_site
from ..tracing import active, state
from . import hooks, reference
from .cache import invalidate_caches
from .codegen import Program
from .collect import collect
from .executor import _alias, _analyse, _run  # the one analysis every evaluation uses
from .options import options, stats

__all__ = ["Compiled", "compile", "tracing"]

P = ParamSpec("P")
R = TypeVar("R")

MAX_TRACES = 8
"""Signatures a compiled function keeps by default (the oldest is dropped past it)."""


class _Number(float):
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
    def method(self: _Number, *args: Any) -> Any:
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
    setattr(_Number, _op, _frozen(_op))


class _Trace:
    """What one trace records: the assigns, in order."""

    def __init__(self) -> None:
        self.assigns: dict[int, tuple[Tensor[Any, Any, Any], AnyTensor]] = {}

    def assign(self, target: Tensor[Any, Any, Any], expr: AnyTensor) -> None:
        self.assigns[id(target)] = (target, expr)  # the last assign of a target wins
        state.substitute[id(target)] = expr  # later reads of the target see the new value


def tracing() -> _Trace | None:
    """The trace running in this thread, if any (``evaluate`` and ``assign`` ask)."""
    trace: _Trace | None = state.trace
    return trace


class _Step:
    """One signature's compiled program and how a call's values are bound into it."""

    def __init__(
        self,
        program: Program,
        env: list[Any],
        arg_slots: list[tuple[int, int]],
        live: list[tuple[int, Tensor[Any, Any, Any], Any]],
        numbers: dict[str, int],
        roots: list[int],
        returned: list[Any],
        structure: Any,
        targets: list[tuple[int, Any]],
        objs: list[Any],
        names: list[tuple[Any, str, Any]],
        source: tuple[Callable[..., Any], list[str], frozenset[str]],
    ) -> None:
        self.program = program
        self.env = env
        """The env template: leaf slots are rebound at every call."""
        self.arg_slots = arg_slots
        """(env slot, argument index) of each tensor argument."""
        self.live = live
        """(env slot, tensor, its shape when traced) of each closed-over tensor."""
        self.numbers = numbers
        """Program constant name -> index among the call's float arguments."""
        self.roots = roots
        self.returned = returned
        """Per output: None (computed), an argument index, or the closed-over tensor."""
        self.structure = structure
        self.targets = targets
        """(env index, argument index or closed-over tensor) of each assign target."""
        self.objs = objs
        self.names = names
        self.source = source
        """(fn, parameter names, static names): to trace again (debug mode, a failure)."""
        self.held = [(t, t._array) for _, t, _ in live]
        self.held += [(k, k._array) for _, k in targets if type(k) is not int]
        """Closed-over tensors (read or assigned) with their memory when traced."""
        self.held_bases = frozenset(_base(array) for _, array in self.held)
        self.arg_views: list[tuple[int, int, tuple[Any, ...]]] = []
        """(env slot, argument index, index) of each row ``x[i]`` of a tensor argument."""
        self.shared: frozenset[int] = frozenset()
        """Argument indices that shared memory with a closed-over tensor when traced."""

    def stale(self, arrays: list[Any]) -> bool:
        """Whether the trace no longer fits: a name ``fn`` read a tensor from now holds
        another object, a closed-over tensor's memory was replaced, or an argument shares
        memory with a closed-over tensor where it did not (or the reverse)."""
        for scope, name, obj in self.names:
            if scope.get(name, _MISSING) is not obj:
                return True
        for t, array in self.held:
            if t._array is not array:
                return True
        return bool(self.held) and _shared(arrays, self.held_bases) != self.shared

    def run(self, arrays: list[Any], numbers: list[float], args: list[Any]) -> Any:
        """Bind this call's arrays and numbers, run the program, return the outputs."""
        env = self.env.copy()
        for slot, k in self.arg_slots:
            env[slot] = arrays[k]
        for slot, t, _ in self.live:
            env[slot] = t._array
        for slot, k, index in self.arg_views:
            env[slot] = arrays[k][index]
        for slot, k in self.targets:
            env[slot] = arrays[k] if type(k) is int else k._array
        ns = self.program.fn.__globals__
        for name, k in self.numbers.items():
            ns[name] = numbers[k]
        if hooks.node_checks or not _run(self.program, env):
            for r, value in zip(self.roots, self._run_by_node(args), strict=True):
                env[r] = value
        values = []
        for r, out in zip(self.roots, self.returned, strict=True):
            if out is None:
                obj = self.objs[r]
                values.append(Tensor._wrap(env[r], obj.elem, obj.device))
            else:  # a tensor fn returned as it is: the argument or the closed-over tensor
                values.append(args[out] if type(out) is int else out)
        return values[0] if self.structure is None else _unflatten(self.structure, values)

    def _run_by_node(self, args: list[Any]) -> list[Any]:
        """Debug mode, or the compiled program failed before it wrote any target: trace
        ``fn`` again with this call's values and run that graph node by node (each node
        checked in debug mode; an error names the node and the line that built it).
        Returns the outputs' arrays."""
        outputs, assigns = _run_fn(*self.source, args, placeholders=False)[:2]
        invalidate_caches()
        results = reference.execute([*outputs, *(expr for _, expr in assigns)])
        invalidate_caches()
        for (target, _), result in zip(assigns, results[len(outputs) :], strict=True):
            np.copyto(target.array, result.array)
        return [r.array for r in results[: len(outputs)]]


_MISSING = object()


class Compiled(Generic[P, R]):
    """A compiled function: call it like ``fn``. ``traces`` counts the traces it made."""

    def __init__(self, fn: Callable[P, R], static: Sequence[str], max_traces: int) -> None:
        self.fn = fn
        self._signature = inspect.signature(fn)
        self._static = frozenset(static)
        unknown = self._static - set(self._signature.parameters)
        if unknown:
            raise CompileError(
                message(
                    f"cannot compile {_name(fn)}: static names no parameter.",
                    [
                        ("static", ", ".join(sorted(unknown))),
                        ("parameters", ", ".join(self._signature.parameters)),
                    ],
                    hint="name parameters of the function in static=(...).",
                )
            )
        self._names = list(self._signature.parameters)
        self._max = max_traces
        self._steps: dict[Any, _Step] = {}
        self._warned = False
        self._lock = threading.RLock()
        self._last: tuple[Any, _Step] | None = None
        self.traces = 0
        """How many times ``fn`` was traced."""
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if tracing() is not None:
            return self.fn(*args, **kwargs)  # inside another trace: part of its graph
        values = self._bind(args, kwargs)
        key, arrays, numbers = self._key(values)
        with self._lock:  # a Step's numbers and kept buffers serve one call at a time
            last = self._last
            if last is not None and last[0] == key:  # the same signature as the last call
                step: _Step | None = last[1]
            else:
                step = self._steps.pop(key, None)
                if step is not None:
                    self._steps[key] = step  # the most recently used last
            if step is None or step.stale(arrays):
                step = self._trace(key, values)
            self._last = (key, step)
            result: R = step.run(arrays, numbers, values)
        return result

    def clear(self) -> None:
        """Forget every traced signature (the next call traces again; ``traces`` goes on
        counting)."""
        self._steps.clear()
        self._warned, self._last = False, None

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        if not kwargs and len(args) == len(self._names):
            return list(args)
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return [bound.arguments[n] for n in self._names]

    def _key(self, values: list[Any]) -> tuple[Any, list[Any], list[float]]:
        """The signature of one call, with its tensors' arrays and its float numbers."""
        key: list[Any] = []
        arrays: list[Any] = []
        numbers: list[float] = []
        for name, v in zip(self._names, values, strict=True):
            t = type(v)
            if t is Tensor and name not in self._static:
                arr = v._array
                key.append((v._elem, v._device, arr.shape))
                arrays.append(arr)
            elif _is_float(v) and name not in self._static:
                key.append(float)
                numbers.append(float(v))
                arrays.append(None)
            elif t is tuple and name not in self._static and _floats(v):
                key.append((float, len(v)))
                numbers.extend(float(x) for x in v)
                arrays.append(None)
            else:
                key.append(self._value_key(name, v))
                arrays.append(None)
        # Which tensor arguments share memory (one tensor passed twice, views of one array):
        # the trace's in-place writes were planned for that sharing.
        bases = [_base(a) for a in arrays if a is not None]
        if len(bases) > 1:
            key.append(tuple(bases.index(b) for b in bases))
        return tuple(key), arrays, numbers

    def _value_key(self, name: str, v: Any) -> Any:
        if isinstance(v, TensorLike) and name not in self._static:
            raise OperandError(
                message(
                    f"cannot call compiled {_name(self.fn)}: argument {name!r} is a lazy "
                    "expression.",
                    [(name, v.describe()), ("accepted", "a principal tensor")],
                    built_at=format_site(user_site()),
                    hint="evaluate it first (tn.evaluate(x)), or build it inside the "
                    "compiled function from tensors passed in.",
                )
            )
        try:
            hash(v)
        except TypeError:
            raise CompileError(
                message(
                    f"cannot call compiled {_name(self.fn)}: argument {name!r} is neither a "
                    "tensor nor hashable.",
                    [(name, type(v).__name__)],
                    built_at=format_site(user_site()),
                    hint="pass tensors, numbers or hashable values (tuples, not lists).",
                )
            ) from None
        return ("value", type(v), v)

    def _trace(self, key: Any, values: list[Any]) -> _Step:
        self._steps.pop(key, None)  # a stale Step of this signature
        if len(self._steps) >= self._max:
            self._warn_retrace(key)
            del self._steps[next(iter(self._steps))]
        self.traces += 1
        outputs, assigns, structure, placeholders = _run_fn(
            self.fn, self._names, self._static, values
        )
        step = _compile(self, placeholders, outputs, structure, assigns)
        self._steps[key] = step
        return step

    def _warn_retrace(self, key: Any) -> None:
        if self._warned:
            return
        self._warned = True
        keys = (*self._steps, key)
        changing = [n for i, n in enumerate(self._names) if len({k[i] for k in keys}) > 1]
        warnings.warn(
            message(
                f"compiled {_name(self.fn)} was traced {self._max + 1} times: its "
                "arguments' signature keeps changing.",
                [("changing", ", ".join(changing) or "closed-over tensors")],
                hint="give the argument a fixed shape, or name a value that changes on every "
                "call in static=() only if it really selects another program.",
            ),
            RetraceWarning,
            stacklevel=4,
        )


def _base(array: Any) -> int:
    """The identity of the memory an array views (numpy and cupy keep one owner as base)."""
    base = array.base if type(array) is np.ndarray else getattr(array, "base", None)
    return id(array if base is None else base)


def _shared(arrays: list[Any], held: frozenset[int]) -> frozenset[int]:
    """The argument indices whose arrays share memory with one of the ``held`` bases."""
    return frozenset(k for k, a in enumerate(arrays) if a is not None and _base(a) in held)


def _is_float(v: Any) -> bool:
    """A float (numpy's too): a run-time number of a compiled function."""
    t = type(v)
    return t is float or (t is not _Number and isinstance(v, float | np.floating))


def _floats(v: tuple[Any, ...]) -> bool:
    """A non-empty tuple of floats: run-time numbers, like a float argument."""
    return bool(v) and all(_is_float(x) for x in v)


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def _run_fn(
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
        elif _is_float(v) or (type(v) is tuple and _floats(v)):
            numbers = []
            for x in v if type(v) is tuple else (v,):
                number = _Number(float(x))
                number.index = count
                count += 1
                numbers.append(number)
            inputs.append(tuple(numbers) if type(v) is tuple else numbers[0])
        else:
            inputs.append(v)
    trace = _Trace()
    state.trace, state.substitute = trace, {}
    active[0] += 1
    try:
        result = fn(*inputs)
    finally:
        active[0] -= 1
        state.trace, state.substitute = None, {}
    outputs, structure = _flatten(fn, result)
    for out in outputs:
        if isinstance(out, Tensor) and id(out) in trace.assigns:
            raise CompileError(
                message(
                    f"cannot compile {_name(fn)}: it returns a tensor it also assigns.",
                    [("tensor", out.describe())],
                    hint="return the new value's expression, or read the tensor after the call.",
                )
            )
    return outputs, list(trace.assigns.values()), structure, stand_ins


def _compile(
    owner: Compiled[Any, Any],
    placeholders: dict[int, Any],
    outputs: list[AnyTensor],
    structure: Any,
    assigns: list[tuple[Tensor[Any, Any, Any], AnyTensor]],
) -> _Step:
    """The Step of one trace: the evaluator's analysis of everything ``fn`` built."""
    roots = [*outputs, *(expr for _, expr in assigns)]
    invalidate_caches()  # every node computed by the Step, none taken from a cache
    col = collect(roots, options.cse, -1, by_object=True)
    arg_of = {id(p): k for k, p in placeholders.items()}
    targets: list[tuple[int, int, int, int]] = []
    binding: list[tuple[int, Any]] = []
    for j, (target, _) in enumerate(assigns, start=len(outputs)):
        e = len(col.env) + len(targets)
        targets.append((j, col.roots[j], e, _alias(col, target)))
        k = arg_of.get(id(target))
        binding.append((e, k if k is not None else target))
    program = _analyse(col, targets).lean()
    arg_slots: list[tuple[int, int]] = []
    arg_views: list[tuple[int, int, tuple[Any, ...]]] = []
    live: list[tuple[int, Tensor[Any, Any, Any], Any]] = []
    for obj, s in col.leaves:
        k = arg_of.get(id(obj))
        if k is not None:
            arg_slots.append((s, k))
            continue
        view = _view_of_argument(obj, arg_of)
        if view is not None:  # x[i] of an argument: that row of each call's array
            arg_views.append((s, *view))
        else:
            live.append((s, obj, obj._array.shape))
    numbers = {
        name: value.index
        for name, value in program.fn.__globals__.items()
        if type(value) is _Number
    }
    returned: list[Any] = []
    for out in outputs:
        k = arg_of.get(id(out))
        returned.append(k if k is not None else (out if type(out) is Tensor else None))
    stats.analyses += 1
    step = _Step(
        program,
        col.env + [None] * len(targets),
        arg_slots,
        live,
        numbers,
        col.roots[: len(outputs)],
        returned,
        structure,
        binding,
        col.objs,
        _names_read(owner.fn, {id(o) for o, _ in col.leaves}),
        (owner.fn, owner._names, owner._static),
    )
    step.arg_views = arg_views
    traced = [
        placeholders[k]._array if k in placeholders else None for k in range(len(owner._names))
    ]
    step.shared = _shared(traced, step.held_bases)
    return step


def _view_of_argument(obj: Any, arg_of: dict[int, int]) -> tuple[int, tuple[Any, ...]] | None:
    """(argument index, numpy index) when ``obj`` is a row view ``x[i][j]...`` of a tensor
    argument's placeholder; else None."""
    indices: list[int] = []
    while isinstance(obj, Tensor) and obj._view_of is not None:
        obj, i = obj._view_of
        indices.append(i)
    k = arg_of.get(id(obj))
    if k is None or not indices:
        return None
    return k, (*reversed(indices), Ellipsis)


def _names_read(fn: Callable[..., Any], leaves: set[int]) -> list[tuple[dict[str, Any], str, Any]]:
    """The global names and closure cells of ``fn`` that held a leaf tensor when traced."""
    code = getattr(fn, "__code__", None)
    found: list[tuple[dict[str, Any], str, Any]] = []
    if code is None:
        return found
    scope = fn.__globals__
    for name in code.co_names:
        obj = scope.get(name)
        if isinstance(obj, Tensor) and id(obj) in leaves:
            found.append((scope, name, obj))
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        obj = cell.cell_contents
        if isinstance(obj, Tensor) and id(obj) in leaves:
            found.append((_CellScope(cell), name, obj))
    return found


class _CellScope(dict[str, Any]):
    """A closure cell read like a scope (``get`` returns its current contents)."""

    def __init__(self, cell: Any) -> None:
        super().__init__()
        self._cell = cell

    def get(self, key: str, default: Any = None) -> Any:
        return self._cell.cell_contents


def _flatten(fn: Callable[..., Any], result: Any) -> tuple[list[AnyTensor], Any]:
    """The tensors of ``fn``'s result, and how to put values back in its structure."""
    if isinstance(result, TensorLike):
        return [result], None
    if isinstance(result, tuple | list):
        items = [_flatten(fn, r) for r in result]
        return [t for ts, _ in items for t in ts], (type(result), [s for _, s in items])
    if isinstance(result, Mapping):
        keys = list(result)
        items = [_flatten(fn, result[k]) for k in keys]
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


def _unflatten(structure: Any, values: list[Any]) -> Any:
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


@overload
def compile(
    fn: Callable[P, R], *, static: Sequence[str] = (), max_traces: int = MAX_TRACES
) -> Compiled[P, R]: ...
@overload
def compile(
    *, static: Sequence[str] = (), max_traces: int = MAX_TRACES
) -> Callable[[Callable[P, R]], Compiled[P, R]]: ...
def compile(
    fn: Callable[..., Any] | None = None,
    *,
    static: Sequence[str] = (),
    max_traces: int = MAX_TRACES,
) -> Any:
    """Compile ``fn``: trace it once per signature, replay the compiled Step after.

    ``static``: parameter names whose values select the program (part of the signature);
    ``max_traces``: signatures kept (a warning names the argument that keeps changing).
    See docs/programs.md.

    >>> @tn.compile
    ... def step(x, y): ...
    """
    if fn is None:
        return lambda f: Compiled(f, static, max_traces)
    return Compiled(fn, static, max_traces)
