"""The same graph evaluated again finds its analysed program in the plan cache and gives
exactly what a fresh evaluation gives; the lean programs compiled Steps run (nothing cached
on the nodes, small interior values in buffers the program keeps) give the same values."""

from __future__ import annotations

import gc
import re
import weakref
from typing import Any

import numpy as np
import pytest
from graphs import Graph, check_graph, graph_settings, random_graphs
from helpers import t32
from hypothesis import given

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import executor, hooks, options, stats
from typed_nn.evaluate.cache import invalidate_caches
from typed_nn.ops.node import Operation

rng = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def optimised(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the optimised executor: no debug-mode node checks."""
    monkeypatch.setattr(hooks, "node_checks", [])


@pytest.fixture
def collects(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the evaluator's graph collections."""
    count = [0]
    real = getattr(executor, "collect")  # noqa: B009 (not a public name of the module)

    def counting(*args: Any) -> Any:
        count[0] += 1
        return real(*args)

    monkeypatch.setattr(executor, "collect", counting)
    return count


def step_graph() -> tuple[Any, Any, Any, list[Any]]:
    x = t32(rng.standard_normal((4, 3)))
    w = t32(rng.standard_normal((3, 2)))
    lr = tn.scalar(0.5, tn.Float32, tn.CPU)
    h = ops.relu(x @ w)
    loss = ops.reduce_sum(h * h)
    update = w - lr * (ops.transpose(x) @ h)
    return x, w, lr, [loss, h, update]


def expected(x: Any, w: Any, lr: float) -> list[Any]:
    h = np.maximum(x @ w, 0)
    return [np.sum(h * h), h, w - lr * (x.T @ h)]


def test_repeated_steps_reuse_the_analysed_program_and_match_numpy() -> None:
    x, w, lr, roots = step_graph()
    analyses = stats.analyses
    for step in range(5):
        x.array[...] = rng.standard_normal((4, 3))
        lr.array[...] = 0.5 / (step + 1)
        invalidate_caches()
        want = expected(x.numpy().copy(), w.numpy().copy(), 0.5 / (step + 1))
        got = executor.execute(roots, {2: w})
        if got[2] is not w:
            w.array[...] = got[2].array
        invalidate_caches()
        np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-5)
        np.testing.assert_allclose(got[1].numpy(), want[1], rtol=1e-5)
        np.testing.assert_allclose(w.numpy(), want[2], rtol=1e-5, atol=1e-6)
    assert stats.analyses == analyses + 1  # one analysis; later runs find it by structure


def test_without_the_plan_cache_every_run_collects(collects: list[int]) -> None:
    _, _, _, roots = step_graph()
    with options.using(plan_cache=False):
        for _ in range(3):
            executor.execute(roots)
            invalidate_caches()
    assert collects[0] == 3


def test_same_epoch_returns_the_cached_result() -> None:
    x = t32(rng.standard_normal((3, 3)))
    y = ops.exp(x) + 1.0
    first = tn.evaluate(y)
    invalidate_caches()
    tn.evaluate(y)
    assert tn.evaluate(y) is tn.evaluate(y)
    assert first is not tn.evaluate(y)


def test_scalars_merged_by_value_split_when_one_changes() -> None:
    x = t32(rng.standard_normal((2, 2)))
    a = tn.scalar(1.0, tn.Float32, tn.CPU)
    b = tn.scalar(1.0, tn.Float32, tn.CPU)  # equal to a: one slot while the values agree
    y = x * a + x * b
    for _ in range(2):
        np.testing.assert_allclose(tn.evaluate(y).numpy(), 2 * x.numpy(), rtol=1e-6)
        invalidate_caches()
    b.array[...] = 3.0
    invalidate_caches()
    np.testing.assert_allclose(tn.evaluate(y).numpy(), 4 * x.numpy(), rtol=1e-6)


def test_a_replaced_leaf_array_is_read_again() -> None:
    x = t32(rng.standard_normal((2, 2)))
    y = ops.exp(x)
    for _ in range(3):
        tn.evaluate(y)
        invalidate_caches()
    fresh = rng.standard_normal((2, 2)).astype(np.float32)
    x._array = fresh  # not through the public API, but every evaluation reads the leaves
    np.testing.assert_allclose(tn.evaluate(y).numpy(), np.exp(fresh), rtol=1e-6)


def test_a_subexpression_cached_in_between_is_respected() -> None:
    x = t32(rng.standard_normal((2, 2)))
    inner = ops.exp(x)
    y = inner * 2.0
    for _ in range(3):
        tn.evaluate(y)
        invalidate_caches()
    stats.reset()
    stats.counting = True
    try:
        tn.evaluate(inner)  # cached on its node for this epoch
        np.testing.assert_allclose(tn.evaluate(y).numpy(), 2 * np.exp(x.numpy()), rtol=1e-6)
        assert stats.kernel_calls["exp"] == 1  # not recomputed: taken from its node
    finally:
        stats.counting = False


