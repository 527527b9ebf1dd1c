"""fit: training steps against numpy, history, early stopping, progress, errors (typed_nn.train)."""

from __future__ import annotations

import io
import math
import re
import sys
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import typed_nn as tn
from typed_nn.evaluate import hooks
from typed_nn.model import SGD, Adam, GradCollector, Momentum, Optimizer
from typed_nn.train import (
    Dataset,
    EarlyStopping,
    History,
    LambdaCallback,
    OnNonFinite,
    ProgressBar,
    accuracy,
    fit,
    predict,
)
from typed_nn.train.classifier import build_mlp, cosine_schedule, make_optimizer


def blobs(n: int = 60, seed: int = 0) -> Dataset:
    """Three well separated Gaussian blobs in 4-D."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n, dtype=np.int64) % 3
    centres = np.eye(3, 4, dtype=np.float32) * 3.0
    features = (centres[labels] + rng.normal(0, 0.5, (n, 4))).astype(np.float32)
    return Dataset(features, labels, 3)


def noise(n: int = 60, seed: int = 0) -> Dataset:
    """Random features and random labels: no weights fit them, so a huge learning rate
    soon gives some sample's class a probability of 0 (a loss of inf)."""
    rng = np.random.default_rng(seed)
    return Dataset(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n), 3)


