"""Random-graph checks of ``tn.grad``: gradients of random scalar functions against finite
differences, second order (Hessian-vector products) on smooth graphs, and one evaluation pass
of all gradients against evaluating each alone.

Each graph is a :class:`Program` drawn from a seed by numpy's ``Generator`` (deterministic; a
failure names its seed and prints the program): 1-3 float64 leaves of rank 0-3 (tensors, some
``make_dynamic`` ones or ScalableTensors of rows), then 3-10 ops picked from
the catalogue in :data:`MAKERS` (element-wise maths, ``+ - * /`` with MetaNN broadcasting and
Python numbers on either side, maximum, where, interpolate, reductions, dot / ``@``, layout
ops, softmax, nll_loss), operands chosen among earlier nodes so that sub-expressions get
shared. The nodes nothing consumed are reduced to the scalar ``y`` (``reduce_sum(node * W)``
with fixed random ``W``), so every leaf reaches ``y``. The gradients are checked along a random
direction per leaf against central differences of ``y`` (typed_nn evaluates ``y`` at the shifted
leaves), ``y`` against the numpy mirror, and the loss and all gradients evaluated in one plan
against each gradient taken and evaluated alone on a fresh copy of the graph (the evaluator
shares work between them).

A program is a list of steps that :func:`run` replays on any leaves: on typed_nn tensors (the
graph under test, rebuilt for every perturbed input of the finite differences) or on numpy
arrays (the mirror the generator uses to keep operands off kinks and domain edges: arguments of
log / sqrt / acosh / division are shifted by a number, relu / abs / maximum / reduce_max
operands by a constant tensor that moves them away from 0 and from ties, values past 4 are
scaled back by a power of two).

Re-run one graph with ``check_first_order(program(seed))`` or
``check_second_order(program(seed, smooth=True))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from helpers import untyped

import typed_nn as tn
from typed_nn.tags import dim_of_rank

Array = npt.NDArray[Any]
ops: Any = untyped.ops
"""The op catalogue without static types: programs choose ranks and parameters at run time."""

EPS = 1e-6
RTOL = 1e-5
MARGIN = 0.05
"""How far relu / abs operands stay from 0 and a maximum from the runner-up."""
LIMIT = 4.0
MAX_SIZE = 96
NUMBERS: tuple[float, ...] = (0.5, -1.5, 2.0, 3, -1, 0.25, 1.5)

FIRST_ORDER_BATCHES, SECOND_ORDER_BATCHES, PER_BATCH = 50, 10, 20
"""1000 first-order graphs and 200 second-order ones, in batches of 20 seeds."""
SECOND_ORDER_SEED0 = 100_000


# --- programs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """An operand: an earlier node (leaves first, then one node per step)."""

    node: int


@dataclass(frozen=True, eq=False)
class Const:
    """An operand: a fixed array (float64, or int64 for a where condition)."""

    value: Array


Arg = Ref | Const | float


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[Arg, ...]
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Program:
    seed: int
    leaves: list[Array]
    kinds: list[str]
    """Each leaf's data kind: ``tensor``, ``dynamic`` (``tn.make_dynamic`` of one) or
    ``scalable`` (a ``ScalableTensor`` of its rows); the gradients are taken by these objects."""
    steps: list[Step] = field(default_factory=list)
    shapes: list[tuple[int, ...]] = field(default_factory=list)

    def inputs(self, values: Sequence[Array]) -> list[Any]:
        """The leaves as typed_nn data of their kinds, holding ``values``."""
        return [leaf(kind, v) for kind, v in zip(self.kinds, values, strict=True)]

    def describe(self) -> str:
        lines = [f"seed {self.seed}"]
        for i, (x, kind) in enumerate(zip(self.leaves, self.kinds, strict=True)):
            lines.append(f"  %{i} = leaf {kind} {x.shape}")
        for j, step in enumerate(self.steps):
            i = len(self.leaves) + j
            args = ", ".join(_describe_arg(a) for a in step.args)
            params = "".join(f", {k}={v!r}" for k, v in step.params.items())
            lines.append(f"  %{i} = {step.op}({args}{params}) -> {self.shapes[i]}")
        return "\n".join(lines)

    def ops_used(self) -> set[str]:
        return {s.op for s in self.steps}


def _describe_arg(a: Arg) -> str:
    if isinstance(a, Ref):
        return f"%{a.node}"
    if isinstance(a, Const):
        return f"const{a.value.shape}" + ("[int]" if a.value.dtype.kind == "i" else "")
    return repr(a)


def run(
    p: Program,
    leaves: Sequence[Any],
    table: dict[str, Callable[..., Any]],
    const: Callable[..., Any],
) -> list[Any]:
    """Replay ``p`` on ``leaves``; every node, leaves first (the last one is ``y``)."""
    nodes = list(leaves)
    for step in p.steps:
        args = [
            nodes[a.node] if isinstance(a, Ref) else const(a.value) if isinstance(a, Const) else a
            for a in step.args
        ]
        nodes.append(table[step.op](*args, **step.params))
    return nodes


def typed(value: Array) -> Any:
    elem = tn.Int64 if value.dtype.kind == "i" else tn.Float64
    return untyped.tensor(value, elem, tn.CPU, dim_of_rank(value.ndim))


def leaf(kind: str, value: Array) -> Any:
    if kind == "dynamic":
        return tn.make_dynamic(typed(value))
    if kind == "scalable":
        return untyped.ScalableTensor([typed(row) for row in value])
    return typed(value)


def build(p: Program, leaves: Sequence[Any]) -> Any:
    """The typed_nn graph of ``p`` on typed leaves: its scalar ``y``."""
    return run(p, leaves, TYPED, typed)[-1]


def f_value(p: Program, leaves: Sequence[Array]) -> float:
    """``y`` at numpy ``leaves``, evaluated by typed_nn."""
    return float(build(p, p.inputs(leaves)).numpy())


# --- the two op tables: typed_nn and numpy -----------------------------------------------------


def _axes(rank: int, dims: int | tuple[int, ...] | None, first: int | None) -> tuple[int, ...]:
    if first is not None:
        return tuple(range(first))
    if dims is None:
        return tuple(range(rank))
    items = (dims,) if isinstance(dims, int) else dims
    return tuple(d % rank for d in items)


def _np_reduce(fn: Callable[..., Any]) -> Callable[..., Array]:
    def reduce(
        x: Array,
        dims: int | tuple[int, ...] | None = None,
        first: int | None = None,
        keep_dim: bool = False,
    ) -> Array:
        return np.asarray(fn(x, axis=_axes(x.ndim, dims, first), keepdims=keep_dim))

    return reduce


def _np_tile(x: Array, shape: tuple[int, ...], new_dims: tuple[int, ...] | None = None) -> Array:
    new = tuple(range(len(shape) - x.ndim)) if new_dims is None else new_dims
    kept = iter(x.shape)
    mute = tuple(1 if i in new else next(kept) for i in range(len(shape)))
    return np.tile(x.reshape(mute), tuple(n // m for n, m in zip(shape, mute, strict=True)))


def _np_softmax(x: Array, k: int) -> Array:
    axes = tuple(range(x.ndim - k, x.ndim))
    e = np.exp(x - x.max(axis=axes, keepdims=True))
    return np.asarray(e / e.sum(axis=axes, keepdims=True))


def _np_log_softmax(x: Array, k: int) -> Array:
    axes = tuple(range(x.ndim - k, x.ndim))
    shifted = x - x.max(axis=axes, keepdims=True)
    return np.asarray(shifted - np.log(np.exp(shifted).sum(axis=axes, keepdims=True)))


def _np_narrow(x: Array, axis: int, start: int, length: int) -> Array:
    return np.take(x, np.arange(start, start + length), axis=axis)


SAME: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "negative": lambda a: -a,
    "slice": lambda x, index: x[index],
}
"""Ops written the same way on typed_nn data and numpy arrays."""

NUMPY: dict[str, Callable[..., Any]] = {
    **SAME,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "square": np.square,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0.0),
    "abs": np.abs,
    "maximum": np.maximum,
    "where": lambda c, a, b: np.where(c != 0, a, b),
    "interpolate": lambda a, b, lam: a * lam + b * (1 - lam),
    "reduce_sum": _np_reduce(np.sum),
    "reduce_mean": _np_reduce(np.mean),
    "reduce_max": _np_reduce(np.max),
    "dot": lambda a, b, k: np.tensordot(a, b, k),
    "matmul": np.matmul,
    "permute": lambda x, order: np.transpose(x, order),
    "transpose": lambda x: x.T,
    "reshape": lambda x, shape: np.reshape(x, shape),
    "tile": _np_tile,
    "concat": lambda *items, axis: np.concatenate(items, axis),
    "stack": lambda *items, axis: np.stack(items, axis),
    "narrow": _np_narrow,
    "softmax": _np_softmax,
    "log_softmax": _np_log_softmax,
    "nll_loss": lambda t, p: -np.sum(t * np.log(p)) / np.sum(t),
}

TYPED: dict[str, Callable[..., Any]] = {
    **{name: getattr(ops, name) for name in NUMPY if name not in SAME and name != "matmul"},
    **SAME,
    "matmul": lambda a, b: a @ b,
    "concat": lambda *items, axis: ops.concat(list(items), axis),
    "stack": lambda *items, axis: ops.stack(list(items), axis),
}


# --- the generator -----------------------------------------------------------------------------


def _suffix(short: tuple[int, ...], long: tuple[int, ...]) -> bool:
    return len(short) <= len(long) and long[len(long) - len(short) :] == short


def broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """MetaNN's rule: the lower-rank shape equals the trailing dims of the other."""
    return _suffix(a, b) or _suffix(b, a)


