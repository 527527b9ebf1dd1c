"""Fused element-wise regions: blocked passes with broadcasting, no full-size temporaries,
``out=`` written in place when safe and copied when not."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from helpers import t32, untyped

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import executor, fuse, hooks, last_program, options, stats
from typed_nn.evaluate.cache import invalidate_caches

rng = np.random.default_rng(2)


def _peak(fn: Any) -> int:
    """Peak bytes traced while ``fn`` runs (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_mshadow_update_in_place_allocates_nothing_full_size() -> None:
    if options.sanitize:
        pytest.skip("the sanitizer fills and keeps buffers: its allocations are its own")
    n = 1_000_000
    w0 = rng.normal(size=n).astype(np.float32)
    g = t32(rng.normal(size=n))
    w = t32(w0.copy())
    eta, lam = 0.1, 0.01

    def step() -> None:
        tn.evaluate(-eta * (g + lam * w), out=w)

    step()  # analyse the plan once
    expected = -eta * (g.numpy() + lam * w.numpy())
    peak = _peak(step)
    assert peak < 4 * n // 8, f"a full-size temporary was allocated ({peak} bytes)"
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)
    assert "for _ix" in last_program().source  # type: ignore[union-attr]
    assert "copyto" not in last_program().source  # type: ignore[union-attr]


def test_chain_allocates_only_its_result() -> None:
    if options.sanitize:
        pytest.skip("the sanitizer fills and keeps buffers: its allocations are its own")
    n = 1_000_000
    x = t32(rng.normal(size=n))

    def make() -> tn.TensorLike[tn.Float32, tn.CPU, tn.Dim1]:
        return ops.tanh(x * 0.5 + 0.1) * ops.sigmoid(x * 2.0) + 0.5 * x

    tn.evaluate(make())
    with options.using(pool=False):
        tn.evaluate(make())
        result: list[Any] = []
        peak = _peak(lambda: result.append(tn.evaluate(make())))
    assert peak < 1.25 * 4 * n
    xv = x.numpy()
    expected = np.tanh(xv * 0.5 + 0.1) * (1 / (1 + np.exp(-2 * xv))) + 0.5 * xv
    np.testing.assert_allclose(result[0].numpy(), expected, rtol=2e-6, atol=1e-6)


def test_unfused_chain_materialises_each_node() -> None:
    x = t32(rng.normal(size=300_000))
    with options.using(fuse=False, pool=False):
        tn.evaluate(ops.exp(x) + 1.0)  # analyse
        peak = _peak(lambda: tn.evaluate(ops.exp(x * 2.0) * 3.0 + 1.0))
    assert peak > 2.5 * 4 * 300_000  # three full-size results: the fused test above is real


@pytest.mark.parametrize(
    "shape", [(300, 500), (3, 50_000), (2, 3, 40_000), (70_001,), (5, 2, 3, 4_000)]
)
def test_blocked_regions_broadcast_lower_rank_operands(shape: tuple[int, ...]) -> None:
    full = rng.normal(size=shape).astype(np.float32)
    tail = rng.normal(size=shape[1:]).astype(np.float32)
    last = rng.normal(size=shape[-1:]).astype(np.float32)
    s = np.float32(0.25)
    a, b, c = t32(full), t32(tail), t32(last)
    sc = tn.scalar(float(s), tn.Float32, tn.CPU)
    expr = untyped.ops.exp(a * 0.5 + b) * c - sc + ops.square(a)
    got = tn.evaluate(expr).numpy()
    assert "for _ix" in last_program().source  # type: ignore[union-attr]
    expected = np.exp(full * 0.5 + tail) * last - s + np.square(full)
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("size", [20, 200_000])
def test_a_value_read_twice_inside_a_region_stays_in_scratch(size: int) -> None:
    x = t32(rng.normal(size=size))
    e = ops.exp(x)
    got = tn.evaluate(e * e + e).numpy()
    source = last_program().source  # type: ignore[union-attr]
    assert source.count("alloc(") + source.count("np.empty(") == 1  # the result only
    np.testing.assert_allclose(got, np.exp(x.numpy()) ** 2 + np.exp(x.numpy()), rtol=1e-6)


