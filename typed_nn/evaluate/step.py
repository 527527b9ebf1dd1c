"""A compiled Step: one signature's program, the check that a call fits it, and its run.

``build_step`` runs the evaluator's one analysis over what a trace built (its outputs and its
assigns, with the assigned tensors as ``out=`` targets) into a lean program that reads each
call's values directly: ``fn(A, N, alloc)`` takes the call's arrays by argument (``A[k]``, a
row ``A[k][i]``) and its float numbers (``N``); closed-over tensors' memory is bound into the
program (``Step.stale`` says when that no longer holds); it returns the outputs' arrays and
writes the assigned tensors in place. The check of a call (:meth:`Step.guard`) is plain
Python, as is the wrapping of the outputs. On a GPU the program is replayed as one CUDA graph
after its first run (``replay.py``; ``Step.graph_status`` says whether, or why not).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..data.module import replaced as replaced_fields
from ..data.tensor import AnyTensor, Tensor
from ..devices import device_of
from . import hooks
from .cache import invalidate_caches
from .codegen import Program
from .collect import Collected, collect
from .executor import FAILED, _alias, _analyse, _run, by_node  # the one analysis
from .options import options, stats
from .replay import GraphReplay, graph_replay
from .trace import is_float, trace_function, unflatten

__all__ = ["MISSING", "CellScope", "Step", "build_step", "memory_base", "shared_with"]

MISSING = object()
_wrap = Tensor._wrap


class Step:
    """One signature's compiled program, how a call fits it and how its outputs come back."""

    modes: tuple[tuple[Any, bool], ...] = ()
    """(module, training) of each module whose mode the trace read (:meth:`hold_modes`)."""
    replaced: int
    """Module fields set again before the trace (``data.module.replaced``): a later set may
    have swapped a tensor or a value the program holds."""

    def __init__(
        self,
        key: tuple[Any, ...],
        static: frozenset[str],
        names: list[str],
        program: Program,
        returned: list[Any],
        structure: Any,
        held: list[Tensor[Any, Any, Any]],
        scopes: list[tuple[Any, str, Any]],
        source: tuple[Callable[..., Any], list[str], frozenset[str]],
        assigns: bool,
    ) -> None:
        self.program = program
        self.structure = structure
        self.held = [(t, t._array) for t in held]
        """Closed-over tensors (read or assigned) with the memory the program binds."""
        self.held_bases = frozenset(memory_base(array) for _, array in self.held)
        self.cells = [(scope.cell, obj) for scope, _, obj in scopes if type(scope) is CellScope]
        """(closure cell, tensor) of each cell ``fn`` read a tensor from."""
        self.globals = [entry for entry in scopes if type(entry[0]) is not CellScope]
        """(globals, name, tensor) of each global name ``fn`` read a tensor from."""
        self.source = source
        """(fn, parameter names, static names): to trace again (debug mode, a failure)."""
        self.assigns = assigns
        """Whether the program writes tensors in place (cached results are stale after it)."""
        n = len(names)
        self.checks = [_check(e, name in static) for e, name in zip(key[:n], names, strict=True)]
        self.sharing = key[n] if len(key) > n else None
        """Which tensor arguments shared memory when traced (None: none did)."""
        tensors = sum(kind == "tensor" for kind, _ in self.checks)
        self.compare = assigns and (self.sharing is not None or tensors > 1)
        """Whether a call's tensor arguments are compared for shared memory: which share it
        matters only to a program that writes (it planned its writes for that sharing)."""
        self.arity = n
        self.watch = bool(scopes or self.held)
        """Whether a call checks the names and memory of the tensors ``fn`` closes over."""
        common = all(kind in ("tensor", "float", "floats") for kind, _ in self.checks)
        self.tensors: list[Any] | None = [want for _, want in self.checks] if common else None
        """(elem, device, shape) of each tensor argument, None for a float and the length of
        a tuple of floats (a trainer's numbers), where all are one of these."""
        self.outputs: list[tuple[int, Any]] = [
            (0 if type(r) is tuple else 1 if type(r) is int else 2, r) for r in returned
        ]
        """Per output (``returned``: the (elem, device) of a computed one, an argument's index,
        or a closed-over tensor returned as it is): (0, (elem, device)), (1, index) or
        (2, tensor)."""
        self.flat: Any = None
        if structure is not None and structure[0] in (tuple, list):
            self.flat = structure[0] if all(s is None for s in structure[1]) else None
        """``tuple`` or ``list`` when ``fn`` returns one of tensors only (rebuilt directly)."""
        one = len(returned) == 1 and structure is None and type(returned[0]) is tuple
        self.single = returned[0] if one else None
        """(elem, device) of the one computed output of a step returning just that."""
        self.shared: frozenset[int] = frozenset()
        """Argument indices that shared memory with a closed-over tensor when traced."""
        self.replay: GraphReplay | None = None
        """The program's replay as a device graph (None: it runs plainly)."""
        self.graph_reason = ""
        """Why the program runs plainly (where ``replay`` is None)."""

    def hold_modes(self, modes: list[tuple[Any, bool]]) -> None:
        """The program holds while these modules keep these modes (``model.train()`` /
        ``model.eval()`` read when traced): another mode is a new trace."""
        self.modes = tuple(modes)
        self.watch = self.watch or bool(modes)

    @property
    def graph_status(self) -> str:
        """Whether the program replays as a CUDA graph: ``replaying a CUDA graph``,
        ``waiting: ...`` (before its second call), or ``plain: <why not>``."""
        return self.replay.status if self.replay is not None else self.graph_reason

    def guard(self, args: tuple[Any, ...]) -> tuple[list[Any], list[float]] | None:
        """The call's arrays and numbers (as ``Compiled._key`` gives them) when ``args`` fit
        this Step's signature and its trace still holds, else None."""
        if len(args) != self.arity:
            return None
        arrays: list[Any] = []
        numbers: list[float] = []
        if self.tensors is not None:  # tensors and floats: the common case, first
            for a, want in zip(args, self.tensors, strict=False):  # arity checked
                if want is None:  # a float
                    if type(a) is not float and not is_float(a):
                        return None
                    numbers.append(float(a))
                    arrays.append(None)
                    continue
                if type(want) is int:  # a tuple of floats
                    if type(a) is not tuple or len(a) != want or not _all_floats(a):
                        return None
                    numbers.extend(map(float, a))
                    arrays.append(None)
                    continue
                if type(a) is not Tensor or a._elem is not want[0] or a._device is not want[1]:
                    return None
                x = a._array
                if x.shape != want[2]:
                    return None
                arrays.append(x)
        elif not _bind(args, self.checks, arrays, numbers):
            return None
        if self.compare and _sharing(arrays) != self.sharing:
            return None
        if (self.watch or self.replaced != replaced_fields[0]) and self.stale(arrays):
            return None
        return arrays, numbers

    def stale(self, arrays: list[Any]) -> bool:
        """Whether the trace no longer fits: a name ``fn`` read a tensor from now holds
        another object, a closed-over tensor's memory was replaced, or (a program that
        writes) an argument shares memory with a closed-over tensor where it did not (or the
        reverse), or a module's field was set again since the trace (``data.module.replaced``)."""
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
        for module, training in self.modes:
            if module.training is not training:
                return True
        if not self.assigns or not self.held:  # only a program that writes minds sharing
            return False
        if self.shared:
            return shared_with(arrays, self.held_bases) != self.shared
        held = self.held_bases
        # The common case (no argument over a closed-over tensor's memory), as a loop: on a
        # call's hot path any() of a generator costs 0.3 us more.
        for a in arrays:  # noqa: SIM110
            if a is not None and _base_id(a) in held:
                return True
        return False

    def run(
        self, arrays: list[Any], numbers: list[float], args: list[Any] | tuple[Any, ...]
    ) -> Any:
        """Run the program on a call's arrays and numbers; the outputs, in ``fn``'s structure."""
        values: Any
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
        outputs = []
        for (kind, r), v in zip(self.outputs, values, strict=True):
            outputs.append(_wrap(v, r[0], r[1]) if kind == 0 else args[r] if kind == 1 else r)
        if self.flat is not None:  # a tuple or list of tensors: no structure to rebuild
            return self.flat(outputs)
        return outputs[0] if self.structure is None else unflatten(self.structure, outputs)

    def run_by_node(self, args: list[Any]) -> list[Any]:
        """Debug mode, or the compiled program failed before it wrote any target: trace
        ``fn`` again with this call's values and run that graph node by node (each node
        checked in debug mode; an error names the node and the line that built it). Returns
        the outputs' arrays."""
        outputs, assigns = trace_function(*self.source, args, placeholders=False)[:2]
        invalidate_caches()
        results = by_node([*outputs, *(expr for _, expr in assigns)])
        invalidate_caches()
        for (target, _), result in zip(assigns, results[len(outputs) :], strict=True):
            device_of(target.device).copy(target.array, result.array)  # overlap-safe
        return [result.array for result in results[: len(outputs)]]


