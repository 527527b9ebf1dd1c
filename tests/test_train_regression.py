"""Data beyond classification: ArrayDataset, the regression losses (MSE, L1, Huber) and fit
training a regression model (scikit-learn's diabetes data)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
import typed_nn.debug
from typed_nn import ops
from typed_nn.model import SGD, Adam
from typed_nn.train import (
    ArrayDataset,
    Callback,
    Dataset,
    EarlyStopping,
    LambdaCallback,
    ModelCheckpoint,
    batches,
    fit,
    predict,
)
from typed_nn.train.classifier import build_mlp

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def diabetes() -> tuple[ArrayDataset, ArrayDataset]:
    """scikit-learn's diabetes data (442 patients, 10 features), split 3:1, features and
    target standardised with the training part's mean and deviation."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    x, y = load_diabetes(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=1)
    mean, std = x_train.mean(0), x_train.std(0)
    y_mean, y_std = y_train.mean(), y_train.std()

    def data(x: Any, y: Any) -> ArrayDataset:
        features = ((x - mean) / std).astype(np.float32)
        return ArrayDataset(features, ((y - y_mean) / y_std).astype(np.float32)[:, None])

    return data(x_train, y_train), data(x_test, y_test)


def test_mlp_regression_beats_the_mean_predictor(
    diabetes: tuple[ArrayDataset, ArrayDataset],
) -> None:
    train, test = diabetes
    net, _ = build_mlp([10, 16, 1], seed=0)
    history = fit(net, train, Adam(3e-3), test=test, epochs=40, batch_size=32)
    targets = test.arrays[1]
    outputs = predict(net, test)
    assert outputs.shape == targets.shape
    mse = float(np.mean((outputs - targets) ** 2))
    mean_predictor = float(np.mean((targets - train.arrays[1].mean()) ** 2))
    assert mse <= 0.6 * mean_predictor  # R^2 >= 0.4 (linear least squares: 0.45 on this split)
    assert history.test_loss[-1] == pytest.approx(mse, rel=1e-5)
    assert history.train_loss[-1] < history.train_loss[0]
    assert (history.train_acc, history.test_acc, history.epochs) == ([], [], 40)


@pytest.mark.parametrize("loss", [ops.l1_loss, ops.huber_loss])
def test_fit_trains_on_the_loss_given(
    diabetes: tuple[ArrayDataset, ArrayDataset], loss: Any
) -> None:
    train, test = diabetes
    net, _ = build_mlp([10, 16, 1], seed=0)
    history = fit(net, train, Adam(3e-3), test=test, epochs=10, loss=loss)
    outputs, targets = predict(net, test), test.arrays[1]
    expected = float(tn.evaluate(loss(_t(targets), _t(outputs))).numpy())
    assert history.test_loss[-1] == pytest.approx(expected, rel=1e-5)
    assert history.test_loss[-1] < history.test_loss[0]


def test_early_stopping_and_resuming_a_regression(
    diabetes: tuple[ArrayDataset, ArrayDataset], tmp_path: Path
) -> None:
    train, test = diabetes
    stopping = EarlyStopping("test_loss", patience=3)

    def run(seed: int, *callbacks: Callback) -> tuple[Any, Any]:
        net, params = build_mlp([10, 32, 1], seed=seed)
        opt = Adam(3e-2)
        every = [stopping, *callbacks]
        return fit(net, train, opt, test=test, epochs=30, callbacks=every), params

    straight, straight_params = run(0)
    assert straight.stopped_early
    assert straight.best_epoch == int(np.argmin(straight.test_loss))
    path = tmp_path / "run.ckpt"
    with pytest.raises(_Interrupted):  # a run killed in its fourth epoch
        run(0, ModelCheckpoint(path), LambdaCallback(on_epoch_end=_interrupt_at(3)))
    resumed, resumed_params = run(1, ModelCheckpoint(resume_from=path))
    assert dataclasses.asdict(resumed) == dataclasses.asdict(straight)
    for (name, a), (_, b) in zip(resumed_params.items(), straight_params.items(), strict=True):
        assert np.array_equal(a.numpy(), b.numpy()), name


