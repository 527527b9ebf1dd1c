"""Result types of tn.grad and tn.vjp: the structure of wrt, each gradient typed like its input.

Gradients are lazy expressions, so each is a TensorLike with its input's tags (never a Tensor,
never Any where the input's tags are known).
"""

from typing import Any, TypeVar, assert_type

import typed_nn as tn
from typed_nn import (
    CPU,
    GPU,
    DeviceTag,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Float32,
    Float64,
    FloatTag,
    Tensor,
    TensorLike,
    ops,
)

FE = TypeVar("FE", bound=FloatTag)
Dv = TypeVar("Dv", bound=DeviceTag)

w: Tensor[Float32, CPU, Dim2] = tn.zeros((4, 3), Float32, CPU)
b: Tensor[Float32, CPU, Dim1] = tn.zeros((3,), Float32, CPU)
s = tn.scalar(0.5, Float32, CPU)
t3 = tn.zeros((2, 4, 3), Float32, CPU)
t4 = tn.zeros((5, 2, 4, 3), Float64, CPU)
wg = tn.zeros((4, 3), Float32, GPU)
x = tn.zeros((4,), Float32, CPU)
loss = ops.reduce_sum(x @ w + b) * s
assert_type(loss, tn.Scalar[Float32, CPU])

# The case, in both spellings of the same type.
assert_type(tn.grad(loss, (w, b)), tuple[TensorLike[Float32, CPU, Dim2], TensorLike[Float32, CPU, Dim1]])
assert_type(tn.grad(loss, (w, b)), tuple[tn.Matrix[Float32, CPU], tn.Vector[Float32, CPU]])
g_w, g_b = tn.grad(loss, (w, b))
assert_type(g_w, tn.Matrix[Float32, CPU])
assert_type(g_b, tn.Vector[Float32, CPU])
step: tn.Matrix[Float32, CPU] = w - 0.1 * g_w

# One input gives one gradient; a lazy node or a Float64 or GPU input keeps its own tags.
assert_type(tn.grad(loss, w), TensorLike[Float32, CPU, Dim2])
assert_type(tn.grad(loss, s), TensorLike[Float32, CPU, Dim0])
assert_type(tn.grad(loss, x @ w), TensorLike[Float32, CPU, Dim1])
assert_type(tn.grad(loss, t4), TensorLike[Float64, CPU, Dim4])
assert_type(tn.grad(loss, wg), TensorLike[Float32, GPU, Dim2])
assert_type(tn.grad(ops.reduce_mean(t4), t4), TensorLike[Float64, CPU, Dim4])

# Tuples of 1 to 6 entries of mixed ranks, elements and devices: typed position by position.
assert_type(tn.grad(loss, (w,)), tuple[TensorLike[Float32, CPU, Dim2]])
assert_type(
    tn.grad(loss, (w, b, s)),
    tuple[TensorLike[Float32, CPU, Dim2], TensorLike[Float32, CPU, Dim1], TensorLike[Float32, CPU, Dim0]],
)
assert_type(
    tn.grad(loss, (w, b, s, t3, t4, wg)),
    tuple[
        TensorLike[Float32, CPU, Dim2],
        TensorLike[Float32, CPU, Dim1],
        TensorLike[Float32, CPU, Dim0],
        TensorLike[Float32, CPU, Dim3],
        TensorLike[Float64, CPU, Dim4],
        TensorLike[Float32, GPU, Dim2],
    ],
)
# Longer tuples: homogeneous ones keep the entry type; mixed ones type each gradient Any.
assert_type(tn.grad(loss, (w, w, w, w, w, w, w, w)), tuple[TensorLike[Float32, CPU, Dim2], ...])
assert_type(tn.grad(loss, (w, b, s, t3, t4, wg, w)), tuple[TensorLike[Any, Any, Any], ...])


def grads_of_many(loss: tn.Scalar[Float32, CPU], many: tuple[tn.Vector[Float32, CPU], ...]) -> None:
    assert_type(tn.grad(loss, many), tuple[TensorLike[Float32, CPU, Dim1], ...])


# A list gives a list, a dict a dict with the same keys.
assert_type(tn.grad(loss, [w, w]), list[TensorLike[Float32, CPU, Dim2]])
weights: list[Tensor[Float32, CPU, Dim2]] = [w, w]
assert_type(tn.grad(loss, weights), list[TensorLike[Float32, CPU, Dim2]])
assert_type(tn.grad(loss, {"w": w, "v": w}), dict[str, TensorLike[Float32, CPU, Dim2]])
named: dict[str, Tensor[Float32, CPU, Dim2]] = {"w": w}
assert_type(tn.grad(loss, named), dict[str, tn.Matrix[Float32, CPU]])
by_index = {0: b, 1: b}
assert_type(tn.grad(loss, by_index), dict[int, TensorLike[Float32, CPU, Dim1]])

