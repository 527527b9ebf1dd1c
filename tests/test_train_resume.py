"""fit's checkpoints: 10 epochs straight equal 5 epochs, a checkpoint, and 5 resumed epochs,
bit for bit (weights, optimizer state, shuffling, history, early stopping)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.layers import (
    BatchNormLayer,
    DropoutLayer,
    LayerInMap,
    LayerInput,
    LinearLayer,
    ReLULayer,
    Sequential,
    layer_init,
    make_train_layer,
    model_state,
)
from typed_nn.model import (
    SGD,
    Adam,
    GaussianFiller,
    LoadBuffer,
    Momentum,
    Optimizer,
    ParamInitializer,
    load_checkpoint,
)
from typed_nn.policies import PInitializerIs, PUpdate
from typed_nn.train import (
    Callback,
    Dataset,
    EarlyStopping,
    History,
    LambdaCallback,
    ModelCheckpoint,
    Split,
    cosine,
    fit,
    load_digits,
    warmup,
)
from typed_nn.train.classifier import build_mlp

EPOCHS, BATCH = 10, 96
STEPS = EPOCHS * -(-1437 // BATCH)
OPTIMIZERS: dict[str, Callable[[], Optimizer]] = {
    "sgd": lambda: SGD(0.1, weight_decay=1e-4),
    "nesterov": lambda: Momentum(0.05, 0.9, nesterov=True),
    "adam-schedule": lambda: Adam(warmup(cosine(1e-2, STEPS - 20), steps=20)),
}


@pytest.fixture(scope="module")
def digits() -> Split:
    return load_digits(seed=0)


def run(
    digits: Split, optimizer: Optimizer, seed: int, epochs: int, *callbacks: Callback
) -> tuple[History, LoadBuffer[tn.Float32, Any]]:
    net, params = build_mlp([64, 24, 10], seed=seed)
    stopping = EarlyStopping("test_acc", patience=EPOCHS)
    history = fit(
        net,
        digits.train,
        optimizer,
        test=digits.test,
        epochs=epochs,
        batch_size=BATCH,
        seed=3,
        callbacks=[stopping, *callbacks],
    )
    return history, params


def state(params: LoadBuffer[tn.Float32, Any], optimizer: Optimizer) -> dict[str, np.ndarray]:
    values = {name: w.numpy() for name, w in params.items()}
    for name, w in params.items():
        values |= {f"{name}/{s}": t.numpy() for s, t in optimizer.state(w).items()}
    return values


@pytest.mark.parametrize("kind", OPTIMIZERS)
def test_five_plus_five_resumed_epochs_equal_ten(digits: Split, tmp_path: Path, kind: str) -> None:
    straight_opt = OPTIMIZERS[kind]()
    straight, straight_params = run(digits, straight_opt, 0, EPOCHS)

    path = tmp_path / "run.ckpt"
    first_opt = OPTIMIZERS[kind]()
    first, _ = run(digits, first_opt, 0, 5, ModelCheckpoint(path, every=5))
    assert load_checkpoint(path, dict(_weights(digits)), OPTIMIZERS[kind]()).epoch == 5
    resumed_opt = OPTIMIZERS[kind]()  # fresh state; other initial weights (seed 1)
    resumed, resumed_params = run(digits, resumed_opt, 1, EPOCHS, ModelCheckpoint(resume_from=path))

    assert dataclasses.asdict(resumed) == dataclasses.asdict(straight)
    assert resumed.train_loss[:5] == first.train_loss
    assert resumed_opt.step_count == straight_opt.step_count == STEPS
    a, b = state(resumed_params, resumed_opt), state(straight_params, straight_opt)
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name  # bit for bit


def _weights(digits: Split) -> dict[str, tn.Tensor[tn.Float32, Any, Any]]:
    _, params = build_mlp([64, 24, 10], seed=5)
    return dict(params.items())


def test_checkpoint_every_epoch_and_at_the_end(digits: Split, tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    epochs: list[int] = []

    def on_epoch(epoch: int, history: History) -> None:
        if epoch > 0:  # the checkpoint of the epoch before is on disk
            epochs.append(load_checkpoint(path, _weights(digits), SGD(0.1)).epoch)

    run(digits, SGD(0.1), 0, 3, ModelCheckpoint(path), LambdaCallback(on_epoch_end=on_epoch))
    assert epochs == [1, 2]
    assert load_checkpoint(path, _weights(digits), SGD(0.1)).epoch == 3


def test_resuming_with_another_optimizer_changes_nothing(digits: Split, tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    run(digits, SGD(0.1), 0, 1, ModelCheckpoint(path))
    net, params = build_mlp([64, 24, 10], seed=1)
    before = {name: w.numpy().copy() for name, w in params.items()}
    with pytest.raises(tn.CheckpointError, match="  optimizer : file has SGD, optimizer is Adam"):
        fit(net, digits.train, Adam(1e-3), epochs=2, callbacks=[ModelCheckpoint(resume_from=path)])
    for name, w in params.items():
        assert np.array_equal(w.numpy(), before[name])


def test_checkpoint_arguments_are_checked_before_training(digits: Split, tmp_path: Path) -> None:
    net, _ = build_mlp([64, 24, 10], seed=0)
    with pytest.raises(tn.TrainingError) as caught:
        fit(
            net,
            digits.train,
            SGD(0.1),
            callbacks=[ModelCheckpoint(tmp_path / "missing" / "run.ckpt")],
        )
    assert str(caught.value) == (
        "cannot fit: ModelCheckpoint.path must be a file path in an existing folder.\n"
        "  allowed  : a file path in an existing folder\n"
        f"  received : {tmp_path / 'missing' / 'run.ckpt'!r} (PosixPath)\n"
        "hint: the path is in a folder that does not exist: create the folder first, or name "
        "a file in it."
    )
    with pytest.raises(tn.TrainingError, match=r"ModelCheckpoint\.every must be an integer >= 1"):
        fit(net, digits.train, SGD(0.1), callbacks=[ModelCheckpoint(tmp_path / "c", every=0)])
    with pytest.raises(tn.WeightFileNotFoundError, match="no such file"):
        fit(
            net,
            digits.train,
            SGD(0.1),
            callbacks=[ModelCheckpoint(resume_from=tmp_path / "none.ckpt")],
        )


# --- models with state besides their weights: batch norm, dropout ---------------------------


class WithBatchNorm(Sequential[tn.Dim2, tn.Dim2]):
    chain = (("fc1", LinearLayer), ("bn", BatchNormLayer), ("act", ReLULayer), ("fc2", LinearLayer))


class WithDropout(Sequential[tn.Dim2, tn.Dim2]):
    chain = (("fc1", LinearLayer), ("act", ReLULayer), ("drop", DropoutLayer), ("fc2", LinearLayer))


class WithBoth(Sequential[tn.Dim2, tn.Dim2]):
    chain = (
        ("fc1", LinearLayer),
        ("bn", BatchNormLayer),
        ("act", ReLULayer),
        ("drop", DropoutLayer),
        ("fc2", LinearLayer),
    )


STATEFUL: dict[str, type[Sequential[Any, Any]]] = {
    "batch-norm": WithBatchNorm,
    "dropout": WithDropout,
    "both": WithBoth,
}
SIMPLE: dict[str, Callable[[], Optimizer]] = {
    "sgd": lambda: SGD(0.1),
    "momentum": lambda: Momentum(0.05, 0.9),
    "adam": lambda: Adam(1e-2),
}


def blobs() -> Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(150, 6)).astype(np.float32)
    return Dataset(x, x[:, :3].argmax(1).astype(np.int64), 3)


def stateful_net(kind: str, seed: int) -> Any:
    cls = make_train_layer(
        STATEFUL[kind],
        LayerInMap({LayerInput: tn.Matrix[tn.Float32, tn.CPU]}),
        PUpdate,
        PInitializerIs("w"),
    )
    args = {"fc1": (6, 12), "bn": (12,), "drop": (0.3,), "fc2": (12, 3)}
    names = {step[0] for step in STATEFUL[kind].chain if isinstance(step, tuple)}
    net = cls("net", {n: a for n, a in args.items() if n in names})
    init = ParamInitializer({"w": GaussianFiller(0.0, 0.3, seed=seed)})
    layer_init(net, init, LoadBuffer(tn.Float32, tn.CPU))
    return net


def everything(net: Any, optimizer: Optimizer) -> dict[str, np.ndarray]:
    """The model's whole state and the optimizer's, by name."""
    values = {}
    for name, entry in model_state(net).entries.items():
        values[name] = entry.read().numpy()
        values |= {f"{name}/{s}": t.numpy() for s, t in optimizer.state(entry.read()).items()}
    return values


@pytest.mark.parametrize("kind", SIMPLE)
@pytest.mark.parametrize("model", STATEFUL)
def test_batch_norm_and_dropout_models_resume_bit_for_bit(
    tmp_path: Path, model: str, kind: str
) -> None:
    """10 epochs straight == 5, a checkpoint and 5 resumed: the running statistics, the
    dropout masks' state and the optimizer's are in the checkpoint, and resuming builds no
    forward for a made-up batch (a training batch norm refuses a batch of one)."""
    data, path = blobs(), tmp_path / "run.ckpt"
    options: dict[str, Any] = {"batch_size": 16, "seed": 3}
    straight_net, straight_opt = stateful_net(model, 0), SIMPLE[kind]()
    straight = fit(straight_net, data, straight_opt, epochs=10, **options)
    fit(
        stateful_net(model, 0),
        data,
        SIMPLE[kind](),
        epochs=5,
        **options,
        callbacks=[ModelCheckpoint(path)],
    )
    net, opt = stateful_net(model, 1), SIMPLE[kind]()  # other initial weights: replaced
    resumed = fit(
        net, data, opt, epochs=10, **options, callbacks=[ModelCheckpoint(resume_from=path)]
    )
    assert dataclasses.asdict(resumed) == dataclasses.asdict(straight)
    a, b = everything(net, opt), everything(straight_net, straight_opt)
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name  # bit for bit


def test_early_stopping_gives_back_the_best_epochs_buffers_too() -> None:
    """The best epoch's running statistics come back with its weights."""
    net = stateful_net("batch-norm", 0)
    seen: list[dict[str, np.ndarray]] = []

    def on_epoch(epoch: int, history: History) -> None:
        seen.append({n: e.read().numpy().copy() for n, e in model_state(net).entries.items()})

    history = fit(
        net,
        blobs(),
        SGD(0.5),
        test=blobs(),
        epochs=8,
        batch_size=16,
        callbacks=[EarlyStopping("test_acc", patience=8), LambdaCallback(on_epoch_end=on_epoch)],
    )
    assert history.best_epoch is not None
    assert history.best_epoch < 7
    best = seen[history.best_epoch]
    for name, entry in model_state(net).entries.items():
        assert np.array_equal(entry.read().numpy(), best[name]), name


