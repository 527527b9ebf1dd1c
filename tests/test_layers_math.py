"""Unary layers (math, sigmoid, tanh, relu): MetaNN's four LayerTest cases for each, plus
finite-difference gradient checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_close, check_layer_gradients, layer_feed, t32, t64

import typed_nn as tn
from typed_nn.layers import (
    AbsLayer,
    AcoshLayer,
    AcosLayer,
    AsinhLayer,
    AsinLayer,
    CosLayer,
    ExpLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LogLayer,
    ReLULayer,
    SigmoidLayer,
    SinLayer,
    SquareLayer,
    TanhLayer,
    TanLayer,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.policies import PFeedbackOutput

Fn = Callable[[Any], Any]


def sigmoid(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


# layer, forward, derivative, (low, high) of the inputs drawn
CASES: list[tuple[type[Any], Fn, Fn, tuple[float, float]]] = [
    (AbsLayer, np.abs, np.sign, (0.2, 2.0)),
    (SinLayer, np.sin, np.cos, (-2.0, 2.0)),
    (CosLayer, np.cos, lambda x: -np.sin(x), (-2.0, 2.0)),
    (TanLayer, np.tan, lambda x: 1 / np.cos(x) ** 2, (-1.0, 1.0)),
    (AsinLayer, np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), (-0.8, 0.8)),
    (AcosLayer, np.arccos, lambda x: -1 / np.sqrt(1 - x * x), (-0.8, 0.8)),
    (AsinhLayer, np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), (-2.0, 2.0)),
    (AcoshLayer, np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), (1.2, 3.0)),
    (SquareLayer, np.square, lambda x: 2 * x, (-2.0, 2.0)),
    (ExpLayer, np.exp, np.exp, (-2.0, 2.0)),
    (LogLayer, np.log, lambda x: 1 / x, (0.2, 3.0)),
    (SigmoidLayer, sigmoid, lambda x: sigmoid(x) * (1 - sigmoid(x)), (-3.0, 3.0)),
    (TanhLayer, np.tanh, lambda x: 1 - np.tanh(x) ** 2, (-2.0, 2.0)),
    (ReLULayer, lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0, (-2.0, 2.0)),
]
IDS = [case[0].__name__ for case in CASES]
rng = np.random.default_rng(11)


def draw(bounds: tuple[float, float], shape: tuple[int, ...]) -> Any:
    x = rng.uniform(*bounds, shape)
    if bounds[0] < 0 < bounds[1]:  # keep away from kinks (abs, relu) at 0
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    return x


def train(layer: type[Any]) -> Any:
    declared = tn.Matrix[tn.Float64, tn.CPU]
    return make_train_layer(layer, LayerInMap({LayerInput: declared}), PFeedbackOutput)


@pytest.mark.parametrize(("layer", "f", "df", "bounds"), CASES, ids=IDS)
def test_infer_layer_forward_and_empty_backward(layer: Any, f: Fn, df: Fn, bounds: Any) -> None:
    x = draw(bounds, (3, 4)).astype(np.float32)
    instance = make_infer_layer(layer)("infer")
    out = instance.feed_forward(instance.input_cont().set(LayerInput, t32(x)))
    assert_close(out.get(LayerOutput).numpy(), f(x.astype(np.float64)), tn.Float32)
    grads = instance.feed_backward(instance.output_cont().set(LayerOutput, t32(x)))
    assert grads.set_keys() == ()
    instance.neutral_invariant()


@pytest.mark.parametrize(("layer", "f", "df", "bounds"), CASES, ids=IDS)
def test_train_layer_forward_and_backward(layer: Any, f: Fn, df: Fn, bounds: Any) -> None:
    x, g = draw(bounds, (2, 3)), rng.normal(size=(2, 3))
    instance = train(layer)("train")
    out = layer_feed(instance, {LayerInput: x}).get(LayerOutput)
    assert isinstance(out, tn.ops.Operation)  # lazy: nothing computed in the layer
    np.testing.assert_allclose(out.numpy(), f(x), rtol=1e-12)
    grad = instance.feed_backward(instance.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_allclose(grad.get(LayerInput).numpy(), g * df(x), rtol=1e-12)
    instance.neutral_invariant()


@pytest.mark.parametrize(("layer", "f", "df", "bounds"), CASES, ids=IDS)
def test_finite_difference(layer: Any, f: Fn, df: Fn, bounds: Any) -> None:
    check_layer_gradients(train(layer)("fd"), {LayerInput: draw(bounds, (2, 3))})


@pytest.mark.parametrize(("layer", "f", "df", "bounds"), CASES, ids=IDS)
def test_nine_forwards_then_nine_backwards_pair_in_reverse(
    layer: Any, f: Fn, df: Fn, bounds: Any
) -> None:
    instance = train(layer)("lifo")
    inputs = {n: draw(bounds, (2, 2)) for n in range(1, 10)}  # loop_count 1..9, distinct
    for n in range(1, 10):
        out = layer_feed(instance, {LayerInput: inputs[n]}).get(LayerOutput)
        np.testing.assert_allclose(out.numpy(), f(inputs[n]), rtol=1e-12)
    with pytest.raises(tn.LayerError, match="Stack is not empty"):
        instance.neutral_invariant()
    for n in reversed(range(1, 10)):
        g = np.full((2, 2), float(n))
        grad = instance.feed_backward(instance.output_cont().set(LayerOutput, t64(g)))
        np.testing.assert_allclose(grad.get(LayerInput).numpy(), g * df(inputs[n]), rtol=1e-12)
    instance.neutral_invariant()


@pytest.mark.parametrize(("layer", "f", "df", "bounds"), CASES, ids=IDS)
def test_empty_grad_gives_empty_container_and_pops(layer: Any, f: Fn, df: Fn, bounds: Any) -> None:
    instance = train(layer)("dummy")
    layer_feed(instance, {LayerInput: draw(bounds, (3, 2))})
    grads = instance.feed_backward(instance.output_cont())
    assert grads.set_keys() == ()
    instance.neutral_invariant()  # the forward's value was popped
