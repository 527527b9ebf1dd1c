"""Arithmetic with numbers on either side keeps the tensor's element type (and checks it)."""

from __future__ import annotations

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import CPU, Dim1, Float32, Int32, ops
from typed_nn.tags import FE, D, Dv


def ints() -> tn.Tensor[Int32, CPU, Dim1]:
    return tn.tensor([1, 2, 3], Int32, CPU, Dim1)


def test_integral_float_on_int_tensor_keeps_int32() -> None:
    result = tn.evaluate(ints() + 2.0)  # type: ignore[operator]  # int tensors take ints statically
    assert result.elem is Int32
    np.testing.assert_array_equal(result.numpy(), [3, 4, 5])
    assert result.numpy().dtype == np.int32


def test_int_on_float_tensor_keeps_float32() -> None:
    x = tn.tensor([1.0, 2.0], Float32, CPU, Dim1)
    result = tn.evaluate(3 - x * 2)
    assert result.numpy().dtype == np.float32
    np.testing.assert_allclose(result.numpy(), [1.0, -1.0])


def test_fractional_number_on_int_tensor_is_rejected() -> None:
    with pytest.raises(tn.ElemTypeError, match=r"cannot build add: 1.5 is not an Int32 value"):
        ints() + 1.5  # type: ignore[operator]


def test_number_out_of_range_is_rejected_at_build() -> None:
    with pytest.raises(
        tn.ElemTypeError, match=r"cannot build mul: 1099511627776 does not fit in Int32"
    ):
        ints() * 2**40


def test_an_int_past_every_float_is_rejected_at_build() -> None:
    """numpy raises a bare OverflowError for it, and only when the expression is evaluated."""
    x = tn.tensor([1.0, 2.0], tn.Float64, CPU, tn.Dim1)
    with pytest.raises(
        tn.ElemTypeError, match=r"cannot build mul: an int of 2001 bits has no Float64 value"
    ):
        x * 2**2000
    with pytest.raises(tn.ElemTypeError, match=r"cannot build maximum: an int of 1025 bits"):
        ops.maximum(x, -(2**1024))
    np.testing.assert_allclose(tn.evaluate(x * 2**1000).numpy(), [2.0**1000, 2.0**1001])


def test_numpy_integer_index() -> None:
    x = tn.tensor([[1.0, 2.0], [3.0, 4.0]], Float32, CPU, tn.Dim2)
    row = ops.exp(x)[np.int64(1)]  # type: ignore[index]  # numpy ints work at run time
    np.testing.assert_allclose(row.numpy(), np.exp([3.0, 4.0]), rtol=1e-6)


def floats() -> tn.Tensor[Float32, CPU, Dim1]:
    return tn.tensor([1.0, 2.0, 4.0], Float32, CPU, Dim1)


NUMPY_NUMBERS = [
    np.float64(2.0),
    np.float32(2.0),
    np.float16(2.0),
    np.longdouble(2.0),
    np.int64(2),
    np.int32(2),
    np.uint8(2),
]


@pytest.mark.parametrize("number", NUMPY_NUMBERS, ids=lambda n: type(n).__name__)
def test_numpy_scalar_on_the_right_is_a_python_number(number: np.generic) -> None:
    node = floats() * number  # type: ignore[operator]  # numpy scalars work at run time
    assert isinstance(node, ops.Operation)
    assert type(node.operands[1]) in (int, float)  # stored as a Python number
    np.testing.assert_array_equal(node.numpy(), [2.0, 4.0, 8.0])
    assert node.numpy().dtype == np.float32


@pytest.mark.parametrize("number", NUMPY_NUMBERS, ids=lambda n: type(n).__name__)
def test_numpy_scalar_on_the_left_defers_to_typed_nn(number: np.generic) -> None:
    # numpy's own operator must not turn the tensor into an eager array through __array__.
    # (Statically only Python numbers are typed: the ignores below.)
    for node, expected in [
        (number + floats(), [3.0, 4.0, 6.0]),  # type: ignore[operator]
        (number - floats(), [1.0, 0.0, -2.0]),  # type: ignore[operator]
        (number * floats(), [2.0, 4.0, 8.0]),  # type: ignore[operator]
        (number / floats(), [2.0, 1.0, 0.5]),  # type: ignore[operator]
    ]:
        assert isinstance(node, ops.Operation), type(node)
        np.testing.assert_array_equal(node.numpy(), expected)
        assert node.numpy().dtype == np.float32


def test_numpy_integer_on_int_tensor_keeps_int32() -> None:
    result = tn.evaluate(ints() + np.int64(3))  # type: ignore[operator]  # numpy ints at run time
    assert result.numpy().dtype == np.int32
    np.testing.assert_array_equal(result.numpy(), [4, 5, 6])


def test_fractional_numpy_float_on_int_tensor_is_the_python_number_error() -> None:
    with pytest.raises(tn.ElemTypeError, match=r"cannot build add: 1.5 is not an Int32 value"):
        ints() + np.float64(1.5)  # type: ignore[operator]
    with pytest.raises(tn.ElemTypeError, match=r"cannot build add: 1.5 is not an Int32 value"):
        np.float32(1.5) + ints()  # type: ignore[operator]


def test_numpy_integer_out_of_range_is_rejected_at_build() -> None:
    with pytest.raises(
        tn.ElemTypeError, match=r"cannot build mul: 1099511627776 does not fit in Int32"
    ):
        ints() * np.int64(2**40)  # type: ignore[operator]


@pytest.mark.parametrize("flag", [True, np.bool_(True)], ids=["bool", "numpy bool"])
def test_bools_are_not_numbers(flag: object) -> None:
    with pytest.raises(
        tn.OperandError,
        match=r"(?s)cannot build add: operand 2 is not typed_nn data.*"
        r"accepted : typed_nn data or a number \(Python or numpy\)",
    ):
        floats() + flag  # type: ignore[operator]  # checked at run time


def test_numpy_array_operators_defer_to_typed_nn() -> None:
    # An ndarray is no number: numpy's operator defers, and typed_nn rejects it (either side).
    with pytest.raises(tn.OperandError, match=r"cannot build add: operand 1 is not typed_nn data"):
        np.ones(3, np.float32) + floats()


def test_numpy_functions_still_convert_through_array() -> None:
    x = floats()
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0, 4.0])
    np.testing.assert_allclose(np.exp(x), np.exp([1.0, 2.0, 4.0]), rtol=1e-6)


def _blend(a: tn.TensorLike[FE, Dv, D], b: tn.TensorLike[FE, Dv, D]) -> tn.TensorLike[FE, Dv, D]:
    return 0.5 * (a + b)


def test_a_call_whose_arguments_differ_in_two_tags_takes_one_ignore_code() -> None:
    """mypy reports each differing tag under tag-mismatch and nothing else (an inference error
    per variable stayed under misc: a tag-mismatch ignore did not silence the line)."""
    m = tn.zeros((3, 4), Float32, CPU)
    with pytest.raises(tn.ElemTypeError):
        _blend(m, tn.zeros((3,), tn.Float64, CPU))  # type: ignore[tag-mismatch]
