"""Code that mypy and pyright must reject: each marked line, for the stated reason."""

import typed_nn as tn
from typed_nn import CPU, GPU, Dim1, Dim2, Dim3, Float32, Float64, Int32, ops

m32 = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
g32 = tn.zeros((4, 3), Float32, GPU)
v32 = tn.zeros((3,), Float32, CPU)
i32 = tn.zeros((3,), Int32, CPU)
s32 = tn.scalar(1.0, Float32, CPU)

bad_tag: tn.Tensor[int, CPU, Dim2]  # E: must be a subtype of "ElemTag"
bad_device_tag: tn.Tensor[Float32, Float32, Dim2]  # E: must be a subtype of "DeviceTag"
bad_rank_tag: tn.Tensor[Float32, CPU, CPU]  # E: must be a subtype of "DimTag"
mixed_elem = m32 + m64  # E: Unsupported operand types for +
mixed_device = m32 * g32  # E: Unsupported operand types for *
want64: tn.Tensor[Float64, CPU, Dim2] = m32  # E: Incompatible types in assignment
want_matrix: tn.Matrix[Float32, CPU] = tn.zeros((2, 3, 4), Float32, CPU)  # E: Incompatible types in assignment
seven = tn.zeros((1, 2, 3, 4, 5, 6, 7), Float32, CPU)  # E: typed_nn data has at most 6 dims
int_plus_float = i32 + 1.5  # E: No overload variant of "__add__" of "TensorLike" matches argument type "float"
int_div = i32 / i32  # E: Invalid self argument "Tensor[Int32, CPU, Dim1]" to attribute function "__truediv__"
scalar_matmul = s32 @ m32  # E: Invalid self argument "Tensor[Float32, CPU, Dim0]" to attribute function "__matmul__"
mixed_matmul = tn.zeros((2, 2, 2), Float32, CPU) @ tn.zeros((2, 2, 2), Float64, CPU)  # E: Unsupported operand types for @
batched_as_rank4: tn.Tensor4[Float32, CPU] = tn.zeros((2, 2, 2), Float32, CPU) @ tn.zeros((2, 2, 2), Float32, CPU)  # E: Incompatible types in assignment
vector_as_matrix: tn.Matrix[Float32, CPU] = m32 @ v32  # E: Incompatible types in assignment
str_operand = m32 + "a"  # E: No overload variant of "__add__" of "TensorLike" matches argument type "str"
exp_of_int = ops.exp(i32)  # E: Argument "x" to "exp" takes data whose element type is a "FloatTag" (FE), got "Tensor[Int32, CPU, Dim1]"
lazy_mixed = (m32 + m32) - (m64 + m64)  # E: Unsupported operand types for -
index_scalar = s32[0]  # E: Invalid self argument
dot_bad_k = ops.dot(v32, v32, k=2)  # E: No overload variant of "dot"


def takes_tensor3(x: tn.Tensor3[Float32, CPU]) -> None: ...


takes_tensor3(m32)  # E: Argument 1 to "takes_tensor3" has incompatible type
wrong_dim: tn.Tensor[Float32, CPU, Dim1] = tn.tensor([1.0], Float32, CPU, Dim3)  # E: Argument 4 to "tensor" has incompatible type
