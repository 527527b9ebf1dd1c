"""softmax, log_softmax, nll_loss and their gradient ops: values, gradients, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_close, numerical_gradient, tagged

import typed_nn as tn
from typed_nn import ops
from typed_nn.debug import is_enabled

FLOATS = [tn.Float32, tn.Float64]
rng = np.random.default_rng(11)


def group_axes(x: Any, k: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - k, x.ndim))


def np_softmax(x: Any, k: int = 1) -> Any:
    e = np.exp(x - x.max(axis=group_axes(x, k), keepdims=True))
    return e / e.sum(axis=group_axes(x, k), keepdims=True)


def np_log_softmax(x: Any, k: int = 1) -> Any:
    return np.log(np_softmax(x.astype(np.float64), k))


def np_nll(truth: Any, pred: Any) -> Any:
    return -np.sum(truth * np.log(pred)) / np.sum(truth)


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize(("shape", "k"), [((5,), 1), ((4, 3), 1), ((2, 4, 3), 1), ((2, 4, 3), 2)])
def test_softmax_matches_numpy(elem: Any, shape: tuple[int, ...], k: int) -> None:
    x = rng.normal(0, 3, shape).astype(elem.dtype)
    got = ops.softmax(tagged(x, elem), k).numpy()
    assert got.dtype == elem.dtype
    assert_close(got, np_softmax(x.astype(np.float64), k), elem)
    assert_close(got.sum(axis=group_axes(x, k)), np.ones(shape[: len(shape) - k]), elem)


@pytest.mark.parametrize("elem", FLOATS)
@pytest.mark.parametrize(("shape", "k"), [((4, 3), 1), ((2, 4, 3), 2), ((2, 4, 3), 3)])
def test_log_softmax_matches_numpy(elem: Any, shape: tuple[int, ...], k: int) -> None:
    x = rng.normal(0, 3, shape).astype(elem.dtype)
    got = ops.log_softmax(tagged(x, elem), k).numpy()
    assert got.dtype == elem.dtype
    assert_close(got, np_log_softmax(x, k), elem)


@pytest.mark.parametrize("elem", FLOATS)
def test_softmax_and_log_softmax_are_stable_for_large_inputs(elem: Any) -> None:
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -2000.0]], elem.dtype)
    soft = ops.softmax(tagged(x, elem)).numpy()
    log = ops.log_softmax(tagged(x, elem)).numpy()
    assert np.all(np.isfinite(soft))
    assert np.all(np.isfinite(log))
    assert_close(soft, np_softmax(x.astype(np.float64) - x.max(axis=1, keepdims=True)), elem)
    assert log[1, 2] == pytest.approx(-1000.0 - np.log(2.0), rel=1e-6)  # no log(0)


@pytest.mark.parametrize(("shape", "k"), [((3, 4), 1), ((2, 3, 4), 2), ((5,), 1)])
def test_softmax_grad_is_the_chain_rule(shape: tuple[int, ...], k: int) -> None:
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    y = ops.softmax(tagged(x, tn.Float64), k)
    got = ops.softmax_grad(tagged(g, tn.Float64), y, k).numpy()
    want = numerical_gradient(lambda v: float(np.sum(g * np_softmax(v, k))), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(("shape", "k"), [((3, 4), 1), ((2, 3, 4), 2)])
def test_log_softmax_grad_is_the_chain_rule_from_the_output(shape: tuple[int, ...], k: int) -> None:
    x, g = rng.normal(size=shape), rng.normal(size=shape)
    y = ops.log_softmax(tagged(x, tn.Float64), k)
    got = ops.log_softmax_grad(tagged(g, tn.Float64), y, k).numpy()
    want = numerical_gradient(lambda v: float(np.sum(g * np_log_softmax(v, k))), x)
    # central differences of a sum of ~24 terms of size ~1: rounding ~1e-16 * 24 / 1e-6
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(3, 0), (2, 0, 0), (0, 3), (0, 0)])
@pytest.mark.parametrize("op", [ops.softmax, ops.log_softmax])
def test_softmax_of_empty_data_is_empty(shape: tuple[int, ...], op: Any) -> None:
    """As PyTorch's: rows of no element (a sequence of length 0) have no maximum to take
    (numpy's error was an EvaluationError); eager, compiled and the gradient."""
    x = tagged(np.zeros(shape), tn.Float64)
    assert op(x).numpy().shape == shape
    assert tn.compile(op)(x).numpy().shape == shape
    assert tn.grad(ops.reduce_sum(op(x)), x).numpy().shape == shape


@pytest.mark.parametrize("elem", FLOATS)
def test_nll_loss_is_normalised_by_the_truth_sum(elem: Any) -> None:
    truth = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 0.5]], elem.dtype)  # sum 3.5, not 1
    pred = np_softmax(rng.normal(size=(2, 3))).astype(elem.dtype)
    got = ops.nll_loss(tagged(truth, elem), tagged(pred, elem)).numpy()
    assert got.shape == ()
    assert got.dtype == elem.dtype
    assert_close(got, np_nll(truth.astype(np.float64), pred.astype(np.float64)), elem)


