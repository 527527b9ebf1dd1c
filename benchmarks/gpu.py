"""typed_nn on the GPU beside PyTorch CUDA eager (issue 10's targets).

Run: ``python benchmarks/gpu.py`` on a machine with an NVIDIA GPU, cupy
(``pip install -e '.[gpu]'``) and, for the anchor, a CUDA build of torch. Without cupy or a
GPU it says so and exits 0. Prints, side by side:

* the MShadow update ``w = -eta * (g + lam * w)`` and the chain
  ``tanh(a*x + b) * sigmoid(c*x) + 0.5*x`` at 1e7 and 1e8 float32 elements: time, fused
  kernels launched per evaluation (target: one per region) and achieved GB/s against the
  device's peak (target >= 70%);
* host overhead per ``evaluate`` of an n-node chain on tiny tensors (built afresh each
  time, as a training step does), fitted as ``a + b * n`` (target a <= 25 us, b <= 0.2 us);
* one training step of a 784-512-256-10 ReLU MLP with biases (softmax + NLL, SGD) at batch
  1024, typed_nn's as ``fit`` runs it (target <= 1.0x PyTorch eager).

``--quick`` runs every part at tiny sizes without the torch anchor: a check that the script
works (the test suite runs it on the cupy emulator), not a measurement.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import clear_plan_cache
from typed_nn.model import SGD
from typed_nn.train.classifier import build_mlp
from typed_nn.train.step import TrainStep

Untyped = Any


def gpu_reason() -> str | None:
    """Why this machine cannot run the benchmark, or None."""
    try:
        import cupy
    except ImportError:
        return "cupy is not installed (pip install -e '.[gpu]' or '.[gpu-cuda13]')"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:  # the CUDA driver's own error types
        return f"no usable CUDA device ({type(exc).__name__}: {exc})"
    return None


def torch_cuda() -> Any:
    """torch when it is installed with a usable CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def best(fn: Callable[[], object], sync: Callable[[], object], repeats: int = 10) -> float:
    """Minimum seconds of ``fn`` over ``repeats`` synchronised runs (after one warm-up)."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bandwidth(cupy: Any, elements: int) -> tuple[str, float, float]:
    """(device name, theoretical GB/s, measured copy GB/s of ``elements`` float32)."""
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    theory = 2 * props["memoryClockRate"] * 1e3 * props["memoryBusWidth"] / 8 / 1e9
    a = cupy.empty(elements, np.float32)
    b = cupy.empty_like(a)
    sync = cupy.cuda.Device().synchronize
    t = best(lambda: cupy.copyto(b, a), sync)
    return name, theory, 2 * a.nbytes / t / 1e9


def fused_kernels(fn: Callable[[], object]) -> int:
    """Fused kernels in ``fn``'s evaluation plan: analysed afresh, the plan looks each of its
    regions' kernels up once."""
    from typed_nn.backends.cupy.region import kernel_cache

    cache = kernel_cache()
    clear_plan_cache()
    before = cache.hits + cache.misses
    fn()
    return cache.hits + cache.misses - before


def elementwise(cupy: Any, torch: Any, n: int, peak: float) -> None:
    sync = cupy.cuda.Device().synchronize
    rng = np.random.default_rng(0)
    host = rng.standard_normal(n, dtype=np.float32)
    w: Untyped = tn.tensor(host, tn.Float32, tn.GPU, tn.Dim1)
    g: Untyped = tn.tensor(host[::-1].copy(), tn.Float32, tn.GPU, tn.Dim1)
    x, b = g, tn.tensor(rng.standard_normal(n, dtype=np.float32), tn.Float32, tn.GPU, tn.Dim1)
    out: Untyped = tn.zeros((n,), tn.Float32, tn.GPU)

    def update() -> None:
        w.assign(-0.01 * (g + 0.001 * w))

    def chain() -> None:
        out.assign(ops.tanh(0.7 * x + b) * ops.sigmoid(1.3 * x) + 0.5 * x)

    for label, fn, bytes_moved in (("update", update, 3 * 4 * n), ("chain", chain, 3 * 4 * n)):
        launches = fused_kernels(fn)
        t = best(fn, sync)
        gbs = bytes_moved / t / 1e9
        print(
            f"  typed_nn {label:<7} n={n:.0e}: {t * 1e3:8.3f} ms  {gbs:7.1f} GB/s "
            f"({100 * gbs / peak:5.1f}% of copy peak)  fused kernels/eval: {launches}"
        )
    if torch is None:
        print("  torch: no CUDA build here; no anchor")
        return
    tw = torch.from_numpy(host).cuda()
    tg = torch.from_numpy(host[::-1].copy()).cuda()
    tb = torch.randn(n, device="cuda")
    tsync = torch.cuda.synchronize
    t_up = best(lambda: tw.copy_(-0.01 * (tg + 0.001 * tw)), tsync)
    t_ch = best(lambda: torch.tanh(0.7 * tg + tb) * torch.sigmoid(1.3 * tg) + 0.5 * tg, tsync)
    print(f"  torch    update  n={n:.0e}: {t_up * 1e3:8.3f} ms")
    print(f"  torch    chain   n={n:.0e}: {t_ch * 1e3:8.3f} ms")