def test_interior_values_are_cached_and_wrapped_on_demand() -> None:
    x = t32(rng.standard_normal((2, 2)))
    inner = ops.exp(x)
    y = inner + 1.0
    tn.evaluate(y)
    got = tn.evaluate(inner)  # no recomputation: the cached interior value
    assert isinstance(got, tn.Tensor)
    assert tn.evaluate(inner) is got
    np.testing.assert_allclose(got.numpy(), np.exp(x.numpy()), rtol=1e-6)


def test_relu_grad_is_zero_for_non_finite_gradients_where_x_is_not_positive() -> None:
    g = t32([np.inf, -np.inf, np.nan, np.inf, np.nan, 2.0])
    x = t32([-1.0, 0.0, -2.0, 1.0, 3.0, 1.0])
    got = ops.relu_grad(g, x).numpy()
    np.testing.assert_array_equal(got[:4], [0.0, 0.0, 0.0, np.inf])
    assert np.isnan(got[4])
    assert got[5] == 2.0
    big = rng.standard_normal((128, 512)).astype(np.float32)
    xs = rng.standard_normal((128, 512)).astype(np.float32)
    np.testing.assert_array_equal(
        ops.relu_grad(t32(big), t32(xs)).numpy(), np.where(xs > 0, big, 0)
    )


def test_another_thread_has_plans_of_its_own(collects: list[int]) -> None:
    import threading

    x = t32(rng.standard_normal((2, 2)))
    y = ops.tanh(x) * 2.0
    tn.evaluate(y)
    invalidate_caches()
    analyses = stats.analyses
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(tn.evaluate(y).numpy()))
    worker.start()
    worker.join()
    np.testing.assert_allclose(results[0], np.tanh(x.numpy()) * 2.0, rtol=1e-6)
    assert stats.analyses == analyses + 1  # analysed afresh in the other thread


@graph_settings(200)
@given(random_graphs(max_ops=8))
def test_random_graphs_evaluated_again_match_numpy(g: Graph) -> None:
    """The differential graphs, evaluated three times (the later ones from the plan cache)."""
    exprs = [root.expr for root in g.roots]
    for _ in range(3):
        invalidate_caches()
        check_graph(g, [value.numpy() for value in executor.execute(exprs)])


# The lean programs compiled Steps run (tn.compile): nothing cached on the nodes


def _lean_source(f: Any) -> str:
    (step,) = f._steps
    source: str = step.program.source
    return source


def test_compiled_steps_match_and_cache_nothing() -> None:
    x, w, _, roots = step_graph()
    f = tn.compile(lambda: roots)
    for i in range(3):
        got = f()
        for value, want in zip(got, expected(x.numpy(), w.numpy(), 0.5), strict=True):
            np.testing.assert_allclose(value.numpy(), want, rtol=1e-5, atol=1e-6)
        assert all(r._result is None for r in roots if isinstance(r, Operation)), i
    assert f.traces == 1
    source = _lean_source(f)
    assert re.search(r"(out=|= )B\d", source), source  # interior values in kept buffers


def test_a_returned_view_of_an_interior_value_is_not_overwritten_by_the_next_run() -> None:
    x = t32(rng.standard_normal((3, 4)))
    f = tn.compile(lambda: [ops.transpose(ops.exp(x) * 2.0), ops.reshape(ops.exp(x) + 1.0, (12,))])
    first_run: list[Any] = f()
    firsts = [t.numpy() for t in first_run]
    kept = [a.copy() for a in firsts]
    for _ in range(2):
        x.array[...] = rng.standard_normal((3, 4))
        again: list[Any] = f()
        np.testing.assert_allclose(again[0].numpy(), (np.exp(x.numpy()) * 2).T, rtol=1e-6)
        np.testing.assert_allclose(again[1].numpy(), np.exp(x.numpy()).ravel() + 1, rtol=1e-6)
    for first, copy in zip(firsts, kept, strict=True):
        np.testing.assert_array_equal(first, copy)


def test_compiled_assigns_write_targets_in_place() -> None:
    x, w, _, roots = step_graph()
    want = expected(x.numpy(), w.numpy(), 0.5)[2]
    memory = w.array

    def update() -> None:
        w.assign(roots[2])

    f = tn.compile(update)
    f()
    assert w.array is memory
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-5, atol=1e-6)
    source = _lean_source(f)
    assert "WRITING[0] = True" in source  # a step writes the target in place...
    assert "copyto" not in source  # ... rather than computing it aside and copying


