"""``tn.compile``: trace a function once per signature into a Step; replay the Step.

The signature: each tensor argument's element, device and shape; float arguments (and tuples
of floats) are run-time numbers; other arguments, and those named in ``static=``, by value.
A call that fits a traced signature's Step (:meth:`Step.guard`) binds its arrays into that
Step's program and runs it: no node built, nothing analysed (docs/programs.md).
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from ..data.module import replaced as replaced_fields
from ..data.tensor import TensorLike
from ..errors import CompileError, RetraceWarning, bad_argument, message
from ..tracing import state
from .step import Step, signature
from .trace import qualname

__all__ = ["Compiled", "compile"]

P = ParamSpec("P")
R = TypeVar("R")
_Obj = TypeVar("_Obj")
_Rest = ParamSpec("_Rest")

MAX_TRACES = 8
"""Signatures a compiled function keeps by default (the least recently used is dropped past it)."""


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
        self._arity = len(self._names)
        self._plain = all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in self._signature.parameters.values()
        )
        """Positional parameters only: a call's values are its arguments in order; else they
        are flattened (:func:`_flat_call`)."""
        self._calls: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self._max = max_traces
        self._steps: list[Step] = []
        """The traced Steps (one per signature, and per memory layout where it writes), the
        most recently used first."""
        self._quiet = self._warned = quiet
        self._replaced = 0
        """Traces made again because module fields were set between calls."""
        self._lock = threading.RLock()
        self.traces = 0
        """How many times ``fn`` was traced."""
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if state.trace is not None:
            return self.fn(*args, **kwargs)  # inside another trace: part of its graph
        result: R
        with self._lock:  # a Step's program serves one call at a time
            steps = self._steps
            if steps and not kwargs and self._plain:  # most calls repeat the last signature
                fits = steps[0].guard(args)
                if fits is not None:
                    result = steps[0].run(fits[0], fits[1], args)
                    return result
            call, names, values = self._bind(args, kwargs)
            for step in steps:  # the most recently used first
                fits = step.guard(values)
                if fits is not None:
                    steps.remove(step)
                    steps.insert(0, step)
                    result = step.run(fits[0], fits[1], values)
                    return result
            key, arrays, numbers = signature(self.fn, names, self._static, values)
            result = self._trace(key, values, call, names).run(arrays, numbers, values)
        return result

    def prepare(self, *args: P.args, **kwargs: P.kwargs) -> None:
        """Trace ``fn`` for these arguments' signature now, without running it (a call of
        that signature then runs at once; an error the trace raises, such as a shape error,
        is raised here, before anything is written)."""
        with self._lock:
            call, names, values = self._bind(args, kwargs)
            if not any(step.guard(values) is not None for step in self._steps):
                key = signature(self.fn, names, self._static, values)[0]
                self._trace(key, values, call, names)

    @overload
    def __get__(self, obj: None, owner: object = None) -> Compiled[P, R]: ...
    @overload
    def __get__(
        self: Callable[Concatenate[_Obj, _Rest], R], obj: _Obj, owner: object = None
    ) -> Callable[_Rest, R]: ...
    def __get__(self, obj: object, owner: object = None) -> Any:
        """A compiled method: bound to ``obj``, as a function is (``obj`` is an argument,
        by value: one trace per object). Typed as a method: on the class, the Compiled
        itself; on an instance, ``fn``'s parameters after the first, and its return type.
        (``self`` is typed as a callable, not as ``Compiled[Concatenate[...], R]``: pyrefly
        and ty match only the former.)"""
        return self if obj is None else types.MethodType(self, obj)

    def _bind(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Callable[..., Any], list[str], Any]:
        """What runs ``fn`` on the call's values, their names, and the values: the arguments
        in order, or (keyword-only, ``*args``, ``**kwargs`` parameters) flattened, one per
        tensor or number, the call's shape last."""
        if self._plain and not kwargs and len(args) == self._arity:
            return self.fn, self._names, args
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise CompileError(
                message(
                    f"cannot call compiled {qualname(self.fn)}: {err}.",
                    [("signature", f"{qualname(self.fn)}{self._signature}")],
                    hint="call it as you would call the function itself.",
                )
            ) from err
        bound.apply_defaults()
        if self._plain:
            return self.fn, self._names, [bound.arguments[n] for n in self._names]
        names, values, shape = _flat_call(self._signature, bound.arguments)
        call = self._calls.get(shape)
        if call is None:
            call = self._calls[shape] = _unflattening(self.fn, shape)
        return call, [*names, CALL], [*values, shape]

    @property
    def _last(self) -> Step | None:
        """The last call's Step."""
        return self._steps[0] if self._steps else None

    @property
    def graph_status(self) -> str:
        """Whether the last call's program replays as a CUDA graph: ``replaying a CUDA
        graph``, ``waiting: ...`` (it is captured at its second call), or ``plain: <why
        not>`` (docs/gpu.md)."""
        last = self._last
        return "not traced yet" if last is None else last.graph_status

    def clear(self) -> None:
        """Forget every traced signature (the next call traces again; ``traces`` goes on
        counting)."""
        self._steps.clear()
        self._warned = self._quiet

    def _trace(
        self, key: tuple[Any, ...], values: Any, call: Callable[..., Any], names: list[str]
    ) -> Step:
        for stale in [s for s in self._steps if s.key == key and s.stale()]:
            self._steps.remove(stale)
            if stale.replaced != replaced_fields[0]:
                self._replaced += 1
                if self._replaced == self._max:
                    self._warn(
                        f"again {self._max} times because module fields were set between its "
                        "calls (a tensor or a value it held was replaced).",
                        ("cause", "a module field set after the trace (model.name = ...)"),
                        "change a parameter's or buffer's values in place with t.assign(...) "
                        "(read live, no new trace); set module fields to reconfigure a model.",
                    )
        if len(self._steps) >= self._max:
            if not self._warned:
                self._warned = True
                keys = [s.key for s in self._steps] + [key]
                width = min(len(k) for k in keys)
                changing = [n for i, n in enumerate(names[:width]) if len({k[i] for k in keys}) > 1]
                tensors_by_value = [
                    n for n, v in zip(names, values, strict=False) if _holds_tensors(v)
                ]
                self._warn(
                    f"{self._max + 1} times: its arguments' signature keeps changing.",
                    ("changing", ", ".join(changing) or "closed-over tensors"),
                    f"pass the tensors of {', '.join(tensors_by_value)} as separate arguments "
                    "or *args (a tuple is compared by value: new tensors are a new trace)."
                    if tensors_by_value
                    else "give the argument a fixed shape, or name a value that changes on "
                    "every call in static=() only if it really selects another program.",
                )
            self._steps.pop()  # the least recently used
        self.traces += 1
        step = Step(call, names, self._static | {CALL}, key, values, self._cuda_graph)
        self._steps.insert(0, step)
        return step

    def _warn(self, what: str, cause: tuple[str, str], hint: str) -> None:
        if not self._quiet:
            warnings.warn(
                message(f"compiled {qualname(self.fn)} was traced {what}", [cause], hint=hint),
                RetraceWarning,
                stacklevel=4,  # the caller of the compiled function
            )


