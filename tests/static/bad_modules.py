"""Misuses of modules and optim that the checkers catch."""

from __future__ import annotations

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.model import clip_by_global_norm


class A(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 3)


class B(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 3)


a, b = A(), B()
x = tn.zeros((5, 4), tn.Float32, tn.CPU)
loss = ops.reduce_sum(a.fc(x))
opt = optim.SGD(a, lr=0.1)
opt.step(tn.grad(loss, b))  # E: B
opt.step(clip_by_global_norm(tn.grad(loss, b), 1.0))  # E: B
x64 = tn.zeros((5, 4), tn.Float64, tn.CPU)
a.fc(x64)  # E: Float64
w: tn.Vector[tn.Float32, tn.CPU] = tn.grad(loss, a).fc.weight  # E: Dim2
nn.BatchNorm(4)(tn.zeros((4,), tn.Float32, tn.CPU))  # E: Dim1
