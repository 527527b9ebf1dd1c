"""CNN on the digits, one epoch: typed_nn (``fit``'s compiled training step) vs PyTorch eager.

Run: ``python benchmarks/cnn.py [--epochs 3] [--repeats 3] [--profile]``. The network is
conv 8 3x3 padding 1 -> ReLU -> 2x2 max pool -> flatten -> linear 10 on the 8x8 digits as
(N, 1, 8, 8) images, softmax + NLL, SGD lr 0.1, batch 32. Both start from the same weights
and see the same batches (the permutation of ``numpy.random.default_rng(seed)`` per epoch);
one thread each (BLAS thread counts set below; ``torch.set_num_threads(1)``). Epoch time is
process CPU time, the minimum over every epoch of every repeat, the repeats run
round-robin (one of each in turn) so load on a shared machine hits both. Target: typed_nn
≤ 1.0x PyTorch. ``--profile`` prints where typed_nn's step spends its time (cProfile).

"typed_nn" is the network written with ``typed_nn.nn`` modules (``nn.Conv2d``,
``nn.MaxPool2d``, ``nn.Flatten``, ``nn.Linear``: PyTorch's layouts) trained by ``fit`` with
``optim.SGD``; "layers" is MetaNN's composite ``DigitsCNN`` layer with ``typed_nn.model.SGD``
(the comparison row: the modules path should be no slower).
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy / torch are imported)
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import platform
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from _anchors import torch_fit
from _common import timed_fit

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.layers import LayerInMap, LayerInput, layer_init, make_train_layer
from typed_nn.model import SGD, LoadBuffer, ParamInitializer
from typed_nn.policies import PElemIs, PFeedbackOutput, PUpdate
from typed_nn.tags import dim_of_rank
from typed_nn.train import Dataset, LayerModel, accuracy, load_digits
from typed_nn.train.cnn import DigitsCNN

Array = npt.NDArray[np.float32]
Result = tuple[float, float]  # (best epoch seconds, test accuracy)
LR = 0.1
BATCH = 32
SHAPE = (1, 8, 8)


def initial_weights(seed: int) -> dict[str, Array]:
    """MSRA-normal weights (conv fan_in 9, linear fan_in 128), zero biases."""
    rng = np.random.default_rng(seed)
    return {
        "conv/weight": rng.normal(0.0, np.sqrt(2 / 9), (8, 1, 3, 3)).astype(np.float32),
        "conv/bias": np.zeros(8, np.float32),
        "fc/weight": rng.normal(0.0, np.sqrt(2 / 128), (128, 10)).astype(np.float32),
        "fc/bias": np.zeros(10, np.float32),
    }


Images = tn.Matrix[tn.Float32, tn.CPU]  # fit's batches: (batch, 64) flat samples


class ModuleCNN(nn.Module):
    """The network as modules, each flat sample seen as a (1, 8, 8) image."""

    def __init__(self) -> None:
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.flat = nn.Flatten()
        self.fc = nn.Linear(128, 10)

    def __call__(self, x: Images) -> Images:
        images = ops.reshape(x, (x.shape[0], *SHAPE))
        out: Images = self.fc(self.flat(self.pool(nn.relu(self.conv(images)))))
        return out


def module_model(weights: dict[str, Array]) -> ModuleCNN:
    """A :class:`ModuleCNN` starting from ``weights`` (the linear's transposed: PyTorch's)."""
    tn.manual_seed(0)
    net = ModuleCNN()
    layouts = {name: w.T.copy() if name == "fc/weight" else w for name, w in weights.items()}
    nn.load_state_dict(net, {name.replace("/", "."): w for name, w in layouts.items()})
    return net


def typed_nn_run(
    train: Dataset, test: Dataset, weights: dict[str, Array], epochs: int, seed: int
) -> Result:
    """typed_nn: the module CNN trained by ``typed_nn.train.fit`` with ``optim.SGD``."""
    net = module_model(weights)
    seconds, _ = timed_fit(net, train, optim.SGD(net, LR), epochs=epochs, batch=BATCH, seed=seed)
    return seconds, accuracy(net, test)


def typed_nn_model(weights: dict[str, Array]) -> Any:
    images = tn.Tensor[tn.Float32, tn.CPU, tn.Dim4]
    cls = make_train_layer(
        DigitsCNN, LayerInMap({LayerInput: images}), PUpdate, PFeedbackOutput, PElemIs(tn.Float32)
    )
    net = cls("net", 8, 8)
    init = ParamInitializer({})
    for name, w in weights.items():
        init.set_param(f"net/{name}", tn.Tensor(w.copy(), tn.Float32, tn.CPU, dim_of_rank(w.ndim)))
    layer_init(net, init, LoadBuffer(tn.Float32, tn.CPU))
    return net


def layers_run(
    train: Dataset, test: Dataset, weights: dict[str, Array], epochs: int, seed: int
) -> Result:
    """typed_nn: the composite DigitsCNN layer trained by ``typed_nn.train.fit``."""
    net = typed_nn_model(weights)
    model = LayerModel(net, input_shape=SHAPE)
    seconds, _ = timed_fit(model, train, SGD(LR), epochs=epochs, batch=BATCH, seed=seed)
    return seconds, accuracy(net, test, input_shape=SHAPE)


def torch_run(
    train: Dataset, test: Dataset, weights: dict[str, Array], epochs: int, seed: int
) -> Result | None:
    """PyTorch CPU eager, the same net, weights and batches; None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    conv, fc = torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.Linear(128, 10)
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(weights["conv/weight"]))
        assert conv.bias is not None
        conv.bias.copy_(torch.from_numpy(weights["conv/bias"]))
        fc.weight.copy_(torch.from_numpy(weights["fc/weight"].T.copy()))
        fc.bias.copy_(torch.from_numpy(weights["fc/bias"]))
    model = torch.nn.Sequential(
        conv, torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), fc
    )
    return torch_fit(
        model,
        train.features.reshape(-1, *SHAPE),
        train.labels,
        test.features.reshape(-1, *SHAPE),
        test.labels,
        lr=LR,
        batch=BATCH,
        epochs=epochs,
        seed=seed,
    )