def _holds_tensors(value: object) -> bool:
    """A tuple with a tensor in it (compared by value in a signature)."""
    return type(value) is tuple and any(isinstance(v, TensorLike) for v in value)


CALL = "<call>"
"""The name of a flattened call's last value: its shape (which parameter each value is)."""


def _flat_call(
    sig: inspect.Signature, arguments: dict[str, Any]
) -> tuple[list[str], list[Any], tuple[Any, ...]]:
    """Names and values, one per positional or keyword-only parameter and per ``*args`` /
    ``**kwargs`` item, and the call's shape: (positional count, ``*args`` count, keyword-only
    names, ``**kwargs`` keys)."""
    names: list[str] = []
    values: list[Any] = []
    positional, extra, keyword, keys = 0, 0, [], []
    for name, p in sig.parameters.items():
        v = arguments[name]
        if p.kind is p.VAR_POSITIONAL:
            names += [f"{name}[{i}]" for i in range(len(v))]
            values += v
            extra = len(v)
        elif p.kind is p.VAR_KEYWORD:
            names += [f"{name}[{k!r}]" for k in v]
            values += v.values()
            keys = list(v)
        else:
            names.append(name)
            values.append(v)
            if p.kind is p.KEYWORD_ONLY:
                keyword.append(name)
            else:
                positional += 1
    return names, values, (positional, extra, tuple(keyword), tuple(keys))


def _unflattening(fn: Callable[..., Any], shape: tuple[Any, ...]) -> Callable[..., Any]:
    """``fn`` called on flattened values (:func:`_flat_call`; the shape, last, dropped)."""
    positional, extra, keyword, keys = shape
    n = positional + extra

    @functools.wraps(fn)
    def call(*flat: Any) -> Any:
        named = dict(zip(keyword, flat[n : n + len(keyword)], strict=True))
        more = dict(zip(keys, flat[n + len(keyword) : -1], strict=True))
        return fn(*flat[:n], **named, **more)

    call.__tn_call_of__ = fn  # type: ignore[attr-defined]  # whose names a trace reads
    return call


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