def softmax(z: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    out: npt.NDArray[np.float32] = e / e.sum(axis=1, keepdims=True)
    return out


def test_one_epoch_of_sgd_matches_numpy() -> None:
    """The step graph, built once and fed each batch in place, computes every batch anew."""
    data = blobs(23)
    net, params = build_mlp([4, 3], seed=1)  # one linear layer: logits = x W + b
    w0, b0 = params.try_get("mlp/fc1/weight"), params.try_get("mlp/fc1/bias")
    assert w0 is not None
    assert b0 is not None
    # float32 at run time; numpy's stubs widen the float32 - float64-typed update to float64.
    w: npt.NDArray[np.floating[Any]] = w0.numpy().copy()
    b: npt.NDArray[np.floating[Any]] = b0.numpy().copy()
    fit(net, data, SGD(0.5), epochs=2, batch_size=5, seed=7)
    rng = np.random.default_rng(7)
    for _ in range(2):
        order = rng.permutation(len(data))
        for i in range(0, len(data), 5):
            idx = order[i : i + 5]
            x, y = data.features[idx], np.eye(3, dtype=np.float32)[data.labels[idx]]
            g = (softmax(x @ w + b) - y) / len(idx)
            w, b = w - 0.5 * x.T @ g, b - 0.5 * g.sum(axis=0)
    assert np.allclose(w0.numpy(), w, rtol=1e-4, atol=1e-5)
    assert np.allclose(b0.numpy(), b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("n", "batch"), [(23, 5), (64, 4), (83, 4)])
def test_history_loss_and_accuracy_match_numpy(n: int, batch: int) -> None:
    """train_loss is the mean NLL of each batch before its update, train_acc the hits
    (fit reduces them in chunks of 16 batches: 1, exactly 1, and 2 with a short batch)."""
    data = blobs(n)
    net, params = build_mlp([4, 3], seed=2)
    w0, b0 = params.try_get("mlp/fc1/weight"), params.try_get("mlp/fc1/bias")
    assert w0 is not None
    assert b0 is not None
    # float32 at run time; numpy's stubs widen the float32 - float64-typed update to float64.
    w: npt.NDArray[np.floating[Any]] = w0.numpy().copy()
    b: npt.NDArray[np.floating[Any]] = b0.numpy().copy()
    history = fit(net, data, SGD(0.5), epochs=2, batch_size=batch, seed=3)
    rng = np.random.default_rng(3)
    for epoch in range(2):
        order = rng.permutation(len(data))
        loss_sum, hits = 0.0, 0
        for i in range(0, len(data), batch):
            idx = order[i : i + batch]
            x, y = data.features[idx], np.eye(3, dtype=np.float32)[data.labels[idx]]
            p = softmax(x @ w + b)
            loss_sum += float(-np.log(p[y > 0]).sum())
            hits += int(np.sum(p.argmax(axis=1) == data.labels[idx]))
            g = (p - y) / len(idx)
            w, b = w - 0.5 * x.T @ g, b - 0.5 * g.sum(axis=0)
        assert history.train_loss[epoch] == pytest.approx(loss_sum / len(data), rel=1e-4)
        assert history.train_acc[epoch] == hits / len(data)


def eager_fit(net: Any, data: Dataset, opt: Optimizer, epochs: int, batch: int) -> None:
    """fit's batches and shuffling, each step eager: tn.grad evaluated, then ``opt.step``."""
    from typed_nn import ops
    from typed_nn.layers import LayerInput, LayerOutput

    rng = np.random.default_rng(0)
    collected: GradCollector[tn.Float32, tn.CPU] = GradCollector(tn.Float32, tn.CPU)
    for _ in range(epochs):
        order = rng.permutation(len(data))
        for start in range(0, len(data), batch):
            idx = order[start : start + batch]
            x = tn.tensor(data.features[idx], tn.Float32, tn.CPU, tn.Dim2)
            y = tn.tensor(
                np.eye(3, dtype=np.float32)[data.labels[idx]], tn.Float32, tn.CPU, tn.Dim2
            )
            probs = ops.softmax(
                net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
            )
            net.feed_backward(net.output_cont().set(LayerOutput, probs))
            collected = GradCollector(tn.Float32, tn.CPU)
            net.grad_collect(collected)
            weights = [w for _, w, _ in collected]
            grads = tn.grad(ops.nll_loss(y, probs), weights)
            opt.step(list(zip(weights, grads, strict=True)))


def lr_schedule(t: int) -> float:
    return 0.05 / (1 + t)


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (SGD, {"weight_decay": 0.01}),
        (Momentum, {"momentum": 0.9, "weight_decay": 0.01}),
        (Momentum, {"momentum": 0.8, "nesterov": True}),
        (Adam, {"weight_decay": 0.1}),
        (Adam, {"weight_decay": 0.01, "decoupled_weight_decay": False}),
    ],
)
def test_the_compiled_step_equals_the_eager_optimizer_step(
    cls: type[Optimizer], kwargs: dict[str, Any]
) -> None:
    """Each optimizer states its rule once: fit's compiled step (every update in one Step,
    written after every read) gives the weights and state of eager ``step`` calls, with a
    schedule (a run-time number of the compiled step)."""
    finals = []
    for compiled in (True, False):
        net, params = build_mlp([4, 6, 3], seed=3)
        opt = cls(lr_schedule, **kwargs)
        if compiled:
            fit(net, blobs(23), opt, epochs=3, batch_size=5)
        else:
            eager_fit(net, blobs(23), opt, 3, 5)
        assert opt.step_count == 15
        state = {
            f"{n}/{k}": v.numpy().copy() for n, t in params.items() for k, v in opt.state(t).items()
        }
        finals.append(state | {name: t.numpy().copy() for name, t in params.items()})
    assert finals[0].keys() == finals[1].keys()
    for name, value in finals[0].items():
        assert np.allclose(value, finals[1][name], rtol=1e-5, atol=1e-6), name


def test_fit_lowers_the_loss_and_records_history() -> None:
    train, test = blobs(60, seed=0), blobs(30, seed=1)
    net, _ = build_mlp([4, 8, 3], "tanh", seed=0)
    history = fit(net, train, make_optimizer("adam", 0.05), test=test, epochs=6, batch_size=8)
    assert history.epochs == 6
    assert len(history.train_acc) == len(history.test_acc) == 6
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]
    assert history.test_acc[-1] == accuracy(net, test)
    assert history.test_acc[-1] > 0.9
    assert history.best_epoch is None
    assert not history.stopped_early


