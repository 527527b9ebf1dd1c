"""A compiled GPU step replayed as one CUDA graph equals the plain step, bit for bit.

``evaluate/replay.py`` captures a Step's program at its second call and launches the capture
after; ``backends/cupy/graph.py`` owns the graph's inputs, numbers, memory and outputs. On the
emulator (``cupy_capture.py``) a capture records without running, so a replay that read a
capture's garbage, a number frozen at capture time, an argument not copied in, or a result
overwritten by the next launch shows up here as a wrong number.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assign_rules, tagged
from test_gpu_compile import _Flaky

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import hooks, options, stats
from typed_nn.model import SGD, Adam
from typed_nn.ops import declare
from typed_nn.ops.declare import implement, implementation
from typed_nn.train.classifier import build_mlp
from typed_nn.train.step import TrainStep
from typed_nn.train.trainee import LayerTrainee

KINDS = ["sgd", "momentum", "adam"]


@pytest.fixture(autouse=True)
def _compiled_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    # the compiled program, also in debug mode (whose sanitizer keeps steps plain)
    monkeypatch.setattr(hooks, "node_checks", [])
    monkeypatch.setattr(options, "sanitize", False)


def _assign_run(
    kind: str, graph: bool, same_arrays: bool, products: bool = False
) -> tuple[list[Any], list[Any], str]:
    """Five steps of ``assign_rules`` with a learning rate that changes at every call: the
    weights and state after them, each call's loss, the step's graph status."""
    rng = np.random.default_rng(7)
    shapes, y_shape = ([(8, 16), (16, 2)], (32, 2)) if products else ([(32, 8)] * 2, (32, 8))
    params = [tagged(rng.normal(size=s) * 0.1, tn.Float64, tn.GPU) for s in shapes]
    state = [[tagged(np.zeros(p.shape), tn.Float64, tn.GPU) for _ in range(2)] for p in params]
    step = tn.compile(assign_rules(kind, params, state, products), cuda_graph=graph)
    x, y = (
        tagged(np.zeros((32, 8)), tn.Float64, tn.GPU),
        tagged(np.zeros(y_shape), tn.Float64, tn.GPU),
    )
    losses = []
    for i in range(5):
        if same_arrays:  # new values in the same arrays, as fit gathers its batches
            x.array[...] = tn.devices.array_module(tn.GPU).asarray(rng.normal(size=(32, 8)))
            y.array[...] = tn.devices.array_module(tn.GPU).asarray(rng.normal(size=y_shape))
        else:
            x = tagged(rng.normal(size=(32, 8)), tn.Float64, tn.GPU)
            y = tagged(rng.normal(size=y_shape), tn.Float64, tn.GPU)
        losses.append(step(x, y, 0.05 / (i + 1)))
    values = [p.numpy() for p in params] + [s.numpy() for st in state for s in st]
    return values, [loss.numpy() for loss in losses], step.graph_status


def _same(a: list[Any], b: list[Any]) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.gpu
@pytest.mark.parametrize("same_arrays", [True, False], ids=["arrays read in place", "copied in"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_replayed_step_equals_the_plain_step_bit_for_bit(
    cupy_module: Any, kind: str, same_arrays: bool
) -> None:
    plain, plain_losses, status = _assign_run(kind, False, same_arrays)
    assert status == "plain: switched off (cuda_graph=False)"
    before = stats.graph_replays
    replayed, losses, status = _assign_run(kind, True, same_arrays)
    _same(replayed, plain)
    _same(losses, plain_losses)  # each call's result, read after the later calls ran
    assert status.startswith("replaying a CUDA graph")
    assert ("copied in" in status) is not same_arrays
    assert stats.graph_replays - before == (3 if same_arrays else 2)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
def test_a_step_with_matrix_products_is_replayed_bit_for_bit(cupy_module: Any, kind: str) -> None:
    # the products go through typed_nn's cuBLAS handle (backends/cupy/blas.py), which captures
    plain, plain_losses, _ = _assign_run(kind, False, True, products=True)
    replayed, losses, status = _assign_run(kind, True, True, products=True)
    _same(replayed, plain)
    _same(losses, plain_losses)
    assert status == "replaying a CUDA graph"


@pytest.mark.gpu
def test_a_step_cupy_cannot_capture_falls_back_to_plain_replay_saying_why(
    cupy_module: Any,
) -> None:
    # a convolution's product is cupy's matmul, which cupy 14 refuses while a stream captures
    rng = np.random.default_rng(3)
    w = tagged(rng.normal(size=(4, 2, 3, 3)) * 0.1, tn.Float64, tn.GPU)
    u: Any = ops

    def step(x: Any, lr: float) -> Any:
        loss = u.reduce_sum(u.square(u.conv2d(x, w, stride=1, padding=1)))
        w.assign(w - lr * tn.grad(loss, w))
        return loss

    w0 = tagged(w.numpy(), tn.Float64, tn.GPU)
    x = tagged(rng.normal(size=(2, 2, 6, 6)), tn.Float64, tn.GPU)
    results = []
    for graph in (False, True):
        w.assign(w0)
        compiled = tn.compile(step, cuda_graph=graph)
        results.append([compiled(x, 0.01).numpy() for _ in range(3)] + [w.numpy()])
    _same(results[1], results[0])
    # the emulator refuses the product first; cupy on an H200 first refuses a host-to-device
    # copy of the convolution's (measured): either way the step runs plainly, saying why
    assert compiled.graph_status.startswith("plain: capture failed: ")


def _mlp_run(graph: bool, optimizer: Any) -> list[Any]:
    """Four of ``fit``'s steps of a 784-64-10 MLP: each step's probabilities, the weights."""
    cp = tn.devices.array_module(tn.GPU)
    rng = np.random.default_rng(0)
    features = cp.asarray(rng.standard_normal((64, 784), dtype=np.float32))
    targets = cp.asarray(rng.integers(0, 10, 64))  # integer labels, as fit gathers them
    net, params = build_mlp([784, 64, 10], seed=0, device=tn.GPU)
    with options.using(cuda_graphs=graph):
        train = TrainStep(LayerTrainee(net, optimizer, device=tn.GPU), 784, 10)
        probs = [
            train.run_rows(features, targets, cp.arange(i * 16, i * 16 + 16)) for i in range(4)
        ]
    assert train._step.graph_status == (
        "replaying a CUDA graph" if graph else "plain: switched off (options.cuda_graphs is False)"
    )
    return [p.get() for p in probs] + [w.numpy() for _, w in params.items()]


@pytest.mark.gpu
@pytest.mark.parametrize("optimizer", [lambda: SGD(0.1), lambda: Adam(0.01)], ids=["sgd", "adam"])
def test_fits_mlp_step_replayed_equals_it_plain(cupy_module: Any, optimizer: Any) -> None:
    _same(_mlp_run(True, optimizer()), _mlp_run(False, optimizer()))


@pytest.mark.gpu
def test_a_result_stays_valid_after_the_next_call(cupy_module: Any) -> None:
    w = tagged(np.ones((4, 4), np.float32), tn.Float32, tn.GPU)

    @tn.compile
    def step(x: Any, scale: float) -> Any:
        w.assign(w * 0.5)
        return ops.tanh(x * w) * scale

    x = tagged(np.eye(4, dtype=np.float32), tn.Float32, tn.GPU)
    results = [step(x, float(i + 1)) for i in range(4)]
    assert step.graph_status == "replaying a CUDA graph"
    for i, r in enumerate(results):
        want = np.tanh(np.eye(4) * 0.5 ** (i + 1)) * (i + 1)
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)


def _syncing_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dot`` that reads a value on the host (a host synchronisation) at every call."""
    tn.devices.array_module(tn.GPU)  # the GPU implementations registered first
    dot = implementation("dot", tn.GPU)

    def syncing(a: Any, b: Any, *params: Any) -> Any:
        float(a.sum())  # e.g. a check of the data on the host
        return dot(a, b, *params)

    monkeypatch.setitem(declare._IMPLS["dot"], "GPU", list(declare._IMPLS["dot"]["GPU"]))
    implement("dot", tn.GPU, priority=50)(syncing)


