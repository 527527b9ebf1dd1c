"""Random well-typed expression graphs with a plain-numpy mirror (issue 3's differential harness).

``random_graphs()`` is a hypothesis strategy of :class:`Graph`: a DAG of typed_nn expressions
built over the op catalogue, each node carrying the value numpy computes for it alongside
(same dtype, same Python numbers). The test evaluates the graph's roots with typed_nn and
compares with :func:`check_graph`; the evaluator's optimisations can be switched on and off
around the same call.

How graphs stay well typed and numerically tame:

* one random base shape of rank 4 (dims 1..4); every node's shape is a suffix of it, so any two
  nodes broadcast by MetaNN's trailing-dims rule and ranks 0..4 mix freely;
* operands with a restricted domain go through a transform built from ops under test
  (``log(square(x) + 0.5)``, ``asin(sin(x) * 0.9)``, ``acosh(square(x) + 1.25)``, ...);
* a node whose values grow past 64 is scaled by an exact power of two (``x * 2**-k``).

Adding an op is one entry in :data:`CATALOGUE`: element-wise ops through :func:`unary`,
:func:`binary` and :func:`grad_op` (a builder, a numpy mirror, the operand domains), other ops
through a small maker that draws their parameters so that the result's shape is again a suffix
of the base shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from helpers import tolerance, untyped
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import typed_nn as tn
from typed_nn.tags import FloatTag, dim_of_rank

Array = npt.NDArray[Any]
Expr = tn.TensorLike[Any, Any, Any]
Draw = st.DrawFn

ops: Any = untyped.ops
"""The op catalogue without static types: graphs pick ranks and parameters at run time."""

LIMIT = 64.0
NUMBERS = (0.5, -1.5, 2.0, 3, -1, 0.25, 1, 0)
NONZERO_NUMBERS = tuple(n for n in NUMBERS if n != 0)


@dataclass(frozen=True)
class Node:
    """A typed_nn expression and the value numpy computes for it."""

    expr: Expr
    value: Array

    @property
    def rank(self) -> int:
        return self.value.ndim


@dataclass(frozen=True)
class Domain:
    """Where an operand's values must lie, and the transform (itself made of ops) that puts any
    value there."""

    name: str
    typed: Callable[[Expr], Expr]
    mirror: Callable[[Array], Array]

    def apply(self, node: Node) -> Node:
        if self.name == "any":
            return node
        return Node(self.typed(node.expr), arr(self.mirror(node.value)))


ANY = Domain("any", lambda x: x, lambda v: v)
POSITIVE = Domain("positive", lambda x: ops.square(x) + 0.5, lambda v: np.square(v) + 0.5)
UNIT = Domain("unit", lambda x: ops.sin(x) * 0.9, lambda v: np.sin(v) * 0.9)
ABOVE_ONE = Domain("above_one", lambda x: ops.square(x) + 1.25, lambda v: np.square(v) + 1.25)
BOUNDED = Domain("bounded", lambda x: ops.sin(x), np.sin)


@dataclass
class Graph:
    """A random expression DAG: ``nodes`` in build order, ``roots`` to evaluate."""

    elem: type[FloatTag]
    base: tuple[int, ...]
    rng: np.random.Generator
    device: type[tn.DeviceTag] = tn.CPU
    nodes: list[Node] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    roots: list[Node] = field(default_factory=list)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.elem.dtype

    def shape(self, rank: int) -> tuple[int, ...]:
        """The base shape's suffix of ``rank`` dims."""
        return self.base[len(self.base) - rank :]

    def describe(self) -> str:
        return f"{self.elem.__name__} base {self.base}:\n  " + "\n  ".join(self.steps)


def arr(value: Any) -> Array:
    """numpy returns scalars for 0-d results; mirrors keep arrays."""
    return np.asarray(value)


# --- leaves ------------------------------------------------------------------------------------


