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


def test_a_tree_of_adds_over_every_item_of_a_group_is_one_sum(calls: Counter[str]) -> None:
    """Any shape of add-tree (here balanced) over each item once is one ``batch_sum``; an
    item summed twice, or one left out, keeps the adds."""
    w = t32(rng.normal(size=(6, 3)))
    xs = [t32(rng.normal(size=6)) for _ in range(8)]
    items = [ops.tanh(x @ w) for x in xs]
    pairs = [items[i] + items[i + 1] for i in range(0, 8, 2)]
    got = tn.evaluate((pairs[0] + pairs[1]) + (pairs[2] + pairs[3])).numpy()
    assert calls["batch_sum"] == 1
    assert calls["add"] == 0
    expected = sum(np.tanh(x.numpy() @ w.numpy()) for x in xs)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    twice = functools.reduce(operator.add, [items[0], *items])
    for exprs in ([twice], [functools.reduce(operator.add, items[:7]), items[7]]):
        calls.clear()
        got_all = _eval_all(exprs)
        assert calls["batch_sum"] == 0
        assert calls["add"] > 0
        with options.using(batch=False):
            for g, e in zip(got_all, exprs, strict=True):
                np.testing.assert_allclose(g, tn.evaluate(e).numpy(), rtol=1e-5, atol=1e-6)


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


def _per_row_mlp(rows: list[Any], w: Any) -> Any:
    """The sum over rows of relu(row @ w) summed: one loss per sample, added up."""
    return functools.reduce(operator.add, [ops.reduce_sum(ops.relu(r @ w)) for r in rows])


@pytest.mark.parametrize(
    ("axis", "starts", "length"),
    [
        (0, range(0, 12), 1),  # the rows of a batch, in order: a reshaped view
        (0, range(0, 12, 3), 3),  # blocks of 3 rows tiling the batch
        (0, [5, 0, 7, 2, 2, 9], 1),  # rows out of order, one twice: a gather
        (0, range(0, 10, 2), 3),  # overlapping blocks: a gather
    ],
)
def test_slices_of_one_batch_at_different_starts_gather_in_one_call(
    calls: Counter[str], axis: int, starts: Any, length: int
) -> None:
    xb = t32(rng.normal(size=(12, 6)))
    w = t32(rng.normal(size=(6, 4)))
    total = _per_row_mlp([ops.narrow(xb, axis, s, length) for s in starts], w)
    got = tn.evaluate(total).numpy()
    assert calls["batch_narrow"] == 1
    assert calls["narrow"] == 0
    assert calls["dot"] == 1
    x = xb.numpy()
    expected = sum(np.maximum(x[s : s + length] @ w.numpy(), 0).sum() for s in starts)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    invalidate_caches()
    with options.using(batch=False):
        np.testing.assert_allclose(tn.evaluate(total).numpy(), got, rtol=1e-5)


@pytest.mark.parametrize("starts", [(0, 4, 7, 1), (2, 4, 6, 8)])
def test_column_slices_at_different_starts_gather_along_their_axis(
    calls: Counter[str], starts: tuple[int, ...]
) -> None:
    x, w = t32(rng.normal(size=(3, 10))), t32(rng.normal(size=(2, 5)))
    got = _eval_all([ops.tanh(ops.narrow(x, 1, s, 2) @ w) for s in starts])
    assert calls["batch_narrow"] == 1
    assert calls["dot"] == 1
    for s, g in zip(starts, got, strict=True):
        want = np.tanh(x.numpy()[:, s : s + 2] @ w.numpy())
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_slices_read_only_by_element_wise_ops_stay_views(calls: Counter[str]) -> None:
    """An LSTM's gate blocks: gathering them pays only for a batched product."""
    a = t32(rng.normal(size=(4, 12)))
    gates = [ops.narrow(a, 1, s, 3) for s in (0, 3, 6, 9)]
    got = _eval_all([ops.sigmoid(gates[0]) * ops.tanh(gates[1]), gates[2] * gates[3]])
    assert calls["batch_narrow"] == 0
    assert calls["narrow"] == 4
    x = a.numpy()
    want = 1 / (1 + np.exp(-x[:, 0:3])) * np.tanh(x[:, 3:6])
    np.testing.assert_allclose(got[0], want, rtol=1e-5)
    np.testing.assert_allclose(got[1], x[:, 6:9] * x[:, 9:12], rtol=1e-6)