class _Interrupted(Exception):
    pass


def _interrupt_at(epoch: int) -> Any:
    def on_epoch(done: int, history: Any) -> None:
        if done == epoch:  # before this epoch's checkpoint: the last one is the epoch before
            raise _Interrupted

    return on_epoch


def _t(array: Any) -> tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]:
    return tn.tensor(np.asarray(array, np.float32), tn.Float32, tn.CPU, tn.Dim2)


# --- ArrayDataset ---


def test_array_dataset_batches_like_batches() -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(10, 3)).astype(np.float32)
    labels = rng.integers(0, 4, 10)
    images = rng.normal(size=(10, 2, 3, 3))
    data = ArrayDataset(features, labels, images)
    classes = Dataset(features, labels, 4)
    ours = list(data.batches(4, np.random.default_rng(5)))
    theirs = list(batches(classes, 4, np.random.default_rng(5)))
    assert [len(b[0]) for b in ours] == [4, 4, 2]
    for (x, y, im), batch in zip(ours, theirs, strict=True):  # the same permutation rule
        assert np.array_equal(x, batch.x.numpy())
        assert np.array_equal(y, batch.labels)
        rows = [int(np.flatnonzero((features == row).all(1))[0]) for row in x]
        assert np.array_equal(im, images[rows])
    kept = list(data.batches(4, np.random.default_rng(5), drop_last=True))
    assert [len(b[1]) for b in kept] == [4, 4]
    in_order = list(ArrayDataset(labels).batches(3))
    assert np.array_equal(np.concatenate([b[0] for b in in_order]), labels)
    assert len(data) == 10
    assert repr(data) == "ArrayDataset(float32[10, 3], int64[10], float64[10, 2, 3, 3])"


def test_array_dataset_errors() -> None:
    with pytest.raises(tn.TrainingError) as caught:
        ArrayDataset(np.zeros((5, 2)), np.zeros(4))
    assert str(caught.value) == (
        "cannot make an ArrayDataset: the arrays differ in length (5, 4 rows).\n"
        "  declared : the same number of rows (samples) in every array\n"
        "  received : array 0: (5, 2), array 1: (4,)\n"
        "hint: align them: one row per sample in each, in the same order."
    )
    with pytest.raises(tn.TrainingError, match="array 1 must be a numpy array with one row"):
        ArrayDataset(np.zeros(3), [1, 2, 3])  # type: ignore[arg-type]
    with pytest.raises(tn.TrainingError, match="arrays must be one or more numpy arrays"):
        ArrayDataset()
    with pytest.raises(tn.TrainingError, match="batch_size must be an integer >= 1"):
        next(ArrayDataset(np.zeros(3)).batches(0))


# --- losses ---


def _reference(kind: str, d: Any, delta: float = 1.0) -> Any:
    if kind == "mse":
        return d**2, 2 * d
    if kind == "l1":
        return np.abs(d), np.sign(d)
    a = np.abs(d)
    value = np.where(a <= delta, 0.5 * d**2, delta * (a - 0.5 * delta))
    return value, np.where(a <= delta, d, delta * np.sign(d))


LOSSES = {"mse": ops.mse_loss, "l1": ops.l1_loss, "huber": ops.huber_loss}