def test_predict_matches_a_numpy_forward() -> None:
    data = blobs(12)
    net, params = build_mlp([4, 5, 3], "relu", seed=2)
    found = dict(params.items())
    names = ("mlp/fc1/weight", "mlp/fc1/bias", "mlp/fc2/weight", "mlp/fc2/bias")
    w1, b1, w2, b2 = (found[name].numpy() for name in names)
    want = softmax(np.maximum(data.features @ w1 + b1, 0) @ w2 + b2)
    assert np.allclose(predict(net, data), want, rtol=1e-4, atol=1e-6)


def test_early_stopping_restores_the_best_weights() -> None:
    data = blobs(30)
    net, params = build_mlp([4, 6, 3], seed=0)
    seen: list[dict[str, np.ndarray]] = []

    def record(epoch: int, history: History) -> None:
        seen.append({name: t.numpy().copy() for name, t in params.items()})

    # No later epoch can beat the first by 1e9: stop after `patience` epochs, restore epoch 0.
    stop = EarlyStopping("train_loss", patience=2, min_delta=1e9)
    history = fit(
        net,
        data,
        SGD(0.1),
        epochs=10,
        batch_size=10,
        callbacks=[stop, LambdaCallback(on_epoch_end=record)],
    )
    assert history.epochs == 3
    assert history.stopped_early
    assert history.best_epoch == 0
    for name, t in params.items():
        assert np.array_equal(t.numpy(), seen[0][name])
        assert not np.array_equal(t.numpy(), seen[-1][name])


def test_early_stopping_keeps_training_while_improving() -> None:
    data = blobs(30)
    net, _ = build_mlp([4, 6, 3], seed=0)
    stop = EarlyStopping("train_acc", patience=50)
    history = fit(net, data, SGD(0.1), epochs=4, batch_size=10, callbacks=[stop])
    assert history.epochs == 4
    assert not history.stopped_early
    assert history.best_epoch == int(np.argmax(history.train_acc))


def test_progress_lines_when_not_a_terminal() -> None:
    stream = io.StringIO()
    net, _ = build_mlp([4, 3], seed=0)
    fit(
        net,
        blobs(20),
        SGD(0.1),
        test=blobs(9, 1),
        epochs=2,
        batch_size=10,
        callbacks=[ProgressBar(stream)],
    )
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("epoch   2/2  loss ")
    assert "train acc" in lines[1]
    assert "test acc" in lines[1]


def test_no_progress_prints_nothing() -> None:
    stream = io.StringIO()
    net, _ = build_mlp([4, 3], seed=0)
    fit(net, blobs(20), SGD(0.1), epochs=2, batch_size=10)
    assert stream.getvalue() == ""


def test_progress_bar_with_tqdm() -> None:
    pytest.importorskip("tqdm")
    stream = io.StringIO()
    net, _ = build_mlp([4, 3], seed=0)
    fit(
        net,
        blobs(20),
        SGD(0.1),
        epochs=1,
        batch_size=10,
        callbacks=[ProgressBar(stream, bars=True)],
    )
    text = stream.getvalue()
    assert "epoch 1/1" in text
    assert "batch" in text
    assert text.rstrip().splitlines()[-1].startswith("epoch   1/1  loss")


