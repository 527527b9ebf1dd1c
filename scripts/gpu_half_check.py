"""Device check of 16-bit data on the real cupy (issue 36): Float16 ops against the CPU, a
column sum of 1e5 rows, the loss scaler in a compiled GPU step, BFloat16 refused.

Run on a GPU machine from the checkout: ``PYTHONPATH=$PWD python3 scripts/gpu_half_check.py``.
The emulated-cupy test (tests/test_half_precision.py) covers the same ops on every machine.
"""

from typing import Any

import numpy as np

import typed_nn as tn
from typed_nn import CPU, GPU, Dim2, Float16, Float32, ops
from typed_nn.model import SGD, LossScaler

rng = np.random.default_rng(0)
x0 = rng.normal(size=(64, 3000)).astype(np.float16)
w0 = (rng.normal(size=(3000, 10)) / 50).astype(np.float16)
cx, cw = (tn.tensor(v, Float16, CPU, Dim2) for v in (x0, w0))
gx, gw = (tn.evaluate(ops.to_device(v, GPU)) for v in (cx, cw))


def f(x: Any, w: Any) -> tuple[Any, ...]:
    return (
        ops.softmax(ops.tanh(x * 0.5) @ w),
        ops.reduce_sum(x, 0),
        ops.tanh(x * 0.7 + 1.0) * ops.sigmoid(x),
    )


for name, a, b in zip(("softmax(tanh@w)", "colsum", "chain"), f(cx, cw), f(gx, gw), strict=True):
    h = ops.to_device(b, CPU).numpy()
    d = np.abs(h.astype(np.float32) - a.numpy().astype(np.float32)).max()
    print(name, h.dtype, "max|gpu-cpu|", float(d))
ones = tn.ones((100000, 2), Float16, GPU)
print("quarters colsum", ops.to_device(ops.reduce_sum(ones * 0.25, 0), CPU).numpy())
w = tn.zeros((3000, 1), Float32, GPU)
opt = SGD(0.005)  # below 2 / the largest eigenvalue of 2 X^T X / 64 (about 120)
sc = LossScaler(GPU, init_scale=2.0**14)


@tn.compile
def step(
    x: tn.Matrix[Float16, GPU], y: tn.Matrix[Float16, GPU], n: tuple[float, ...]
) -> tn.Scalar[Float32, GPU]:
    err = ops.astype(x @ ops.astype(w, Float16) - y, Float32)
    loss = ops.reduce_mean(ops.square(err))
    (g,) = tn.grad(sc.scale_loss(loss), (w,))
    sc.apply(opt, [(w, g)], n)
    return loss


y = tn.evaluate(ops.to_device(tn.tensor(x0[:, :1], Float16, CPU, Dim2), GPU))
losses = []
for _ in range(30):
    losses.append(float(ops.to_device(step(gx, y, opt.numbers()), CPU).numpy()))
    opt.step_count += 1
scale = float(ops.to_device(sc.scale, CPU).numpy())
print("loss", losses[0], "->", losses[-1], "traces", step.traces, "scale", scale)
try:
    ops.to_device(tn.zeros((2,), tn.BFloat16, CPU), GPU)
except tn.ElemTypeError as e:
    print("bf16 refused:", str(e).splitlines()[0])
