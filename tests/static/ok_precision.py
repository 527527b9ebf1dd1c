"""Mixed precision in modules: the compute type is the modules' third type parameter."""

from __future__ import annotations

from typing import Generic, TypeVar, assert_type

import typed_nn as tn
from typed_nn import CPU, BFloat16, Dim2, Float16, Float32, nn, ops, optim
from typed_nn.model import LossScaler
from typed_nn.policies import ComputeIn, PComputeElemIs, PMixedBFloat16, PMixedFloat16

CE = TypeVar("CE", bound=tn.FloatTag)

fc = nn.Linear(4, 3, precision=PMixedBFloat16)
assert_type(fc, nn.Linear[Float32, CPU, BFloat16])
assert_type(fc.weight, tn.TensorLike[Float32, CPU, Dim2])  # the master weights
assert_type(nn.Linear(4, 3), nn.Linear[Float32, CPU])  # computes in its element type
assert_type(nn.Linear(4, 3), nn.Linear[Float32, CPU, Float32])
assert_type(PComputeElemIs(Float16), ComputeIn[Float16])
assert_type(
    nn.Linear(4, 3, elem=tn.Float64, device=CPU, precision=PMixedFloat16),
    nn.Linear[tn.Float64, CPU, Float16],
)
x = tn.zeros((5, 4), BFloat16, CPU)
assert_type(fc(x), tn.Matrix[BFloat16, CPU])
assert_type(nn.LayerNorm(4, precision=PMixedBFloat16)(x), tn.Matrix[BFloat16, CPU])
ids = tn.zeros((2, 7), tn.Int64, CPU)
assert_type(nn.Embedding(10, 4, precision=PMixedFloat16)(ids), tn.Tensor3[Float16, CPU])
seq = tn.zeros((2, 7, 8), BFloat16, CPU)
mha = nn.MultiHeadAttention(8, 2, causal=True, precision=PMixedBFloat16)
assert_type(mha(seq), tn.Tensor3[BFloat16, CPU])
img = tn.zeros((1, 2, 5, 5), Float16, CPU)
assert_type(nn.Conv2d(2, 3, 3, precision=PMixedFloat16)(img), tn.Tensor4[Float16, CPU])


class MLP(nn.Module, Generic[CE]):
    def __init__(self, precision: ComputeIn[CE]) -> None:
        self.fc1 = nn.Linear(4, 8, precision=precision)
        self.fc2 = nn.Linear(8, 3, precision=precision)

    def __call__(self, x: tn.Matrix[CE, tn.CPU]) -> tn.Matrix[CE, tn.CPU]:
        return self.fc2(ops.relu(self.fc1(x)))


model = MLP(PMixedBFloat16)
assert_type(model, MLP[BFloat16])
assert_type(model(x), tn.Matrix[BFloat16, CPU])
loss = ops.reduce_mean(ops.square(ops.astype(model(x), Float32)))
grads = tn.grad(loss, model)
assert_type(grads, MLP[BFloat16])
assert_type(grads.fc1.weight, tn.TensorLike[Float32, CPU, Dim2])  # Float32 gradients
opt = optim.Adam(model, lr=1e-3)
assert_type(opt, optim.Adam[MLP[BFloat16]])
opt.step(grads)
scaler = LossScaler(CPU)
scaler.step(opt, tn.grad(scaler.scale_loss(loss), model))
assert_type(MLP(PComputeElemIs(Float32)), MLP[Float32])
