"""The buffer pool recycles large buffers, and never one that anything still uses."""

from __future__ import annotations

import gc

import numpy as np
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import BufferPool, buffer_pool, options
from typed_nn.evaluate.cache import invalidate_caches

N = 50_000  # 200 KB of float32: above the pool's threshold
rng = np.random.default_rng(3)


def test_a_free_buffer_is_reused_and_a_taken_one_is_not() -> None:
    pool = BufferPool(min_bytes=1024)
    a = pool.empty((N,), np.float32)
    b = pool.empty((N,), np.float32)
    assert not np.shares_memory(a, b)  # a is still referenced
    pointer = a.__array_interface__["data"][0]
    del a
    c = pool.empty((100, N // 100), np.float32)  # same size, another shape
    assert c.__array_interface__["data"][0] == pointer
    assert pool.hits == 1
    assert pool.misses == 2


def test_a_view_keeps_its_buffer_taken() -> None:
    pool = BufferPool(min_bytes=1024)
    a = pool.empty((N,), np.float32)
    part = a[10:20]
    del a
    b = pool.empty((N,), np.float32)
    assert not np.shares_memory(part, b)


def test_small_requests_bypass_the_pool() -> None:
    pool = BufferPool(min_bytes=1 << 16)
    pool.empty((4, 4), np.float32)
    assert pool.held() == 0
    assert pool.hits == pool.misses == 0


def test_results_handed_to_users_are_never_recycled() -> None:
    x = t32(rng.normal(size=N))
    r1 = tn.evaluate(ops.exp(x) + 1.0)
    keep = r1.numpy().copy()
    r2 = tn.evaluate(ops.exp(x) * 3.0 - 1.0)
    r3 = tn.evaluate(ops.sin(x) + 2.0)
    assert not np.shares_memory(r1.numpy(), r2.numpy())
    assert not np.shares_memory(r1.numpy(), r3.numpy())
    np.testing.assert_array_equal(r1.numpy(), keep)


def test_handles_node_caches_and_numpy_views_keep_results_alive() -> None:
    x = t32(rng.normal(size=N))
    h = (ops.exp(x) + 1.0).eval_register()
    expr = ops.cos(x) * 2.0
    view = tn.evaluate(ops.sin(x) - 1.0).numpy()[5:]  # only a numpy view survives
    tn.EvalPlan.eval()
    cached = tn.evaluate(expr)
    del cached  # still cached on expr
    gc.collect()
    saved = (h.data().numpy().copy(), tn.evaluate(expr).numpy().copy(), view.copy())
    for _ in range(4):
        invalidate_caches()
        tn.evaluate(ops.tan(x) + 5.0)
        tn.evaluate(ops.sqrt(ops.square(x)) * 7.0)
    np.testing.assert_array_equal(h.data().numpy(), saved[0])
    np.testing.assert_array_equal(view, saved[2])
    # invalidation only marks the cache stale: the node still holds its buffer
    np.testing.assert_array_equal(expr._result.numpy(), saved[1])  # type: ignore[attr-defined]


def test_a_training_loop_stops_allocating_after_the_first_steps() -> None:
    w = t32(rng.normal(size=(200, 100)))
    x = t32(rng.normal(size=(64, 200)))
    pool = buffer_pool()

    def step() -> None:
        y = ops.tanh(x @ w)
        grad = ops.transpose(x) @ ops.tanh_grad(y * 0.01, y)
        w.assign(w - 0.1 * grad)

    for _ in range(3):
        step()
    misses = pool.misses
    for _ in range(10):
        step()
    assert pool.misses == misses
    assert pool.hits > 0


def test_pool_off_allocates_fresh_buffers() -> None:
    x = t32(rng.normal(size=N))
    pool = buffer_pool()
    tn.evaluate(ops.exp(x))
    before = (pool.hits, pool.misses)
    with options.using(pool=False):
        for _ in range(3):
            tn.evaluate(ops.exp(x) + 1.0)
    assert (pool.hits, pool.misses) == before
