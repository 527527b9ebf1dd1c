"""Training checkpoints: parameters, optimizer state, generator and history round-trip exactly;
a checkpoint of another model or optimizer, or a damaged one, is refused with the model and
the optimizer unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors.numpy as st

import typed_nn as tn
from typed_nn import ops
from typed_nn.model import (
    SGD,
    Adam,
    Momentum,
    Optimizer,
    load_checkpoint,
    save_checkpoint,
    save_weights,
)
from typed_nn.model import checkpoint as checkpoint_module
from typed_nn.model.checkpoint import Json

Params = dict[str, tn.Tensor[tn.Float32, tn.CPU, Any]]


def make_params(seed: int = 0, hidden: int = 3) -> Params:
    rng = np.random.default_rng(seed)
    return {
        "fc/weight": tn.tensor(
            rng.normal(size=(4, hidden)).astype(np.float32), tn.Float32, tn.CPU, tn.Dim2
        ),
        "fc/bias": tn.tensor(
            rng.normal(size=(hidden,)).astype(np.float32), tn.Float32, tn.CPU, tn.Dim1
        ),
    }


def train(params: Params, optimizer: Optimizer, steps: int) -> None:
    w, b = params["fc/weight"], params["fc/bias"]
    x = tn.tensor(
        np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4), tn.Float32, tn.CPU, tn.Dim2
    )
    for _ in range(steps):
        loss = ops.reduce_sum(ops.square(ops.dot(x, w) + b))
        optimizer.step([(w, tn.grad(loss, w)), (b, tn.grad(loss, b))])


def state_of(params: Params, optimizer: Optimizer) -> dict[str, np.ndarray]:
    values = {n: w.numpy().copy() for n, w in params.items()}
    for n, w in params.items():
        values.update({f"{n}/{s}": t.numpy().copy() for s, t in optimizer.state(w).items()})
    return values


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name


OPTIMIZERS: dict[str, Callable[[], Optimizer]] = {
    "sgd": lambda: SGD(0.05, weight_decay=1e-3),
    "nesterov": lambda: Momentum(lambda t: 0.05 * 0.9**t, 0.9, nesterov=True),
    "adam": lambda: Adam(0.01, weight_decay=1e-2),
}


@pytest.mark.parametrize("kind", OPTIMIZERS)
def test_resumed_training_equals_straight_training(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "run.ckpt"
    straight, opt = make_params(0), OPTIMIZERS[kind]()
    train(straight, opt, 6)

    first, opt1 = make_params(0), OPTIMIZERS[kind]()
    train(first, opt1, 3)
    rng = np.random.default_rng(7)
    rng.permutation(10)
    history: dict[str, Json] = {"train_loss": [1.5, 0.5], "best_epoch": None}
    save_checkpoint(path, first, opt1, epoch=3, rng=rng, history=history)

    resumed, opt2 = make_params(1), OPTIMIZERS[kind]()  # other weights, fresh state
    ckpt = load_checkpoint(path, resumed, opt2)
    assert (ckpt.epoch, ckpt.history, opt2.step_count) == (3, history, 3)
    assert_same(state_of(resumed, opt2), state_of(first, opt1))
    assert np.array_equal(ckpt.rng().permutation(10), rng.permutation(10))
    train(resumed, opt2, 3)
    assert_same(state_of(resumed, opt2), state_of(straight, opt))


def test_file_is_plain_safetensors(tmp_path: Path) -> None:
    params, opt = make_params(), Adam(0.01)
    train(params, opt, 1)
    save_checkpoint(tmp_path / "c", params, opt, epoch=1, extra={"best/fc/bias": params["fc/bias"]})
    arrays = st.load_file(str(tmp_path / "c"))
    assert sorted(arrays) == [
        "extra/best/fc/bias",
        "optimizer/fc/bias/m",
        "optimizer/fc/bias/v",
        "optimizer/fc/weight/m",
        "optimizer/fc/weight/v",
        "param/fc/bias",
        "param/fc/weight",
    ]
    ckpt = load_checkpoint(tmp_path / "c", make_params(2), Adam(0.01))
    assert np.array_equal(ckpt.arrays["best/fc/bias"], params["fc/bias"].numpy())
    assert ckpt.rng_state is None
    assert ckpt.history is None


def saved_run(tmp_path: Path) -> Path:
    params, opt = make_params(0), Momentum(0.05, 0.9)
    train(params, opt, 2)
    path = tmp_path / "run.ckpt"
    save_checkpoint(path, params, opt, epoch=2)
    return path


def refused(path: Path, params: Params, optimizer: Optimizer) -> str:
    """The error loading ``path`` raises; the parameters and the optimizer are unchanged."""
    before, count = state_of(params, optimizer), optimizer.step_count
    with pytest.raises(tn.WeightFileError) as caught:
        load_checkpoint(path, params, optimizer)
    assert_same(state_of(params, optimizer), before)
    assert optimizer.step_count == count
    return str(caught.value)


def trained(seed: int, optimizer: Optimizer, hidden: int = 3) -> tuple[Params, Optimizer]:
    params = make_params(seed, hidden)
    train(params, optimizer, 1)
    return params, optimizer


def test_another_model_is_refused(tmp_path: Path) -> None:
    path = saved_run(tmp_path)
    text = refused(path, *trained(1, Momentum(0.05, 0.9), hidden=5))
    assert text == (
        f"cannot load the checkpoint {path}: it was saved from another model or optimizer.\n"
        f"  file        : {path}\n"
        "  'fc/bias'   : file has F32[3], parameter is Tensor[Float32, CPU, Dim1](5)\n"
        "  'fc/weight' : file has F32[4, 3], parameter is Tensor[Float32, CPU, Dim2](4, 5)\n"
        "hint: nothing was changed. Resume with the model and the optimizer the checkpoint was "
        "saved from (the same layers, optimizer kind and settings, learning rate or schedule)."
    )
    params = make_params(1)
    params["extra"] = params.pop("fc/bias")
    assert "  missing in file : 'extra'\n  not a parameter : 'fc/bias'\n" in refused(
        path, params, Momentum(0.05, 0.9)
    )


@pytest.mark.parametrize(
    ("optimizer", "line"),
    [
        (Adam(0.05), "  optimizer : file has Momentum, optimizer is Adam\n"),
        (Momentum(0.05, 0.8), "  Momentum momentum : file has 0.9, optimizer has 0.8\n"),
        (
            Momentum(0.05, 0.9, nesterov=True),
            "  Momentum nesterov : file has False, optimizer has True\n",
        ),
        (
            Momentum(lambda t: 0.1 / (t + 1), 0.9),
            "  learning rate at step 2 : file has 0.05, the schedule gives 0.03333333333333333\n",
        ),
    ],
)
def test_another_optimizer_is_refused(tmp_path: Path, optimizer: Optimizer, line: str) -> None:
    path = saved_run(tmp_path)
    assert line in refused(path, *trained(1, optimizer))


def test_a_number_learning_rate_is_restored_as_saved(tmp_path: Path) -> None:
    """A loop that set the rate by hand resumes (it was refused as another optimizer; PyTorch's
    optimizer state restores the rate too; outside tester 8, a_resume)."""
    path = saved_run(tmp_path)
    params, optimizer = trained(1, Momentum(0.003, 0.9))
    load_checkpoint(path, params, optimizer)
    assert optimizer.lr == 0.05


def test_a_saved_rate_that_is_no_number_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a version 2 file, whose checksum covers the tensors only (3's would find the edit)
    monkeypatch.setattr(checkpoint_module, "FORMAT_VERSION", 2)
    path = saved_run(tmp_path)
    monkeypatch.undo()
    data = path.read_bytes()
    assert data.count(b'\\"lr\\": 0.05') == 1
    path.write_bytes(data.replace(b'\\"lr\\": 0.05', b'\\"lr\\": NaN\x20'))
    text = refused(path, *trained(1, Momentum(0.05, 0.9)))
    assert "  learning rate : file has nan, not a finite number >= 0\n" in text


def test_a_run_saved_with_a_schedule_resumes_only_with_a_schedule(tmp_path: Path) -> None:
    """A number would freeze the schedule's rate for the rest of the run (review)."""
    params, opt = make_params(0), Momentum(lambda t: 0.1 / (t + 1), 0.9)
    train(params, opt, 2)
    save_checkpoint(tmp_path / "s.ckpt", params, opt, epoch=2)
    text = refused(tmp_path / "s.ckpt", *trained(1, Momentum(0.05, 0.9)))
    assert "the file's run used a schedule, the optimizer has a number" in text
    load_checkpoint(tmp_path / "s.ckpt", *trained(1, Momentum(lambda t: 0.1 / (t + 1), 0.9)))


