"""Random programs for the evaluator's differential fuzzer (#32), with numpy as the reference.

A program is Python source: a function ``body(A, B)`` over two (N, M) argument tensors, two
closed-over state tensors ``S0``/``S1`` of that shape and a closed-over (M, M) weight ``W``. Its
statements are what reuses memory, writes in place or shares views in the evaluator: gathers
(``concat``/``stack``, nested), rows ``x[i]``, per-sample loops (batched), layout views
(transpose, reshape, narrow), reductions, element-wise chains, assigns of a state or an
argument and of one of their rows, returned views of inputs, gradients with respect to a
tensor that may be the one passed as an argument or one assigned earlier. One source runs
three ways:

* numpy (the reference): ``ops`` is a shim of numpy functions, ``assign`` writes in place;
* typed_nn eager: every assign runs at once (``mat`` evaluates the values built so far first,
  as code that reads values before it writes their inputs does);
* typed_nn compiled: the body is ``tn.compile``\\ d, called twice.

Calls pass the arguments distinct, one tensor twice (``body(A, A)``), a state as an argument
(``body(S0, B)``) or two rows of one closed-over tensor (``body(R[0], R[1])``); the second call
may change which memory they share (``body(S1, B)`` after ``body(S0, B)``, ``body(A, B)`` after
``body(A, A)``, ``body(A, A)`` after ``body(R[0], R[1])``). ``run_program`` compares every way, and every call, with the reference;
``options.sanitize`` runs them under the sanitizer too, ``threads`` with every fused region split
across threads in tiny blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from helpers import split_on_threads

import typed_nn as tn
from typed_nn import ops as tn_ops
from typed_nn.evaluate import options
from typed_nn.tags import dim_of_rank

UNARY = ("tanh", "sin", "sigmoid", "relu", "square", "negative")
CALLS: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "distinct": (("A", "B"), ("A", "B")),
    "same twice": (("A", "A"), ("A", "A")),
    "state as argument": (("S0", "B"), ("S0", "B")),
    # the second call's argument is another closed-over tensor than the first's (a program
    # planned for one aliasing must not serve the other)
    "states swapped": (("S0", "B"), ("S1", "B")),
    "sharing changes": (("A", "A"), ("A", "B")),
    "state, then distinct": (("S0", "B"), ("A", "B")),
    # rows of one closed-over (2, N, M) tensor R: two parts of one memory, not one memory
    "rows of one tensor": (("R[0]", "R[1]"), ("R[0]", "R[1]")),
    "rows, then one tensor twice": (("R[0]", "R[1]"), ("A", "A")),
    "rows, then one row twice": (("R[0]", "R[1]"), ("R[0]", "R[0]")),
    # "~X": another tensor object over X's memory (a DLPack import of it, new at every call):
    # the memory, not the object, decides which arguments are one
    "distinct, then one memory imported twice": (("A", "B"), ("~A", "~A")),
    "distinct, then a tensor and an import of it": (("A", "B"), ("A", "~A")),
    "distinct, then an import of a state": (("A", "B"), ("~S0", "B")),
    "distinct, then an import of a row": (("A", "B"), ("~R[0]", "R[0]")),
}
"""How ``body`` is called: the names of its two arguments at the first and second call."""


@dataclass
class Program:
    """A random program: its source, its shapes, how it is called, and its seed."""

    source: str
    n: int
    m: int
    call: str
    seed: int

    def __str__(self) -> str:
        return f"# seed {self.seed}, N={self.n}, M={self.m}, call: {self.call}\n{self.source}"


class _Writer:
    """Builds one program's statements, keeping each variable's shape."""

    def __init__(self, rng: np.random.Generator, n: int, m: int) -> None:
        self.rng, self.n, self.m = rng, n, m
        self.lines: list[str] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.kept: list[str] = []
        self.count = 0

    def new(self, expr: str, shape: tuple[int, ...]) -> str:
        name = f"v{self.count}"
        self.count += 1
        self.lines.append(f"{name} = {expr}")
        self.shapes[name] = shape
        return name

    def pick(self, *shapes: tuple[int, ...]) -> str:
        """A variable of one of ``shapes`` (the leaves are always there)."""
        found = [v for v, s in self.shapes.items() if s in shapes]
        recent = found[-6:]  # recent values first: chains, not only fans out of the leaves
        return str(self.rng.choice(recent if self.rng.random() < 0.7 else found))

    def choice(self, options: tuple[str, ...]) -> str:
        return str(self.rng.choice(options))


def _table(w: _Writer) -> str:
    return w.pick((w.n, w.m))


def _statement(w: _Writer) -> None:
    """One random statement (see the module doc)."""
    n, m, rng = w.n, w.m, w.rng
    kind = w.choice(
        (
            "unary", "unary", "binary", "binary", "scale", "matmul", "concat", "nested",
            "stack", "row", "loop", "layout", "reduce", "assign", "assign_row", "keep",
            "spread", "classify", "tproduct", "assign_tensor", "assign_kept", "grad",
            "view_handed", "handle",
        )
    )  # fmt: skip
    if kind == "unary":
        x = w.pick((n, m), (m,), (2 * n, m))
        w.new(f"ops.{w.choice(UNARY)}({x})", w.shapes[x])
    elif kind == "binary":
        x = _table(w)
        y = w.pick((n, m), (m,), ())
        op = w.choice(("+", "-", "*"))
        w.new(f"({x} {op} {y}) * 0.5" if op != "*" else f"{x} * {y}", (n, m))
    elif kind == "scale":
        x = w.pick((n, m), (m,))
        w.new(f"{x} * {w.pick(())}", w.shapes[x])
    elif kind == "matmul":
        x = w.pick((n, m), (m,))
        w.new(f"ops.tanh({x} @ W)", w.shapes[x])
    elif kind == "tproduct":  # (W·xᵀ)ᵀ: written as x·Wᵀ where nothing else reads W·xᵀ
        x = w.pick((n, m))
        w.new(f"ops.transpose(W @ ops.transpose({x}))", (n, m))
    elif kind == "concat":
        x, y = _table(w), _table(w)
        w.new(f"ops.concat([ops.tanh({x}), ops.sin({y})])", (2 * n, m))
    elif kind == "nested":
        x, y, z = _table(w), _table(w), w.pick((2 * n, m))
        inner = f"ops.concat([ops.sin({x}), ops.cos({y})])"
        w.new(f"ops.concat([ops.tanh({z}), {inner}])", (4 * n, m))
    elif kind == "stack":
        x, y = _table(w), _table(w)
        v = w.new(f"ops.stack([ops.sin({x}), {y} * 2.0])", (2, n, m))
        w.new(f"ops.narrow({v}, 0, 1, 1)[0] + {v}[0] * 0.5", (n, m))
        if rng.random() < 0.5:  # items of rank 0 and 1 (a stacked item is a view, never a copy)
            a, b = w.pick((m,)), w.pick((m,))
            s = w.new(f"ops.stack([{a} @ {b}, ops.reduce_mean({x}), {a} @ ops.sin({b})])", (3,))
            w.new(f"ops.stack([ops.sin({a}), {s} @ ops.stack([{b}, {a}, {b}])])", (2, m))
    elif kind == "row":
        x = w.pick((n, m), (2 * n, m))
        w.new(f"{x}[{int(rng.integers(w.shapes[x][0]))}]", w.shapes[x][1:])
        if rng.random() < 0.3:  # a number: a row of a row of an input (a 0-d view, eagerly)
            i, j = int(rng.integers(n)), int(rng.integers(m))
            w.new(f"number_row({w.choice(('S0', 'A'))}, {i}, {j})", ())
    elif kind == "loop":  # a per-sample loop: batched into one product
        x = _table(w)
        w.new(f"ops.stack([ops.tanh({x}[i] @ W) * 0.5 for i in range({n})])", (n, m))
    elif kind == "layout":
        x = _table(w)
        how = w.choice(("transpose", "reshape", "narrow"))
        if how == "transpose":
            w.new(f"ops.transpose(ops.transpose({x}) * 1.5)", (n, m))
        elif how == "reshape":
            w.new(f"ops.reshape(ops.reshape({x}, ({n * m},)) * 0.5, ({n}, {m}))", (n, m))
        else:
            start = int(rng.integers(n))
            w.new(f"ops.narrow({x}, 0, {start}, {n - start})", (n - start, m))
    elif kind == "reduce":
        x = w.pick((n, m), (2 * n, m))
        if rng.random() < 0.5:
            w.new(f"ops.reduce_sum({x}, 0) * 0.25", (m,))
        else:
            w.new(f"ops.reduce_mean({x})", ())
    elif kind == "spread":  # a mean's gradient: element-wise ops of a repeated number
        w.new(f"-(ops.tile({w.pick(())}, ({n}, {m})) / 4.0) + 0.5", (n, m))
    elif kind == "classify":  # fit's step: probabilities and cross-entropy's backward
        w.new(f"classify(ops.tanh({_table(w)}))", (n, m))
    elif kind == "assign":
        target = w.choice(("S0", "S1", "A", "B"))
        w.lines.append(_materialise(w))
        w.lines.append(f"assign({target}, ops.tanh({_table(w)} + {target} * 0.5))")
    elif kind == "grad":
        # d sum(tanh(A) * s) / d s, s maybe the tensor passed as A (one leaf, as eagerly), maybe
        # assigned earlier (the gradient at its new value, none into what was assigned)
        if rng.random() < 0.3:  # with respect to a row, maybe of a tensor assigned earlier
            row = f"{w.choice(('S0', 'A'))}[{int(rng.integers(n))}]"
            w.new(f"grad_mix(A, {row})", (m,))
        else:
            w.new(f"grad_mix(A, {w.choice(('S0', 'S1', 'B'))})", (n, m))
    elif kind == "assign_tensor":  # a tensor assigned as it is: its value after earlier assigns
        target, source = w.choice(("S0", "S1", "A", "B")), w.choice(("S0", "S1", "A", "B"))
        if rng.random() < 0.5:
            source = f"ops.permute({source}, (0, 1))"  # an identity view: the tensor itself
        w.lines.append(_materialise(w))
        w.lines.append(f"assign({target}, {source})")
    elif kind == "assign_kept":  # a value both assigned and returned: the result is a copy
        target = w.choice(("S0", "S1", "A", "B"))
        v = w.new(f"ops.sin({_table(w)}) + {target} * 0.5", (n, m))
        w.lines.append(_materialise(w))
        w.lines.append(f"assign({target}, {v})")
        w.kept.append(v)
    elif kind == "view_handed":  # a view of an input computed inside a graph, then handed out
        source = w.choice(("S0", "S1", "A", "B"))
        if rng.random() < 0.5:
            v = w.new(f"ops.transpose({source})", (m, n))
        else:
            v = w.new(f"ops.reshape({source}, ({n * m},))", (n * m,))
        u = w.new(f"{v} * 1.5", w.shapes[v])
        w.lines.append(f"{u}, = mat({u})")
        w.lines.append(f"{v}, = mat({v})")  # must not change with the input's next assign
    elif kind == "handle":  # a registered value the assign of the same value evaluates
        target = w.choice(("S0", "S1", "A", "B"))
        w.lines.append(_materialise(w))
        how = w.choice(("ops.sin({}) * 0.5", "ops.transpose(ops.transpose({}))", "{} * 1.0"))
        value = how.format(_table(w))  # built twice (one value to CSE), named by neither: a
        handle = f"h{len(w.lines)}"  # lazy value would read the target after the write
        w.lines.append(f"{handle} = handle({value})")
        w.lines.append(f"assign({target}, {value})")
        w.kept.append(w.new(f"data({handle})", (n, m)))  # must not follow the target's writes
    elif kind == "assign_row":
        target, i = w.choice(("S0", "A")), int(rng.integers(n))
        w.lines.append(_materialise(w))
        w.lines.append(f"assign({target}[{i}], ops.sin({w.pick((m,))}) * 0.5)")
    else:  # a value returned: computed, or a view of an input (copied when returned)
        x = w.pick((n, m), (m,), (2 * n, m), ())
        if rng.random() < 0.3 or not x.startswith("v"):
            x = w.new(f"ops.transpose({w.choice(('A', 'B', 'S0', 'S1'))})", (m, n))
        w.kept.append(x)


def _materialise(w: _Writer) -> str:
    """``mat`` of every computed value so far (eager: evaluated before the write)."""
    names = [v for v in w.shapes if v.startswith("v")]
    if not names:
        return "pass"
    return f"{', '.join(names)}, = mat({', '.join(names)})"


def make_program(seed: int, steps: int = 14) -> Program:
    """The random program of ``seed``."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    w = _Writer(rng, n, m)
    for leaf in ("A", "B", "S0", "S1"):
        w.shapes[leaf] = (n, m)
    w.new("ops.reduce_mean(ops.tanh(A)) + 0.0", ())  # one value of each shape to start from
    w.new("ops.sin(B[0])", (m,))
    w.new("ops.concat([A, S1])", (2 * n, m))
    for _ in range(int(rng.integers(3, steps + 1))):
        _statement(w)
    computed = [v for v in w.shapes if v.startswith("v")]
    kept = list(dict.fromkeys(w.kept + computed[-1:]))
    if not kept:
        kept = [w.new("ops.tanh(A + B)", (n, m))]
    w.lines.append(f"return ({', '.join(kept)},)")
    source = "def body(A, B):\n" + "".join(f"    {line}\n" for line in w.lines)
    return Program(source, n, m, str(rng.choice(list(CALLS))), seed)


