"""Data of unknown rank keeps its element and device through ``@`` and ``x[i]``: every
checker must reject each marked line."""

import typed_nn as tn
from typed_nn import CPU, GPU, Float32, Float64, ops

w = tn.zeros((3, 4), Float32, CPU)
w64 = tn.zeros((3, 4), Float64, CPU)
s = tn.zeros((), Float32, CPU)
z = tn.zeros(w.shape, Float32, CPU)  # Tensor[Float32, CPU, Any]

as_f64: tn.Matrix[Float64, CPU] = z @ ops.transpose(w)  # E: Incompatible types in assignment
c = tn.zeros((2, 4, 3), Float32, CPU)
on_gpu: tn.Tensor3[Float32, GPU] = z @ c  # E: Incompatible types in assignment
t64 = ops.transpose(w64)
mixed = z @ t64  # E: Unsupported operand types for @
mixed_r = w64 @ z  # E: Unsupported operand types for @
scalar_self = s @ z  # E: Invalid self argument "Tensor[Float32, CPU, Dim0]" to attribute function "__matmul__"
row64: tn.Vector[Float64, CPU] = z[0]  # E: Incompatible types in assignment
not_str: str = z @ w  # E: Incompatible types in assignment
