"""Valid code around the holes closed in issue 18 (item 3): it must stay free of errors."""

from typing import Any, assert_type

import typed_nn as tn
from typed_nn import (
    CPU,
    GPU,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Float32,
    Float64,
    Int32,
    Int64,
    TensorLike,
    ops,
)
from typed_nn.layers import (
    MLP,
    AddLayer,
    DotLayer,
    InterpolateLayer,
    InterpolateLayerLambda,
    InterpolateLayerWeight1,
    InterpolateLayerWeight2,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LossLayerWeight,
    MultiplyLayer,
    NLLLossLayer,
    ReLULayer,
    RightOperand,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.model import XavierFiller
from typed_nn.policies import PDeviceIs, PElemIs, PFeedbackOutput, PNormVarScale, PUniformVarScale
from typed_nn.tags import FE, D, Dv

s = tn.scalar(1.0, Float32, CPU)
v = tn.zeros((3,), Float32, CPU)
m = tn.zeros((4, 3), Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)

# Binary and interpolate layers: mixed ranks or a number give TensorLike[E, Dv, Any].
add = make_infer_layer(AddLayer)("add")
mixed = add.feed_forward(add.input_cont().set(LeftOperand, m).set(RightOperand, v)).get(LayerOutput)
assert_type(mixed, TensorLike[Float32, CPU, Any])
plus_one = add.feed_forward(add.input_cont().set(LeftOperand, m).set(RightOperand, 1.0)).get(LayerOutput)
assert_type(plus_one, TensorLike[Float32, CPU, Any])
int_left = add.feed_forward(add.input_cont().set(LeftOperand, 2).set(RightOperand, m)).get(LayerOutput)
assert_type(int_left, TensorLike[Float32, CPU, Any])
mul = make_train_layer(MultiplyLayer, LayerInMap({LeftOperand: tn.Matrix[Float32, CPU], RightOperand: tn.Vector[Float32, CPU]}), PFeedbackOutput)("mul")
product = mul.feed_forward(mul.input_cont().set(LeftOperand, m).set(RightOperand, v)).get(LayerOutput)
assert_type(mul.feed_backward(mul.output_cont().set(LayerOutput, product)).get(RightOperand), TensorLike[Float32, CPU, Any])
interp = make_infer_layer(InterpolateLayer)("interp")
blend = interp.feed_forward(interp.input_cont().set(InterpolateLayerWeight1, m).set(InterpolateLayerWeight2, m).set(InterpolateLayerLambda, v))
assert_type(blend.get(LayerOutput), TensorLike[Float32, CPU, Any])
dot = make_infer_layer(DotLayer)("dot")
assert_type(dot.feed_forward(dot.input_cont().set(LeftOperand, m).set(RightOperand, v)).get(LayerOutput), TensorLike[Float32, CPU, Any])

# The loss layer's gradient keeps the element and device.
loss = make_train_layer(NLLLossLayer, LayerInMap({LayerInput: tn.Matrix[Float32, CPU], LossLayerWeight: tn.Matrix[Float32, CPU]}), PFeedbackOutput)("loss")
value = loss.feed_forward(loss.input_cont().set(LayerInput, m).set(LossLayerWeight, m)).get(LayerOutput)
assert_type(loss.feed_backward(loss.output_cont().set(LayerOutput, value)).get(LayerInput), TensorLike[Float32, CPU, Any])

# MLP is generic over its element and device.
net = MLP.build("net", [3, 8, 2], [ReLULayer, None])
assert_type(net, MLP[Float32, CPU])
assert_type(net.feed_forward(net.input_cont().set(LayerInput, m)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])
assert_type(MLP.build("net64", [3, 2], [None], elem=Float64), MLP[Float64, CPU])
assert_type(MLP.build("gpu", [3, 2], [None], device=GPU, train=False), MLP[Float32, GPU])


def any_mlp(model: MLP) -> None:  # a bare MLP annotation takes any MLP
    model.feed_forward(model.input_cont().set(LayerInput, m))


any_mlp(net)


# Element-wise gradients: the gradient has at most the forward value's rank.
assert_type(ops.exp_grad(s, t3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.sin_grad(v, t3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.tanh_grad(m, t3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.relu_grad(t3, t3), TensorLike[Float32, CPU, Dim3])


def generic_grad(g: TensorLike[FE, Dv, D], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    return ops.sigmoid_grad(g, x) + ops.log_grad(ops.reduce_sum(g), x)


# permute takes one axis per dim; an order of unknown length (or an operand of a rank generic
# in D) is checked at run time.
assert_type(ops.permute(m, (1, 0)), TensorLike[Float32, CPU, Dim2])
assert_type(ops.permute_inv(t3, (2, 0, 1)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.permute(s, ()), TensorLike[Float32, CPU, Dim0])


def reverse_dims(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    return ops.permute(x, tuple(reversed(range(x.rank))))


def swap_last(x: TensorLike[FE, Dv, D], order: tuple[int, ...]) -> TensorLike[FE, Dv, D]:
    return ops.permute_inv(ops.permute(x, (1, 0)), order)


assert_type(ops.permute(t3, tuple(range(3))), TensorLike[Float32, CPU, Dim3])


# tile targets at least the operand's rank.
assert_type(ops.tile(m, (8, 3)), TensorLike[Float32, CPU, Dim2])
assert_type(ops.tile(v, (2, 4, 3)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.tile(s, (2, 2, 2, 2)), TensorLike[Float32, CPU, Dim4])

# Integer elements take ints; float elements take ints and floats.
assert_type(tn.scalar(3, Int32, CPU), tn.Tensor[Int32, CPU, Dim0])
assert_type(tn.scalar(3, Int64, GPU), tn.Tensor[Int64, GPU, Dim0])
assert_type(tn.scalar(3, Float64, CPU), tn.Tensor[Float64, CPU, Dim0])
assert_type(tn.scalar(0.5, Float32, CPU), tn.Tensor[Float32, CPU, Dim0])

# ScalableTensor items are one rank lower; try_cast keeps the holder's tags.
rows: tn.ScalableTensor[Float32, CPU, Dim2] = tn.ScalableTensor()
rows.push_back(v)
rows.push_back(m[0])
d = tn.make_dynamic(m)
assert_type(d.try_cast(tn.Tensor), tn.Tensor[Float32, CPU, Dim2] | None)
assert_type(d.try_cast(tn.ConstantTensor), tn.ConstantTensor[Float32, CPU, Dim2] | None)


class Mine: ...


assert_type(d.try_cast(Mine), Mine | None)
assert_type(tn.make_dynamic(v).try_cast(tn.Tensor), tn.Tensor[Float32, CPU, Dim1] | None)

# XavierFiller chooses the distribution only; PElemIs / PDeviceIs take tags.
XavierFiller()
XavierFiller(PNormVarScale, seed=0)
XavierFiller(PUniformVarScale)
PElemIs(Float64)
PDeviceIs(GPU)
