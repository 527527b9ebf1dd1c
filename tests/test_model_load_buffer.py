"""LoadBuffer: name -> principal tensor, weight sharing, checks and errors."""

from __future__ import annotations

import pytest

import typed_nn as tn
from typed_nn.model import LoadBuffer


def test_set_and_try_get_share_the_tensor() -> None:
    buf = LoadBuffer(tn.Float32, tn.CPU)
    w = tn.zeros((2, 3), tn.Float32, tn.CPU)
    buf.set("fc/w", w)
    assert buf.try_get("fc/w") is w  # the same object: weight sharing
    assert buf.try_get("fc/w", tn.Dim2) is w
    assert buf.try_get("missing") is None
    assert buf.is_param_exist("fc/w")
    assert buf.is_param_exist("fc/w", tn.Dim2)
    assert not buf.is_param_exist("fc/w", tn.Dim1)
    assert not buf.is_param_exist("missing")


def test_iteration_and_clear() -> None:
    buf = LoadBuffer(tn.Float64, tn.CPU)
    a, b = tn.zeros((2,), tn.Float64, tn.CPU), tn.zeros((1, 1), tn.Float64, tn.CPU)
    buf.set("b", a)
    buf.set("a", b)
    assert list(buf) == ["b", "a"]
    assert [(n, t is (a if n == "b" else b)) for n, t in buf.items()] == [("b", True), ("a", True)]
    assert len(buf) == 2
    assert "a" in buf
    buf.clear()
    assert len(buf) == 0
    assert buf.try_get("a") is None


def test_duplicate_name() -> None:
    buf = LoadBuffer(tn.Float32, tn.CPU)
    buf.set("w", tn.zeros((2,), tn.Float32, tn.CPU))
    with pytest.raises(tn.ParamError, match="Duplicate parameter with name: w"):
        buf.set("w", tn.zeros((2,), tn.Float32, tn.CPU))


def test_element_device_and_kind_must_match() -> None:
    buf = LoadBuffer(tn.Float32, tn.CPU)
    with pytest.raises(tn.ElemTypeError, match="cannot store 'w': the element differs"):
        buf.set("w", tn.zeros((2,), tn.Float64, tn.CPU))  # type: ignore[arg-type]
    with pytest.raises(tn.OperandError, match="a LoadBuffer holds principal tensors"):
        buf.set("w", tn.zeros((2,), tn.Float32, tn.CPU) + 1.0)
    assert len(buf) == 0


def test_device_must_match() -> None:
    buf = LoadBuffer(tn.Float32, tn.GPU)
    with pytest.raises(tn.DeviceError, match="cannot store 'w': the device differs"):
        buf.set("w", tn.zeros((2,), tn.Float32, tn.CPU))  # type: ignore[arg-type]


def test_try_get_with_the_wrong_rank() -> None:
    buf = LoadBuffer(tn.Float32, tn.CPU)
    buf.set("w", tn.zeros((2, 2), tn.Float32, tn.CPU))
    with pytest.raises(tn.RankError, match="parameter 'w' in the load buffer has rank 2"):
        buf.try_get("w", tn.Dim1)
