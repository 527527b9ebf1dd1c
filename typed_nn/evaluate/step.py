"""A compiled Step: one signature's program and how a call's values are bound into it.

``build_step`` runs the evaluator's one analysis over what a trace built (its outputs and its
assigns, with the assigned tensors as ``out=`` targets) and records where each leaf of the
graph comes from at every call: an argument's array (or a row of it), a closed-over tensor's
memory (read live), a float argument (a program constant rebound per call). ``Step.stale``
says when a trace no longer fits the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..data.tensor import AnyTensor, Tensor
from ..devices import device_of
from . import hooks, reference
from .cache import invalidate_caches
from .codegen import Program
from .collect import Collected, collect
from .executor import _alias, _analyse, _run  # the one analysis every evaluation uses
from .options import options, stats
from .trace import Number, qualname, trace_function, unflatten

__all__ = [
    "MISSING",
    "NO_MATCH",
    "CellScope",
    "Step",
    "build_step",
    "memory_base",
    "no_replay",
    "runner_code",
    "shared_with",
]


Runner = Callable[[list[Any], list[float], list[Any]], Any]
"""``run(arrays, numbers, args)``: a call's arrays and float arguments (as the guard or
``Compiled._key`` gives them) and its arguments -> the outputs."""


class Step:
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
        held = {id(t): t for _, t, _ in live}  # a tensor read and assigned is held once
        held.update((id(k), k) for _, k in targets if type(k) is not int)
        self.held = [(t, t._array) for t in held.values()]
        """Closed-over tensors (read or assigned) with their memory when traced."""
        for slot, t in [(slot, t) for slot, t, _ in live] + targets:
            if type(t) is not int:
                env[slot] = t._array
        self.held_bases = frozenset(memory_base(array) for _, array in self.held)
        self.arg_views: list[tuple[int, int, tuple[Any, ...]]] = []
        """(env slot, argument index, index) of each row ``x[i]`` of a tensor argument."""
        self.shared: frozenset[int] = frozenset()
        """Argument indices that shared memory with a closed-over tensor when traced."""
        self.run: Runner = self._first_run
        """Bind this call's arrays and numbers, run the program, return the outputs: after
        the first call, the code ``_generate_runner`` wrote for this Step (an attribute, so a
        call costs no method frame around it)."""
        self.replay: Callable[[tuple[Any, ...]], Any] = no_replay
        """The guard's checks, then this Step's run, as one function (``guard.call_replay``,
        written when the Step first becomes its compiled function's last): what a compiled
        function calls first."""

    def stale(self, arrays: list[Any]) -> bool:
        """Whether the trace no longer fits: a name ``fn`` read a tensor from now holds
        another object, a closed-over tensor's memory was replaced, or an argument shares
        memory with a closed-over tensor where it did not (or the reverse)."""
        for scope, name, obj in self.names:
            if scope.get(name, MISSING) is not obj:
                return True
        for t, array in self.held:
            if t._array is not array:
                return True
        return bool(self.held) and shared_with(arrays, self.held_bases) != self.shared

    def _first_run(self, arrays: list[Any], numbers: list[float], args: list[Any]) -> Any:
        self.run = _generate_runner(self)
        return self.run(arrays, numbers, args)

    def run_by_node(self, env: list[Any], args: list[Any]) -> None:
        """Debug mode, or the compiled program failed before it wrote any target: trace
        ``fn`` again with this call's values and run that graph node by node (each node
        checked in debug mode; an error names the node and the line that built it). The
        outputs' arrays go into their ``env`` slots."""
        outputs, assigns = trace_function(*self.source, args, placeholders=False)[:2]
        invalidate_caches()
        results = reference.execute([*outputs, *(expr for _, expr in assigns)])
        invalidate_caches()
        for (target, _), result in zip(assigns, results[len(outputs) :], strict=True):
            device_of(target.device).copy(target.array, result.array)  # overlap-safe
        for r, result in zip(self.roots, results[: len(outputs)], strict=True):
            env[r] = result.array


MISSING = object()

NO_MATCH = object()
"""What a replay returns when the call does not fit its Step (a compiled fn may return None)."""


def no_replay(args: tuple[Any, ...]) -> Any:
    """A Step's replay before ``guard.call_replay`` wrote it: no call fits yet."""
    return NO_MATCH


def _generate_runner(step: Step) -> Runner:
    """``step.run`` as straight-line code: each of this call's arrays, closed-over tensors'
    arrays and numbers bound into its env slot, the program run, each output wrapped. A
    small program runs in a few microseconds; binding by loops over the Step's tables cost
    as much again."""
    ns, body = runner_code(step)
    lines = ["def run(arrays, numbers, args):", *("    " + line for line in body)]
    exec(compile("\n".join(lines), f"<compiled step of {qualname(step.source[0])}>", "exec"), ns)
    runner: Runner = ns["run"]
    return runner