class _NumpyOps:
    """The ops a program uses, on numpy arrays (the reference). Layout ops copy: a node's value
    is what its operands held when it was built (a row ``x[i]`` of a tensor is a live view, as
    numpy's is)."""

    tanh, sin, cos, square, negative = np.tanh, np.sin, np.cos, np.square, np.negative

    @staticmethod
    def tile(x: Any, shape: tuple[int, ...]) -> Any:
        return np.broadcast_to(x, shape).copy()

    @staticmethod
    def sigmoid(x: Any) -> Any:
        return 1.0 / (1.0 + np.exp(-x))

    @staticmethod
    def relu(x: Any) -> Any:
        return np.maximum(x, 0.0)

    @staticmethod
    def concat(items: list[Any], axis: int = 0) -> Any:
        return np.concatenate(items, axis)

    @staticmethod
    def stack(items: list[Any], axis: int = 0) -> Any:
        return np.stack(items, axis)

    @staticmethod
    def transpose(x: Any) -> Any:
        return x.T.copy()

    @staticmethod
    def permute(x: Any, axes: tuple[int, ...]) -> Any:
        return np.transpose(x, axes).copy()

    @staticmethod
    def reshape(x: Any, shape: tuple[int, ...]) -> Any:
        return x.reshape(shape).copy()

    @staticmethod
    def narrow(x: Any, axis: int, start: int, length: int) -> Any:
        return x[(slice(None),) * axis + (slice(start, start + length),)].copy()

    @staticmethod
    def reduce_sum(x: Any, dims: int) -> Any:
        return x.sum(axis=dims)

    @staticmethod
    def reduce_mean(x: Any) -> Any:
        return np.asarray(x.mean())


