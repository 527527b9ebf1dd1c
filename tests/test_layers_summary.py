"""typed_nn.layers.summary: sublayers, output shapes and parameter counts; layers' reprs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest
from composite_helpers import init_params

import typed_nn as tn
from typed_nn import CPU, Float32, Float64
from typed_nn.layers import (
    MLP,
    AddLayer,
    ComposeKernel,
    ComposeTopology,
    GruStep,
    InConnect,
    InternalConnect,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    OutConnect,
    Previous,
    RecurrentLayer,
    ReLULayer,
    RightOperand,
    Sublayer,
    SublayerArgs,
    layer_init,
    make_train_layer,
    summary,
    tensor_type,
)
from typed_nn.model import ConstantFiller, LoadBuffer, ParamInitializer
from typed_nn.policies import (
    AnyPolicyObject,
    PActFuncIs,
    PElemIs,
    PFeedbackOutput,
    PInitializerIs,
    PSeqIDsAre,
    PUpdate,
    SeqID,
    SubPolicyContainer,
)
from typed_nn.train.classifier import build_mlp


def test_mlp_summary_table() -> None:
    net, params = build_mlp([4, 8, 3], "relu", seed=0)
    x = tn.zeros((2, 4), Float32, CPU)
    table = summary(net, x, depth=2)
    assert str(table) == (
        "Model: MLP_ReLULayer_linear 'mlp' (train)\n"
        "Layer (kind)                 Output shape  Params\n"
        "=================================================\n"
        "fc1 (SingleLayerPerceptron)  (2, 8)            40\n"
        "  linear (LinearLayer)       (2, 8)            40\n"
        "  act (ReLULayer)            (2, 8)             0\n"
        "fc2 (LinearLayer)            (2, 3)            27\n"
        "  weight (ParamSourceLayer)  (8, 3)            24\n"
        "  bias (ParamSourceLayer)    (3)                3\n"
        "  dot (DotLayer)             (2, 3)             0\n"
        "  add (AddLayer)             (2, 3)             0\n"
        "=================================================\n"
        "Input: LayerInput (2, 4)\n"
        "Output: LayerOutput (2, 3)\n"
        "Total params: 67 (268 B)\n"
        "Trainable params: 67\n"
        "Non-trainable params: 0"
    )
    assert table.total_params == sum(t.numpy().size for t in params.values())
    assert [r.path for r in summary(net, x).rows] == ["fc1", "fc2"]  # depth 1 by default
    net.neutral_invariant()  # the forward kept nothing


class Residual(ComposeKernel[LayerInput, LayerOutput]):
    """``x + fc2(relu(fc1(x)))``: a composite with a skip connection."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("fc1", LinearLayer),
        Sublayer("act", ReLULayer),
        Sublayer("fc2", LinearLayer),
        Sublayer("add", AddLayer),
        InConnect(LayerInput, "fc1", LayerInput),
        InternalConnect("fc1", LayerOutput, "act", LayerInput),
        InternalConnect("act", LayerOutput, "fc2", LayerInput),
        InConnect(LayerInput, "add", LeftOperand),
        InternalConnect("fc2", LayerOutput, "add", RightOperand),
        OutConnect("add", LayerOutput, LayerOutput),
    )

    def __init__(self, name: str, width: int, hidden: int) -> None:
        args: SublayerArgs = self.create_sublayers().set("fc1", width, hidden)
        super().__init__(name, args.set("fc2", hidden, width))


def _filled(layer: Any) -> LoadBuffer[Any, Any]:
    params: LoadBuffer[Any, Any] = LoadBuffer(Float32, CPU)
    layer_init(layer, ParamInitializer({"w": ConstantFiller(0.1)}), params)
    return params