def test_progress_without_tqdm_falls_back_to_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    stream = io.StringIO()
    net, _ = build_mlp([4, 3], seed=0)
    fit(
        net,
        blobs(20),
        SGD(0.1),
        epochs=2,
        batch_size=10,
        callbacks=[ProgressBar(stream, bars=True)],
    )
    assert [line[:12] for line in stream.getvalue().splitlines()] == [
        "epoch   1/2 ",
        "epoch   2/2 ",
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epochs": 0}, r"epochs must be an integer >= 1\.\n.*\n  received : 0 \(int\)"),
        (
            {"callbacks": [EarlyStopping("test_acc")]},
            r"early stopping on test_acc needs a test set\.\n.*\n  received : test=None",
        ),
        (
            {"callbacks": [EarlyStopping("val_loss")]},  # type: ignore[arg-type]
            r"unknown metric for early stopping\.\n.*train_loss, train_acc, test_acc\n"
            r"  received : 'val_loss' \(str\)",
        ),
        (
            {"callbacks": [EarlyStopping("train_loss", patience=0)]},
            r"EarlyStopping\.patience must be an integer >= 1\.\n.*\n  received : 0 \(int\)\n"
            r"hint: use e\.g\. EarlyStopping\('train_loss', patience=5",
        ),
        (
            {"callbacks": [EarlyStopping("train_loss", min_delta=-0.5)]},
            r"EarlyStopping\.min_delta must be a finite number >= 0\.\n.*\n  received : -0\.5",
        ),
        (
            {"callbacks": ["train_loss"]},
            r"callbacks must be a list of typed_nn\.train Callbacks\.\n.*\n"
            r"  received : \['train_loss'\]",
        ),
        (
            {"callbacks": EarlyStopping("train_loss")},
            r"callbacks must be a list of typed_nn\.train Callbacks\.\n.*\n"
            r"  received : EarlyStopping\(",
        ),
        (
            {"callbacks": [EarlyStopping("train_loss"), EarlyStopping("train_acc")]},
            r"two EarlyStopping callbacks\.\n  declared : at most one EarlyStopping\n",
        ),
        (
            {"callbacks": [ProgressBar(bars="yes")]},  # type: ignore[arg-type]
            r"ProgressBar\.bars must be one of None, True, False\.\n.*\n  received : 'yes'",
        ),
        (
            {"callbacks": [ProgressBar(3)]},  # type: ignore[arg-type]
            r"ProgressBar\.stream must be a text stream or None\.\n.*\n  received : 3 \(int\)",
        ),
        (
            {"callbacks": [OnNonFinite("ignore")]},  # type: ignore[arg-type]
            r"OnNonFinite\.action must be one of 'raise', 'continue'\.\n.*\n"
            r"  received : 'ignore'",
        ),
        (
            {"test": "blobs"},
            r"test must be a typed_nn\.train\.Dataset\.\n.*\n  received : 'blobs' \(str\)",
        ),
    ],
)
def test_fit_arguments_are_checked(kwargs: dict[str, object], match: str) -> None:
    net, _ = build_mlp([4, 3], seed=0)
    with pytest.raises(tn.TrainingError, match=r"^cannot fit: " + match):
        fit(net, blobs(6), SGD(0.1), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "replacement"),
    [
        ("progress", "callbacks=[ProgressBar()]"),
        ("stream", "callbacks=[ProgressBar(stream)]"),
        ("early_stopping", r"callbacks=[EarlyStopping(...)]"),
        ("on_epoch", "callbacks=[LambdaCallback(on_epoch_end=fn)]"),
        ("on_nonfinite", "callbacks=[OnNonFinite('continue')]"),
        ("checkpoint_path", "callbacks=[ModelCheckpoint(path, every=N)]"),
        ("checkpoint_every", "callbacks=[ModelCheckpoint(path, every=N)]"),
        ("resume_from", "callbacks=[ModelCheckpoint(path, resume_from=path)]"),
        ("device", "nothing: fit trains where the model's parameters live"),
        ("input_shape", "LayerModel(net, input_shape=...) as the model"),
    ],
)
def test_a_removed_keyword_names_its_callback(name: str, replacement: str) -> None:
    """fit's keyword arguments of before the callbacks: a TrainingError naming what replaces
    each, not Python's TypeError."""
    net, _ = build_mlp([4, 3], seed=0)
    with pytest.raises(tn.TrainingError) as caught:
        fit(net, blobs(6), SGD(0.1), **{name: None})  # type: ignore[arg-type]
    lines = str(caught.value).splitlines()
    assert lines[0] == f"cannot fit: {name}= is no argument of fit any more."
    assert lines[1].startswith(f"  {name}")
    assert lines[1].split(": ", 1)[1].startswith("use " + replacement)
    assert lines[-1] == (
        "hint: fit(model, train, optimizer, *, loss, test, epochs, batch_size, seed, "
        "callbacks, world): see docs/training.md."
    )