def _labels(n: int, m: int) -> np.ndarray:
    """The class labels ``classify`` scores a (n, m) table against."""
    return np.arange(n) % m


def _numpy_classify(x: Any) -> Any:
    """``softmax(x) + d mean cross_entropy(x, labels) / dx``: ``2 p - onehot / n``."""
    n, m = x.shape
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return p + (p - np.eye(m)[_labels(n, m)]) / n


def _tn_classify(x: Any) -> Any:
    labels = tn.tensor(_labels(*x.shape), tn.Int64, tn.CPU, tn.Dim1)
    return tn_ops.softmax(x) + tn.grad(tn_ops.cross_entropy(x, labels), x)


def _numpy_grad_mix(a: Any, s: Any) -> Any:
    """``d sum(tanh(a) * s) / d s``, where ``a`` may be ``s`` itself (then both paths); a
    row ``s`` (broadcast over ``a``'s rows) is a variable of its own: the rows' sum."""
    g = np.tanh(a)
    if s.ndim < a.ndim:
        return g.sum(axis=0)
    return g + (1.0 - np.tanh(a) ** 2) * s if a is s else g


def _tn_grad_mix(a: Any, s: Any) -> Any:
    return tn.grad(tn_ops.reduce_sum(tn_ops.tanh(a) * s), s)


