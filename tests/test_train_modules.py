"""fit over an nn.Module: the digits learnt by an MLP and a CNN with batch norm and dropout,
the step against PyTorch's, train/eval modes, resuming bit for bit (dropout's generator in the
checkpoint), early stopping's best parameters and buffers, and the model/optimizer pairing."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.model import SGD
from typed_nn.train import (
    Dataset,
    EarlyStopping,
    History,
    LambdaCallback,
    ModelCheckpoint,
    Split,
    accuracy,
    fit,
    load_digits,
    predict,
)
from typed_nn.train.classifier import build_mlp

Batch = tn.Matrix[tn.Float32, tn.CPU]
Logits = tn.TensorLike[tn.Float32, tn.CPU, tn.Dim2]


class MLP(nn.Module):
    def __init__(self, hidden: int = 32, p: float = 0.1) -> None:
        self.fc1 = nn.Linear(64, hidden)
        self.drop = nn.Dropout(p)
        self.fc2 = nn.Linear(hidden, 10)

    def __call__(self, x: Batch) -> Logits:
        return self.fc2(self.drop(ops.relu(self.fc1(x))))


class CNN(nn.Module):
    """conv 8 3x3 -> batch norm -> relu -> max pool 2 -> dropout -> linear 10, on the digits'
    64 features seen as 1x8x8 images (the module reshapes them itself)."""

    def __init__(self) -> None:
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.norm = nn.BatchNorm(8)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.2)
        self.flat = nn.Flatten()
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def __call__(self, x: Batch) -> Logits:
        images = ops.reshape(x, (x.shape[0], 1, 8, 8))
        h = self.pool(ops.relu(self.norm(self.conv(images))))
        return self.fc(self.flat(self.drop(h)))


@pytest.fixture(scope="module")
def digits() -> Split:
    return load_digits(seed=0)


def _state(model: nn.Module) -> dict[str, np.ndarray]:
    """Every parameter and buffer (the dropout generators' states included), by path."""
    leaves = [*nn.named_parameters(model), *nn.named_buffers(model)]
    return {n: t.numpy().copy() for n, t in leaves}


def test_a_module_mlp_learns_the_digits_as_the_layer_mlp_does(digits: Split) -> None:
    tn.manual_seed(0)
    model = MLP()
    history = fit(model, digits.train, optim.Adam(model, lr=3e-3), test=digits.test, epochs=15)
    net, _ = build_mlp([64, 32, 10], seed=0)
    layers = fit(net, digits.train, SGD(0.1), test=digits.test, epochs=15)
    assert history.test_acc[-1] > 0.95
    assert history.test_acc[-1] >= layers.test_acc[-1] - 0.02
    assert accuracy(model, digits.test) == history.test_acc[-1]
    assert model.training  # back in the mode it had


def test_a_module_cnn_with_batch_norm_and_dropout_learns_the_digits(digits: Split) -> None:
    tn.manual_seed(0)
    model = CNN()
    before = _state(model)
    history = fit(model, digits.train, optim.Adam(model, lr=1e-2), test=digits.test, epochs=6)
    assert history.test_acc[-1] > 0.95
    after = _state(model)
    assert not np.array_equal(after["norm.running_mean"], before["norm.running_mean"])
    assert int(after["norm.num_batches_tracked"]) == 6 * 45  # 1437 samples: 45 batches
    model.eval()
    assert np.array_equal(predict(model, digits.test), predict(model, digits.test))


def test_one_step_equals_pytorchs(digits: Split) -> None:
    """fit's compiled step (cross-entropy on the labels, tn.grad, opt.step) against the same
    step in PyTorch, from the same weights and on the same batch."""
    torch = pytest.importorskip("torch")
    tn.manual_seed(1)
    model = MLP(p=0.0)
    data = Dataset(digits.train.features[:16], digits.train.labels[:16], 10)
    ours = _state(model)
    fit(model, data, optim.SGD(model, lr=0.5), epochs=1, batch_size=16)

    twin = torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Dropout(0.0), torch.nn.Linear(32, 10)
    )
    names = {"0.weight": "fc1.weight", "0.bias": "fc1.bias"}
    names |= {"3.weight": "fc2.weight", "3.bias": "fc2.bias"}
    twin.load_state_dict({k: torch.from_numpy(ours[v]) for k, v in names.items()})
    sgd = torch.optim.SGD(twin.parameters(), lr=0.5)
    order = np.random.default_rng(0).permutation(16)  # fit's shuffling of seed 0
    x = torch.from_numpy(data.features[order])
    torch.nn.functional.cross_entropy(twin(x), torch.from_numpy(data.labels[order])).backward()
    sgd.step()
    trained = _state(model)
    for k, v in names.items():
        np.testing.assert_allclose(trained[v], twin.state_dict()[k].numpy(), rtol=1e-5, atol=1e-6)


