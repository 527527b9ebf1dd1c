"""With the typed_nn mypy plugin (mypy only): a layer declared Float32 through a literal
LayerInMap rejects Float64 data, written as make_train_layer(Template, LayerInMap(...))."""

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32, Float64
from typed_nn.layers import (
    LayerInMap,
    LayerInput,
    LinearLayer,
    ReLULayer,
    Sequential,
    SigmoidLayer,
    make_train_layer,
    residual,
)

M32 = tn.Matrix[Float32, CPU]
x64 = tn.zeros((4, 3), Float64, CPU)
act = make_train_layer(SigmoidLayer, LayerInMap({LayerInput: M32}))("act")
act.feed_forward(act.input_cont().set(LayerInput, x64))  # E: Argument 2 to "set" of "DeclaredValues" has incompatible type "Tensor[Float64, CPU, Dim2]"; expected "TensorLike[Float32, CPU, Dim2]"


class Block(Sequential[Dim2, Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer), ("fc2", LinearLayer))


res = make_train_layer(residual(Block), LayerInMap({LayerInput: M32}))("res", {})
res.input_cont().set(LayerInput, x64)  # E: Argument 2 to "set" of "DeclaredValues" has incompatible type "Tensor[Float64, CPU, Dim2]"
