"""Composite-layer misuse that mypy and pyright reject."""

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32, Int32, TensorLike
from typed_nn.layers import (
    ComposeTopology,
    InConnect,
    LayerInMap,
    LayerInput,
    LeftOperand,
    LinearLayer,
    Sublayer,
    make_train_layer,
)

M32 = tn.Matrix[Float32, CPU]
fc = make_train_layer(LinearLayer, LayerInMap({LayerInput: M32}))("fc", 3, 2)
ints = tn.zeros((4, 3), Int32, CPU)
cube = tn.zeros((4, 3, 2), Float32, CPU)
x = tn.zeros((4, 3), Float32, CPU)

fc.feed_forward(fc.input_cont().set(LayerInput, ints))  # E: Argument 2 to "set" of "DeclaredValues" has incompatible type "Tensor[Int32, CPU, Dim2]"
fc.feed_forward(fc.input_cont().set(LayerInput, cube))  # E: incompatible type "Tensor[Float32, CPU, Dim3]"
fc.input_cont().set(LeftOperand, x)  # E: incompatible type "type[LeftOperand]"; expected "type[LayerInput]"
out: TensorLike[Float32, CPU, Dim2] = fc.feed_forward(fc.input_cont().set(LayerInput, x)).get(LayerInput)  # E: Argument 1 to "get" of "VarValues" has incompatible type "type[LayerInput]"
Sublayer("fc", 3)  # E: Argument 2 to "Sublayer" has incompatible type "int"
InConnect(LayerInput, 1, LayerInput)  # E: Argument 2 to "InConnect" has incompatible type "int"
ComposeTopology("fc")  # E: Argument 1 to "ComposeTopology" has incompatible type "str"
LinearLayer("fc", "3", 2)  # E: Argument 2 to "LinearLayer" has incompatible type "str"
