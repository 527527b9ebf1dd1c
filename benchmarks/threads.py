"""Two CPU threads against one: typed_nn's speed-up beside PyTorch's, in one process.

Three workloads, each timed with 1 and 2 threads for both libraries, alternating (1, 2, 1, 2,
... in every repeat, so a burst of load hits every variant), wall-clock minimums:

* the large MLP (``large_mlp.py``: 784-512-256-10, ReLU, cross-entropy, SGD 0.01, batch 128):
  a compiled training step over 32 batches (typed_nn: ``typed_nn.nn`` modules, ``optim.SGD``,
  ``tn.compile``; PyTorch: ``nn.Linear`` layers, ``torch.optim.SGD``, eager);
* the pre-LN transformer block's training step (``transformer_block.py``, the layer block);
* the element-wise chain ``tanh(a*x + b) * sigmoid(c*x) + 0.5*x`` on 1e7 float32 (``chain.py``).

typed_nn's threads: ``tn.set_num_threads(n)`` (numpy's OpenBLAS and the split of large fused
element-wise regions); PyTorch's: ``torch.set_num_threads(n)``. Run:
``python benchmarks/threads.py [--repeats 5]``; ``--sweep`` times typed_nn's chain split at growing
sizes instead (where ``typed_nn.threads.SPLIT_MIN`` comes from). The machine is shared: print ``uptime`` beside
the figures and compare only within one run.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from chain import A, B, C, N
from digits_mlp import initial_weights, preset_module_mlp, versions
from large_mlp import LR, WIDTHS, random_data
from transformer_block import TypedBlock, batch, torch_block, weights

import typed_nn as tn
from typed_nn import ops, optim

BATCH, STEPS = 128, 32
Fn = Callable[[], Any]


def mlp_epochs(torch: Any) -> tuple[Fn, Fn]:
    """(typed_nn, PyTorch): STEPS training steps of the large MLP on the same batches."""
    data = random_data(BATCH * STEPS, 0)
    ws = initial_weights(WIDTHS, 0)
    net = preset_module_mlp(WIDTHS, ws)
    sgd = optim.SGD(net, LR)

    @tn.compile
    def step(x: tn.Matrix[tn.Float32, tn.CPU], y: tn.Vector[tn.Int64, tn.CPU]) -> Any:
        loss = ops.cross_entropy(net(x), y)
        sgd.step(tn.grad(loss, net))
        return loss

    cut = range(0, len(data), BATCH)
    xs = [tn.tensor(data.features[i : i + BATCH], tn.Float32, tn.CPU, tn.Dim2) for i in cut]
    ys = [tn.tensor(data.labels[i : i + BATCH], tn.Int64, tn.CPU, tn.Dim1) for i in cut]
    layers = [torch.nn.Linear(a, b) for a, b in itertools.pairwise(WIDTHS)]
    with torch.no_grad():
        for i, layer in enumerate(layers):
            layer.weight.copy_(torch.from_numpy(ws[2 * i].T.copy()))
            layer.bias.copy_(torch.from_numpy(ws[2 * i + 1]))
    model = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(), layers[2])
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    txs = [torch.from_numpy(data.features[i : i + BATCH]) for i in cut]
    tys = [torch.from_numpy(data.labels[i : i + BATCH]) for i in cut]

    def ours() -> Any:
        return [step(x, y) for x, y in zip(xs, ys, strict=True)][-1].numpy()

    def theirs() -> Any:
        for x, y in zip(txs, tys, strict=True):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return loss

    return ours, theirs


def block_steps(torch: Any) -> tuple[Fn, Fn]:
    """(typed_nn, PyTorch): one training step of the transformer block."""
    w = weights()
    xs, ts = batch()
    x, target = (tn.tensor(a, tn.Float32, tn.CPU, tn.Dim3) for a in (xs, ts))
    ours, theirs = TypedBlock(w, tn.CPU), torch_block(torch, w, "cpu")
    tx, tt = torch.from_numpy(xs), torch.from_numpy(ts)
    return (lambda: ours.step(x, target)), (lambda: theirs(tx, tt))


def chains(torch: Any) -> tuple[Fn, Fn]:
    """(typed_nn, PyTorch eager): the element-wise chain on 1e7 float32."""
    x = np.random.default_rng(0).normal(size=N).astype(np.float32)
    xt, tx = tn.tensor(x, tn.Float32, tn.CPU, tn.Dim1), torch.from_numpy(x)

    def ours() -> Any:
        return tn.evaluate(ops.tanh(A * xt + B) * ops.sigmoid(C * xt) + 0.5 * xt)

    def theirs() -> Any:
        return torch.tanh(A * tx + B) * torch.sigmoid(C * tx) + 0.5 * tx

    return ours, theirs


def split_sweep(repeats: int) -> None:
    """typed_nn's chain at growing sizes, split at 2 threads (``SPLIT_MIN`` lowered to 0) vs 1:
    where a split starts to pay (``typed_nn.threads.SPLIT_MIN``)."""
    from typed_nn import threads

    saved = threads.SPLIT_MIN
    threads.SPLIT_MIN = 0
    print(f"{'elements':>10} {'1 thread':>10} {'2 threads':>10} {'speed-up':>9}")
    for size in (1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 23):
        x = tn.tensor(np.linspace(-3, 3, size, dtype=np.float32), tn.Float32, tn.CPU, tn.Dim1)
        inner = max(1, (1 << 22) // size)
        best = {1: float("inf"), 2: float("inf")}
        for r in range(repeats + 1):
            for n in (1, 2):
                tn.set_num_threads(n)
                start = time.perf_counter()
                for _ in range(inner):
                    tn.evaluate(ops.tanh(A * x + B) * ops.sigmoid(C * x) + 0.5 * x)
                if r:
                    best[n] = min(best[n], (time.perf_counter() - start) / inner)
        print(f"{size:>10} {best[1] * 1e3:8.3f}ms {best[2] * 1e3:8.3f}ms {best[1] / best[2]:8.2f}x")
    threads.SPLIT_MIN = saved


PARK = 0.3
"""Seconds of rest before each timing: the threads the other library just used (OpenBLAS's
workers, PyTorch's OpenMP team) spin for a while after their last task, and a spinning
thread takes the second core from whichever library runs next."""


def race_threads(torch: Any, fns: tuple[Fn, Fn], repeats: int) -> dict[tuple[str, int], float]:
    """Minimum wall time of each library at 1 and 2 threads, alternated within each repeat;
    the library not being timed is set to one thread and its threads left to park."""
    best: dict[tuple[str, int], float] = {}
    for r in range(repeats + 1):  # the first round warms up (plans, pools, thread start)
        for n in (1, 2):
            for name, fn in zip(("typed_nn", "PyTorch"), fns, strict=True):
                ours = name == "typed_nn"
                tn.set_num_threads(n if ours else 1)
                torch.set_num_threads(1 if ours else n)
                time.sleep(PARK)
                start = time.perf_counter()
                fn()
                took = time.perf_counter() - start
                if r:
                    best[name, n] = min(best.get((name, n), took), took)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sweep", action="store_true", help="only the split-size sweep")
    args = parser.parse_args()
    print(f"{versions()}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
    if args.sweep:
        split_sweep(args.repeats)
        return
    import torch

    workloads = {
        f"large MLP, {STEPS} steps": mlp_epochs,
        "transformer block step": block_steps,
        "chain 1e7": chains,
    }
    print(f"{'workload':<24} {'library':<9} {'1 thread':>10} {'2 threads':>10} {'speed-up':>9}")
    for label, make in workloads.items():
        best = race_threads(torch, make(torch), args.repeats)
        for name in ("typed_nn", "PyTorch"):
            one, two = best[name, 1], best[name, 2]
            print(f"{label:<24} {name:<9} {one * 1e3:8.2f}ms {two * 1e3:8.2f}ms {one / two:8.2f}x")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