def test_a_history_with_int_keys_checksums_as_the_file_holds_it(tmp_path: Path) -> None:
    """JSON makes int keys strings (and sorts them as text): the checksum is of what the file
    holds, so the file loads (review: it was 'damaged')."""
    params, opt = make_params(0), Momentum(0.05, 0.9)
    train(params, opt, 1)
    for history in ({"per_class": {1: 0.5, 10: 0.25, 2: 0.125}}, {"m": {1: 0.5, "a": 1}}):
        save_checkpoint(tmp_path / "h.ckpt", params, opt, epoch=1, history=history)
        loaded = load_checkpoint(tmp_path / "h.ckpt", params, opt).history
        assert loaded == {k: {str(n): v for n, v in d.items()} for k, d in history.items()}


def test_damaged_files_are_refused(tmp_path: Path) -> None:
    path = saved_run(tmp_path)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x40  # one bit of a tensor's bytes
    path.write_bytes(bytes(data))
    text = refused(path, *trained(1, Momentum(0.05, 0.9)))
    assert text.startswith(
        f"cannot load the checkpoint {path}: its bytes do not match the checksum saved with them.\n"
    )
    assert text.endswith(
        "hint: the file is damaged or not a typed_nn checkpoint; nothing was changed. "
        "Write it again with typed_nn.model.save_checkpoint (or fit's ModelCheckpoint)."
    )

    for field in (b'\\"step_count\\": ', b'\\"epoch\\": '):  # a digit of the metadata
        damaged = bytearray(saved_run(tmp_path).read_bytes())
        at = damaged.index(field) + len(field)
        damaged[at] ^= 0x02
        path.write_bytes(bytes(damaged))
        text = refused(path, *trained(1, Momentum(0.05, 0.9)))
        assert "its bytes do not match the checksum saved with them" in text, field

    path.write_bytes(bytes(data[:-10]))  # truncated
    assert "the file is truncated" in refused(path, *trained(1, Momentum(0.05, 0.9)))
    path.write_bytes(b"")  # a checkpoint's error, not a weight file's (except CheckpointError)
    with pytest.raises(tn.CheckpointError) as caught:
        load_checkpoint(path, *trained(1, Momentum(0.05, 0.9)))
    assert str(caught.value).startswith(
        f"cannot load the checkpoint {path}: the file has 0 bytes, fewer than the 8-byte "
        "header length.\n"
    )
    assert "Write it again with typed_nn.model.save_checkpoint" in str(caught.value)
    with pytest.raises(FileNotFoundError) as missing:
        load_checkpoint(tmp_path / "nope.ckpt", *trained(1, Momentum(0.05, 0.9)))
    assert str(missing.value).endswith(
        "hint: check the path; save_checkpoint(path, model, optimizer, epoch=...) or fit's "
        "ModelCheckpoint writes one."
    )

    params = make_params()
    save_weights(path, params)  # a weight file, not a checkpoint
    assert refused(path, *trained(1, Momentum(0.05, 0.9))).startswith(
        f"cannot load the checkpoint {path}: it is a safetensors file without checkpoint "
        "metadata (a weight file?).\n"
    )
    save_weights(path, params, metadata={"typed_nn.checkpoint": '{"version": 1}'})
    assert refused(path, *trained(1, Momentum(0.05, 0.9))).startswith(
        f"cannot load the checkpoint {path}: its metadata lacks a valid 'model'.\n"
    )


