"""reduce_sum / reduce_mean / reduce_max and argmax: dims, first k, keep_dim, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import assert_close, tagged

import typed_nn as tn
from typed_nn import ops

ROOT = Path(__file__).resolve().parent.parent
ELEMS = [tn.Float32, tn.Float64, tn.Int32, tn.Int64]
REDUCTIONS = [(ops.reduce_sum, np.sum), (ops.reduce_mean, np.mean), (ops.reduce_max, np.max)]
rng = np.random.default_rng(3)

# (dims, first, the numpy axes they name for a rank-3 operand)
SELECTIONS = [
    (0, None, (0,)),
    (-1, None, (2,)),
    ((0, 2), None, (0, 2)),
    ((2, -3), None, (0, 2)),
    ((0, 1, 2), None, (0, 1, 2)),
    (None, None, (0, 1, 2)),
    (None, 1, (0,)),
    (None, 2, (0, 1)),
    (None, 3, (0, 1, 2)),
]


def data(elem: Any, shape: tuple[int, ...]) -> Any:
    return rng.integers(-50, 50, shape).astype(elem.dtype)


@pytest.mark.parametrize("elem", ELEMS)
@pytest.mark.parametrize(("op", "reference"), REDUCTIONS)
@pytest.mark.parametrize(("dims", "first", "axes"), SELECTIONS)
@pytest.mark.parametrize("keep_dim", [False, True])
def test_reductions_match_numpy(
    elem: Any, op: Any, reference: Any, dims: Any, first: Any, axes: Any, keep_dim: bool
) -> None:
    if op is ops.reduce_mean and not issubclass(elem, tn.FloatTag):
        return  # integer means are rejected (tested below)
    x = data(elem, (2, 3, 4))
    got = op(tagged(x, elem), dims, first=first, keep_dim=keep_dim).numpy()
    want = reference(x.astype(np.float64), axis=axes, keepdims=keep_dim)
    assert got.dtype == elem.dtype
    assert got.shape == np.shape(want)
    assert_close(got, want, elem)


@pytest.mark.parametrize("elem", [tn.Float32, tn.Float64])
def test_reduce_sum_of_a_lazy_matrix_over_rows(elem: Any) -> None:
    x = rng.normal(size=(5, 3)).astype(elem.dtype)
    m = tagged(x, elem)
    assert_close(ops.reduce_sum(m * 2.0, 0).numpy(), (x * 2).sum(axis=0), elem)
    assert_close(ops.reduce_mean(m, 1).numpy(), x.mean(axis=1), elem)


def test_reduce_sum_keeps_int32_elements() -> None:
    x = np.full((1000,), 2**20, np.int32)
    got = ops.reduce_sum(tagged(x, tn.Int32)).numpy()
    assert got.dtype == np.int32
    assert got == np.sum(x, dtype=np.int32)


@pytest.mark.parametrize(("op", "_"), REDUCTIONS)
def test_reducing_no_dim_returns_the_operand_itself(op: Any, _: Any) -> None:
    x = tagged(np.ones((2, 3)), tn.Float32)
    s = tagged(np.array(1.5), tn.Float32)
    assert op(x, ()) is x
    assert op(x, first=0) is x
    assert op(x, (), keep_dim=True) is x
    assert op(s) is s


def test_reduce_max_of_nan_is_nan_and_argmax_breaks_ties_by_the_first() -> None:
    x = tagged(np.array([[1.0, 3.0, 3.0], [np.nan, 0.0, 1.0]]), tn.Float64)
    assert np.isnan(ops.reduce_max(x, 1).numpy()[1])
    assert ops.argmax(x).numpy().tolist() == [1, 0]


@pytest.mark.parametrize("elem", ELEMS)
@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_argmax_matches_numpy(elem: Any, axis: int) -> None:
    x = data(elem, (3, 4, 5))
    got = ops.argmax(tagged(x, elem), axis).numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argmax(x, axis=axis))


def test_argmax_of_a_vector_is_a_scalar() -> None:
    got = ops.argmax(tagged(np.array([0.1, 0.7, 0.2]), tn.Float32))
    assert got.elem is tn.Int64
    assert got.shape == ()
    assert got.numpy() == 1


def test_dims_and_first_together_are_rejected() -> None:
    x = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(tn.OperandError, match="reduce_sum: only one of dims or first may be set"):
        ops.reduce_sum(x, 0, first=1)  # type: ignore[call-overload]


@pytest.mark.parametrize("dims", [2, -3, (0, 5)])
def test_dims_out_of_range_are_rejected(dims: Any) -> None:
    x = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(tn.ShapeError, match=r"reduce_max: dim -?\d is out of range"):
        ops.reduce_max(x, dims)


@pytest.mark.parametrize("dims", [(0, 0), (2, -1), (0, 1, -2)])
def test_duplicate_dims_are_rejected(dims: Any) -> None:
    x = tagged(np.ones((2, 3, 4)), tn.Float32)
    with pytest.raises(tn.ShapeError, match=r"reduce_sum: dim \d is named twice"):
        ops.reduce_sum(x, dims)


@pytest.mark.parametrize("dims", ["0", 1.0, True, [0, 1], (0, "1")])
def test_dims_of_the_wrong_type_are_rejected(dims: Any) -> None:
    x = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(tn.OperandError, match="reduce_sum: dims must be an int or a tuple of ints"):
        ops.reduce_sum(x, dims)


@pytest.mark.parametrize("first", [3, -1, True, 1.0])
def test_first_outside_zero_to_rank_is_rejected(first: Any) -> None:
    x = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(
        tn.RankError, match=r"reduce_mean: first=.* is not a number of leading dims"
    ):
        ops.reduce_mean(x, first=first)


def test_reduce_mean_rejects_integer_elements_even_when_nothing_is_reduced() -> None:
    i = tagged(np.ones((2, 3), np.int32), tn.Int32)
    with pytest.raises(tn.ElemTypeError, match="cannot build reduce_mean: it needs float"):
        ops.reduce_mean(i, 0)
    with pytest.raises(tn.ElemTypeError, match="cannot build reduce_mean: it needs float"):
        ops.reduce_mean(i, ())


@pytest.mark.parametrize("op", [ops.reduce_max, ops.reduce_mean])
def test_max_and_mean_of_an_empty_dim_are_rejected(op: Any) -> None:
    x = tagged(np.ones((0, 3)), tn.Float32)
    with pytest.raises(tn.ShapeError, match=r"reduce_m\w+: it reduces dim 0, which has size 0"):
        op(x, 0)
    assert ops.reduce_sum(x, 0).numpy().tolist() == [0.0, 0.0, 0.0]


def test_argmax_errors() -> None:
    x = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(tn.ShapeError, match="cannot build argmax: operand has rank 0"):
        ops.argmax(tagged(np.array(1.0), tn.Float32))
    with pytest.raises(tn.ShapeError, match="argmax: dim 2 is out of range"):
        ops.argmax(x, 2)
    with pytest.raises(tn.OperandError, match="cannot build argmax: axis must be an int"):
        ops.argmax(x, (0,))  # type: ignore[call-overload]
    with pytest.raises(tn.ShapeError, match="argmax: it reduces dim 1, which has size 0"):
        ops.argmax(tagged(np.ones((2, 0)), tn.Float32))


def test_reductions_reject_a_non_tensor() -> None:
    with pytest.raises(tn.OperandError, match="cannot build reduce_sum: operand 1 is not typed_nn"):
        ops.reduce_sum(np.ones(3))  # type: ignore[call-overload]


@pytest.mark.parametrize("script", ["gen_op_overloads.py", "gen_operators.py"])
def test_generated_overloads_are_fresh(script: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("dims", [(0,), (0, 1)])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("out", ["fresh", "contiguous", "strided"])
def test_column_sums_are_one_blas_product_as_accurate_as_numpy(
    dims: tuple[int, ...], keep: bool, out: str
) -> None:
    """A float sum over the leading dims (a bias gradient) is ``ones @ x``: numpy's shape,
    written into ``out`` when given (a strided one too), at least as close to the exact sum
    as ``np.add.reduce``'s row-by-row adds, and each column independent of the others."""
    from typed_nn.backends.numpy.reduce import sum_into

    x = (rng.standard_normal((20, 32, 16)) + 0.5).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=dims, keepdims=keep)
    plain = x.sum(axis=dims, dtype=np.float32, keepdims=keep)  # np.add.reduce, row by row
    target = {
        "fresh": None,
        "contiguous": np.empty(plain.shape, np.float32),
        "strided": np.empty((*plain.shape, 2), np.float32)[..., 0],
    }[out]
    got = sum_into(x, dims, x.dtype, target, keep)
    if target is not None:
        assert got is target
    assert got.shape == plain.shape
    assert got.dtype == np.float32
    assert np.abs(got - exact).max() <= np.abs(plain - exact).max() * 1.01 + 1e-6
    changed = x.copy()
    changed[..., 1:] = 1e6  # other columns' values do not reach column 0
    np.testing.assert_array_equal(sum_into(changed, dims, x.dtype, None, keep)[..., 0], got[..., 0])


