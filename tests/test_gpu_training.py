"""Training on the GPU: the digits MLP reaches the CPU's accuracy with the same numbers, through
``fit``, ``accuracy`` and the ``typed-nn`` command (on the cupy emulator everywhere, and on a
real GPU where there is one)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import nn
from typed_nn.cli import main
from typed_nn.model import load_weights
from typed_nn.train import History, LambdaCallback, accuracy, fit, load_digits
from typed_nn.train.classifier import build_mlp, make_optimizer
from typed_nn.train.modules import MLPClassifier


def _train(device: type[tn.DeviceTag], optimizer: str) -> tuple[History, float, Any]:
    split = load_digits(seed=0)
    net, params = build_mlp([64, 32, 10], "relu", seed=0, device=device)
    history = fit(
        net,
        split.train,
        make_optimizer(optimizer),  # type: ignore[arg-type]
        test=split.test,
        epochs=3,
    )
    return history, accuracy(net, split.test, device=device), params


@pytest.mark.gpu
@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_digits_mlp_trains_on_gpu_like_on_cpu(cupy_module: Any, optimizer: str) -> None:
    (cpu, cpu_acc, _), (gpu, gpu_acc, params) = (_train(d, optimizer) for d in (tn.CPU, tn.GPU))
    assert all(isinstance(w.array, cupy_module.ndarray) for _, w in params.items())
    # cuBLAS sums in another order than OpenBLAS: the same run to float32 rounding, drifting
    # a little over 135 steps.
    np.testing.assert_allclose(gpu.train_loss, cpu.train_loss, rtol=1e-3)
    np.testing.assert_allclose(gpu.test_acc, cpu.test_acc, atol=0.02)
    assert abs(gpu_acc - cpu_acc) <= 0.02
    assert gpu_acc > 0.7  # after three epochs (Adam at its default 1e-3 is slowest, ~0.78)


@pytest.mark.gpu
def test_a_cpu_model_given_gpu_data_is_a_training_error(cupy_module: Any) -> None:
    net, _ = build_mlp([64, 8, 10], seed=0)
    with pytest.raises(tn.TrainingError) as err:
        accuracy(net, load_digits(seed=0).test, device=tn.GPU)
    assert str(err.value).startswith(
        "cannot train: the model's parameters are not on the data's device (GPU)."
    )
    assert "hint: build the model on GPU, or pass device= for the model's device to predict" in str(
        err.value
    )


@pytest.mark.gpu
def test_the_command_trains_on_gpu(
    cupy_module: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["train", "digits", "--device", "gpu", "--epochs", "2", "--widths", "32"]
    assert main([*argv, "--out", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    match = re.search(r"test accuracy: (\d\.\d{3})\n$", out)
    assert match is not None, out
    assert float(match.group(1)) > 0.8
    # the weights were saved from the GPU and load into a CPU module with the same accuracy
    model = MLPClassifier([64, 32, 10], gen=tn.Generator(9))
    params = {n: t for n, t in nn.named_parameters(model) if isinstance(t, tn.Tensor)}
    load_weights(tmp_path / "digits_mlp.safetensors", params)
    assert f"{accuracy(model, load_digits(seed=0).test):.3f}" == match.group(1)


@pytest.mark.gpu
def test_a_gpu_training_loop_stops_requesting_device_memory(cupy_module: Any) -> None:
    """cupy's memory pool recycles what each step frees (docs/gpu.md, Memory)."""
    if getattr(cupy_module, "emulated", False):
        pytest.skip("the emulator has no device memory pool")
    pool = cupy_module.get_default_memory_pool()
    held: list[int] = []
    net, _ = build_mlp([64, 32, 10], seed=0, device=tn.GPU)
    fit(
        net,
        load_digits(seed=0).train,
        make_optimizer("momentum"),
        epochs=3,
        callbacks=[
            LambdaCallback(on_epoch_end=lambda epoch, history: held.append(pool.total_bytes()))
        ],
    )
    assert held[1] == held[2]  # the second and third epochs reuse the first one's blocks
