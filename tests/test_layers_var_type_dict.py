"""VarTypeDict containers and port keys."""

from __future__ import annotations

from typing import Any

import pytest

import typed_nn as tn
from typed_nn.layers import LayerOutput, LeftOperand, Previous, PreviousKey, VarTypeDict


class A: ...


class B: ...


class Weight: ...


Params = VarTypeDict(A, B, Weight)


def test_book_var_type_dict_example() -> None:
    # MetaNN book test: a*w + b*(1-w) with a=1.3, b=2.4, w=0.1 is 2.29.
    values = Params.create().set(A, 1.3).set(B, 2.4).set(Weight, 0.1)
    a, b, w = values.get(A), values.get(B), values.get(Weight)
    assert a * w + b * (1 - w) == pytest.approx(2.29)


def test_set_in_any_order_returns_new_containers() -> None:
    empty = Params.create()
    one = empty.set(Weight, 3)
    two = one.set(A, "x")
    assert not empty.is_set(Weight)
    assert one.set_keys() == (Weight,)
    assert two.set_keys() == (A, Weight)
    assert dict(two.items()) == {A: "x", Weight: 3}
    assert two.set(Weight, 4).get(Weight) == 4
    assert two.get(Weight) == 3


def test_undeclared_key_is_an_error_on_set_and_get() -> None:
    values: Any = Params.create()
    with pytest.raises(tn.LayerError, match=r"cannot set key LeftOperand: it is not declared"):
        values.set(LeftOperand, 1)
    with pytest.raises(
        tn.LayerError, match=r"cannot get key LeftOperand.*\n.*declared : A, B, Weight"
    ):
        values.get(LeftOperand)


def test_unset_key_is_an_error() -> None:
    values = Params.create().set(A, 1)
    with pytest.raises(tn.LayerError, match=r"Empty Value: key B was never set"):
        values.get(B)


def test_duplicate_and_non_class_keys_fail_at_declaration() -> None:
    with pytest.raises(tn.LayerError, match="key A is given twice"):
        VarTypeDict(A, B, A)
    untyped: Any = VarTypeDict
    with pytest.raises(tn.LayerError, match="key 2 is not a class"):
        untyped(A, "B")


def test_previous_is_cached_per_key() -> None:
    assert Previous(LayerOutput) is Previous(LayerOutput)
    previous: Any = Previous  # distinct keys have distinct static types too
    assert previous(LayerOutput) is not previous(LeftOperand)
    assert issubclass(Previous(LayerOutput), PreviousKey)
    assert Previous(LayerOutput).__name__ == "Previous(LayerOutput)"
    values = VarTypeDict(LayerOutput, Previous(LayerOutput)).create().set(Previous(LayerOutput), 1)
    assert values.get(Previous(LayerOutput)) == 1
    with pytest.raises(tn.LayerError, match="Empty Value: key LayerOutput"):
        values.get(LayerOutput)
    untyped: Any = Previous
    with pytest.raises(tn.LayerError, match="the key is not a class"):
        untyped("LayerOutput")


def test_port_keys_are_not_instantiated() -> None:
    untyped: Any = LayerOutput
    with pytest.raises(TypeError, match="is a port key"):
        untyped()
