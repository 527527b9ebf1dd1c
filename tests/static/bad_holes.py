"""Holes closed in issue 18 (item 3): mypy and pyright must reject each marked line."""

import numpy as np

import typed_nn as tn
from typed_nn import CPU, GPU, Dim2, Float32, Float64, Int32, TensorLike, ops
from typed_nn.layers import (
    MLP,
    AddLayer,
    InterpolateLayer,
    InterpolateLayerLambda,
    InterpolateLayerWeight1,
    InterpolateLayerWeight2,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LossLayerWeight,
    NLLLossLayer,
    ReLULayer,
    RightOperand,
    SubtractLayer,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.model import XavierFiller
from typed_nn.policies import PDeviceIs, PElemIs, PFeedbackOutput, PUpdate, PVarScaleFanIn

s32 = tn.scalar(1.0, Float32, CPU)
v32 = tn.zeros((3,), Float32, CPU)
v64 = tn.zeros((3,), Float64, CPU)
m32 = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
g32 = tn.zeros((4, 3), Float32, GPU)
t32 = tn.zeros((2, 4, 3), Float32, CPU)

# Layer operands of different elements or devices (no fallback to TensorLike[Any, Any, Any]).
add = make_infer_layer(AddLayer)("add")
add.feed_forward(add.input_cont().set(LeftOperand, m32).set(RightOperand, m64))  # E: Cannot infer value of type parameter "E" of "feed_forward" of "BinaryLayer"
add.feed_forward(add.input_cont().set(LeftOperand, m32).set(RightOperand, g32))  # E: Cannot infer value of type parameter "Dv" of "feed_forward" of "BinaryLayer"
add.feed_forward(add.input_cont().set(LeftOperand, m32).set(RightOperand, v64))  # E: Cannot infer value of type parameter "E" of "feed_forward" of "BinaryLayer"
sub = make_train_layer(SubtractLayer, LayerInMap({LeftOperand: tn.Matrix[Float32, CPU], RightOperand: float}))("sub")
minus_one = sub.feed_forward(sub.input_cont().set(LeftOperand, m32).set(RightOperand, 1.0)).get(LayerOutput)
as64: TensorLike[Float64, CPU, Dim2] = minus_one  # E: Incompatible types in assignment
interp = make_infer_layer(InterpolateLayer)("interp")
interp.feed_forward(interp.input_cont().set(InterpolateLayerWeight1, m32).set(InterpolateLayerWeight2, m64).set(InterpolateLayerLambda, v32))  # E: Cannot infer value of type parameter "FE" of "feed_forward" of "InterpolateLayer"

# An MLP is typed by its element and device.
net = MLP.build("net", [3, 8, 2], [ReLULayer, None], PUpdate)
net.feed_forward(net.input_cont().set(LayerInput, m64))  # E: expected "TensorLike[Float32, CPU, Dim2]"
net.feed_forward(net.input_cont().set(LayerInput, g32))  # E: expected "TensorLike[Float32, CPU, Dim2]"
net64 = MLP.build("net64", [3, 2], [None], elem=Float64)
net64.feed_forward(net64.input_cont().set(LayerInput, m32))  # E: expected "TensorLike[Float64, CPU, Dim2]"
int_net = MLP.build("ints", [3, 2], [None], elem=Int32)  # E: Value of type variable "BuildElem" of "build" of "MLP" cannot be "Int32"

# The loss layer's gradient keeps the element and device.
loss = make_train_layer(NLLLossLayer, LayerInMap({LayerInput: tn.Matrix[Float32, CPU], LossLayerWeight: tn.Matrix[Float32, CPU]}), PFeedbackOutput)("loss")
value = loss.feed_forward(loss.input_cont().set(LayerInput, m32).set(LossLayerWeight, m32)).get(LayerOutput)
pred_grad_64: TensorLike[Float64, CPU, Dim2] = loss.feed_backward(loss.output_cont().set(LayerOutput, value)).get(LayerInput)  # E: Incompatible types in assignment

# A gradient of another element than the forward value.
ops.tan_grad(v32, m64)  # E: Cannot infer value of type parameter "FE" of "__call__" of "ElementwiseGrad"

# permute orders of the wrong length; tile targets of lower rank.
ops.permute(m32, (2, 0, 1))  # E: permute takes 2 axes for a rank-2 operand
ops.permute(t32, (1, 0))  # E: permute takes 3 axes for a rank-3 operand
ops.permute_inv(t32, (0,))  # E: permute_inv takes 3 axes for a rank-3 operand
ops.tile(m32, (12,))  # E: tile cannot lower the rank of a rank-2 operand
ops.tile(t32, (8, 3))  # E: tile cannot lower the rank of a rank-3 operand

# Integer elements take int; a ScalableTensor item is one rank lower; try_cast keeps the tags.
tn.scalar(0.5, Int32, CPU)  # E: Value of type variable "FE" of "scalar" cannot be "Int32"
rows: tn.ScalableTensor[Float32, CPU, Dim2] = tn.ScalableTensor()
rows.push_back(m32)  # E: Argument 1 to "push_back" of "ScalableTensor" has incompatible type "Tensor[Float32, CPU, Dim2]"
rows.push_back(s32)  # E: Argument 1 to "push_back" of "ScalableTensor" has incompatible type "Tensor[Float32, CPU, Dim0]"
rows.push_back(v64)  # E: Argument 1 to "push_back" of "ScalableTensor" has incompatible type "Tensor[Float64, CPU, Dim1]"
wrong_tags: tn.Tensor[Float64, CPU, Dim2] | None = tn.make_dynamic(m32).try_cast(tn.Tensor)  # E: Incompatible types in assignment

# XavierFiller chooses the distribution only; PElemIs / PDeviceIs take tags.
XavierFiller(PVarScaleFanIn)  # E: Argument 1 to "XavierFiller" has incompatible type
XavierFiller(PUpdate)  # E: Argument 1 to "XavierFiller" has incompatible type
PElemIs(np.float64)  # E: Argument 1 to "__call__" of "PolicyTemplate" has incompatible type
PElemIs(float)  # E: Argument 1 to "__call__" of "PolicyTemplate" has incompatible type "type[float]"; expected "type[ElemTag]"
PDeviceIs(Float32)  # E: expected "type[DeviceTag]"
