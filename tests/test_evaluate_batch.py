"""Batching of registrations: a per-sample loop evaluated once runs as mini-batch calls."""

from __future__ import annotations

import functools
import operator
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import options, stats
from typed_nn.evaluate.cache import invalidate_caches

rng = np.random.default_rng(5)


@pytest.fixture
def calls() -> Iterator[Counter[str]]:
    stats.reset()
    stats.counting = True
    try:
        yield stats.kernel_calls
    finally:
        stats.counting = False


def _eval_all(exprs: list[Any]) -> list[np.ndarray[Any, Any]]:
    handles = [e.eval_register() for e in exprs]
    tn.EvalPlan.eval()
    return [h.data().numpy() for h in handles]


def test_a_per_sample_loop_issues_one_matrix_product(calls: Counter[str]) -> None:
    w = t32(rng.normal(size=(8, 5)))
    b = t32(rng.normal(size=5))
    xs = [t32(rng.normal(size=8)) for _ in range(64)]
    got = _eval_all([ops.tanh(x @ w + b) * 2.0 for x in xs])
    assert calls["dot"] == 1
    assert calls["add"] == calls["tanh"] == calls["mul"] == 1
    invalidate_caches()
    with options.using(batch=False):
        alone = [tn.evaluate(ops.tanh(x @ w + b) * 2.0).numpy() for x in xs]
    # one GEMM vs 64 GEMVs: the same sums, accumulated in another order by BLAS
    for g, a in zip(got, alone, strict=True):
        np.testing.assert_allclose(g, a, rtol=1e-5, atol=1e-6)


def test_results_are_items_of_one_buffer_but_distinct_values() -> None:
    w = t32(rng.normal(size=(3, 2)))
    xs = [t32(rng.normal(size=3)) for _ in range(4)]
    got = _eval_all([x @ w for x in xs])
    for x, g in zip(xs, got, strict=True):
        np.testing.assert_allclose(g, x.numpy() @ w.numpy(), rtol=1e-6)


def test_dependent_nodes_are_not_batched(calls: Counter[str]) -> None:
    w = t32(rng.normal(size=(4, 4)))
    x = t32(rng.normal(size=4))
    got = _eval_all([(x @ w) @ w])
    assert calls["dot"] == 2
    np.testing.assert_allclose(got[0], x.numpy() @ w.numpy() @ w.numpy(), rtol=1e-5)


def test_a_sum_of_per_sample_outer_products_is_one_contraction(calls: Counter[str]) -> None:
    xs = [t32(rng.normal(size=(1, 6))) for _ in range(10)]
    gs = [t32(rng.normal(size=(1, 3))) for _ in range(10)]
    total = functools.reduce(
        operator.add, [ops.transpose(x) @ g for x, g in zip(xs, gs, strict=True)]
    )
    got = tn.evaluate(total).numpy()
    assert calls["batch_dot_sum"] == 1
    assert calls["add"] == 0
    expected = sum(x.numpy().T @ g.numpy() for x, g in zip(xs, gs, strict=True))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_per_sample_mlp_gradients_match_unbatched() -> None:
    w1, w2 = t32(rng.normal(size=(6, 5)) * 0.3), t32(rng.normal(size=(5, 3)) * 0.3)
    one = tn.scalar(1.0, tn.Float32, tn.CPU)

    def grads(x: Any, t: Any) -> list[Any]:
        a = x @ w1
        y = ops.softmax(ops.relu(a) @ w2)
        dz = ops.softmax_grad(ops.nll_loss_grad(one, t, y), y)
        da = ops.relu_grad(dz @ ops.transpose(w2), a)
        return [ops.nll_loss(t, y), ops.transpose(x) @ da, ops.reduce_sum(da, first=1)]

    xs = [t32(rng.normal(size=(1, 6))) for _ in range(8)]
    ts = [t32(np.eye(3, dtype=np.float32)[[i % 3]]) for i in range(8)]
    per = [grads(x, t) for x, t in zip(xs, ts, strict=True)]
    sums = [functools.reduce(operator.add, p) for p in zip(*per, strict=True)]
    stats.reset()
    got = _eval_all(sums)
    assert stats.batched >= 5
    invalidate_caches()
    with options.using(batch=False):
        want = _eval_all(sums)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_the_rows_of_a_sequence_batch_as_the_sequence_itself(calls: Counter[str]) -> None:
    """``x[t] @ w`` for every step t of a (T, B, F) sequence is one GEMM over ``x``: the
    slices are its items already, nothing is stacked (``x`` computed: a tensor's own rows
    are leaves, gathered as such)."""
    data = rng.normal(size=(6, 4, 3)).astype(np.float32)
    x: Any = t32(data) * 2.0
    w, b = t32(rng.normal(size=(3, 5))), t32(rng.normal(size=5))
    got = _eval_all([x[t] @ w + b for t in range(6)])
    assert (calls["dot"], calls["add"], calls["batch_stack"]) == (1, 1, 0)
    for t, g in enumerate(got):
        np.testing.assert_allclose(g, 2 * data[t] @ w.numpy() + b.numpy(), rtol=1e-5)


def test_the_rows_of_a_sequence_taken_in_part_are_not_its_items(calls: Counter[str]) -> None:
    data = rng.normal(size=(6, 4, 3)).astype(np.float32)
    x: Any = t32(data) * 2.0
    w = t32(rng.normal(size=(3, 5)))
    got = _eval_all([x[t] @ w for t in range(5)])  # row 5 is not read: x is not the group
    assert calls["dot"] == 5
    for t, g in enumerate(got):
        np.testing.assert_allclose(g, 2 * data[t] @ w.numpy(), rtol=1e-5)
