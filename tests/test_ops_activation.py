"""sigmoid, tanh, relu and their gradient ops: values, broadcasting, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_close, finite_difference, tagged

import typed_nn as tn
from typed_nn import ops
from typed_nn.ops.declare import implementation

FLOATS = [tn.Float32, tn.Float64]
rng = np.random.default_rng(7)


def np_sigmoid(x: Any) -> Any:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def np_relu(x: Any) -> Any:
    return np.where(x > 0, x, 0)


FORWARD = [(ops.sigmoid, np_sigmoid), (ops.tanh, np.tanh), (ops.relu, np_relu)]


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize(("op", "reference"), FORWARD)
@pytest.mark.parametrize("shape", [(), (5,), (4, 3), (2, 3, 4)])
def test_forward_matches_numpy(elem: Any, op: Any, reference: Any, shape: tuple[int, ...]) -> None:
    x = rng.normal(0, 3, shape).astype(elem.dtype)
    got = op(tagged(x, elem)).numpy()
    assert got.dtype == elem.dtype
    assert got.shape == shape
    assert_close(got, reference(x.astype(np.float64)), elem)


@pytest.mark.parametrize("elem", FLOATS)
def test_sigmoid_is_stable_for_large_inputs(elem: Any) -> None:
    x = np.array([-1e4, -100.0, -30.0, 0.0, 30.0, 100.0, 1e4], elem.dtype)
    got = ops.sigmoid(tagged(x, elem)).numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, np_sigmoid(x.astype(np.float64)), rtol=1e-5, atol=1e-30)
    assert got[3] == 0.5
    assert got[-1] == 1.0


def g_and_point(shape: tuple[int, ...]) -> tuple[Any, Any]:
    return rng.normal(size=shape), rng.normal(0, 2, shape)


def test_sigmoid_grad_is_the_derivative_from_the_output() -> None:
    g, x = g_and_point((3, 4))
    y = ops.sigmoid(tagged(x, tn.Float64))
    got = ops.sigmoid_grad(tagged(g, tn.Float64), y).numpy()
    np.testing.assert_allclose(got, g * finite_difference(np_sigmoid, x), rtol=1e-6, atol=1e-9)


def test_tanh_grad_is_the_derivative_from_the_output() -> None:
    g, x = g_and_point((2, 3, 4))
    y = ops.tanh(tagged(x, tn.Float64))
    got = ops.tanh_grad(tagged(g, tn.Float64), y).numpy()
    np.testing.assert_allclose(got, g * finite_difference(np.tanh, x), rtol=1e-6, atol=1e-9)


def test_relu_grad_is_the_derivative_from_the_input() -> None:
    g, x = g_and_point((5, 4))
    x[np.abs(x) < 1e-3] = 0.5  # keep finite differences away from the kink
    got = ops.relu_grad(tagged(g, tn.Float64), tagged(x, tn.Float64)).numpy()
    np.testing.assert_allclose(got, g * finite_difference(np_relu, x), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("elem", FLOATS)
def test_grads_broadcast_a_lower_rank_gradient(elem: Any) -> None:
    g = rng.normal(size=(4,)).astype(elem.dtype)
    y = rng.uniform(-0.9, 0.9, (3, 4)).astype(elem.dtype)
    tg, ty = tagged(g, elem), tagged(y, elem)
    assert_close(ops.sigmoid_grad(tg, ty).numpy(), g * y * (1 - y), elem)
    assert_close(ops.tanh_grad(tg, ty).numpy(), g * (1 - y * y), elem)
    assert_close(ops.relu_grad(tg, ty).numpy(), np.where(y > 0, g, 0), elem)
    assert ops.relu_grad(tg, ty).numpy().dtype == elem.dtype


def test_relu_grad_gives_zero_not_nan_for_an_infinite_gradient_where_x_is_negative() -> None:
    g = tagged(np.array([np.inf, np.inf]), tn.Float32)
    x = tagged(np.array([-1.0, 1.0]), tn.Float32)
    assert ops.relu_grad(g, x).numpy().tolist() == [0.0, np.inf]


@pytest.mark.parametrize("name", ["sigmoid", "tanh", "relu", "softplus"])
def test_unary_implementations_write_into_out(name: str) -> None:
    x = rng.normal(size=(3, 4)).astype(np.float32)
    out = np.full((3, 4), np.nan, np.float32)
    impl = implementation(name, tn.CPU)
    result = impl(x, out=out)
    assert result is out
    np.testing.assert_array_equal(out, impl(x))


@pytest.mark.parametrize("name", ["sigmoid_grad", "tanh_grad", "relu_grad"])
def test_grad_implementations_write_into_out(name: str) -> None:
    g = rng.normal(size=(4,)).astype(np.float32)
    y = rng.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)
    out = np.full((3, 4), np.nan, np.float32)
    impl = implementation(name, tn.CPU)
    assert impl(g, y, out=out) is out
    np.testing.assert_array_equal(out, impl(g, y))


@pytest.mark.parametrize("op", [ops.sigmoid, ops.tanh, ops.relu, ops.softplus])
def test_activations_reject_integer_elements(op: Any) -> None:
    with pytest.raises(tn.ElemTypeError, match=r"cannot build \w+: it needs float elements"):
        op(tagged(np.array([1, 2]), tn.Int32))


def test_grad_of_higher_rank_than_the_forward_value_is_rejected() -> None:
    g = tagged(np.ones((2, 3)), tn.Float32)
    y = tagged(np.ones((3,)), tn.Float32)
    with pytest.raises(
        tn.ShapeError,
        match=r"sigmoid_grad: the gradient's shape \(2, 3\) does not broadcast to the forward value's \(3\)",
    ):
        ops.sigmoid_grad(g, y)


def test_grad_of_another_size_is_rejected() -> None:
    g = tagged(np.ones((2,)), tn.Float32)
    y = tagged(np.ones((4, 3)), tn.Float32)
    with pytest.raises(
        tn.ShapeError, match="cannot build tanh_grad: operands could not be broadcast together"
    ):
        ops.tanh_grad(g, y)


def test_grad_with_mixed_elements_is_rejected() -> None:
    g = tagged(np.ones((3,)), tn.Float64)
    x = tagged(np.ones((3,)), tn.Float32)
    with pytest.raises(tn.ElemTypeError, match="relu_grad: operands have different element"):
        ops.relu_grad(g, x)


@pytest.mark.parametrize("elem", [tn.Float32, tn.Float64])
def test_softplus_is_log_one_plus_exp_without_overflow(elem: type[tn.Float32]) -> None:
    x = np.array([-800.0, -30.0, -1.0, 0.0, 1e-8, 2.0, 30.0, 800.0])
    got = ops.softplus(tagged(x, elem)).numpy()
    assert got.dtype == elem.dtype
    assert np.isfinite(got).all()
    want = np.where(x > 30, x, np.log1p(np.exp(np.minimum(x, 30))))  # exact in float64 here
    np.testing.assert_allclose(
        got, want.astype(elem.dtype), rtol=2e-7 if elem is tn.Float32 else 1e-15
    )


def test_softplus_gradient_is_sigmoid_fused_and_compiled() -> None:
    x = tagged(rng.normal(size=(3, 4)), tn.Float32)
    g = tn.grad(ops.reduce_sum(ops.softplus(x * 2.0)), x).numpy()
    np.testing.assert_allclose(g, 2.0 / (1.0 + np.exp(-2.0 * x.numpy())), rtol=1e-6)

    @tn.compile
    def step(
        x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim2],
    ) -> tn.TensorLike[tn.Float32, tn.CPU, tn.Dim2]:
        return ops.softplus(x) * 0.5 + 1.0  # one fused element-wise region

    np.testing.assert_allclose(step(x).numpy(), ops.softplus(x).numpy() * 0.5 + 1.0, rtol=1e-6)