def leaf(draw: Draw, g: Graph, rank: int | None = None) -> Node:
    """A fresh data object of a random kind and rank (values in [-2, 2])."""
    if rank is None:
        rank = draw(st.integers(0, 4))
    shape = g.shape(rank)
    kinds = ["tensor", "tensor", "tensor", "zero", "constant", "dynamic"]
    if rank >= 1:
        kinds.append("scalable")
    if rank == 1:
        kinds.append("bias")
    kind = draw(st.sampled_from(kinds))
    values = g.rng.uniform(-2.0, 2.0, shape).astype(g.dtype)
    dim = dim_of_rank(rank)
    node: Node
    if kind == "tensor":
        node = Node(tn.tensor(values, g.elem, g.device, dim), values)
    elif kind == "zero":
        node = Node(untyped.ZeroTensor(shape, g.elem, g.device), np.zeros(shape, g.dtype))
    elif kind == "constant":
        c = float(values.flat[0]) if values.size else 1.0
        value = np.full(shape, c, g.dtype)
        node = Node(untyped.ConstantTensor(tn.scalar(c, g.elem, g.device), shape), value)
    elif kind == "dynamic":
        node = Node(tn.make_dynamic(tn.tensor(values, g.elem, g.device, dim)), values)
    elif kind == "scalable":
        item_dim = dim_of_rank(rank - 1)
        items = [tn.tensor(v, g.elem, g.device, item_dim) for v in values]
        node = Node(untyped.ScalableTensor(items), values)
    else:
        pos = draw(st.integers(0, shape[0] - 1))
        c = float(values[0])
        value = np.zeros(shape, g.dtype)
        value[pos] = c
        node = Node(tn.BiasVector(shape[0], pos, tn.scalar(c, g.elem, g.device)), value)
    g.steps.append(f"leaf {kind} {shape}")
    return node


def pick(draw: Draw, g: Graph, accept: Callable[[tuple[int, ...]], bool] = lambda s: True) -> Node:
    """A node of the graph whose shape ``accept`` takes (so sub-expressions get shared) or,
    sometimes, a fresh leaf of such a shape."""
    candidates = [n for n in g.nodes if accept(n.value.shape)]
    if candidates and draw(st.integers(0, 4)) > 0:
        return draw(st.sampled_from(candidates))
    ranks = [r for r in range(5) if accept(g.shape(r))]
    return leaf(draw, g, draw(st.sampled_from(ranks)))


def number(draw: Draw, domain: Domain) -> float | int:
    """A Python number operand; a domain other than ANY only receives non-zero numbers that the
    domain accepts (positive ones, or ones in (-1, 1) / above 1)."""
    if domain.name == "any":
        return draw(st.sampled_from(NUMBERS))
    if domain.name == "unit":
        return draw(st.sampled_from((0.5, -0.25)))
    if domain.name == "above_one":
        return draw(st.sampled_from((1.5, 3)))
    if domain.name == "bounded":
        return draw(st.sampled_from((0.5, -1)))
    return draw(st.sampled_from((0.5, 2.0, 3, 0.25)))


# --- op makers ---------------------------------------------------------------------------------

Maker = Callable[[Draw, Graph], Node]


@dataclass(frozen=True)
class OpSpec:
    """One catalogue entry: ``make`` draws operands and parameters and returns the new node."""

    name: str
    make: Maker


def unary(
    name: str, build: Callable[[Expr], Expr], mirror: Callable[[Array], Array], domain: Domain = ANY
) -> OpSpec:
    def make(draw: Draw, g: Graph) -> Node:
        x = domain.apply(pick(draw, g))
        return Node(build(x.expr), arr(mirror(x.value)))

    return OpSpec(name, make)


