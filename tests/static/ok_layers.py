"""Layers as mypy and pyright see them: containers keyed by ports, outputs typed from inputs."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim0, Dim2, Float32, TensorLike
from typed_nn.layers import (
    AddLayer,
    Declared,
    DeclaredValues,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LossLayerWeight,
    NLLLossLayer,
    Previous,
    PreviousKey,
    RightOperand,
    SigmoidLayer,
    VarTypeDict,
    VarValues,
    layer_feed_backward,
    layer_feed_forward,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.policies import PFeedbackOutput


class A: ...


class B: ...


Params = VarTypeDict(A, B)
assert_type(Params, VarTypeDict[A | B])
values = Params.create().set(A, 1.0).set(B, 2.0)
assert_type(values.get(A), float)
assert_type(VarTypeDict(LayerOutput, Previous(LayerOutput)), VarTypeDict[LayerOutput | PreviousKey[LayerOutput]])

M32 = tn.Matrix[Float32, CPU]
Add = make_train_layer(AddLayer[Declared[Float32, CPU]], LayerInMap({LeftOperand: M32, RightOperand: M32}), PFeedbackOutput)
assert_type(Add, type[AddLayer[Declared[Float32, CPU]]])
add = Add("add")
a = tn.zeros((2, 3), Float32, CPU)
inputs = add.input_cont().set(LeftOperand, a).set(RightOperand, a)
assert_type(inputs, DeclaredValues[LeftOperand | RightOperand, TensorLike[Float32, CPU, Dim2], Float32, CPU])
undeclared = make_infer_layer(AddLayer)("plain")
assert_type(undeclared.input_cont().set(LeftOperand, a), VarValues[LeftOperand | RightOperand, tn.Tensor[Float32, CPU, Dim2]])
out = add.feed_forward(inputs).get(LayerOutput)
assert_type(out, TensorLike[Float32, CPU, Dim2])
grads = add.feed_backward(add.output_cont().set(LayerOutput, out))

act = make_train_layer(SigmoidLayer, LayerInMap({LayerInput: M32}), PFeedbackOutput)("act")
y = act.feed_forward(act.input_cont().set(LayerInput, out)).get(LayerOutput)
assert_type(y, TensorLike[Float32, CPU, Dim2])
assert_type(act.feed_backward(act.output_cont().set(LayerOutput, y)).get(LayerInput), TensorLike[Float32, CPU, Dim2])

loss = make_infer_layer(NLLLossLayer)("loss")
value = loss.feed_forward(loss.input_cont().set(LayerInput, y).set(LossLayerWeight, a)).get(LayerOutput)
assert_type(value, TensorLike[Float32, CPU, Dim0])

# The generic wrappers keep the layer's own container types.
wrapped_out = layer_feed_forward(act, act.input_cont().set(LayerInput, a))
assert_type(wrapped_out.get(LayerOutput), TensorLike[Float32, CPU, Dim2])
assert_type(layer_feed_backward(act, wrapped_out).get(LayerInput), TensorLike[Float32, CPU, Dim2])
