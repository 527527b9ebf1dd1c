"""ComposeKernel: policy propagation, type inference, automatic forward/backward with fan-out,
one lazy graph, LIFO, inference composites and the composite's own errors."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
from composite_helpers import collect, init_params, sigmoid
from helpers import Array, layer_feed, t64

import typed_nn as tn
from typed_nn.evaluate import executor
from typed_nn.layers import (
    MLP,
    AddLayer,
    ComposeKernel,
    ComposeTopology,
    InConnect,
    InternalConnect,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    LossLayerWeight,
    NLLLossLayer,
    OutConnect,
    ParamSourceLayer,
    ReLULayer,
    RightOperand,
    SigmoidLayer,
    SingleLayerPerceptron,
    SoftmaxLayer,
    Sublayer,
    TanhLayer,
    TopologyError,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.model import SGD, GradCollector
from typed_nn.policies import (
    PActFuncIs,
    PElemIs,
    PFeedbackOutput,
    PParamTypeIs,
    PUpdate,
    SubPolicyContainer,
)

M64 = tn.Matrix[tn.Float64, tn.CPU]
IN64 = LayerInMap({LayerInput: M64})
rng = np.random.default_rng(11)


class Other(tn.layers.PortKey):
    """A second composite output port (test only)."""


class FanOut(ComposeKernel[LayerInput, LayerOutput | Other]):
    """``s = sigmoid(x) + tanh(x)`` given on two outputs: fan-out at the input and the output."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput, Other)
    topology = ComposeTopology(
        Sublayer("sig", SigmoidLayer),
        Sublayer("tanh", TanhLayer),
        Sublayer("add", AddLayer),
        InConnect(LayerInput, "sig", LayerInput),
        InConnect(LayerInput, "tanh", LayerInput),
        InternalConnect("sig", LayerOutput, "add", LeftOperand),
        InternalConnect("tanh", LayerOutput, "add", RightOperand),
        OutConnect("add", LayerOutput, LayerOutput),
        OutConnect("add", LayerOutput, Other),
    )


def flags(cls: Any) -> dict[str, tuple[bool, bool]]:
    """(is_update, is_feedback_output) of each configured sublayer."""
    return {n: (c.is_update, c.is_feedback_output) for n, c in cls.sublayer_classes.items()}


def test_update_forces_feedback_on_successors_only() -> None:
    cls = make_train_layer(LinearLayer, IN64, PElemIs(tn.Float64), PUpdate)
    assert flags(cls) == {
        "weight": (True, False),
        "bias": (True, False),
        "dot": (False, True),  # (c): after the updated weight
        "add": (False, True),  # (c): after the bias, and after dot
    }
    assert cls.is_update
    assert not cls.is_feedback_output


def test_feedback_forces_feedback_on_sublayers_fed_by_inputs() -> None:
    cls = make_train_layer(LinearLayer, IN64, PElemIs(tn.Float64), PFeedbackOutput)
    # PFeedbackOutput is also inherited by every sublayer (a plain policy of the parent);
    # parameters never feed back, and nothing updates.
    assert flags(cls) == {
        "weight": (False, False),
        "bias": (False, False),
        "dot": (False, True),
        "add": (False, True),
    }
    assert not cls.is_update


def test_feedback_rule_b_applies_without_inheritance() -> None:
    # The sublayer fed by the input refuses feedback itself, (b) forces it; (c) carries it on.
    cls = make_train_layer(
        FanOut, IN64, PFeedbackOutput, SubPolicyContainer("sig", tn.policies.PFeedbackNoOutput)
    )
    assert flags(cls)["sig"] == (False, True)


def test_sublayer_policies_scoped_inherited_and_defaulted() -> None:
    cls = make_train_layer(
        LinearLayer, IN64, PElemIs(tn.Float64), SubPolicyContainer("bias", PParamTypeIs(tn.Matrix))
    )
    weight, bias = cls.sublayer_classes["weight"], cls.sublayer_classes["bias"]
    assert issubclass(weight, ParamSourceLayer)
    assert issubclass(bias, ParamSourceLayer)
    assert (weight.elem, weight.rank) == (tn.Float64, 2)  # inherited PElemIs, default Matrix
    assert (bias.elem, bias.rank) == (tn.Float64, 2)  # its own PParamTypeIs wins
    assert cls.sublayer_classes["add"].input_map == LayerInMap(
        {LeftOperand: M64, RightOperand: M64}
    )


def test_sublayer_input_maps_are_inferred() -> None:
    cls = make_train_layer(FanOut, LayerInMap({LayerInput: tn.Tensor3[tn.Float64, tn.CPU]}))
    t3 = tn.TensorLike[tn.Float64, tn.CPU, tn.Dim3]
    assert cls.sublayer_classes["add"].input_map == LayerInMap({LeftOperand: t3, RightOperand: t3})
    assert cls.output_types() == {LayerOutput: t3, Other: t3}


