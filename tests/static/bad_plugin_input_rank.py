"""A LayerInMap declaring a rank the layer's feed_forward does not take: the mypy plugin
reports it at the declaration (pyright reports the feeds: bad_layer_ranks.py)."""

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32
from typed_nn.layers import (
    AttentionMask,
    BatchNormLayer,
    Conv2dLayer,
    LayerInMap,
    LayerInput,
    LinearLayer,
    MaskedMultiHeadAttentionLayer,
    ReLULayer,
    Sequential,
    make_train_layer,
)

T3 = tn.Tensor3[Float32, CPU]


class Block(Sequential[Dim2, Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer))


make_train_layer(BatchNormLayer, LayerInMap({LayerInput: T3}))  # E: BatchNormLayer takes data of rank Dim2 or Dim4; the LayerInMap declares Dim3
make_train_layer(Block, LayerInMap({LayerInput: tn.Tensor4[Float32, CPU]}))  # E: Block takes data of rank Dim2; the LayerInMap declares Dim4
make_train_layer(MaskedMultiHeadAttentionLayer, LayerInMap({LayerInput: T3, AttentionMask: tn.Vector[Float32, CPU]}))  # E: takes data of rank Dim2 or Dim3; the LayerInMap declares Dim1
make_train_layer(Conv2dLayer, LayerInMap({LayerInput: T3}))  # E: Conv2dLayer takes data of rank Dim4; the LayerInMap declares Dim3