def test_nll_loss_of_one_hot_rows_is_the_mean_cross_entropy() -> None:
    labels = np.array([2, 0, 1, 2])
    truth = np.eye(3)[labels]
    pred = np_softmax(rng.normal(size=(4, 3)))
    got = ops.nll_loss(tagged(truth, tn.Float64), tagged(pred, tn.Float64)).numpy()
    assert got == pytest.approx(-np.mean(np.log(pred[np.arange(4), labels])))


def test_nll_loss_ignores_zero_truth_where_the_prediction_underflowed() -> None:
    truth = tagged(np.array([1.0, 0.0]), tn.Float32)
    pred = tagged(np.array([1.0, 0.0]), tn.Float32)
    assert ops.nll_loss(truth, pred).numpy() == 0.0
    grad = ops.nll_loss_grad(tagged(np.array(1.0), tn.Float32), truth, pred).numpy()
    assert grad.tolist() == [-1.0, 0.0]


def test_nll_loss_grad_is_the_chain_rule() -> None:
    truth = rng.uniform(0, 1, (3, 4))
    pred = rng.uniform(0.1, 1, (3, 4))
    g = 0.7
    got = ops.nll_loss_grad(
        tagged(np.array(g), tn.Float64), tagged(truth, tn.Float64), tagged(pred, tn.Float64)
    ).numpy()
    want = numerical_gradient(lambda p: g * float(np_nll(truth, p)), pred)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_softmax_then_nll_gradient_of_a_vector_is_g_times_y_minus_w_over_s() -> None:
    """METANN.md §2.3: the unfused chain rule g * (Y - w / S), S = sum(w) != 1 (not MetaNN's
    fused S-times-larger value)."""
    x = rng.normal(size=(5,))
    w = rng.uniform(0, 1, (5,))
    y = ops.softmax(tagged(x, tn.Float64))
    g = 2.5
    got = ops.softmax_grad(
        ops.nll_loss_grad(tagged(np.array(g), tn.Float64), tagged(w, tn.Float64), y), y
    ).numpy()
    np.testing.assert_allclose(got, g * (np_softmax(x) - w / w.sum()), rtol=1e-12)