def _bind(
    args: tuple[Any, ...], checks: list[tuple[str, Any]], arrays: list[Any], numbers: list[float]
) -> bool:
    """Check ``args`` against ``checks`` (``_check``), their arrays and numbers appended."""
    for a, (kind, want) in zip(args, checks, strict=True):
        if kind == "tensor":
            if type(a) is not Tensor or a._elem is not want[0] or a._device is not want[1]:
                return False
            if a._array.shape != want[2]:
                return False
            arrays.append(a._array)
            continue
        arrays.append(None)
        if kind == "float":
            if not is_float(a):
                return False
            numbers.append(float(a))
        elif kind == "floats":
            if type(a) is not tuple or len(a) != want or not _all_floats(a):
                return False
            numbers.extend(map(float, a))
        elif type(a) is not want[0] or (a is not want[1] and a != want[1]):
            return False
    return True


def _all_floats(values: tuple[Any, ...]) -> bool:
    """Whether every value is a float (a loop: a generator costs more on a call's path)."""
    for x in values:  # noqa: SIM110
        if type(x) is not float and not is_float(x):
            return False
    return True


def _sharing(arrays: list[Any]) -> tuple[int, ...] | None:
    """Which tensor arguments share memory (``Compiled._key``'s entry; None: none do)."""
    bases = [_base_id(x) for x in arrays if x is not None]
    return tuple(bases.index(b) for b in bases) if len(set(bases)) < len(bases) else None


