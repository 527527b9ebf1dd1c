"""Mixed-precision modules: 16-bit and 32-bit data do not mix without a cast."""

from __future__ import annotations

import typed_nn as tn
from typed_nn import CPU, BFloat16, Float16, Float32, nn, optim
from typed_nn.model import LossScaler
from typed_nn.policies import PComputeElemIs, PMixedBFloat16, PMixedFloat16, PParamElemIs

fc = nn.Linear(4, 3, precision=PMixedBFloat16)
x32 = tn.zeros((5, 4), Float32, CPU)
fc(x32)  # E: Float32
x16 = tn.zeros((5, 4), Float16, CPU)
fc(x16)  # E: Float16
plain = nn.Linear(4, 3)
plain(tn.zeros((5, 4), BFloat16, CPU))  # E: BFloat16
y: tn.Matrix[Float32, CPU] = fc(tn.zeros((5, 4), BFloat16, CPU))  # E: BFloat16
full: nn.Linear[Float32, CPU] = fc  # E: Linear
nn.Linear(4, 3, precision=PParamElemIs(Float32))  # E: precision
nn.Linear(4, 3, precision=PComputeElemIs(tn.Int32))  # E: Int32
other = nn.Linear(4, 3, precision=PMixedFloat16)
opt = optim.SGD(fc, lr=0.1)
LossScaler(CPU).step(opt, tn.grad(tn.ops.reduce_sum(x32), other))  # E: step