def binary(
    name: str,
    build: Callable[[Any, Any], Expr],
    mirror: Callable[[Any, Any], Array],
    domains: tuple[Domain, Domain] = (ANY, ANY),
    *,
    numbers: bool = True,
) -> OpSpec:
    """``build(a, b)`` with MetaNN broadcasting; a Python number may stand on either side."""

    def make(draw: Draw, g: Graph) -> Node:
        at = draw(st.sampled_from((None, None, 0, 1))) if numbers else None
        typed: list[Any] = []
        mirrored: list[Any] = []
        for i, domain in enumerate(domains):
            if i == at:
                n = number(draw, domain)
                typed.append(n)
                mirrored.append(n)
            else:
                x = domain.apply(pick(draw, g))
                typed.append(x.expr)
                mirrored.append(x.value)
        return Node(build(*typed), arr(mirror(*mirrored)))

    return OpSpec(name, make)


def grad_op(name: str, mirror: Callable[[Array, Array], Array], domain: Domain = ANY) -> OpSpec:
    """``ops.<name>(g, x)``: result shaped like ``x``; ``g`` may have a lower rank."""

    def make(draw: Draw, g: Graph) -> Node:
        x = domain.apply(pick(draw, g))
        grad = pick(draw, g, lambda s: len(s) <= x.rank)
        return Node(getattr(ops, name)(grad.expr, x.expr), arr(mirror(grad.value, x.value)))

    return OpSpec(name, make)


def make_dot(draw: Draw, g: Graph) -> Node:
    """``dot`` / ``@`` in three shape-keeping forms: ``a . W`` and ``W . a`` with a fresh weight
    whose dims are the contracted ones twice, and the full contraction of two same-shaped nodes
    into a scalar."""
    a = pick(draw, g, lambda s: len(s) >= 1)
    form = draw(st.sampled_from(("right", "left", "full")))
    if form == "full" and a.rank <= 2:
        b = pick(draw, g, lambda s: s == a.value.shape)
        return Node(ops.dot(a.expr, b.expr, a.rank), arr(np.tensordot(a.value, b.value, a.rank)))
    k = draw(st.integers(1, min(2, a.rank)))
    form = "right" if form == "full" else form
    dims = a.value.shape[a.rank - k :] if form == "right" else a.value.shape[:k]
    w = g.rng.uniform(-1, 1, dims + dims).astype(g.dtype)
    weight = untyped.tensor(w, g.elem, g.device, dim_of_rank(2 * k))
    if form == "left":
        return Node(ops.dot(weight, a.expr, k), arr(np.tensordot(w, a.value, k)))
    expr = a.expr @ weight if k == 1 and draw(st.booleans()) else ops.dot(a.expr, weight, k)
    return Node(expr, arr(np.tensordot(a.value, w, k)))


def make_slice(draw: Draw, g: Graph) -> Node:
    """``x[i]`` (negative ``i`` too): drops the leading dim, so the shape stays a suffix."""
    x = pick(draw, g, lambda s: len(s) >= 1)
    n = x.value.shape[0]
    i = draw(st.integers(-n, n - 1))
    return Node(x.expr[i], arr(x.value[i]))


def reduce_op(name: str, mirror: Callable[..., Array]) -> OpSpec:
    """Reduce the leading ``j`` dims (as ``first=j`` or as ``dims``), or everything."""

    def make(draw: Draw, g: Graph) -> Node:
        x = pick(draw, g, lambda s: len(s) >= 1)
        j = draw(st.integers(1, x.rank))
        form = draw(st.sampled_from(("first", "dims", "negative", "all")))
        fn = getattr(ops, name)
        if form == "all":
            return Node(fn(x.expr), arr(mirror(x.value, axis=None)))
        axes = tuple(range(j))
        if form == "first":
            expr = fn(x.expr, first=j)
        elif form == "dims":
            expr = fn(x.expr, axes[0] if j == 1 else axes)
        else:
            expr = fn(x.expr, tuple(a - x.rank for a in axes))
        return Node(expr, arr(mirror(x.value, axis=axes)))

    return OpSpec(name, make)


