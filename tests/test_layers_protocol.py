"""The layer protocol: declaration checks, input checks, containers, stacks, wrappers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import t32, t64

import typed_nn as tn
from typed_nn.layers import (
    AddLayer,
    DotLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LossLayerWeight,
    MultiplyLayer,
    NLLLossLayer,
    PermuteLayer,
    RightOperand,
    SigmoidLayer,
    SoftmaxLayer,
    TransposeLayer,
    layer_feed_backward,
    layer_feed_forward,
    layer_grad_collect,
    layer_init,
    layer_neutral_invariant,
    layer_save_weights,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.policies import (
    PDimArrayIs,
    PFeedbackOutput,
    PModifyDimNumIs,
    PNoUpdate,
    PolicyConflictError,
    PolicyContainer,
    PUpdate,
)

M32 = tn.Matrix[tn.Float32, tn.CPU]
BINARY_M32 = LayerInMap({LeftOperand: M32, RightOperand: M32})
untyped: Any = tn


def test_configured_class_reads_policies_and_is_cached() -> None:
    L = make_train_layer(AddLayer, BINARY_M32, PFeedbackOutput)
    assert issubclass(L, AddLayer)
    assert L.template is AddLayer
    assert L.is_feedback_output
    assert not L.is_update
    assert L.input_ports == (LeftOperand, RightOperand)
    assert L.output_ports == (LayerOutput,)
    again = LayerInMap({RightOperand: M32, LeftOperand: M32})
    assert make_train_layer(AddLayer, again, PolicyContainer(PFeedbackOutput)) is L
    assert make_infer_layer(AddLayer) is not L
    assert not make_infer_layer(SigmoidLayer).is_feedback_output


def test_conflicting_policies_fail_at_declaration() -> None:
    with pytest.raises(PolicyConflictError, match=r"two policies set GradPolicy.is_update"):
        make_train_layer(AddLayer, BINARY_M32, PUpdate, PNoUpdate)  # type: ignore[policy-conflict]


def test_input_map_must_match_the_ports() -> None:
    with pytest.raises(
        tn.LayerError, match=r"(?s)input map's ports differ.*missing +: RightOperand"
    ):
        make_train_layer(AddLayer, LayerInMap({LeftOperand: M32}))
    wrong = LayerInMap({LeftOperand: M32, RightOperand: M32, LayerInput: M32})
    with pytest.raises(tn.LayerError, match=r"(?s)unknown +: LayerInput"):
        make_train_layer(AddLayer, wrong)
    with pytest.raises(tn.LayerError, match="the input map is not a LayerInMap"):
        make_train_layer(AddLayer, {LeftOperand: M32, RightOperand: M32})  # type: ignore[arg-type]


def test_declared_types_are_checked_when_the_map_is_built() -> None:
    with pytest.raises(tn.LayerError, match="element, device and rank are not given"):
        LayerInMap({LayerInput: tn.Tensor})
    with pytest.raises(tn.LayerError, match="must be concrete tags"):
        LayerInMap({LayerInput: tn.Matrix})
    with pytest.raises(tn.LayerError, match="neither typed_nn data nor a number type"):
        LayerInMap({LayerInput: str})


def test_inference_layer_rejects_feedback_and_update() -> None:
    with pytest.raises(tn.LayerError, match="inference AddLayer: its policies ask for feedback"):
        make_infer_layer(AddLayer, PFeedbackOutput)
    with pytest.raises(tn.LayerError, match="configure AddLayer: it is already configured"):
        make_infer_layer(make_infer_layer(AddLayer))
    with pytest.raises(tn.LayerError, match="it is not a layer template"):
        make_infer_layer(int)  # type: ignore[type-var]


def test_unconfigured_layer_cannot_be_instantiated() -> None:
    with pytest.raises(tn.LayerError, match=r"cannot create layer 'x': AddLayer is not configured"):
        AddLayer("x")


def test_policies_read_by_layers_are_checked() -> None:
    with pytest.raises(tn.LayerError, match=r"Use PDimArrayIs\(...\) to set the order"):
        make_infer_layer(PermuteLayer)
    with pytest.raises(tn.LayerError, match=r"\(0, 0\) is not a permutation"):
        make_infer_layer(PermuteLayer, PDimArrayIs(0, 0))
    with pytest.raises(tn.LayerError, match="dot contracts k >= 1 dims"):
        make_infer_layer(DotLayer, PModifyDimNumIs(0))
    with pytest.raises(tn.LayerError, match="softmax needs k >= 1 dims"):
        make_infer_layer(SoftmaxLayer, PModifyDimNumIs(0))
    assert make_infer_layer(TransposeLayer, PDimArrayIs(2, 0, 1)).order == (1, 0)


def test_wrong_input_types_name_layer_port_declared_and_received() -> None:
    layer = make_train_layer(AddLayer, BINARY_M32)("net/add")
    m64 = t64(np.ones((2, 2)))
    cont = layer.input_cont().set(RightOperand, t32(np.ones((2, 2))))
    with pytest.raises(
        tn.ElemTypeError,
        match=r"(?s)cannot feed layer 'net/add': port LeftOperand.*"
        r"declared : TensorLike\[Float32, CPU, Dim2\].*received : Tensor\[Float64, CPU, Dim2\]",
    ):
        layer.feed_forward(cont.set(LeftOperand, m64))
    with pytest.raises(
        tn.RankError, match=r"(?s)port LeftOperand.*received : Tensor\[Float32, CPU, Dim1\]"
    ):
        layer.feed_forward(cont.set(LeftOperand, t32(np.ones(2))))
    with pytest.raises(tn.OperandError, match="port LeftOperand takes typed_nn data"):
        layer.feed_forward(cont.set(LeftOperand, 1.0))
    g32 = tn.Matrix[tn.Float32, tn.GPU]
    on_gpu = make_train_layer(AddLayer, LayerInMap({LeftOperand: g32, RightOperand: g32}))
    with pytest.raises(tn.DeviceError, match=r"(?s)declared : TensorLike\[Float32, GPU, Dim2\]"):
        on_gpu("gpu").feed_forward(cont.set(LeftOperand, t32(np.ones((2, 2)))))
    principal = make_train_layer(
        AddLayer,
        LayerInMap({LeftOperand: tn.Tensor[tn.Float32, tn.CPU, tn.Dim2], RightOperand: M32}),
    )
    lazy = t32(np.ones((2, 2))) + 1.0
    with pytest.raises(
        tn.OperandError, match=r"(?s)declared : Tensor\[Float32, CPU, Dim2\].*received : add"
    ):
        principal("p").feed_forward(cont.set(LeftOperand, lazy))


def test_number_ports_convert_and_get_no_gradient() -> None:
    L = make_train_layer(
        MultiplyLayer, LayerInMap({LeftOperand: M32, RightOperand: int}), PFeedbackOutput
    )
    layer = L("scale")
    x = t32(np.arange(4.0).reshape(2, 2))
    out = layer.feed_forward(layer.input_cont().set(LeftOperand, x).set(RightOperand, 3.7))
    np.testing.assert_allclose(out.get(LayerOutput).numpy(), np.arange(4.0).reshape(2, 2) * 3)
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t32(np.ones((2, 2)))))
    assert grads.set_keys() == (LeftOperand,)
    np.testing.assert_allclose(grads.get(LeftOperand).numpy(), np.full((2, 2), 3.0))
    with pytest.raises(tn.OperandError, match="port RightOperand takes a number"):
        layer.feed_forward(layer.input_cont().set(LeftOperand, x).set(RightOperand, x))


def test_unset_port_and_wrong_container() -> None:
    layer = make_infer_layer(AddLayer)("add")
    with pytest.raises(
        tn.LayerError, match=r"(?s)'add' forward: input port RightOperand is not set"
    ):
        layer.feed_forward(layer.input_cont().set(LeftOperand, t32(np.ones(2))))
    with pytest.raises(
        tn.LayerError,
        match=r"(?s)wrong ports.*declared : LeftOperand, RightOperand.*received : LayerOutput",
    ):
        layer.feed_forward(layer.output_cont())  # type: ignore[arg-type]
    with pytest.raises(tn.LayerError, match=r"cannot set key LayerInput: it is not declared"):
        layer.input_cont().set(LayerInput, 1)  # type: ignore[arg-type]


def test_neutral_invariant_and_backward_without_forward() -> None:
    layer = make_train_layer(SigmoidLayer, LayerInMap({LayerInput: M32}), PFeedbackOutput)("act")
    with pytest.raises(tn.LayerError, match="Cannot feed back in layer 'act'"):
        layer.feed_backward(layer.output_cont().set(LayerOutput, t32(np.ones((1, 1)))))
    layer.feed_forward(layer.input_cont().set(LayerInput, t32(np.ones((1, 1)))))
    with pytest.raises(tn.LayerError, match=r"Stack is not empty: layer 'act' still holds 1 value"):
        layer_neutral_invariant(layer)


def test_inference_layers_store_nothing() -> None:
    layer = make_infer_layer(NLLLossLayer)("loss")
    p = t32(np.full((2, 3), 1 / 3))
    out = layer.feed_forward(layer.input_cont().set(LayerInput, p).set(LossLayerWeight, p))
    assert out.get(LayerOutput).rank == 0
    layer.neutral_invariant()
    assert (
        layer.feed_backward(layer.output_cont().set(LayerOutput, t32(np.ones(())))).set_keys() == ()
    )


def test_generic_wrappers_skip_missing_methods() -> None:
    calls: list[str] = []

    class Bare:
        def feed_forward(self, inputs: object) -> object:
            calls.append("forward")
            return inputs

        def feed_backward(self, grads: object) -> object:
            calls.append("backward")
            return grads

        def grad_collect(self, collector: object) -> None:
            calls.append("collect")

    bare = Bare()
    assert layer_feed_forward(bare, 1) == 1
    assert layer_feed_backward(bare, 2) == 2
    layer_init(bare, object(), object())  # type: ignore[arg-type]
    layer_save_weights(bare, object())  # type: ignore[arg-type]
    layer_neutral_invariant(bare)
    layer_grad_collect(bare, Collector())
    assert calls == ["forward", "backward", "collect"]
    with pytest.raises(
        tn.OperandError,
        match=r"^layer_grad_collect needs a gradient collector: an object with collect\.\n"
        r"  received : object\n  lacking  : collect\n",
    ):
        layer_grad_collect(bare, object())  # type: ignore[arg-type]  # the layer would call it


class Collector:
    """What ``grad_collect`` hands the gradients to (a ``GradCollector`` serves)."""

    def collect(self, name: str, weight: object, grad: object) -> None:
        pass


def test_output_types_for_composites() -> None:
    dot = make_train_layer(
        DotLayer, LayerInMap({LeftOperand: tn.Tensor3[tn.Float32, tn.CPU], RightOperand: M32})
    )
    assert dot.output_types() == {LayerOutput: tn.TensorLike[tn.Float32, tn.CPU, tn.Dim3]}
    loss = make_infer_layer(NLLLossLayer)
    vec = tn.Vector[tn.Float32, tn.CPU]
    assert loss.output_types({LayerInput: vec, LossLayerWeight: vec}) == {
        LayerOutput: tn.TensorLike[tn.Float32, tn.CPU, tn.Dim0]
    }
    with pytest.raises(tn.LayerError, match="no input types"):
        loss.output_types()


def test_declared_types_the_ops_reject_fail_at_declaration() -> None:
    mixed = LayerInMap({LeftOperand: tn.Tensor3[tn.Float64, tn.CPU], RightOperand: M32})
    with pytest.raises(tn.ElemTypeError, match="cannot build dot: operands have different element"):
        make_train_layer(DotLayer, mixed)
    with pytest.raises(tn.RankError, match="cannot build dot"):
        make_train_layer(DotLayer, BINARY_M32, PModifyDimNumIs(3))
