"""Modules, tn.grad over a module and typed_nn.optim: what the docs teach type-checks."""

from __future__ import annotations

from typing import assert_type

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.model import clip_by_global_norm, global_norm


class MLP(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        self.fc1 = nn.Linear(d_in, 32)
        self.fc2 = nn.Linear(32, d_out)

    def __call__(self, x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
        return self.fc2(ops.relu(self.fc1(x)))


model = MLP(4, 3)
assert_type(model.fc1, nn.Linear[tn.Float32, tn.CPU])
assert_type(nn.Linear(4, 3, elem=tn.Float64), nn.Linear[tn.Float64, tn.CPU])
x = tn.zeros((5, 4), tn.Float32, tn.CPU)
loss = ops.reduce_mean(ops.square(model(x)))
grads = tn.grad(loss, model)
assert_type(grads, MLP)
assert_type(grads.fc1.weight, tn.Matrix[tn.Float32, tn.CPU])
opt = optim.Adam(model, lr=1e-3)
assert_type(opt, optim.Adam[MLP])
opt.step(grads)
clipped = clip_by_global_norm(grads, 1.0)
assert_type(clipped, MLP)
assert_type(clip_by_global_norm(tn.grad(loss, model.fc1), 1.0), nn.Linear[tn.Float32, tn.CPU])
opt.step(clip_by_global_norm(tn.grad(loss, model), max_norm=1.0))
assert_type(global_norm(grads).shape, tuple[int, ...])
w, b = model.fc1.weight, model.fc1.bias
assert_type(clip_by_global_norm([w, w], 1.0), list[tn.Matrix[tn.Float32, tn.CPU]])
seq3 = tn.zeros((2, 5, 4), tn.Float32, tn.CPU)
assert_type(model.fc1(seq3), tn.Tensor3[tn.Float32, tn.CPU])
half = nn.tree_map(lambda p: p * 0.5, model)
assert_type(half, MLP)
emb = nn.Embedding(10, 4)
ids = tn.zeros((2, 7), tn.Int64, tn.CPU)
assert_type(emb(ids), tn.Tensor3[tn.Float32, tn.CPU])
assert_type(nn.LSTM(3, 5), nn.LSTM[tn.Float32, tn.CPU])
assert_type(nn.GRU(3, 5, elem=tn.Float64, device=tn.CPU), nn.GRU[tn.Float64, tn.CPU])
norm = nn.LayerNorm(4)
assert_type(norm(seq3), tn.Tensor3[tn.Float32, tn.CPU])
for name, p in nn.named_parameters(model):
    print(name, p.shape)
# A bias is typed as a tensor, as PyTorch types it (None at run time with bias=False).
assert_type(grads.fc1.bias, tn.Vector[tn.Float32, tn.CPU])
assert_type(ops.reduce_sum(grads.fc1.bias), tn.Scalar[tn.Float32, tn.CPU])
assert_type(nn.Conv2d(1, 4, 3).bias.shape, tuple[int, ...])
unbiased = nn.Linear(4, 3, bias=False)
if unbiased.bias is not None:
    print(unbiased.bias.shape)


@tn.compile
def step(x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Scalar[tn.Float32, tn.CPU]:
    loss = ops.reduce_mean(ops.square(model(x)))
    opt.step(tn.grad(loss, model))
    return loss

# BatchNorm keeps the rank of (N, C), (N, C, L), (N, C, H, W) and (N, C, D, H, W) data
sequence = tn.zeros((2, 3, 7), tn.Float32, tn.CPU)
assert_type(nn.BatchNorm(3)(sequence), tn.TensorLike[tn.Float32, tn.CPU, tn.Dim3])
volume = tn.zeros((2, 3, 2, 2, 2), tn.Float32, tn.CPU)
assert_type(nn.BatchNorm(3)(volume), tn.TensorLike[tn.Float32, tn.CPU, tn.Dim5])
