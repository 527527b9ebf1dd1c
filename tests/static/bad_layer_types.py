"""Data of the wrong element or device for a declared layer: an error in mypy and pyright."""

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32, Float64, TensorLike
from typed_nn.layers import (
    MLP,
    AddLayer,
    Declared,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    ReLULayer,
    RightOperand,
    Sequential,
    make_train_layer,
    residual,
)

M32 = tn.Matrix[Float32, CPU]
x64 = tn.zeros((4, 3), Float64, CPU)
x = tn.zeros((4, 3), Float32, CPU)

fc = make_train_layer(LinearLayer[Declared[Float32, CPU]], LayerInMap({LayerInput: M32}))("fc", 3, 2)
fc.feed_forward(fc.input_cont().set(LayerInput, x64))  # E: Argument 2 to "set" of "DeclaredValues" has incompatible type "Tensor[Float64, CPU, Dim2]"
add = make_train_layer(AddLayer[Declared[Float32, CPU]], LayerInMap({LeftOperand: M32, RightOperand: float}))("add")
add.input_cont().set(LeftOperand, x).set(RightOperand, x64)  # E: Argument 2 to "set" of "DeclaredValues" has incompatible type "Tensor[Float64, CPU, Dim2]"
net = MLP.build("net", [3, 2], [None])
net.input_cont().set(LayerInput, x64)  # E: Argument 2 to "set" of "DeclaredValues" has incompatible type "Tensor[Float64, CPU, Dim2]"


class Block(Sequential[Dim2, Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer), ("fc2", LinearLayer))


res = make_train_layer(residual(Block), LayerInMap({LayerInput: M32}))("res", {"fc1": (3, 8), "fc2": (8, 3)})
y = res.feed_forward(res.input_cont().set(LayerInput, x)).get(LayerOutput)
as_float64: TensorLike[Float64, CPU, Dim2] = y  # E: Incompatible types in assignment
