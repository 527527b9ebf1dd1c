"""The typed-nn console command (typed_nn.cli)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import cli, nn
from typed_nn.cli import main
from typed_nn.model import load_weights
from typed_nn.train import accuracy, load_digits
from typed_nn.train.modules import ConvClassifier, MLPClassifier


def _tensors(model: nn.Module) -> dict[str, tn.Tensor[Any, Any, Any]]:
    """A module's parameters by name (each a principal tensor), as load_weights takes them."""
    return {n: t for n, t in nn.named_parameters(model) if isinstance(t, tn.Tensor)}


def test_short_digits_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["train", "digits", "--epochs", "2", "--out", str(tmp_path), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    last = out.rstrip("\n").splitlines()[-1]
    match = re.fullmatch(r"test accuracy: (0\.\d{3}|1\.000)", last)
    assert match is not None, out
    weights, plot = tmp_path / "digits_mlp.safetensors", tmp_path / "history.png"
    assert f"weights saved to {weights}" in out
    assert weights.is_file()
    pytest.importorskip("matplotlib")
    assert f"plot saved to {plot}" in out
    assert plot.read_bytes()[:4] == b"\x89PNG"
    # The saved weights reload into a fresh module of the same shape and give its accuracy.
    model = MLPClassifier([64, 128, 10], gen=tn.Generator(99))
    loaded = load_weights(weights, _tensors(model))
    assert loaded == ("layers.0.bias", "layers.0.weight", "layers.1.bias", "layers.1.weight")
    assert f"{accuracy(model, load_digits().test):.3f}" == match.group(1)
    assert float(match.group(1)) > 0.8  # two epochs already learn most digits


def test_short_cnn_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--model cnn``: the digits as (N, 1, 8, 8) images through conv -> relu -> pool ->
    linear, Adam by default; the weights are the conv's OIHW kernel and the linear layer."""
    argv = ["train", "digits", "--model", "cnn", "--epochs", "3", "--out", str(tmp_path)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err.splitlines()[-1].startswith("epoch   3/3  loss")
    assert out.startswith(
        "training CNN conv 8 3x3 -> relu -> maxpool 2 -> linear 10 on digits: 1437 train / "
        "360 test samples, adam (lr 0.03, cosine)"
    )
    match = re.fullmatch(r"test accuracy: (0\.\d{3}|1\.000)", out.rstrip("\n").splitlines()[-1])
    assert match is not None, out
    weights = tmp_path / "digits_cnn.safetensors"
    assert f"weights saved to {weights}" in out
    model = ConvClassifier(64, 10, gen=tn.Generator(99))
    params = _tensors(model)
    loaded = load_weights(weights, params)
    assert loaded == ("conv.bias", "conv.weight", "fc.bias", "fc.weight")
    assert params["conv.weight"].shape == (8, 1, 3, 3)  # OIHW, PyTorch's layout
    reloaded = accuracy(model, load_digits().test)
    assert f"{reloaded:.3f}" == match.group(1)
    assert reloaded > 0.9  # three epochs already learn most digits


def test_progress_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "digits", "--epochs", "1", "--widths", "16", "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("training MLP 64-16-10 (relu) on digits: 1437 train / 360 test samples")
    assert err.splitlines()[-1].startswith("epoch   1/1  loss")


def test_help_reads_well(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--help"]) == 0
    text = capsys.readouterr().out
    assert "Train an MLP classifier" in text
    assert "--epochs N            passes over the data (default: 25)" in text
    assert "--optimizer {sgd,momentum,adam}" in text
    assert "--model {mlp,cnn}" in text
    assert "example:\n  typed-nn train digits --epochs 30" in text


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err  # one line, no traceback
    return err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "mnist"], "typed-nn: error: unknown dataset 'mnist' (available: digits)"),
        (
            ["train", "digits", "--epochs", "0"],
            "typed-nn: error: --epochs must be at least 1, got 0",
        ),
        (["train", "digits", "--widths", "0"], "typed-nn: error: --widths must all be at least 1"),
        (
            ["train", "digits", "--lr", "-1"],
            "typed-nn: error: --lr must be a finite number > 0, got -1.0",
        ),
        (
            ["train", "digits", "--lr", "inf"],
            "typed-nn: error: --lr must be a finite number > 0, got inf",
        ),
        (  # printed a numpy traceback
            ["train", "digits", "--seed", "-1"],
            "typed-nn: error: --seed must be at least 0, got -1",
        ),
        (
            ["train", "digits", "--optimizer", "rmsprop"],
            "typed-nn: error: argument --optimizer: invalid choice",
        ),
        (["train", "digits", "--bogus"], "typed-nn: error: unrecognized arguments: --bogus"),
        (["fly"], "typed-nn: error: argument COMMAND: invalid choice: 'fly'"),
    ],
)
def test_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _error(argv, capsys).startswith(message)