def test_saving_checks_its_arguments(tmp_path: Path) -> None:
    params, opt = make_params(), Adam(0.01)
    train(params, opt, 1)
    with pytest.raises(tn.CheckpointError, match="the optimizer keeps state for 1 weight"):
        save_checkpoint(tmp_path / "c", {"fc/weight": params["fc/weight"]}, opt, epoch=1)
    with pytest.raises(tn.ParamError, match=r"epoch must be an integer >= 0 \(the epochs done\)"):
        save_checkpoint(tmp_path / "c", params, opt, epoch=-1)
    with pytest.raises(tn.ParamError, match="the history must be JSON data"):
        save_checkpoint(tmp_path / "c", params, opt, epoch=1, history={"x": object()})
    assert not (tmp_path / "c").exists()
    with pytest.raises(
        tn.ParamError,
        match=r"^save_checkpoint: history must be a mapping of strings to JSON data \(a JSON "
        r"object\), or None\.\n  allowed  : .*\n  received : \[0\.3, 0\.2\] \(list\)\n"
        r"hint: pass e\.g\. \{'loss': \[0\.3, 0\.2\]\}, or dataclasses\.asdict\(history\)",
    ):
        save_checkpoint(tmp_path / "c", params, opt, epoch=1, history=[0.3, 0.2])  # type: ignore[arg-type]
    with pytest.raises(tn.ParamError, match=r"^save_checkpoint: rng must be a numpy Generator"):
        save_checkpoint(tmp_path / "c", params, opt, epoch=1, rng=np.random.RandomState(0))  # type: ignore[arg-type]
    with pytest.raises(tn.OperandError, match=r"extra array 'best' is not typed_nn data named by"):
        save_checkpoint(tmp_path / "c", params, opt, epoch=1, extra={"best": np.zeros(3)})  # type: ignore[dict-item]
    assert not (tmp_path / "c").exists()