def _weights(params: Any) -> dict[str, npt.NDArray[Any]]:
    return {name: t.numpy().copy() for name, t in params.items()}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("batch_size", -5),  # took no step and reported a loss read from uninitialised memory
        ("batch_size", 0),  # ZeroDivisionError
        ("batch_size", 2.5),  # a raw TypeError
        ("batch_size", True),
        ("epochs", -1),
        ("epochs", 2.5),
        ("seed", -1),  # numpy's ValueError
        ("seed", 1.5),
    ],
)
def test_fit_rejects_bad_counts_before_any_step(name: str, value: object) -> None:
    """Each count is named with what it allows and what it received; nothing is trained."""
    net, params = build_mlp([4, 3], seed=0)
    before, optimizer = _weights(params), SGD(0.1)
    minimum = 0 if name == "seed" else 1
    shown = re.escape(f"{value!r} ({type(value).__name__})")
    match = (
        rf"^cannot fit: {name} must be an integer >= {minimum}\.\n"
        rf"  allowed  : an integer >= {minimum}\n  received : {shown}\nhint: use e\.g\. {name}="
    )
    with pytest.raises(tn.TrainingError, match=match):
        fit(net, blobs(12), optimizer, **{name: value})  # type: ignore[arg-type]
    assert optimizer.step_count == 0
    for key, value_before in _weights(params).items():
        np.testing.assert_array_equal(value_before, before[key])


@pytest.mark.parametrize("label", [-1, 3])
def test_fit_rejects_labels_outside_the_classes_before_any_step(label: int) -> None:
    """A label of -1 trained as the last class (negative indexing), 3 of 3 classes raised a
    raw IndexError; labels changed in place after the Dataset was made are checked too."""
    data = blobs(12)
    data.labels[5] = label
    net, _ = build_mlp([4, 3], seed=0)
    optimizer = SGD(0.1)
    match = (
        r"^cannot fit: train\.labels must be in 0 \.\. 2\.\n"
        r"  declared : integer classes 0 \.\. 2 \(n_classes 3\)\n"
        rf"  received : {label} at row 5 "
    )
    with pytest.raises(tn.TrainingError, match=match):
        fit(net, data, optimizer)
    assert optimizer.step_count == 0


def test_fit_rejects_a_training_set_that_is_not_a_dataset() -> None:
    data = blobs(6)
    net, _ = build_mlp([4, 3], seed=0)
    match = (
        r"^cannot fit: train must be a typed_nn\.train\.Dataset\.\n.*\n  received : \(array"
        r"(.|\n)*hint: wrap the arrays: Dataset\(features, labels, n_classes\)"
    )
    with pytest.raises(tn.TrainingError, match=match):
        fit(net, (data.features, data.labels), SGD(0.1))  # type: ignore[arg-type]


def test_fit_rejects_an_optimizer_that_is_not_one() -> None:
    net, _ = build_mlp([4, 3], seed=0)
    match = r"^cannot fit: optimizer must be a typed_nn\.model Optimizer\.\n.*\n  received : 'sgd'"
    with pytest.raises(tn.TrainingError, match=match):
        fit(net, blobs(6), "sgd")  # type: ignore[arg-type]


def test_fit_rejects_a_test_set_of_another_shape() -> None:
    net, _ = build_mlp([4, 3], seed=0)
    other = Dataset(np.zeros((5, 3), np.float32), np.zeros(5, np.int64), 3)
    match = (
        r"^cannot fit: the test set does not match the training set\.\n"
        r"  declared : 4 features, 3 classes \(train\)\n  received : 3 features, 3 classes \(test\)"
    )
    with pytest.raises(tn.TrainingError, match=match):
        fit(net, blobs(6), SGD(0.1), test=other)


def test_empty_training_set() -> None:
    net, _ = build_mlp([4, 3], seed=0)
    empty = Dataset(np.zeros((0, 4), np.float32), np.zeros(0, np.int64), 3)
    with pytest.raises(tn.TrainingError, match="the training set is empty"):
        fit(net, empty, SGD(0.1))


