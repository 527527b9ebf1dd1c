"""Result types of the layout, join, conversion and convolution ops."""

from typing import assert_type

import typed_nn as tn
from typed_nn import (
    CPU,
    GPU,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Float32,
    Float64,
    Int32,
    TensorLike,
    ops,
)

m = tn.zeros((4, 3), Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)
v = tn.zeros((3,), Float32, CPU)
s = tn.scalar(1.0, Float32, CPU)
img = tn.zeros((8, 3, 32, 32), Float32, CPU)
w = tn.zeros((16, 3, 5, 5), Float32, CPU)

assert_type(ops.permute(t3, (2, 0, 1)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.permute_inv(t3, (2, 0, 1)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.transpose(m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.transpose(m + m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.squeeze(t3, 0), TensorLike[Float32, CPU, Dim2])
assert_type(ops.squeeze(v, -1), TensorLike[Float32, CPU, Dim0])
assert_type(ops.unsqueeze(m, 0), TensorLike[Float32, CPU, Dim3])
assert_type(ops.unsqueeze(s, 0), TensorLike[Float32, CPU, Dim1])
assert_type(ops.squeeze(ops.unsqueeze(m + m, 1), 1), TensorLike[Float32, CPU, Dim2])

assert_type(ops.reshape(m, ()), TensorLike[Float32, CPU, Dim0])
assert_type(ops.reshape(m, (-1,)), TensorLike[Float32, CPU, Dim1])
assert_type(ops.reshape(t3, (8, 3)), TensorLike[Float32, CPU, Dim2])
assert_type(ops.reshape(v, (1, 3, 1)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.reshape(m, (1, 2, 2, 3)), TensorLike[Float32, CPU, Dim4])

assert_type(ops.tile(s, (3,)), TensorLike[Float32, CPU, Dim1])
assert_type(ops.tile(v, (2, 6)), TensorLike[Float32, CPU, Dim2])
assert_type(ops.tile(m, (5, 4, 3), new_dims=(0,)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.tile(m, (2, 5, 4, 3)), TensorLike[Float32, CPU, Dim4])

assert_type(ops.concat([m, m + m]), TensorLike[Float32, CPU, Dim2])
assert_type(ops.concat((t3, t3), axis=-1), TensorLike[Float32, CPU, Dim3])
assert_type(ops.stack([s, s]), TensorLike[Float32, CPU, Dim1])
assert_type(ops.stack([v, v]), TensorLike[Float32, CPU, Dim2])
assert_type(ops.stack([m, m], axis=2), TensorLike[Float32, CPU, Dim3])
assert_type(ops.stack([t3]), TensorLike[Float32, CPU, Dim4])

assert_type(ops.astype(m, Float64), TensorLike[Float64, CPU, Dim2])
assert_type(ops.astype(tn.zeros((3,), Int32, CPU), Float32), TensorLike[Float32, CPU, Dim1])
assert_type(ops.astype(m, Float32), TensorLike[Float32, CPU, Dim2])
assert_type(ops.to_device(m, GPU), TensorLike[Float32, GPU, Dim2])
assert_type(ops.to_device(ops.to_device(v, GPU), CPU), TensorLike[Float32, CPU, Dim1])

assert_type(ops.conv2d(img, w, stride=2, padding=(1, 2)), TensorLike[Float32, CPU, Dim4])
g = ops.conv2d(img, w, padding=2)
assert_type(ops.conv2d_grad_input(g, w, (8, 3, 32, 32), padding=2), TensorLike[Float32, CPU, Dim4])
assert_type(ops.conv2d_grad_weight(g, img, (16, 3, 5, 5), padding=2), TensorLike[Float32, CPU, Dim4])
assert_type(ops.max_pool2d(img, 2), TensorLike[Float32, CPU, Dim4])
assert_type(ops.max_pool2d_grad(ops.max_pool2d(img, 2), img, 2), TensorLike[Float32, CPU, Dim4])
