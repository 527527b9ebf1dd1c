"""Data kinds as mypy and pyright see them: factories, lazy kinds, handles, aliases."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim0, Dim1, Dim2, Dim3, Dim4, Float32, Float64, Int64, TensorLike

m = tn.zeros((4, 3), Float32, CPU)
v = tn.zeros((3,), Float32, CPU)
s = tn.scalar(2.0, Float32, CPU)

assert_type(tn.zeros((), Float64, CPU), tn.Tensor[Float64, CPU, Dim0])
assert_type(tn.ones((1, 2, 3), Int64, CPU), tn.Tensor[Int64, CPU, Dim3])
assert_type(tn.ones((1, 2, 3, 4), Float32, CPU), tn.Tensor[Float32, CPU, Dim4])
assert_type(tn.tensor([[1.0]], Float64, CPU, Dim2), tn.Tensor[Float64, CPU, Dim2])
assert_type(tn.tensor([1, 2], Int64, CPU, Dim1, copy=False), tn.Tensor[Int64, CPU, Dim1])
assert_type(s.value(), float | int)
assert_type(m.assign(m * 2.0), tn.Tensor[Float32, CPU, Dim2])
assert_type(m[0][1], tn.Tensor[Float32, CPU, Dim0])
assert_type(m.shape, tuple[int, ...])
assert_type(m.rank, int)

assert_type(tn.ZeroTensor((), Float32, CPU), tn.ZeroTensor[Float32, CPU, Dim0])
assert_type(tn.ZeroTensor((1, 2, 3, 4), Float64, CPU), tn.ZeroTensor[Float64, CPU, Dim4])
assert_type(tn.ConstantTensor(s, ()), tn.ConstantTensor[Float32, CPU, Dim0])
assert_type(tn.ConstantTensor(s + s, (2, 2)), tn.ConstantTensor[Float32, CPU, Dim2])
assert_type(tn.BiasVector(5, 2, s), tn.BiasVector[Float32, CPU])
assert_type(tn.BiasVector(5, 2, s).scalar, TensorLike[Float32, CPU, Dim0])
assert_type(tn.ScalableTensor([s, s]), tn.ScalableTensor[Float32, CPU, Dim1])
assert_type(tn.ScalableTensor([m]), tn.ScalableTensor[Float32, CPU, Dim3])
assert_type(tn.ScalableTensor([tn.zeros((1, 1, 1), Float32, CPU)]), tn.ScalableTensor[Float32, CPU, Dim4])
empty: tn.ScalableTensor[Float32, CPU, Dim2] = tn.ScalableTensor()
empty.push_back(v)

d = tn.make_dynamic(m + m)
assert_type(d, tn.DynamicData[Float32, CPU, Dim2])
assert_type(tn.make_dynamic(d), tn.DynamicData[Float32, CPU, Dim2])
assert_type(d.try_cast(tn.ZeroTensor), tn.ZeroTensor[Float32, CPU, Dim2] | None)
nothing: tn.DynamicData[Float64, CPU, Dim1] = tn.DynamicData()
assert_type(nothing.is_empty(), bool)

matrix: tn.Matrix[Float32, CPU] = tn.ZeroTensor((2, 2), Float32, CPU)
vector: tn.Vector[Float32, CPU] = tn.BiasVector(3, 0, s)
scalar: tn.Scalar[Float32, CPU] = tn.ConstantTensor(s, ())
tensor3: tn.Tensor3[Float32, CPU] = tn.ScalableTensor([m, m])
tensor4: tn.Tensor4[Float32, CPU] = tn.make_dynamic(tn.zeros((1, 1, 1, 1), Float32, CPU))

h = (m + v).eval_register()
assert_type(h, tn.EvalHandle[Float32, CPU, Dim2])
assert_type(h.data(), tn.Tensor[Float32, CPU, Dim2])
assert_type(tn.evaluate(tn.ZeroTensor((3,), Float32, CPU)), tn.Tensor[Float32, CPU, Dim1])
assert_type(tn.evaluate(m * 2.0, out=m), tn.Tensor[Float32, CPU, Dim2])
assert_type(tn.data_category(m), int)
assert_type(tn.is_matrix(d), bool)
