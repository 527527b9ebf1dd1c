"""Valid programs generic over element, device and rank: no false positives (issue 18, item 2).

Code written once for every float element (``FE``), every device (``Dv``) or every rank (``D``)
must type-check wherever the same code with concrete tags does.
"""

from typing import Any, TypeVar, assert_type

import typed_nn as tn
from typed_nn import CPU, Dim0, Dim1, Dim2, Dim3, Dim4, Float32, Float64, Int32, TensorLike, ops
from typed_nn.tags import FE, D, Dv, E

FE2 = TypeVar("FE2", bound=tn.FloatTag)


# --- float-only arithmetic on a generic float element -----------------------------------------


def scaled(x: TensorLike[FE, Dv, D], y: TensorLike[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    assert_type(x * 0.5, TensorLike[FE, Dv, D])
    assert_type(0.5 * x, TensorLike[FE, Dv, D])
    assert_type(x / y, TensorLike[FE, Dv, D])
    assert_type(x / 2.0, TensorLike[FE, Dv, D])
    assert_type(1.0 / x, TensorLike[FE, Dv, D])
    assert_type(x - 1.5 + 2.5, TensorLike[FE, Dv, D])
    assert_type(1.5 - x, TensorLike[FE, Dv, D])
    assert_type(x / 2, TensorLike[FE, Dv, D])
    return (x * 0.5 + y) / (y + 1e-8)


def normalized(m: tn.Matrix[FE, Dv], v: tn.Vector[FE, Dv], s: tn.Scalar[FE, Dv]) -> tn.Matrix[FE, Dv]:
    assert_type(m / v, TensorLike[FE, Dv, Dim2])
    assert_type(v / m, TensorLike[FE, Dv, Dim2])
    assert_type(m / s, TensorLike[FE, Dv, Dim2])
    assert_type(s / m, TensorLike[FE, Dv, Dim2])
    return (m - v) / (ops.sqrt(m * m + 1e-5) * 2.0)


def float_tensor(w: tn.Tensor[FE, Dv, D]) -> TensorLike[FE, Dv, D]:
    # a Tensor (a subclass of TensorLike) with a generic float element
    assert_type(w * 0.5, TensorLike[FE, Dv, D])
    assert_type(w / w, TensorLike[FE, Dv, D])
    return 0.9 * w + 0.1 * (w / 3.0)


def any_element(x: TensorLike[E, Dv, D], m: tn.Matrix[E, Dv]) -> TensorLike[E, Dv, Dim2]:
    assert_type(x + x, TensorLike[E, Dv, D])
    assert_type(x * 2, TensorLike[E, Dv, D])
    assert_type(2 - x, TensorLike[E, Dv, D])
    assert_type(m @ m, TensorLike[E, Dv, Dim2])
    return m + m[0]


def two_floats(a: TensorLike[FE, Dv, D], b: TensorLike[FE2, Dv, D]) -> TensorLike[FE, Dv, D]:
    return a * 0.5 + ops.astype(b, a.elem)


m32 = tn.zeros((4, 3), Float32, CPU)
v64 = tn.zeros((3,), Float64, CPU)
assert_type(scaled(m32, m32), TensorLike[Float32, CPU, Dim2])
assert_type(normalized(m32 + 0.0, m32[0], tn.scalar(2.0, Float32, CPU)), TensorLike[Float32, CPU, Dim2])
assert_type(float_tensor(v64), TensorLike[Float64, CPU, Dim1])
assert_type(any_element(tn.zeros((3,), Int32, CPU), tn.zeros((3, 3), Int32, CPU)), TensorLike[Int32, CPU, Dim2])
assert_type(m32 / m32[0], TensorLike[Float32, CPU, Dim2])
assert_type(tn.ZeroTensor((4, 3), Float32, CPU) / 2.0, TensorLike[Float32, CPU, Dim2])


# --- dot over every valid k ----------------------------------------------------------------------

images4 = tn.zeros((8, 3, 16, 16), Float32, CPU)
w4 = tn.zeros((3, 16, 16, 10), Float32, CPU)
assert_type(ops.dot(images4, w4, k=3), TensorLike[Float32, CPU, Dim2])
assert_type(ops.dot(images4, images4, k=4), TensorLike[Float32, CPU, Dim0])
video = tn.zeros((2, 3, 4, 5, 6), Float32, CPU)
assert_type(ops.dot(video, tn.zeros((4, 5, 6, 7), Float32, CPU), k=3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.dot(video, video, k=5), TensorLike[Float32, CPU, Dim0])
t6 = tn.zeros((1, 2, 1, 2, 1, 2), Float32, CPU)
assert_type(ops.dot(t6, t6, k=6), TensorLike[Float32, CPU, Dim0])
assert_type(ops.dot(t6, tn.zeros((1, 2, 1, 2, 1, 2), Float32, CPU), k=4), TensorLike[Float32, CPU, Dim4])
assert_type(video @ tn.zeros((6,), Float32, CPU), TensorLike[Float32, CPU, Dim4])
assert_type(video[0], tn.Tensor[Float32, CPU, Dim4])


# --- where / interpolate with three ranks --------------------------------------------------------

mask = tn.zeros((3,), Int32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)
s32 = tn.scalar(0.5, Float32, CPU)
assert_type(ops.where(mask, m32, t3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.where(t3, s32, m32[0]), TensorLike[Float32, CPU, Dim3])
assert_type(ops.where(tn.scalar(1, Int32, CPU), m32, m32[0]), TensorLike[Float32, CPU, Dim2])
assert_type(ops.interpolate(t3, m32, m32[0]), TensorLike[Float32, CPU, Dim3])
assert_type(ops.interpolate(m32[0], t3, s32), TensorLike[Float32, CPU, Dim3])
assert_type(ops.interpolate(s32, m32[0], images4[0]), TensorLike[Float32, CPU, Dim3])
assert_type(ops.maximum(m32[0], t3), TensorLike[Float32, CPU, Dim3])
assert_type(ops.maximum(video, m32), TensorLike[Float32, CPU, tn.Dim5])


def gated(cond: TensorLike[E, Dv, D], a: TensorLike[FE, Dv, D], b: TensorLike[FE, Dv, Dim0]) -> TensorLike[FE, Dv, D]:
    return ops.interpolate(ops.where(cond, a, b), a, b)


# --- shapes of unknown length: an unknown rank, still usable -------------------------------------


def zeros_like(weight: TensorLike[FE, Dv, D]) -> tn.Tensor[FE, Dv, Any]:
    z = tn.zeros(weight.shape, weight.elem, weight.device)
    assert_type(z, tn.Tensor[FE, Dv, Any])
    z.assign(weight * 0.5)
    return z


def momentum(weight: tn.Tensor[FE, Dv, D], grad: TensorLike[FE, Dv, D]) -> None:
    velocity = tn.zeros(weight.shape, weight.elem, weight.device)
    velocity.assign(velocity * 0.9 + grad)
    weight.assign(weight - 0.1 * velocity)
    ones = tn.ones(weight.shape, weight.elem, weight.device)
    weight.assign(weight * ones)
    weight.assign(tn.ZeroTensor(weight.shape, weight.elem, weight.device) + weight)


shape: tuple[int, ...] = m32.shape
unknown = tn.zeros(shape, Float32, CPU)
assert_type(unknown, tn.Tensor[Float32, CPU, Any])
m32.assign(unknown)
as_matrix: tn.Matrix[Float32, CPU] = unknown + m32
assert_type(tn.ConstantTensor(s32, m32.shape), tn.ConstantTensor[Float32, CPU, Any])
assert_type(ops.reshape(t3, shape), TensorLike[Float32, CPU, Any])
assert_type(ops.tile(m32, t3.shape), TensorLike[Float32, CPU, Any])
assert_type(tn.tensor(m32.numpy(), Float32, CPU, m32.dim), tn.Tensor[Float32, CPU, Dim2])


# --- reductions over a number of leading dims known at run time ----------------------------------


def batch_mean(x: TensorLike[FE, Dv, D], n: int, keep: bool) -> None:
    assert_type(ops.reduce_mean(x, first=n), TensorLike[FE, Dv, Any])
    assert_type(ops.reduce_sum(x, first=n), TensorLike[FE, Dv, Any])
    assert_type(ops.reduce_max(x, first=n), TensorLike[FE, Dv, Any])
    assert_type(ops.reduce_sum(x, 0), TensorLike[FE, Dv, Any])
    assert_type(ops.reduce_sum(x, first=n, keep_dim=keep), TensorLike[FE, Dv, Any])
    assert_type(ops.reduce_sum(x, keep_dim=keep), TensorLike[FE, Dv, Any])


n_batch = len(t3.shape) - 2  # an int known at run time
assert_type(ops.reduce_mean(t3, first=n_batch), TensorLike[Float32, CPU, Any])
assert_type(ops.reduce_sum(images4, first=2), TensorLike[Float32, CPU, Dim2])
assert_type(ops.reduce_sum(t6, (0, 2, 4)), TensorLike[Float32, CPU, Dim3])
assert_type(ops.reduce_max(video, first=5), TensorLike[Float32, CPU, Dim0])
assert_type(ops.argmax(t6), TensorLike[tn.Int64, CPU, tn.Dim5])
assert_type(ops.stack([video, video]), TensorLike[Float32, CPU, tn.Dim6])
assert_type(tn.ScalableTensor([video]), tn.ScalableTensor[Float32, CPU, tn.Dim6])
_ = (Dim3, Dim4)
