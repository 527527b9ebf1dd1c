"""A data-parallel training run for tests/test_distributed.py, started by ``mpiexec -n N``
(or alone, as the one-process reference): ``python tests/distributed_worker.py MODE OUT``.

Modes: ``train-<optimizer>`` (fit a small MLP on synthetic data, then every rank saves its
weights and history to OUT.rank<r>.npz), ``module-<optimizer>`` (the same with an nn.Module
MLP and a typed_nn.optim optimizer), ``collectives`` (prints each collective's result), ``mismatch`` (rank 1 builds a wider model),
``batch`` (a global batch the ranks cannot share), ``kill`` (rank 1 kills itself with
SIGKILL in the middle of the second epoch while rank 0 saves weights after every epoch),
``raise`` (rank 1 raises there instead, inside ``abort_on_error``), ``disagree`` (one ``fit``
per way rank 1 can differ from rank 0: data, batch size, epochs, optimizer, seed; each error
printed on one line), ``leave`` (rank 1 leaves the run after its first epoch, its error caught:
rank 0 must not wait for it forever), ``batchnorm`` (a batch-norm model with early stopping:
each rank prints its test accuracies and running mean).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import numpy as np

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.distributed import abort_on_error, world
from typed_nn.model import SGD, Adam, Momentum, Optimizer, save_weights
from typed_nn.train import Dataset, EarlyStopping, History, LambdaCallback, fit
from typed_nn.train.classifier import build_mlp

N_SAMPLES = 203  # 203 = 12 * 16 + 11: the last batch is smaller, and odd
N_FEATURES = 12
N_CLASSES = 4


def data(n: int = N_SAMPLES, shift: float = 0.0) -> Dataset:
    rng = np.random.default_rng(7)
    features = rng.normal(size=(n, N_FEATURES)).astype(np.float32) + np.float32(shift)
    labels = (features[:, :N_CLASSES].argmax(1)).astype(np.int64)
    return Dataset(features, labels, N_CLASSES)


DIFFERENCES: dict[str, dict[str, Any]] = {
    "samples": {"train": data(80)},
    "same-batches": {"train": data(200)},  # 13 batches of 16 either way
    "values": {"train": data(shift=0.5)},  # the same shapes
    "batch": {"batch_size": 32},
    "epochs": {"epochs": 2},
    "optimizer": {"optimizer": Momentum(0.1, momentum=0.9)},
    "lr": {"optimizer": SGD(0.2)},
    "seed": {"seed": 1},
}
"""What rank 1 changes in ``disagree`` mode, by name."""


class BatchNormNet(nn.Module):
    def __init__(self) -> None:
        tn.manual_seed(0)
        self.fc1, self.bn, self.fc2 = nn.Linear(N_FEATURES, 16), nn.BatchNorm(16), nn.Linear(16, 4)

    def __call__(self, x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
        return self.fc2(ops.relu(self.bn(self.fc1(x))))


def optimizer(name: str) -> Optimizer:
    if name == "sgd":
        return SGD(0.1)
    if name == "momentum":
        return Momentum(0.05, momentum=0.9)
    return Adam(1e-2)


class ModuleMLP(nn.Module):
    def __init__(self) -> None:
        self.fc1 = nn.Linear(N_FEATURES, 16)
        self.fc2 = nn.Linear(16, N_CLASSES)

    def __call__(self, x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.TensorLike[Any, Any, tn.Dim2]:
        return self.fc2(ops.relu(self.fc1(x)))


def module_optimizer(name: str, model: ModuleMLP) -> optim.Optimizer[ModuleMLP]:
    if name == "sgd":
        return optim.SGD(model, lr=0.1)
    if name == "momentum":
        return optim.Momentum(model, lr=0.05, momentum=0.9)
    return optim.Adam(model, lr=1e-2)


def train_module(name: str, out: str) -> None:
    """Every rank seeds its module differently: fit must broadcast rank 0's."""
    w = world()
    tn.manual_seed(w.rank)
    model = ModuleMLP()
    history = fit(model, data(), module_optimizer(name, model), epochs=3, batch_size=16)
    arrays = {name: t.numpy() for name, t in nn.named_parameters(model)}
    arrays["loss"], arrays["acc"] = np.array(history.train_loss), np.array(history.train_acc)
    np.savez(f"{out}.rank{w.rank}.npz", allow_pickle=False, **arrays)


