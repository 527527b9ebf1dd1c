"""First errors the typed_nn mypy plugin words (error code ``tag-mismatch``): where mypy would
say 'Cannot infer value of type parameter' or 'Value of type variable ... cannot be', the
message names the arguments, both types, the differing tags and a fix."""

from typing import Any, assert_type

import typed_nn as tn
from typed_nn import CPU, GPU, Dim2, Float32, Float64, Int64, TensorLike, ops
from typed_nn.tags import FE, D, Dv

m32 = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
gpu = tn.zeros((4, 3), Float32, GPU)
v32 = tn.zeros((3,), Float32, CPU)
ids = tn.zeros((4,), Int64, CPU)


def helper(a: TensorLike[FE, Dv, D], b: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    return a + b


helper(m32, m64)  # E: Arguments "a" and "b" to "helper" take one element type (FE), got "Tensor[Float32, CPU, Dim2]" and "Tensor[Float64, CPU, Dim2]" ("Float32" vs "Float64"); convert one with ops.astype
helper(m32, gpu)  # E: Arguments "a" and "b" to "helper" take one device type (Dv), got "Tensor[Float32, CPU, Dim2]" and "Tensor[Float32, GPU, Dim2]" ("CPU" vs "GPU"); move one with ops.to_device
helper(m32, v32)  # E: take one rank type (D), got "Tensor[Float32, CPU, Dim2]" and "Tensor[Float32, CPU, Dim1]" ("Dim2" vs "Dim1"); reshape one
helper(b=m64, a=m32)  # E: ("Float32" vs "Float64"); convert one with ops.astype  [tag-mismatch]
ops.matmul(m32, m64)  # E: Arguments "a" and "b" to "matmul" take one element type (E)
ops.softmax(ids)  # E: Argument "x" to "softmax" takes data whose element type is a "FloatTag" (FE), got "Tensor[Int64, CPU, Dim1]"; convert it with ops.astype
# After the report, the call is typed from the first argument: no second error follows.
mixed = helper(m32, m64)  # E: convert one with ops.astype
helper(m32, tn.zeros((3,), Float64, CPU))  # E: ("Dim2" vs "Dim1"); reshape one
assert_type(mixed, TensorLike[Float32, CPU, Dim2])


def generic_caller(x: TensorLike[FE, Dv, D], y: TensorLike[Any, Dv, D]) -> None:
    helper(x, m32)  # E: ("FE" vs "Float32")


class Model:
    def blend(self, a: TensorLike[FE, Dv, D], b: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
        return a + b


Model().blend(m32, m64)  # E: Arguments "a" and "b" to "blend" of "Model" take one element type