@pytest.mark.gpu
def test_a_step_that_synchronises_the_host_falls_back_and_says_why(
    cupy_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, plain_losses, _ = _assign_run("adam", False, True, products=True)
    _syncing_dot(monkeypatch)  # it synchronises before its cuBLAS call
    before = stats.graph_fallbacks
    got, losses, status = _assign_run("adam", True, True, products=True)
    assert status.startswith("plain: capture failed: ")
    if getattr(cupy_module, "emulated", False):
        assert "host synchronisation" in status
    assert stats.graph_fallbacks == before + 1
    _same(got, plain)
    _same(losses, plain_losses)


@pytest.mark.gpu
def test_a_number_of_two_precisions_keeps_the_step_plain(cupy_module: Any) -> None:
    a = tagged(np.ones(3, np.float32), tn.Float32, tn.GPU)
    b = tagged(np.ones(3), tn.Float64, tn.GPU)

    @tn.compile
    def step(lr: float) -> None:
        a.assign(a - lr * a)
        b.assign(b - lr * b)

    step(0.5)
    step(0.5)
    assert (
        step.graph_status
        == "plain: float argument(s) [0] feed operands of two dtypes or a non-float op"
    )
    np.testing.assert_array_equal(b.numpy(), [0.25] * 3)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_in_the_capturing_call_changes_no_target(
    cupy_module: Any, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second call runs the program on the graph's stream and memory (with device
    scalars for its numbers), then captures it: a kernel failing in that run leaves every
    target as it was, the call reruns node by node, and the step stays plain from then on."""
    from helpers import train_with_assigns

    tn.devices.array_module(tn.GPU)
    clean = train_with_assigns(kind, 3, device=tn.GPU)
    flaky = _Flaky(implementation("dot", tn.GPU), fail_at=1)
    monkeypatch.setitem(declare._IMPLS["dot"], "GPU", list(declare._IMPLS["dot"]["GPU"]))
    implement("dot", tn.GPU, priority=50)(flaky)
    before = stats.graph_fallbacks
    got = train_with_assigns(kind, 3, flaky.armed_once, device=tn.GPU)
    assert flaky.fired
    assert stats.graph_fallbacks == before + 1
    for a, b in zip(got, clean, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_the_switch_and_why_a_step_runs_plainly() -> None:
    w = tn.zeros((2,), tn.Float32, tn.CPU)

    def fn(x: Any) -> Any:
        return x * w

    step = tn.compile(fn)
    assert step.graph_status == "not traced yet"
    step(tn.zeros((2,), tn.Float32, tn.CPU))
    assert step.graph_status == "plain: the step computes on CPU (graphs need one GPU)"
    off = tn.compile(fn, cuda_graph=False)
    off(tn.zeros((2,), tn.Float32, tn.CPU))
    assert off.graph_status == "plain: switched off (cuda_graph=False)"
    with pytest.raises(
        tn.CompileError, match=r"cannot compile: cuda_graph(.|\n)*True, False or None"
    ):
        tn.compile(fn, cuda_graph="yes")  # type: ignore[call-overload]
