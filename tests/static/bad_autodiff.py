"""tn.grad and tn.vjp calls mypy and pyright must reject.

Not caught (run-time errors only): an inline list or dict literal of Int32 data or numbers,
``tn.grad(loss, [i32])``; mypy types a literal mixing ranks as list[object], so an overload
accepts list[object] and takes every inline literal with it.
"""

from typing import TypeVar

import typed_nn as tn
from typed_nn import CPU, GPU, Dim2, ElemTag, Float32, Float64, Int32, Tensor, ops

E = TypeVar("E", bound=ElemTag)

w = tn.zeros((4, 3), Float32, CPU)
b = tn.zeros((3,), Float32, CPU)
x = tn.zeros((4,), Float32, CPU)
i32 = tn.zeros((4, 3), Int32, CPU)
loss = ops.reduce_sum(x @ w + b)
y = x @ w
g = tn.ones((3,), Float32, CPU)

grad_of_matrix = tn.grad(w, w)  # E: "TensorLike[Float32, CPU, Dim0]"
grad_of_int = tn.grad(ops.reduce_sum(i32), w)  # E: Argument "y" to "grad" takes data whose element type is a "FloatTag"
grad_of_number = tn.grad(1.0, w)  # E: "float"
grad_wrt_int = tn.grad(loss, i32)  # E: Int32
grad_wrt_int_pair = tn.grad(loss, (w, i32))  # E: "tuple[Tensor[Float32, CPU, Dim2], Tensor[Int32, CPU, Dim2]]"
grad_wrt_int_long = tn.grad(loss, (w, b, w, b, w, b, w, i32))  # E: Tensor[Int32, CPU, Dim2]]"
int_list: list[Tensor[Int32, CPU, Dim2]] = [i32]
grad_wrt_int_list = tn.grad(loss, int_list)  # E: Int32
int_dict = {"i": i32}
grad_wrt_int_dict = tn.grad(loss, int_dict)  # E: Int32
grad_wrt_number = tn.grad(loss, 3.0)  # E: "float"
numbers = [1.0, 2.0]
grad_wrt_numbers = tn.grad(loss, numbers)  # E: "list[float]"
as_vector: tn.Vector[Float32, CPU] = tn.grad(loss, w)  # E: "TensorLike[Float32, CPU, Dim1]"
as_tensor: tn.Tensor[Float32, CPU, Dim2] = tn.grad(loss, w)  # E: "Tensor[Float32, CPU, Dim2]"
as_f64: tn.Matrix[Float64, CPU] = tn.grad(loss, w)  # E: "TensorLike[Float64, CPU, Dim2]"
g_w, g_b, g_x = tn.grad(loss, (w, b))  # E: expected
swapped: tuple[tn.Vector[Float32, CPU], tn.Matrix[Float32, CPU]] = tn.grad(loss, (w, b))  # E: TensorLike[Float32, CPU, Dim1]


def grad_by_any_elem(loss: tn.Scalar[Float32, CPU], w: tn.Matrix[E, CPU]) -> None:
    tn.grad(loss, w)  # E: "grad"


vjp_rank = tn.vjp(y, w, w)  # E: Arguments "ys" and "cotangents" to "vjp" take one rank type (D)
vjp_elem = tn.vjp(y, w, tn.ones((3,), Float64, CPU))  # E: "vjp"
vjp_device = tn.vjp(y, w, tn.ones((3,), Float32, GPU))  # E: Arguments "ys" and "cotangents" to "vjp" take one device type (Dv)
vjp_number = tn.vjp(y, w, 1.0)  # E: "float"
vjp_int = tn.vjp(i32, w, i32)  # E: Int32
vjp_wrt_int = tn.vjp(y, i32, g)  # E: Int32
vjp_pair_rank = tn.vjp((y, w), w, (g, g))  # E: R2
vjp_pair_single = tn.vjp((y, w), w, g)  # E: "Tensor[Float32, CPU, Dim1]"
vjp_pair_count = tn.vjp((y, w), w, (g, w, g))  # E: "tuple[Tensor[Float32, CPU, Dim1], Tensor[Float32, CPU, Dim2], Tensor[Float32, CPU, Dim1]]"
vjp_result: tn.Vector[Float32, CPU] = tn.vjp(y, w, g)  # E: "TensorLike[Float32, CPU, Dim1]"
