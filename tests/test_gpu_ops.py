"""The GPU op suite: every catalogue op's GPU result equals the CPU backend's, and whole
evaluations (fused chain, ``out=``, training) agree. Needs cupy and a GPU; the harness itself
is checked on the CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_replay import record_cpu_calls, replay
from graphs import CATALOGUE, check_graph, random_graphs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import executor, options, stats
from typed_nn.evaluate.cache import invalidate_caches
from typed_nn.ops import declare

Untyped = Any
SETTINGS = settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _extra_cpu_calls() -> None:
    """Evaluate what the random graphs never build: sources, conv/pool, reductions, batched
    and rewritten nodes (the evaluator makes the last two from these expressions)."""
    rng = np.random.default_rng(1)
    x = tn.tensor(rng.standard_normal((2, 3, 6, 6)), tn.Float32, tn.CPU, tn.Dim4)
    w = tn.tensor(rng.standard_normal((4, 3, 3, 3)), tn.Float32, tn.CPU, tn.Dim4)
    u: Untyped = ops
    y = u.conv2d(x, w, stride=1, padding=1)
    tn.evaluate(u.reduce_sum(y * y))
    tn.evaluate(u.max_pool2d(x, 2))
    m = tn.tensor(rng.standard_normal((5, 4)), tn.Float32, tn.CPU, tn.Dim2)
    for f in (u.reduce_sum, u.reduce_mean, u.reduce_max):
        tn.evaluate(f(m, 1))
    tn.evaluate(u.argmax(m, 1))


def _gpu_array(cupy: Any) -> Any:
    return lambda v: cupy.asarray(v)


def test_recorder_sees_the_cpu_calls_and_replay_on_cpu_agrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = record_cpu_calls(monkeypatch)
    a = tn.tensor(np.linspace(-1, 1, 6).reshape(2, 3), tn.Float64, tn.CPU, tn.Dim2)
    tn.evaluate(ops.sigmoid(a) * 2.0 + ops.reduce_sum(a))
    _extra_cpu_calls()
    assert {c.op for c in calls} >= {"sigmoid", "mul", "add", "reduce_sum", "conv2d", "argmax"}
    assert replay(calls, tn.CPU, lambda v: v) == {c.op for c in calls}


@pytest.mark.gpu
@pytest.mark.parametrize("spec", CATALOGUE, ids=lambda spec: spec.name)
@SETTINGS
@given(data=st.data())
def test_every_catalogue_op_on_gpu_equals_cpu(
    spec: Any, data: st.DataObject, cupy_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tn.devices.array_module(tn.GPU)
    with monkeypatch.context() as patch:
        calls = record_cpu_calls(patch)
        g = data.draw(random_graphs(catalogue=[spec], max_ops=2))
        for root in g.roots:
            tn.evaluate(root.expr)
    replay(calls, tn.GPU, _gpu_array(cupy_module))


@pytest.mark.gpu
def test_the_ops_outside_the_random_graphs_on_gpu_equal_cpu(
    cupy_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tn.devices.array_module(tn.GPU)
    calls = record_cpu_calls(monkeypatch)
    _extra_cpu_calls()
    done = replay(calls, tn.GPU, _gpu_array(cupy_module))
    assert {"conv2d", "max_pool2d", "reduce_mean", "reduce_max", "argmax"} <= done


@pytest.mark.gpu
@settings(SETTINGS, max_examples=30)
@given(data=st.data())
def test_random_graphs_evaluated_on_gpu_match_numpy(data: st.DataObject, cupy_module: Any) -> None:
    """The differential harness with its data on the GPU, through the optimising evaluator
    (fused kernels, rewrites, batching, plan reuse) and its lean programs; no run may fall
    back to the reference evaluator."""
    g = data.draw(random_graphs(device=tn.GPU))
    roots = [root.expr for root in g.roots]
    fallbacks = stats.fallbacks
    for flags in ({}, {"fuse": False}, {"cse": False, "rewrite": False, "batch": False}):
        with options.using(**flags):
            for _ in range(2):  # the second run reuses the plan
                invalidate_caches()
                handles = [root.eval_register() for root in roots]
                tn.EvalPlan.eval()
                check_graph(g, [h.data().numpy() for h in handles])
            compiled = tn.compile(lambda: roots)
            check_graph(g, [t.numpy() for t in compiled()])
    assert stats.fallbacks == fallbacks


def _pair(shape: tuple[int, ...], seed: int = 0) -> tuple[Untyped, Untyped]:
    v = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    dim = tn.tags.dim_of_rank(len(shape))
    return tn.tensor(v, tn.Float32, tn.CPU, dim), tn.tensor(v, tn.Float32, tn.GPU, dim)


def _chain(x: Untyped, b: Untyped) -> Untyped:
    return ops.tanh(2.0 * x + b) * ops.sigmoid(-1.5 * x) + 0.5 * x


@pytest.mark.gpu
def test_fused_chain_on_gpu_equals_cpu(cupy_module: Any) -> None:
    (xc, xg), (bc, bg) = _pair((300, 70)), _pair((70,), 1)
    got = tn.evaluate(_chain(xg, bg))
    assert type(got.array).__module__.startswith("cupy")
    np.testing.assert_allclose(got.numpy(), _chain(xc, bc).numpy(), rtol=2e-5, atol=1e-6)


@pytest.mark.optimiser
@pytest.mark.gpu
def test_fused_chain_on_gpu_is_one_kernel(cupy_module: Any) -> None:
    """Needs the evaluator's GPU region hook (see docs/gpu.md): one kernel per region."""
    from typed_nn.backends.cupy.region import kernel_cache

    (_, xg), (_, bg) = _pair((64, 32)), _pair((32,), 1)
    before = kernel_cache().misses + kernel_cache().hits
    tn.evaluate(_chain(xg, bg))
    assert kernel_cache().misses + kernel_cache().hits == before + 1


