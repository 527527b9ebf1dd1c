"""Mixing 16-bit and 32-bit data without a cast: rejected by every checker."""

import typed_nn as tn
from typed_nn import CPU, BFloat16, Dim2, Float16, Float32, Int32, ops
from typed_nn.policies import PComputeElemIs, PParamElemIs

f32 = tn.zeros((4, 3), Float32, CPU)
h = tn.zeros((4, 3), Float16, CPU)
b = tn.zeros((4, 3), BFloat16, CPU)
w32 = tn.zeros((3, 2), Float32, CPU)

half_plus_float = h + f32  # E: Unsupported operand types for +
bf16_times_float = b * f32  # E: Unsupported operand types for *
half_and_bf16 = h - b  # E: Unsupported operand types for -
half_matmul = h @ w32  # E: Unsupported operand types for @
half_as_float: tn.Tensor[Float32, CPU, Dim2] = h  # E: Incompatible types in assignment
cast_kept_half: tn.TensorLike[BFloat16, CPU, Dim2] = ops.astype(b, Float32)  # E: incompatible type
int_compute = PComputeElemIs(Int32)  # E: cannot be "Int32"
int_params = PParamElemIs(Int32)  # E: incompatible type "type[Int32]"; expected "type[FloatTag]"