Runner = Callable[[Dataset, Dataset, dict[str, Array], int, int], Result | None]


def versions() -> str:
    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    try:
        import torch

        parts.append(f"torch {torch.__version__}")
    except ImportError:
        parts.append("torch not installed")
    return ", ".join(parts)


def profile(train: Dataset, test: Dataset, weights: dict[str, Array], seed: int) -> None:
    """cProfile of typed_nn's training epochs: the kernels and the call around them."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    typed_nn_run(train, test, weights, 3, seed)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    split = load_digits(seed=args.seed)
    weights = initial_weights(args.seed)
    if args.profile:
        profile(split.train, split.test, weights, args.seed)
        return
    print(f"{platform.processor() or platform.machine()}; {versions()}; 1 thread")
    print(
        f"digits CNN conv 8 3x3 pad 1 -> relu -> maxpool 2 -> linear 10, SGD {LR}, batch "
        f"{BATCH}, {args.epochs} epochs x {args.repeats} repeats (best epoch)"
    )
    runners: dict[str, Runner] = {
        "typed_nn": typed_nn_run,
        "layers": layers_run,
        "torch": torch_run,
    }
    found: dict[str, list[Result]] = {name: [] for name in runners}
    for _ in range(args.repeats):
        for name, run in runners.items():
            result = run(split.train, split.test, weights, args.epochs, args.seed)
            if result is not None:
                found[name].append(result)
    best = {name: (min(t for t, _ in got), got[0][1]) for name, got in found.items() if got}
    steps = -(-len(split.train) // BATCH)
    for name, (seconds, acc) in best.items():
        print(
            f"  {name:<10} {seconds * 1e3:8.2f} ms/epoch  {seconds / steps * 1e6:7.1f} us/step"
            f"  test acc {acc:.4f}"
        )
    assert abs(best["typed_nn"][1] - best["layers"][1]) < 0.01, "module and layer CNNs differ"
    for other in ("layers", "torch"):
        if other in best:
            print(f"  typed_nn / {other}: {best['typed_nn'][0] / best[other][0]:.2f}x")


if __name__ == "__main__":
    main()