def test_composite_summary_and_inference_layers_have_no_trainable_params() -> None:
    policies: list[AnyPolicyObject] = [PInitializerIs("w")]
    train = make_train_layer(
        Residual,
        LayerInMap({LayerInput: tensor_type(Float32, CPU, 2)}),
        PUpdate,
        *[SubPolicyContainer(s, *policies) for s in ("fc1", "fc2")],
    )("block", 6, 4)
    _filled(train)
    rows = summary(train, tn.zeros((5, 6), Float32, CPU)).rows
    assert [(r.path, r.kind, r.output, r.params) for r in rows] == [
        ("fc1", "LinearLayer", "(5, 4)", 28),
        ("act", "ReLULayer", "(5, 4)", 0),
        ("fc2", "LinearLayer", "(5, 6)", 30),
        ("add", "AddLayer", "(5, 6)", 0),
    ]
    infer = tn.layers.make_infer_layer(
        Residual, *[SubPolicyContainer(s, *policies) for s in ("fc1", "fc2")]
    )("block", 6, 4)
    _filled(infer)
    shown = summary(infer, {LayerInput: tn.zeros((5, 6), Float32, CPU)})
    assert (shown.mode, shown.total_params, shown.trainable_params) == ("inference", 58, 0)
    assert str(shown).endswith("Trainable params: 0\nNon-trainable params: 58")


def test_recurrent_kernel_rows_count_the_calls() -> None:
    h = Previous(LayerOutput)
    layer = make_train_layer(
        RecurrentLayer,
        LayerInMap({LayerInput: tensor_type(Float64, CPU, 3), h: tensor_type(Float64, CPU, 2)}),
        PActFuncIs(GruStep),
        PSeqIDsAre(SeqID(LayerInput, 1)),
        PUpdate,
        PFeedbackOutput,
        PElemIs(Float64),
    )("rnn", 3, 2)
    names = ("W", "Wz", "Wr", "U", "Uz", "Ur")
    init_params(
        layer, {f"rnn/kernel/{n}/param": np.zeros((3 if n[0] == "W" else 2, 2)) for n in names}
    )
    inputs: Mapping[type, object] = {
        LayerInput: tn.zeros((2, 4, 3), Float64, CPU),
        h: tn.zeros((2, 2), Float64, CPU),
    }
    shown = summary(layer, inputs)
    assert [(r.path, r.output, r.params) for r in shown.rows] == [
        ("kernel", "(2, 2) (4 calls)", 30)
    ]
    assert shown.output == "LayerOutput (4, 2, 2)"
    assert shown.input == "LayerInput (2, 4, 3), Previous(LayerOutput) (2, 2)"
    layer.neutral_invariant()


def test_summary_errors() -> None:
    net, _ = build_mlp([4, 3], "relu")
    with pytest.raises(
        tn.OperandError, match=r"summary needs an nn.Module or a layer instance\.\n  received : str"
    ):
        summary("net", tn.zeros((2, 4), Float32, CPU))  # type: ignore[arg-type]
    with pytest.raises(
        tn.LayerError, match=r"summary: depth must be an int of at least 1\.\n  received : 0"
    ):
        summary(net, tn.zeros((2, 4), Float32, CPU), depth=0)
    adder = make_train_layer(
        AddLayer,
        LayerInMap(
            {LeftOperand: tensor_type(Float32, CPU, 1), RightOperand: tensor_type(Float32, CPU, 1)}
        ),
    )("sum")
    with pytest.raises(
        tn.LayerError,
        match=r"layer 'sum' has 2 input ports; one example value cannot fill them\.\n"
        r"  ports : LeftOperand, RightOperand",
    ):
        summary(adder, tn.zeros((3,), Float32, CPU))
    with pytest.raises(tn.ShapeError):  # the model's own check of the example, nothing kept
        summary(net, tn.zeros((2, 5), Float32, CPU))
    net.neutral_invariant()


def test_reprs_show_template_name_mode_and_types() -> None:
    net, _ = build_mlp([4, 8, 3], "relu")
    assert repr(net) == (
        "<MLP_ReLULayer_linear 'mlp': train (update); LayerInput: TensorLike[Float32, CPU, Dim2] "
        "-> LayerOutput; sublayers fc1, fc2>"
    )
    assert repr(net.param_sources()[0]) == (
        "<ParamSourceLayer 'mlp/fc1/weight': train (update); (no inputs) -> LayerOutput; "
        "Tensor[Float32, CPU, Dim2](4, 8)>"
    )
    infer = MLP.build("m", [4, 3], [None], train=False)
    assert repr(infer) == "<MLP_linear 'm': inference; LayerInput -> LayerOutput; sublayers fc1>"