class Wrapped:
    """A training layer by protocol only (not a typed_nn Layer): fit trains it, but no walk
    finds its state."""

    def __init__(self, net: Any) -> None:
        self.net = net

    def __getattr__(self, name: str) -> Any:
        return getattr(self.net, name)

    def input_cont(self) -> Any:
        return self.net.input_cont()

    def output_cont(self) -> Any:
        return self.net.output_cont()

    def feed_forward(self, inputs: Any) -> Any:
        return self.net.feed_forward(inputs)

    def feed_backward(self, grads: Any) -> Any:
        return self.net.feed_backward(grads)

    def grad_collect(self, collector: Any) -> None:
        self.net.grad_collect(collector)


def test_checkpoints_need_a_typed_nn_layer(tmp_path: Path) -> None:
    model = Wrapped(build_mlp([6, 3], seed=0)[0])
    fit(model, blobs(), SGD(0.1), epochs=1)  # trains
    with pytest.raises(
        tn.TrainingError,
        match=r"^cannot fit: ModelCheckpoint\.path \(a checkpoint\) needs the model's whole state, "
        r"which only a typed_nn layer reports\.\n  declared : a typed_nn layer "
        r"\(typed_nn\.layers\.Layer\)\n  received : Wrapped\n",
    ):
        fit(model, blobs(), SGD(0.1), epochs=1, callbacks=[ModelCheckpoint(tmp_path / "c")])
    assert not (tmp_path / "c").exists()
