"""Result types of the random draws: the rank from the shape, the element (Float32 / Int64 by
default) and the generator's device."""

from typing import Any, assert_type

import typed_nn as tn
from typed_nn import CPU, GPU, Dim0, Dim1, Dim2, Dim3, Float32, Float64, Int32, Int64, ops
from typed_nn import TensorLike as Lazy

gen = tn.Generator(0)
assert_type(gen, tn.Generator[CPU])
assert_type(gen.state, tn.Tensor[Int64, CPU, Dim1])
gpu = tn.Generator(0, GPU)
assert_type(gpu, tn.Generator[GPU])
assert_type(tn.default_generator(), tn.Generator[CPU])
assert_type(tn.default_generator(GPU), tn.Generator[GPU])

assert_type(ops.normal(gen, (4, 3)), Lazy[Float32, CPU, Dim2])
assert_type(ops.normal(gen, (4, 3), Float64, CPU, std=0.5), Lazy[Float64, CPU, Dim2])
assert_type(ops.normal(gpu, (2,)), Lazy[Float32, GPU, Dim1])
assert_type(ops.uniform(gen, (), low=-1.0, high=1.0), Lazy[Float32, CPU, Dim0])
assert_type(ops.bernoulli(gen, (2, 3, 4), 0.5), Lazy[Float32, CPU, Dim3])
assert_type(ops.bernoulli(gen, (5,), 0.1, Int64), Lazy[Int64, CPU, Dim1])
assert_type(ops.randint(gen, (8,), 0, 10), Lazy[Int64, CPU, Dim1])
assert_type(ops.randint(gpu, (2, 2), 0, 10, Int32, GPU), Lazy[Int32, GPU, Dim2])
assert_type(ops.permutation(gen, 10), Lazy[Int64, CPU, Dim1])


def reparameterise(
    mu: tn.Matrix[Float32, CPU], sigma: tn.Matrix[Float32, CPU]
) -> Lazy[Float32, CPU, Dim2]:
    n, d = mu.shape
    return mu + sigma * ops.normal(gen, (n, d))


# a shape of unknown length (x.shape) gives an unknown rank, as tn.zeros does
assert_type(ops.normal(gen, tn.zeros((4, 3), Float32, CPU).shape), Lazy[Float32, CPU, Any])


x: tn.Tensor[Float32, CPU, Dim2] = tn.zeros((4, 3), Float32, CPU)
noise = ops.normal(gen, (4, 3))
assert_type(x + noise, Lazy[Float32, CPU, Dim2])
tn.manual_seed(1)
