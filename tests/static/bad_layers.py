"""Layer code that mypy and pyright must reject."""

import typed_nn as tn
from typed_nn import CPU, Dim1, Float32, Float64, Int32, TensorLike
from typed_nn.layers import (
    AddLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LossLayerWeight,
    NLLLossLayer,
    RightOperand,
    SigmoidLayer,
    VarTypeDict,
    make_infer_layer,
    make_train_layer,
)


class A: ...


class B: ...


class Weight: ...


Params = VarTypeDict(A, B)
undeclared = Params.create().set(A, 1.0).get(Weight)  # E: expected "type[A] | type[B]"
wrong_value: str = Params.create().set(A, 1.0).get(A)  # E: Incompatible types in assignment

M32 = tn.Matrix[Float32, CPU]
add = make_infer_layer(AddLayer)("add")
m32 = tn.zeros((2, 3), Float32, CPU)
wrong_port = add.input_cont().set(LayerInput, m32)  # E: Argument 1 to "set" of "VarValues" has incompatible type "type[LayerInput]"
act = make_train_layer(SigmoidLayer, LayerInMap({LayerInput: M32}))("act")
ints = tn.zeros((2, 3), Int32, CPU)
int_to_sigmoid = act.feed_forward(act.input_cont().set(LayerInput, ints))  # E: Argument 2 to "set" of "DeclaredValues" has incompatible type "Tensor[Int32, CPU, Dim2]"
y = act.feed_forward(act.input_cont().set(LayerInput, m32)).get(LayerOutput)
as_float64: TensorLike[Float64, CPU, tn.Dim2] = y  # E: Incompatible types in assignment
as_vector: TensorLike[Float32, CPU, Dim1] = y  # E: Incompatible types in assignment
binary_to_unary = act.feed_forward(add.input_cont().set(LeftOperand, m32).set(RightOperand, m32))  # E: Argument 1 to "feed_forward" of "SameTypeFeeds" has incompatible type
loss = make_infer_layer(NLLLossLayer)("loss")
mixed = loss.feed_forward(loss.input_cont().set(LayerInput, m32).set(LossLayerWeight, tn.zeros((2, 3), Float64, CPU)))  # E: Cannot infer value of type parameter "FE"
