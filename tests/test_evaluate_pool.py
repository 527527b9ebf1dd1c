"""The buffer pool recycles large buffers, and never one that anything still uses."""

from __future__ import annotations

import gc
import os
import resource

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import BufferPool, buffer_pool, options
from typed_nn.evaluate.cache import invalidate_caches
from typed_nn.evaluate.options import POOL_MAX_BYTES
from typed_nn.evaluate.pool import IDLE_REQUESTS

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


# --- the byte bound (least recently used sizes evicted first) --------------------------------


def resident_bytes() -> int:
    """This process's resident memory now (Linux), else its peak (ru_maxrss, KiB on Linux)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_the_pool_stays_within_its_byte_bound_over_4000_distinct_shapes() -> None:
    bound = 16 << 20
    pool = BufferPool()  # follows options.pool_max_bytes
    gc.collect()
    before = resident_bytes()
    with options.using(pool_max_bytes=bound):
        for i in range(4000):  # 64 KiB .. 320 KiB each: 774 MB in all, every page touched
            a = pool.empty((16_384 + 16 * i,), np.float32)
            a.fill(1.0)
            assert pool.held() <= bound
            del a
    grown = resident_bytes() - before
    assert pool.misses == 4000
    assert bound - (320 << 10) <= pool.held() <= bound
    assert pool.evictions == 4000 - len(pool._free)
    assert grown < bound + (128 << 20), f"RSS grew by {grown / 2**20:.0f} MiB"


def test_the_least_recently_used_size_is_evicted_first() -> None:
    size = 1 << 14  # 64 KiB of float32
    pool = BufferPool(min_bytes=1024, max_bytes=4 * (3 * size + 6))  # room for three buffers
    pointer = {}
    for n in (size, size + 1, size + 2):
        pointer[n] = pool.empty((n,), np.float32).__array_interface__["data"][0]
    pool.empty((size,), np.float32)  # a hit: `size` is now the most recently used
    pool.empty((size + 3,), np.float32)  # a miss that evicts size + 1, the least recently used
    assert pool.evictions == 1
    assert pool.held() == 4 * (3 * size + 5)
    assert pool.empty((size,), np.float32).__array_interface__["data"][0] == pointer[size]
    hits = pool.hits
    pool.empty((size + 1,), np.float32)
    assert pool.hits == hits  # evicted: allocated afresh


def test_a_buffer_larger_than_the_bound_is_not_kept_and_in_use_ones_survive_eviction() -> None:
    pool = BufferPool(min_bytes=1024, max_bytes=1 << 20)
    big = pool.empty((1 << 19,), np.float32)  # 2 MiB > bound
    assert pool.held() == 0
    kept = pool.empty((1 << 17,), np.float32)  # 512 KiB
    kept[:] = 7.0
    pool.empty((1 << 17,), np.float64)  # 1 MiB: evicts `kept` from the pool, not from its user
    assert pool.held() == 1 << 20
    assert (kept == 7.0).all()
    assert big.size == 1 << 19
    pool.trim(0)
    assert pool.held() == 0


def test_lowering_the_bound_trims_this_threads_pool_at_once_and_others_at_their_next_miss() -> None:
    mine = buffer_pool()
    mine.empty((N,), np.float32)
    other = BufferPool(min_bytes=1024)  # stands for another thread's pool
    for n in range(1 << 14, (1 << 14) + 8):
        other.empty((n,), np.float32)
    assert other.held() > 256 << 10
    with options.using(pool_max_bytes=256 << 10):
        assert mine.held() <= 256 << 10
        assert other.held() > 256 << 10
        other.empty((1 << 15,), np.float32)
        assert other.held() <= 256 << 10
    assert options.pool_max_bytes == POOL_MAX_BYTES


def test_the_bound_option_is_checked() -> None:
    with pytest.raises(tn.OptionError, match=r"cannot set the evaluator option pool_max_bytes"):
        options.pool_max_bytes = -1
    with (
        pytest.raises(tn.OptionError, match=r"expected : an int >= 0 \(bytes\)\n.*'1GB'"),
        options.using(pool_max_bytes="1GB"),  # type: ignore[arg-type]
    ):
        pass
    with pytest.raises(tn.OptionError, match="received : True"):
        options.pool_max_bytes = True
    assert options.pool_max_bytes == POOL_MAX_BYTES


def test_evaluations_of_ever_new_shapes_keep_the_threads_pool_within_the_option() -> None:
    pool = buffer_pool()
    with options.using(pool_max_bytes=1 << 20):
        for i in range(60):  # variable-length batches: every evaluation a new size
            x = t32(rng.normal(size=N + i))
            result = tn.evaluate(ops.exp(x) * 2.0 + 1.0)
            assert pool.held() <= 1 << 20
            del result


def test_the_pool_shrinks_back_to_a_steady_loop_after_a_stream_of_new_shapes() -> None:
    """#33: ever-changing shapes (sequence lengths) then a steady step: the sizes the loop no
    longer asks for are released, so what the pool holds returns to the loop's buffers."""
    pool = BufferPool(max_bytes=1 << 40)
    for n in range(20_000, 24_000):  # 4,000 distinct sizes of 80 KB: 320 MB unbounded
        pool.empty((n,), np.float32)
    assert pool.held() > 100 << 20
    steady = [(30_000,), (31_000,)]
    for _ in range(IDLE_REQUESTS // 2 + 64):
        for shape in steady:
            pool.empty(shape, np.float32)
    assert pool.held() == 4 * (30_000 + 31_000)
    assert pool.hits >= IDLE_REQUESTS  # the loop's buffers were reused throughout
