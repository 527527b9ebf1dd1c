"""Dot, Permute and Transpose layers (MetaNN ``principal/tensor``), and Interpolate."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import check_layer_gradients, layer_feed, t32, t64

import typed_nn as tn
from typed_nn.layers import (
    DotLayer,
    InterpolateLayer,
    InterpolateLayerLambda,
    InterpolateLayerWeight1,
    InterpolateLayerWeight2,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    PermuteLayer,
    RightOperand,
    TransposeLayer,
    make_infer_layer,
    make_train_layer,
    tensor_type,
)
from typed_nn.policies import PDimArrayIs, PFeedbackOutput, PModifyDimNumIs

rng = np.random.default_rng(21)
F64 = tn.Float64


def typ(rank: int) -> object:
    return tensor_type(F64, tn.CPU, rank)


def dot_train(ra: int, rb: int, k: int) -> Any:
    in_map = LayerInMap({LeftOperand: typ(ra), RightOperand: typ(rb)})
    return make_train_layer(DotLayer, in_map, PFeedbackOutput, PModifyDimNumIs(k))


DOT_CASES = [
    ((4, 3), (3, 2), 1),  # matrix product
    ((3,), (3, 2), 1),  # vector-matrix
    ((4, 3), (3,), 1),  # matrix-vector: dA is the outer product g (x) b
    ((3,), (3,), 1),  # vector-vector: a scalar
    ((2, 3, 4), (3, 4, 5), 2),  # MetaNN's multi-dim case, k = 2
    ((2, 3, 4), (4, 2), 1),
]


@pytest.mark.parametrize(("sa", "sb", "k"), DOT_CASES)
def test_dot_forward_backward_and_finite_difference(sa: Any, sb: Any, k: int) -> None:
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    layer = dot_train(len(sa), len(sb), k)("dot")
    out = layer_feed(layer, {LeftOperand: a, RightOperand: b}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, np.tensordot(a, b, k))
    g = rng.normal(size=out.shape)
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    # dA contracts g with b over b's free dims; dB contracts a's free dims with g.
    free_b = list(range(k, len(sb)))
    free_a = list(range(len(sa) - k))
    da = np.tensordot(g, b, (list(range(len(sa) - k, g.ndim)), free_b))
    db = np.tensordot(a, g, (free_a, list(range(len(free_a)))))
    np.testing.assert_allclose(grads.get(LeftOperand).numpy(), da)
    np.testing.assert_allclose(grads.get(RightOperand).numpy(), db)
    check_layer_gradients(layer, {LeftOperand: a, RightOperand: b})


def test_dot_matrices_reduce_to_g_bt_and_at_g() -> None:
    a, b, g = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=(4, 2))
    layer = dot_train(2, 2, 1)("dot")
    layer_feed(layer, {LeftOperand: a, RightOperand: b})
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_allclose(grads.get(LeftOperand).numpy(), g @ b.T)
    np.testing.assert_allclose(grads.get(RightOperand).numpy(), a.T @ g)


def test_dot_lifo_empty_grad_and_infer() -> None:
    layer = dot_train(2, 2, 1)("dot")
    pairs = {n: (rng.normal(size=(2, 3)) * n, rng.normal(size=(3, 2)) + n) for n in range(1, 10)}
    for n in range(1, 10):
        layer_feed(layer, {LeftOperand: pairs[n][0], RightOperand: pairs[n][1]})
    for n in reversed(range(1, 10)):
        g = np.full((2, 2), float(n))
        grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
        np.testing.assert_allclose(grads.get(LeftOperand).numpy(), g @ pairs[n][1].T)
        np.testing.assert_allclose(grads.get(RightOperand).numpy(), pairs[n][0].T @ g)
    layer_feed(layer, {LeftOperand: pairs[1][0], RightOperand: pairs[1][1]})
    assert layer.feed_backward(layer.output_cont()).set_keys() == ()
    layer.neutral_invariant()
    infer = make_infer_layer(DotLayer, PModifyDimNumIs(2))("infer")
    a, b = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)
    out = infer.feed_forward(infer.input_cont().set(LeftOperand, t32(a)).set(RightOperand, t32(b)))
    np.testing.assert_allclose(out.get(LayerOutput).numpy(), np.sum(a * b), rtol=1e-5)


@pytest.mark.parametrize("order", [(1, 0), (2, 0, 1), (1, 2, 0), (0, 2, 1)])
def test_permute_forward_backward_and_finite_difference(order: tuple[int, ...]) -> None:
    shape = (2, 3, 4)[: len(order)]
    x = rng.normal(size=shape)
    layer = make_train_layer(
        PermuteLayer,
        LayerInMap({LayerInput: typ(len(order))}),
        PFeedbackOutput,
        PDimArrayIs(*order),
    )("permute")
    out = layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy()
    np.testing.assert_array_equal(out, np.transpose(x, order))
    g = rng.normal(size=out.shape)
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_array_equal(grads.get(LayerInput).numpy(), np.transpose(g, np.argsort(order)))
    check_layer_gradients(layer, {LayerInput: x})


def test_transpose_layer_lifo_empty_grad_and_infer() -> None:
    layer = make_train_layer(TransposeLayer, LayerInMap({LayerInput: typ(2)}), PFeedbackOutput)("t")
    assert layer.order == (1, 0)
    for n in range(1, 10):
        x = rng.normal(size=(2, 3)) * n
        np.testing.assert_array_equal(
            layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy(), x.T
        )
    for n in reversed(range(1, 10)):
        g = np.arange(6.0).reshape(3, 2) * n
        grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
        np.testing.assert_array_equal(grads.get(LayerInput).numpy(), g.T)
    layer_feed(layer, {LayerInput: rng.normal(size=(2, 3))})
    assert layer.feed_backward(layer.output_cont()).set_keys() == ()
    layer.neutral_invariant()
    with pytest.raises(tn.LayerError, match=r"Cannot feed back in layer 't': its forward stack"):
        layer.feed_backward(layer.output_cont())  # every backward pairs with a forward
    infer = make_infer_layer(TransposeLayer)("infer")
    x32 = rng.normal(size=(3, 2)).astype(np.float32)
    out = infer.feed_forward(infer.input_cont().set(LayerInput, t32(x32)))
    np.testing.assert_array_equal(out.get(LayerOutput).numpy(), x32.T)


W1, W2, LAM = InterpolateLayerWeight1, InterpolateLayerWeight2, InterpolateLayerLambda


def interp_train(r1: int, r2: int, rl: int) -> Any:
    in_map = LayerInMap({W1: typ(r1), W2: typ(r2), LAM: typ(rl)})
    return make_train_layer(InterpolateLayer, in_map, PFeedbackOutput)


@pytest.mark.parametrize(
    "shapes", [((2, 3), (2, 3), (2, 3)), ((2, 3), (2, 3), ()), ((2, 3), (3,), (3,))]
)
def test_interpolate_values_and_finite_difference(shapes: Any) -> None:
    w1, w2, lam = (rng.normal(size=s) for s in shapes)
    layer = interp_train(*(len(s) for s in shapes))("interp")
    out = layer_feed(layer, {W1: w1, W2: w2, LAM: lam}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, w1 * lam + w2 * (1 - lam))
    g = rng.normal(size=out.shape)
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))

    def summed(x: Any, shape: tuple[int, ...]) -> Any:
        return x.sum(axis=tuple(range(x.ndim - len(shape))))

    np.testing.assert_allclose(
        grads.get(W1).numpy(), summed(g * lam * np.ones(out.shape), shapes[0])
    )
    np.testing.assert_allclose(
        grads.get(W2).numpy(), summed(g * (1 - lam) * np.ones(out.shape), shapes[1])
    )
    np.testing.assert_allclose(grads.get(LAM).numpy(), summed(g * (w1 - w2), shapes[2]))
    check_layer_gradients(layer, {W1: w1, W2: w2, LAM: lam})


def test_interpolate_lifo_empty_grad_and_infer() -> None:
    layer = interp_train(1, 1, 1)("interp")
    vals = {n: tuple(rng.normal(size=(3,)) * n for _ in range(3)) for n in range(1, 10)}
    for n in range(1, 10):
        layer_feed(layer, dict(zip((W1, W2, LAM), vals[n], strict=True)))
    for n in reversed(range(1, 10)):
        w1, w2, lam = vals[n]
        g = np.full(3, float(n))
        grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
        np.testing.assert_allclose(grads.get(LAM).numpy(), g * (w1 - w2))
        np.testing.assert_allclose(grads.get(W1).numpy(), g * lam)
    layer_feed(layer, dict(zip((W1, W2, LAM), vals[1], strict=True)))
    assert layer.feed_backward(layer.output_cont()).set_keys() == ()
    layer.neutral_invariant()
    infer = make_infer_layer(InterpolateLayer)("infer")
    one, zero, mix = t32(np.ones(2)), t32(np.zeros(2)), t32(np.array([0.25, 0.75]))
    out = infer.feed_forward(infer.input_cont().set(W1, one).set(W2, zero).set(LAM, mix))
    np.testing.assert_allclose(out.get(LayerOutput).numpy(), [0.25, 0.75])
