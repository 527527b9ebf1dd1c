"""LSTM training step (issue 20): typed_nn's ``RecurrentLayer`` + ``LstmStep`` compiled with
``tn.compile`` vs PyTorch eager ``nn.LSTM``, side by side in one run.

LSTM fan_in 32, hidden 64, sequence 20, batch 32, Float32, initial states zero. One step:
the forward over the sequence, the mean squared error of every output against a target, the
backward (BPTT), and SGD on the four LSTM parameters. typed_nn's step is written as a user
would with layers (``feed_forward``, ``feed_backward`` of the loss gradient, ``grad_collect``,
``assign``) and compiled once; PyTorch runs ``nn.LSTM`` + ``mse_loss`` + ``backward`` +
``optim.SGD`` eagerly on one thread. Both start from PyTorch's initial weights and are
checked to give the same losses over a few steps before timing. Target: <= 1.0x PyTorch.

The same step written with modules (``nn.LSTM``, PyTorch's parameter names and layouts,
``ops.mse_loss``, ``tn.grad(loss, model)``, ``optim.SGD``), compiled, is timed in the same
race: it should be no slower than the layer step.

Run: ``python benchmarks/lstm.py [--quick] [--repeats N]``.
"""

# ruff: noqa: E402  (thread counts must be set before numpy / torch are imported)
from __future__ import annotations

from _common import header, race, ratio, setup_threads

setup_threads()

import argparse
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.evaluate import Compiled
from typed_nn.layers import (
    CellState,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LstmStep,
    Previous,
    RecurrentLayer,
    make_train_layer,
)
from typed_nn.model import GradCollector, LoadBuffer, ParamInitializer
from typed_nn.policies import PActFuncIs, PSeqIDsAre, PUpdate, SeqID

FAN_IN, HIDDEN, STEPS, BATCH, LR = 32, 64, 20, 32, 0.5
F32, CPU = tn.Float32, tn.CPU
Seq = tn.Tensor[tn.Float32, tn.CPU, tn.Dim3]
Array = Any
H, C = Previous(LayerOutput), Previous(CellState)


def initial_weights(torch: Any) -> dict[str, Array]:
    """PyTorch's initial nn.LSTM(32, 64) weights in typed_nn's layout (CONVENTIONS.md)."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(FAN_IN, HIDDEN)
    return {
        "w_ih": lstm.weight_ih_l0.detach().numpy().T.copy(),
        "w_hh": lstm.weight_hh_l0.detach().numpy().T.copy(),
        "b_ih": lstm.bias_ih_l0.detach().numpy().copy(),
        "b_hh": lstm.bias_hh_l0.detach().numpy().copy(),
    }


def typed_step(weights: dict[str, Array]) -> Compiled[..., Any]:
    """The compiled typed_nn training step (module docstring)."""
    seq = tn.Tensor[tn.Float32, tn.CPU, tn.Dim3]
    state = tn.Matrix[tn.Float32, tn.CPU]
    Lstm = make_train_layer(
        RecurrentLayer,
        LayerInMap({LayerInput: seq, H: state, C: state}),
        PActFuncIs(LstmStep),
        PSeqIDsAre(SeqID(LayerInput, 0)),
        PUpdate,
    )
    layer = Lstm("lstm", FAN_IN, HIDDEN)
    init = ParamInitializer()
    for name, value in weights.items():
        init.set_param(f"lstm/kernel/{name}", value)
    layer.init(init, LoadBuffer(F32, CPU))
    zeros = tn.zeros((BATCH, HIDDEN), F32, CPU)
    scale = 2.0 / (STEPS * BATCH * HIDDEN)

    @tn.compile
    def step(x: Seq, y: Seq, lr: float) -> tn.Scalar[tn.Float32, tn.CPU]:
        inputs = layer.input_cont().set(LayerInput, x).set(H, zeros).set(C, zeros)
        out = layer.feed_forward(inputs).get(LayerOutput)
        diff = out - y
        layer.feed_backward(layer.output_cont().set(LayerOutput, diff * scale))
        collector: GradCollector[tn.Float32, tn.CPU] = GradCollector(F32, CPU)
        layer.grad_collect(collector)
        for _, weight, grad in collector:
            weight.assign(weight - lr * grad)
        loss: tn.Scalar[tn.Float32, tn.CPU] = ops.reduce_mean(ops.square(diff))
        return loss

    return step


def module_step(torch: Any) -> Callable[[Seq, Seq], tn.Scalar[tn.Float32, tn.CPU]]:
    """The step with modules: ``nn.LSTM`` holding PyTorch's initial weights (its state dict)."""
    torch.manual_seed(0)
    state = {
        k: v.detach().numpy().copy() for k, v in torch.nn.LSTM(FAN_IN, HIDDEN).state_dict().items()
    }
    tn.manual_seed(0)
    lstm = nn.LSTM(FAN_IN, HIDDEN)
    nn.load_state_dict(lstm, state)
    sgd = optim.SGD(lstm, LR)

    @tn.compile
    def step(x: Seq, y: Seq) -> tn.Scalar[tn.Float32, tn.CPU]:
        loss = ops.mse_loss(y, lstm(x)[0])
        sgd.step(tn.grad(loss, lstm))
        return loss

    return step


