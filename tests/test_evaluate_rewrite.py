"""Rewrites: each rule fires (seen in ``stats.rewrites`` and the compiled plan) and gives the
numbers the unrewritten graph gives."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t32, untyped

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import last_program, options, stats
from typed_nn.evaluate.cache import invalidate_caches
from typed_nn.evaluate.rewrite import (
    FOLDED_BIAS,
    FOLDED_BIAS_GRADIENT,
    MAX_COPIED_ELEMENTS,
    MIN_FOLDED_ELEMENTS,
    MIN_TRANSPOSED_READS,
    RULES,
    SCALAR_BROADCAST,
    SHARED_TRANSPOSE,
    TRANSPOSED_PRODUCT,
)
from typed_nn.tags import dim_of_rank

Expr = tn.TensorLike[Any, Any, Any]
rng = np.random.default_rng(1)
X = rng.uniform(0.5, 2.0, size=(3, 4)).astype(np.float32)
M = rng.normal(size=(4, 5)).astype(np.float32)


def _both(
    build: Callable[[], Expr],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], list[str]]:
    """(rewritten value, unrewritten value, rules fired) for a freshly built expression."""
    stats.reset()
    fast = tn.evaluate(build()).numpy()
    fired = list(last_program().fired)  # type: ignore[union-attr]
    invalidate_caches()
    with options.using(rewrite=False):
        slow = tn.evaluate(build()).numpy()
        assert last_program().fired == []  # type: ignore[union-attr]
    return fast, slow, fired


def _cross_entropy_grad() -> Expr:
    x = t32(M)
    labels = tn.tensor(np.array([0, 4, 2, 4]), tn.Int64, tn.CPU, tn.Dim1)
    return tn.grad(ops.cross_entropy(x, labels), x)


def _log_exp_gradient(values: Any) -> Expr:
    x = t32(values)
    return tn.grad(ops.reduce_sum(ops.log(ops.exp(x)) * t32(values + 1.0)), x)


def test_log_of_exp_has_the_identitys_gradient_where_exp_overflows() -> None:
    """The forward is rewritten to x; its backward (g / exp(x)) * exp(x) was NaN or inf
    there (outside tester 7, repro_logexp_grad)."""
    x = np.array([100.0, -100.0, 1.0], np.float32)
    np.testing.assert_array_equal(tn.evaluate(_log_exp_gradient(x)).numpy(), x + 1.0)


CASES: dict[str, Callable[[], Expr]] = {
    "log_softmax_grad(label_pick_grad(s, labels), y) in one pass": _cross_entropy_grad,
    "log(exp(x)) -> x": lambda: ops.log(ops.exp(t32(X))) * 2.0,
    "exp_grad(log_grad(g, exp(x)), x) -> g": lambda: _log_exp_gradient(X),
    "x + 0 -> x": lambda: (t32(X) + tn.ZeroTensor((3, 4), tn.Float32, tn.CPU)) * 2.0,
    "x - 0 -> x": lambda: ops.exp(t32(X) - tn.ZeroTensor((4,), tn.Float32, tn.CPU)),
    "x * 0 -> 0": lambda: t32(X) * tn.ZeroTensor((4,), tn.Float32, tn.CPU) + 1.0,
    "x * 1 -> x": lambda: ops.exp(1 * t32(X)),
    "x / 1 -> x": lambda: ops.exp(t32(X) / 1.0),
    "transpose(transpose(x)) -> x": lambda: ops.transpose(ops.transpose(t32(X))) + 1.0,
    "dot(BiasVector, m) -> row pick": lambda: (
        tn.BiasVector(4, 2, tn.scalar(1.5, tn.Float32, tn.CPU)) @ t32(M)
    ),
    "dot(m, BiasVector) -> column pick": lambda: untyped.ops.dot(
        t32(X), tn.BiasVector(4, 1, tn.scalar(-2.0, tn.Float32, tn.CPU))
    ),
    "reduce_sum(a * b) -> one dot": lambda: ops.reduce_mean(ops.square(t32(X) - 1.0)),
    "stop_gradient(x) -> x": lambda: ops.stop_gradient(ops.exp(t32(X))) * 2.0,
    SCALAR_BROADCAST: lambda: ops.tile(tn.scalar(1.5, tn.Float32, tn.CPU), (3, 4)) * 2.0 + t32(X),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires_and_keeps_the_numbers(rule: str) -> None:
    fast, slow, fired = _both(CASES[rule])
    assert rule in fired
    assert stats.rewrites[rule] == 1
    np.testing.assert_allclose(fast, slow, rtol=1e-6, atol=1e-7)


BIG = rng.normal(size=(300, 400)).astype(np.float32)  # past DOT_ELEMENTS: the einsum form
SUMS_OF_PRODUCTS: dict[str, tuple[Callable[[], Expr], Any]] = {
    "sum of squares": (lambda: ops.reduce_sum(ops.square(t32(X))), (X * X).sum()),
    "mean of products": (lambda: ops.reduce_mean(t32(X) * t32(X * 3)), (X * X * 3).mean()),
    "mean of a large array's squares": (
        lambda: ops.reduce_mean(ops.square(t32(BIG))),
        (BIG.astype(np.float64) ** 2).mean(),
    ),
    "a product that is also read elsewhere": (
        lambda: ops.reduce_sum(ops.square(t32(X))) + ops.reduce_max(ops.square(t32(X))),
        (X * X).sum() + (X * X).max(),
    ),
}


@pytest.mark.parametrize("case", sorted(SUMS_OF_PRODUCTS))
def test_a_full_reduction_of_products_is_one_dot(case: str) -> None:
    build, want = SUMS_OF_PRODUCTS[case]
    fast, slow, fired = _both(build)
    assert fired == ["reduce_sum(a * b) -> one dot"]
    assert fast.dtype == np.float32
    assert fast.shape == ()
    np.testing.assert_allclose(fast, slow, rtol=2e-6)
    np.testing.assert_allclose(fast, want, rtol=2e-6)


@pytest.mark.parametrize(
    "build",
    [
        lambda: ops.reduce_sum(t32(X) * t32(X[0])),  # broadcast: the product is larger
        lambda: ops.reduce_sum(ops.square(t32(X)), 0),  # not every dim
        lambda: ops.reduce_sum(t32(X) * 2.0),  # a number operand
    ],
    ids=["broadcast", "partial", "number"],
)
def test_other_reductions_of_products_are_left_alone(build: Callable[[], Expr]) -> None:
    fast, slow, fired = _both(build)
    assert "reduce_sum(a * b) -> one dot" not in fired
    np.testing.assert_array_equal(fast, slow)


def test_every_declared_rule_has_a_case() -> None:
    declared = {name for chain in RULES.values() for name, _ in chain} | {SCALAR_BROADCAST}
    assert declared - {"softmax_grad(nll_loss_grad(g, t, y), y) in one pass"} == set(CASES)


def test_rewritten_root_is_a_copy_not_the_input() -> None:
    x = t32(X)
    r = tn.evaluate(x * 1)
    assert "x * 1 -> x" in last_program().fired  # type: ignore[union-attr]
    assert not np.shares_memory(r.numpy(), x.numpy())
    np.testing.assert_array_equal(r.numpy(), X)


def test_rules_do_not_fire_when_shapes_differ() -> None:
    # x (4,) + Zero (3, 4) is (3, 4), not x: the node must run as built.
    v = t32(X[0])
    r = tn.evaluate(v + tn.ZeroTensor((3, 4), tn.Float32, tn.CPU))
    assert last_program().fired == []  # type: ignore[union-attr]
    np.testing.assert_array_equal(r.numpy(), np.broadcast_to(X[0], (3, 4)))


def _softmax_nll(truth: np.ndarray[Any, Any], k: int) -> tuple[Expr, Any]:
    logits = t32(rng.normal(size=truth.shape))
    y = ops.softmax(logits, k)
    t = t32(truth)
    g = tn.scalar(0.7, tn.Float32, tn.CPU)
    return untyped.ops.softmax_grad(ops.nll_loss_grad(g, t, y), y, k), (y, truth)


@pytest.mark.parametrize("k", [1, 2])
def test_softmax_of_nll_grad_is_one_pass_with_the_correct_chain_rule(k: int) -> None:
    # Rows of truth sum to 2 and 1, so sum(truth) != 1: MetaNN master's fused formula would be
    # off by that factor (METANN.md §2.3); ours must equal the unfused chain rule.
    truth = np.array([[[0, 2, 0], [1, 0, 0]], [[0, 0, 1], [0.5, 0.5, 0]]], np.float32)
    expr, (y, t) = _softmax_nll(truth, k)
    fast = tn.evaluate(expr).numpy()
    name = "softmax_grad(nll_loss_grad(g, t, y), y) in one pass"
    assert name in last_program().fired  # type: ignore[union-attr]
    assert "nll_loss_grad" not in last_program().source  # type: ignore[union-attr]
    invalidate_caches()
    with options.using(rewrite=False):
        slow = tn.evaluate(expr).numpy()
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
    yv = y.numpy()
    axes = tuple(range(3 - k, 3))
    expected = 0.7 / t.sum() * (yv * t.sum(axis=axes, keepdims=True) - t)
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-6)
    buggy = t.sum() * expected
    assert not np.allclose(fast, buggy)


def test_softmax_grad_of_another_prediction_is_not_rewritten() -> None:
    y = ops.softmax(t32(rng.normal(size=(2, 3))))
    other = ops.softmax(t32(rng.normal(size=(2, 3))))
    t = t32(np.eye(3, dtype=np.float32)[:2])
    g = tn.scalar(1.0, tn.Float32, tn.CPU)
    tn.evaluate(ops.softmax_grad(ops.nll_loss_grad(g, t, other), y))
    assert last_program().fired == []  # type: ignore[union-attr]


def test_node_by_node_evaluation_runs_the_rewritten_schedule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MetaNN's conformance case: softmax_grad(nll_loss_grad(g, t, p), p) where a probability
    is exactly 0. Computed op by op it is 0 * inf (NaN); the rewritten kernel gives the exact
    (p * T - y) * g / S. The node-by-node evaluator (debug mode, with its NaN check) runs the
    same rewritten schedule, so it gives normal mode's numbers, not a NaN error."""
    from typed_nn.debug.numeric import check_finite
    from typed_nn.evaluate import hooks

    logits = np.array([[0.0, -1000.0, 1.0], [2.0, 0.0, -1.0]], np.float32)
    truth = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
    t, z = t32(truth), t32(logits)
    p = ops.softmax(z)
    assert tn.evaluate(p).numpy()[0, 1] == 0.0  # underflowed: exactly 0
    g = ops.softmax_grad(ops.nll_loss_grad(tn.scalar(1.0, tn.Float32, tn.CPU), t, p), p)
    monkeypatch.setattr(hooks, "node_checks", [])
    normal = tn.evaluate(g).numpy().copy()
    probs = tn.evaluate(p).numpy()
    want = (probs * truth.sum(axis=1, keepdims=True) - truth) / truth.sum()
    np.testing.assert_allclose(normal, want, rtol=1e-6, atol=1e-7)
    monkeypatch.setattr(hooks, "node_checks", [check_finite])
    invalidate_caches()
    np.testing.assert_array_equal(tn.evaluate(g).numpy(), normal)