# Containers mixing ranks are accepted. A list or dict literal assigned to a variable is
# list[object] / dict[str, object] to mypy (list[Unknown] / dict[str, Unknown] to pyright):
# its entries' tags are lost, so each gradient is TensorLike[Any, Any, Any].
params = {"w": w, "b": b}
assert_type(tn.grad(loss, params), dict[str, TensorLike[Any, Any, Any]])
param_list = [w, b]
assert_type(tn.grad(loss, param_list), list[TensorLike[Any, Any, Any]])
# A declared container (or a long tuple) of one element and device keeps those two tags.
declared: list[tn.Matrix[Float32, CPU] | tn.Vector[Float32, CPU]] = [w, b]
assert_type(tn.grad(loss, declared), list[TensorLike[Float32, CPU, Any]])
declared_dict: dict[str, tn.Matrix[Float64, CPU] | tn.Scalar[Float64, CPU]] = {}
assert_type(tn.grad(loss, declared_dict), dict[str, TensorLike[Float64, CPU, Any]])
assert_type(tn.grad(loss, (w, b, s, t3, w, b, s)), tuple[TensorLike[Float32, CPU, Any], ...])
# Mixed elements or devices: only "float data" is known.
mixed: list[tn.Matrix[Float32, CPU] | tn.Vector[Float64, GPU]] = []
assert_type(tn.grad(loss, mixed), list[TensorLike[Any, Any, Any]])
assert_type(tn.grad(loss, [w, b, t4]), list[TensorLike[Any, Any, Any]])
# An inline mixed literal: pyright infers dict[str, TensorLike[Float32, CPU, Any]], mypy
# dict[str, TensorLike[Any, Any, Any]] (it picks the overload from the literal's own type).
inline = tn.grad(loss, {"w": w, "b": b})


def generic_mixed(loss: tn.Scalar[FE, Dv], ws: list[tn.Matrix[FE, Dv] | tn.Vector[FE, Dv]]) -> None:
    assert_type(tn.grad(loss, ws), list[TensorLike[FE, Dv, Any]])


# Gradients are expressions: they can be differentiated again (a Hessian-vector product).
hvp = tn.grad(ops.reduce_sum(tn.grad(loss, w) * w), w)
assert_type(hvp, TensorLike[Float32, CPU, Dim2])


# Code generic over the float element and the device.
def sgd_step(
    loss: tn.Scalar[FE, Dv], w: tn.Matrix[FE, Dv], b: tn.Vector[FE, Dv]
) -> tuple[tn.Matrix[FE, Dv], tn.Vector[FE, Dv]]:
    g_w, g_b = tn.grad(loss, (w, b))
    return w - g_w, b - g_b


def grads_of(loss: tn.Scalar[FE, Dv], params: dict[str, tn.Matrix[FE, Dv]]) -> dict[str, tn.Matrix[FE, Dv]]:
    return tn.grad(loss, params)


def grad_of(loss: tn.Scalar[Float32, Dv], w: tn.Matrix[FE, CPU]) -> tn.Matrix[FE, CPU]:
    return tn.grad(loss, w)


assert_type(sgd_step(loss, w, b), tuple[tn.Matrix[Float32, CPU], tn.Vector[Float32, CPU]])

# vjp: a cotangent of exactly the output's type pulls back to wrt's structure.
y = x @ w
g = tn.ones((3,), Float32, CPU)
assert_type(tn.vjp(y, (x, w), g), tuple[TensorLike[Float32, CPU, Dim1], TensorLike[Float32, CPU, Dim2]])
assert_type(tn.vjp(y, w, y), TensorLike[Float32, CPU, Dim2])
assert_type(tn.vjp(y, [w, w], g), list[TensorLike[Float32, CPU, Dim2]])
assert_type(tn.vjp(y, {"w": w}, g), dict[str, TensorLike[Float32, CPU, Dim2]])
assert_type(tn.vjp(y, params, g), dict[str, TensorLike[Any, Any, Any]])
assert_type(tn.vjp(loss, w, s), TensorLike[Float32, CPU, Dim2])
# A tuple of outputs with a tuple of cotangents, one each, of mixed ranks.
y2 = w * 2.0
c2 = tn.ones((4, 3), Float32, CPU)
assert_type(tn.vjp((y, y2), w, (g, c2)), TensorLike[Float32, CPU, Dim2])
assert_type(tn.vjp((y, y2), (x, w), (g, c2)), tuple[TensorLike[Float32, CPU, Dim1], TensorLike[Float32, CPU, Dim2]])
assert_type(tn.vjp((y, y2, loss), [w], (g, c2, s)), list[TensorLike[Float32, CPU, Dim2]])
assert_type(tn.vjp((y, y, y, y), b, (g, g, g, g)), TensorLike[Float32, CPU, Dim1])
assert_type(tn.vjp((y, y2, loss, y), b, (g, c2, s, g)), TensorLike[Float32, CPU, Dim1])


def pullback(y: tn.Vector[FE, Dv], w: tn.Matrix[FE, Dv], g: tn.Vector[FE, Dv]) -> tn.Matrix[FE, Dv]:
    return tn.vjp(y, w, g)