def _numpy_assign(target: Any, value: Any) -> None:
    target[...] = value


def _tn_assign(target: Any, value: Any) -> None:
    target.assign(value)


def _identity(*values: Any) -> tuple[Any, ...]:
    return values


def _identity_one(value: Any) -> Any:
    return value


def _registered(value: Any) -> Any:
    return value.eval_register()


def _registered_data(handle: Any) -> Any:
    return handle.data()


def _evaluated(*values: Any) -> tuple[Any, ...]:
    return tuple(tn.evaluate(v) if not isinstance(v, tn.Tensor) else v for v in values)


def _body(program: Program, namespace: dict[str, Any]) -> Callable[..., Any]:
    exec(compile(program.source, f"<fuzz program {program.seed}>", "exec"), namespace)
    fn: Callable[..., Any] = namespace["body"]
    return fn


def _inputs(program: Program) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(program.seed + 1)
    n, m = program.n, program.m
    arrays = {k: rng.uniform(-1, 1, (n, m)).astype(np.float32) for k in ("A", "B", "S0", "S1")}
    arrays["W"] = (rng.uniform(-1, 1, (m, m)) / m).astype(np.float32)
    arrays["R"] = rng.uniform(-1, 1, (2, n, m)).astype(np.float32)
    return arrays


STATES = ("A", "B", "S0", "S1", "R")
"""The tensors whose values after each call are compared (``R[0]``/``R[1]`` may be passed)."""