def test_missing_scikit_learn(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    err = _error(["train", "digits", "--no-progress"], capsys)
    assert err == (
        "typed-nn: error: the digits data needs scikit-learn, which is not installed. "
        "(install the examples extra: pip install -e '.[examples]')\n"
    )


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "train     train an MLP on a bundled data set" in capsys.readouterr().out


def test_plot_skipped_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    argv = [
        "train",
        "digits",
        "--epochs",
        "1",
        "--widths",
        "8",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "plot skipped: plotting the history needs matplotlib" in out
    assert not (tmp_path / "history.png").exists()
    assert np.isfinite(float(out.splitlines()[-1].split(": ")[1]))


def test_gpu_without_cupy_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy fails, as without the extra
    err = _error(["train", "digits", "--device", "gpu", "--no-progress"], capsys)
    assert err == (
        "typed-nn: error: GPU data needs cupy, which is not installed. (install the gpu extra: "
        "pip install 'typed_nn[gpu]' (CUDA 12) or 'typed_nn[gpu-cuda13]' (CUDA 13))\n"
    )


def _no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any training fail the test: the command must stop before it."""

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("trained before checking the arguments")

    monkeypatch.setattr(cli, "fit", fail)
    monkeypatch.setattr(cli, "load_digits", fail)


def test_out_pointing_to_a_file_is_refused_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It failed after training with ``[Errno 17] File exists``, the model thrown away."""
    _no_training(monkeypatch)
    out = tmp_path / "taken"
    out.write_text("not a folder")
    err = _error(["train", "digits", "--out", str(out)], capsys)
    assert err == (
        f"typed-nn: error: --out {out} is an existing file, not a folder (give a folder path)\n"
    )
    assert out.read_text() == "not a folder"


def test_out_under_a_file_is_refused_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_training(monkeypatch)
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "runs" / "digits"
    err = _error(["train", "digits", "--out", str(out)], capsys)
    assert err == (
        f"typed-nn: error: --out {out} cannot be made: {tmp_path / 'file'} is a file, "
        "not a folder\n"
    )


def test_out_whose_weight_file_is_a_folder_is_refused_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_training(monkeypatch)
    (tmp_path / "digits_mlp.safetensors").mkdir()
    err = _error(["train", "digits", "--out", str(tmp_path)], capsys)
    assert err == (
        f"typed-nn: error: --out {tmp_path}: {tmp_path / 'digits_mlp.safetensors'} is a folder "
        "(remove or rename it)\n"
    )


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root may write anywhere")
def test_out_in_a_read_only_folder_is_refused_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_training(monkeypatch)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        err = _error(["train", "digits", "--out", str(locked / "out")], capsys)
    finally:
        locked.chmod(0o700)
    assert (
        err == f"typed-nn: error: --out {locked / 'out'} cannot be made: {locked} is not writable\n"
    )


def test_a_diverging_run_exits_1_and_saves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--lr 1e9`` exited 0 and saved weights that were all NaN."""
    out = tmp_path / "out"
    argv = ["train", "digits", "--lr", "1e9", "--epochs", "2", "--widths", "8", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 1
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert re.fullmatch(
        r"typed-nn: error: cannot train: the loss is (inf|nan) at epoch \d+, batch \d+ "
        r"\(learning rate [\d.e+]+\)\. Nothing saved \(try a smaller --lr\)\.\n",
        err,
    ), err
    assert not out.exists()


def test_resumed_run_saves_the_weights_of_the_uninterrupted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["train", "digits", "--widths", "16", "--schedule", "constant", "--no-progress"]
    assert main([*common, "--epochs", "4", "--out", str(tmp_path / "straight")]) == 0
    ckpt = tmp_path / "ckpt" / "run.ckpt"  # its folder is made
    argv = [*common, "--epochs", "2", "--checkpoint", str(ckpt), "--out", str(tmp_path / "a")]
    assert main(argv) == 0
    argv = [*common, "--epochs", "4", "--resume", str(ckpt), "--out", str(tmp_path / "resumed")]
    assert main(argv) == 0
    accuracies = re.findall(r"test accuracy: (.*)\n", capsys.readouterr().out)
    assert accuracies[0] == accuracies[2]
    weights = "digits_mlp.safetensors"
    assert (tmp_path / "resumed" / weights).read_bytes() == (
        tmp_path / "straight" / weights
    ).read_bytes()


def test_resume_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.ckpt"
    err = _error(["train", "digits", "--resume", str(missing)], capsys)
    assert err == f"typed-nn: error: --resume {missing}: no such checkpoint file\n"
    err = _error(["train", "digits", "--checkpoint", str(tmp_path)], capsys)
    assert err == f"typed-nn: error: --checkpoint {tmp_path} is a folder (name a file in it)\n"
    err = _error(["train", "digits", "--resume", str(tmp_path)], capsys)
    assert (
        err
        == f"typed-nn: error: --resume {tmp_path} is a folder (name the checkpoint file in it)\n"
    )
    out = tmp_path / "o"
    for output in ("digits_mlp.safetensors", "history.png"):  # overwritten at the end
        err = _error(
            ["train", "digits", "--out", str(out), "--checkpoint", str(out / output)], capsys
        )
        assert err == (
            f"typed-nn: error: --checkpoint {out / output} is the run's output {output} in --out "
            f"{out}, written over at the end (name another file)\n"
        )
    every = ["train", "digits", "--checkpoint-every", "0"]
    err = _error([*every, "--checkpoint", str(tmp_path / "c.ckpt")], capsys)
    assert err == "typed-nn: error: --checkpoint-every must be at least 1, got 0\n"
    err = _error(["train", "digits", "--checkpoint-every", "2"], capsys)  # it was ignored
    assert (
        err == "typed-nn: error: --checkpoint-every needs --checkpoint PATH (where to write them)\n"
    )
    err = _error(["train", "digits", "--model", "cnn", "--widths", "64"], capsys)
    assert err == "typed-nn: error: --widths sets the MLP's hidden widths: --model cnn has none\n"
    # A checkpoint of another optimizer (or, with the cosine schedule, another --epochs).
    ckpt = tmp_path / "run.ckpt"
    base = ["train", "digits", "--widths", "8", "--epochs", "1", "--no-progress"]
    assert main([*base, "--checkpoint", str(ckpt), "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    argv = [*base, "--epochs", "2", "--resume", str(ckpt), "--out", str(tmp_path / "b")]
    assert main(argv) == 1
    err = capsys.readouterr().err  # the whole message: what differs and the fix
    assert err.startswith(
        f"typed-nn: error: cannot load the checkpoint {ckpt}: it was saved from another model "
        "or optimizer.\n"
    )
    assert "file has" in err
    assert "hint: nothing was changed." in err
    assert not (tmp_path / "b").exists()