def _chain_through_transpose(n: int, size: int) -> tuple[Expr, Any]:
    """``h_{k+1} = tanh(h_k @ wᵀ)`` n times (dependent products: batching leaves them)."""
    w = rng.normal(size=(size, size)).astype(np.float32) / size
    h0 = rng.normal(size=(3, size)).astype(np.float32)
    h: Expr = t32(h0)
    wt = ops.transpose(t32(w))
    for _ in range(n):
        h = ops.tanh(h @ wt)
    want = h0
    for _ in range(n):
        want = np.tanh(want @ w.T)
    return h, want


def test_a_transposed_weight_many_dots_read_is_copied_row_major_once() -> None:
    h, want = _chain_through_transpose(MIN_TRANSPOSED_READS, 6)
    stats.reset()
    stats.counting = True
    try:
        got = tn.evaluate(h).numpy()
    finally:
        stats.counting = False
    assert last_program().fired == [SHARED_TRANSPOSE]  # type: ignore[union-attr]
    assert stats.kernel_calls["contiguous"] == 1
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("reads", "size"),
    [(MIN_TRANSPOSED_READS - 1, 6), (MIN_TRANSPOSED_READS, math.isqrt(MAX_COPIED_ELEMENTS) + 1)],
)
def test_a_transposed_weight_few_dots_read_or_a_large_one_stays_a_view(
    reads: int, size: int
) -> None:
    h, want = _chain_through_transpose(reads, size)
    got = tn.evaluate(h).numpy()
    assert SHARED_TRANSPOSE not in last_program().fired  # type: ignore[union-attr]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_the_row_major_copy_is_never_its_operand() -> None:
    from typed_nn.ops.declare import implementation

    x = np.arange(6.0).reshape(2, 3)
    copy = implementation("contiguous", tn.CPU)(x)
    assert copy is not x
    assert not np.shares_memory(copy, x)
    np.testing.assert_array_equal(copy, x)


