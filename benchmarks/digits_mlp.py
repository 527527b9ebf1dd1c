"""Digits MLP 64-128-10 (ReLU, softmax + NLL, SGD lr 0.1, 30 epochs): typed_nn vs numpy vs torch.

"typed_nn" is the net written with ``typed_nn.nn`` modules (``nn.Linear``, PyTorch's layouts)
and ``optim.SGD``, trained by ``fit``: the path users write, so the ratios are its.
"typed_nn layers" is MetaNN's composite ``MLP`` layer with ``typed_nn.model.SGD``, the
comparison row (the modules path should be no slower).

Run: ``python benchmarks/digits_mlp.py [--epochs 30] [--repeats 3]``. Single-threaded BLAS
(set below, before numpy / torch are imported). The implementations start from the
same weights and see the same mini-batches in the same order (the permutation of
``numpy.random.default_rng(seed)`` per epoch, as ``typed_nn.train.batches`` draws it), so
their accuracies should agree up to float32 rounding. Epoch time is the minimum over every
epoch of every repeat (training only; the test set is scored after the last epoch); the
repeats run round-robin, one of each implementation in turn.

Like with like: typed_nn's ``fit`` records each epoch's training loss and accuracy (the
mean NLL of every batch before its update, the hits of its argmax), which "numpy (hand)"
and torch do not compute; "numpy +metrics" is the hand-written loop with that same
bookkeeping, so both ratios are printed.
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy / torch are imported)
from __future__ import annotations

import itertools
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from _anchors import torch_fit
from _common import timed_fit

import typed_nn as tn
from typed_nn import nn, optim
from typed_nn.layers import MLP, ReLULayer, layer_init
from typed_nn.model import SGD, LoadBuffer, ParamInitializer
from typed_nn.tags import dim_of_rank
from typed_nn.train import Dataset, load_digits
from typed_nn.train import accuracy as tn_accuracy

Array = npt.NDArray[np.float32]
Weights = list[Array]  # W1 (64, 128), b1 (128,), W2 (128, 10), b2 (10,)
Result = tuple[float, float]  # (best epoch seconds, test accuracy)
LR = 0.1


def initial_weights(widths: list[int], seed: int) -> Weights:
    """MSRA-normal weights and zero biases, shared by every implementation."""
    rng = np.random.default_rng(seed)
    out: Weights = []
    for fan_in, fan_out in itertools.pairwise(widths):
        out.append(rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)).astype(np.float32))
        out.append(np.zeros(fan_out, np.float32))
    return out


def numpy_run(
    train: Dataset,
    test: Dataset,
    weights: Weights,
    epochs: int,
    batch: int,
    seed: int,
    metrics: bool = False,
) -> Result:
    """The hand-written reference: the same net with numpy only. ``metrics``: also keep
    what ``fit`` records per batch (the batch's mean NLL before its update and the hits of
    its argmax), as a typical training loop does; without, the loop only trains."""
    w1, b1, w2, b2 = (w.copy() for w in weights)
    eye = np.eye(train.n_classes, dtype=np.float32)
    rng = np.random.default_rng(seed)
    times: list[float] = []
    loss_sum, hits = 0.0, 0
    for _ in range(epochs):
        start = time.process_time()
        order = rng.permutation(len(train))
        for i in range(0, len(train), batch):
            idx = order[i : i + batch]
            x, y = train.features[idx], eye[train.labels[idx]]
            h = x @ w1
            h += b1
            a = np.maximum(h, 0.0)
            z = a @ w2
            z += b2
            z -= z.max(axis=1, keepdims=True)
            np.exp(z, out=z)
            z /= z.sum(axis=1, keepdims=True)
            if metrics:
                loss_sum += float(-np.log(z[y > 0]).sum())
                hits += int(np.count_nonzero(z.argmax(axis=1) == train.labels[idx]))
            z -= y
            z *= np.float32(1.0 / len(idx))  # d loss / d logits
            ga = z @ w2.T
            ga *= h > 0
            w2 -= np.float32(LR) * (a.T @ z)
            b2 -= np.float32(LR) * z.sum(axis=0)
            w1 -= np.float32(LR) * (x.T @ ga)
            b1 -= np.float32(LR) * ga.sum(axis=0)
        times.append(time.process_time() - start)
    logits = np.maximum(test.features @ w1 + b1, 0.0) @ w2 + b2
    return min(times), float(np.mean(logits.argmax(axis=1) == test.labels))


def preset_mlp(widths: list[int], weights: Weights) -> MLP:
    """An MLP (ReLU hidden layers, linear output) whose parameters are ``weights``, in the
    order fc1/weight, fc1/bias, fc2/weight, ... — the same start for every implementation."""
    activations: list[type[ReLULayer] | None] = [ReLULayer] * (len(widths) - 2) + [None]
    net = MLP.build("net", widths=widths, activations=activations)
    init = ParamInitializer({})
    for i, w in enumerate(weights):
        name = f"net/fc{i // 2 + 1}/{'weight' if i % 2 == 0 else 'bias'}"
        init.set_param(name, tn.Tensor(w.copy(), tn.Float32, tn.CPU, dim_of_rank(w.ndim)))
    layer_init(net, init, LoadBuffer(tn.Float32, tn.CPU))
    return net


class ModuleMLP(nn.Module):
    """The MLP as modules: ``nn.Linear`` layers, ReLU between them, logits out."""

    def __init__(self, widths: list[int]) -> None:
        self.layers = [nn.Linear(a, b) for a, b in itertools.pairwise(widths)]

    def __call__(self, x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        out: tn.Matrix[tn.Float32, tn.CPU] = self.layers[-1](x)
        return out


def preset_module_mlp(widths: list[int], weights: Weights) -> ModuleMLP:
    """A :class:`ModuleMLP` starting from ``weights`` (``x @ w`` layouts, transposed into
    PyTorch's ``layers.i.weight``)."""
    tn.manual_seed(0)
    net = ModuleMLP(widths)
    names = [f"layers.{i // 2}.{'weight' if i % 2 == 0 else 'bias'}" for i in range(len(weights))]
    nn.load_state_dict(net, {name: w.T.copy() for name, w in zip(names, weights, strict=True)})
    return net


def typed_nn_run(
    train: Dataset, test: Dataset, weights: Weights, epochs: int, batch: int, seed: int
) -> Result:
    """typed_nn: the module MLP trained by ``typed_nn.train.fit`` with ``optim.SGD``."""
    net = preset_module_mlp([64, 128, 10], weights)
    seconds, _ = timed_fit(net, train, optim.SGD(net, LR), epochs=epochs, batch=batch, seed=seed)
    return seconds, tn_accuracy(net, test)


def typed_nn_layers_run(
    train: Dataset, test: Dataset, weights: Weights, epochs: int, batch: int, seed: int
) -> Result:
    """typed_nn: the composite MLP layer trained by ``typed_nn.train.fit``."""
    net = preset_mlp([64, 128, 10], weights)
    seconds, _ = timed_fit(net, train, SGD(LR), epochs=epochs, batch=batch, seed=seed)
    return seconds, tn_accuracy(net, test)


def torch_run(
    train: Dataset, test: Dataset, weights: Weights, epochs: int, batch: int, seed: int
) -> Result | None:
    """PyTorch CPU eager, the same net and batches; None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    fc1, fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 10)
    with torch.no_grad():
        for layer, w, b in ((fc1, weights[0], weights[1]), (fc2, weights[2], weights[3])):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b))
    model = torch.nn.Sequential(fc1, torch.nn.ReLU(), fc2)
    return torch_fit(
        model,
        train.features,
        train.labels,
        test.features,
        test.labels,
        lr=LR,
        batch=batch,
        epochs=epochs,
        seed=seed,
    )


def numpy_metrics_run(
    train: Dataset, test: Dataset, weights: Weights, epochs: int, batch: int, seed: int
) -> Result:
    """The hand-written reference with fit's per-batch loss and accuracy bookkeeping."""
    return numpy_run(train, test, weights, epochs, batch, seed, metrics=True)


Runner = Callable[[Dataset, Dataset, Weights, int, int, int], Result | None]


def best_of(runs: dict[str, Runner], repeats: int, *args: Any) -> dict[str, Result | None]:
    """Each implementation's minimum epoch time over the repeats, run round-robin (one
    repeat of each in turn, so a burst of load on the shared machine hits every side), and
    the test accuracy of its first repeat (all agree)."""
    found: dict[str, list[Result]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            result = run(*args)
            if result is not None:
                found[name].append(result)
    return {
        name: (min(t for t, _ in got), got[0][1]) if got else None for name, got in found.items()
    }


def versions() -> str:
    """Library versions for the results table."""
    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    try:
        import torch

        parts.append(f"torch {torch.__version__}")
    except ImportError:
        parts.append("torch not installed")
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    split = load_digits(seed=args.seed)
    weights = initial_weights([64, 128, 10], args.seed)
    print(f"{platform.processor() or platform.machine()}; {versions()}; 1 thread")
    print(f"digits MLP 64-128-10, SGD {LR}, {args.epochs} epochs, best of {args.repeats}")
    print(f"{'batch':>5} {'implementation':<16} {'ms/epoch':>9} {'test acc':>9}")
    for batch in (32, 128):
        common = (split.train, split.test, weights, args.epochs, batch, args.seed)
        runners: dict[str, Runner] = {
            "numpy (hand)": numpy_run,
            "numpy +metrics": numpy_metrics_run,
            "typed_nn": typed_nn_run,
            "typed_nn layers": typed_nn_layers_run,
            "torch": torch_run,
        }
        rows = best_of(runners, args.repeats, *common)
        for name, res in rows.items():
            shown = f"{res[0] * 1e3:9.2f} {res[1]:9.4f}" if res else f"{'-':>9} {'-':>9}"
            print(f"{batch:>5} {name:<16} {shown}")
        ours, layers = rows["typed_nn"], rows["typed_nn layers"]
        assert ours is not None
        assert layers is not None
        assert abs(ours[1] - layers[1]) < 0.01, "the module and layer MLPs learned differently"
        print(f"{batch:>5} modules / layers: {ours[0] / layers[0]:.2f}x")
        for name in ("numpy (hand)", "numpy +metrics", "torch"):
            other = rows[name]
            if other is not None:
                print(f"{batch:>5} typed_nn / {name}: {ours[0] / other[0]:.2f}x")


if __name__ == "__main__":
    main()
