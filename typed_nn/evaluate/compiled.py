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
* On a GPU, a signature's program is replayed as one CUDA graph from its second call on
  (``cuda_graph=``; ``graph_status`` says whether, or why not: docs/gpu.md).
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Generic, ParamSpec, TypeVar, overload

from ..data.module import replaced as replaced_fields
from ..data.tensor import Tensor, TensorLike
from ..errors import CompileError, OperandError, RetraceWarning, bad_argument, message
from ..ops.node import format_site, user_site
from ..tracing import state
from .step import Step, build_step, memory_base
from .trace import Trace, floats, is_float, qualname, trace_function, tracing

__all__ = ["Compiled", "compile", "tracing"]

P = ParamSpec("P")
R = TypeVar("R")

MAX_TRACES = 8
"""Signatures a compiled function keeps by default (the oldest is dropped past it)."""


class Compiled(Generic[P, R]):
    """A compiled function: call it like ``fn``. ``traces`` counts the traces it made."""

    def __init__(
        self,
        fn: Callable[P, R],
        static: Sequence[str],
        max_traces: int,
        cuda_graph: bool | None = None,
        *,
        quiet: bool = False,
    ) -> None:
        """``quiet``: no ``RetraceWarning`` (a program compiled for the user, not by them:
        ``served.py``)."""
        _check_arguments(fn, static, max_traces, cuda_graph)
        self._cuda_graph = cuda_graph
        self.fn = fn
        self._signature = inspect.signature(fn)
        self._static = frozenset(static)
        unknown = self._static - set(self._signature.parameters)
        if unknown:
            raise CompileError(
                message(
                    f"cannot compile {qualname(fn)}: static names no parameter.",
                    [
                        ("static", ", ".join(sorted(unknown))),
                        ("parameters", ", ".join(self._signature.parameters)),
                    ],
                    hint="name parameters of the function in static=(...).",
                )
            )
        self._names = list(self._signature.parameters)
        self._max = max_traces
        self._steps: dict[Any, Step] = {}
        self._quiet = self._warned = quiet
        self._replaced = 0
        """Traces made again because module fields were set between calls."""
        self._lock = threading.RLock()
        self._last: Step | None = None
        """The last call's Step: its ``guard`` is tried first."""
        self.traces = 0
        """How many times ``fn`` was traced."""
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if state.trace is not None:
            return self.fn(*args, **kwargs)  # inside another trace: part of its graph
        result: R
        last = self._last
        if last is not None and not kwargs:
            bound = last.guard(args)  # the last call's signature and Step: most calls repeat it
            if bound is not None:
                with self._lock:  # a Step's program serves one call at a time
                    if self._last is last:
                        result = last.run(bound[0], bound[1], args)
                        return result
        values = self._bind(args, kwargs)
        key, arrays, numbers = self._key(values)
        with self._lock:
            found = self._steps.pop(key, None)
            if found is not None:
                self._steps[key] = found  # the most recently used last
            if found is None or found.stale(arrays):
                found = self._trace(key, values)
            self._last = found
            result = found.run(arrays, numbers, values)
        return result

    @property
    def graph_status(self) -> str:
        """Whether the last call's program replays as a CUDA graph: ``replaying a CUDA
        graph``, ``waiting: ...`` (it is captured at its second call), or ``plain: <why
        not>`` (a CPU step, a host synchronisation in the step, capture raising, the switch
        off; see docs/gpu.md)."""
        last = self._last
        return "not traced yet" if last is None else last.graph_status

    def clear(self) -> None:
        """Forget every traced signature (the next call traces again; ``traces`` goes on
        counting)."""
        self._steps.clear()
        self._warned, self._last = self._quiet, None

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
            elif is_float(v) and name not in self._static:
                key.append(float)
                numbers.append(float(v))
                arrays.append(None)
            elif t is tuple and name not in self._static and floats(v):
                key.append((float, len(v)))
                numbers.extend(float(x) for x in v)
                arrays.append(None)
            else:
                key.append(self._value_key(name, v))
                arrays.append(None)
        # Which tensor arguments share memory (one tensor passed twice, views of one array):
        # the trace's in-place writes were planned for that sharing.
        bases = [memory_base(a) for a in arrays if a is not None]
        if len(bases) > 1 and len(set(bases)) < len(bases):
            key.append(tuple(bases.index(b) for b in bases))
        return tuple(key), arrays, numbers

    def _value_key(self, name: str, v: Any) -> Any:
        if isinstance(v, TensorLike) and name not in self._static:
            raise OperandError(
                message(
                    f"cannot call compiled {qualname(self.fn)}: argument {name!r} is a lazy "
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
                    f"cannot call compiled {qualname(self.fn)}: argument {name!r} is neither a "
                    "tensor nor hashable.",
                    [(name, type(v).__name__)],
                    built_at=format_site(user_site()),
                    hint="pass tensors, numbers or hashable values (tuples, not lists).",
                )
            ) from None
        return ("value", type(v), v)

    def _trace(self, key: Any, values: list[Any]) -> Step:
        stale = self._steps.pop(key, None)  # a stale Step of this signature
        if stale is not None and stale.replaced != replaced_fields[0]:
            self._warn_replaced()
        if len(self._steps) >= self._max:
            self._warn_retrace(key)
            del self._steps[next(iter(self._steps))]
        self.traces += 1
        trace = Trace(self.fn)
        outputs, assigns, structure, placeholders = trace_function(
            self.fn, self._names, self._static, values, trace=trace
        )
        step = build_step(
            self.fn,
            key,
            self._names,
            self._static,
            placeholders,
            outputs,
            structure,
            assigns,
            self._cuda_graph,
        )
        step.hold_modes(list(trace.modes.values()))
        self._steps[key] = step
        return step

    def _warn_replaced(self) -> None:
        """Once, when module fields set between calls made this function trace again
        ``max_traces`` times: each such set costs a trace."""
        self._replaced += 1
        if self._replaced != self._max or self._quiet:
            return
        warnings.warn(
            message(
                f"compiled {qualname(self.fn)} was traced again {self._max} times because "
                "module fields were set between its calls (a tensor or a value it held was "
                "replaced).",
                [("cause", "a module field set after the trace (model.name = ...)")],
                hint="change a parameter's or buffer's values in place with t.assign(...) "
                "(read live, no new trace); set module fields to reconfigure a model.",
            ),
            RetraceWarning,
            stacklevel=4,
        )

    def _warn_retrace(self, key: Any) -> None:
        if self._warned:
            return
        self._warned = True
        keys = (*self._steps, key)
        changing = [n for i, n in enumerate(self._names) if len({k[i] for k in keys}) > 1]
        warnings.warn(
            message(
                f"compiled {qualname(self.fn)} was traced {self._max + 1} times: its "
                "arguments' signature keeps changing.",
                [("changing", ", ".join(changing) or "closed-over tensors")],
                hint="give the argument a fixed shape, or name a value that changes on every "
                "call in static=() only if it really selects another program.",
            ),
            RetraceWarning,
            stacklevel=4,
        )


