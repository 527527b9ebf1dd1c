"""Valid code around the holes closed in issue 34 (static typing, round 3): it must stay free
of errors."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim1, Dim2, Float32, TensorLike, ops
from typed_nn.tags import D2, FE, D, Dv

m = tn.zeros((4, 3), Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)

# keep_dim=True keeps a concrete rank (an overload per rank, ahead of the generic one).
mu: tn.Matrix[Float32, CPU] = ops.reduce_mean(m, 1, keep_dim=True)
assert_type(ops.reduce_sum(t3, (1, 2), keep_dim=True), TensorLike[Float32, CPU, tn.Dim3])


def keep_generic(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    return ops.reduce_max(x, 0, keep_dim=True)


# A gradient helper generic over both ranks (their relation is not expressible in typing).
def exp_backward(g: TensorLike[FE, Dv, D2], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    return ops.exp_grad(g, x)


assert_type(exp_backward(ops.reduce_sum(m, 0), m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.log_grad(tn.zeros((3,), Float32, CPU), m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.exp_grad(m[0], m[0]), TensorLike[Float32, CPU, Dim1])
