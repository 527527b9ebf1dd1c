"""Eager inference: a model's forward built and evaluated at every call, as an inference or
sampling loop is written, beside PyTorch eager under ``no_grad`` and numpy.

    MLP 64-128-10 (nn.Linear, relu, nn.Linear, softmax) on a batch of 1 sample
    the same MLP on a batch of 32
    the pre-LN transformer block of transformer_block.py (batch 16, seq 64, d 64, 4 heads)

typed_nn: ``tn.evaluate(ops.softmax(model(x)))`` per call, two ways: "eager" builds and
evaluates the graph at every call (the plan is analysed once per structure and found again
by the plan cache); "inference(compiled=True)" runs it inside ``tn.inference(compiled=True)``,
where the module's repeated call runs as a compiled program (``typed_nn/evaluate/served.py``)
and only the softmax outside the model is built and evaluated. PyTorch: the same modules
under ``torch.no_grad()``; numpy: the same arithmetic written by hand (the floor: no graph at
all). Targets (issue 35): batch-1 MLP <= 1.0x PyTorch eager, the block <= 1.2x.

2026-11-28 (load 0.9): batch 1 27.5 us vs 21.3 us (1.29x; it was 31.4 us, 1.42x, the day
before); the block 0.92x. Later that day, products as ``np.dot`` (no ufunc dispatch): 1.16x
against the base's 1.26x in one ``compare_commits`` run (RESULTS.md ⁸). What remains at batch 1: the softmax's own evaluation outside the
model, ~14 us of which its kernel is ~4 us (a node over leaf tensors is now collected without
the walk, 2.8 -> 1.6 us; a plan-cache hit is one lookup; build 2 us, run and results ~3 us),
and the model's served compiled call, ~10 us (its kernels ~6 us, guard and binding ~2 us, the
block's check of the call's signature ~1 us). (Once a process
opened a compiled block, every module call checks whether one is open: ~0.7 us a call, which
the "eager" rows here pay.)

Where the batch-1 forward's time goes (2026-11-27, the 2-vCPU AMD EPYC, one thread, minimum of
45 interleaved runs of 200 calls; 8 nodes over 5 leaves), before and after issue 35's changes:

==============================================  ========  ========  ===========================
                                                  before     after  note
==============================================  ========  ========  ===========================
full eager forward, ``tn.evaluate(...)``          77.5 us   55.8 us  PyTorch no_grad ~21-25 us,
                                                                     numpy ~10 us
build: ``model(x)`` and the softmax               37.5 us   23.8 us  each op's ``infer``: its
                                                                     validation was most of a
                                                                     node (permute's order,
                                                                     dot's checks, broadcasting)
evaluate a prebuilt expression                    31.6 us   29.0 us
  collect (the hash-consed walk, 13 slots)        11.0 us   11.2 us  0.85 us a slot
  plan-cache lookup (structure key, hit)           2.3 us    2.2 us  no analysis: one per
                                                                     structure
  the program (its kernels)                       11.2 us   11.3 us  ~ the numpy floor
  results cached on the nodes, wrapped             2.5 us    2.5 us
  registration, handles, the plan's run            ~5 us     ~2 us  a lone value runs directly
==============================================  ========  ========  ===========================

So an eager loop still pays about 80 % of its time in Python around the kernels: the
repeated structure is not analysed again (the plan cache), but it is built and walked again
at every call (~3 us a node together). ``tn.compile`` of the loop's body removes both (a
compiled call binds its arrays and runs the program: ``programs.py`` Q1); an automatic replay
of repeated eager structures is not built.

Run: ``python benchmarks/eager_inference.py [--repeats 200]`` (one thread, minimum of
interleaved repeats, each the mean of ``inner`` calls).
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy / torch are imported)
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from _common import header, race, ratio, setup_threads

setup_threads()

import numpy as np
from _anchors import optional

import typed_nn as tn
from typed_nn import nn, ops

Array = Any


def typed_mlp(weights: list[Array]) -> nn.Sequential:
    """The catalogue's modules, with ``weights`` (W1 (128, 64), b1, W2 (10, 128), b2)."""
    tn.manual_seed(0)
    fc1, fc2 = nn.Linear(64, 128), nn.Linear(128, 10)
    for layer, w, b in ((fc1, weights[0], weights[1]), (fc2, weights[2], weights[3])):
        weight, bias = layer.weight, layer.bias
        assert isinstance(weight, tn.Tensor)
        assert isinstance(bias, tn.Tensor)
        weight.assign(tn.tensor(w, tn.Float32, tn.CPU, tn.Dim2))
        bias.assign(tn.tensor(b, tn.Float32, tn.CPU, tn.Dim1))
    return nn.Sequential(fc1, nn.relu, fc2)


