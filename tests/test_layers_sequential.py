"""``Sequential`` and ``residual``: values from numpy, gradients from ``tn.vjp``, LIFO, errors.

The block is linear → relu → linear (float64, row vectors ``x·W + b``); the residual adds the
input. Backward is one ``tn.vjp`` of the recorded forward, for an input that is a principal
tensor and for one that is a node (then the forward runs on a cut copy of it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from composite_helpers import collect, init_params
from helpers import Array, t64

import typed_nn as tn
from typed_nn import Dim2
from typed_nn.layers import (
    AddLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LinearLayer,
    ReLULayer,
    Residual,
    Sequential,
    Sublayer,
    TanhLayer,
    TopologyError,
    make_infer_layer,
    make_train_layer,
    residual,
    tensor_type,
)
from typed_nn.layers.derived import ForwardRecord
from typed_nn.policies import PElemIs, PFeedbackOutput, PUpdate


class Block(Sequential[Dim2, Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer), ("fc2", LinearLayer))


M64 = tensor_type(tn.Float64, tn.CPU, 2)
SIZES = {"fc1": (4, 6), "fc2": (6, 4)}


def params(prefix: str, seed: int) -> dict[str, Array]:
    rng = np.random.default_rng(seed)
    return {
        f"{prefix}/fc1/weight": rng.normal(size=(4, 6)) * 0.5,
        f"{prefix}/fc1/bias": rng.normal(size=6),
        f"{prefix}/fc2/weight": rng.normal(size=(6, 4)) * 0.5,
        f"{prefix}/fc2/bias": rng.normal(size=4),
    }


def block_numpy(p: dict[str, Array], prefix: str, x: Array) -> Array:
    h = np.maximum(x @ p[f"{prefix}/fc1/weight"] + p[f"{prefix}/fc1/bias"], 0.0)
    out: Array = h @ p[f"{prefix}/fc2/weight"] + p[f"{prefix}/fc2/bias"]
    return out


def batch(seed: int) -> Array:
    return np.random.default_rng(seed).normal(size=(5, 4))


def make_residual(*policies: Any) -> tuple[Any, dict[str, Any]]:
    cls = make_train_layer(
        residual(Block), LayerInMap({LayerInput: M64}), PElemIs(tn.Float64), *policies
    )
    layer = cls("res", SIZES)
    buffer = init_params(layer, params("res", seed=1))
    return layer, {name: buffer.try_get(name) for name in params("res", seed=1)}


def test_sequential_chains_its_sublayers() -> None:
    layer = make_train_layer(Block, LayerInMap({LayerInput: M64}), PElemIs(tn.Float64))(
        "blk", SIZES
    )
    assert layer.topology.order == ("fc1", "act", "fc2")
    init_params(layer, params("blk", seed=2))
    x = batch(3)
    y = layer.feed_forward(layer.input_cont().set(LayerInput, t64(x))).get(LayerOutput)
    np.testing.assert_allclose(y.numpy(), block_numpy(params("blk", seed=2), "blk", x), rtol=1e-12)


def test_residual_adds_the_input() -> None:
    layer, _ = make_residual()
    assert sorted(layer.sublayers) == ["add", "body"]
    x = batch(4)
    y = layer.feed_forward(layer.input_cont().set(LayerInput, t64(x))).get(LayerOutput)
    want = x + block_numpy(params("res", seed=1), "res", x)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)


def test_residual_is_one_template_per_body() -> None:
    assert residual(Block) is residual(Block)


@pytest.mark.parametrize("how", ["leaf", "node"])
def test_residual_gradients_are_the_vjp(how: str) -> None:
    layer, tensors = make_residual(PUpdate, PFeedbackOutput)
    x: Any = t64(batch(5)) if how == "leaf" else t64(batch(5)) * 2.0
    y = layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput)
    assert isinstance(layer._record._items[-1], ForwardRecord)
    g = t64(np.random.default_rng(6).normal(size=(5, 4)))
    names = sorted(tensors)
    want = [w.numpy() for w in tn.vjp(y, [x, *(tensors[n] for n in names)], g)]
    dx = layer.feed_backward(layer.output_cont().set(LayerOutput, g)).get(LayerInput)
    np.testing.assert_allclose(dx.numpy(), want[0], rtol=1e-10, atol=1e-10)
    collected = collect(layer)
    for i, name in enumerate(names):
        np.testing.assert_allclose(collected[name], want[1 + i], rtol=1e-10, atol=1e-10)
    layer.neutral_invariant()


def test_residual_forwards_and_backwards_pair_last_in_first_out() -> None:
    layer, tensors = make_residual(PUpdate, PFeedbackOutput)
    names = sorted(tensors)
    xs = [t64(batch(10 + i)) for i in range(3)]
    ys = [layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput) for x in xs]
    gs = [t64(np.random.default_rng(20 + i).normal(size=(5, 4))) for i in range(3)]
    wants = [
        [w.numpy() for w in tn.vjp(y, [x, *(tensors[n] for n in names)], g)]
        for x, y, g in zip(xs, ys, gs, strict=True)
    ]
    with pytest.raises(tn.LayerError, match="Stack is not empty"):
        layer.neutral_invariant()
    for i in reversed(range(3)):
        dx = layer.feed_backward(layer.output_cont().set(LayerOutput, gs[i])).get(LayerInput)
        np.testing.assert_allclose(dx.numpy(), wants[i][0], rtol=1e-10, atol=1e-10)
    collected = collect(layer)
    for j, name in enumerate(names):
        total = sum(w[1 + j] for w in wants)
        np.testing.assert_allclose(collected[name], total, rtol=1e-10, atol=1e-10)
    layer.neutral_invariant()


def test_an_inference_residual_runs() -> None:
    layer = make_infer_layer(residual(Block), PElemIs(tn.Float64))("res", SIZES)
    init_params(layer, params("res", seed=1))
    x = batch(7)
    y = layer.feed_forward(layer.input_cont().set(LayerInput, t64(x))).get(LayerOutput)
    np.testing.assert_allclose(y.numpy(), x + block_numpy(params("res", seed=1), "res", x))
    layer.neutral_invariant()  # an inference layer keeps nothing


def test_sublayer_clauses_and_one_layer_chains() -> None:
    class Act(Sequential):
        chain = (Sublayer("t", TanhLayer),)

    layer = make_infer_layer(Act)("act")
    x = batch(8)
    y = layer.feed_forward(layer.input_cont().set(LayerInput, t64(x))).get(LayerOutput)
    np.testing.assert_allclose(y.numpy(), np.tanh(x))


def test_an_empty_chain_is_rejected() -> None:
    with pytest.raises(tn.LayerError, match="cannot declare Empty: the chain is empty"):

        class Empty(Sequential):
            chain = ()


def test_a_chain_item_that_is_no_sublayer_is_rejected() -> None:
    with pytest.raises(tn.LayerError, match="cannot declare Bad: 'fc' is not a sublayer"):

        class Bad(Sequential):
            chain = ("fc",)  # type: ignore[assignment]  # the error under test


def test_a_chain_sublayer_without_the_ports_is_rejected() -> None:
    with pytest.raises(TopologyError, match="LayerInput"):

        class Bad(Sequential):
            chain = (("add", AddLayer),)


def test_residual_needs_a_one_input_one_output_template() -> None:
    with pytest.raises(tn.LayerError, match="x \\+ body\\(x\\) needs one input LayerInput"):
        residual(AddLayer)  # type: ignore[arg-type]  # the error under test
    configured = make_infer_layer(Block)
    with pytest.raises(tn.LayerError, match="it is not a layer template"):
        residual(configured)
    with pytest.raises(tn.LayerError, match="it is not a layer template"):
        residual(3)  # type: ignore[call-overload]  # the error under test
    assert issubclass(residual(Block), Residual)
