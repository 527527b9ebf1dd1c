"""Convolution, pooling, flatten, dropout and embedding layers: outputs typed from inputs."""

from typing import Any, assert_type

import typed_nn as tn
from typed_nn import CPU, Dim2, Dim3, Dim4, Float32, Int64, TensorLike
from typed_nn.layers import (
    AttentionMask,
    Conv2dLayer,
    Declared,
    DropoutLayer,
    EmbeddingLayer,
    FlattenLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    MaskedMultiHeadAttentionLayer,
    MaxPool2dLayer,
    MultiHeadAttentionLayer,
    make_train_layer,
)
from typed_nn.policies import PFeedbackOutput
from typed_nn.train.cnn import DigitsCNN

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
assert_type(vectors, TensorLike[Any, CPU, Dim3])
table: TensorLike[Float32, CPU, Dim3] = vectors

# Composites typed by ComposeKernel's rank arguments, with no feed_forward override.
conv_fb = make_train_layer(Conv2dLayer, LayerInMap({LayerInput: Images}), PFeedbackOutput)("c", 1, 8, 3)
conv_out = conv_fb.feed_forward(conv_fb.input_cont().set(LayerInput, x)).get(LayerOutput)
assert_type(conv_out, TensorLike[Float32, CPU, Dim4])
conv_grad = conv_fb.feed_backward(conv_fb.output_cont().set(LayerOutput, conv_out)).get(LayerInput)
assert_type(conv_grad, TensorLike[Float32, CPU, Dim4])
DeclaredConv = make_train_layer(Conv2dLayer[Declared[Float32, CPU]], LayerInMap({LayerInput: Images}))
declared_conv = DeclaredConv("dc", 1, 8, 3)
declared_out = declared_conv.feed_forward(declared_conv.input_cont().set(LayerInput, x))
assert_type(declared_out.get(LayerOutput), TensorLike[Float32, CPU, Dim4])
cnn = make_train_layer(DigitsCNN, LayerInMap({LayerInput: Images}))("cnn", 8, 8)
assert_type(cnn.feed_forward(cnn.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])

Seq = tn.Tensor[Float32, CPU, Dim3]
tokens = tn.zeros((2, 5, 8), Float32, CPU)
mha = make_train_layer(MultiHeadAttentionLayer, LayerInMap({LayerInput: Seq}), PFeedbackOutput)("mha", 8, 2)
attended = mha.feed_forward(mha.input_cont().set(LayerInput, tokens)).get(LayerOutput)
assert_type(attended, TensorLike[Float32, CPU, Dim3])
assert_type(mha.feed_backward(mha.output_cont().set(LayerOutput, attended)).get(LayerInput), TensorLike[Float32, CPU, Dim3])
masked_map = LayerInMap({LayerInput: Seq, AttentionMask: tn.Matrix[Float32, CPU]})
masked = make_train_layer(MaskedMultiHeadAttentionLayer, masked_map)("mmha", 8, 2)
mask = tn.zeros((5, 5), Float32, CPU)
masked_out = masked.feed_forward(masked.input_cont().set(LayerInput, tokens).set(AttentionMask, mask))
assert_type(masked_out.get(LayerOutput), TensorLike[Float32, CPU, Dim3])