def runners(batch: int, weights: list[Array]) -> dict[str, Callable[[], Any]]:
    """Each implementation's forward of one batch (softmax probabilities)."""
    rng = np.random.default_rng(batch)
    x_np = rng.normal(size=(batch, 64)).astype(np.float32)
    w1, b1, w2, b2 = weights
    w1t, w2t = w1.T.copy(), w2.T.copy()

    def numpy_forward() -> Array:
        z = np.maximum(x_np @ w1t + b1, 0.0) @ w2t + b2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    model = typed_mlp(weights)
    x = tn.tensor(x_np, tn.Float32, tn.CPU, tn.Dim2)

    def typed_forward() -> Array:
        return tn.evaluate(ops.softmax(model(x))).array

    def typed_inference() -> Array:
        with tn.inference(compiled=True):
            return tn.evaluate(ops.softmax(model(x))).array

    found = {
        "numpy (hand)": numpy_forward,
        "typed_nn eager": typed_forward,
        "typed_nn inference(compiled=True)": typed_inference,
    }
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        net = torch.nn.Sequential(
            torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
        )
        with torch.no_grad():
            for i, layer in enumerate((net[0], net[2])):
                layer.weight.copy_(torch.from_numpy(weights[2 * i]))
                layer.bias.copy_(torch.from_numpy(weights[2 * i + 1]))
        xt = torch.from_numpy(x_np)

        def torch_forward() -> Array:
            with torch.no_grad():
                return torch.softmax(net(xt), dim=1)

        found["torch eager (no_grad)"] = torch_forward
    want = numpy_forward()
    for name, fn in found.items():
        got = fn()
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6, err_msg=name)
    return found


def block_runners() -> dict[str, Callable[[], Any]]:
    """The pre-LN transformer block's forward (``transformer_block.py``: batch 16, seq 64,
    d 64, 4 heads, causal), each implementation's."""
    import transformer_block as tb

    w = tb.weights()
    x_np, _ = tb.batch()
    block = tb.ModuleBlock(w, tn.CPU)
    x = tn.tensor(x_np, tn.Float32, tn.CPU, tn.Dim3)

    def typed_forward() -> Array:
        return tn.evaluate(block(x)).array

    def typed_inference() -> Array:
        with tn.inference(compiled=True):
            return tn.evaluate(block(x)).array

    found = {"typed_nn eager": typed_forward, "typed_nn inference(compiled=True)": typed_inference}
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        net, xt = tb.torch_block_module(torch, w, "cpu"), torch.from_numpy(x_np)

        def torch_forward() -> Array:
            with torch.no_grad():
                return net(xt)

        found["torch eager (no_grad)"] = torch_forward
    want = typed_forward()
    for name, fn in found.items():
        np.testing.assert_allclose(np.asarray(fn()), want, rtol=1e-4, atol=1e-5, err_msg=name)
    return found


def report(times: dict[str, float], target: str) -> None:
    """The ratios of one race: typed_nn's inference and eager rows against the anchors."""
    ours, lazy = times["typed_nn inference(compiled=True)"], times["typed_nn eager"]
    if "numpy (hand)" in times:
        ratio("typed_nn inference / numpy (hand)", ours, times["numpy (hand)"])
    if "torch eager (no_grad)" in times:
        torch_time = times["torch eager (no_grad)"]
        ratio(f"typed_nn inference / torch no_grad (target <= {target})", ours, torch_time)
        ratio("typed_nn eager (graph kept) / torch no_grad", lazy, torch_time)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    weights = [
        (rng.normal(size=(128, 64)) / 8).astype(np.float32),
        (rng.normal(size=128) / 8).astype(np.float32),
        (rng.normal(size=(10, 128)) / 11).astype(np.float32),
        (rng.normal(size=10) / 11).astype(np.float32),
    ]
    for batch in (1, 32):
        header(f"MLP 64-128-10 eager forward (softmax), batch {batch}")
        report(race(runners(batch, weights), repeats=args.repeats, inner=20), "1.0")
    header("pre-LN transformer block eager forward (batch 16, seq 64, d 64, 4 heads)")
    report(race(block_runners(), repeats=max(args.repeats // 10, 5), inner=3), "1.2")


if __name__ == "__main__":
    main()