Data = tn.Tensor[Any, Any, Any]
TALL_X = rng.normal(size=(4, 128, 16)).astype(np.float32)  # 512 rows: 512 x 128 products
TALL_W = rng.normal(size=(16, 128)).astype(np.float32)
TALL_B = rng.normal(size=(128,)).astype(np.float32)


def _tall(x: Any = TALL_X, w: Any = TALL_W, b: Any = TALL_B) -> tuple[Data, Data, Data]:
    return t32(x), t32(w), tn.tensor(b, tn.Float32, tn.CPU, tn.Dim1)


def test_a_row_bias_on_a_tall_product_rides_in_the_gemm() -> None:
    x, w, b = _tall()
    fast, slow, fired = _both(lambda: ops.tanh(x @ w + b))
    assert fired == [FOLDED_BIAS]
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fast, np.tanh(TALL_X @ TALL_W + TALL_B), rtol=1e-5, atol=1e-6)
    fast, slow, fired = _both(lambda: b + x @ w)  # either side
    assert fired == [FOLDED_BIAS]
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows", [(4, 128), (512,)], ids=["rank-3", "rank-2"])
def test_the_folded_product_trains_like_the_plain_one(rows: tuple[int, ...]) -> None:
    """Compiled, with the weight and the bias updated in place every call: the forward's
    ``[x | 1]`` also gives both gradients as one product."""

    def train(fold: bool) -> np.ndarray[Any, Any]:
        x, w, b = _tall(x=TALL_X.reshape(*rows, 16), w=TALL_W.copy(), b=TALL_B.copy())

        @tn.compile
        def step(x: Data) -> Expr:
            loss = ops.reduce_mean(ops.square(ops.tanh(x @ w + b)))
            gw, gb = tn.grad(loss, (w, b))
            w.assign(w - 0.5 * gw)
            b.assign(b - 0.5 * gb)
            return loss

        with options.using(rewrite=fold):
            losses = [step(x).numpy() for _ in range(3)]
            fired = last_program().fired  # type: ignore[union-attr]
        folds = [FOLDED_BIAS, FOLDED_BIAS_GRADIENT]
        assert [name for name in fired if name in folds] == (folds if fold else [])
        return np.array([*losses, *w.numpy().ravel(), *b.numpy()])

    np.testing.assert_allclose(train(True), train(False), rtol=1e-5, atol=1e-6)


