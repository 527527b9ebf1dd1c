"""GradCollector: gradients by parameter name, summed lazily, with MetaNN's errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn.model import GradCollector
from typed_nn.model.grad_collector import GradInfo


def test_one_gradient_is_returned_as_is() -> None:
    col = GradCollector(tn.Float32, tn.CPU)
    w, g = t32([[1.0, 2.0]]), t32([[0.5, 0.5]]) * 2.0
    col.collect("w", w, g)
    [(name, weight, grad)] = list(col)
    assert name == "w"
    assert weight is w
    assert grad is g


def test_repeated_gradients_are_summed_lazily() -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(3)]
    w = tn.zeros((3, 4), tn.Float32, tn.CPU)
    col = GradCollector(tn.Float32, tn.CPU)
    for a in arrays:
        col.collect("shared", w, t32(a) * 1.0)
    info = col.get("shared")
    assert len(info) == 3
    total = info.grad()
    assert not isinstance(total, tn.Tensor)  # still an expression
    np.testing.assert_allclose(total.numpy(), sum(arrays), rtol=1e-6)


def test_iteration_order_and_clear() -> None:
    col = GradCollector(tn.Float64, tn.CPU)
    a, b = tn.zeros((2,), tn.Float64, tn.CPU), tn.zeros((3,), tn.Float64, tn.CPU)
    col.collect("b", b, b + 1.0)
    col.collect("a", a, a + 1.0)
    col.collect("b", b, b + 2.0)
    assert [name for name, _, _ in col] == ["b", "a"]
    assert [name for name, _ in col.items()] == ["b", "a"]
    assert [g.numpy().tolist() for _, _, g in col] == [[3.0, 3.0, 3.0], [1.0, 1.0]]
    assert "a" in col
    assert len(col) == 2
    col.clear()
    assert len(col) == 0
    assert list(col) == []


def test_shape_mismatch() -> None:
    col = GradCollector(tn.Float32, tn.CPU)
    w = tn.zeros((2, 3), tn.Float32, tn.CPU)
    with pytest.raises(tn.ShapeError, match=r"Shape of Weight/Grad mismatch\."):
        col.collect("w", w, tn.zeros((3, 2), tn.Float32, tn.CPU))
    assert len(col) == 0


def test_empty_grad() -> None:
    with pytest.raises(tn.ParamError, match=r"Empty grad\."):
        GradInfo(tn.zeros((2,), tn.Float32, tn.CPU)).grad()


def test_unknown_name() -> None:
    col = GradCollector(tn.Float32, tn.CPU)
    with pytest.raises(tn.ParamError, match="no gradient was collected for 'w'"):
        col.get("w")


def test_two_weights_under_one_name() -> None:
    col = GradCollector(tn.Float32, tn.CPU)
    w1, w2 = tn.zeros((2,), tn.Float32, tn.CPU), tn.zeros((2,), tn.Float32, tn.CPU)
    col.collect("w", w1, w1 + 1.0)
    col.collect("w", w1, w1 * 2.0)  # the same weight again: summed
    with pytest.raises(tn.ParamError, match="two different weights collected under the name 'w'"):
        col.collect("w", w2, w2 + 1.0)


def test_element_device_and_kind_errors() -> None:
    col = GradCollector(tn.Float32, tn.CPU)
    w64 = tn.zeros((2,), tn.Float64, tn.CPU)
    with pytest.raises(tn.ElemTypeError, match="cannot collect 'w': the element differs"):
        col.collect("w", w64, w64)  # type: ignore[arg-type]
    gpu_col = GradCollector(tn.Float32, tn.GPU)
    w32 = tn.zeros((2,), tn.Float32, tn.CPU)
    with pytest.raises(tn.DeviceError, match="cannot collect 'w': the device differs"):
        gpu_col.collect("w", w32, w32)  # type: ignore[arg-type]
    with pytest.raises(tn.OperandError, match=r"collect\('w', weight, grad\) needs a principal"):
        col.collect("w", w32 + 1.0, w32)
