"""With the typed_nn mypy plugin (mypy only): make_train_layer reads the declared element and
device from a literal LayerInMap into the class's type argument."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32, TensorLike
from typed_nn.layers import (
    AddLayer,
    Declared,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    ReLULayer,
    Residual,
    RightOperand,
    Sequential,
    SigmoidLayer,
    Undeclared,
    make_infer_layer,
    make_train_layer,
    residual,
)

M32 = tn.Matrix[Float32, CPU]
x = tn.zeros((4, 3), Float32, CPU)

Fc = make_train_layer(LinearLayer, LayerInMap({LayerInput: M32}))
assert_type(Fc, type[LinearLayer[Declared[Float32, CPU]]])
Add = make_train_layer(AddLayer, LayerInMap({LeftOperand: M32, RightOperand: float}))
assert_type(Add, type[AddLayer[Declared[Float32, CPU]]])
assert_type(make_infer_layer(SigmoidLayer), type[SigmoidLayer[Undeclared]])
in_map = LayerInMap({LayerInput: M32})  # not a literal at the call: undeclared, typed from the data
assert_type(make_train_layer(SigmoidLayer, in_map), type[SigmoidLayer[Undeclared]])


class Block(Sequential[Dim2, Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer), ("fc2", LinearLayer))


Res = make_train_layer(residual(Block), LayerInMap({LayerInput: M32}))
assert_type(Res, type[Residual[Dim2, Declared[Float32, CPU]]])
res = Res("res", {"fc1": (3, 8), "fc2": (8, 3)})
assert_type(res.feed_forward(res.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])