def _arguments(program: Program, scope: dict[str, Any], call: int) -> tuple[Any, Any]:
    """The call's two arguments: a tensor of ``scope``, or a row ``R[i]`` of one (a new view
    object at every call, as ``x[i]`` in a loop is)."""
    first, second = CALLS[program.call][call]
    return _argument(first, scope), _argument(second, scope)


def _argument(name: str, scope: dict[str, Any]) -> Any:
    imported = name.startswith("~")
    name = name.removeprefix("~")
    x = scope[name[0]][int(name[2:-1])] if name.endswith("]") else scope[name]
    if not imported:
        return x
    if isinstance(x, tn.Tensor):
        return tn.from_dlpack(np.from_dlpack(x), tn.Float32, tn.CPU, dim_of_rank(x.rank))
    return x.view()  # numpy's side: another object too (autodiff tells objects apart)


def _run_numpy(program: Program) -> list[list[np.ndarray]]:
    arrays = {k: v.astype(np.float64) for k, v in _inputs(program).items()}
    scope: dict[str, Any] = {"ops": _NumpyOps, "assign": _numpy_assign, "mat": _identity}
    scope["number_row"] = lambda x, i, j: x[i][j, ...]  # a live 0-d view, as typed_nn's
    scope["handle"] = scope["data"] = lambda v: v.copy()  # its value when registered
    scope["classify"], scope["grad_mix"] = _numpy_classify, _numpy_grad_mix
    scope.update(arrays)
    body = _body(program, scope)
    calls = []
    for call in range(2):
        out = body(*_arguments(program, scope, call))
        states = [scope[k].copy() for k in STATES]
        calls.append([np.array(o, copy=True) for o in out] + states)
    return calls


def _run_typed(program: Program, compiled: bool) -> list[list[np.ndarray]]:
    tensors = {
        k: tn.tensor(v, tn.Float32, tn.CPU, dim_of_rank(v.ndim))
        for k, v in _inputs(program).items()
    }
    scope: dict[str, Any] = {"ops": tn_ops, "assign": _tn_assign, "classify": _tn_classify}
    scope["grad_mix"] = _tn_grad_mix
    scope["number_row"] = lambda x, i, j: x[i][j]
    if compiled:  # no registration inside a trace: the value itself
        scope["handle"] = scope["data"] = _identity_one
    else:
        scope["handle"], scope["data"] = _registered, _registered_data
    scope["mat"] = _identity if compiled else _evaluated
    scope.update(tensors)
    body = _body(program, scope)
    fn = tn.compile(body) if compiled else body
    calls: list[list[np.ndarray]] = []
    held: list[tuple[Any, np.ndarray]] = []
    for call in range(2):
        args = _arguments(program, scope, call)
        out = [o if compiled else tn.evaluate(o) for o in fn(*args)]
        values = [o.numpy().copy() for o in out]
        # an input returned (or a row of one) is that live tensor, as in eager code; the
        # values computed stay valid after the next call
        inputs = [scope[k].numpy() for k in STATES]
        held += [
            (o, v)
            for o, v in zip(out, values, strict=True)
            if not any(np.shares_memory(o.numpy(), a) for a in inputs)
        ]
        states = [scope[k].numpy().copy() for k in STATES]
        calls.append(values + states)
    for o, v in held:  # results stay valid after the next call
        np.testing.assert_array_equal(o.numpy(), v, err_msg="a result changed after a later call")
    return calls


def run_program(program: Program, sanitize: bool = False, threads: int = 1) -> None:
    """Run ``program`` eager and compiled (``sanitize``: under the sanitizer; ``threads`` > 1:
    every fused region in blocks of 3 elements, split across that many threads) and compare
    every call's results and states with numpy's; raises AssertionError naming what differs."""
    want = _run_numpy(program)
    split = split_on_threads(threads, block=3) if threads > 1 else nullcontext()
    with options.using(sanitize=sanitize), split:
        for compiled in (False, True):
            got = _run_typed(program, compiled)
            how = "compiled" if compiled else "eager"
            for call, (g, r) in enumerate(zip(got, want, strict=True)):
                names = [f"result {k}" for k in range(len(g) - len(STATES))] + list(STATES)
                for name, a, b in zip(names, g, r, strict=True):
                    np.testing.assert_allclose(
                        a,
                        b,
                        rtol=2e-4,
                        atol=2e-5,
                        err_msg=f"{how}, call {call + 1}, {name}\n{program}",
                    )