def test_model_output_must_match_the_classes() -> None:
    net, _ = build_mlp([4, 5], seed=0)  # 5 logits for 3 classes
    with pytest.raises(tn.TrainingError, match="the model's output is not one score per class"):
        fit(net, blobs(6), SGD(0.1))


def test_unknown_activation_and_optimizer() -> None:
    with pytest.raises(tn.TrainingError, match=r"^cannot build the MLP: unknown activation 'gelu'"):
        build_mlp([4, 3], "gelu")  # type: ignore[call-overload]
    with pytest.raises(tn.TrainingError, match="unknown optimizer 'rmsprop'"):
        make_optimizer("rmsprop")  # type: ignore[arg-type]


def test_make_optimizer_rejects_an_unknown_name_even_with_a_learning_rate() -> None:
    """With lr given the name was never checked: 'rmsprop' silently made Adam."""
    match = (
        r"^cannot make the optimizer: unknown optimizer 'rmsprop'\.\n"
        r"  choices  : sgd, momentum, adam\n  received : 'rmsprop'\n"
        r"hint: use one of: sgd, momentum, adam\."
    )
    with pytest.raises(tn.TrainingError, match=match):
        make_optimizer("rmsprop", 0.01)  # type: ignore[arg-type]


@pytest.mark.parametrize("steps", [0, -3, 2.5])
def test_make_optimizer_rejects_a_bad_total_steps(steps: object) -> None:
    match = r"^cannot make the optimizer: total_steps must be an integer >= 1\."
    with pytest.raises(tn.TrainingError, match=match):
        make_optimizer("sgd", 0.1, total_steps=steps)  # type: ignore[arg-type]


def test_cosine_schedule() -> None:
    lr = cosine_schedule(0.2, 10)
    assert lr(0) == pytest.approx(0.2)
    assert lr(5) == pytest.approx(0.1)
    assert lr(10) == pytest.approx(0.0)
    assert lr(50) == pytest.approx(0.0)
    opt = make_optimizer("sgd", 0.2, total_steps=10)
    assert opt.current_lr() == pytest.approx(0.2)


