"""Result types of activations, softmax, losses, reductions and selections."""

from typing import assert_type

import typed_nn as tn
from typed_nn import (
    CPU,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Float32,
    Float64,
    Int32,
    Int64,
    TensorLike,
    ops,
)

m = tn.zeros((4, 3), Float32, CPU)
v = tn.zeros((3,), Float32, CPU)
s = tn.scalar(0.5, Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)
t4 = tn.zeros((5, 2, 4, 3), Float64, CPU)
i = tn.zeros((4, 3), Int32, CPU)

assert_type(ops.sigmoid(m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.tanh(ops.relu(t3)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.sigmoid_grad(v, m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.tanh_grad(m, m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.relu_grad(s, t3), TensorLike[Float32, CPU, Dim3])

assert_type(ops.softmax(m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.softmax(t4, k=2), TensorLike[Float64, CPU, Dim4])
assert_type(ops.softmax_grad(m, ops.softmax(m)), TensorLike[Float32, CPU, Dim2])
assert_type(ops.log_softmax(m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.log_softmax_grad(m, m, 1), TensorLike[Float32, CPU, Dim2])
assert_type(ops.nll_loss(m, ops.softmax(m)), TensorLike[Float32, CPU, Dim0])
assert_type(ops.nll_loss_grad(s, m, m), TensorLike[Float32, CPU, Dim2])

assert_type(ops.reduce_sum(m, 0), TensorLike[Float32, CPU, Dim1])
assert_type(ops.reduce_sum(m), TensorLike[Float32, CPU, Dim0])
assert_type(ops.reduce_sum(m, -1, keep_dim=True), TensorLike[Float32, CPU, Dim2])
assert_type(ops.reduce_sum(t3, first=1), TensorLike[Float32, CPU, Dim2])
assert_type(ops.reduce_sum(t4, first=3), TensorLike[Float64, CPU, Dim1])
assert_type(ops.reduce_sum(t3, (0, 2)), TensorLike[Float32, CPU, Dim1])
assert_type(ops.reduce_sum(t4, (0, 1, 3)), TensorLike[Float64, CPU, Dim1])
assert_type(ops.reduce_sum(t3, (0,)), TensorLike[Float32, CPU, Dim2])
assert_type(ops.reduce_sum(t3, ()), TensorLike[Float32, CPU, Dim3])
assert_type(ops.reduce_sum(i, 1), TensorLike[Int32, CPU, Dim1])
assert_type(ops.reduce_mean(m, 1), TensorLike[Float32, CPU, Dim1])
assert_type(ops.reduce_mean(t3, first=2, keep_dim=True), TensorLike[Float32, CPU, Dim3])
assert_type(ops.reduce_max(i), TensorLike[Int32, CPU, Dim0])
assert_type(ops.reduce_max(t3, (1, 2)), TensorLike[Float32, CPU, Dim1])
assert_type(ops.argmax(m), TensorLike[Int64, CPU, Dim1])
assert_type(ops.argmax(t4, axis=0), TensorLike[Int64, CPU, Dim3])

assert_type(ops.maximum(m, 0.0), TensorLike[Float32, CPU, Dim2])
assert_type(ops.maximum(0, i), TensorLike[Int32, CPU, Dim2])
assert_type(ops.maximum(v, m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.maximum(s, t3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.minimum(m, 1.0), TensorLike[Float32, CPU, Dim2])
assert_type(ops.minimum(0, i), TensorLike[Int32, CPU, Dim2])
assert_type(ops.minimum(v, m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.where(i, m, m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.where(m, s, m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.where(v, t3, t3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.interpolate(m, m, s), TensorLike[Float32, CPU, Dim2])
assert_type(ops.interpolate(m, v, v), TensorLike[Float32, CPU, Dim2])
assert_type(ops.interpolate(s, s, s), TensorLike[Float32, CPU, Dim0])

loss: tn.Scalar[Float32, CPU] = ops.nll_loss(m, ops.softmax(m))
per_column: tn.Vector[Float32, CPU] = ops.reduce_sum(m, 0)
assert_type(ops.mse_loss(m, m), TensorLike[Float32, CPU, Dim0])
assert_type(ops.l1_loss(t3, t3, reduction="sum"), TensorLike[Float32, CPU, Dim0])
assert_type(ops.huber_loss(m, m, delta=0.5), TensorLike[Float32, CPU, Dim0])
