"""Result types of factories, operators and lazy ops, as mypy and pyright see them."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim0, Dim1, Dim2, Dim3, Float32, Int32, TensorLike, ops

m = tn.zeros((4, 3), Float32, CPU)
assert_type(m, tn.Tensor[Float32, CPU, Dim2])
v = tn.zeros((3,), Float32, CPU)
assert_type(v, tn.Tensor[Float32, CPU, Dim1])
s = tn.scalar(2.0, Float32, CPU)
assert_type(s, tn.Tensor[Float32, CPU, Dim0])
t3 = tn.zeros((2, 4, 3), Float32, CPU)
i = tn.zeros((3,), Int32, CPU)

assert_type(m + m, TensorLike[Float32, CPU, Dim2])
assert_type(m + v, TensorLike[Float32, CPU, Dim2])
assert_type(v + m, TensorLike[Float32, CPU, Dim2])
assert_type(t3 * m, TensorLike[Float32, CPU, Dim3])
assert_type(s - m, TensorLike[Float32, CPU, Dim2])
assert_type(m / 2.0, TensorLike[Float32, CPU, Dim2])
assert_type(1 - m, TensorLike[Float32, CPU, Dim2])
assert_type(i + 1, TensorLike[Int32, CPU, Dim1])
assert_type(-m, TensorLike[Float32, CPU, Dim2])
assert_type((m + m) + m, TensorLike[Float32, CPU, Dim2])
assert_type(m @ v, TensorLike[Float32, CPU, Dim1])
assert_type(v @ v, TensorLike[Float32, CPU, Dim0])
assert_type(m @ tn.zeros((3, 5), Float32, CPU), TensorLike[Float32, CPU, Dim2])
# numpy's matmul: batch dims broadcast (rank = max), a vector's promoted dim is removed
b3 = tn.zeros((2, 3, 4), Float32, CPU)
assert_type(t3 @ b3, TensorLike[Float32, CPU, Dim3])
assert_type(v @ b3, TensorLike[Float32, CPU, Dim2])
assert_type(m @ b3, TensorLike[Float32, CPU, Dim3])
assert_type(ops.matmul(t3, v), TensorLike[Float32, CPU, Dim2])
assert_type(ops.matmul(m, m), TensorLike[Float32, CPU, Dim2])
assert_type(m[0], tn.Tensor[Float32, CPU, Dim1])
assert_type((m + 1)[0], TensorLike[Float32, CPU, Dim1])
assert_type(ops.exp(m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.dot(t3, m, 1), TensorLike[Float32, CPU, Dim3])
assert_type(ops.dot(m, m, k=2), TensorLike[Float32, CPU, Dim0])
assert_type(ops.exp_grad(v, m), TensorLike[Float32, CPU, Dim2])
assert_type(tn.evaluate(m + m), tn.Tensor[Float32, CPU, Dim2])
assert_type((m + m).eval_register().data(), tn.Tensor[Float32, CPU, Dim2])

matrix: tn.Matrix[Float32, CPU] = m * 2.0
assert_type(tn.ZeroTensor((2, 2), Float32, CPU), tn.ZeroTensor[Float32, CPU, Dim2])
assert_type(tn.ConstantTensor(s, (3,)), tn.ConstantTensor[Float32, CPU, Dim1])
assert_type(tn.ScalableTensor([v, v]), tn.ScalableTensor[Float32, CPU, Dim2])
assert_type(tn.make_dynamic(m), tn.DynamicData[Float32, CPU, Dim2])
