"""The null device (typed_nn/backends/null.py): kernels that compute nothing, so the
evaluator's scheduling (fusion, rewrites, the buffer plan, tn.compile's replay) is checked
without arithmetic, and it schedules exactly as the CPU does."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import CPU, Float32, ops
from typed_nn.backends import null
from typed_nn.devices import device_of
from typed_nn.evaluate import last_program, options, stats
from typed_nn.tags import DeviceTag

BATCH, FEATURES, HIDDEN, CLASSES = 8, 4, 16, 3


@pytest.fixture(autouse=True)
def null_device() -> None:
    null.register()
    null.kernel_calls.clear()
    null.region_calls[0] = 0
    stats.reset()


def _mlp_loss(device: type[DeviceTag]) -> tuple[Any, list[Any]]:
    """A two-layer MLP's loss on ``device`` (zeros: the null device has no values to fill)."""
    x = tn.zeros((BATCH, FEATURES), Float32, device)
    y = tn.zeros((BATCH, CLASSES), Float32, device)
    w1, b1 = tn.zeros((FEATURES, HIDDEN), Float32, device), tn.zeros((HIDDEN,), Float32, device)
    w2, b2 = tn.zeros((HIDDEN, CLASSES), Float32, device), tn.zeros((CLASSES,), Float32, device)
    h = ops.tanh(x @ w1 + b1) * 0.5 + 0.5
    loss = ops.nll_loss(y, ops.softmax(h @ w2 + b2))
    return loss, [w1, b1, w2, b2]


def _schedule(device: type[DeviceTag]) -> tuple[Counter[str], int, list[Any]]:
    """Kernel applications by op, fused regions and result shapes of the MLP's loss and
    gradients evaluated in one pass on ``device``."""
    loss, params = _mlp_loss(device)
    grads = tn.grad(loss, params)
    handles = [e.eval_register() for e in (loss, *grads)]
    before = stats.fused_regions
    tn.EvalPlan.eval()
    program = last_program()
    assert program is not None
    shapes = [h.data().shape for h in handles]
    return Counter(program.calls), stats.fused_regions - before, shapes


@pytest.mark.optimiser
def test_the_null_device_schedules_an_mlp_as_the_cpu_does_without_arithmetic() -> None:
    cpu_calls, cpu_regions, cpu_shapes = _schedule(CPU)
    calls, regions, shapes = _schedule(null.NullDevice)
    assert calls == cpu_calls  # the same rewrites, batching and kernels
    assert regions == cpu_regions > 0  # the same fused regions
    assert (
        shapes == cpu_shapes == [(), (FEATURES, HIDDEN), (HIDDEN,), (HIDDEN, CLASSES), (CLASSES,)]
    )
    # Every kernel was a null one: each fused region one call, every other node one call.
    assert null.region_calls[0] == regions
    assert null.kernel_calls == calls


@pytest.mark.optimiser
def test_a_compiled_step_replays_its_plan_on_the_null_device() -> None:
    _, params = _mlp_loss(null.NullDevice)
    w1, b1, w2, b2 = params

    @tn.compile
    def sgd_step(x: Any, y: Any, lr: float) -> Any:
        h = ops.tanh(x @ w1 + b1) * 0.5 + 0.5
        loss = ops.nll_loss(y, ops.softmax(h @ w2 + b2))
        grads = tn.grad(loss, params)
        for p, g in zip(params, grads, strict=True):
            p.assign(p - lr * g)
        return loss

    x = tn.zeros((BATCH, FEATURES), Float32, null.NullDevice)
    y = tn.zeros((BATCH, CLASSES), Float32, null.NullDevice)
    result = sgd_step(x, y, 0.1)
    per_step = sum(null.kernel_calls.values())
    regions_per_step = null.region_calls[0]
    assert per_step > 0
    assert regions_per_step > 0
    analyses = stats.analyses
    for lr in (0.05, 0.01):
        result = sgd_step(x, y, lr)
    assert sgd_step.traces == 1
    assert stats.analyses == analyses  # replayed: nothing analysed again
    assert sum(null.kernel_calls.values()) == 3 * per_step
    assert null.region_calls[0] == 3 * regions_per_step
    assert result.shape == ()
    assert isinstance(result._array, null.NullArray)
    assert isinstance(w1._array, null.NullArray)
    assert w1.shape == (FEATURES, HIDDEN)


def test_numpy_refuses_to_compute_on_a_null_array() -> None:
    a: Any = null.NullArray((2, 3), np.float32)
    with pytest.raises(TypeError):
        np.add(a, a)
    with pytest.raises(TypeError):
        np.sum(a)
    with pytest.raises(tn.DeviceError, match="the null device holds no values"):
        tn.zeros((2, 3), Float32, null.NullDevice).numpy()


def test_the_null_device_is_registered_by_its_tag() -> None:
    device = device_of(null.NullDevice)
    assert device.tag is null.NullDevice
    assert not device.host_pool
    assert not device.host_regions
    assert device.array_type is null.NullArray
    assert device.compile_region is not None
    assert tn.devices.device_of_array(null.NullArray((1,), np.float32)) is null.NullDevice
    with pytest.raises(tn.DeviceError, match="unknown device tag"):
        device_of(DeviceTag)


@pytest.mark.optimiser
def test_a_null_kernel_needs_a_compiled_sites_shape() -> None:
    loss, _ = _mlp_loss(null.NullDevice)
    with (
        options.using(specialise=False),
        pytest.raises(tn.TypedNNError, match="without a compiled plan's site"),
    ):
        tn.evaluate(loss)