def away_from_zero(v: Array) -> Array:
    """A constant ``c`` (``v``'s shape) with ``|v + c| >= MARGIN`` everywhere."""
    close = np.abs(v) < MARGIN
    return np.where(close, np.where(v >= 0, 2 * MARGIN, -2 * MARGIN), 0.0)


class Builder:
    """Draws one program, computing each node's value with numpy as it goes."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        base = tuple(int(d) for d in self.rng.integers(1, 5, 4))
        leaves = []
        for _ in range(int(self.rng.integers(1, 4))):
            rank = int(self.rng.integers(0, 4))
            leaves.append(self.rng.uniform(-1.5, 1.5, base[4 - rank :]))
        kinds = [
            "tensor" if x.ndim == 0 or r < 0.7 else "dynamic" if r < 0.85 else "scalable"
            for x, r in zip(leaves, self.rng.random(len(leaves)), strict=True)
        ]
        self.p = Program(seed, leaves, kinds, shapes=[x.shape for x in leaves])
        self.values: list[Array] = list(leaves)
        self.uses = [0] * len(leaves)

    # nodes

    def emit(self, op: str, *args: Arg, **params: Any) -> int:
        """Append a step; returns its node."""
        operands = [
            self.values[a.node] if isinstance(a, Ref) else a.value if isinstance(a, Const) else a
            for a in args
        ]
        value = np.asarray(NUMPY[op](*operands, **params), dtype=np.float64)
        assert np.all(np.isfinite(value)), f"generator: {op} gave non-finite values"
        for a in args:
            if isinstance(a, Ref):
                self.uses[a.node] += 1
        self.p.steps.append(Step(op, args, params))
        self.p.shapes.append(value.shape)
        self.values.append(value)
        self.uses.append(0)
        return len(self.values) - 1

    def shape(self, i: int) -> tuple[int, ...]:
        return self.values[i].shape

    def rank(self, i: int) -> int:
        return self.values[i].ndim

    def pick(self, accept: Callable[[tuple[int, ...]], bool] = lambda s: True) -> int | None:
        """A node whose shape ``accept`` takes: often one nothing consumes yet (deep graphs),
        else any (shared sub-expressions)."""
        nodes = [i for i, v in enumerate(self.values) if accept(v.shape)]
        if not nodes:
            return None
        fresh = [i for i in nodes if self.uses[i] == 0]
        if fresh and self.rng.random() < 0.6:
            nodes = fresh
        return nodes[int(self.rng.integers(len(nodes)))]

    def choice(self, items: Sequence[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def number(self) -> float:
        n: float = self.choice(NUMBERS)
        return n

    def const(self, shape: tuple[int, ...], low: float = -1.0, high: float = 1.0) -> Const:
        return Const(self.rng.uniform(low, high, shape))

    def operand(self, shape: tuple[int, ...]) -> Arg:
        """An operand that broadcasts with ``shape``: a node, or a constant of a suffix of it,
        or of it with a leading dim more (so ``shape`` is the one broadcast)."""
        r = self.rng.random()
        if r < 0.65:
            i = self.pick(lambda s: broadcasts(s, shape) and math.prod(s) <= MAX_SIZE)
            if i is not None:
                return Ref(i)
        if r < 0.85 and len(shape) < 4 and 2 * math.prod(shape) <= MAX_SIZE:
            return self.const((int(self.rng.integers(2, 4)), *shape))
        return self.const(shape[int(self.rng.integers(0, len(shape) + 1)) :])

    # guards

    def tame(self, i: int, limit: float = LIMIT) -> int:
        """``i`` scaled by a power of two when its values reach past ``limit``."""
        top = float(np.max(np.abs(self.values[i]), initial=0.0))
        if top <= limit:
            return i
        return self.emit("mul", Ref(i), 2.0 ** -math.ceil(math.log2(top / limit)))

    def at_least(self, i: int, low: float) -> int:
        """``i + n`` with a number ``n`` that puts every value at or above ``low``."""
        least = float(np.min(self.values[i]))
        if least >= low:
            return i
        return self.emit("add", Ref(i), round(low - least + 0.25, 2))

    def within(self, i: int, bound: float) -> int:
        top = float(np.max(np.abs(self.values[i]), initial=0.0))
        if top <= bound:
            return i
        return self.emit("mul", Ref(i), round(0.95 * bound / top, 4))

    def shifted(self, i: int, c: Array) -> int:
        """``i + c`` for a constant ``c`` (``i`` itself when ``c`` is all zeros)."""
        return self.emit("add", Ref(i), Const(c)) if np.any(c) else i

    def off_zero(self, i: int) -> int:
        return self.shifted(i, away_from_zero(self.values[i]))

    # op makers: each returns the new node, or None where it does not apply

    def unary(self, op: str) -> int | None:
        x = self.pick()
        assert x is not None
        if op == "exp":
            x = self.tame(x, 1.5)
        elif op in ("log", "sqrt"):
            x = self.at_least(x, 0.3)
        elif op == "acosh":
            x = self.at_least(x, 1.3)
        elif op in ("asin", "acos"):
            x = self.within(x, 0.9)
        elif op == "tan":
            x = self.within(x, 1.2)
        elif op in ("relu", "abs"):
            x = self.off_zero(x)
        return self.emit(op, Ref(x))

    def arithmetic(self, op: str) -> int | None:
        a = self.pick(lambda s: math.prod(s) <= MAX_SIZE)
        assert a is not None
        form = self.rng.random()
        if form < 0.2:  # number on the left
            if op == "div":
                a = self.at_least(a, 0.5)
            return self.emit(op, self.number(), Ref(a))
        if form < 0.4:  # number on the right
            return self.emit(op, Ref(a), self.number())
        b = self.operand(self.shape(a))
        if op == "div":  # the denominator stays off zero
            if isinstance(b, Ref):
                b = Ref(self.at_least(b.node, 0.5))
            elif isinstance(b, Const):
                b = Const(np.abs(b.value) + 0.5)
        pair = (Ref(a), b) if self.rng.random() < 0.5 or op == "div" else (b, Ref(a))
        if op == "div" and self.rng.random() < 0.3 and isinstance(b, Ref):
            pair = (b, Ref(self.at_least(a, 0.5)))
        return self.emit(op, *pair)

    def maximum(self) -> int | None:
        a = self.pick()
        assert a is not None
        if self.rng.random() < 0.3:
            n = self.number()
            a = self.shifted(a, away_from_zero(self.values[a] - n))
            return self.emit("maximum", *((Ref(a), n) if self.rng.random() < 0.5 else (n, Ref(a))))
        b = self.operand(self.shape(a))
        bv = self.values[b.node] if isinstance(b, Ref) else b.value if isinstance(b, Const) else b
        a = self.shifted(a, away_from_zero(self.values[a] - bv))
        return self.emit("maximum", *((Ref(a), b) if self.rng.random() < 0.5 else (b, Ref(a))))

    def where(self) -> int | None:
        a = self.pick(lambda s: math.prod(s) <= MAX_SIZE)
        assert a is not None
        b = self.operand(self.shape(a))
        if isinstance(b, float):
            return None
        shape = max(
            self.shape(a), b.value.shape if isinstance(b, Const) else self.shape(b.node), key=len
        )
        cond = Const(self.rng.integers(0, 3, shape[int(self.rng.integers(0, len(shape) + 1)) :]))
        pair = (Ref(a), b) if self.rng.random() < 0.5 else (b, Ref(a))
        return self.emit("where", cond, *pair)

    def interpolate(self) -> int | None:
        a = self.pick(lambda s: math.prod(s) <= MAX_SIZE)
        assert a is not None
        shape = self.shape(a)
        b = self.operand(shape)
        lam = self.operand(shape)
        if isinstance(b, float) or isinstance(lam, float):
            return None
        shapes = [shape] + [
            x.value.shape if isinstance(x, Const) else self.shape(x.node) for x in (b, lam)
        ]
        longest = max(shapes, key=len)
        if not all(_suffix(s, longest) for s in shapes):
            return None
        args: list[Arg] = [Ref(a), b, lam]
        order = self.rng.permutation(3)
        return self.emit("interpolate", *(args[int(k)] for k in order))

    def reduce(self, op: str) -> int | None:
        x = self.pick(lambda s: len(s) >= 1)
        if x is None:
            return None
        rank = self.rank(x)
        form = self.choice(("all", "dims", "dims", "first"))
        params: dict[str, Any] = {}
        if form == "dims":
            count = int(self.rng.integers(1, rank + 1))
            dims = [int(d) for d in self.rng.permutation(rank)[:count]]
            dims = [d - rank if self.rng.random() < 0.3 else d for d in dims]
            params["dims"] = dims[0] if count == 1 and self.rng.random() < 0.5 else tuple(dims)
        elif form == "first":
            params["first"] = int(self.rng.integers(1, rank + 1))
        if self.rng.random() < 0.4:
            params["keep_dim"] = True
        if op == "reduce_max":
            axes = _axes(rank, params.get("dims"), params.get("first"))
            x = self.shifted(x, bump_maxima(self.values[x], axes))
        return self.emit(op, Ref(x), **params)

    def dot(self) -> int | None:
        a = self.pick(lambda s: len(s) >= 1)
        if a is None:
            return None
        shape = self.shape(a)
        k = int(self.rng.integers(1, min(2, len(shape)) + 1))
        left = self.rng.random() < 0.3
        contracted = shape[:k] if left else shape[len(shape) - k :]
        if self.rng.random() < 0.2 and len(shape) <= 2:  # a full contraction with itself
            return self.emit("dot", Ref(a), Ref(a), k=len(shape))
        room = 4 - (len(shape) - k)
        rest = tuple(
            int(d) for d in self.rng.integers(1, 4, int(self.rng.integers(0, min(2, room) + 1)))
        )
        partner = self.pick(
            lambda s: (
                (s[len(s) - k :] if left else s[:k]) == contracted
                and len(s) > k - 1
                and len(s) - k + len(shape) - k <= 4
                and math.prod(s) <= MAX_SIZE
            )
        )
        if partner is None or self.rng.random() < 0.4:
            b: Arg = self.const(rest + contracted if left else contracted + rest)
        else:
            b = Ref(partner)
        args: tuple[Arg, Arg] = (b, Ref(a)) if left else (Ref(a), b)
        rhs = args[1]
        if isinstance(rhs, Ref):
            rhs_rank = len(self.shape(rhs.node))
        else:
            rhs_rank = np.ndim(rhs.value if isinstance(rhs, Const) else rhs)
        as_matmul = k == 1 and self.rng.random() < 0.5
        if as_matmul and rhs_rank <= 2:  # where @ (numpy's matmul) and dot agree
            return self.emit("matmul", *args)
        return self.emit("dot", *args, k=k)

    def permute(self) -> int | None:
        x = self.pick(lambda s: len(s) >= 2)
        if x is None:
            return None
        if self.rank(x) == 2 and self.rng.random() < 0.5:
            return self.emit("transpose", Ref(x))
        order = tuple(int(d) for d in self.rng.permutation(self.rank(x)))
        if order == tuple(range(self.rank(x))):
            order = order[1:] + order[:1]
        return self.emit("permute", Ref(x), order=order)

    def reshape(self) -> int | None:
        x = self.pick()
        assert x is not None
        size = math.prod(self.shape(x))
        factors = [f for f in range(1, size + 1) if size % f == 0]
        dims: list[int] = []
        rest = size
        for _ in range(int(self.rng.integers(0, 3))):
            f = self.choice([d for d in factors if rest % d == 0])
            dims.append(f)
            rest //= f
        dims.append(rest)
        order = [int(i) for i in self.rng.permutation(len(dims))]
        target = [dims[i] for i in order]
        if self.rng.random() < 0.4:
            target[int(self.rng.integers(len(target)))] = -1
        return self.emit("reshape", Ref(x), shape=tuple(target))

    def tile(self) -> int | None:
        x = self.pick(lambda s: len(s) <= 3 and 2 * math.prod(s) <= MAX_SIZE)
        if x is None:
            return None
        shape = self.shape(x)
        new = int(self.rng.integers(0, min(2, 4 - len(shape)) + 1))
        rank = len(shape) + new
        new_dims = tuple(sorted(int(d) for d in self.rng.permutation(rank)[:new]))
        kept = iter(shape)
        target = tuple(
            int(self.rng.integers(2, 4))
            if i in new_dims
            else next(kept) * int(self.rng.integers(1, 3))
            for i in range(rank)
        )
        if math.prod(target) > 2 * MAX_SIZE or target == shape:
            return None
        if new_dims == tuple(range(new)) and self.rng.random() < 0.5:
            return self.emit("tile", Ref(x), shape=target)
        return self.emit("tile", Ref(x), shape=target, new_dims=new_dims)

    def slice(self) -> int | None:
        x = self.pick(lambda s: len(s) >= 1)
        if x is None:
            return None
        n = self.shape(x)[0]
        return self.emit("slice", Ref(x), index=int(self.rng.integers(-n, n)))

    def narrow(self) -> int | None:
        x = self.pick(lambda s: any(d >= 2 for d in s))
        if x is None:
            return None
        shape = self.shape(x)
        axis = self.choice([d for d, n in enumerate(shape) if n >= 2])
        length = int(self.rng.integers(1, shape[axis]))
        start = int(self.rng.integers(0, shape[axis] - length + 1))
        axis = axis - len(shape) if self.rng.random() < 0.3 else axis
        return self.emit("narrow", Ref(x), axis=axis, start=start, length=length)

    def concat(self) -> int | None:
        x = self.pick(lambda s: len(s) >= 1 and math.prod(s) <= MAX_SIZE // 2)
        if x is None:
            return None
        shape = self.shape(x)
        axis = int(self.rng.integers(0, len(shape)))

        def fits(s: tuple[int, ...]) -> bool:
            return len(s) == len(shape) and all(
                a == b for d, (a, b) in enumerate(zip(s, shape, strict=True)) if d != axis
            )

        items: list[Arg] = [Ref(x)]
        for _ in range(int(self.rng.integers(1, 3))):
            other = self.pick(fits)
            if other is not None and self.rng.random() < 0.7:
                items.append(Ref(other))
            else:
                c = list(shape)
                c[axis] = int(self.rng.integers(1, 3))
                items.append(self.const(tuple(c)))
        order = self.rng.permutation(len(items))
        if self.rng.random() < 0.3:
            axis -= len(shape)
        return self.emit("concat", *(items[int(i)] for i in order), axis=axis)

    def stack(self) -> int | None:
        x = self.pick(lambda s: len(s) <= 3 and math.prod(s) <= MAX_SIZE // 3)
        if x is None:
            return None
        shape = self.shape(x)
        items: list[Arg] = [Ref(x)]
        for _ in range(int(self.rng.integers(1, 3))):
            other = self.pick(lambda s: s == shape)
            items.append(
                Ref(other) if other is not None and self.rng.random() < 0.7 else self.const(shape)
            )
        order = self.rng.permutation(len(items))
        return self.emit(
            "stack", *(items[int(i)] for i in order), axis=int(self.rng.integers(0, len(shape) + 1))
        )

    def softmax(self, op: str) -> int | None:
        x = self.pick(lambda s: len(s) >= 1)
        if x is None:
            return None
        k = int(self.rng.integers(1, min(2, self.rank(x)) + 1))
        return self.emit(op, Ref(x), k=k)

    def nll_loss(self) -> int | None:
        x = self.pick(lambda s: len(s) >= 1)
        if x is None:
            return None
        k = int(self.rng.integers(1, min(2, self.rank(x)) + 1))
        pred = self.emit("softmax", Ref(x), k=k)
        shape = self.shape(pred)
        truth: Arg
        t = self.pick(lambda s: s == shape) if self.rng.random() < 0.3 else None
        if t is not None:  # a node as the truth weights: positive, and differentiated too
            truth = Ref(self.at_least(t, 0.2))
        else:  # one-hot-like weights, some zero
            w = self.rng.uniform(0.0, 1.0, shape) * (self.rng.random(shape) < 0.6)
            w.flat[int(self.rng.integers(w.size))] = 1.0
            truth = Const(w)
        return self.emit("nll_loss", truth, Ref(pred))

    # the whole graph

    def finish(self) -> Program:
        """``y``: the sum of ``reduce_sum(node * W)`` over the nodes nothing consumed."""
        sinks = [i for i, n in enumerate(self.uses) if n == 0]
        terms = []
        for i in sinks:
            shape = self.shape(i)
            w = self.const(shape, 0.5, 1.5)
            if not shape:
                terms.append(self.emit("mul", Ref(i), w) if self.rng.random() < 0.5 else i)
                continue
            form = self.rng.random()
            if form < 0.15 and len(shape) <= 2:
                terms.append(self.emit("dot", Ref(i), w, k=len(shape)))
            elif form < 0.3:
                terms.append(self.emit("reduce_mean", Ref(self.emit("mul", w, Ref(i)))))
            else:
                terms.append(self.emit("reduce_sum", Ref(self.emit("mul", Ref(i), w))))
        y = terms[0]
        for t in terms[1:]:
            y = self.emit("add", Ref(y), Ref(t))
        if not self.p.steps:  # y is a Scalar leaf: give it one op
            y = self.emit("mul", Ref(y), 2.0)
        return self.p


def bump_maxima(v: Array, axes: tuple[int, ...]) -> Array:
    """A constant that lifts the first maximum of each reduced group by ``2 * MARGIN`` (so it
    leads the runner-up by that much)."""
    other = [d for d in range(v.ndim) if d not in axes]
    perm = (*other, *axes)
    moved = np.transpose(v, perm)
    flat = moved.reshape(-1, math.prod(v.shape[d] for d in axes))
    bump = np.zeros_like(flat)
    bump[np.arange(flat.shape[0]), flat.argmax(axis=1)] = 2 * MARGIN
    return np.transpose(bump.reshape(moved.shape), np.argsort(perm))


UNARY = ("exp", "log", "sqrt", "square", "sin", "cos", "tan", "tanh", "sigmoid", "asin", "acos")
UNARY2 = ("asinh", "acosh", "negative")
KINKED = ("relu", "abs")

MAKERS: list[tuple[float, str, Callable[[Builder], int | None]]] = [
    *((1.0, op, lambda b, op=op: b.unary(op)) for op in UNARY + UNARY2),
    *((1.5, op, lambda b, op=op: b.unary(op)) for op in KINKED),
    *((3.0, op, lambda b, op=op: b.arithmetic(op)) for op in ("add", "sub", "mul", "div")),
    (1.5, "maximum", Builder.maximum),
    (1.5, "where", Builder.where),
    (1.5, "interpolate", Builder.interpolate),
    *((1.5, op, lambda b, op=op: b.reduce(op)) for op in ("reduce_sum", "reduce_mean")),
    (1.5, "reduce_max", lambda b: b.reduce("reduce_max")),
    (3.0, "dot", Builder.dot),
    (1.5, "permute", Builder.permute),
    (1.5, "reshape", Builder.reshape),
    (1.5, "tile", Builder.tile),
    (1.5, "slice", Builder.slice),
    (1.5, "narrow", Builder.narrow),
    (1.5, "concat", Builder.concat),
    (1.5, "stack", Builder.stack),
    *((1.5, op, lambda b, op=op: b.softmax(op)) for op in ("softmax", "log_softmax")),
    (1.5, "nll_loss", Builder.nll_loss),
]
"""(weight, name, maker): the catalogue the generator draws from."""

NOT_SMOOTH = {"relu", "abs", "maximum", "reduce_max"}


def program(seed: int, smooth: bool = False) -> Program:
    """The random program of ``seed``; ``smooth``: only ops with continuous second derivatives."""
    b = Builder(seed)
    makers = [(w, m) for w, name, m in MAKERS if not (smooth and name in NOT_SMOOTH)]
    weights = np.array([w for w, _ in makers])
    count = int(b.rng.integers(3, 11))
    done = 0
    while done < count:
        _, make = makers[int(b.rng.choice(len(makers), p=weights / weights.sum()))]
        node = make(b)
        if node is not None and math.prod(b.shape(node)) <= 2 * MAX_SIZE:
            b.tame(node)
            done += 1
    return b.finish()


# --- the checks ---------------------------------------------------------------------------------


def directions(p: Program, salt: int) -> list[Array]:
    rng = np.random.default_rng([p.seed, salt])
    return [rng.standard_normal(x.shape) for x in p.leaves]


def check_first_order(p: Program) -> None:
    """``tn.grad(y, leaves)`` against central differences along a random direction per leaf;
    the mirror's ``y``; an extra input ``y`` never reaches (a ZeroTensor); and all gradients
    evaluated in one pass against each evaluated alone, on a fresh graph."""
    leaves = p.inputs(p.leaves)
    spare = typed(np.ones((2, 3)))
    y = build(p, leaves)
    wrt = [*leaves, spare]
    if p.seed % 3 == 0:
        grads = list(tn.grad(y, tuple(wrt)))
    elif p.seed % 3 == 1:
        grads = tn.grad(y, wrt)
    else:
        named = tn.grad(y, {f"x{i}": w for i, w in enumerate(wrt)})
        grads = [named[f"x{i}"] for i in range(len(wrt))]
    handles = [y.eval_register(), *(g.eval_register() for g in grads)]
    tn.EvalPlan.eval()
    together = [np.asarray(h.data().numpy()) for h in handles]

    mirror = run(p, p.leaves, NUMPY, lambda v: v)[-1]
    np.testing.assert_allclose(together[0], mirror, rtol=1e-10, atol=1e-12, err_msg="y")
    assert isinstance(grads[-1], tn.ZeroTensor)
    np.testing.assert_array_equal(together[-1], np.zeros((2, 3)))

    for i, x in enumerate(p.leaves):
        fresh = p.inputs(p.leaves)
        alone = np.asarray(tn.grad(build(p, fresh), fresh[i]).numpy())
        assert alone.shape == x.shape, (i, alone.shape, x.shape)
        np.testing.assert_allclose(
            together[1 + i], alone, rtol=1e-12, atol=1e-12, err_msg=f"one pass vs alone, leaf {i}"
        )

    for i, (x, v) in enumerate(zip(p.leaves, directions(p, 1), strict=True)):
        up = [x + EPS * v if j == i else w for j, w in enumerate(p.leaves)]
        down = [x - EPS * v if j == i else w for j, w in enumerate(p.leaves)]
        fd = (f_value(p, up) - f_value(p, down)) / (2 * EPS)
        g = together[1 + i]
        ad = float(np.sum(g * v))
        scale = float(np.sum(np.abs(g * v))) + abs(fd)
        assert abs(ad - fd) <= RTOL * scale + 1e-8 * (1 + abs(float(together[0]))), (
            f"leaf {i} {x.shape}: <grad, v> = {ad!r}, finite differences {fd!r}"
        )


def gradients_at(p: Program, leaves: Sequence[Array]) -> list[Array]:
    xs = p.inputs(leaves)
    return [np.asarray(g.numpy()) for g in tn.grad(build(p, xs), tuple(xs))]


def check_second_order(p: Program) -> None:
    """``tn.grad(sum_i reduce_sum(grad_i * v_i), leaves)`` (a Hessian-vector product) against
    central differences of the gradient along ``v``."""
    vs = directions(p, 2)
    xs = p.inputs(p.leaves)
    grads = tn.grad(build(p, xs), tuple(xs))
    total: Any = None
    for g, v in zip(grads, vs, strict=True):
        term = ops.reduce_sum(g * typed(v))
        total = term if total is None else total + term
    hvp = [np.asarray(h.numpy()) for h in tn.grad(total, tuple(xs))]
    up = gradients_at(p, [x + EPS * v for x, v in zip(p.leaves, vs, strict=True)])
    down = gradients_at(p, [x - EPS * v for x, v in zip(p.leaves, vs, strict=True)])
    fds = [(a - b) / (2 * EPS) for a, b in zip(up, down, strict=True)]
    scale = max(float(np.max(np.abs(a), initial=0.0)) for a in [*hvp, *fds])
    for i, (h, fd) in enumerate(zip(hvp, fds, strict=True)):
        assert h.shape == fd.shape, (i, h.shape, fd.shape)
        np.testing.assert_allclose(
            h, fd, rtol=RTOL, atol=RTOL * scale + 1e-7, err_msg=f"Hessian-vector product, leaf {i}"
        )


def run_batch(seeds: range, check: Callable[[Program], None], smooth: bool) -> None:
    failures = []
    for seed in seeds:
        p = program(seed, smooth)
        try:
            check(p)
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}\n{p.describe()}")
    if failures:
        pytest.fail(f"{len(failures)} of {len(seeds)} graphs failed:\n\n" + "\n\n".join(failures))


@pytest.mark.parametrize("batch", range(FIRST_ORDER_BATCHES))
def test_gradients_of_random_graphs_match_finite_differences(batch: int) -> None:
    run_batch(range(batch * PER_BATCH, (batch + 1) * PER_BATCH), check_first_order, smooth=False)


@pytest.mark.parametrize("batch", range(SECOND_ORDER_BATCHES))
def test_hessian_vector_products_of_random_smooth_graphs(batch: int) -> None:
    seeds = range(
        SECOND_ORDER_SEED0 + batch * PER_BATCH, SECOND_ORDER_SEED0 + (batch + 1) * PER_BATCH
    )
    run_batch(seeds, check_second_order, smooth=True)


# --- regressions found by the random graphs ------------------------------------------------------


def test_gradient_reaches_a_tensor_through_its_row_view() -> None:
    """Seeds 6, 123, 463, ... shrunk: ``x[i]`` of a principal tensor is computed at once (a view
    of its memory, MetaNN's sub-tensor), and ``tn.grad`` took the view for unrelated data: the
    gradient of ``x`` was zero. A view now records its tensor and row, and the engine reads it
    as ``slice(x, i)``."""
    x = typed(np.array([0.5, -1.0]))
    np.testing.assert_array_equal(tn.grad(x[-2] * 3.0, x).numpy(), [3.0, 0.0])
    np.testing.assert_array_equal(tn.grad(x[1], x).numpy(), [0.0, 1.0])  # y is the view itself

    m = typed(np.arange(6.0).reshape(2, 3))
    row = m[1]
    y = ops.reduce_sum(row * row[0])  # y = m10 * (m10 + m11 + m12): a view of a view, fan-out
    g_m, g_row = tn.grad(y, (m, row))
    np.testing.assert_array_equal(g_m.numpy(), [[0.0, 0.0, 0.0], [15.0, 3.0, 3.0]])
    np.testing.assert_array_equal(g_row.numpy(), [15.0, 3.0, 3.0])  # by the view's identity

    # second order: d/dm (grad . v) with v = e_10 is the row m10 of the Hessian
    v = typed(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))
    hvp = tn.grad(ops.reduce_sum(tn.grad(y, m) * v), m)
    np.testing.assert_array_equal(hvp.numpy(), [[0.0, 0.0, 0.0], [2.0, 1.0, 1.0]])
