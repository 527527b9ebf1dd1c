"""Arithmetic with numbers on either side keeps the tensor's element type (and checks it)."""

from __future__ import annotations

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import CPU, Dim1, Float32, Int32, ops


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


def test_numpy_integer_index() -> None:
    x = tn.tensor([[1.0, 2.0], [3.0, 4.0]], Float32, CPU, tn.Dim2)
    row = ops.exp(x)[np.int64(1)]  # type: ignore[index]  # numpy ints work at run time
    np.testing.assert_allclose(row.numpy(), np.exp([3.0, 4.0]), rtol=1e-6)