def _softmax(v: Array, k: int) -> Array:
    axes = tuple(range(v.ndim - k, v.ndim))
    e = np.exp(v - v.max(axis=axes, keepdims=True))
    return arr(e / e.sum(axis=axes, keepdims=True))


def _log_softmax(v: Array, k: int) -> Array:
    axes = tuple(range(v.ndim - k, v.ndim))
    shifted = v - v.max(axis=axes, keepdims=True)
    return arr(shifted - np.log(np.exp(shifted).sum(axis=axes, keepdims=True)))


def softmax_op(name: str, mirror: Callable[[Array, int], Array]) -> OpSpec:
    def make(draw: Draw, g: Graph) -> Node:
        x = pick(draw, g, lambda s: len(s) >= 1)
        k = draw(st.integers(1, x.rank))
        return Node(getattr(ops, name)(x.expr, k), mirror(x.value, k))

    return OpSpec(name, make)


def softmax_grad_op(name: str, mirror: Callable[[Array, Array, int], Array]) -> OpSpec:
    def make(draw: Draw, g: Graph) -> Node:
        y = pick(draw, g, lambda s: len(s) >= 1)
        grad = pick(draw, g, lambda s: s == y.value.shape)
        k = draw(st.integers(1, y.rank))
        return Node(getattr(ops, name)(grad.expr, y.expr, k), mirror(grad.value, y.value, k))

    return OpSpec(name, make)


def _softmax_grad(g: Array, y: Array, k: int) -> Array:
    axes = tuple(range(y.ndim - k, y.ndim))
    return arr(y * (g - (g * y).sum(axis=axes, keepdims=True)))


def _log_softmax_grad(g: Array, y: Array, k: int) -> Array:
    axes = tuple(range(y.ndim - k, y.ndim))
    return arr(g - np.exp(y) * g.sum(axis=axes, keepdims=True))


def make_tile(draw: Draw, g: Graph) -> Node:
    """Tile a node to a longer suffix of the base shape (new leading dims)."""
    x = pick(draw, g, lambda s: len(s) < 4)
    target = g.shape(draw(st.integers(x.rank + 1, 4)))
    return Node(ops.tile(x.expr, target), arr(np.broadcast_to(x.value, target).copy()))


def _weight(g: Graph, shape: tuple[int, ...]) -> tuple[Expr, Array]:
    values = g.rng.uniform(0.5, 1.5, shape).astype(g.dtype)
    return untyped.tensor(values, g.elem, g.device, dim_of_rank(len(shape))), values


def make_permute(draw: Draw, g: Graph) -> Node:
    """``permute_inv(permute(x, order) * W, order)`` with a fresh ``W`` of the permuted shape
    (so a wrong permute cannot cancel against a wrong permute_inv), or the same with
    ``transpose`` for a matrix."""
    x = pick(draw, g, lambda s: len(s) >= 2)
    order = tuple(draw(st.permutations(range(x.rank))))
    if x.rank == 2 and draw(st.booleans()):
        order = (1, 0)
        w, wv = _weight(g, x.value.shape[::-1])
        expr = ops.transpose(ops.transpose(x.expr) * w)
    else:
        w, wv = _weight(g, tuple(x.value.shape[i] for i in order))
        expr = ops.permute_inv(ops.permute(x.expr, order) * w, order)
    value = np.transpose(np.transpose(x.value, order) * wv, np.argsort(order))
    return Node(expr, arr(value))


def make_reshape(draw: Draw, g: Graph) -> Node:
    """``reshape(reshape(x, (-1,)) * w, shape)`` with a fresh vector ``w`` and one -1."""
    x = pick(draw, g, lambda s: len(s) >= 1)
    w, wv = _weight(g, (x.value.size,))
    back = list(x.value.shape)
    back[draw(st.integers(0, x.rank - 1))] = -1
    expr = ops.reshape(ops.reshape(x.expr, (-1,)) * w, tuple(back))
    return Node(expr, arr((x.value.reshape(-1) * wv).reshape(x.value.shape)))


