"""The valid uses of the layers whose rank set is known: no error in mypy or pyright, the
output ranks kept."""

from typing import Any, assert_type

import typed_nn as tn
from typed_nn import CPU, Dim2, Dim3, Dim4, Float32, TensorLike
from typed_nn.layers import (
    AttentionMask,
    BatchNormLayer,
    LayerInMap,
    LayerInput,
    LayerNormLayer,
    LayerOutput,
    LinearLayer,
    MaskedMultiHeadAttentionLayer,
    ReLULayer,
    Residual,
    Sequential,
    make_train_layer,
    residual,
)

M32 = tn.Matrix[Float32, CPU]
T3 = tn.Tensor3[Float32, CPU]
m = tn.zeros((4, 3), Float32, CPU)
t3 = tn.zeros((2, 5, 8), Float32, CPU)
t4 = tn.zeros((2, 3, 4, 4), Float32, CPU)

bn2 = make_train_layer(BatchNormLayer, LayerInMap({LayerInput: M32}))("bn", 3)
rows = bn2.feed_forward(bn2.input_cont().set(LayerInput, m)).get(LayerOutput)
assert_type(rows, TensorLike[Float32, CPU, Dim2])
bn4 = make_train_layer(BatchNormLayer, LayerInMap({LayerInput: tn.Tensor4[Float32, CPU]}))("bn", 3)
maps = bn4.feed_forward(bn4.input_cont().set(LayerInput, t4)).get(LayerOutput)
assert_type(maps, TensorLike[Float32, CPU, Dim4])
back = bn4.feed_backward(bn4.output_cont().set(LayerOutput, maps)).get(LayerInput)
assert_type(back, TensorLike[Float32, CPU, Dim4])
ln = make_train_layer(LayerNormLayer, LayerInMap({LayerInput: T3}))("ln", 8)  # any rank
assert_type(ln.feed_forward(ln.input_cont().set(LayerInput, t3)).get(LayerOutput), TensorLike[Float32, CPU, Dim3])

att = make_train_layer(MaskedMultiHeadAttentionLayer, LayerInMap({LayerInput: T3, AttentionMask: M32}))("att", 8, 2)
square = tn.zeros((5, 5), Float32, CPU)
per_sample = tn.zeros((2, 5, 5), Float32, CPU)
out = att.feed_forward(att.input_cont().set(LayerInput, t3).set(AttentionMask, square))
assert_type(out.get(LayerOutput), TensorLike[Float32, CPU, Dim3])
att.feed_forward(att.input_cont().set(LayerInput, t3).set(AttentionMask, per_sample))
att.feed_forward(att.input_cont().set(LayerInput, t3))  # the mask port left empty


class Block(Sequential[Dim2, Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer), ("fc2", LinearLayer))


class AnyRanks(Sequential):  # ranks not given: any
    chain = (("fc", LinearLayer),)


assert_type(residual(Block), type[Residual[Dim2]])
assert_type(residual(AnyRanks), type[Residual[Any]])
blocks = make_train_layer(Block, LayerInMap({LayerInput: M32}))("b", {"fc1": (3, 8), "fc2": (8, 3)})