def _short() -> Expr:
    x, w, b = _tall(x=TALL_X[0, :8])  # 8 rows: too few
    return x @ w + b


def _shared_product() -> Expr:
    x, w, b = _tall()
    return (x @ w + b) * (x @ w)  # the product read twice


def _no_bias() -> Expr:
    x, w, _ = _tall()
    return x @ w + x @ w


@pytest.mark.parametrize("build", [_short, _shared_product, _no_bias])
def test_other_sums_with_a_product_keep_the_add(build: Callable[[], Expr]) -> None:
    fast, slow, fired = _both(build)
    assert FOLDED_BIAS not in fired
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-5)


def test_the_fold_threshold_is_what_the_docstring_says() -> None:
    assert 8 * 128 < MIN_FOLDED_ELEMENTS <= 512 * 128


def _rnn_gradients(elem: Any, arrays: list[Any], fold: bool) -> tuple[list[Any], list[str]]:
    """The gradients of an RNN's (w, b, u) over the sequence ``arrays[0]``, compiled."""
    x = tn.tensor(arrays[0], elem, tn.CPU, tn.Dim3)
    w, u = (tn.tensor(a, elem, tn.CPU, tn.Dim2) for a in (arrays[1], arrays[3]))
    b = tn.tensor(arrays[2], elem, tn.CPU, tn.Dim1)

    @tn.compile
    def step(x: tn.Tensor[Any, tn.CPU, tn.Dim3]) -> Any:
        h: Expr = tn.zeros((64, 128), elem, tn.CPU)
        for t in range(8):
            h = ops.tanh(x[t] @ w + b + h @ u)
        return tn.grad(ops.reduce_mean(ops.square(h)), (w, b, u))

    with options.using(rewrite=fold):
        got = [g.numpy() for g in step(x)]
        return got, list(last_program().fired)  # type: ignore[union-attr]