def test_softmax_then_nll_gradient_of_a_batch_is_the_chain_rule() -> None:
    """Per row r: g * (Y * sum_r(w) - w) / S, with S the sum over the whole batch."""
    x = rng.normal(size=(3, 4))
    w = rng.uniform(0, 1, (3, 4))
    y = ops.softmax(tagged(x, tn.Float64))
    g = 2.5
    got = ops.softmax_grad(
        ops.nll_loss_grad(tagged(np.array(g), tn.Float64), tagged(w, tn.Float64), y), y
    ).numpy()
    want = numerical_gradient(lambda v: g * float(np_nll(w, np_softmax(v))), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    expected = g * (np_softmax(x) * w.sum(axis=1, keepdims=True) - w) / w.sum()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("op", [ops.softmax, ops.log_softmax])
@pytest.mark.parametrize("k", [0, 3, -1])
def test_softmax_rejects_k_outside_one_to_rank(op: Any, k: int) -> None:
    x = tagged(np.zeros((2, 3)), tn.Float32)
    with pytest.raises(tn.RankError, match=rf"softmax: k={k} is not a number of trailing dims"):
        op(x, k)


@pytest.mark.parametrize("op", [ops.softmax, ops.log_softmax])
def test_k_counts_trailing_dims_not_a_pytorch_dim(op: Any) -> None:
    torch = pytest.importorskip("torch")
    x = rng.normal(size=(2, 3, 4))
    t = tagged(x, tn.Float64)
    whole = torch.softmax(torch.from_numpy(x).reshape(2, 12), 1).reshape(2, 3, 4).numpy()
    want = whole if op is ops.softmax else np.log(whole)
    np.testing.assert_allclose(op(t, 2).numpy(), want, rtol=1e-12)  # the last two dims together
    np.testing.assert_allclose(op(t, trailing_dims=2).numpy(), want, rtol=1e-12)
    last = torch.softmax(torch.from_numpy(x), 2).numpy()  # PyTorch's dim=2: the last dim only
    np.testing.assert_allclose(
        op(t, trailing_dims=1).numpy(), last if op is ops.softmax else np.log(last), rtol=1e-12
    )


@pytest.mark.parametrize("op", [ops.softmax, ops.log_softmax])
def test_k_and_trailing_dims_are_one_parameter(op: Any) -> None:
    t = tagged(np.zeros((2, 3, 4)), tn.Float64)
    assert op(t, 2, trailing_dims=2).shape == (2, 3, 4)  # the same value twice is fine
    with pytest.raises(tn.ParamError, match="k and trailing_dims are one parameter, given two"):
        op(t, 2, trailing_dims=1)
    with pytest.raises(tn.RankError, match=r"k=4 is not a number(.|\n)*it is not PyTorch's dim"):
        op(t, trailing_dims=4)


def test_softmax_of_a_scalar_is_rejected() -> None:
    with pytest.raises(tn.RankError, match="accepted : k from 1 to 0"):
        ops.softmax(tagged(np.array(1.0), tn.Float32))


def test_softmax_rejects_integer_elements() -> None:
    with pytest.raises(
        tn.ElemTypeError,
        match=r"(?s)cannot build softmax: it needs float elements\..*"
        r"accepted : Float16, BFloat16, Float32 or Float64\n",
    ):
        ops.softmax(tagged(np.array([1, 2]), tn.Int32))


@pytest.mark.parametrize("op", [ops.softmax_grad, ops.log_softmax_grad])
def test_softmax_grads_need_the_output_shape(op: Any) -> None:
    g = tagged(np.zeros((3,)), tn.Float32)
    y = tagged(np.zeros((2, 3)), tn.Float32)
    with pytest.raises(tn.ShapeError, match="softmax_grad: the gradient and the forward output"):
        op(g, y)


def test_softmax_grad_rejects_mixed_elements() -> None:
    g = tagged(np.zeros((2, 3)), tn.Float64)
    y = tagged(np.zeros((2, 3)), tn.Float32)
    with pytest.raises(tn.ElemTypeError, match="softmax_grad: operands have different element"):
        ops.softmax_grad(g, y)


def test_softmax_grad_checks_k() -> None:
    y = tagged(np.zeros((2, 3)), tn.Float32)
    with pytest.raises(tn.RankError, match="softmax_grad: k=3 is not"):
        ops.softmax_grad(y, y, 3)


def test_nll_loss_needs_truth_and_prediction_of_one_shape() -> None:
    truth = tagged(np.ones((3,)), tn.Float32)
    pred = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(tn.ShapeError, match="nll_loss: truth and prediction differ in shape"):
        ops.nll_loss(truth, pred)
    with pytest.raises(tn.ShapeError, match="nll_loss_grad: truth and prediction differ"):
        ops.nll_loss_grad(tagged(np.array(1.0), tn.Float32), truth, pred)


def test_nll_loss_grad_needs_a_scalar_gradient() -> None:
    p = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(tn.ShapeError, match="cannot build nll_loss_grad: grad has rank 1"):
        ops.nll_loss_grad(tagged(np.ones((3,)), tn.Float32), p, p)


def test_nll_loss_rejects_integer_elements() -> None:
    i = tagged(np.ones((2, 3), np.int32), tn.Int32)
    with pytest.raises(tn.ElemTypeError, match="cannot build nll_loss: it needs float elements"):
        ops.nll_loss(i, i)


def test_nll_loss_rejects_a_non_tensor() -> None:
    p = tagged(np.ones((2, 3)), tn.Float32)
    with pytest.raises(tn.OperandError, match="cannot build nll_loss: operand 1 is not typed_nn"):
        ops.nll_loss([[1.0, 0.0, 0.0]], p)  # type: ignore[arg-type]


@pytest.mark.parametrize("op", [ops.sigmoid_grad, ops.tanh_grad, ops.relu_grad])
def test_elementwise_grads_broadcast_a_lower_rank_gradient(op: Any) -> None:
    # docs/ops-nn.md: these broadcast the gradient; softmax_grad / log_softmax_grad do not.
    y = tagged(np.full((2, 3), 0.5), tn.Float64)
    row = tagged(np.array([1.0, 2.0, 3.0]), tn.Float64)
    rows = tagged(np.tile([1.0, 2.0, 3.0], (2, 1)), tn.Float64)
    np.testing.assert_allclose(op(row, y).numpy(), op(rows, y).numpy())


@pytest.mark.skipif(is_enabled(), reason="debug mode raises on the Inf (test_debug_checks)")
def test_nll_loss_is_infinite_where_the_truth_has_a_zero_prediction() -> None:
    # The unmasked fast form gives NaN here (0 * ln 0 beside 1 * ln 0); the masked form, inf.
    truth = tagged(np.array([[0.0, 1.0], [1.0, 0.0]]), tn.Float64)
    pred = tagged(np.array([[0.0, 0.0], [0.5, 0.5]]), tn.Float64)
    assert float(tn.evaluate(ops.nll_loss(truth, pred)).numpy()) == np.inf