def test_out_aliasing_an_operand_read_by_an_earlier_matrix_product_is_written_directly() -> None:
    w0 = rng.normal(size=(4, 4)).astype(np.float32)
    w = t32(w0.copy())
    tn.evaluate(w @ w + w, out=w)  # the product reads w before the fused pass writes it
    np.testing.assert_allclose(w.numpy(), w0 @ w0 + w0, rtol=1e-5)
    assert "copyto" not in last_program().source  # type: ignore[union-attr]


def test_out_aliasing_an_operand_read_by_a_later_step_is_copied() -> None:
    w0 = rng.normal(size=(64, 64)).astype(np.float32)
    w = t32(w0.copy())
    # The update is step 1; the product (another root) reads w after it: copy at the end.
    new, product = executor.execute([w - 1.0, ops.transpose(w) @ w], {0: w})
    np.testing.assert_allclose(product.numpy(), w0.T @ w0, rtol=1e-4)
    np.testing.assert_allclose(new.numpy(), w0 - 1.0, rtol=1e-6)
    assert "copyto" in last_program().source  # type: ignore[union-attr]


def test_out_aliasing_an_operand_whose_view_is_returned_is_copied() -> None:
    w0 = rng.normal(size=(3, 5)).astype(np.float32)
    w = t32(w0.copy())
    new, _ = executor.execute([w * 2.0, ops.transpose(w)], {0: w})
    np.testing.assert_allclose(new.numpy(), w0 * 2.0, rtol=1e-6)
    assert "copyto" in last_program().source  # type: ignore[union-attr]


def test_out_overlapping_an_operand_partially_is_copied() -> None:
    m0 = rng.normal(size=(2, 3)).astype(np.float32)
    m = t32(m0.copy())
    row = m[0]  # a view of m's first row
    tn.evaluate(untyped.ops.reduce_sum(m, first=1) * 2.0, out=row)
    np.testing.assert_allclose(m.numpy()[0], m0.sum(axis=0) * 2.0, rtol=1e-6)
    np.testing.assert_array_equal(m.numpy()[1], m0[1])


def test_out_with_broadcast_alias_is_copied() -> None:
    # out is the full-shape operand, read also through a grad op's non-aliasable slot.
    g0 = rng.normal(size=(3, 4)).astype(np.float32)
    x = t32(rng.normal(size=(3, 4)))
    g = t32(g0.copy())
    tn.evaluate(ops.exp_grad(g, x), out=g)
    np.testing.assert_allclose(g.numpy(), g0 * np.exp(x.numpy()), rtol=1e-6)


def test_assign_writes_into_the_tensor() -> None:
    w = t32(np.ones((2, 3)))
    before = w.numpy()
    w.assign(w * 3.0 - 1.0)
    assert w.numpy() is before
    np.testing.assert_array_equal(before, np.full((2, 3), 2.0, np.float32))


def test_node_checks_see_every_node_unfused() -> None:
    seen: list[str] = []
    hooks.node_checks.append(lambda node, result: seen.append(node.op.name))
    try:
        x = t32(rng.normal(size=(2, 2)))
        tn.evaluate(ops.exp(x * 2.0) + 1.0)
    finally:
        hooks.node_checks.pop()
    assert sorted(seen) == ["add", "exp", "mul"]


def test_blocks_cover_the_shape_exactly() -> None:
    for shape in [(10,), (4, 7), (3, 5, 2), (1, 1), (13, 1, 1)]:
        blocks = fuse.Blocks(shape, block=6)
        hit = np.zeros(shape, int)
        for idx in blocks.index:
            hit[idx] += 1
        assert (hit == 1).all()