def make_astype(draw: Draw, g: Graph) -> Node:
    """Round trip through the other float type, with an op computed there."""
    x = pick(draw, g)
    other = tn.Float64 if g.elem is tn.Float32 else tn.Float32
    inner = ops.astype(x.expr, other) + 1.0
    value = (x.value.astype(other.dtype) + 1.0).astype(g.dtype)
    return Node(ops.astype(inner, g.elem), arr(value))


def make_stack(draw: Draw, g: Graph) -> Node:
    """Stack as many same-shaped nodes as the base dim in front of them (so the result's shape
    is a suffix again)."""
    x = pick(draw, g, lambda s: len(s) < 4)
    n = g.shape(x.rank + 1)[0]
    items = [x] + [pick(draw, g, lambda s: s == x.value.shape) for _ in range(n - 1)]
    return Node(ops.stack([i.expr for i in items]), arr(np.stack([i.value for i in items])))


def make_concat(draw: Draw, g: Graph) -> Node:
    """``concat([a, b], 0)``, then row ``i`` plus row ``i + n``, stacked: ``a + b`` through a
    join and slices."""
    a = pick(draw, g, lambda s: len(s) >= 1)
    b = pick(draw, g, lambda s: s == a.value.shape)
    joined = ops.concat([a.expr, b.expr], draw(st.sampled_from((0, -a.rank))))
    n = a.value.shape[0]
    expr = ops.stack([joined[i] + joined[i + n] for i in range(n)])
    return Node(expr, arr(a.value + b.value))


def make_where(draw: Draw, g: Graph) -> Node:
    cond, a, b = (pick(draw, g) for _ in range(3))
    return Node(
        ops.where(cond.expr, a.expr, b.expr), arr(np.where(cond.value != 0, a.value, b.value))
    )


def make_interpolate(draw: Draw, g: Graph) -> Node:
    a, b, lam = (pick(draw, g) for _ in range(3))
    expr = ops.interpolate(a.expr, b.expr, lam.expr)
    return Node(expr, arr(a.value * lam.value + b.value * (1 - lam.value)))


def make_nll_loss(draw: Draw, g: Graph) -> Node:
    truth = POSITIVE.apply(pick(draw, g))
    pred = POSITIVE.apply(pick(draw, g, lambda s: s == truth.value.shape))
    value = -np.sum(truth.value * np.log(pred.value)) / np.sum(truth.value)
    return Node(ops.nll_loss(truth.expr, pred.expr), arr(value))


def make_nll_loss_grad(draw: Draw, g: Graph) -> Node:
    grad = pick(draw, g, lambda s: s == ())
    truth = POSITIVE.apply(pick(draw, g))
    pred = POSITIVE.apply(pick(draw, g, lambda s: s == truth.value.shape))
    value = (-grad.value / np.sum(truth.value)) * truth.value / pred.value
    return Node(ops.nll_loss_grad(grad.expr, truth.expr, pred.expr), arr(value))


def make_cross_entropy_grad(draw: Draw, g: Graph) -> Node:
    """``softmax(x) + grad(cross_entropy(x, labels), x)`` over a matrix: the evaluator's
    fused backward (from the softmax beside it, its mean's gradient one number)."""
    x = BOUNDED.apply(pick(draw, g, lambda s: len(s) == 2))
    rows, classes = x.value.shape
    picked = g.rng.integers(0, classes, rows)
    labels = untyped.tensor(picked, tn.Int64, g.device, tn.Dim1)
    reduction = draw(st.sampled_from(["mean", "sum"]))
    loss = ops.cross_entropy(x.expr, labels, reduction=reduction)
    shifted = np.exp(x.value - x.value.max(axis=1, keepdims=True))
    p = shifted / shifted.sum(axis=1, keepdims=True)
    grad = (p - np.eye(classes, dtype=g.dtype)[picked]) / (rows if reduction == "mean" else 1)
    return Node(ops.softmax(x.expr) + tn.grad(loss, x.expr), arr((p + grad).astype(g.dtype)))


