"""The lazy data kinds: construction, evaluation to a principal tensor, equality, categories."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from helpers import t32, t64, untyped

import typed_nn as tn
from typed_nn import CPU, Dim1, Dim2, Float32, Float64, Int32


def f32(value: float) -> tn.Tensor[Float32, CPU, tn.Dim0]:
    return tn.scalar(value, Float32, CPU)


# --- ZeroTensor -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 2, 1, 2)])
def test_zero_tensor_evaluates_to_zeros(shape: tuple[int, ...]) -> None:
    z = untyped.ZeroTensor(shape, Float64, CPU)
    assert z.shape == shape
    assert z.rank == len(shape)
    result = tn.evaluate(z)
    assert type(result) is tn.Tensor
    assert result.elem is Float64
    assert result.numpy().dtype == np.float64
    np.testing.assert_array_equal(result.numpy(), np.zeros(shape))


def test_zero_tensor_repr_and_tags() -> None:
    z = tn.ZeroTensor((2, 3), Int32, CPU)
    assert repr(z) == "ZeroTensor[Int32, CPU, Dim2](2, 3)"
    assert (z.elem, z.device) == (Int32, CPU)


def test_zero_tensor_equality_is_by_shape() -> None:
    a = tn.ZeroTensor((2, 3), Float32, CPU)
    assert a == tn.ZeroTensor((2, 3), Float32, CPU)
    assert hash(a) == hash(tn.ZeroTensor((2, 3), Float32, CPU))
    assert a != tn.ZeroTensor((3, 2), Float32, CPU)
    assert a != tn.ZeroTensor((2, 3), Float64, CPU)  # different types are never equal
    assert a != tn.zeros((2, 3), Float32, CPU)


def test_zero_tensor_bad_shapes() -> None:
    with pytest.raises(tn.ShapeError, match=r"ZeroTensor needs a shape tuple of non-negative ints"):
        tn.ZeroTensor((2, -3), Float32, CPU)
    with pytest.raises(tn.RankError, match=r"got rank 7"):
        untyped.ZeroTensor((1, 1, 1, 1, 1, 1, 1), Float32, CPU)


# --- ConstantTensor ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 1, 3)])
def test_constant_tensor_evaluates_to_the_value(shape: tuple[int, ...]) -> None:
    c = untyped.ConstantTensor(f32(1.5), shape)
    assert c.shape == shape
    result = tn.evaluate(c)
    assert result.numpy().dtype == np.float32
    np.testing.assert_array_equal(result.numpy(), np.full(shape, 1.5, np.float32))


def test_constant_tensor_takes_elem_and_device_from_the_scalar() -> None:
    c = tn.ConstantTensor(tn.scalar(3, Int32, CPU), (2,))
    assert (c.elem, c.device) == (Int32, CPU)
    assert c.scalar == tn.scalar(3, Int32, CPU)
    assert repr(c) == "ConstantTensor[Int32, CPU, Dim1](2)"


def test_constant_tensor_of_a_lazy_scalar() -> None:
    c = tn.ConstantTensor(f32(1.0) + f32(2.0), (2, 2))
    np.testing.assert_array_equal(c.numpy(), np.full((2, 2), 3.0))


def test_constant_tensor_equality_is_by_parameters() -> None:
    a = tn.ConstantTensor(f32(2.0), (3,))
    assert a == tn.ConstantTensor(f32(2.0), (3,))
    assert hash(a) == hash(tn.ConstantTensor(f32(2.0), (3,)))
    assert a != tn.ConstantTensor(f32(2.5), (3,))
    assert a != tn.ConstantTensor(f32(2.0), (4,))
    assert a != tn.ConstantTensor(tn.scalar(2.0, Float64, CPU), (3,))


def test_constant_tensor_needs_a_scalar() -> None:
    with pytest.raises(
        tn.OperandError,
        match=r"(?s)ConstantTensor needs a scalar tensor for its value\..*"
        r"received : Tensor\[Float32, CPU, Dim1\]\(2\)",
    ):
        untyped.ConstantTensor(t32([1.0, 2.0]), (2,))
    with pytest.raises(tn.OperandError, match=r"received : 2\.0"):
        untyped.ConstantTensor(2.0, (2,))


# --- BiasVector -------------------------------------------------------------------------------


def test_bias_vector_evaluates_to_a_one_hot_row() -> None:
    b = tn.BiasVector(5, 3, f32(2.0))
    assert b.shape == (5,)
    assert b.hot_pos == 3
    assert b.scalar == f32(2.0)
    assert repr(b) == "BiasVector[Float32, CPU, Dim1](5)"
    np.testing.assert_array_equal(tn.evaluate(b).numpy(), [0, 0, 0, 2.0, 0])


def test_two_bias_vectors_registered_before_one_eval() -> None:
    h1 = tn.BiasVector(3, 0, f32(1.0)).eval_register()
    h2 = tn.BiasVector(4, 2, f32(-1.0)).eval_register()
    tn.EvalPlan.eval()
    np.testing.assert_array_equal(h1.data().numpy(), [1.0, 0, 0])
    np.testing.assert_array_equal(h2.data().numpy(), [0, 0, -1.0, 0])


def test_bias_vector_equality_is_by_parameters() -> None:
    a = tn.BiasVector(5, 3, f32(2.0))
    assert a == tn.BiasVector(5, 3, f32(2.0))
    assert hash(a) == hash(tn.BiasVector(5, 3, f32(2.0)))
    assert a != tn.BiasVector(5, 2, f32(2.0))
    assert a != tn.BiasVector(6, 3, f32(2.0))
    assert a != tn.BiasVector(5, 3, f32(1.0))


@pytest.mark.parametrize(("length", "pos"), [(3, 3), (3, -1), (0, 0)])
def test_bias_vector_position_out_of_range(length: int, pos: int) -> None:
    with pytest.raises(
        tn.ShapeError, match=rf"(?s)BiasVector position is out of range\..*pos    : {pos}"
    ):
        tn.BiasVector(length, pos, f32(1.0))


def test_bias_vector_needs_a_scalar() -> None:
    with pytest.raises(tn.OperandError, match=r"BiasVector needs a scalar tensor"):
        untyped.BiasVector(3, 1, t32([1.0]))


# --- ScalableTensor ---------------------------------------------------------------------------


def test_scalable_tensor_of_scalars() -> None:
    st: tn.ScalableTensor[Float32, CPU, Dim1] = tn.ScalableTensor()
    assert st.is_empty()
    assert st.shape == (0,)
    for v in (1.0, 2.0, 3.0):
        st.push_back(f32(v))
    assert not st.is_empty()
    assert st.shape == (3,)
    assert len(st) == 3
    assert repr(st) == "ScalableTensor[Float32, CPU, Dim1](3)"
    np.testing.assert_array_equal(tn.evaluate(st).numpy(), [1.0, 2.0, 3.0])


def test_scalable_tensor_of_matrices_and_lazy_items() -> None:
    a = t32(np.arange(6).reshape(2, 3))
    st = tn.ScalableTensor([a, a + 1.0, tn.ZeroTensor((2, 3), Float32, CPU)])
    assert st.shape == (3, 2, 3)
    assert st.rank == 3
    assert tn.is_tensor3(st)
    assert st.item(1) == a + 1.0  # the stored item, unevaluated
    expected = np.stack(
        [np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3) + 1, np.zeros((2, 3))]
    )
    np.testing.assert_array_equal(tn.evaluate(st).numpy(), expected)


def test_scalable_tensor_of_tensor3_items() -> None:
    item = t64(np.ones((2, 2, 2)))
    st = tn.ScalableTensor([item, item * 2.0])
    assert st.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(tn.evaluate(st).numpy()[1], np.full((2, 2, 2), 2.0))


def test_scalable_tensor_reversed() -> None:
    st = tn.ScalableTensor([f32(1.0), f32(2.0)])
    np.testing.assert_array_equal(st.reversed().numpy(), [2.0, 1.0])
    assert st.reversed() != st


def test_scalable_tensor_shape_mismatch() -> None:
    st = tn.ScalableTensor([t32([1.0, 2.0])])
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)Shape mismatch.*items hold : Tensor\[Float32, CPU, Dim1\]\(2\).*"
        r"pushed     : Tensor\[Float32, CPU, Dim1\]\(3\)",
    ):
        st.push_back(t32([1.0, 2.0, 3.0]))
    with pytest.raises(tn.ShapeError, match=r"Shape mismatch"):
        st.push_back(t64([1.0, 2.0]))  # same shape, other element type
    assert len(st) == 1  # failed pushes change nothing


def test_scalable_tensor_items_have_at_most_5_dims() -> None:
    with pytest.raises(tn.ShapeError, match=r"ScalableTensor items have at most 5 dims"):
        tn.ScalableTensor().push_back(tn.zeros((1, 1, 1, 1, 1, 1), Float32, CPU))  # type: ignore[arg-type]


def test_scalable_tensor_rejects_non_data() -> None:
    with pytest.raises(tn.OperandError, match=r"cannot push float into a ScalableTensor"):
        untyped.ScalableTensor([1.0])


def test_empty_scalable_tensor_has_no_tags_and_cannot_be_evaluated() -> None:
    st: tn.ScalableTensor[Float32, CPU, Dim1] = tn.ScalableTensor()
    assert repr(st) == "ScalableTensor[empty](0)"
    with pytest.raises(tn.LayerError, match=r"an empty ScalableTensor has no element type"):
        st.elem  # noqa: B018
    with pytest.raises(
        tn.ShapeError, match=r"Cannot initialize dynamic array with empty sequence\."
    ):
        tn.evaluate(st)


def test_scalable_tensor_equality_is_buffer_identity() -> None:
    a = tn.ScalableTensor([f32(1.0)])
    b = tn.ScalableTensor([f32(1.0)])
    c = copy.copy(a)
    assert a != b
    assert a == c
    assert hash(a) == hash(c)
    c.push_back(f32(2.0))  # copies share the buffer
    assert a.shape == (2,)


# --- DynamicData ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)])
def test_make_dynamic_keeps_shape_and_evaluates_to_the_wrapped_tensor(
    shape: tuple[int, ...],
) -> None:
    x = t32(np.arange(int(np.prod(shape))).reshape(shape))
    d = tn.make_dynamic(x)
    assert not d.is_empty()
    assert d.shape == shape
    assert (d.elem, d.device, d.rank) == (Float32, CPU, len(shape))
    assert tn.evaluate(d) is x  # evaluates to the wrapped tensor itself (identity)
    assert tn.evaluate(d) == x


def test_make_dynamic_of_dynamic_is_unchanged() -> None:
    d = tn.make_dynamic(t32([1.0]))
    assert tn.make_dynamic(d) is d


def test_dynamic_of_a_lazy_expression() -> None:
    x = t32([1.0, 2.0])
    d = tn.make_dynamic(x * 3.0)
    assert repr(d) == "DynamicData(mul[Float32, CPU, Dim1](2))"
    np.testing.assert_array_equal(tn.evaluate(d).numpy(), [3.0, 6.0])
    np.testing.assert_array_equal((d + 1.0).numpy(), [4.0, 7.0])


def test_empty_dynamic_data() -> None:
    d: tn.DynamicData[Float32, CPU, Dim2] = tn.DynamicData()
    assert d.is_empty()
    assert repr(d) == "DynamicData[empty]"
    with pytest.raises(
        tn.LayerError, match=r"Invalid internal buffer: this DynamicData is empty\."
    ):
        d.shape  # noqa: B018
    with pytest.raises(tn.LayerError, match=r"Invalid internal buffer"):
        tn.evaluate(d)


def test_try_cast() -> None:
    x = t32([1.0])
    d = tn.make_dynamic(x)
    assert d.try_cast(tn.Tensor) is x
    assert d.try_cast(tn.ZeroTensor) is None
    z = tn.make_dynamic(tn.ZeroTensor((2,), Float32, CPU))
    assert isinstance(z.try_cast(tn.ZeroTensor), tn.ZeroTensor)
    assert z.try_cast(tn.Tensor) is None
    assert tn.DynamicData().try_cast(tn.Tensor) is None


def test_dynamic_equality_rules() -> None:
    x = t32([1.0, 2.0])
    empty: tn.DynamicData[Any, Any, Any] = tn.DynamicData()
    assert empty == tn.DynamicData()  # both empty
    assert hash(empty) == hash(tn.DynamicData())
    assert tn.make_dynamic(x) != empty  # one empty
    assert empty != tn.make_dynamic(x)
    assert tn.make_dynamic(x) == tn.make_dynamic(x)  # same wrapped object
    assert hash(tn.make_dynamic(x)) == hash(tn.make_dynamic(x))
    assert tn.make_dynamic(x) != tn.make_dynamic(t32([1.0, 2.0]))  # equal values, other memory
    zeros = tn.ZeroTensor((2,), Float32, CPU)
    assert tn.make_dynamic(zeros) == tn.make_dynamic(tn.ZeroTensor((2,), Float32, CPU))
    # the wrapped objects compare by their own rules; different concrete types never equal
    assert tn.make_dynamic(zeros) != tn.make_dynamic(x)
    assert tn.make_dynamic(x) != x


# --- category queries -------------------------------------------------------------------------


def test_category_queries_on_every_kind() -> None:
    s = f32(1.0)
    kinds: list[tuple[tn.TensorLike[Any, Any, Any], int]] = [
        (s, 0),
        (t32([1.0]), 1),
        (tn.zeros((2, 2), Float32, CPU), 2),
        (tn.ZeroTensor((1, 2, 3), Float32, CPU), 3),
        (tn.ConstantTensor(s, (1, 1, 1, 1)), 4),
        (tn.BiasVector(3, 0, s), 1),
        (tn.ScalableTensor([s, s]), 1),
        (tn.make_dynamic(tn.zeros((2, 2), Float32, CPU)), 2),
        (t32([[1.0]]) + 1.0, 2),
    ]
    for x, rank in kinds:
        assert tn.data_category(x) == rank
        assert tn.is_scalar(x) == (rank == 0)
        assert tn.is_vector(x) == (rank == 1)
        assert tn.is_matrix(x) == (rank == 2)
        assert tn.is_tensor3(x) == (rank == 3)
        assert tn.is_tensor4(x) == (rank == 4)


def test_category_of_non_data() -> None:
    for thing in (1.0, np.zeros(2), "x", None):
        assert not tn.is_scalar(thing)
        assert not tn.is_vector(thing)
        assert not tn.is_matrix(thing)
    with pytest.raises(
        tn.OperandError, match=r"ndarray is not typed_nn data, so it has no category"
    ):
        tn.data_category(np.zeros(2))


def test_kinds_compose_with_operators() -> None:
    m = t32(np.ones((2, 3)))
    expr = (m + tn.ZeroTensor((2, 3), Float32, CPU)) * tn.ConstantTensor(f32(2.0), (3,))
    expr = expr + tn.make_dynamic(m)
    np.testing.assert_array_equal(expr.numpy(), np.full((2, 3), 3.0))
    v = tn.BiasVector(3, 1, f32(1.0))
    np.testing.assert_array_equal((m @ v).numpy(), [1.0, 1.0])
    assert isinstance(tn.evaluate(v @ t32(np.eye(3))), tn.Tensor)


def test_vector_and_matrix_aliases_are_tensor_like() -> None:
    assert tn.Vector[Float32, CPU] == tn.TensorLike[Float32, CPU, Dim1]
    assert tn.Matrix[Float32, CPU] == tn.TensorLike[Float32, CPU, Dim2]