def test_fused_region_counts_each_op_once() -> None:
    x = t32(rng.normal(size=(3, 3)))
    stats.reset()
    stats.counting = True
    try:
        invalidate_caches()
        tn.evaluate(ops.exp(x * 2.0) + 1.0)
    finally:
        stats.counting = False
    assert stats.kernel_calls == {"mul": 1, "exp": 1, "add": 1}


def _chain(x: Any) -> Any:
    return ops.tanh(0.5 * x + 0.1) * ops.sigmoid(2.0 * x) + 0.5 * x


def _chain_by_division(xv: Any) -> Any:
    """``_chain`` as the hand-written passes compute it: ``tanh(u) / (1 + exp((-2) * x))``."""
    return np.tanh(0.5 * xv + 0.1) / (np.exp(-2.0 * xv) + 1) + 0.5 * xv


@pytest.mark.parametrize("size", [1000, 200_000])
def test_sigmoid_folds_into_its_scale_and_product(size: int) -> None:
    # sigmoid's four passes run inside the region: its negation merges into the scale
    # before it, its reciprocal into the product after it (8 passes, was 10)
    x = t32(rng.normal(size=size) * 4)
    got = tn.evaluate(_chain(x)).numpy()
    source = last_program().source  # type: ignore[union-attr]
    assert ("for _ix" in source) == (size > fuse.BLOCK)
    assert "U_divide(" in source
    assert "U_exp(" in source
    assert "negative" not in source
    assert "reciprocal" not in source
    assert source.count("out=") == 8
    np.testing.assert_array_equal(got, _chain_by_division(x.numpy()))
    xv = x.numpy().astype(np.float64)
    exact = np.tanh(0.5 * xv + 0.1) / (1 + np.exp(-2 * xv)) + 0.5 * xv
    np.testing.assert_allclose(got, exact, rtol=1e-6, atol=1e-7)


def test_folded_chain_agrees_compiled_and_uncompiled() -> None:
    x = t32(rng.normal(size=150_000) * 4)
    y = tn.zeros((150_000,), tn.Float32, tn.CPU)

    @tn.compile
    def step(v: Any) -> None:
        y.assign(_chain(v))

    step(x)
    compiled = y.numpy().copy()
    np.testing.assert_array_equal(tn.evaluate(_chain(x)).numpy(), compiled)


def test_a_sigmoid_read_twice_keeps_its_reciprocal() -> None:
    x = t32(rng.normal(size=1000))
    s = ops.sigmoid(x * 3.0)
    got = tn.evaluate(s * x + s).numpy()
    source = last_program().source  # type: ignore[union-attr]
    assert "U_reciprocal(" in source
    assert "divide" not in source
    xv = x.numpy()
    sv = 1 / (np.exp(-3.0 * xv) + 1)
    np.testing.assert_array_equal(got, sv * xv + sv)


def test_a_number_argument_is_not_folded_into_a_constant() -> None:
    f = tn.compile(lambda x, c: ops.sigmoid(x * c) * x)
    x = t32(rng.normal(size=1000))
    for c in (1.0, -3.0, 0.5):
        want = x.numpy() / (1 + np.exp(-(x.numpy() * np.float32(c))))
        np.testing.assert_allclose(f(x, c).numpy(), want, rtol=1e-6, atol=1e-7)
    assert f.traces == 1


def test_without_rewrites_the_passes_are_not_folded() -> None:
    x = t32(rng.normal(size=1000))
    with options.using(rewrite=False):
        got = tn.evaluate(_chain(x)).numpy()
        source = last_program().source  # type: ignore[union-attr]
    assert "U_negative(" in source
    assert "U_reciprocal(" in source
    assert "divide" not in source
    xv = x.numpy()
    sig = 1 / (np.exp(-(2.0 * xv)) + 1)
    np.testing.assert_array_equal(got, np.tanh(0.5 * xv + 0.1) * sig + 0.5 * xv)