def test_lean_programs_write_an_element_wise_step_into_a_dying_operand() -> None:
    """``h = x @ w; h += b`` in place: the add reuses the product's buffer (only it reads
    the product); the returned values are right run after run."""
    x = t32(rng.standard_normal((64, 300)))
    w = t32(rng.standard_normal((300, 200)))
    b = t32(rng.standard_normal(200))
    h = x @ w + b  # read twice: the add is a step of its own
    f = tn.compile(lambda: [ops.relu(h), h * 3.0])
    for _ in range(3):
        got = f()
        want = x.numpy() @ w.numpy() + b.numpy()
        np.testing.assert_allclose(got[0].numpy(), np.maximum(want, 0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1].numpy(), want * 3, rtol=1e-5, atol=1e-5)
    # the product's buffer, then the add over it into the same buffer
    # (the product written inline: ``np.dot`` into the buffer, ``np.matmul`` if not C-contiguous)
    product = r"v(\d+) = (\w+)\n(?: +(?:if|else).*\n +I\1_(?:dot|matmul)\(v\d+, v\d+, out=v\1\)\n)+"
    pattern = product + r" +v\d+ = K\d+\(v\1, v\d+, out=\2\)"
    assert re.search(pattern, _lean_source(f))


def test_the_last_reader_of_a_dying_value_writes_into_it() -> None:
    """An MSE's difference is read by the loss (a fresh total), then scaled into the
    gradient in its buffer (a large one: a small buffer the program keeps never reaches a
    returned value); whatever order the two run in, run after run, the numbers are
    numpy's."""
    p = t32(rng.standard_normal((200, 100)))
    y = t32(rng.standard_normal((200, 100)))

    def mse() -> list[Any]:
        d = p - y
        return [ops.reduce_mean(ops.square(d)), ops.reduce_sum(d * 3.0, 0)]

    def scaled_first() -> list[Any]:
        d = p - y
        return [ops.reduce_sum(d * 3.0, 0), ops.reduce_sum(d * d)]

    want = p.numpy() - y.numpy()
    sources = []
    for fn, total, at in ((mse, (want**2).mean(), 1), (scaled_first, (want**2).sum(), 0)):
        f = tn.compile(fn)
        for _ in range(3):
            got = f()
            np.testing.assert_allclose(got[at].numpy(), (want * 3).sum(0), rtol=1e-5, atol=1e-4)
            np.testing.assert_allclose(got[1 - at].numpy(), total, rtol=1e-5)
        sources.append(_lean_source(f))
    # the difference's buffer, then the scaling over it into the same buffer
    pattern = r"v(\d+) = K\d+\(v\d+, v\d+, out=(\w+)\)\n(.*\n)* +v\d+ = K\d+\(v\1, N\d+, out=\2\)"
    assert re.search(pattern, sources[0])


def test_a_value_a_view_also_reads_keeps_its_buffer() -> None:
    """``d``'s transpose is read by a product: a view of ``d``'s buffer, so the scaling
    that reads ``d`` last must not overwrite it."""
    p = t32(rng.standard_normal((200, 100)))
    y = t32(rng.standard_normal((200, 100)))
    w = t32(rng.standard_normal((200, 5)))

    def step() -> list[Any]:
        d = p - y
        return [ops.transpose(d) @ w, ops.reduce_sum(d * 3.0, 0)]

    f = tn.compile(step)
    want = p.numpy() - y.numpy()
    for _ in range(3):
        got = f()
        np.testing.assert_allclose(got[0].numpy(), want.T @ w.numpy(), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(got[1].numpy(), (want * 3).sum(0), rtol=1e-5, atol=1e-4)
    # the scaling may write into d's buffer only after the product read d's transpose
    source = _lean_source(f)
    d = re.search(r"v(\d+) = K\d+\(v\d+, v\d+, out=(\w+)\)", source)
    assert d is not None
    view = re.search(rf"v(\d+) = v{d[1]}\.T", source)
    assert view is not None
    scaled = re.search(rf"K\d+\(v{d[1]}, N\d+, out={d[2]}\)", source)
    product = re.search(rf"\(v{view[1]}, ", source)
    assert product is not None
    assert scaled is None or product.start() < scaled.start()


def test_a_cached_plan_keeps_none_of_the_evaluations_data() -> None:
    """The plan cache keeps structure only: once the user drops an evaluation's tensors, its
    inputs and values are freed (not held until the plan is evicted, 512 plans later)."""
    executor.clear_plan_cache()
    x = t32(rng.standard_normal((64, 48)))
    memory = x.numpy()
    held = weakref.ref(memory if memory.base is None else memory.base)
    del memory
    total = float(ops.reduce_sum(ops.exp(ops.tanh(x * 2.0) + 1.0)).numpy())
    assert np.isfinite(total)
    del x
    ops.reduce_sum(t32(np.ones(3))).numpy()  # another plan runs last
    gc.collect()
    assert held() is None
    assert len(executor._plans()) == 2  # the plans themselves stay cached