def test_other_sums_keep_numpys_reduce() -> None:
    from typed_nn.backends.numpy.reduce import sum_into

    x = rng.standard_normal((6, 5, 4)).astype(np.float32)
    for dims in [(1,), (0, 2), (0, 1, 2)]:  # not only leading dims, or every dim
        np.testing.assert_array_equal(sum_into(x, dims, x.dtype, None, False), x.sum(dims))
    transposed = sum_into(x.T, (0,), x.dtype, None, False)  # strided: BLAS too, on a copy
    np.testing.assert_allclose(transposed, x.T.sum(0), rtol=1e-6)
    ints = np.arange(24).reshape(6, 4)
    np.testing.assert_array_equal(sum_into(ints, (0,), ints.dtype, None, False), ints.sum(0))


def test_a_flag_that_is_not_a_bool_is_refused_as_numpy_refuses_it() -> None:
    x = tn.zeros((2, 3), tn.Float32, tn.CPU)
    with pytest.raises(
        tn.ParamError, match=r"(?s)cannot build reduce_sum: keep_dim must be a bool.*'no' \(str\)"
    ):
        ops.reduce_sum(x, 0, keep_dim="no")  # type: ignore[call-overload]
    assert ops.reduce_max(x, 0, keep_dim=np.True_).shape == (1, 3)  # type: ignore[call-overload]
