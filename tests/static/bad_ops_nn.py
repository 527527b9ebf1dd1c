"""Activation, softmax, loss, reduction and selection calls mypy and pyright must reject."""

import typed_nn as tn
from typed_nn import CPU, GPU, Float32, Float64, Int32, ops

m32 = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
g32 = tn.zeros((4, 3), Float32, GPU)
v32 = tn.zeros((3,), Float32, CPU)
i32 = tn.zeros((4, 3), Int32, CPU)
s32 = tn.scalar(1.0, Float32, CPU)

column_sums: tn.Matrix[Float32, CPU] = ops.reduce_sum(m32, 0)  # E: Incompatible types in assignment
total: tn.Vector[Float32, CPU] = ops.reduce_sum(m32)  # E: Incompatible types in assignment
sig_int = ops.sigmoid(i32)  # E: Argument "x" to "sigmoid" takes data whose element type is a "FloatTag" (FE), got "Tensor[Int32
relu_int = ops.relu(i32)  # E: Argument "x" to "relu" takes data whose element type is a "FloatTag" (FE), got "Tensor[Int32
nll_ranks = ops.nll_loss(v32, m32)  # E: Arguments "truth" and "pred" to "nll_loss" take one rank type (D)
nll_g = ops.nll_loss_grad(v32, m32, m32)  # E: Argument 1 to "nll_loss_grad" has incompatible type
sg_elems = ops.softmax_grad(m32, m64)  # E: Arguments "g" and "y" to "softmax_grad" take one element type (FE)
sg_devices = ops.softmax_grad(m32, g32)  # E: Arguments "g" and "y" to "softmax_grad" take one device type (Dv)
argmax_f: tn.Vector[Float32, CPU] = ops.argmax(m32)  # E: "TensorLike[Int64, CPU, Dim1]"
argmax_scalar = ops.argmax(s32)  # E: Argument 1 to "argmax" has incompatible type
max_elems = ops.maximum(m32, m64)  # E: Arguments "a" and "b" to "maximum" take one element type (E)
max_int_float = ops.maximum(i32, 1.5)  # E: Argument "a" to "maximum" takes data whose element type is a "FloatTag" (FE)
min_elems = ops.minimum(m32, m64)  # E: Arguments "a" and "b" to "minimum" take one element type (E)
reduce_both = ops.reduce_sum(m32, 0, first=1)  # E: No overload variant of "reduce_sum" matches
reduce_many = ops.reduce_sum(v32, (0, 1))  # E: Argument 2 to "reduce_sum" has incompatible type
reduce_first = ops.reduce_sum(v32, first=2.0)  # E: No overload variant of "reduce_sum" matches
mean_int = ops.reduce_mean(i32, 0)  # E: Argument "x" to "reduce_mean" takes data whose element type is a "FloatTag" (FE)
where_elems = ops.where(m32, m32, m64)  # E: Arguments "a" and "b" to "where" take one element type (E)
interp_int = ops.interpolate(i32, i32, i32)  # E: Argument "a" to "interpolate" takes data whose element type is a "FloatTag" (FE)
mse_ranks = ops.mse_loss(v32, m32)  # E: Arguments "truth" and "pred" to "mse_loss" take one rank type (D)
huber_reduction = ops.huber_loss(m32, m32, reduction="max")  # E: "reduction" to "huber_loss"
