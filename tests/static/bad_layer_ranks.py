"""Layers whose rank set is known (issue 34): data of another rank is rejected by mypy and
pyright where it is fed (the declaration itself: bad_plugin_input_rank.py, mypy only)."""

import typed_nn as tn
from typed_nn import CPU, Dim2, Dim3, Float32
from typed_nn.layers import (
    AttentionMask,
    BatchNormLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LinearLayer,
    MaskedMultiHeadAttentionLayer,
    Sequential,
    make_train_layer,
    residual,
)

M32 = tn.Matrix[Float32, CPU]
t3 = tn.zeros((2, 3, 4), Float32, CPU)
v = tn.zeros((5,), Float32, CPU)
x = tn.zeros((2, 5, 8), Float32, CPU)

# BatchNorm takes (N, C) or (N, C, H, W) data only.
bn = make_train_layer(BatchNormLayer, LayerInMap({LayerInput: M32}))("bn", 3)
bn.feed_forward(bn.input_cont().set(LayerInput, t3))  # E: incompatible type "Tensor[Float32, CPU, Dim3]"
bn.feed_backward(bn.output_cont().set(LayerOutput, t3))  # E: incompatible type "Tensor[Float32, CPU, Dim3]"

# The attention mask is (seq, seq) or (batch, seq, seq): not a Vector.
T3 = tn.Tensor3[Float32, CPU]
att = make_train_layer(MaskedMultiHeadAttentionLayer, LayerInMap({LayerInput: T3, AttentionMask: M32}))("att", 8, 2)
att.feed_forward(att.input_cont().set(LayerInput, x).set(AttentionMask, v))  # E: "feed_forward" of "MaskedMultiHeadAttentionLayer"


# x + body(x) needs a body that keeps its input's rank.
class Widen(Sequential[Dim2, Dim3]):
    chain = (("fc", LinearLayer),)


residual(Widen)  # E: this body changes it