@pytest.mark.parametrize("elem", [tn.Float32, tn.Float64], ids=["float32", "float64"])
def test_a_recurrent_loop_folds_its_input_bias_over_the_whole_sequence(elem: Any) -> None:
    """``x[t] @ w + b + h @ u`` over a sequence: batching makes ``x @ w + b`` one tall
    product, folded; the gradients match the unrewritten ones. (The steps of an argument
    are views taken when called, so the weight's gradient gathers them: the bias's gradient
    folds into it where ``x`` itself is read, as in ``RecurrentLayer``:
    ``test_layers_seq.py``.)"""
    dtype = np.dtype(elem.dtype)
    scales = [1.0, 0.3, 0.1, 0.05]
    shapes = [(8, 64, 16), (16, 128), (128,), (128, 128)]
    arrays = [(rng.normal(size=s) * k).astype(dtype) for s, k in zip(shapes, scales, strict=True)]
    folded, fired = _rnn_gradients(elem, arrays, True)
    assert FOLDED_BIAS in fired
    plain, _ = _rnn_gradients(elem, arrays, False)
    for a, b in zip(folded, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_a_bias_gradient_the_input_itself_depends_on_is_not_folded() -> None:
    """``x`` is centred by the column sums of ``d``, and ``xᵀ·d`` is also wanted: folding
    those sums into ``[x | 1]ᵀ·d`` would compute ``x`` from itself. The fold is skipped
    and the numbers are the unrewritten ones (it once made a cycle: evaluation hung)."""
    d0 = rng.normal(size=(512, 16)).astype(np.float32)
    w0 = rng.normal(size=(16, 128)).astype(np.float32)
    b0 = rng.normal(size=(128,)).astype(np.float32)

    def run(fold: bool) -> tuple[list[np.ndarray[Any, Any]], list[str]]:
        d, w, b = _tall(x=d0, w=w0, b=b0)

        @tn.compile
        def step(d: Data) -> Any:
            x = d - ops.reduce_sum(d, 0) / 512.0
            return [ops.tanh(x @ w + b), ops.transpose(x) @ d]

        with options.using(rewrite=fold):
            return [r.numpy() for r in step(d)], list(last_program().fired)  # type: ignore[union-attr]

    (got, fired), (want, _) = run(True), run(False)
    assert FOLDED_BIAS in fired
    assert FOLDED_BIAS_GRADIENT not in fired
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)


