"""The catalogue of ``typed_nn.nn`` beside ``torch.nn``: one case per module (and one per
optimizer), shared by the reference generator (``scripts/gen_nn_references.py``, which runs
PyTorch and stores its state dict, input, output and gradients under tests/references/) and
the tests (``tests/test_nn_catalogue.py``, which load the state dict into the typed_nn module
by PyTorch's names, without a mapping, and compare: against the stored references always,
against PyTorch live where it is installed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.tags import dim_of_rank


@dataclass(frozen=True)
class Case:
    """``ours()`` and ``theirs(torch)`` build the module; ``inputs`` its inputs (float data
    as float32, ids as int64); ``ours_out`` / ``theirs_out`` its output (a tensor: the first
    of a tuple)."""

    ours: Callable[[], nn.Module]
    theirs: Callable[[Any], Any]
    inputs: dict[str, Any]
    ours_out: Callable[[Any, dict[str, Any]], Any]
    theirs_out: Callable[[Any, Any, dict[str, Any]], Any]


def _rand(*shape: int, seed: int = 0) -> Any:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def tensor(a: Any) -> Any:
    elem = tn.Int64 if a.dtype.kind == "i" else tn.Float32
    return tn.tensor(a, elem, tn.CPU, dim_of_rank(a.ndim))


def _call(model: Any, inputs: dict[str, Any]) -> Any:
    return model(*(tensor(v) for v in inputs.values()))


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, tuple) else out


def _ours_out(model: Any, inputs: dict[str, Any]) -> Any:
    return _first(_call(model, inputs))


def _theirs_out(torch: Any, module: Any, inputs: dict[str, Any]) -> Any:
    return _first(module(*(torch.from_numpy(v) for v in inputs.values())))


def _mha_theirs(torch: Any, module: Any, inputs: dict[str, Any]) -> Any:
    x = torch.from_numpy(inputs["x"])
    mask = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1])
    return module(x, x, x, attn_mask=mask, need_weights=False)[0]


def _case(ours: Callable[[], nn.Module], theirs: Callable[[Any], Any], **inputs: Any) -> Case:
    return Case(ours, theirs, inputs, _ours_out, _theirs_out)


CASES: dict[str, Case] = {
    "linear_rank3": _case(lambda: nn.Linear(4, 3), lambda t: t.nn.Linear(4, 3), x=_rand(2, 5, 4)),
    "linear_nobias": _case(
        lambda: nn.Linear(4, 3, bias=False), lambda t: t.nn.Linear(4, 3, bias=False), x=_rand(5, 4)
    ),
    "conv2d": _case(
        lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1),
        lambda t: t.nn.Conv2d(2, 3, 3, stride=2, padding=1),
        x=_rand(2, 2, 7, 7),
    ),
    "batchnorm2d_train": _case(
        lambda: nn.BatchNorm(3), lambda t: t.nn.BatchNorm2d(3), x=_rand(4, 3, 5, 5)
    ),
    "batchnorm1d_eval": _case(
        lambda: nn.BatchNorm(3).eval(), lambda t: t.nn.BatchNorm1d(3).eval(), x=_rand(4, 3)
    ),
    "batchnorm1d_sequence_train": _case(
        lambda: nn.BatchNorm(3), lambda t: t.nn.BatchNorm1d(3), x=_rand(4, 3, 7)
    ),
    "batchnorm3d_train": _case(
        lambda: nn.BatchNorm(3), lambda t: t.nn.BatchNorm3d(3), x=_rand(2, 3, 2, 3, 4)
    ),
    "layernorm": _case(lambda: nn.LayerNorm(6), lambda t: t.nn.LayerNorm(6), x=_rand(2, 3, 6)),
    "embedding": Case(
        lambda: nn.Embedding(10, 4),
        lambda t: t.nn.Embedding(10, 4),
        {"ids": np.array([[1, 9, 1], [0, 3, 7]], np.int64)},
        _ours_out,
        _theirs_out,
    ),
    "lstm": _case(lambda: nn.LSTM(3, 5), lambda t: t.nn.LSTM(3, 5), x=_rand(6, 2, 3)),
    "gru_batch_first": _case(
        lambda: nn.GRU(3, 5, batch_first=True),
        lambda t: t.nn.GRU(3, 5, batch_first=True),
        x=_rand(2, 6, 3),
    ),
    "mha_causal": Case(
        lambda: nn.MultiHeadAttention(8, 2, causal=True),
        lambda t: t.nn.MultiheadAttention(8, 2, batch_first=True),
        {"x": _rand(2, 5, 8)},
        _ours_out,
        _mha_theirs,
    ),
    "sequential_cnn": _case(
        lambda: nn.Sequential(
            nn.Conv2d(1, 4, 3),
            nn.relu,
            nn.MaxPool2d(2),
            nn.AvgPool2d(1),
            nn.Flatten(),
            nn.Linear(36, 3),
        ),
        lambda t: t.nn.Sequential(
            t.nn.Conv2d(1, 4, 3),
            t.nn.ReLU(),
            t.nn.MaxPool2d(2),
            t.nn.AvgPool2d(1),
            t.nn.Flatten(),
            t.nn.Linear(36, 3),
        ),
        x=_rand(2, 1, 8, 8),
    ),
}


def loss_of(out: Any) -> Any:
    """The scalar both sides differentiate: ``sum(out ** 2) / 2``."""
    return ops.reduce_sum(ops.square(out)) * 0.5


# --- optimizers: four steps on an MLP ---------------------------------------------------------

OPTIMIZERS: dict[str, tuple[Callable[[nn.Module], Any], Callable[[Any, Any], Any]]] = {
    "sgd": (
        lambda m: optim.SGD(m, lr=0.1, weight_decay=0.01),
        lambda t, p: t.optim.SGD(p, lr=0.1, weight_decay=0.01),
    ),
    "momentum_nesterov": (
        lambda m: optim.Momentum(m, lr=0.1, nesterov=True),
        lambda t, p: t.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    ),
    "adam": (
        lambda m: optim.Adam(m, lr=0.01, weight_decay=0.01),
        lambda t, p: t.optim.Adam(p, lr=0.01, weight_decay=0.01),
    ),
    "adamw": (lambda m: optim.AdamW(m, lr=0.01), lambda t, p: t.optim.AdamW(p, lr=0.01)),
}
OPT_STEPS = 4


def mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 8), nn.tanh, nn.Linear(8, 3))


def torch_mlp(torch: Any) -> Any:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


OPT_INPUT = _rand(5, 4, seed=3)
