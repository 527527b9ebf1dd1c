"""Bias, Weight and Linear layers, SingleLayerPerceptron and MLP: values against numpy and
finite differences, names, policies, initialisation, sharing, gradient collection."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from composite_helpers import collect, fd_input, fd_param, init_params, sigmoid
from helpers import Array, layer_feed, t64

import typed_nn as tn
from typed_nn.layers import (
    MLP,
    BiasLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LinearLayer,
    ReLULayer,
    SigmoidLayer,
    SingleLayerPerceptron,
    SoftmaxLayer,
    TanhLayer,
    WeightLayer,
    make_train_layer,
)
from typed_nn.model import ConstantFiller, LoadBuffer, ParamInitializer
from typed_nn.policies import (
    PActFuncIs,
    PBiasNotInvolved,
    PElemIs,
    PFeedbackOutput,
    PInitializerIs,
    PNoUpdate,
    PolicyError,
    PParamTypeIs,
    PUpdate,
    SubPolicyContainer,
)

M64 = tn.Matrix[tn.Float64, tn.CPU]
IN64 = LayerInMap({LayerInput: M64})
rng = np.random.default_rng(7)


def train(template: Any, *policies: Any) -> Any:
    return make_train_layer(template, IN64, PElemIs(tn.Float64), *policies)


def backward(layer: Any, g: Array) -> Any:
    return layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))


def test_linear_matches_numpy_and_finite_differences() -> None:
    layer = train(LinearLayer, PUpdate, PFeedbackOutput)("fc", 3, 2)
    w, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
    buffer = init_params(layer, {"fc/weight": w, "fc/bias": b})
    x, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    out = layer_feed(layer, {LayerInput: x}).get(LayerOutput)
    assert isinstance(out, tn.TensorLike)
    np.testing.assert_allclose(out.numpy(), x @ w + b)
    dx = backward(layer, g).get(LayerInput).numpy()
    grads = collect(layer)
    np.testing.assert_allclose(dx, g @ w.T)
    np.testing.assert_allclose(grads["fc/weight"], x.T @ g)
    np.testing.assert_allclose(grads["fc/bias"], g.sum(axis=0))
    inputs = {LayerInput: x}
    np.testing.assert_allclose(dx, fd_input(layer, inputs, LayerInput, g), rtol=1e-6)
    for name in ("fc/weight", "fc/bias"):
        numeric = fd_param(layer, buffer, name, inputs, g)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, err_msg=name)
    layer.neutral_invariant()


def test_linear_sublayer_names() -> None:
    layer = train(LinearLayer)("net/fc", 3, 2)
    names = {k: v.name for k, v in layer.sublayers.items()}
    assert names == {
        "weight": "net/fc/weight",
        "bias": "net/fc/bias",
        "dot": "net/fc/dot",
        "add": "net/fc/add",
    }


def test_update_only_the_bias() -> None:
    """METANN LinearLayer case 3: PUpdate + SubPolicyContainer(weight, PNoUpdate)."""
    cls = train(LinearLayer, PUpdate, SubPolicyContainer("weight", PNoUpdate))
    subs = cls.sublayer_classes
    assert (subs["weight"].is_update, subs["bias"].is_update) == (False, True)
    assert subs["add"].is_feedback_output  # it feeds the bias
    assert not subs["dot"].is_feedback_output  # nothing upstream of it needs a gradient
    assert cls.is_update
    assert not cls.is_feedback_output
    layer = cls("fc", 3, 2)
    init_params(layer, {"fc/weight": rng.standard_normal((3, 2)), "fc/bias": np.zeros(2)})
    g = rng.standard_normal((5, 2))
    layer_feed(layer, {LayerInput: rng.standard_normal((5, 3))})
    assert not backward(layer, g).is_set(LayerInput)
    grads = collect(layer)
    assert list(grads) == ["fc/bias"]
    np.testing.assert_allclose(grads["fc/bias"], g.sum(axis=0))
    layer.neutral_invariant()


def test_bias_layer() -> None:
    layer = train(BiasLayer, PUpdate, PFeedbackOutput)("b", 2)
    assert {k: v.name for k, v in layer.sublayers.items()} == {"param": "b/param", "add": "b/add"}
    b = rng.standard_normal(2)
    init_params(layer, {"b/param": b})
    x, g = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy(), x + b)
    np.testing.assert_allclose(backward(layer, g).get(LayerInput).numpy(), g)
    np.testing.assert_allclose(collect(layer)["b/param"], g.sum(axis=0))


def test_bias_layer_of_a_declared_matrix_type() -> None:
    # A parent's PParamTypeIs beats the class default (Vector): the bias is a (1, 2) matrix.
    layer = train(BiasLayer, PParamTypeIs(tn.Matrix))("b", 1, 2)
    b = rng.standard_normal((1, 2))
    init_params(layer, {"b/param": b})
    x = rng.standard_normal((1, 2))
    np.testing.assert_allclose(layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy(), x + b)


def test_weight_layer_names_its_dot_sublayer_dot() -> None:
    layer = train(WeightLayer, PUpdate, PFeedbackOutput)("w", 3, 2)
    assert {k: v.name for k, v in layer.sublayers.items()} == {"param": "w/param", "dot": "w/dot"}
    w = rng.standard_normal((3, 2))
    init_params(layer, {"w/param": w})
    x, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    np.testing.assert_allclose(layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy(), x @ w)
    np.testing.assert_allclose(backward(layer, g).get(LayerInput).numpy(), g @ w.T)
    np.testing.assert_allclose(collect(layer)["w/param"], x.T @ g)


@pytest.mark.parametrize(
    ("act", "f", "df"),
    [
        (SigmoidLayer, sigmoid, lambda y: y * (1 - y)),
        (TanhLayer, np.tanh, lambda y: 1 - y**2),
    ],
)
def test_single_layer_perceptron(act: Any, f: Any, df: Any) -> None:
    layer = train(SingleLayerPerceptron, PActFuncIs(act), PUpdate, PFeedbackOutput)("slp", 3, 2)
    names = [sub.name for sub in layer.sublayers.values()]
    assert names == ["slp", "slp/act"]  # the Linear sublayer carries the composite's name
    w, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
    buffer = init_params(layer, {"slp/weight": w, "slp/bias": b})
    x, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    y = f(x @ w + b)
    np.testing.assert_allclose(layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy(), y)
    da = g * df(y)
    np.testing.assert_allclose(backward(layer, g).get(LayerInput).numpy(), da @ w.T)
    grads = collect(layer)
    np.testing.assert_allclose(grads["slp/weight"], x.T @ da)
    np.testing.assert_allclose(grads["slp/bias"], da.sum(axis=0))
    numeric = fd_param(layer, buffer, "slp/weight", {LayerInput: x}, g)
    np.testing.assert_allclose(grads["slp/weight"], numeric, rtol=1e-6)


def test_single_layer_perceptron_without_bias() -> None:
    cls = train(SingleLayerPerceptron, PActFuncIs(SigmoidLayer), PBiasNotInvolved, PUpdate)
    layer = cls("slp", 3, 2)
    assert [s.name for s in layer.sublayers.values()] == ["slp/weight", "slp/dot", "slp/act"]
    w = rng.standard_normal((3, 2))
    init_params(layer, {"slp/weight": w})
    x, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    y = sigmoid(x @ w)
    np.testing.assert_allclose(layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy(), y)
    backward(layer, g)
    np.testing.assert_allclose(collect(layer)["slp/weight"], x.T @ (g * y * (1 - y)))


def test_single_layer_perceptron_requires_an_activation() -> None:
    with pytest.raises(
        tn.LayerError,
        match=r"(?s)no activation.*Use PActFuncIs\(\.\.\.\) to set "
        r"activate function",
    ):
        train(SingleLayerPerceptron, PUpdate)


def test_init_from_named_fillers_shares_through_the_load_buffer_and_saves() -> None:
    cls = train(
        LinearLayer,
        PUpdate,
        SubPolicyContainer("weight", PInitializerIs("w")),
        SubPolicyContainer("bias", PInitializerIs("b")),
    )
    init = ParamInitializer({"w": ConstantFiller(0.5), "b": ConstantFiller(-1.0)})
    buffer = LoadBuffer(tn.Float64, tn.CPU)
    first = cls("a", 3, 2)
    first.init(init, buffer)
    x = rng.standard_normal((2, 3))
    expected = x @ np.full((3, 2), 0.5) - 1.0
    np.testing.assert_allclose(
        layer_feed(first, {LayerInput: x}).get(LayerOutput).numpy(), expected
    )
    # A second layer whose names map onto the first one's shares its tensors.
    init.add_to_name_map("b/", "a/")
    second = cls("b", 3, 2)
    second.init(init, buffer)
    assert second.sublayers["weight"].data is first.sublayers["weight"].data
    assert sorted(buffer) == ["a/bias", "a/weight"]
    saved = LoadBuffer(tn.Float64, tn.CPU)
    first.save_weights(saved)
    assert saved.try_get("a/weight") is first.sublayers["weight"].data
    first.feed_backward(first.output_cont())  # pop the forward


def test_mlp_matches_numpy() -> None:
    net = MLP.build("net", [3, 5, 2], [ReLULayer, None], elem=tn.Float64)
    assert type(net).activations == (ReLULayer, None)
    p = {
        "net/fc1/weight": rng.standard_normal((3, 5)),
        "net/fc1/bias": rng.standard_normal(5),
        "net/fc2/weight": rng.standard_normal((5, 2)),
        "net/fc2/bias": rng.standard_normal(2),
    }
    buffer = init_params(net, p)
    x, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    a = x @ p["net/fc1/weight"] + p["net/fc1/bias"]
    h = np.maximum(a, 0)
    out = h @ p["net/fc2/weight"] + p["net/fc2/bias"]
    np.testing.assert_allclose(layer_feed(net, {LayerInput: x}).get(LayerOutput).numpy(), out)
    assert not backward(net, g).is_set(LayerInput)  # training MLPs do not feed back their input
    grads = collect(net)
    da = (g @ p["net/fc2/weight"].T) * (a > 0)
    np.testing.assert_allclose(grads["net/fc2/weight"], h.T @ g)
    np.testing.assert_allclose(grads["net/fc2/bias"], g.sum(axis=0))
    np.testing.assert_allclose(grads["net/fc1/weight"], x.T @ da)
    np.testing.assert_allclose(grads["net/fc1/bias"], da.sum(axis=0))
    numeric = fd_param(net, buffer, "net/fc1/weight", {LayerInput: x}, g)
    np.testing.assert_allclose(grads["net/fc1/weight"], numeric, rtol=1e-6)
    net.neutral_invariant()


def test_mlp_fills_weights_and_biases_by_key_and_ends_with_softmax() -> None:
    net = MLP.build("net", [4, 3], [SoftmaxLayer], weight_init="w", bias_init="b", elem=tn.Float64)
    init = ParamInitializer({"w": ConstantFiller(0.0), "b": ConstantFiller(1.0)})
    net.init(init, LoadBuffer(tn.Float64, tn.CPU))
    probs = layer_feed(net, {LayerInput: rng.standard_normal((2, 4))}).get(LayerOutput).numpy()
    np.testing.assert_allclose(probs, np.full((2, 3), 1 / 3))
    net.feed_backward(net.output_cont())


def test_mlp_errors() -> None:
    with pytest.raises(tn.LayerError, match=r"one width per layer boundary"):
        MLP.build("net", [3, 2], [ReLULayer, None])
    with pytest.raises(tn.LayerError, match=r"at least one layer"):
        MLP.build("net", [3], [])


def test_a_sub_container_naming_no_sublayer_is_refused_listing_them() -> None:
    """A typo, or a level left out (an MLP's hidden fc1 is a perceptron: fc1 -> linear ->
    weight), would drop the policies: the weight meant to be frozen would train."""
    with pytest.raises(PolicyError) as caught:
        train(LinearLayer, PUpdate, SubPolicyContainer("wieght", PNoUpdate))
    assert str(caught.value).startswith(
        "cannot configure LinearLayer: a SubPolicyContainer names no sublayer of it.\n"
        "  unknown   : 'wieght'\n"
        "  sublayers : 'weight', 'bias', 'add', 'dot'\n"
    )
    frozen = SubPolicyContainer("weight", PNoUpdate)
    with pytest.raises(
        PolicyError,
        match=r"(?s)its sublayer 'fc1' \(SingleLayerPerceptron\) was rejected.*"
        r"unknown   : 'weight'\n  sublayers : 'linear', 'act'",
    ):
        MLP.build("net", [3, 4, 2], [ReLULayer, None], SubPolicyContainer("fc1", frozen))
    with pytest.raises(PolicyError, match=r"unknown   : 'fc3'"):
        MLP.build("net", [3, 4, 2], [ReLULayer, None], SubPolicyContainer("fc3", PNoUpdate))
    with pytest.raises(PolicyError, match=r"sublayers : none \(not a composite\)"):
        train(SigmoidLayer, PUpdate, SubPolicyContainer("weight", PNoUpdate))
    net = MLP.build(
        "net",
        [3, 4, 2],
        [ReLULayer, None],
        SubPolicyContainer("fc1", SubPolicyContainer("linear", frozen)),
        SubPolicyContainer("fc2", frozen),
    )
    subs = type(net).sublayer_classes
    fc1: Any = subs["fc1"]
    assert not fc1.sublayer_classes["linear"].sublayer_classes["weight"].is_update
    fc2: Any = subs["fc2"]
    assert not fc2.sublayer_classes["weight"].is_update
    assert fc2.sublayer_classes["bias"].is_update


def test_mlp_policies_replace_the_build_defaults() -> None:
    net = MLP.build("net", [3, 2], [TanhLayer], PFeedbackOutput, elem=tn.Float64)
    assert type(net).is_feedback_output
    p = {"net/fc1/weight": rng.standard_normal((3, 2)), "net/fc1/bias": rng.standard_normal(2)}
    init_params(net, p)
    x, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    y = np.tanh(x @ p["net/fc1/weight"] + p["net/fc1/bias"])
    layer_feed(net, {LayerInput: x})
    dx = backward(net, g).get(LayerInput).numpy()
    np.testing.assert_allclose(dx, (g * (1 - y**2)) @ p["net/fc1/weight"].T)
    assert sorted(collect(net)) == ["net/fc1/bias", "net/fc1/weight"]


def test_an_input_the_layers_ops_refuse_names_the_layer() -> None:
    """A (4, 5) batch into a linear layer made for 3 features: the dot's error, under the
    layer (its sublayer's path) that was fed."""
    layer = train(LinearLayer, PUpdate)("fc", 3, 2)
    init_params(layer, {"fc/weight": rng.standard_normal((3, 2)), "fc/bias": np.zeros(2)})
    with pytest.raises(tn.ShapeError) as caught:
        layer_feed(layer, {LayerInput: rng.standard_normal((4, 5))})
    assert str(caught.value).startswith(
        "cannot feed layer 'fc/dot' (DotLayer) forward:\n"
        "cannot build dot: contracted dims differ.\n"
    )