def runner_code(step: Step) -> tuple[dict[str, Any], list[str]]:
    """The body of ``step.run`` (unindented lines reading ``arrays``, ``numbers`` and
    ``args``, a sequence) and the names it uses; ``guard.call_replay`` puts the same body
    after its checks."""
    ns: dict[str, Any] = {
        "ENV": step.env,
        "NS": step.program.fn.__globals__,
        "HOOKS": hooks,
        "RUN": _run,
        "PROGRAM": step.program,
        "BY_NODE": step.run_by_node,
        "WRAP": Tensor._wrap,
        "UNFLATTEN": unflatten,
        "STRUCTURE": step.structure,
    }
    # One env per Step, not a copy per call: a Step runs one call at a time (the compiled
    # function's lock), every leaf slot is rebound below and the program writes each other
    # slot it reads before reading it. The closed-over tensors' slots are never rebound: a
    # call reaches ``run`` only once the guard (or ``stale``) saw that each still holds the
    # array it held when traced, and the env holds that array (``Step.__init__``).
    lines = ["env = ENV"]
    lines += [f"env[{slot}] = arrays[{k}]" for slot, k in step.arg_slots]
    for i, (slot, k, index) in enumerate(step.arg_views):
        ns[f"IX{i}"] = index
        lines.append(f"env[{slot}] = arrays[{k}][IX{i}]")
    lines += [f"env[{slot}] = arrays[{k}]" for slot, k in step.targets if type(k) is int]
    lines += [f"NS[{name!r}] = numbers[{k}]" for name, k in step.numbers.items()]
    lines.append("if HOOKS.node_checks or not RUN(PROGRAM, env):")
    lines.append("    BY_NODE(env, list(args))")
    if step.targets:  # tensors written in place: cached results that read them are stale
        ns["INVALIDATE"] = invalidate_caches
        lines.append("INVALIDATE()")
    values: list[str] = []
    for i, (r, out) in enumerate(zip(step.roots, step.returned, strict=True)):
        if out is None:  # computed: wrapped with the node's element and device
            obj = step.objs[r]
            ns[f"RE{i}"], ns[f"RD{i}"] = obj.elem, obj.device
            values.append(f"WRAP(env[{r}], RE{i}, RD{i})")
        elif type(out) is int:  # an argument fn returned as it is
            values.append(f"args[{out}]")
        else:  # a closed-over tensor fn returned as it is
            ns[f"RO{i}"] = out
            values.append(f"RO{i}")
    if step.structure is None:
        lines.append(f"return {values[0]}")
    else:
        lines.append(f"return UNFLATTEN(STRUCTURE, [{', '.join(values)}])")
    return ns, lines


def memory_base(array: Any) -> int:
    """The identity of the memory an array views (numpy and cupy keep one owner as base)."""
    base = array.base if type(array) is np.ndarray else getattr(array, "base", None)
    return id(array if base is None else base)


def shared_with(arrays: list[Any], held: frozenset[int]) -> frozenset[int]:
    """The argument indices whose arrays share memory with one of the ``held`` bases."""
    return frozenset(k for k, a in enumerate(arrays) if a is not None and memory_base(a) in held)


def build_step(
    fn: Callable[..., Any],
    names: list[str],
    static: frozenset[str],
    placeholders: dict[int, Any],
    outputs: list[AnyTensor],
    structure: Any,
    assigns: list[tuple[Tensor[Any, Any, Any], AnyTensor]],
) -> Step:
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
    program = _analyse(col, targets, lean=True)
    arg_slots, arg_views, live = _leaf_sources(col, arg_of)
    numbers = {
        name: value.index for name, value in program.fn.__globals__.items() if type(value) is Number
    }
    returned: list[Any] = []
    for out in outputs:
        source: Any = arg_of.get(id(out))
        if source is None and type(out) is Tensor and _view_of_argument(out, arg_of) is None:
            source = out  # a closed-over tensor, returned as it is
        returned.append(source)  # None: the program's value (a row of an argument: this call's)
    stats.analyses += 1
    step = Step(
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
        _names_read(fn, {id(o) for o, _ in col.leaves}),
        (fn, names, static),
    )
    step.arg_views = arg_views
    traced = [placeholders[k]._array if k in placeholders else None for k in range(len(names))]
    step.shared = shared_with(traced, step.held_bases)
    return step


def _leaf_sources(
    col: Collected, arg_of: dict[int, int]
) -> tuple[
    list[tuple[int, int]],
    list[tuple[int, int, tuple[Any, ...]]],
    list[tuple[int, Tensor[Any, Any, Any], Any]],
]:
    """Where each leaf slot's array comes from at every call: (slot, argument index) for an
    argument; (slot, argument index, index) for a row of one; (slot, tensor, traced shape)
    for a tensor read live (parameters, optimizer state)."""
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
    return arg_slots, arg_views, live


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
            found.append((CellScope(cell), name, obj))
    return found


class CellScope(dict[str, Any]):
    """A closure cell read like a scope (``get`` returns its current contents)."""

    def __init__(self, cell: Any) -> None:
        super().__init__()
        self.cell = cell

    def get(self, key: str, default: Any = None) -> Any:
        return self.cell.cell_contents