def test_fan_out_gradients_are_summed() -> None:
    layer = make_train_layer(FanOut, IN64, PFeedbackOutput)("f")
    x, g1, g2 = (rng.standard_normal((2, 3)) for _ in range(3))
    out = layer_feed(layer, {LayerInput: x})
    s = sigmoid(x) + np.tanh(x)
    np.testing.assert_allclose(out.get(LayerOutput).numpy(), s)
    np.testing.assert_allclose(out.get(Other).numpy(), s)
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g1)).set(Other, t64(g2)))
    derivative = sigmoid(x) * (1 - sigmoid(x)) + 1 - np.tanh(x) ** 2
    np.testing.assert_allclose(grads.get(LayerInput).numpy(), (g1 + g2) * derivative)
    # One output gradient only: the other is simply absent.
    layer_feed(layer, {LayerInput: x})
    grads = layer.feed_backward(layer.output_cont().set(Other, t64(g2)))
    np.testing.assert_allclose(grads.get(LayerInput).numpy(), g2 * derivative)
    layer.neutral_invariant()


def test_no_feedback_no_update_backward_is_empty() -> None:
    layer = make_train_layer(FanOut, IN64)("f")
    layer_feed(layer, {LayerInput: rng.standard_normal((2, 2))})
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(np.ones((2, 2)))))
    assert grads.set_keys() == ()
    layer.neutral_invariant()  # inactive stacks kept nothing


def test_lifo_through_a_composite() -> None:
    layer = make_train_layer(LinearLayer, IN64, PElemIs(tn.Float64), PUpdate, PFeedbackOutput)(
        "fc", 3, 2
    )
    w = rng.standard_normal((3, 2))
    init_params(layer, {"fc/weight": w, "fc/bias": np.zeros(2)})
    xs = [rng.standard_normal((4, 3)) * (i + 1) for i in range(5)]
    for x in xs:
        layer_feed(layer, {LayerInput: x})
    for x in reversed(xs):
        g = rng.standard_normal((4, 2))
        back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
        np.testing.assert_allclose(back.get(LayerInput).numpy(), g @ w.T)
        np.testing.assert_allclose(collect(layer)["fc/weight"], x.T @ g)  # paired with its x
    layer.neutral_invariant()


def test_neutral_invariant_names_the_layer_that_holds_values() -> None:
    """A forward waiting for its backward is held by the composite (whose one vjp covers its
    sublayers); a gradient waiting for grad_collect by its parameter sublayer."""
    layer = make_train_layer(FanOut, IN64, PFeedbackOutput)("f")
    layer_feed(layer, {LayerInput: rng.standard_normal((2, 2))})
    with pytest.raises(tn.LayerError, match=r"Stack is not empty: layer 'f' still holds 1 value"):
        layer.neutral_invariant()
    linear = make_train_layer(LinearLayer, IN64, PElemIs(tn.Float64), PUpdate)("c", 2, 3)
    init_params(linear, {"c/weight": np.ones((2, 3)), "c/bias": np.ones(3)})
    layer_feed(linear, {LayerInput: rng.standard_normal((2, 2))})
    linear.feed_backward(linear.output_cont().set(LayerOutput, t64(np.ones((2, 3)))))
    with pytest.raises(
        tn.LayerError, match=r"layer 'c/weight' still holds 1 value\(s\) in its grad"
    ):
        linear.neutral_invariant()


def test_inference_composite() -> None:
    cls = make_infer_layer(SingleLayerPerceptron, PActFuncIs(ReLULayer), PElemIs(tn.Float64))
    assert cls.input_map is None
    assert not cls.is_update
    layer = cls("slp", 3, 2)
    w, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
    init_params(layer, {"slp/weight": w, "slp/bias": b})
    x = rng.standard_normal((4, 3))
    out = layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, np.maximum(x @ w + b, 0))
    assert layer.feed_backward(layer.output_cont()).set_keys() == ()
    layer.neutral_invariant()
    t = tn.TensorLike[tn.Float64, tn.CPU, tn.Dim2]
    assert cls.output_types({LayerInput: M64}) == {LayerOutput: t}


def test_inference_composite_rejects_updates_naming_the_sublayer() -> None:
    with pytest.raises(
        tn.LayerError,
        match=r"(?s)cannot configure LinearLayer: its sublayer 'weight' \(ParamSourceLayer\) was "
        r"rejected:\ncannot make an inference ParamSourceLayer: its policies ask for updates",
    ):
        make_infer_layer(LinearLayer, PUpdate)


def test_sublayer_rejected_by_its_ops_is_named() -> None:
    with pytest.raises(
        tn.ElemTypeError,
        match=r"(?s)its sublayer 'dot' \(DotLayer\) was rejected:\ncannot build dot: operands "
        r"have different element types",
    ):
        make_train_layer(LinearLayer, IN64)  # Float64 input, Float32 parameters (the default)