# --- a layer's whole state: random-number states -------------------------------------------


def dropout_layer(seed: int) -> Any:
    from typed_nn.layers import DropoutLayer, LayerInMap, LayerInput, make_train_layer

    cls = make_train_layer(DropoutLayer, LayerInMap({LayerInput: tn.Matrix[tn.Float32, tn.CPU]}))
    return cls("drop", 0.5, seed=seed)


def test_a_layer_saves_its_random_number_states_and_a_mapping_has_none(tmp_path: Path) -> None:
    layer, path = dropout_layer(3), tmp_path / "c.ckpt"
    layer.calls = 4
    save_checkpoint(path, layer, SGD(0.1), epoch=2)
    assert sorted(st.load_file(path)) == ["generator/drop"]
    again = dropout_layer(0)
    assert load_checkpoint(path, again, SGD(0.1)).epoch == 2
    assert (again.seed, again.calls) == (3, 4)
    load_checkpoint(path, {}, SGD(0.1))  # a mapping of parameters has no generators to restore
    save_checkpoint(tmp_path / "p.ckpt", {}, SGD(0.1), epoch=1)
    with pytest.raises(
        tn.CheckpointError,
        match=r"it was saved from another model or optimizer\.\n  file            : .*\n"
        r"  missing in file : 'drop'",
    ):
        load_checkpoint(tmp_path / "p.ckpt", again, SGD(0.1))
    assert (again.seed, again.calls) == (3, 4)  # unchanged


def test_a_tied_tensor_loads_under_the_path_an_earlier_release_saved() -> None:
    """A checkpoint names a tied tensor by its first path, which changed once (own parameters
    before submodules', as PyTorch orders them): a file saved before still loads (review)."""
    from typed_nn import nn
    from typed_nn.model.checkpoint import _module_tensors, _under_saved_names

    class Enc(nn.Module):
        def __init__(self) -> None:
            self.weight = tn.zeros((2, 2), tn.Float32, tn.CPU)

    class Net(nn.Module):
        def __init__(self) -> None:
            self.enc = Enc()
            self.head = self.enc.weight

    net = Net()
    tensors = _module_tensors(net)
    assert list(tensors) == ["head"]
    older: Any = {"param/enc.weight": None}  # the names a file holds
    assert list(_under_saved_names(net, tensors, older)) == ["enc.weight"]
    newer: Any = {"param/head": None}
    assert list(_under_saved_names(net, tensors, newer)) == ["head"]
