"""A user-defined data kind joins the system by subclassing TensorLike (MetaNN's
"Introducing New Types"): operators, ops, evaluation and category queries all accept it."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import t32, untyped

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32, Float64, ops
from typed_nn.tags import Dv, E


class Identity(tn.TensorLike[E, Dv, Dim2]):
    """An n x n identity matrix with no storage; equal when the size and tags are equal."""

    __slots__ = ("_device", "_elem", "_n")

    def __init__(self, n: int, elem: type[E], device: type[Dv]) -> None:
        self._n = n
        self._elem = elem
        self._device = device

    @property
    def shape(self) -> tuple[int, ...]:
        return (self._n, self._n)

    @property
    def elem(self) -> type[E]:
        return self._elem

    @property
    def device(self) -> type[Dv]:
        return self._device

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and (self._n, self._elem, self._device) == (
            other._n,
            other._elem,
            other._device,
        )

    def __hash__(self) -> int:
        return hash((Identity, self._n, self._elem, self._device))

    def lower(self) -> tn.TensorLike[E, Dv, Dim2]:
        return tn.tensor(np.eye(self._n), self._elem, self._device, Dim2)


class Unlowered(Identity[E, Dv]):
    """A kind that forgot to implement lower()."""

    def lower(self) -> tn.TensorLike[E, Dv, Dim2]:
        return tn.TensorLike.lower(self)


def test_user_kind_has_tags_shape_and_repr() -> None:
    i3 = Identity(3, Float32, CPU)
    assert (i3.shape, i3.rank, i3.size) == ((3, 3), 2, 9)
    assert (i3.elem, i3.device) == (Float32, CPU)
    assert repr(i3) == "Identity[Float32, CPU, Dim2](3, 3)"


def test_user_kind_evaluates_to_a_principal_tensor() -> None:
    result = tn.evaluate(Identity(3, Float64, CPU))
    assert type(result) is tn.Tensor
    assert result.elem is Float64
    np.testing.assert_array_equal(result.numpy(), np.eye(3))
    np.testing.assert_array_equal(Identity(2, Float32, CPU).numpy(), np.eye(2))
    np.testing.assert_array_equal(np.asarray(Identity(2, Float32, CPU)), np.eye(2))


def test_user_kind_with_operators_and_ops() -> None:
    i3 = Identity(3, Float32, CPU)
    m = t32(np.arange(9).reshape(3, 3))
    np.testing.assert_allclose((m @ i3).numpy(), np.arange(9).reshape(3, 3))
    np.testing.assert_allclose((i3 * 2.0 + m).numpy(), 2 * np.eye(3) + np.arange(9).reshape(3, 3))
    np.testing.assert_allclose((1.0 - i3).numpy(), 1 - np.eye(3))
    np.testing.assert_allclose(ops.exp(i3).numpy(), np.exp(np.eye(3)), rtol=1e-6)
    np.testing.assert_allclose(ops.dot(i3, i3, 2).numpy(), 3.0)
    np.testing.assert_allclose(i3[1].numpy(), [0.0, 1.0, 0.0])
    np.testing.assert_allclose((-i3).numpy(), -np.eye(3))


def test_user_kind_is_checked_like_any_operand() -> None:
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cannot build add: operands could not be broadcast together.*Identity\[Float32, CPU, Dim2\]\(3, 3\)",
    ):
        Identity(3, Float32, CPU) + t32(np.zeros((2, 2)))
    with pytest.raises(tn.ElemTypeError, match=r"operands have different element types"):
        untyped.ops.arithmetic.add(Identity(3, Float32, CPU), Identity(3, Float64, CPU))


def test_user_kind_inside_data_kinds_and_plan() -> None:
    i2 = Identity(2, Float32, CPU)
    st = tn.ScalableTensor([i2, i2 * 3.0])
    np.testing.assert_array_equal(tn.evaluate(st).numpy(), [np.eye(2), 3 * np.eye(2)])
    d = tn.make_dynamic(i2)
    assert d.try_cast(Identity) is i2
    assert d == tn.make_dynamic(Identity(2, Float32, CPU))
    h = i2.eval_register()
    tn.EvalPlan.eval()
    np.testing.assert_array_equal(h.data().numpy(), np.eye(2))


def test_user_kind_equality_and_category() -> None:
    assert Identity(3, Float32, CPU) == Identity(3, Float32, CPU)
    assert hash(Identity(3, Float32, CPU)) == hash(Identity(3, Float32, CPU))
    assert Identity(3, Float32, CPU) != Identity(4, Float32, CPU)
    assert Identity(3, Float32, CPU) != tn.evaluate(Identity(3, Float32, CPU))
    assert tn.data_category(Identity(3, Float32, CPU)) == 2
    assert tn.is_matrix(Identity(3, Float32, CPU))
    assert not tn.is_vector(Identity(3, Float32, CPU))
    # equal user data makes equal nodes
    assert Identity(3, Float32, CPU) + 1.0 == Identity(3, Float32, CPU) + 1.0


def test_user_kind_without_lower_cannot_be_evaluated() -> None:
    with pytest.raises(
        NotImplementedError, match=r"Unlowered must implement lower\(\) to be evaluated"
    ):
        tn.evaluate(Unlowered(2, Float32, CPU))


def test_tensor_like_is_abstract() -> None:
    with pytest.raises(TypeError, match=r"abstract"):
        tn.TensorLike()  # type: ignore[abstract]
