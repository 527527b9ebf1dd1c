"""Precise layer types with no forwarding override, in mypy and pyright alike."""

from typing import Any, ClassVar, assert_type

import typed_nn as tn
from typed_nn import CPU, Dim0, Dim2, Dim3, Float32, Float64, TensorLike
from typed_nn.layers import (
    MLP,
    AddLayer,
    ComposeKernel,
    ComposeTopology,
    Declared,
    DotLayer,
    GruStep,
    InConnect,
    InternalConnect,
    Layer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    LossLayerWeight,
    NLLLossLayer,
    OutConnect,
    Previous,
    RecurrentLayer,
    ReLULayer,
    Residual,
    RightOperand,
    Sequential,
    SigmoidLayer,
    Sublayer,
    TanhLayer,
    make_infer_layer,
    make_train_layer,
    residual,
)
from typed_nn.policies import PActFuncIs, PFeedbackOutput, PSeqIDsAre, PUpdate, SeqID

M32 = tn.Matrix[Float32, CPU]
x = tn.zeros((4, 3), Float32, CPU)


# A user composite: its rank arguments type feed_forward / feed_backward, no override.
class SigPlusTanh(ComposeKernel[LayerInput, LayerOutput, Dim2, Dim2]):
    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("sig", SigmoidLayer),
        Sublayer("tanh", TanhLayer),
        Sublayer("add", AddLayer),
        InConnect(LayerInput, "sig", LayerInput),
        InConnect(LayerInput, "tanh", LayerInput),
        InternalConnect("sig", LayerOutput, "add", LeftOperand),
        InternalConnect("tanh", LayerOutput, "add", RightOperand),
        OutConnect("add", LayerOutput, LayerOutput),
    )


f = make_train_layer(SigPlusTanh, LayerInMap({LayerInput: M32}), PFeedbackOutput)("f")
y = f.feed_forward(f.input_cont().set(LayerInput, x)).get(LayerOutput)
assert_type(y, TensorLike[Float32, CPU, Dim2])
assert_type(f.feed_backward(f.output_cont().set(LayerOutput, y)).get(LayerInput), TensorLike[Float32, CPU, Dim2])


# Sequential and a residual block: linear -> relu -> linear, plus the input.
class Block(Sequential[Dim2, Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer), ("fc2", LinearLayer))


Res = make_train_layer(residual(Block), LayerInMap({LayerInput: M32}), PUpdate, PFeedbackOutput)
res = Res("res", {"fc1": (3, 8), "fc2": (8, 3)})
assert_type(res.feed_forward(res.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])
assert_type(residual(Block), type[Residual[Dim2]])
assert_type(residual(ReLULayer), type[Residual[Any]])
blk = make_infer_layer(Block)("blk", {"fc1": (3, 8), "fc2": (8, 3)})
x64 = tn.zeros((4, 3), Float64, CPU)
assert_type(blk.feed_forward(blk.input_cont().set(LayerInput, x64)).get(LayerOutput), TensorLike[Float64, CPU, Dim2])

# RecurrentLayer: a (batch, time, features) sequence and a matrix state give a Tensor3.
T3 = tn.Tensor3[Float32, CPU]
rnn = make_train_layer(
    RecurrentLayer,
    LayerInMap({LayerInput: T3, Previous(LayerOutput): M32}),
    PActFuncIs(GruStep),
    PSeqIDsAre(SeqID(LayerInput, 1)),
)("rnn", 3, 2)
xs = tn.zeros((4, 5, 3), Float32, CPU)
h0 = tn.zeros((4, 2), Float32, CPU)
hs = rnn.feed_forward(rnn.input_cont().set(LayerInput, xs).set(Previous(LayerOutput), h0)).get(LayerOutput)
assert_type(hs, TensorLike[Float32, CPU, Dim3])

# DotLayer: element and device from the operands (the rank follows PModifyDimNumIs).
dot = make_infer_layer(DotLayer)("dot")
assert_type(dot.feed_forward(dot.input_cont().set(LeftOperand, x).set(RightOperand, x)).get(LayerOutput), TensorLike[Float32, CPU, Any])

# Declared in the type argument: the class carries its input map's element and device.
Fc = make_train_layer(LinearLayer[Declared[Float32, CPU]], LayerInMap({LayerInput: M32}), PUpdate)
fc = Fc("fc", 3, 2)
assert_type(fc.feed_forward(fc.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])
Loss = make_train_layer(NLLLossLayer[Declared[Float32, CPU]], LayerInMap({LayerInput: M32, LossLayerWeight: M32}))
loss = Loss("loss")
value = loss.feed_forward(loss.input_cont().set(LayerInput, x).set(LossLayerWeight, x)).get(LayerOutput)
assert_type(value, TensorLike[Float32, CPU, Dim0])
net = MLP.build("net", [3, 4, 2], [ReLULayer, None])
assert_type(net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])


def count(layer: Layer[Any, Any]) -> int:  # any layer, declared or not
    return len(layer.input_ports)


count(fc)
count(res)
count(net)
