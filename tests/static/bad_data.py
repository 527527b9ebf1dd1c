"""Data kinds used wrongly: mypy and pyright must reject each marked line."""
# pyright: reportMissingTypeArgument=true

import numpy as np

import typed_nn as tn
from typed_nn import CPU, GPU, Dim1, Dim2, Dim3, Float32, Float64

m32 = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
v32 = tn.zeros((3,), Float32, CPU)
s32 = tn.scalar(1.0, Float32, CPU)

z7 = tn.ZeroTensor((1, 2, 3, 4, 5, 6, 7), Float32, CPU)  # E: typed_nn data has at most 6 dims
const_of_vector = tn.ConstantTensor(v32, (2, 2))  # E: Argument 1 to "ConstantTensor" has incompatible type "Tensor[Float32, CPU, Dim1]"
bias_of_vector = tn.BiasVector(3, 0, v32)  # E: Argument 3 to "BiasVector" has incompatible type "Tensor[Float32, CPU, Dim1]"
mixed = tn.ScalableTensor([v32, m32])  # E: Argument 1 to "ScalableTensor" has incompatible type "list[object]"
dyn_rank: tn.DynamicData[Float32, CPU, Dim1] = tn.make_dynamic(m32)  # E: Argument 1 to "make_dynamic" has incompatible type "Tensor[Float32, CPU, Dim2]"; expected "TensorLike[Float32, CPU, Dim1]"
dyn_elem: tn.DynamicData[Float64, CPU, Dim2] = tn.make_dynamic(m32)  # E: expected "TensorLike[Float64, CPU, Dim2]"
bare: tn.Tensor = m32  # E: Missing type arguments for generic type "Tensor"
two_args: tn.Tensor[Float32, CPU] = m32  # E: "Tensor" expects 3 type arguments, but 2 given
vector_one_arg: tn.Vector[Float32] = v32  # E: Bad number of arguments for type alias, expected 2, given 1
zero_rank: tn.ZeroTensor[Float32, CPU, Dim3] = tn.ZeroTensor((2, 2), Float32, CPU)  # E: variable has type "ZeroTensor[Float32, CPU, Dim3]"
zero_elem: tn.ZeroTensor[Float64, CPU, Dim2] = tn.ZeroTensor((2, 2), Float32, CPU)  # E: Argument 2 to "ZeroTensor" has incompatible type "type[Float32]"
const_device: tn.ConstantTensor[Float32, GPU, Dim1] = tn.ConstantTensor(s32, (3,))  # E: expected "TensorLike[Float32, GPU, Dim0]"
scalable_rank: tn.ScalableTensor[Float32, CPU, Dim3] = tn.ScalableTensor([v32, v32])  # E: variable has type "ScalableTensor[Float32, CPU, Dim3]"
scalar_as_vector: tn.Vector[Float32, CPU] = tn.scalar(1.0, Float32, CPU)  # E: expression has type "Tensor[Float32, CPU, Dim0]", variable has type "TensorLike[Float32, CPU, Dim1]"
ones7 = tn.ones((1, 2, 3, 4, 5, 6, 7), Float32, CPU)  # E: typed_nn data has at most 6 dims
numpy_elem = tn.zeros((2,), np.float32, CPU)  # E: Value of type variable "E" of "zeros" cannot be "floating[_32Bit]"
dim_not_tag = tn.tensor([1.0], Float32, CPU, int)  # E: Value of type variable "D" of "tensor" cannot be "int"
cast_unchecked = tn.make_dynamic(m32).try_cast(tn.Tensor).shape  # E: Item "None" of "Tensor[Float32, CPU, Dim2] | None" has no attribute "shape"
handle: tn.EvalHandle[Float64, CPU, Dim2] = (m32 + m32).eval_register()  # E: variable has type "EvalHandle[Float64, CPU, Dim2]"
out_elem = tn.evaluate(m32 + m32, out=m64)  # E: Cannot infer value of type parameter "E" of "evaluate"
assign_rank = m32.assign(v32 + v32)  # E: Argument 1 to "assign" of "Tensor" has incompatible type "TensorLike[Float32, CPU, Dim1]"
slice_rank: tn.Tensor[Float32, CPU, Dim2] = m32[0]  # E: variable has type "Tensor[Float32, CPU, Dim2]"
scalar_from_str = tn.scalar("1.0", Float32, CPU)  # E: No overload variant of "scalar" matches argument types "str"
data_elem: tn.Tensor[Float64, CPU, Dim2] = (m32 * 2.0).eval_register().data()  # E: variable has type "Tensor[Float64, CPU, Dim2]"
zero_scalar_elem: tn.Scalar[Float32, CPU] = tn.ZeroTensor((), Float64, CPU)  # E: Argument 2 to "ZeroTensor" has incompatible type "type[Float64]"
