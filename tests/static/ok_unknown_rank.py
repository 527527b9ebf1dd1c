"""Valid code on data of unknown rank (``tn.zeros(w.shape, ...)``: ``Tensor[E, Dv, Any]``):
``@`` and ``x[i]`` must give ``TensorLike[E, Dv, Any]``, not a made-up rank, in every checker
(the unknown-rank overloads of scripts/gen_operators.py)."""

from typing import Any, assert_type

import typed_nn as tn
from typed_nn import CPU, Float32, TensorLike, ops

w = tn.zeros((3, 4), Float32, CPU)
c = tn.zeros((2, 4, 3), Float32, CPU)
v = tn.zeros((4,), Float32, CPU)
z = tn.zeros(w.shape, Float32, CPU)  # (3, 4) at run time, of unknown rank statically

# <unknown rank> @ <any rank>: a Matrix, a Tensor3, ... at run time; any rank statically.
prod: tn.Matrix[Float32, CPU] = z @ ops.transpose(w)
prod3: tn.Tensor3[Float32, CPU] = z @ c
prod1: tn.Vector[Float32, CPU] = z @ v
assert_type(z @ ops.transpose(w), TensorLike[Float32, CPU, Any])
assert_type(z @ c, TensorLike[Float32, CPU, Any])
square: tn.Matrix[Float32, CPU] = z @ z
# <any rank> @ <unknown rank>: mypy gives TensorLike[Any, Any, Any] (it weighs every overload
# an argument containing Any matches), the others TensorLike[Float32, CPU, Any].
prod_r: tn.Matrix[Float32, CPU] = w @ ops.reshape(z, (4, 3))
prod_r3: tn.Tensor3[Float32, CPU] = c @ ops.transpose(z)
prod_rv: tn.Vector[Float32, CPU] = v @ z

# x[i] of unknown rank: a Vector here, any rank statically.
row: tn.Vector[Float32, CPU] = z[0]
assert_type(z[0], tn.Tensor[Float32, CPU, Any])
lazy: TensorLike[Float32, CPU, Any] = z * 2.0
row_lazy: tn.Vector[Float32, CPU] = lazy[0]
assert_type(lazy[0], TensorLike[Float32, CPU, Any])

# Concrete ranks keep their overloads.
assert_type(w @ v, TensorLike[Float32, CPU, tn.Dim1])
assert_type(v @ v, TensorLike[Float32, CPU, tn.Dim0])
assert_type(c @ ops.transpose(w), TensorLike[Float32, CPU, tn.Dim3])
assert_type(w[0], tn.Tensor[Float32, CPU, tn.Dim1])
assert_type(c[0], tn.Tensor[Float32, CPU, tn.Dim2])