def host_overhead(cupy: Any, loops: int) -> None:
    sync = cupy.cuda.Device().synchronize
    x: Untyped = tn.tensor(np.ones((4, 4), np.float32), tn.Float32, tn.GPU, tn.Dim2)
    sizes = (1, 10, 40)
    per_eval = []
    for n in sizes:

        def run(n: int = n, loops: int = loops) -> None:
            for _ in range(loops):  # built afresh: a node caches its value once evaluated
                expr: Untyped = x
                for i in range(n):
                    expr = ops.tanh(expr) if i % 2 else expr * 0.5
                tn.evaluate(expr)

        per_eval.append(best(run, sync, repeats=5) / loops)
        print(f"  build + evaluate, {n:3d}-node chain: {per_eval[-1] * 1e6:8.2f} us")
    slope, intercept = np.polyfit(sizes, per_eval, 1)
    print(f"  fit: {intercept * 1e6:.2f} us + {slope * 1e6:.3f} us/node (target 25 + 0.2)")


def mlp_step(cupy: Any, torch: Any, batch: int) -> None:
    """One SGD step of a 784-512-256-10 ReLU MLP with biases, softmax + NLL: typed_nn's
    training step (``fit``'s, compiled once, one Step per batch) beside torch eager."""
    sync = cupy.cuda.Device().synchronize
    rng = np.random.default_rng(0)
    widths = [784, 512, 256, 10]
    xs = rng.standard_normal((batch, widths[0]), dtype=np.float32)
    labels = rng.integers(0, widths[-1], batch)
    onehot = np.eye(widths[-1], dtype=np.float32)[labels]
    net, params = build_mlp(widths, seed=0, device=tn.GPU)
    sgd = SGD(0.01)
    graph = TrainStep(net, sgd, widths[0], widths[-1], tn.GPU)
    features, targets = cupy.asarray(xs), cupy.asarray(onehot)
    rows = cupy.arange(batch)

    def step() -> None:
        graph.run_rows(features, targets, rows)

    t_tn = best(step, sync)
    print(f"  typed_nn MLP step (batch {batch}): {t_tn * 1e3:8.3f} ms")
    if torch is None:
        print("  torch: no CUDA build here; no anchor")
        return
    tp = [torch.tensor(w.numpy(), device="cuda", requires_grad=True) for _, w in params.items()]
    tx = torch.tensor(xs, device="cuda")
    ty = torch.tensor(labels, device="cuda")

    def torch_step() -> None:
        b1, w1, b2, w2, b3, w3 = tp  # the buffer's order: fc1/bias, fc1/weight, ...
        h = torch.relu(tx @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        loss = torch.nn.functional.cross_entropy(h @ w3 + b3, ty)
        for p in tp:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in tp:
                p -= 0.01 * p.grad

    t_torch = best(torch_step, torch.cuda.synchronize)
    print(f"  torch    MLP step (batch {batch}): {t_torch * 1e3:8.3f} ms")
    print(f"  ratio typed_nn / torch: {t_tn / t_torch:.2f}x (target <= 1.0)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes: checks that the script runs"
    )
    quick = parser.parse_args(argv).quick
    reason = gpu_reason()
    if reason is not None:
        print(f"benchmarks/gpu.py: nothing to measure here: {reason}.")
        return 0
    cupy = tn.devices.array_module(tn.GPU)
    torch = None if quick else torch_cuda()
    name, theory, copy_peak = peak_bandwidth(cupy, 1 << 12 if quick else 1 << 28)
    print(f"device: {name}; memory bandwidth {theory:.0f} GB/s theoretical, {copy_peak:.0f} copy")
    print(f"torch: {torch.__version__ if torch is not None else 'no CUDA build'}")
    print("\n== element-wise (MShadow update, chain)")
    for n in (10**3,) if quick else (10**7, 10**8):
        elementwise(cupy, torch, n, copy_peak)
    print("\n== host overhead per evaluate")
    host_overhead(cupy, loops=2 if quick else 200)
    print("\n== 784-512-256-10 MLP training step")
    mlp_step(cupy, torch, batch=8 if quick else 1024)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
