"""LoadBuffer: name -> principal tensor, weight sharing, checks and errors."""

from __future__ import annotations

from collections.abc import Mapping

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


def test_a_load_buffer_is_a_read_only_mapping() -> None:
    buf = LoadBuffer(tn.Float32, tn.CPU)
    w, b = tn.zeros((2, 3), tn.Float32, tn.CPU), tn.zeros((3,), tn.Float32, tn.CPU)
    buf.set("net/fc1/weight", w)
    buf.set("net/fc1/bias", b)
    assert isinstance(buf, Mapping)
    assert buf["net/fc1/weight"] is w  # the principal tensor itself
    assert buf.get("net/fc1/bias") is b
    assert buf.get("nope") is None
    assert list(buf.keys()) == ["net/fc1/weight", "net/fc1/bias"]
    assert [v is t for v, t in zip(buf.values(), (w, b), strict=True)] == [True, True]
    assert dict(buf) == {"net/fc1/weight": w, "net/fc1/bias": b}
    assert buf == buf
    assert buf != LoadBuffer(tn.Float32, tn.CPU)  # by identity: tensors are not compared
    assert {buf: 1}[buf] == 1
    for name in buf:  # iterating a snapshot: adding while iterating is fine
        buf.set(name + "/copy", tn.zeros((1,), tn.Float32, tn.CPU))
    assert len(buf) == 4


def test_a_missing_name_is_a_key_error_listing_close_names() -> None:
    buf = LoadBuffer(tn.Float32, tn.CPU)
    buf.set("net/fc1/weight", tn.zeros((2, 3), tn.Float32, tn.CPU))
    buf.set("net/fc2/weight", tn.zeros((3, 3), tn.Float32, tn.CPU))
    with pytest.raises(KeyError) as caught:
        buf["net/fc1/weigth"]
    assert isinstance(caught.value, tn.ParamError)
    assert str(caught.value) == (
        "no parameter 'net/fc1/weigth' in the LoadBuffer.\n"
        "  closest : 'net/fc1/weight', 'net/fc2/weight'\n"
        "  stored  : 2 name(s): 'net/fc1/weight', 'net/fc2/weight'\n"
        "hint: check the name (layer names join with '/': 'net/fc1/weight'); buf.get(name) "
        "gives None for a missing name, and the layers add their parameters when layer_init runs."
    )
    with pytest.raises(KeyError, match=r"no parameter 'x' in the LoadBuffer\.\n  stored : 0 name"):
        LoadBuffer(tn.Float32, tn.CPU)["x"]
