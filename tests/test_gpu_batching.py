"""Per-sample loops batch on the GPU as on the CPU (the cupy emulator everywhere, a real GPU
where there is one): gathered stacks, slices of one tensor, outer products summed as one
contraction, and the softmax + NLL gradient."""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import ops

rng = np.random.default_rng(3)


def _loss(x: Any, t: Any, w: Any) -> Any:
    return ops.nll_loss(t, ops.softmax(ops.relu(x) @ w))


@pytest.mark.gpu
@pytest.mark.parametrize("spelling", ["tensors", "narrow", "rows"])
def test_a_per_sample_loop_batches_on_the_gpu_like_on_the_cpu(
    cupy_module: Any, spelling: str
) -> None:
    n = 8
    xb_np = rng.normal(size=(n, 6)).astype(np.float32)
    tb_np = np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)]
    w_np = (rng.normal(size=(6, 3)) * 0.5).astype(np.float32)

    def run(device: type[tn.DeviceTag]) -> tuple[Any, list[Any]]:
        def on(a: Any) -> Any:
            return tn.tensor(a, tn.Float32, device, (tn.Dim0, tn.Dim1, tn.Dim2)[a.ndim])

        w, xb, tb = on(w_np), on(xb_np), on(tb_np)
        xs, ts = [on(xb_np[i : i + 1]) for i in range(n)], [on(tb_np[i : i + 1]) for i in range(n)]

        def samples() -> list[tuple[Any, Any]]:
            if spelling == "tensors":
                return list(zip(xs, ts, strict=True))
            if spelling == "narrow":
                return [(ops.narrow(xb, 0, i, 1), ops.narrow(tb, 0, i, 1)) for i in range(n)]
            return [(xb[i], tb[i]) for i in range(n)]

        @tn.compile
        def step() -> Any:
            losses = [_loss(x, t, w) for x, t in samples()]
            total = functools.reduce(operator.add, losses)
            return total, tn.grad(total, w)

        loss, grad = step()
        assert step.traces == 1
        calls = step._last.program.calls if step._last is not None else {}
        return (loss.numpy(), grad.numpy()), list(calls)

    (gpu_loss, gpu_grad), gpu_ops = run(tn.GPU)
    (cpu_loss, cpu_grad), cpu_ops = run(tn.CPU)
    # the same batched schedule; on the CPU a gather's operands may be computed into its
    # rows (no gather kernel), where the GPU gathers them with one kernel
    gathers = {"concat", "stack", "batch_stack"}
    assert sorted(set(gpu_ops) - gathers) == sorted(set(cpu_ops) - gathers)
    np.testing.assert_allclose(gpu_loss, cpu_loss, rtol=1e-5)
    np.testing.assert_allclose(gpu_grad, cpu_grad, rtol=1e-4, atol=1e-6)


@pytest.mark.gpu
def test_the_group_kernels_keep_device_arrays_on_the_device(cupy_module: Any) -> None:
    from typed_nn.backends.numpy.batched import batch_dot_sum, batch_narrow, batch_stack

    x = rng.normal(size=(6, 8)).astype(np.float32)
    dx = cupy_module.asarray(x)
    for axis, starts, length in [(0, (0, 2, 4), 2), (1, (0, 4), 4), (1, (5, 0, 2), 3)]:
        got = batch_narrow(dx, axis, starts, length)
        assert isinstance(got, cupy_module.ndarray)
        want = np.stack([np.take(x, range(s, s + length), axis=axis) for s in starts])
        np.testing.assert_array_equal(got.get(), want)
    rows = [cupy_module.asarray(x[i : i + 1]) for i in range(6)]
    stacked = batch_stack(*rows)
    assert isinstance(stacked, cupy_module.ndarray)
    np.testing.assert_array_equal(stacked.get(), x[:, None, :])
    a, b = rng.normal(size=(6, 8, 1)), rng.normal(size=(6, 1, 5))
    got = batch_dot_sum(cupy_module.asarray(a), cupy_module.asarray(b))
    assert isinstance(got, cupy_module.ndarray)
    np.testing.assert_allclose(got.get(), np.tensordot(a, b, axes=([0, 2], [0, 1])), rtol=1e-12)


@pytest.mark.gpu
def test_the_rewrites_kernels_keep_device_arrays_on_the_device(cupy_module: Any) -> None:
    """``append_ones`` and ``sum_of_products`` run on cupy arrays too (the GPU backend
    registers the numpy kernels for them), though the folds that make them are host-only."""
    from typed_nn.backends.numpy.rewritten import append_ones, sum_of_products

    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    got = append_ones(cupy_module.asarray(x))
    assert isinstance(got, cupy_module.ndarray)
    np.testing.assert_array_equal(got.get(), np.concatenate([x, np.ones((3, 4, 1))], -1))
    total = sum_of_products(cupy_module.asarray(x), cupy_module.asarray(x), x.size)
    assert isinstance(total, cupy_module.ndarray)
    np.testing.assert_allclose(total.get(), (x * x).mean(), rtol=1e-5)