@pytest.mark.gpu
def test_update_in_place_on_gpu_equals_cpu(cupy_module: Any) -> None:
    (wc, wg), (gc, gg) = _pair((128, 64)), _pair((128, 64), 2)
    for w, g in ((wc, gc), (wg, gg)):
        w.assign(-0.1 * (g + 0.01 * w))
    np.testing.assert_allclose(wg.numpy(), wc.numpy(), rtol=2e-6, atol=1e-7)


@pytest.mark.gpu
def test_to_device_round_trip(cupy_module: Any) -> None:
    xc, _ = _pair((3, 4))
    on_gpu = tn.evaluate(ops.to_device(xc, tn.GPU))
    assert isinstance(on_gpu.array, cupy_module.ndarray)
    back = tn.evaluate(ops.to_device(on_gpu, tn.CPU))
    np.testing.assert_array_equal(back.array, xc.array)


@pytest.mark.gpu
def test_equal_scalars_on_two_devices_stay_two_values(cupy_module: Any) -> None:
    fallbacks = stats.fallbacks
    on_cpu, on_gpu = tn.scalar(2.0, tn.Float32, tn.CPU), tn.scalar(2.0, tn.Float32, tn.GPU)
    got = tn.evaluate(ops.to_device(on_cpu, tn.GPU) * on_gpu + on_gpu)
    assert float(got.numpy()) == 6.0
    assert stats.fallbacks == fallbacks  # no GPU op was handed the host scalar


@pytest.mark.gpu
def test_a_gpu_implementation_returning_host_data_is_caught(
    cupy_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tn.devices.array_module(tn.GPU)  # registers the GPU implementations first
    monkeypatch.setitem(
        declare._IMPLS["exp"], "GPU", [declare.Kernel(0, lambda x: np.exp(x.get()))]
    )
    _, x = _pair((2,))
    with pytest.raises(
        tn.EvaluationError,
        match=r"(?s)the GPU implementation of exp returned the wrong result\..*"
        r"received : float32\(2,\) on CPU",
    ):
        tn.evaluate(ops.exp(x))


@pytest.mark.optimiser
@pytest.mark.gpu
def test_a_gpu_target_is_written_once_and_returned(cupy_module: Any) -> None:
    """A target on the GPU is written by the program (in place by its fused kernel), whose
    root is then the target itself: the caller has nothing left to copy."""
    (wc, wg), (gc, gg) = _pair((64, 32)), _pair((64, 32), 2)
    for w, g in ((wc, gc), (wg, gg)):
        memory = w.array
        got = executor.execute([w - 0.1 * g], {0: w})
        assert got[0] is w
        assert w.array is memory
    # a GPU kernel contracts w - 0.1 * g into one multiply-add: last-bit differences where
    # the two nearly cancel
    np.testing.assert_allclose(wg.numpy(), wc.numpy(), rtol=1e-6, atol=1e-7)
