"""Fused regions of GPU graphs become one kernel each (fake cupy; kernels run on the host)."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_fakes import FakeGpuArray, RecordingKernel, have_compiler, run_on_host

import typed_nn as tn
from typed_nn import ops
from typed_nn.backends.cupy.kernel_source import KernelSource
from typed_nn.backends.cupy.region import compile_region, kernel_cache, region_spec
from typed_nn.evaluate.collect import collect
from typed_nn.evaluate.fuse import find_regions
from typed_nn.evaluate.graph import Graph, build_graph, is_number

Untyped = Any


def _gpu(array: Any) -> Untyped:
    a = np.asarray(array, np.float32)
    dim = (tn.Dim0, tn.Dim1, tn.Dim2, tn.Dim3)[a.ndim]
    return tn.Tensor(FakeGpuArray(a), tn.Float32, tn.GPU, dim)


def _regions(root: Any) -> tuple[Graph, dict[int, list[int]]]:
    g = build_graph(collect([root], True, -1))
    alive = g.live()
    return g, find_regions(g, alive, g.uses(alive), True)


def _chain(x: Untyped, b: Untyped) -> Untyped:
    return ops.tanh(2.0 * x + b) * ops.sigmoid(-1.5 * x) + 0.5 * x


def test_the_chain_is_one_region_and_one_kernel(fake_cupy: types.ModuleType) -> None:
    tn.devices.array_module(tn.GPU)  # registers the GPU backend (fake cupy)
    x = _gpu(np.ones((4, 6)))
    g, regions = _regions(_chain(x, _gpu(np.ones(6))))
    assert len(regions) == 1
    (members,) = regions.values()
    assert [g.nodes[m].op for m in members].count("mul") == 4
    compiled = compile_region(g, members)
    assert compiled is not None
    fn, refs = compiled
    assert len(RecordingKernel.made) == 1
    leaves = [g.nodes[r] for r in refs if not is_number(r)]
    assert [(n.op, n.shape) for n in leaves] == [("leaf", (4, 6)), ("leaf", (6,))]  # x once
    assert sorted(r[1] for r in refs if is_number(r)) == [-1.5, 0.5, 2.0]
    kinds = sorted(i.kind for i in fn.spec.inputs)
    assert kinds == ["array", "broadcast", "number", "number", "number"]
    assert len(fn.spec.steps) == len(members)


def test_same_structure_new_values_and_sizes_reuse_the_kernel(fake_cupy: types.ModuleType) -> None:
    tn.devices.array_module(tn.GPU)
    for n in (3, 5):
        x = _gpu(np.ones((n, 6)))
        g, regions = _regions(ops.sigmoid(x * float(n)) - x)
        compile_region(g, next(iter(regions.values())))
    assert (kernel_cache().misses, kernel_cache().hits, len(RecordingKernel.made)) == (1, 1, 1)


def test_a_region_with_a_parametrised_or_unknown_op_is_left_to_the_evaluator(
    fake_cupy: types.ModuleType,
) -> None:
    tn.devices.array_module(tn.GPU)
    g, regions = _regions(ops.exp(_gpu(np.ones((2, 3)))))
    (members,) = regions.values()
    g.nodes[members[-1]].op = "not_an_op"  # an element-wise op with no kernel expression
    assert region_spec(g, members) is None
    assert compile_region(g, members) is None


@pytest.mark.skipif(not have_compiler(), reason="no C++ compiler (g++) on PATH")
def test_the_chain_kernel_computes_what_the_cpu_backend_does(
    fake_cupy: types.ModuleType, tmp_path: Path
) -> None:
    tn.devices.array_module(tn.GPU)
    rng = np.random.default_rng(0)
    xv, bv = rng.standard_normal((4, 6)), rng.standard_normal(6)
    g, regions = _regions(_chain(_gpu(xv), _gpu(bv)))
    compiled = compile_region(g, next(iter(regions.values())))
    assert compiled is not None
    fn, refs = compiled
    src = KernelSource(*RecordingKernel.made[0].source)
    inputs: list[tuple[str, str, Any]] = []
    for inp, ref in zip(fn.spec.inputs, refs, strict=True):
        value = ref[1] if is_number(ref) else g.nodes[ref].obj.array.host
        inputs.append((inp.kind, inp.dtype, value))
    (got,) = run_on_host([(src, inputs, xv.size)], tmp_path)
    x32, b32 = (
        tn.tensor(xv, tn.Float32, tn.CPU, tn.Dim2),
        tn.tensor(bv, tn.Float32, tn.CPU, tn.Dim1),
    )
    expected = _chain(x32, b32).numpy()
    np.testing.assert_allclose(got.reshape(4, 6), expected, rtol=1e-6, atol=1e-7)
