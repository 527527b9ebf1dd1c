"""The evaluator's GPU hooks, on a fake cupy: a fused GPU region is one compiled kernel call,
a region without a kernel expression runs node by node, device values are allocated by the
device's array module, and an ``out`` on the device is never inspected as host memory."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest
from gpu_fakes import FakeGpuArray

import typed_nn as tn
from typed_nn import ops
from typed_nn.backends.cupy import region
from typed_nn.evaluate import executor, hooks, last_program, options
from typed_nn.evaluate.codegen import generate
from typed_nn.evaluate.collect import collect
from typed_nn.evaluate.graph import build_graph

Untyped = Any


@pytest.fixture(autouse=True)
def optimised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The optimised executor (no debug-mode node checks)."""
    monkeypatch.setattr(hooks, "node_checks", [])


def _gpu(array: Any) -> Untyped:
    a = np.asarray(array, np.float32)
    dim = (tn.Dim0, tn.Dim1, tn.Dim2)[a.ndim]
    return tn.Tensor(FakeGpuArray(a), tn.Float32, tn.GPU, dim)


def _host_kernels(monkeypatch: pytest.MonkeyPatch, fake: types.ModuleType) -> list[Any]:
    """compile_region stands in for the real one: each kernel computes its region on the
    host with numpy (from the region's spec) and records its operands."""
    calls: list[Any] = []
    real = region.compile_region

    def compiled(g: Any, members: Any, cache: Any = None) -> Any:
        found = real(g, members, cache)
        if found is None:
            return None
        _, refs = found
        root = g.nodes[members[-1]].obj

        def run(*operands: Any, out: Any) -> Any:
            calls.append(operands)
            out.host[...] = root_value(root)
            return out

        return run, refs

    tn.devices.set_region_compiler(tn.GPU, compiled)  # the fake_cupy fixture restores it
    fake.empty = lambda shape, dtype: FakeGpuArray(np.empty(shape, dtype))  # type: ignore[attr-defined]
    return calls


def root_value(node: Any) -> Any:
    """The node's value computed on the host (leaves' FakeGpuArrays read as numpy)."""
    from typed_nn.ops.node import Operation

    if not isinstance(node, Operation):
        return node if isinstance(node, float | int) else node.array.host
    args = [root_value(o) for o in node.operands]
    fns = {"add": np.add, "mul": np.multiply, "tanh": np.tanh, "sub": np.subtract}
    return fns[node.op.name](*args)


def test_a_gpu_region_is_one_kernel_call(
    fake_cupy: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    tn.devices.array_module(tn.GPU)
    calls = _host_kernels(monkeypatch, fake_cupy)
    x, b = _gpu(np.linspace(-1, 1, 12).reshape(3, 4)), _gpu(np.ones(4))
    y = ops.tanh(2.0 * x + b) * 0.5 + x
    result = tn.evaluate(y)
    program = last_program()
    assert program is not None
    assert program.source.count("F") == 1  # one compiled-kernel call, nothing op by op
    assert ".empty(" in program.source  # allocated by the device module, not the CPU pool
    assert len(calls) == 1
    assert [type(a) for a in calls[0]].count(FakeGpuArray) == 2  # x once, b once
    want = np.tanh(2.0 * x.array.host + b.array.host) * 0.5 + x.array.host
    np.testing.assert_allclose(result.array.host, want, rtol=1e-6)


def test_a_region_without_a_kernel_runs_node_by_node(
    fake_cupy: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    tn.devices.array_module(tn.GPU)
    tn.devices.set_region_compiler(tn.GPU, lambda g, members: None)
    x = _gpu(np.ones((2, 3)))
    g = build_graph(collect([ops.tanh(x * 2.0) + 1.0], True, -1))
    program = generate(g, g.live(), {}, {}, {}, [])
    assert "F" not in program.source
    with options.using(plan_cache=False):
        collected = collect([ops.tanh(x * 2.0) + 1.0], True, -1)
        analysed = executor._analyse(collected, [])
    assert "F" not in analysed.source
    assert analysed.source.count("_check(") == 3  # mul, tanh, add: plain kernels, each checked


def test_an_out_on_the_device_is_not_read_as_host_memory(
    fake_cupy: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device ``out`` is compared with the device's leaves by the device's ``may_share``
    (memory bounds, on the host); a host ``out`` never inspects a device leaf."""
    shared: list[tuple[Any, Any]] = []

    def may_share_memory(a: Any, b: Any) -> bool:
        shared.append((a, b))
        return bool(np.may_share_memory(a.host, b.host))

    monkeypatch.setattr(fake_cupy, "may_share_memory", may_share_memory, raising=False)
    tn.devices.array_module(tn.GPU)
    x = _gpu(np.ones((2, 3)))
    col = collect([ops.tanh(x)], True, -1)
    assert executor._alias(col, _gpu(np.zeros((2, 3)))) == -1  # other memory: written directly
    assert executor._alias(col, x) == 0  # the leaf itself
    part = tn.Tensor(FakeGpuArray(x.array.host[:1]), tn.Float32, tn.GPU, tn.Dim2)
    part.array.host = x.array.host[:1]  # a view of the leaf's memory
    assert executor._alias(col, part) == -2  # part of it: computed aside, then copied
    host = tn.tensor(np.zeros((2, 3), np.float32), tn.Float32, tn.CPU, tn.Dim2)
    before = len(shared)
    assert executor._alias(col, host) == -1  # the device leaf is skipped, not inspected
    assert len(shared) == before