def _run(
    data: Dataset, seed: int, epochs: int, *callbacks: Any
) -> tuple[History, CNN, optim.Adam[CNN]]:
    tn.manual_seed(seed)
    model = CNN()
    opt = optim.Adam(model, lr=1e-2)
    stop = EarlyStopping("train_loss", patience=10)
    history = fit(model, data, opt, epochs=epochs, batch_size=64, callbacks=[stop, *callbacks])
    return history, model, opt


def test_a_module_resumes_bit_for_bit(digits: Split, tmp_path: Path) -> None:
    """6 epochs straight == 3, a checkpoint, and 3 resumed into a model of other initial
    weights and another dropout seed: the weights, the running statistics, the dropout
    generator's state and the optimizer's moments and step count are in the checkpoint."""
    data = Dataset(digits.train.features[:512], digits.train.labels[:512], 10)
    path = tmp_path / "run.ckpt"
    straight, model, opt = _run(data, 0, 6)
    _run(data, 0, 3, ModelCheckpoint(path))
    resumed, again, again_opt = _run(data, 7, 6, ModelCheckpoint(resume_from=path))
    assert dataclasses.asdict(resumed) == dataclasses.asdict(straight)
    assert again_opt.step_count == opt.step_count == 6 * 8
    a, b = _state(again), _state(model)
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name  # bit for bit
    assert any(n.startswith("drop") for n in a)  # the dropout generator's state is a buffer


def test_early_stopping_restores_the_best_parameters_and_buffers(digits: Split) -> None:
    tn.manual_seed(0)
    model = CNN()
    seen: list[dict[str, np.ndarray]] = []

    def keep(epoch: int, history: History) -> None:
        seen.append(_state(model))

    stop = EarlyStopping("test_acc", patience=2)
    history = fit(
        model,
        digits.train,
        optim.Adam(model, lr=0.1),  # high: the test accuracy soon stops improving
        test=digits.test,
        epochs=12,
        callbacks=[stop, LambdaCallback(on_epoch_end=keep)],
    )
    assert history.best_epoch is not None
    assert history.stopped_early
    assert history.epochs == history.best_epoch + 3
    best = seen[history.best_epoch]
    for name, value in _state(model).items():
        assert np.array_equal(value, best[name]), name
    assert accuracy(model, digits.test) == history.test_acc[history.best_epoch]


def test_a_run_resumed_from_the_epoch_early_stopping_stopped_at_trains_no_more(
    digits: Split, tmp_path: Path
) -> None:
    """A requeued job resuming from its last checkpoint, written at the stop: the history
    and every weight are the finished run's (it trained one epoch more)."""
    data = Dataset(digits.train.features[:256], digits.train.labels[:256], 10)

    def run(*callbacks: Any) -> tuple[History, CNN, optim.Adam[CNN]]:
        tn.manual_seed(0)
        model = CNN()
        opt = optim.Adam(model, lr=0.2)  # high: the loss soon stops improving
        stop = EarlyStopping("train_loss", patience=1)
        history = fit(model, data, opt, epochs=30, batch_size=64, callbacks=[stop, *callbacks])
        return history, model, opt

    path = tmp_path / "run.ckpt"
    straight, model, opt = run(ModelCheckpoint(path))
    assert straight.stopped_early
    resumed, again, again_opt = run(ModelCheckpoint(resume_from=path))
    assert dataclasses.asdict(resumed) == dataclasses.asdict(straight)
    assert again_opt.step_count == opt.step_count
    for name, value in _state(again).items():
        assert np.array_equal(value, _state(model)[name]), name


class _NormedMLP(nn.Module):
    def __init__(self) -> None:
        self.fc1 = nn.Linear(64, 16)
        self.norm = nn.BatchNorm(16)
        self.fc2 = nn.Linear(16, 10)

    def __call__(self, x: Batch) -> Logits:
        return self.fc2(ops.relu(self.norm(self.fc1(x))))