def _sigmoid(v: Array) -> Array:
    return arr(1 / (1 + np.exp(-v)))


CATALOGUE: tuple[OpSpec, ...] = (
    # arithmetic (operators; numbers on either side)
    binary("add", lambda a, b: a + b, np.add),
    binary("sub", lambda a, b: a - b, np.subtract),
    binary("mul", lambda a, b: a * b, np.multiply),
    binary("div", lambda a, b: a / b, np.true_divide, (ANY, POSITIVE)),
    unary("negative", lambda x: -x, np.negative),
    unary("abs", ops.abs, np.abs),
    unary("sign", ops.sign, np.sign),
    # math
    unary("exp", ops.exp, np.exp, BOUNDED),
    unary("log", ops.log, np.log, POSITIVE),
    unary("sqrt", ops.sqrt, np.sqrt, POSITIVE),
    unary("square", ops.square, np.square),
    unary("sin", ops.sin, np.sin),
    unary("cos", ops.cos, np.cos),
    unary("tan", ops.tan, np.tan, BOUNDED),
    unary("asin", ops.asin, np.arcsin, UNIT),
    unary("acos", ops.acos, np.arccos, UNIT),
    unary("asinh", ops.asinh, np.arcsinh),
    unary("acosh", ops.acosh, np.arccosh, ABOVE_ONE),
    unary("erf", ops.erf, lambda v: np.vectorize(math.erf, otypes=[v.dtype])(v)),
    # gradients of the math ops: g * f'(x)
    grad_op("abs_grad", lambda g, x: g * np.sign(x)),
    grad_op("exp_grad", lambda g, x: g * np.exp(x), BOUNDED),
    grad_op("log_grad", lambda g, x: g / x, POSITIVE),
    grad_op("sqrt_grad", lambda g, x: g / (2 * np.sqrt(x)), POSITIVE),
    grad_op("square_grad", lambda g, x: g * (2 * x)),
    grad_op("sin_grad", lambda g, x: g * np.cos(x)),
    grad_op("cos_grad", lambda g, x: -g * np.sin(x)),
    grad_op("tan_grad", lambda g, x: g / np.square(np.cos(x)), BOUNDED),
    grad_op("asin_grad", lambda g, x: g / np.sqrt(1 - np.square(x)), UNIT),
    grad_op("acos_grad", lambda g, x: -g / np.sqrt(1 - np.square(x)), UNIT),
    grad_op("asinh_grad", lambda g, x: g / np.sqrt(np.square(x) + 1)),
    grad_op("acosh_grad", lambda g, x: g / np.sqrt(np.square(x) - 1), ABOVE_ONE),
    # structure
    OpSpec("dot", make_dot),
    OpSpec("slice", make_slice),
    # activations (sigmoid_grad / tanh_grad take the forward OUTPUT y)
    unary("sigmoid", ops.sigmoid, _sigmoid),
    unary("tanh", ops.tanh, np.tanh),
    unary("relu", ops.relu, lambda v: np.maximum(v, 0)),
    grad_op("sigmoid_grad", lambda g, y: g * y * (1 - y)),
    grad_op("tanh_grad", lambda g, y: g * (1 - np.square(y))),
    grad_op("relu_grad", lambda g, x: np.where(x > 0, g, 0).astype(x.dtype)),
    # softmax family and loss
    softmax_op("softmax", _softmax),
    softmax_op("log_softmax", _log_softmax),
    softmax_grad_op("softmax_grad", _softmax_grad),
    softmax_grad_op("log_softmax_grad", _log_softmax_grad),
    OpSpec("nll_loss", make_nll_loss),
    OpSpec("nll_loss_grad", make_nll_loss_grad),
    OpSpec("cross_entropy_grad", make_cross_entropy_grad),
    # reductions
    reduce_op("reduce_sum", np.sum),
    reduce_op("reduce_mean", np.mean),
    reduce_op("reduce_max", np.max),
    # selection
    binary("maximum", ops.maximum, np.maximum),
    binary("minimum", ops.minimum, np.minimum),
    OpSpec("where", make_where),
    OpSpec("interpolate", make_interpolate),
    # layout, joins, conversion
    OpSpec("tile", make_tile),
    OpSpec("permute", make_permute),
    OpSpec("reshape", make_reshape),
    OpSpec("stack", make_stack),
    OpSpec("concat", make_concat),
    OpSpec("astype", make_astype),
)
"""Every op the differential test draws from; one entry per op."""


