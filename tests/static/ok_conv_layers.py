"""Convolution, pooling, flatten, dropout and embedding layers: outputs typed from inputs."""

from typing import Any, assert_type

import typed_nn as tn
from typed_nn import CPU, Dim2, Dim3, Dim4, Float32, Int64, TensorLike
from typed_nn.layers import (
    Conv2dLayer,
    DropoutLayer,
    EmbeddingLayer,
    FlattenLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    MaxPool2dLayer,
    make_train_layer,
)

Images = tn.Tensor[Float32, CPU, Dim4]
conv = make_train_layer(Conv2dLayer, LayerInMap({LayerInput: Images}))("c", 1, 8, 3, padding=1)
x = tn.zeros((2, 1, 8, 8), Float32, CPU)
y = conv.feed_forward(conv.input_cont().set(LayerInput, x)).get(LayerOutput)
assert_type(y, TensorLike[Float32, CPU, Dim4])
pool = make_train_layer(MaxPool2dLayer, LayerInMap({LayerInput: Images}))("p", 2)
pooled = pool.feed_forward(pool.input_cont().set(LayerInput, x)).get(LayerOutput)
assert_type(pooled, TensorLike[Float32, CPU, Dim4])
flat = make_train_layer(FlattenLayer, LayerInMap({LayerInput: Images}))("f")
rows = flat.feed_forward(flat.input_cont().set(LayerInput, x)).get(LayerOutput)
assert_type(rows, TensorLike[Float32, CPU, Dim2])
drop = make_train_layer(DropoutLayer, LayerInMap({LayerInput: Images}))("d", 0.5, seed=1)
dropped = drop.feed_forward(drop.input_cont().set(LayerInput, x)).get(LayerOutput)
assert_type(dropped, TensorLike[Float32, CPU, Dim4])
emb = make_train_layer(EmbeddingLayer, LayerInMap({LayerInput: tn.Tensor[Int64, CPU, Dim2]}))(
    "e", 10, 4
)
ids = tn.zeros((2, 3), Int64, CPU)
vectors = emb.feed_forward(emb.input_cont().set(LayerInput, ids)).get(LayerOutput)
assert_type(vectors, TensorLike[Any, CPU, Any])
table: TensorLike[Float32, CPU, Dim3] = vectors