def test_a_batch_no_layer_takes_fails_before_the_first_step_and_changes_nothing() -> None:
    """33 samples in batches of 32: the last batch of 1 cannot train a batch norm. The
    step is traced for every batch size first, so the error comes before any update, and
    the model is back in its mode (after any error in the run too)."""
    rng = np.random.default_rng(0)
    data = Dataset(rng.standard_normal((33, 64)).astype(np.float32), rng.integers(0, 10, 33), 10)
    tn.manual_seed(0)
    model = _NormedMLP()
    model.eval()
    before = _state(model)
    with pytest.raises(tn.ShapeError, match="a training batch norm needs more than one value"):
        fit(model, data, optim.SGD(model, lr=0.1), epochs=2, batch_size=32)
    for name, value in _state(model).items():
        assert np.array_equal(value, before[name]), name
    assert (model.training, model.norm.training) == (False, False)
    with pytest.raises((tn.TrainingError, tn.NumericError)):  # debug mode's is the first inf
        fit(model, data, optim.SGD(model, lr=1e12), epochs=3, batch_size=11)
    assert (model.training, model.norm.training) == (False, False)


def test_a_module_trains_with_its_own_optimizer_only(digits: Split) -> None:
    tn.manual_seed(0)
    model, other = MLP(), MLP()
    with pytest.raises(tn.TrainingError) as caught:
        fit(model, digits.train, optim.SGD(other, lr=0.1))
    assert str(caught.value) == (
        "cannot fit: the optimizer was built for another model.\n"
        "  declared : optim.SGD(model) of this MLP\n"
        "  received : an optimizer of another MLP\n"
        "hint: build the optimizer from the model you pass: optim.Adam(model, lr=...)."
    )
    with pytest.raises(tn.TrainingError) as caught:
        fit(model, digits.train, SGD(0.1))
    assert str(caught.value).startswith(
        "cannot fit: optimizer must be a typed_nn.optim optimizer of the model.\n"
    )
    assert str(caught.value).endswith(
        "hint: an nn.Module trains with typed_nn.optim: pass optim.Adam(model, lr=1e-3)."
    )
    net, _ = build_mlp([64, 10], seed=0)
    with pytest.raises(tn.TrainingError, match=r"\(typed_nn\.optim's are for an nn\.Module\)\.$"):
        fit(net, digits.train, optim.SGD(model, lr=0.1))


def test_a_scheduled_module_optimizer_sets_each_steps_rate_in_the_program(digits: Split) -> None:
    """fit sets a schedule's learning rate before every call of the compiled step
    (``opt.prepare_step``): a rate of 0 after the first step leaves the weights of one step."""
    data = Dataset(digits.train.features[:64], digits.train.labels[:64], 10)
    tn.manual_seed(0)
    once = MLP(p=0.0)
    fit(once, data, optim.SGD(once, lr=0.5), epochs=1, batch_size=64)
    tn.manual_seed(0)
    model = MLP(p=0.0)
    opt = optim.SGD(model, lr=lambda step: 0.5 if step == 0 else 0.0)
    fit(model, data, opt, epochs=3, batch_size=64)
    assert opt.step_count == 3
    for name, value in _state(model).items():
        assert np.array_equal(value, _state(once)[name]), name


def test_prepare_step_lets_a_compiled_step_run_a_schedule() -> None:
    tn.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = optim.SGD(model, lr=lambda step: 1.0 / (step + 1))
    x = tn.tensor(np.ones((2, 3), np.float32), tn.Float32, tn.CPU, tn.Dim2)

    @tn.compile
    def step(x: Batch) -> tn.Scalar[tn.Float32, tn.CPU]:
        loss = ops.reduce_sum(model(x))
        opt.step(tn.grad(loss, model))
        return loss

    assert model.bias is not None
    bias = [float(model.bias.numpy()[0])]
    for k in range(3):
        opt.prepare_step(k)
        step(x)
        bias.append(float(model.bias.numpy()[0]))
    # d(sum)/d(bias) = 2 (two rows): the bias falls by 2 * lr(k) at step k
    np.testing.assert_allclose(np.diff(bias), [-2.0, -1.0, -2.0 / 3.0], rtol=1e-6)
    assert opt.step_count == 3
