"""Holes closed in issue 34 (static typing, round 3): mypy and pyright must reject each marked
line."""

import numpy as np
import numpy.typing as npt

import typed_nn as tn
from typed_nn import CPU, Dim1, Dim2, Float32, Float64, TensorLike, ops
from typed_nn.layers import MLP
from typed_nn.model import clip_by_global_norm
from typed_nn.onnx import export
from typed_nn.train.classifier import build_mlp

m = tn.zeros((4, 3), Float32, CPU)
m64 = tn.zeros((4, 3), Float64, CPU)
v = tn.zeros((3,), Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)

# keep_dim=True keeps the operand's rank: never the unknown-rank catch-all.
mu: tn.Vector[Float32, CPU] = ops.reduce_mean(m, 1, keep_dim=True)  # E: Incompatible types in assignment
sd: tn.Matrix[Float32, CPU] = ops.reduce_sum(t3, (1, 2), keep_dim=True)  # E: Incompatible types in assignment
mx: tn.Vector[Float32, CPU] = ops.reduce_max(m, first=1, keep_dim=True)  # E: Incompatible types in assignment

# The *_grad ops: a gradient of another element (one of more dims than x is a ShapeError when
# the node is built: see ok_round3.py).
ops.exp_grad(v, m64)  # E: Cannot infer value of type parameter "FE"

# Tags where Any was: onnx.export's examples, build_mlp, Tensor.numpy, clip_by_global_norm.
def scale_rows(x: tn.Matrix[Float32, CPU], by: float = 2.0) -> TensorLike[Float32, CPU, Dim2]:
    return x * by


export(scale_rows, (m64,), "rows.onnx")  # E: "export"
export(scale_rows, (m, m), "rows.onnx")  # E: "export"
net64: MLP[Float64, CPU] = build_mlp([3, 4, 2])[0]  # E: Incompatible types in assignment
host64: npt.NDArray[np.float64] = m.numpy()  # E: Incompatible types in assignment
clipped: list[TensorLike[Float32, CPU, Dim1]] = clip_by_global_norm([m], 1.0)  # E: Incompatible types in assignment
