"""Softmax and NLLLoss layers (ReLU is covered with the unary layers)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import check_layer_gradients, layer_feed, t32, t64

import typed_nn as tn
from typed_nn.layers import (
    LayerInMap,
    LayerInput,
    LayerOutput,
    LossLayerWeight,
    NLLLossLayer,
    SoftmaxLayer,
    make_infer_layer,
    make_train_layer,
    tensor_type,
)
from typed_nn.policies import PFeedbackOutput, PModifyDimNumIs

rng = np.random.default_rng(9)
F64 = tn.Float64


def np_softmax(x: Any, k: int) -> Any:
    axes = tuple(range(x.ndim - k, x.ndim))
    e = np.exp(x - x.max(axis=axes, keepdims=True))
    return e / e.sum(axis=axes, keepdims=True)


def np_softmax_grad(g: Any, y: Any, k: int) -> Any:
    axes = tuple(range(y.ndim - k, y.ndim))
    return y * (g - (g * y).sum(axis=axes, keepdims=True))


def softmax_train(k: int, rank: int = 3) -> Any:
    declared = tensor_type(F64, tn.CPU, rank)
    return make_train_layer(
        SoftmaxLayer, LayerInMap({LayerInput: declared}), PFeedbackOutput, PModifyDimNumIs(k)
    )


@pytest.mark.parametrize("k", [1, 2])
def test_softmax_forward_backward_and_finite_difference(k: int) -> None:
    x, g = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    layer = softmax_train(k)("softmax")
    y = layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy()
    np.testing.assert_allclose(y, np_softmax(x, k))
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_allclose(
        grads.get(LayerInput).numpy(), np_softmax_grad(g, np_softmax(x, k), k)
    )
    check_layer_gradients(layer, {LayerInput: x})


def test_softmax_infer_lifo_and_empty_grad() -> None:
    infer = make_infer_layer(SoftmaxLayer, PModifyDimNumIs(2))("infer")
    x = rng.normal(size=(2, 3)).astype(np.float32)
    out = infer.feed_forward(infer.input_cont().set(LayerInput, t32(x))).get(LayerOutput)
    np.testing.assert_allclose(out.numpy(), np_softmax(x.astype(np.float64), 2), rtol=1e-5)
    infer.neutral_invariant()
    layer = softmax_train(1, 2)("lifo")
    xs = {n: rng.normal(size=(2, 3)) * n for n in range(1, 10)}
    for n in range(1, 10):
        layer_feed(layer, {LayerInput: xs[n]})
    for n in reversed(range(1, 10)):
        g = np.arange(6.0).reshape(2, 3) * n
        grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
        expected = np_softmax_grad(g, np_softmax(xs[n], 1), 1)
        np.testing.assert_allclose(grads.get(LayerInput).numpy(), expected, atol=1e-12)
    layer_feed(layer, {LayerInput: xs[1]})
    assert layer.feed_backward(layer.output_cont()).set_keys() == ()
    layer.neutral_invariant()


def nll_train() -> Any:
    m = tn.Matrix[F64, tn.CPU]
    return make_train_layer(
        NLLLossLayer, LayerInMap({LayerInput: m, LossLayerWeight: m}), PFeedbackOutput
    )


def test_nll_loss_values_and_gradient_to_prediction_only() -> None:
    pred = np_softmax(rng.normal(size=(3, 4)), 1)
    truth = np.eye(4)[[0, 2, 3]]
    layer = nll_train()("loss")
    out = layer_feed(layer, {LayerInput: pred, LossLayerWeight: truth}).get(LayerOutput)
    assert out.rank == 0
    expected = -np.sum(truth * np.log(pred)) / truth.sum()
    np.testing.assert_allclose(out.numpy(), expected)
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(np.array(2.0))))
    assert grads.set_keys() == (LayerInput,)
    np.testing.assert_allclose(grads.get(LayerInput).numpy(), -2.0 / truth.sum() * truth / pred)
    layer.neutral_invariant()


def test_nll_loss_finite_difference_lifo_and_empty_grad() -> None:
    layer = nll_train()("loss")
    truth = rng.uniform(0.1, 1.0, size=(2, 3))
    pred = rng.uniform(0.2, 0.9, size=(2, 3))
    check_layer_gradients(
        layer, {LayerInput: pred, LossLayerWeight: truth}, no_grad=(LossLayerWeight,)
    )
    preds = {n: rng.uniform(0.2, 0.9, size=(2, 3)) for n in range(1, 10)}
    for n in range(1, 10):
        layer_feed(layer, {LayerInput: preds[n], LossLayerWeight: truth})
    for n in reversed(range(1, 10)):
        grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(np.array(float(n)))))
        expected = -float(n) / truth.sum() * truth / preds[n]
        np.testing.assert_allclose(grads.get(LayerInput).numpy(), expected)
    layer_feed(layer, {LayerInput: pred, LossLayerWeight: truth})
    assert layer.feed_backward(layer.output_cont()).set_keys() == ()
    layer.neutral_invariant()


def test_nll_loss_infer_layer_returns_empty_backward() -> None:
    layer = make_infer_layer(NLLLossLayer)("loss")
    p = t32(np.full((2,), 0.5))
    out = layer.feed_forward(layer.input_cont().set(LayerInput, p).set(LossLayerWeight, p))
    np.testing.assert_allclose(out.get(LayerOutput).numpy(), -np.log(0.5), rtol=1e-6)
    assert (
        layer.feed_backward(layer.output_cont().set(LayerOutput, out.get(LayerOutput))).set_keys()
        == ()
    )