def test_a_cycle_in_the_graph_is_an_error_not_a_hang() -> None:
    from typed_nn.evaluate.graph import Graph, INode
    from typed_nn.ops.arithmetic import ADD

    f32 = np.dtype(np.float32)
    nodes = [
        INode("add", ADD, (), [1, 1], (2,), f32, tn.CPU),
        INode("add", ADD, (), [0, 0], (2,), f32, tn.CPU),
    ]
    with pytest.raises(tn.EvaluationError, match="the evaluator's graph has a cycle through node"):
        Graph(nodes, [0]).reorder()


@pytest.mark.optimiser
@pytest.mark.parametrize("shape", [(32, 10), (4, 5, 7)], ids=["rank 2", "rank 3"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropys_backward_is_one_pass_and_bit_for_bit_the_same(
    shape: tuple[int, ...], reduction: str
) -> None:
    """``log_softmax_grad(label_pick_grad(s, labels), y)`` -> ``log_softmax_pick_grad``: the
    same operations per element, so the same bits; labels out of range still an error."""
    rng = np.random.default_rng(0)
    x = tn.tensor(
        rng.standard_normal(shape).astype(np.float32), tn.Float32, tn.CPU, dim_of_rank(len(shape))
    )
    labels = tn.tensor(
        rng.integers(0, shape[-1], shape[:-1]), tn.Int64, tn.CPU, dim_of_rank(len(shape) - 1)
    )

    def grad() -> Any:
        loss = ops.cross_entropy(x, labels, reduction=reduction)  # type: ignore[call-overload]
        scalar = ops.reduce_sum(loss * 1.5) if reduction == "none" else loss
        return tn.evaluate(tn.grad(scalar, x)).numpy().copy()

    fused = grad()
    rule = "log_softmax_grad(label_pick_grad(s, labels), y) in one pass"
    assert rule in last_program().fired  # type: ignore[union-attr]
    with options.using(rewrite=False):
        np.testing.assert_array_equal(fused, grad())
    bad = tn.tensor(np.full(shape[:-1], shape[-1]), tn.Int64, tn.CPU, dim_of_rank(len(shape) - 1))
    with pytest.raises(tn.IndexRangeError, match="label out of range"):
        tn.evaluate(tn.grad(ops.cross_entropy(x, bad, reduction="sum"), x))  # type: ignore[call-overload]


@pytest.mark.optimiser
def test_an_op_of_a_repeated_number_is_computed_once() -> None:
    """``-(tile(c) / n)`` (a mean's gradient spread over a batch, then negated) runs on the
    rank-0 value and is tiled once, in the op's order (the same bits)."""
    c = tn.scalar(3.0, tn.Float32, tn.CPU)
    n = tn.scalar(7.0, tn.Float32, tn.CPU)

    def build() -> Expr:
        return t32(X) * ops.exp(-(ops.tile(c, (3, 4)) / n))

    fast, slow, fired = _both(build)
    assert fired.count(SCALAR_BROADCAST) == 3  # div, negative and exp
    calls = last_program().calls  # type: ignore[union-attr]
    assert calls["tile"] == 1
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, X * np.exp(-(np.float32(3.0) / np.float32(7.0))))


@pytest.mark.optimiser
def test_a_repeated_number_beside_an_array_stays_repeated() -> None:
    """An op of a tile and a full array (or of a tile of a vector) is not the rule's."""
    v = t32(X[0])
    for build in (
        lambda: ops.tile(tn.scalar(2.0, tn.Float32, tn.CPU), (3, 4)) * t32(X),
        lambda: ops.exp(ops.tile(v, (3, 4))),
    ):
        fast, slow, fired = _both(build)
        assert SCALAR_BROADCAST not in fired
        np.testing.assert_array_equal(fast, slow)


@pytest.mark.optimiser
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropys_backward_reads_the_softmax_the_step_computes(reduction: str) -> None:
    """A classifier step that returns ``softmax(x)`` and differentiates ``cross_entropy(x)``:
    the backward is ``s (onehot - p)`` from that softmax, and no log-softmax is computed."""
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((32, 10)).astype(np.float32)
    picked = rng.integers(0, 10, 32)
    x = t32(logits)
    labels = tn.tensor(picked, tn.Int64, tn.CPU, tn.Dim1)

    def run() -> list[np.ndarray[Any, Any]]:
        loss = ops.cross_entropy(x, labels, reduction=reduction)  # type: ignore[call-overload]
        handles = [ops.softmax(x).eval_register(), tn.grad(loss, x).eval_register()]
        tn.EvalPlan.eval()
        return [h.data().numpy().copy() for h in handles]

    probs, grad = run()
    calls = last_program().calls  # type: ignore[union-attr]
    assert calls["softmax_pick_grad"] == 1
    assert "log_softmax" not in calls
    invalidate_caches()
    with options.using(rewrite=False):
        slow = run()[1]
    want = probs - np.eye(10, dtype=np.float32)[picked]
    want /= 32 if reduction == "mean" else 1
    np.testing.assert_allclose(grad, slow, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)
    bad = tn.tensor(np.full(32, -1), tn.Int64, tn.CPU, tn.Dim1)
    both = ops.softmax(x) + tn.grad(ops.cross_entropy(x, bad), x)
    with pytest.raises(tn.IndexRangeError, match=r"label out of range: -1 at position \(0,\)"):
        tn.evaluate(both)


@pytest.mark.parametrize("op", ["log_softmax_pick_grad", "softmax_pick_grad"])
@pytest.mark.parametrize("shape", [(2, 5), (3, 4, 5)], ids=["rank 2", "rank 3"])
def test_cross_entropys_fused_backward_of_a_transposed_operand(
    op: str, shape: tuple[int, ...]
) -> None:
    """The fused kernels on a non-contiguous ``y`` (a permuted value, as the reference
    evaluator passes it): each label's ``+s`` lands in the result, not in a copy of it."""
    rng = np.random.default_rng(4)
    y = np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(np.float32)).T
    assert not y.flags.c_contiguous
    labels = rng.integers(0, shape[-1], shape[:-1])
    s = np.asarray(np.float32(-0.25))
    kernel = tn.ops.declare.implementation(op, tn.CPU)
    e = np.exp(y) if op == "log_softmax_pick_grad" else y
    want = s * (np.eye(shape[-1], dtype=np.float32)[labels] - e)
    np.testing.assert_allclose(kernel(s, labels, y), want, rtol=1e-6, atol=1e-7)