def test_slices_tiling_a_block_are_a_view_of_it() -> None:
    from typed_nn.backends.numpy.batched import batch_narrow

    x = rng.normal(size=(5, 12))
    for axis, starts, length in [(0, (1, 2, 3), 1), (1, (0, 3, 6, 9), 3), (1, (4, 6), 2)]:
        got = batch_narrow(x, axis, starts, length)
        assert np.shares_memory(got, x)
        want = np.stack([np.take(x, range(s, s + length), axis=axis) for s in starts])
        np.testing.assert_array_equal(got, want)
    gathered = batch_narrow(x, 1, (9, 0, 5), 3)
    assert not np.shares_memory(gathered, x)
    np.testing.assert_array_equal(gathered, np.stack([x[:, 9:12], x[:, 0:3], x[:, 5:8]]))


def test_a_compiled_per_sample_loop_over_rows_of_an_argument_batches() -> None:
    w = t32(rng.normal(size=(6, 4)))

    @tn.compile
    def loss(xb: tn.Matrix[tn.Float32, tn.CPU]) -> Any:
        return _per_row_mlp([ops.narrow(xb, 0, i, 1) for i in range(8)], w)

    for _ in range(3):  # new arrays every call: bound rows, no retrace
        x = rng.normal(size=(8, 6)).astype(np.float32)
        want = np.maximum(x @ w.numpy(), 0).sum()
        np.testing.assert_allclose(loss(t32(x)).numpy(), want, rtol=1e-5)
    assert loss.traces == 1
    last = loss._last
    assert last is not None
    assert last.program.calls["batch_narrow"] == 1
    assert last.program.calls["dot"] == 1


def test_gathered_stacks_and_contractions_keep_values() -> None:
    from typed_nn.backends.numpy.batched import batch_dot_sum, batch_stack

    items = [rng.normal(size=(1, 5)).astype(np.float32) for _ in range(7)]
    np.testing.assert_array_equal(batch_stack(*items), np.stack(items))
    scalars = [np.float32(i) for i in range(3)]
    np.testing.assert_array_equal(batch_stack(*[np.asarray(s) for s in scalars]), [0, 1, 2])
    a, b = rng.normal(size=(4, 3, 2, 5)), rng.normal(size=(4, 5, 6))
    np.testing.assert_allclose(
        batch_dot_sum(a, b), np.tensordot(a, b, axes=([0, 3], [0, 1])), rtol=1e-12
    )
    a2 = rng.normal(size=(9, 1, 6)).astype(np.float32).transpose(0, 2, 1)  # a permuted stack
    b2 = rng.normal(size=(9, 1, 4)).astype(np.float32)
    np.testing.assert_array_equal(
        batch_dot_sum(a2, b2), np.tensordot(a2, b2, axes=([0, 2], [0, 1]))
    )


def test_vector_samples_differentiated_batch_their_outer_products() -> None:
    """``xb[i] @ w`` per sample: w's gradient is an outer product per sample (a column times
    a row), and their sum one contraction, not 16 tiled copies multiplied and added up."""
    w = t32(rng.normal(size=(6, 4)))
    xb_np = rng.normal(size=(16, 6)).astype(np.float32)

    @tn.compile
    def grad(xb: tn.Matrix[tn.Float32, tn.CPU]) -> Any:
        losses = [ops.reduce_sum(ops.tanh(xb[i] @ w)) for i in range(16)]
        return tn.grad(functools.reduce(operator.add, losses), w)

    got = grad(t32(xb_np)).numpy()
    last = grad._last
    assert last is not None
    assert last.program.calls["batch_dot_sum"] == 1
    assert sum(last.program.calls.values()) < 16
    want = xb_np.T @ (1 - np.tanh(xb_np @ w.numpy()) ** 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


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


def test_group_losses_match_each_item() -> None:
    from typed_nn.backends.numpy.batched import batch_nll_loss, batch_softmax_nll_grad
    from typed_nn.backends.numpy.nn import nll_loss
    from typed_nn.backends.numpy.rewritten import softmax_nll_grad

    pred = rng.random((4, 2, 3)).astype(np.float32)
    pred /= pred.sum(axis=-1, keepdims=True)
    truth = rng.random((4, 2, 3)).astype(np.float32)  # soft labels, not summing to 1
    pred[1, 0, 2], truth[1, 0, 2] = 0.0, 0.0  # a zero probability where the truth is 0
    with np.errstate(divide="ignore", invalid="ignore"):  # as a program runs its kernels
        got = batch_nll_loss(truth, pred)
        want = [nll_loss(truth[i], pred[i]) for i in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.isfinite(got).all()
    g = np.float32(0.5)
    for k in (1, 2):  # one group per item (k=2) or two (k=1)
        grads = batch_softmax_nll_grad(g, truth, pred, k)
        for i in range(4):
            np.testing.assert_allclose(
                grads[i], softmax_nll_grad(g, truth[i], pred[i], k), rtol=1e-5, atol=1e-7
            )