def main(mode: str, out: str) -> None:
    w = world()
    if mode.startswith("module-"):
        train_module(mode.removeprefix("module-"), out)
        return
    # Every rank seeds its weights differently: fit must broadcast rank 0's.
    widths = [N_FEATURES, 16 if mode != "mismatch" or w.rank == 0 else 17, N_CLASSES]
    net, params = build_mlp(widths, "relu", seed=w.rank)
    if mode.startswith("train-"):
        history = fit(net, data(), optimizer(mode.removeprefix("train-")), epochs=3, batch_size=16)
        arrays = {name: t.numpy() for name, t in params.items()}  # every rank: compared
        arrays["loss"], arrays["acc"] = np.array(history.train_loss), np.array(history.train_acc)
        np.savez(f"{out}.rank{w.rank}.npz", allow_pickle=False, **arrays)
    elif mode == "batchnorm":  # each rank's statistics from its part: rank 0's after an epoch
        bn_net = BatchNormNet()
        history = fit(
            bn_net, data(), optim.SGD(bn_net, 0.1), epochs=12, batch_size=16, test=data(),
            callbacks=[EarlyStopping("test_acc", patience=1)],
        )  # fmt: skip
        mean = nn.state_dict(bn_net)["bn.running_mean"]
        lines = w.all_gather_object(f"{history.test_acc} {mean.tolist()}")
        if w.is_root:
            print("\n".join(lines), flush=True)
    elif mode == "collectives":
        t = tn.tensor(
            np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * w.rank, tn.Float32, tn.CPU, tn.Dim2
        )
        total = w.all_reduce(t).numpy().tolist()
        mean = w.all_reduce(t, "mean").numpy().tolist()
        gathered = w.all_gather(t).numpy().tolist()
        w.broadcast(t)
        line = f"rank {w.rank}: {total} {mean} {gathered} {t.numpy().tolist()}"
        lines = w.all_gather_object(line)  # rank 0 prints every rank's: outputs cannot interleave
        if w.is_root:
            print("\n".join(lines), flush=True)
    elif mode == "bn-part":  # 35 = 2 * 16 + 3: the last batch splits 2 / 1 over the ranks
        bn_net = BatchNormNet()
        try:
            fit(bn_net, data(35), optim.SGD(bn_net, 0.1), epochs=1, batch_size=16)
        except tn.TypedNNError as err:
            print(f"rank {w.rank}: {type(err).__name__}: {err}", flush=True)
            sys.exit(3)
    elif mode == "mismatch" or mode == "batch":
        try:
            fit(net, data(), SGD(0.1), epochs=1, batch_size=16 if mode == "mismatch" else 15)
        except tn.TypedNNError as err:
            print(f"rank {w.rank}: {type(err).__name__}: {err}", flush=True)
            sys.exit(3)
    elif mode == "disagree":
        for name, change in DIFFERENCES.items():
            args: dict[str, Any] = {"train": data(), "optimizer": SGD(0.1), "epochs": 3}
            args |= {"batch_size": 16, "seed": 0} | (change if w.rank == 1 else {})
            try:
                fit(net, args.pop("train"), args.pop("optimizer"), **args)
            except tn.DistributedError as err:
                print(f"{name}: rank {w.rank}: {str(err).replace(chr(10), ' | ')}", flush=True)
    elif mode == "leave":

        def leave(epoch: int, history: History) -> None:
            if w.rank == 1:
                raise RuntimeError("rank 1 leaves")

        try:
            fit(
                net,
                data(),
                SGD(0.1),
                epochs=3,
                batch_size=16,
                callbacks=[LambdaCallback(on_epoch_end=leave)],
            )
        except (tn.TypedNNError, RuntimeError) as err:
            print(f"rank {w.rank}: {type(err).__name__}: {err}", flush=True)
    elif mode in ("kill", "raise"):

        class FailingSGD(SGD):
            def numbers(self) -> tuple[float, ...]:
                if w.rank == 1 and self.step_count == 20:  # step 7 of epoch 2 (13 per epoch)
                    if mode == "kill":
                        os.kill(os.getpid(), signal.SIGKILL)
                    raise RuntimeError("a failure on rank 1 only")
                return super().numbers()

        def on_epoch(epoch: int, history: History) -> None:
            if w.is_root:
                save_weights(out, params, metadata={"epoch": str(epoch)})

        with abort_on_error(w):
            fit(
                net,
                data(),
                FailingSGD(0.1),
                epochs=50,
                batch_size=16,
                callbacks=[LambdaCallback(on_epoch_end=on_epoch)],
            )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