@pytest.mark.parametrize("rows", [32, 29])
def test_the_step_seed_gradient_is_the_nll_softmax_gradient_for_one_hot_targets(
    rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fit's step seeds the backward with (p - y) / rows: bit for bit the gradient of the
    mean NLL through the softmax (the evaluator's rewritten general form) when rows are
    one-hot. Debug mode evaluates node by node, without the rewrite: switched off here."""
    monkeypatch.setattr(hooks, "node_checks", [])
    rng = np.random.default_rng(rows)
    logits = tn.Tensor(
        (rng.normal(size=(rows, 10)) * 4).astype(np.float32), tn.Float32, tn.CPU, tn.Dim2
    )
    y = tn.Tensor(
        np.eye(10, dtype=np.float32)[rng.integers(0, 10, rows)], tn.Float32, tn.CPU, tn.Dim2
    )
    p = tn.ops.softmax(logits)
    one = tn.scalar(1.0, tn.Float32, tn.CPU)
    general = tn.evaluate(tn.ops.softmax_grad(tn.ops.nll_loss_grad(one, y, p), p)).numpy()
    seed = tn.evaluate((p - y) * (1.0 / rows)).numpy()
    np.testing.assert_array_equal(seed, general)


def test_a_diverging_fit_stops_naming_the_epoch_batch_and_learning_rate() -> None:
    """SGD(1e6) returned losses [inf, nan, nan, nan] and NaN weights with no error."""
    net, _ = build_mlp([4, 3], seed=0)
    optimizer = SGD(1e6)
    match = (
        r"^cannot train: the loss is (inf|nan) at epoch 1, batch (\d+) \(learning rate 1e\+06\)\.\n"
        r"  epoch         : 1 of 4\n"
        r"  batch         : \2 of 12 \(5 samples each\)\n"
        r"  learning rate : 1e\+06\n"
        r"  declared      : a finite loss .*\n"
        r"  received      : (inf|nan): a probability of 0 or NaN; the run has diverged\n"
        r"  weights       : updated through batch \d+: they may hold NaN or Inf now\n"
        r"hint: lower the learning rate \(e\.g\. 100000\) and start again from fresh weights; "
        r"callbacks=\[OnNonFinite\('continue'\)\] trains on regardless\.$"
    )
    with pytest.raises(tn.TrainingError, match=match) as caught:
        fit(net, noise(60), optimizer, epochs=4, batch_size=5)
    # The batch named is the first whose loss is not finite: the ones before it were.
    batch = int(re.search(r"batch (\d+)", str(caught.value)).group(1))  # type: ignore[union-attr]
    assert 1 < batch <= optimizer.step_count <= 12


def test_a_diverging_schedule_names_the_learning_rate_at_that_step() -> None:
    net, _ = build_mlp([4, 3], seed=0)
    match = r"\(learning rate [\d.e+]+\)\.\n(.*\n){2}  learning rate : [\d.e+]+ \(the schedule at step \d+\)"
    with pytest.raises(tn.TrainingError, match=match):
        fit(net, noise(60), SGD(lambda t: 1e6 * (t + 1)), epochs=2, batch_size=5)


def test_on_nonfinite_continue_trains_on_and_records_the_losses() -> None:
    """The old behaviour, asked for by name; no numpy warning either (warnings are errors)."""
    net, _ = build_mlp([4, 3], seed=0)
    optimizer = SGD(1e6)
    history = fit(
        net, noise(60), optimizer, epochs=3, batch_size=5, callbacks=[OnNonFinite("continue")]
    )
    assert history.epochs == 3
    assert optimizer.step_count == 36
    assert not all(math.isfinite(loss) for loss in history.train_loss)


def test_a_diverging_fit_with_a_progress_bar_closes_it() -> None:
    pytest.importorskip("tqdm")
    stream = io.StringIO()
    net, _ = build_mlp([4, 3], seed=0)
    with pytest.raises(tn.TrainingError, match=r"^cannot train: the loss is"):
        fit(
            net,
            noise(60),
            SGD(1e6),
            epochs=2,
            batch_size=5,
            callbacks=[ProgressBar(stream, bars=True)],
        )
    assert "epoch 1/2" in stream.getvalue()


class PoisonLastStep(SGD):
    """SGD whose ``poison_at``-th step (1-based) runs with a NaN learning rate: that update
    writes NaN into the weights."""

    def __init__(self, lr: float, poison_at: int) -> None:
        super().__init__(lr)
        self.poison_at = poison_at

    def numbers(self) -> tuple[float, ...]:
        return (math.nan,) if self.step_count + 1 == self.poison_at else super().numbers()


def test_nan_weights_after_an_epochs_last_update_stop_training() -> None:
    """The last batch's update shows in no loss of that epoch: the weights are checked."""
    net, _ = build_mlp([4, 3], seed=0)
    match = (
        r"^cannot train: a weight became NaN or Inf at epoch 1, batch 4 \(learning rate 0\.1\)\.\n"
        r"(.*\n){3}  declared      : finite weights\n  received      : mlp/fc1/\w+ holds NaN or Inf"
    )
    with pytest.raises(tn.TrainingError, match=match):
        fit(net, blobs(20), PoisonLastStep(0.1, 4), epochs=3, batch_size=5)


@pytest.mark.gpu
def test_a_diverging_fit_on_the_gpu_stops_the_same_way(cupy_module: Any) -> None:
    """The losses come back to the host per chunk; the weights are checked on the device."""
    net, _ = build_mlp([4, 3], seed=0, device=tn.GPU)
    with pytest.raises(tn.TrainingError, match=r"^cannot train: the loss is (inf|nan) at epoch 1"):
        fit(net, noise(60), SGD(1e6), epochs=2, batch_size=5)
    net, _ = build_mlp([4, 3], seed=0, device=tn.GPU)
    poison = PoisonLastStep(0.1, 4)
    with pytest.raises(tn.TrainingError, match=r"^cannot train: a weight became NaN or Inf at "):
        fit(net, blobs(20), poison, epochs=2, batch_size=5)