def test_the_transpose_of_a_product_read_once_is_the_product_of_the_transposes() -> None:
    """``(xᵀ·g)ᵀ`` -- a weight's gradient kept (out, in), as nn.Linear's -- is computed as
    ``gᵀ·x``: the same numbers, row-major, where the transpose was a view across rows."""
    x, g = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    got = tn.evaluate(ops.transpose(ops.transpose(t32(x)) @ t32(g)))
    assert TRANSPOSED_PRODUCT in last_program().fired  # type: ignore[union-attr]
    assert got.array.flags.c_contiguous
    np.testing.assert_allclose(got.numpy(), (x.T @ g).T, rtol=1e-5, atol=1e-6)


def test_a_product_read_elsewhere_too_keeps_its_transpose_a_view() -> None:
    x, g = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    prod = ops.transpose(t32(x)) @ t32(g)
    both = ops.transpose(prod) + ops.transpose(prod * 2.0)  # two readers of the product
    got = tn.evaluate(both)
    assert TRANSPOSED_PRODUCT not in last_program().fired  # type: ignore[union-attr]
    np.testing.assert_allclose(got.numpy(), 3 * (x.T @ g).T, rtol=1e-5, atol=1e-5)


def test_a_linear_modules_weight_gradient_is_its_own_layout() -> None:
    from typed_nn import nn

    tn.manual_seed(0)
    lin = nn.Linear(4, 3)
    x = t32(rng.normal(size=(6, 4)))
    grads = tn.grad(ops.reduce_sum(ops.square(lin(x))), lin)
    got = tn.evaluate(grads.weight)
    assert TRANSPOSED_PRODUCT in last_program().fired  # type: ignore[union-attr]
    assert lin.bias is not None
    w, b = lin.weight.numpy(), lin.bias.numpy()
    want = (2 * (x.numpy() @ w.T + b)).T @ x.numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
