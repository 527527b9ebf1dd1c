"""maximum, minimum, where and interpolate: values, MetaNN broadcasting, numbers, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_close, tagged

import typed_nn as tn
from typed_nn import ops
from typed_nn.ops.declare import implementation, out_implementation

FLOATS = [tn.Float32, tn.Float64]
rng = np.random.default_rng(5)

# Operand shapes that broadcast the MetaNN way (lower rank = trailing dims; scalars anywhere),
# including the readme's Matrix(2, 3) with Tensor3(5, 2, 3).
PAIRS = [((4, 3), (4, 3)), ((4, 3), (3,)), ((3,), (4, 3)), ((), (2, 3)), ((2, 3), (5, 2, 3))]
TRIPLES = [
    ((4, 3), (4, 3), (4, 3)),
    ((4, 3), (4, 3), ()),
    ((3,), (4, 3), (4, 3)),
    ((4, 3), (3,), (3,)),
    ((2, 3), (5, 2, 3), ()),
    ((3,), (2, 3), (5, 2, 3)),
]


EXTREMA = [("maximum", ops.maximum, np.maximum), ("minimum", ops.minimum, np.minimum)]
"""maximum and minimum, declared alike: each test of one runs for both."""


def data(elem: Any, shape: tuple[int, ...]) -> Any:
    return rng.normal(0, 2, shape).astype(elem.dtype)


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize(("sa", "sb"), PAIRS)
def test_extremum_matches_numpy(
    name: str, op: Any, ref: Any, elem: Any, sa: tuple[int, ...], sb: tuple[int, ...]
) -> None:
    a, b = data(elem, sa), data(elem, sb)
    got = op(tagged(a, elem), tagged(b, elem)).numpy()
    assert got.dtype == elem.dtype
    assert_close(got, ref(a, b), elem)


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
@pytest.mark.parametrize("elem", FLOATS)
def test_extremum_with_a_number_on_either_side(name: str, op: Any, ref: Any, elem: Any) -> None:
    x = data(elem, (3, 4))
    t = tagged(x, elem)
    assert_close(op(t, 0.5).numpy(), ref(x, 0.5), elem)
    assert_close(op(-1, t).numpy(), ref(x, -1), elem)
    assert op(t, 0.5).numpy().dtype == elem.dtype


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
def test_extremum_of_integers_with_an_integer_number(name: str, op: Any, ref: Any) -> None:
    x = np.array([[-3, 4], [7, -1]], np.int32)
    got = op(0, tagged(x, tn.Int32)).numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref(x, 0))


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
def test_extremum_lets_nan_win_as_numpy(name: str, op: Any, ref: Any) -> None:
    x = np.array([np.nan, 1.0, -2.0], np.float32)
    y = np.array([0.0, np.nan, 3.0], np.float32)
    got = op(tagged(x, tn.Float32), tagged(y, tn.Float32)).numpy()
    np.testing.assert_array_equal(got, ref(x, y))


def test_minimum_gradient_goes_to_the_smaller_and_splits_ties() -> None:
    x = np.array([1.0, 5.0, 2.0], np.float64)
    t = tagged(x, tn.Float64)
    g = tn.grad(ops.reduce_sum(ops.minimum(t, 2.0) * tagged(np.arange(1.0, 4.0), tn.Float64)), t)
    np.testing.assert_array_equal(g.numpy(), [1.0, 0.0, 1.5])


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize(("sc", "sa", "sb"), TRIPLES)
def test_where_matches_numpy(
    elem: Any, sc: tuple[int, ...], sa: tuple[int, ...], sb: tuple[int, ...]
) -> None:
    cond = rng.integers(-1, 2, sc).astype(np.float64)  # -1, 0, 1: non-zero means true
    a, b = data(elem, sa), data(elem, sb)
    got = ops.where(tagged(cond, tn.Float64), tagged(a, elem), tagged(b, elem)).numpy()
    assert got.dtype == elem.dtype
    np.testing.assert_array_equal(got, np.where(cond != 0, a, b))


def test_where_takes_an_integer_condition() -> None:
    cond = tagged(np.array([0, 2, -5, 0], np.int64), tn.Int64)
    a = tagged(np.array([1.0, 2.0, 3.0, 4.0]), tn.Float32)
    b = tagged(np.array(9.0), tn.Float32)
    assert ops.where(cond, a, b).numpy().tolist() == [9.0, 2.0, 3.0, 9.0]


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize(("sa", "sb", "sl"), TRIPLES)
def test_interpolate_matches_the_metann_formula(
    elem: Any, sa: tuple[int, ...], sb: tuple[int, ...], sl: tuple[int, ...]
) -> None:
    a, b = data(elem, sa), data(elem, sb)
    lam = rng.uniform(0, 1, sl).astype(elem.dtype)
    got = ops.interpolate(tagged(a, elem), tagged(b, elem), tagged(lam, elem)).numpy()
    assert got.dtype == elem.dtype
    want = a.astype(np.float64) * lam + b.astype(np.float64) * (1 - lam.astype(np.float64))
    assert_close(got, want, elem)


def test_interpolate_at_lambda_one_and_zero_is_exact() -> None:
    a = data(tn.Float32, (3, 4))
    b = data(tn.Float32, (3, 4))
    lam = np.array([[1.0, 0.0, 1.0, 0.0]] * 3, np.float32)
    got = ops.interpolate(
        tagged(a, tn.Float32), tagged(b, tn.Float32), tagged(lam, tn.Float32)
    ).numpy()
    np.testing.assert_array_equal(got, np.where(lam == 1, a, b))


@pytest.mark.parametrize(
    ("name", "operands"),
    [
        ("maximum", ((4,), (3, 4))),
        ("minimum", ((4,), (3, 4))),
        ("where", ((3, 4), (4,), ())),
        ("interpolate", ((4,), (3, 4), ())),
    ],
)
def test_implementations_write_into_out(name: str, operands: tuple[tuple[int, ...], ...]) -> None:
    arrays = [rng.normal(size=s).astype(np.float32) for s in operands]
    out = np.full((3, 4), np.nan, np.float32)
    impl = implementation(name, tn.CPU)
    assert impl(*arrays, out=out) is out
    np.testing.assert_array_equal(out, impl(*arrays))


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
def test_extremum_rejects_shapes_that_do_not_broadcast(name: str, op: Any, ref: Any) -> None:
    a = tagged(np.ones((4, 3)), tn.Float32)
    b = tagged(np.ones((4,)), tn.Float32)
    with pytest.raises(
        tn.ShapeError, match=f"cannot build {name}: operands could not be broadcast together"
    ):
        op(a, b)


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
def test_extremum_rejects_mixed_elements(name: str, op: Any, ref: Any) -> None:
    a = tagged(np.ones((3,)), tn.Float32)
    b = tagged(np.ones((3,)), tn.Float64)
    with pytest.raises(tn.ElemTypeError, match=f"{name}: operands have different element types"):
        op(a, b)
    # the fix names both directions: the second operand to the first's type, or the reverse
    with pytest.raises(
        tn.ElemTypeError,
        match=r"hint: convert one: ops.astype\(x, tn.Float64\) on operand 2, or "
        r"ops.astype\(x, tn.Float32\) on the others",
    ):
        op(b, a)


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
def test_extremum_rejects_a_fractional_number_for_integers(name: str, op: Any, ref: Any) -> None:
    i = tagged(np.ones((3,), np.int32), tn.Int32)
    with pytest.raises(tn.ElemTypeError, match=rf"cannot build {name}: 1\.5 is not an Int32 value"):
        op(i, 1.5)


@pytest.mark.parametrize(("name", "op", "ref"), EXTREMA)
def test_extremum_rejects_numbers_alone_and_strings(name: str, op: Any, ref: Any) -> None:
    with pytest.raises(tn.OperandError, match=f"cannot build {name} from numbers alone"):
        op(1, 2)
    x = tagged(np.ones((3,)), tn.Float32)
    with pytest.raises(tn.OperandError, match=f"cannot build {name}: operand 2 is not typed_nn"):
        op(x, "1")


def test_where_rejects_branches_of_different_elements() -> None:
    c = tagged(np.ones((3,)), tn.Float32)
    a = tagged(np.ones((3,)), tn.Float32)
    b = tagged(np.ones((3,)), tn.Float64)
    with pytest.raises(tn.ElemTypeError, match="where: the two branches have different element"):
        ops.where(c, a, b)


def test_where_rejects_a_number_branch_and_bad_shapes() -> None:
    c = tagged(np.ones((3,), np.int32), tn.Int32)
    a = tagged(np.ones((3,)), tn.Float32)
    with pytest.raises(tn.OperandError, match="cannot build where: operand 3 is not typed_nn"):
        ops.where(c, a, 0.0)  # type: ignore[call-overload]
    with pytest.raises(
        tn.ShapeError, match="cannot build where: operands could not be broadcast together"
    ):
        ops.where(tagged(np.ones((2,), np.int32), tn.Int32), a, a)


def test_interpolate_rejects_integers_and_bad_shapes() -> None:
    i = tagged(np.ones((3,), np.int32), tn.Int32)
    with pytest.raises(tn.ElemTypeError, match="cannot build interpolate: it needs float"):
        ops.interpolate(i, i, i)
    a = tagged(np.ones((2, 3)), tn.Float32)
    lam = tagged(np.ones((2,)), tn.Float32)
    with pytest.raises(
        tn.ShapeError, match="cannot build interpolate: operands could not be broadcast together"
    ):
        ops.interpolate(a, a, lam)


@pytest.mark.parametrize("name", ["maximum", "minimum", "where", "interpolate"])
def test_select_ops_have_a_write_into_form(name: str) -> None:
    assert out_implementation(name, tn.CPU) is not None


def test_select_ops_inside_a_fused_chain_match_numpy() -> None:
    x = rng.normal(size=(300, 500))  # several fused blocks
    c = rng.integers(0, 2, (500,)).astype(np.float64)
    lam = rng.uniform(size=(300, 500))
    tx, tc, tl = tagged(x, tn.Float64), tagged(c, tn.Float64), tagged(lam, tn.Float64)
    clipped = ops.minimum(ops.maximum(tx, 0.0), 1.5)
    expr = ops.interpolate(ops.where(tc, clipped * 2.0, tx + 1.0), -tx, tl)
    want = np.where(c != 0, np.clip(x, 0.0, 1.5) * 2.0, x + 1.0) * lam + (-x) * (1 - lam)
    np.testing.assert_allclose(expr.numpy(), want, rtol=1e-12)