def _check(entry: Any, static: bool) -> tuple[str, Any]:
    """How ``Step.guard`` checks an argument against its entry of the signature."""
    if not static and type(entry) is tuple and len(entry) == 3 and entry[0] != "value":
        return "tensor", entry  # (elem, device, shape)
    if entry is float:
        return "float", None
    if type(entry) is tuple and entry[0] is float:
        return "floats", entry[1]
    return "value", entry[1:]  # (type, value)


def memory_base(array: Any) -> int:
    """The identity of the memory an array views (numpy and cupy keep one owner as base)."""
    base = array.base if type(array) is np.ndarray else getattr(array, "base", None)
    return id(array if base is None else base)


def shared_with(arrays: list[Any], held: frozenset[int]) -> frozenset[int]:
    """The argument indices whose arrays share memory with one of the ``held`` bases."""
    return frozenset(k for k, a in enumerate(arrays) if a is not None and _base_id(a) in held)


def _base_id(a: Any) -> int:
    """``memory_base``, with numpy's common case inline (a call's hot path)."""
    if type(a) is np.ndarray:
        base = a.base
        return id(a) if base is None else id(base)
    return memory_base(a)


def build_step(
    fn: Callable[..., Any],
    key: tuple[Any, ...],
    names: list[str],
    static: frozenset[str],
    placeholders: dict[int, Any],
    outputs: list[AnyTensor],
    structure: Any,
    assigns: list[tuple[Tensor[Any, Any, Any], AnyTensor]],
    cuda_graph: bool | None = None,
) -> Step:
    """The Step of one trace: the evaluator's analysis of everything ``fn`` built
    (``cuda_graph``: ``tn.compile``'s switch, see ``replay.graph_replay``)."""
    roots = [*outputs, *(expr for _, expr in assigns)]
    invalidate_caches()  # every node computed by the Step, none taken from a cache
    col = collect(roots, options.cse, -1, by_object=True)
    arg_of = {id(p): k for k, p in placeholders.items()}
    held: dict[int, Tensor[Any, Any, Any]] = {}
    sources = _leaf_sources(col, arg_of, held)
    targets: list[tuple[int, int, int, int]] = []
    for j, (target, _) in enumerate(assigns, start=len(outputs)):
        e = len(col.env) + len(targets)
        targets.append((j, col.roots[j], e, _alias(col, target)))
        k = arg_of.get(id(target))
        sources[e] = f"A[{k}]" if k is not None else _held(target, held)
    program = _analyse(col, targets, lean=(sources, len(outputs)))
    returned: list[Any] = []
    for out in outputs:
        source: Any = arg_of.get(id(out))
        if source is None and type(out) is Tensor and _view_of_argument(out, arg_of) is None:
            source = out  # a closed-over tensor, returned as it is
        returned.append(source if source is not None else (out.elem, out.device))
    stats.analyses += 1
    step = Step(
        key,
        static,
        names,
        program,
        returned,
        structure,
        list(held.values()),
        _names_read(fn, {id(o) for o, _ in col.leaves}),
        (fn, names, static),
        bool(assigns),
    )
    traced = [placeholders[k]._array if k in placeholders else None for k in range(len(names))]
    step.shared = shared_with(traced, step.held_bases)
    step.replaced = replaced_fields[0]
    fresh = [kind == 0 for kind, _ in step.outputs]
    step.replay, step.graph_reason = graph_replay(program, fresh, cuda_graph)
    return step


def _held(t: Tensor[Any, Any, Any], held: dict[int, Tensor[Any, Any, Any]]) -> Any:
    """A closed-over tensor's memory, bound into the program (as a constant, not a name)."""
    held[id(t)] = t
    return t._array


def _leaf_sources(
    col: Collected, arg_of: dict[int, int], held: dict[int, Tensor[Any, Any, Any]]
) -> dict[int, Any]:
    """Where each leaf slot's array comes from at every call: ``A[k]`` for an argument,
    ``A[k][i]...`` for a row of one, the memory of a tensor read live (parameters,
    optimizer state) otherwise."""
    sources: dict[int, Any] = {}
    for obj, s in col.leaves:
        k = arg_of.get(id(obj))
        view = _view_of_argument(obj, arg_of) if k is None else None
        if k is not None:
            sources[s] = f"A[{k}]"
        elif view is not None:  # x[i] of an argument: that row of each call's array
            sources[s] = f"A[{view[0]}]" + "".join(f"[{i}]" for i in view[1])
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
    """The global names and closure cells of ``fn`` that held a leaf tensor when traced."""
    code = getattr(fn, "__code__", None)
    found: list[tuple[Any, str, Any]] = []
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
