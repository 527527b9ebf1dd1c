"""Valid code around the holes closed in issue 34 (static typing, round 3): it must stay free
of errors."""

from typing import TypeVar, assert_type

import numpy as np
import numpy.typing as npt

import typed_nn as tn
from typed_nn import CPU, Dim1, Dim2, Float32, Int64, TensorLike, ops
from typed_nn.layers import MLP
from typed_nn.model import clip_by_global_norm
from typed_nn.onnx import export
from typed_nn.tags import FE, D, DimTag, Dv
from typed_nn.train.classifier import build_mlp

m = tn.zeros((4, 3), Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)

# keep_dim=True keeps a concrete rank (an overload per rank, ahead of the generic one).
mu: tn.Matrix[Float32, CPU] = ops.reduce_mean(m, 1, keep_dim=True)
assert_type(ops.reduce_sum(t3, (1, 2), keep_dim=True), TensorLike[Float32, CPU, tn.Dim3])


def keep_generic(x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    return ops.reduce_max(x, 0, keep_dim=True)


assert_type(ops.log_grad(tn.zeros((3,), Float32, CPU), m), TensorLike[Float32, CPU, Dim2])
assert_type(ops.exp_grad(m[0], m[0]), TensorLike[Float32, CPU, Dim1])
D_in = TypeVar("D_in", bound=DimTag)


# The *_grad ops in code generic over two ranks (the gradient's and the input's).
def exp_grad_generic(g: TensorLike[FE, Dv, D_in], x: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    return ops.exp_grad(g, x)


assert_type(exp_grad_generic(m, t3), TensorLike[Float32, CPU, tn.Dim3])
# Operands of unknown rank, as in a custom vjp (AnyTensor): no overload is reported.
unknown_rank = tn.zeros(tuple(m.shape), Float32, CPU)
ops.exp_grad(m[0], unknown_rank)
ops.sigmoid_grad(unknown_rank, m)
# The price of the catch-all: a gradient of more dims than x type-checks (the generic helper's
# call cannot be told from it); building the node raises ShapeError.
assert_type(ops.exp_grad(t3, m), TensorLike[Float32, CPU, Dim2])


# Tags where Any was: onnx.export's examples, build_mlp, Tensor.numpy, clip_by_global_norm.
def scale_rows(x: tn.Matrix[Float32, CPU], by: float = 2.0) -> TensorLike[Float32, CPU, Dim2]:
    return x * by


def export_examples() -> None:
    export(scale_rows, (m,), "rows.onnx")
    export(scale_rows, (m, 3.0), "rows.onnx")
    export(ops.relu, (m,), "relu.onnx")


net, net_params = build_mlp([3, 4, 2])
assert_type(net, MLP[Float32, CPU])
assert_type(m.numpy(), npt.NDArray[np.float32])
assert_type(tn.zeros((2,), Int64, CPU).numpy(), npt.NDArray[np.int64])
assert_type(ops.exp(m).numpy(), npt.NDArray[np.float32])
assert_type(clip_by_global_norm([m, m], 1.0), list[TensorLike[Float32, CPU, Dim2]])
