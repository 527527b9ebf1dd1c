"""Element-wise broadcasting follows numpy (trailing dims aligned, size-1 dims expand): values
vs numpy, gradients summed over the expanded dims, fused and blocked evaluation, compiled
steps, the GPU region's fallback, MetaNN's hand-written layers and the errors."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest
from gpu_fakes import FakeGpuArray
from helpers import layer_feed, t64

import typed_nn as tn
from typed_nn import ops
from typed_nn.backends.cupy.region import region_spec
from typed_nn.evaluate.collect import collect
from typed_nn.evaluate.fuse import BLOCK, Blocks, find_regions
from typed_nn.evaluate.graph import build_graph
from typed_nn.layers import (
    AddLayer,
    LayerInMap,
    LayerOutput,
    LeftOperand,
    RightOperand,
    make_train_layer,
)

rng = np.random.default_rng(4)

PAIRS = [
    ((10, 1), (10, 7)),
    ((10, 7), (1, 7)),
    ((3, 1, 4), (2, 1)),  # both sides expand
    ((2, 1, 3), (4, 3)),
    ((5, 1), (4,)),  # lower rank and a size-1 dim
    ((1,), (3, 4)),
    ((2, 3), (3,)),  # MetaNN's rule: the trailing dims
]


def arr(*shape: int) -> np.ndarray[Any, Any]:
    return rng.normal(size=shape)


@pytest.mark.parametrize(("sa", "sb"), PAIRS, ids=str)
def test_element_wise_ops_broadcast_as_numpy(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = arr(*sa), arr(*sb)
    x, y = t64(a), t64(b)
    for got, want in ((x + y, a + b), (x * y, a * b)):
        assert got.shape == np.broadcast_shapes(sa, sb)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(ops.maximum(t64(a), t64(b)).numpy(), np.maximum(a, b))
    lam = arr(*sb)
    np.testing.assert_allclose(
        ops.interpolate(t64(a), t64(b), t64(lam)).numpy(), a * lam + b * (1 - lam), rtol=1e-12
    )


@pytest.mark.parametrize(("sa", "sb"), PAIRS, ids=str)
def test_gradients_sum_over_expanded_dims(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = arr(*sa), arr(*sb)
    x, y = t64(a), t64(b)
    ga, gb = tn.grad(ops.reduce_sum(ops.square(x * y - y)), (x, y))
    r = 2 * (a * b - b)
    out = np.broadcast_shapes(sa, sb)

    def back(g: np.ndarray[Any, Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
        lead = len(out) - len(shape)
        g = g.sum(axis=tuple(range(lead)))
        dims = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
        summed: np.ndarray[Any, Any] = g.sum(axis=dims, keepdims=True)
        return summed

    assert ga.shape == sa
    assert gb.shape == sb
    np.testing.assert_allclose(ga.numpy(), back(r * b, sa), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), back(r * (a - 1), sb), rtol=1e-10)


def test_a_fused_blocked_region_reads_size_1_operands_right() -> None:
    rows = 4 * BLOCK // 256 + 3  # several blocks, split along the rows
    a, col, row = arr(rows, 256), arr(rows, 1), arr(1, 256)
    expr = ops.tanh(t64(a) * t64(col) + t64(row)) * 2.0 - t64(col)
    assert len(Blocks((rows, 256)).index) > 1
    want = np.tanh(a * col + row) * 2.0 - col
    np.testing.assert_allclose(expr.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(tn.compile(lambda: expr)().numpy(), want, rtol=1e-12)


def test_blocks_index_a_size_1_dim_at_0() -> None:
    blocks = Blocks((8, 4, 100), block=100)  # split along dim 1: idx = (i0, lo:hi)
    idx = blocks.index[5]
    assert blocks.operand_index(idx, (8, 4, 100), (8, 1, 100)) == (idx[0], slice(None))
    assert blocks.operand_index(idx, (8, 4, 100), (1, 4, 100)) == (0, idx[1])
    assert blocks.operand_index(idx, (8, 4, 100), (4, 100)) == (idx[1],)
    assert blocks.operand_index(idx, (8, 4, 100), (100,)) is None  # inside the block


def test_an_operand_with_an_expanding_dim_is_not_written_in_place() -> None:
    col = arr(6, 1)
    x = t64(col)
    expr = ops.exp(x + 1.0) + t64(arr(6, 5))  # exp(x + 1) (6, 1) could alias; the sum cannot
    got = tn.compile(lambda: expr)()
    assert got.shape == (6, 5)
    np.testing.assert_array_equal(x.numpy(), col)  # the input is untouched


def test_a_compiled_step_with_size_1_broadcasting_equals_numpy() -> None:
    w = t64(arr(1, 3))

    @tn.compile
    def step(x: tn.Matrix[tn.Float64, tn.CPU]) -> Any:
        loss = ops.reduce_sum(ops.square(x * w - 1.0))
        return loss, tn.grad(loss, w)

    xs = arr(5, 1)
    loss, gw = step(t64(xs))
    np.testing.assert_allclose(loss.numpy(), np.sum((xs * w.numpy() - 1.0) ** 2))
    np.testing.assert_allclose(
        gw.numpy(), np.sum(2 * (xs * w.numpy() - 1.0) * xs, axis=0, keepdims=True)
    )


def test_a_gpu_region_with_an_expanding_input_runs_op_by_op(fake_cupy: types.ModuleType) -> None:
    def gpu_tensor(a: np.ndarray[Any, Any]) -> Any:
        dim = (tn.Dim0, tn.Dim1, tn.Dim2)[a.ndim]
        return tn.Tensor(FakeGpuArray(np.asarray(a, np.float32)), tn.Float32, tn.GPU, dim)

    tn.devices.array_module(tn.GPU)
    for other, expect_kernel in (((6,), True), ((4, 1), False)):
        root = ops.tanh(gpu_tensor(np.ones((4, 6))) * gpu_tensor(np.ones(other)))
        g = build_graph(collect([root], True, -1))
        alive = g.live()
        (members,) = find_regions(g, alive, g.uses(alive), True).values()
        assert (region_spec(g, members) is not None) is expect_kernel


def test_shapes_that_do_not_broadcast_name_both_shapes() -> None:
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cannot build add: operands could not be broadcast together with shapes "
        r"\(10, 2\) and \(10, 7\).*mismatch  : dim 1: 2 vs 7.*ops\.reshape",
    ):
        t64(arr(10, 2)) + t64(arr(10, 7))


def test_a_metann_layer_rejects_size_1_expansion_with_a_clear_error() -> None:
    m = tn.Matrix[tn.Float64, tn.CPU]
    layer = make_train_layer(AddLayer, LayerInMap({LeftOperand: m, RightOperand: m}))("add")
    ok = layer_feed(layer, {LeftOperand: arr(3, 4), RightOperand: arr(3, 4)})
    assert ok.get(LayerOutput).shape == (3, 4)
    layer.feed_backward(layer.output_cont())
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cannot feed layer 'add' forward: RightOperand .*\(3, 1\) broadcasts to "
        r"\(3, 4\) by expanding size-1 dims.*ops\.tile",
    ):
        layer_feed(layer, {LeftOperand: arr(3, 4), RightOperand: arr(3, 1)})
