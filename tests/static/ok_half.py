"""16-bit float tags: every op that takes Float32 takes Float16 and BFloat16, with their type."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, BFloat16, Dim0, Dim1, Dim2, Float16, Float32, TensorLike, ops
from typed_nn.policies import PMixedBFloat16, PolicyContainer, PrecisionPolicy, policy_select
from typed_nn.tags import FE

h = tn.zeros((4, 3), Float16, CPU)
assert_type(h, tn.Tensor[Float16, CPU, Dim2])
b = tn.tensor([[1.0, 2.0, 3.0]], BFloat16, CPU, Dim2)
assert_type(b, tn.Tensor[BFloat16, CPU, Dim2])
assert_type(tn.scalar(1.0, BFloat16, CPU), tn.Tensor[BFloat16, CPU, Dim0])
assert_type(tn.ones((3,), Float16, CPU), tn.Tensor[Float16, CPU, Dim1])

assert_type(h * 2.0 + 1, TensorLike[Float16, CPU, Dim2])
assert_type(b / b, TensorLike[BFloat16, CPU, Dim2])
assert_type(h @ tn.zeros((3, 5), Float16, CPU), TensorLike[Float16, CPU, Dim2])
assert_type(ops.tanh(b), TensorLike[BFloat16, CPU, Dim2])
assert_type(ops.softmax(h), TensorLike[Float16, CPU, Dim2])
assert_type(ops.reduce_sum(b), TensorLike[BFloat16, CPU, Dim0])

# casts are the explicit way between 16 and 32 bits, both ways
wide = ops.astype(h, Float32)
assert_type(wide, TensorLike[Float32, CPU, Dim2])
assert_type(ops.astype(wide, BFloat16), TensorLike[BFloat16, CPU, Dim2])
assert_type(ops.astype(h, Float32) + tn.zeros((4, 3), Float32, CPU), TensorLike[Float32, CPU, Dim2])

loss = ops.reduce_mean(ops.square(b))
assert_type(tn.grad(loss, b), TensorLike[BFloat16, CPU, Dim2])


def layer(x: TensorLike[FE, CPU, Dim2], w: TensorLike[FE, CPU, Dim2]) -> TensorLike[FE, CPU, Dim2]:
    return ops.relu(x @ w) * 0.5


assert_type(layer(b, tn.zeros((3, 3), BFloat16, CPU)), TensorLike[BFloat16, CPU, Dim2])


mixed = policy_select(PrecisionPolicy, PolicyContainer(PMixedBFloat16))
assert_type(mixed, PrecisionPolicy)
assert_type(mixed.computes_in, type[tn.FloatTag])
