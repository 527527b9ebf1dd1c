"""Add, Subtract and Multiply layers: values, broadcasting collapse, numbers, LIFO, gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import check_layer_gradients, layer_feed, t32, t64

import typed_nn as tn
from typed_nn.layers import (
    AddLayer,
    LayerInMap,
    LayerOutput,
    LeftOperand,
    MultiplyLayer,
    RightOperand,
    SubtractLayer,
    make_infer_layer,
    make_train_layer,
    tensor_type,
)
from typed_nn.policies import PFeedbackOutput

Fn = Callable[[Any, Any], Any]
Grad = Callable[[Any, Any, Any], Any]


def ident(g: Any, a: Any, b: Any) -> Any:
    return g


def neg(g: Any, a: Any, b: Any) -> Any:
    return -g


def times_b(g: Any, a: Any, b: Any) -> Any:
    return g * b


def times_a(g: Any, a: Any, b: Any) -> Any:
    return g * a


# layer, forward, g -> grad of a, g -> grad of b (before summing over broadcast dims)
CASES: list[tuple[type[Any], Any, Grad, Grad]] = [
    (AddLayer, np.add, ident, ident),
    (SubtractLayer, np.subtract, ident, neg),
    (MultiplyLayer, np.multiply, times_b, times_a),
]
IDS = [c[0].__name__ for c in CASES]
rng = np.random.default_rng(5)
F64 = tn.Float64


def train(layer: type[Any], left: object, right: object) -> Any:
    return make_train_layer(
        layer, LayerInMap({LeftOperand: left, RightOperand: right}), PFeedbackOutput
    )


@pytest.mark.parametrize(("layer", "f", "da", "db"), CASES, ids=IDS)
def test_infer_layer(layer: Any, f: Fn, da: Grad, db: Grad) -> None:
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    instance = make_infer_layer(layer)("infer")
    out = layer_feed(instance, {LeftOperand: a, RightOperand: b}).get(LayerOutput)
    np.testing.assert_allclose(out.numpy(), f(a, b))
    assert instance.feed_backward(instance.output_cont().set(LayerOutput, out)).set_keys() == ()
    instance.neutral_invariant()


@pytest.mark.parametrize(("layer", "f", "da", "db"), CASES, ids=IDS)
def test_train_values_with_broadcast_collapse(layer: Any, f: Fn, da: Grad, db: Grad) -> None:
    # Matrix (2, 3) with Tensor3 (4, 2, 3): the matrix gradient sums over the leading dim.
    a, b, g = rng.normal(size=(2, 3)), rng.normal(size=(4, 2, 3)), rng.normal(size=(4, 2, 3))
    instance = train(layer, tn.Matrix[F64, tn.CPU], tn.Tensor3[F64, tn.CPU])("bc")
    out = layer_feed(instance, {LeftOperand: a, RightOperand: b}).get(LayerOutput)
    np.testing.assert_allclose(out.numpy(), f(a, b))
    grads = instance.feed_backward(instance.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_allclose(grads.get(LeftOperand).numpy(), da(g, a, b).sum(axis=0))
    np.testing.assert_allclose(grads.get(RightOperand).numpy(), db(g, a, b))
    instance.neutral_invariant()


@pytest.mark.parametrize(("layer", "f", "da", "db"), CASES, ids=IDS)
@pytest.mark.parametrize(
    ("left", "right"),
    [((2, 3), (2, 3)), ((3,), (2, 3)), ((2, 3), ()), ((2, 3), "number")],
    ids=["same", "vector-matrix", "matrix-scalar", "matrix-number"],
)
def test_finite_difference(layer: Any, f: Fn, da: Grad, db: Grad, left: Any, right: Any) -> None:
    def declared(shape: Any) -> object:
        return float if shape == "number" else tensor_type(F64, tn.CPU, len(shape))

    def value(shape: Any) -> Any:
        return 1.7 if shape == "number" else rng.normal(size=shape)

    instance = train(layer, declared(left), declared(right))("fd")
    check_layer_gradients(instance, {LeftOperand: value(left), RightOperand: value(right)})


@pytest.mark.parametrize(("layer", "f", "da", "db"), CASES, ids=IDS)
def test_nine_forwards_then_nine_backwards(layer: Any, f: Fn, da: Grad, db: Grad) -> None:
    m = tn.Matrix[F64, tn.CPU]
    instance = train(layer, m, m)("lifo")
    a = {n: rng.normal(size=(2, 2)) * n for n in range(1, 10)}
    b = {n: rng.normal(size=(2, 2)) - n for n in range(1, 10)}
    for n in range(1, 10):
        out = layer_feed(instance, {LeftOperand: a[n], RightOperand: b[n]}).get(LayerOutput)
        np.testing.assert_allclose(out.numpy(), f(a[n], b[n]))
    for n in reversed(range(1, 10)):
        g = np.full((2, 2), float(n))
        grads = instance.feed_backward(instance.output_cont().set(LayerOutput, t64(g)))
        np.testing.assert_allclose(grads.get(LeftOperand).numpy(), da(g, a[n], b[n]))
        np.testing.assert_allclose(grads.get(RightOperand).numpy(), db(g, a[n], b[n]))
    instance.neutral_invariant()


@pytest.mark.parametrize(("layer", "f", "da", "db"), CASES, ids=IDS)
def test_empty_grad(layer: Any, f: Fn, da: Grad, db: Grad) -> None:
    m = tn.Matrix[tn.Float32, tn.CPU]
    instance = train(layer, m, m)("dummy")
    x = t32(np.ones((2, 2)))
    instance.feed_forward(instance.input_cont().set(LeftOperand, x).set(RightOperand, x))
    assert instance.feed_backward(instance.output_cont()).set_keys() == ()
    instance.neutral_invariant()


def test_number_operand_on_the_left_metanN_int_port() -> None:
    # MetaNN's Add test with an int port: 2 + x, no gradient for the number.
    L = train(AddLayer, int, tn.Vector[tn.Float32, tn.CPU])
    layer = L("add")
    x = t32(np.array([0.5, 1.5]))
    out = layer.feed_forward(layer.input_cont().set(LeftOperand, 2).set(RightOperand, x))
    np.testing.assert_allclose(out.get(LayerOutput).numpy(), [2.5, 3.5])
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t32(np.array([1.0, 2.0]))))
    assert grads.set_keys() == (RightOperand,)
