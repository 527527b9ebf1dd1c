"""Layout, join, conversion and convolution calls that mypy and pyright must reject."""

import typed_nn as tn
from typed_nn import CPU, GPU, Float32, Float64, Int32, ops

m32 = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
v32 = tn.zeros((3,), Float32, CPU)
img = tn.zeros((8, 3, 32, 32), Float32, CPU)
img_gpu = tn.zeros((8, 3, 32, 32), Float32, GPU)

transpose_vector = ops.transpose(v32)  # E: Argument 1 to "transpose" has incompatible type
wrong_rank: tn.Matrix[Float32, CPU] = ops.reshape(m32, (2, 3, 2))  # E: Incompatible types in assignment
squeeze_scalar = ops.squeeze(tn.scalar(1.0, Float32, CPU), 0)  # E: Argument 1 to "squeeze" has incompatible type
squeeze_rank: tn.Matrix[Float32, CPU] = ops.squeeze(m32, 0)  # E: Incompatible types in assignment
unsqueeze_rank: tn.Matrix[Float32, CPU] = ops.unsqueeze(m32, 0)  # E: Incompatible types in assignment
reshape_list = ops.reshape(m32, [2, 6])  # E: No overload variant of "reshape" matches
astype_non_tag = ops.astype(m32, int)  # E: Value of type variable "E2" of "astype" cannot be "int"
astype_wrong: tn.Matrix[Float64, CPU] = ops.astype(m32, Float32)  # E: Argument 2 to "astype" has incompatible type
ops.concat([m32, m64])  # E: Argument 1 to "concat" has incompatible type
ops.concat(m32)  # E: Argument 1 to "concat" has incompatible type
ops.stack([m32, v32])  # E: Argument 1 to "stack" has incompatible type
conv_of_matrix = ops.conv2d(m32, m32)  # E: Argument 1 to "conv2d" has incompatible type
conv_across_devices = ops.conv2d(img, img_gpu)  # E: Arguments "x" and "w" to "conv2d" take one device type (Dv)
pool_of_ints = ops.max_pool2d(tn.zeros((1, 1, 4, 4), Int32, CPU), 2)  # E: Argument "x" to "max_pool2d" takes data whose element type is a "FloatTag" (FE), got "Tensor[Int32
permute_list = ops.permute(m32, [1, 0])  # E: No overload variant of "permute" matches argument types "Tensor[Float32, CPU, Dim2]", "list[int]"
tile_int_dims = ops.tile(m32, (2, 3), new_dims=0)  # E: No overload variant of "tile" matches
to_elem = ops.to_device(m32, Float32)  # E: Value of type variable "Dv2" of "to_device" cannot be "Float32"
gpu_as_cpu: tn.Matrix[Float32, CPU] = ops.to_device(m32, GPU)  # E: Argument 2 to "to_device" has incompatible type