def torch_step(torch: Any) -> Callable[[Any, Any], Any]:
    """PyTorch eager: nn.LSTM (same seed) + mse_loss + backward + SGD."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(FAN_IN, HIDDEN)
    opt = torch.optim.SGD(lstm.parameters(), lr=LR)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        out, _ = lstm(x)
        loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def batch(rng: np.random.Generator) -> tuple[Array, Array]:
    x = rng.standard_normal((STEPS, BATCH, FAN_IN)).astype(np.float32)
    y = np.tanh(np.cumsum(x[..., : HIDDEN // 2], axis=0) * 0.3).astype(np.float32)
    return x, np.concatenate([y, -y], axis=2)


def seq(a: Array) -> Seq:
    t: Seq = tn.tensor(a, F32, CPU, tn.Dim3)
    return t


def kernel_calls(fn: Any) -> int | None:
    """Kernel applications per run of a compiled function's (only) Step, when visible."""
    program = getattr(getattr(fn, "_last", None), "program", None)
    calls = getattr(program, "calls", None)
    return sum(calls.values()) if calls is not None else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test: few repeats")
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(
        f"machine: {platform.processor() or platform.machine()}; Python "
        f"{platform.python_version()}, numpy {np.__version__}, torch {torch.__version__}; "
        "1 thread"
    )
    header(
        f"LSTM fan_in {FAN_IN}, hidden {HIDDEN}, sequence {STEPS}, batch {BATCH}: "
        "one training step (forward + BPTT + SGD)"
    )
    step = typed_step(initial_weights(torch))
    modules = module_step(torch)
    theirs = torch_step(torch)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    x, y = batch(rng)
    losses = [
        (float(step(seq(x), seq(y), LR).numpy()), float(theirs(*map(torch.from_numpy, (x, y)))))
    ]
    print(f"  (first call, traced: {time.perf_counter() - start:.2f} s)")
    module_losses = [float(modules(seq(x), seq(y)).numpy())]
    for _ in range(2 if args.quick else 5):  # same weights, same batches: same losses
        x, y = batch(rng)
        mine = float(step(seq(x), seq(y), LR).numpy())
        module_losses.append(float(modules(seq(x), seq(y)).numpy()))
        losses.append((mine, float(theirs(torch.from_numpy(x), torch.from_numpy(y)))))
    mine_all, theirs_all = zip(*losses, strict=True)
    np.testing.assert_allclose(mine_all, theirs_all, rtol=2e-4)
    np.testing.assert_allclose(module_losses, theirs_all, rtol=2e-4)
    print(f"  losses agree with torch over {len(losses)} steps (last {losses[-1][0]:.5f})")
    xt, yt = seq(x), seq(y)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    times = race(
        {
            "torch eager nn.LSTM, step": lambda: theirs(tx, ty),
            "typed_nn RecurrentLayer(LstmStep), compiled step": lambda: step(xt, yt, LR),
            "typed_nn nn.LSTM + optim.SGD, compiled step": lambda: modules(xt, yt),
        },
        repeats=3 if args.quick else args.repeats,
    )
    ratio(
        "typed_nn / torch eager (target <= 1.0)",
        times["typed_nn nn.LSTM + optim.SGD, compiled step"],
        times["torch eager nn.LSTM, step"],
    )
    ratio(
        "layers / torch eager",
        times["typed_nn RecurrentLayer(LstmStep), compiled step"],
        times["torch eager nn.LSTM, step"],
    )
    ratio(
        "modules / layers (target <= 1.0)",
        times["typed_nn nn.LSTM + optim.SGD, compiled step"],
        times["typed_nn RecurrentLayer(LstmStep), compiled step"],
    )
    calls = kernel_calls(step)
    if calls is not None:
        print(f"  kernel calls per typed_nn step: {calls}; traces: {step.traces}")


if __name__ == "__main__":
    main()
