"""Convolution, pooling, dropout and embedding code that mypy and pyright must reject."""

import typed_nn as tn
from typed_nn import CPU, Dim2, Dim3, Dim4, Float32, Int64
from typed_nn.layers import (
    Conv2dLayer,
    DropoutLayer,
    EmbeddingLayer,
    LayerInMap,
    LayerInput,
    MaxPool2dLayer,
    MultiHeadAttentionLayer,
    make_train_layer,
)

Images = tn.Tensor[Float32, CPU, Dim4]
conv = make_train_layer(Conv2dLayer, LayerInMap({LayerInput: Images}))("c", 1, 8, 3)
rows = tn.zeros((2, 64), Float32, CPU)
flat_to_conv = conv.feed_forward(conv.input_cont().set(LayerInput, rows))  # E: expected "TensorLike[Float32, CPU, Dim4]"
pool = make_train_layer(MaxPool2dLayer, LayerInMap({LayerInput: Images}))("p", 2)
ints = tn.zeros((2, 1, 8, 8), Int64, CPU)
int_pool = pool.feed_forward(pool.input_cont().set(LayerInput, ints))  # E: Value of type variable "FE" of "feed_forward" of "_PoolLayer" cannot be "Int64"
drop = make_train_layer(DropoutLayer, LayerInMap({LayerInput: Images}))("d", "half")  # E: Argument 2 to "DropoutLayer" has incompatible type "str"
emb = make_train_layer(EmbeddingLayer, LayerInMap({LayerInput: tn.Tensor[Int64, CPU, Dim2]}))("e", 10, 4)
floats = tn.zeros((2, 3), Float32, CPU)
float_ids = emb.feed_forward(emb.input_cont().set(LayerInput, floats))  # E: expected "TensorLike[Int64, CPU
mha = make_train_layer(MultiHeadAttentionLayer, LayerInMap({LayerInput: tn.Tensor[Float32, CPU, Dim3]}))("mha", 8, 2)
rows_to_attention = mha.feed_forward(mha.input_cont().set(LayerInput, rows))  # E: expected "TensorLike[Float32, CPU, Dim3]"
int_conv = conv.feed_forward(conv.input_cont().set(LayerInput, ints))  # E: incompatible type "Tensor[Int64, CPU, Dim4]"