def tame(g: Graph, node: Node) -> Node:
    """Scale a node whose values grew past LIMIT by an exact power of two."""
    peak = float(np.max(np.abs(node.value))) if node.value.size else 0.0
    if peak <= LIMIT:
        return node
    scale = 2.0 ** -math.ceil(math.log2(peak / 8))
    g.steps.append(f"  scaled by {scale}")
    return Node(node.expr * scale, arr(node.value * scale))


def graph_settings(max_examples: int) -> settings:
    """How the differential tests run :func:`random_graphs`: reproducible (derandomized, no
    example database), no deadline, large graphs allowed."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


@st.composite
def random_graphs(
    draw: Draw,
    catalogue: Sequence[OpSpec] = CATALOGUE,
    max_ops: int = 10,
    elems: Sequence[type[FloatTag]] = (tn.Float32, tn.Float64),
    device: type[tn.DeviceTag] = tn.CPU,
) -> Graph:
    """A random graph over ``catalogue``: 1-3 leaves, 1..max_ops op nodes, 1-3 roots, its data
    on ``device`` (the mirror's values are numpy arrays wherever the data live)."""
    elem = draw(st.sampled_from(list(elems)))
    base = tuple(draw(st.lists(st.integers(1, 4), min_size=4, max_size=4)))
    g = Graph(elem, base, np.random.default_rng(draw(st.integers(0, 2**32 - 1))), device)
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        for _ in range(draw(st.integers(1, 3))):
            g.nodes.append(leaf(draw, g))
        for _ in range(draw(st.integers(1, max_ops))):
            spec = draw(st.sampled_from(list(catalogue)))
            g.steps.append(spec.name)
            node = spec.make(draw, g)
            assert node.value.dtype == g.dtype, f"mirror of {spec.name} gave {node.value.dtype}"
            assert node.expr.shape == node.value.shape, (
                f"{spec.name}: {node.expr!r} vs {node.value.shape}"
            )
            g.nodes.append(tame(g, node))
    extra = draw(st.lists(st.sampled_from(g.nodes), max_size=2))
    g.roots = [g.nodes[-1], *extra]
    return g


def check_graph(g: Graph, got: Sequence[Array]) -> None:
    """Assert that typed_nn's values of ``g.roots`` match the numpy mirror within tolerance."""
    tol = tolerance(g.elem)
    for i, (root, value) in enumerate(zip(g.roots, got, strict=True)):
        assert value.shape == root.value.shape, (
            f"root {i}: shape {value.shape} vs {root.value.shape}"
        )
        assert value.dtype == g.dtype, f"root {i}: dtype {value.dtype} vs {g.dtype}"
        scale = 1.0 + float(np.max(np.abs(root.value))) if root.value.size else 1.0
        np.testing.assert_allclose(
            value,
            root.value,
            rtol=tol["rtol"],
            atol=tol["atol"] * scale,
            err_msg=f"root {i} ({root.expr!r}) of graph\n{g.describe()}",
        )