def _check_arguments(fn: object, static: object, max_traces: object, cuda_graph: object) -> None:
    hint = "tn.compile(fn, static=('name',), max_traces=8, cuda_graph=None)"
    if not callable(fn):
        raise bad_argument(CompileError, "cannot compile", "fn", "a function", fn, hint)
    names = [static] if isinstance(static, str) else static
    if not isinstance(names, Sequence) or not all(isinstance(n, str) for n in names):
        allowed = "a sequence of parameter names"
        raise bad_argument(CompileError, "cannot compile", "static", allowed, static, hint)
    if isinstance(max_traces, bool) or not isinstance(max_traces, int) or max_traces < 1:
        allowed = "an int >= 1"
        raise bad_argument(CompileError, "cannot compile", "max_traces", allowed, max_traces, hint)
    if cuda_graph is not None and not isinstance(cuda_graph, bool):
        allowed = "True, False or None (options.cuda_graphs)"
        raise bad_argument(CompileError, "cannot compile", "cuda_graph", allowed, cuda_graph, hint)


@overload
def compile(
    fn: Callable[P, R],
    *,
    static: Sequence[str] = (),
    max_traces: int = MAX_TRACES,
    cuda_graph: bool | None = None,
) -> Compiled[P, R]: ...
@overload
def compile(
    *, static: Sequence[str] = (), max_traces: int = MAX_TRACES, cuda_graph: bool | None = None
) -> Callable[[Callable[P, R]], Compiled[P, R]]: ...
def compile(
    fn: Callable[..., Any] | None = None,
    *,
    static: Sequence[str] = (),
    max_traces: int = MAX_TRACES,
    cuda_graph: bool | None = None,
) -> Any:
    """Compile ``fn``: trace it once per signature, replay the compiled Step after.

    ``static``: parameter names whose values select the program (part of the signature);
    ``max_traces``: signatures kept (a warning names the argument that keeps changing);
    ``cuda_graph``: replay a GPU step as one CUDA graph from its second call (None: as
    ``options.cuda_graphs``, on by default; ``graph_status`` says whether it does).
    See docs/programs.md and docs/gpu.md.

    >>> @tn.compile
    ... def step(x, y): ...
    """
    if fn is None:
        return lambda f: Compiled(f, static, max_traces, cuda_graph)
    return Compiled(fn, static, max_traces, cuda_graph)
