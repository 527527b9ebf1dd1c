"""Holes closed in issue 34 (static typing, round 3): mypy and pyright must reject each marked
line."""

import typed_nn as tn
from typed_nn import CPU, Float32, Float64, ops

m = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
v = tn.zeros((3,), Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)

# keep_dim=True keeps the operand's rank: never the unknown-rank catch-all.
mu: tn.Vector[Float32, CPU] = ops.reduce_mean(m, 1, keep_dim=True)  # E: Incompatible types in assignment
sd: tn.Matrix[Float32, CPU] = ops.reduce_sum(t3, (1, 2), keep_dim=True)  # E: Incompatible types in assignment
mx: tn.Vector[Float32, CPU] = ops.reduce_max(m, first=1, keep_dim=True)  # E: Incompatible types in assignment

# The *_grad ops: a gradient of higher rank than x, or of another element.
ops.exp_grad(t3, v)  # E: the gradient g has more dims than x
ops.exp_grad(v, m64)  # E: Cannot infer value of type parameter "FE"
