"""MLP 784-512-256-10 on random data, batch 128: typed_nn vs hand-written numpy (vs torch).

Run: ``python benchmarks/large_mlp.py [--samples 16384] [--repeats 3]``. Single-threaded BLAS
(set below, before numpy / torch are imported). ReLU, softmax + NLL, SGD lr 0.01; the same
initial weights and batches for every implementation. Epoch time is CPU time (the machine is
shared), the minimum over every epoch of every repeat; the final training loss of each is
printed as a check that they computed the same thing. "typed_nn" is the net written
with ``typed_nn.nn`` modules (``digits_mlp.ModuleMLP``) and ``optim.SGD``, trained by ``fit``;
"typed_nn layers" the composite ``MLP`` layer with ``typed_nn.model.SGD`` (the comparison
row: the modules path should be no slower).
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy / torch are imported)
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import time

import numpy as np
from _common import timed_fit
from digits_mlp import (
    Weights,
    initial_weights,
    preset_mlp,
    preset_module_mlp,
    versions,
)

from typed_nn import optim
from typed_nn.model import SGD
from typed_nn.train import Dataset

WIDTHS = [784, 512, 256, 10]
LR = 0.01
Result = tuple[float, float]  # (best epoch seconds, mean loss of the last epoch)


def random_data(samples: int, seed: int) -> Dataset:
    """Uniform [0, 1) features, labels from a random linear teacher (learnable, not trivial)."""
    rng = np.random.default_rng(seed)
    x = rng.random((samples, WIDTHS[0]), dtype=np.float32)
    teacher = rng.normal(size=(WIDTHS[0], WIDTHS[-1])).astype(np.float32)
    return Dataset(x, (x @ teacher).argmax(axis=1).astype(np.int64), WIDTHS[-1])


def numpy_run(data: Dataset, weights: Weights, epochs: int, batch: int, seed: int) -> Result:
    """Hand-written numpy forward, backward and SGD for the three layers."""
    ws = [w.copy() for w in weights]
    eye = np.eye(data.n_classes, dtype=np.float32)
    rng = np.random.default_rng(seed)
    lr = np.float32(LR)
    times: list[float] = []
    losses: list[float] = []
    for _ in range(epochs):
        start = time.process_time()
        order = rng.permutation(len(data))
        losses = []
        for i in range(0, len(data), batch):
            idx = order[i : i + batch]
            x, y = data.features[idx], eye[data.labels[idx]]
            w1, b1, w2, b2, w3, b3 = ws
            h1 = x @ w1
            h1 += b1
            a1 = np.maximum(h1, 0.0)
            h2 = a1 @ w2
            h2 += b2
            a2 = np.maximum(h2, 0.0)
            z = a2 @ w3
            z += b3
            z -= z.max(axis=1, keepdims=True)
            np.exp(z, out=z)
            z /= z.sum(axis=1, keepdims=True)
            losses.append(float(-np.log(z[y > 0]).mean()))
            z -= y
            z *= np.float32(1.0 / len(idx))
            g2 = z @ w3.T
            g2 *= h2 > 0
            g1 = g2 @ w2.T
            g1 *= h1 > 0
            grads = [x.T @ g1, g1.sum(0), a1.T @ g2, g2.sum(0), a2.T @ z, z.sum(0)]
            for w, g in zip(ws, grads, strict=True):
                g *= lr
                w -= g
        times.append(time.process_time() - start)
    return min(times), float(np.mean(losses))


def typed_nn_run(data: Dataset, weights: Weights, epochs: int, batch: int, seed: int) -> Result:
    """typed_nn: the module MLP trained by ``fit`` with ``optim.SGD``."""
    net = preset_module_mlp(WIDTHS, weights)
    seconds, history = timed_fit(
        net, data, optim.SGD(net, LR), epochs=epochs, batch=batch, seed=seed
    )
    return seconds, history.train_loss[-1]


def typed_nn_layers_run(
    data: Dataset, weights: Weights, epochs: int, batch: int, seed: int
) -> Result:
    """typed_nn: the composite MLP layer trained by ``fit``."""
    net = preset_mlp(WIDTHS, weights)
    seconds, history = timed_fit(net, data, SGD(LR), epochs=epochs, batch=batch, seed=seed)
    return seconds, history.train_loss[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--samples", type=int, default=16384)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = random_data(args.samples, args.seed)
    weights = initial_weights(WIDTHS, args.seed)
    batch = 128
    print(f"{versions()}; 1 thread; CPU time")
    print(f"MLP {'-'.join(map(str, WIDTHS))}, batch {batch}, {args.samples} samples per epoch")
    rows: dict[str, Result] = {}
    for _ in range(args.repeats):  # interleaved, so a burst of load hits both sides
        runs = (
            ("numpy (hand)", numpy_run),
            ("typed_nn", typed_nn_run),
            ("typed_nn layers", typed_nn_layers_run),
        )
        for name, run in runs:
            t, loss = run(data, weights, args.epochs, batch, args.seed)
            best = rows.get(name)
            rows[name] = (min(t, best[0]) if best else t, loss)
    print(f"{'implementation':<16} {'ms/epoch':>9} {'last loss':>10}")
    for name, (t, loss) in rows.items():
        print(f"{name:<16} {t * 1e3:9.1f} {loss:10.4f}")
    ours = rows["typed_nn"]
    layers = rows["typed_nn layers"]
    assert abs(ours[1] - layers[1]) < 1e-3 * ours[1], "module and layer MLPs differ"
    print(f"typed_nn / numpy (hand): {ours[0] / rows['numpy (hand)'][0]:.3f}x")
    print(f"modules / layers: {ours[0] / layers[0]:.3f}x")


if __name__ == "__main__":
    main()