def test_composite_ports_must_match_the_topology() -> None:
    with pytest.raises(TopologyError, match=r"composite input LossLayerWeight is not connected"):

        class Unused(ComposeKernel[Any, Any]):
            input_ports: ClassVar[tuple[type, ...]] = (LayerInput, LossLayerWeight)
            topology = ComposeTopology(
                Sublayer("a", SigmoidLayer),
                InConnect(LayerInput, "a", LayerInput),
                OutConnect("a", LayerOutput, LayerOutput),
            )

    with pytest.raises(TopologyError, match=r"composite output Other is not a port of"):

        class Foreign(ComposeKernel[Any, Any]):
            input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
            topology = ComposeTopology(
                Sublayer("a", SigmoidLayer),
                InConnect(LayerInput, "a", LayerInput),
                OutConnect("a", LayerOutput, LayerOutput),
                OutConnect("a", LayerOutput, Other),
            )


class Wrapper(ComposeKernel[LayerInput, LayerOutput]):
    """A composite whose Linear sublayer needs constructor arguments (test only)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("fc", LinearLayer),
        InConnect(LayerInput, "fc", LayerInput),
        OutConnect("fc", LayerOutput, LayerOutput),
    )


def test_sublayer_arguments() -> None:
    cls = make_train_layer(Wrapper, IN64, PElemIs(tn.Float64))
    layer = cls("w", cls.create_sublayers().set("fc", 3, 2))
    fc = layer.sublayers["fc"]
    assert isinstance(fc, LinearLayer)
    assert fc.name == "w/fc"
    assert fc.sublayers["weight"].name == "w/fc/weight"
    with pytest.raises(tn.LayerError, match=r"Sublayer not initialized: 'fc' of layer 'w'"):
        cls("w")
    with pytest.raises(tn.LayerError, match=r"sublayer 'nope': Wrapper has no such sublayer"):
        cls.create_sublayers().set("nope", 1)
    as_dict: Any = {"fc": (3, 2)}  # as Sequential takes them: a typed error with the builder
    with pytest.raises(
        tn.LayerError,
        match=r"(?s)sublayers must be the composite's SublayerArgs\..*received : dict"
        r".*create_sublayers\(\)\.set\('fc', \*args\)",
    ):
        cls("w", as_dict)


def test_an_unconfigured_composite_cannot_be_created() -> None:
    with pytest.raises(tn.LayerError, match=r"LinearLayer is not configured"):
        LinearLayer("fc", 3, 2)


def test_training_step_is_one_lazy_graph_until_one_evaluation(monkeypatch: Any) -> None:
    """Forward, loss and backward of a three-layer MLP and the loss layer build expressions
    only; one EvalPlan.eval() computes the loss and every gradient in one executor call."""
    calls: list[int] = []
    real = executor.execute

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    net = MLP.build("net", [4, 8, 6, 3], [ReLULayer, TanhLayer, SoftmaxLayer], elem=tn.Float64)
    init_params(net, _random_mlp_params([4, 8, 6, 3]))
    loss_layer = make_train_layer(
        NLLLossLayer, LayerInMap({LayerInput: M64, LossLayerWeight: M64}), PFeedbackOutput
    )("loss")
    x = t64(rng.standard_normal((5, 4)))
    truth = t64(np.eye(3)[rng.integers(0, 3, 5)])
    monkeypatch.setattr(executor, "execute", counting)
    probs = net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
    loss = loss_layer.feed_forward(
        loss_layer.input_cont().set(LayerInput, probs).set(LossLayerWeight, truth)
    ).get(LayerOutput)
    one = tn.scalar(1.0, tn.Float64, tn.CPU)
    dprobs = loss_layer.feed_backward(loss_layer.output_cont().set(LayerOutput, one))
    net.feed_backward(net.output_cont().set(LayerOutput, dprobs.get(LayerInput)))
    col: GradCollector[Any, Any] = GradCollector(tn.Float64, tn.CPU)
    net.grad_collect(col)
    handles = [loss.eval_register()] + [grad.eval_register() for _, _, grad in col]
    assert calls == []  # nothing computed while building
    tn.EvalPlan.eval()
    assert calls == [len(handles)]  # one evaluation of everything
    assert len(handles) == 7
    assert all(h.is_evaluated() for h in handles)
    assert float(handles[0].data().numpy()) > 0


def _random_mlp_params(widths: list[int]) -> dict[str, Array]:
    params: dict[str, Array] = {}
    for i in range(1, len(widths)):
        params[f"net/fc{i}/weight"] = rng.standard_normal((widths[i - 1], widths[i])) * 0.5
        params[f"net/fc{i}/bias"] = rng.standard_normal(widths[i]) * 0.1
    return params


def test_sgd_step_from_collected_gradients() -> None:
    net = MLP.build("net", [3, 2], [None], elem=tn.Float64)
    p = _random_mlp_params([3, 2])
    buffer = init_params(net, p)
    x, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    layer_feed(net, {LayerInput: x})
    net.feed_backward(net.output_cont().set(LayerOutput, t64(g)))
    col: GradCollector[Any, Any] = GradCollector(tn.Float64, tn.CPU)
    net.grad_collect(col)
    SGD(0.1).step(col)
    weight = buffer.try_get("net/fc1/weight")
    assert weight is not None
    np.testing.assert_allclose(weight.numpy(), p["net/fc1/weight"] - 0.1 * x.T @ g)
    net.neutral_invariant()