@pytest.mark.parametrize("kind", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_regression_losses_and_their_gradients(kind: str, reduction: Any) -> None:
    rng = np.random.default_rng(1)
    truth = rng.normal(size=(6, 2))
    pred = truth + rng.normal(scale=2.0, size=(6, 2))  # both sides of Huber's delta
    t, p = (tn.tensor(a, tn.Float64, tn.CPU, tn.Dim2) for a in (truth, pred))
    loss = LOSSES[kind](t, p, reduction=reduction)
    value, slope = _reference(kind, pred - truth)
    scale = 1 / value.size if reduction == "mean" else 1.0
    assert float(tn.evaluate(loss).numpy()) == pytest.approx(value.sum() * scale, rel=1e-12)
    np.testing.assert_allclose(tn.evaluate(tn.grad(loss, p)).numpy(), slope * scale, rtol=1e-12)


def test_huber_delta() -> None:
    d = np.array([0.5, -3.0, 8.0])
    t, p = (tn.tensor(a, tn.Float64, tn.CPU, tn.Dim1) for a in (np.zeros(3), d))
    value, _ = _reference("huber", d, delta=2.0)
    loss = ops.huber_loss(t, p, delta=2.0, reduction="sum")
    assert float(tn.evaluate(loss).numpy()) == pytest.approx(value.sum())


def test_loss_errors() -> None:
    t = tn.tensor(np.zeros(4), tn.Float32, tn.CPU, tn.Dim1)
    p = tn.tensor(np.zeros((4, 1)), tn.Float32, tn.CPU, tn.Dim2)
    with pytest.raises(tn.ShapeError) as caught:
        ops.mse_loss(t, p)  # type: ignore[tag-mismatch]
    text = str(caught.value)
    assert text.startswith(
        "cannot build mse_loss: truth and prediction differ in shape.\n"
        "  truth    : Tensor[Float32, CPU, Dim1](4)\n"
        "  pred     : Tensor[Float32, CPU, Dim2](4, 1)\n"
    )
    assert text.endswith(
        "hint: give one target per prediction, e.g. reshape (n,) targets to (n, 1)."
    )
    with pytest.raises(tn.ParamError, match=r"l1_loss: reduction must be 'mean' or 'sum'"):
        ops.l1_loss(t, t, reduction="max")  # type: ignore[arg-type]
    with pytest.raises(tn.ParamError, match="huber_loss: delta must be a finite number > 0"):
        ops.huber_loss(t, t, delta=0.0)


# --- fit's checks for a regression ---


def test_fit_regression_errors(diabetes: tuple[ArrayDataset, ArrayDataset]) -> None:
    train, test = diabetes
    net, _ = build_mlp([10, 4, 1], seed=0)
    flat = ArrayDataset(train.arrays[0], train.arrays[1][:, 0])
    with pytest.raises(tn.TrainingError) as caught:
        fit(net, flat, SGD(0.1))
    assert str(caught.value) == (
        "cannot fit: train targets must be a (n, t) float32 matrix.\n"
        "  declared : float32 array (n samples, t columns)\n"
        "  received : float32 array (331,)\n"
        "hint: convert them with np.asarray(x, np.float32) (reshape (n,) targets to (n, 1))."
    )
    with pytest.raises(tn.TrainingError, match="unknown metric for early stopping of a regression"):
        fit(net, train, SGD(0.1), test=test, callbacks=[EarlyStopping("test_acc")])
    digits = Dataset(np.zeros((4, 10), np.float32), np.zeros(4, np.int64), 1)
    with pytest.raises(tn.TrainingError, match="loss= is for a regression on an ArrayDataset"):
        fit(net, digits, SGD(0.1), loss=ops.mse_loss)
    wide, _ = build_mlp([10, 4, 2], seed=0)
    with pytest.raises(tn.TrainingError, match="the model's output is not one target"):
        fit(wide, train, SGD(0.1))


def test_a_diverging_regression_stops(diabetes: tuple[ArrayDataset, ArrayDataset]) -> None:
    net, _ = build_mlp([10, 4, 1], seed=0)
    if typed_nn.debug.is_enabled():  # debug mode stops at the first node that overflows:
        # the squared error, or its mean where the squares are finite and their sum is not
        # (which one depends on the last bits of the earlier steps: e.g. how the bias
        # gradients' column sums are added)
        with pytest.raises(tn.NumericError, match=r"(square|reduce_mean) produced \d+ Inf"):
            fit(net, diabetes[0], SGD(1e9), epochs=3)
        return
    with pytest.raises(tn.TrainingError) as caught:
        fit(net, diabetes[0], SGD(1e9), epochs=3)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("cannot train: the loss is inf at epoch 1, batch 2")
    assert lines[4:6] == [
        "  declared      : a finite loss",
        "  received      : inf: not a finite number; the run has diverged",
    ]
