"""Write the PyTorch reference values of the norm and recurrent-step layers (run once, with
torch): ``python scripts/gen_seq_references.py``. CI reads the files without torch.

Each file under ``tests/references/`` holds, in float64: the inputs, the parameters in
typed_nn's layout (``param/<name>``, CONVENTIONS.md) and PyTorch's (``torch/<state-dict key>``),
an output gradient ``g``, PyTorch's outputs and the gradients of ``sum(g * out)``:

* ``batchnorm1d`` / ``batchnorm2d``: ``nn.BatchNorm1d/2d(C, momentum=0.3, eps=1e-3)`` with
  non-trivial weights and running statistics; one training forward (``out``, gradients
  ``dx``, ``dweight``, ``dbias``; running statistics after it: ``running_mean_after``,
  ``running_var_after``), then an eval forward of the same data (``out_eval``).
* ``layernorm``: ``nn.LayerNorm(6, eps=1e-4)`` on (4, 5, 6) data.
* ``lstm`` / ``gru``: ``nn.LSTM(4, 6)`` / ``nn.GRU(4, 6)`` over a (T=5, B=3, 4) sequence with
  initial states ``h0`` (and ``c0``); the loss is ``sum(g * out)`` (plus ``sum(gc * c_n)``
  for the LSTM's last cell state); gradients of the sequence, the initial states and every
  weight (``d<param>`` in typed_nn's layout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "references"
Array = Any


def _np(t: Any) -> Array:
    return np.ascontiguousarray(t.detach().numpy())


def batchnorm(torch: Any, shape: tuple[int, ...]) -> dict[str, Array]:
    channels = shape[1]
    module = (torch.nn.BatchNorm1d if len(shape) == 2 else torch.nn.BatchNorm2d)(
        channels, momentum=0.3, eps=1e-3
    ).double()
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)
        module.bias.uniform_(-0.5, 0.5)
        module.running_mean.uniform_(-1.0, 1.0)
        module.running_var.uniform_(0.5, 2.0)
    before = {k: _np(v).copy() for k, v in module.state_dict().items()}
    x = (torch.randn(*shape, dtype=torch.float64) * 2.0 + 0.7).requires_grad_(True)
    g = torch.randn(*shape, dtype=torch.float64)
    module.train()
    out = module(x)
    (out * g).sum().backward()
    result = {
        "x": _np(x),
        "g": _np(g),
        "out": _np(out),
        "dx": _np(x.grad),
        "dweight": _np(module.weight.grad),
        "dbias": _np(module.bias.grad),
        "running_mean_after": _np(module.running_mean),
        "running_var_after": _np(module.running_var),
    }
    module.eval()
    result["out_eval"] = _np(module(x))
    for name in ("weight", "bias", "running_mean", "running_var"):
        result[f"param/{name}"] = before[name]
        result[f"torch/{name}"] = before[name]
    return result


def layernorm(torch: Any) -> dict[str, Array]:
    module = torch.nn.LayerNorm(6, eps=1e-4).double()
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)
        module.bias.uniform_(-0.5, 0.5)
    x = (torch.randn(4, 5, 6, dtype=torch.float64) + 0.3).requires_grad_(True)
    g = torch.randn(4, 5, 6, dtype=torch.float64)
    out = module(x)
    (out * g).sum().backward()
    return {
        "x": _np(x),
        "g": _np(g),
        "out": _np(out),
        "dx": _np(x.grad),
        "dweight": _np(module.weight.grad),
        "dbias": _np(module.bias.grad),
        "param/weight": _np(module.weight),
        "param/bias": _np(module.bias),
        "torch/weight": _np(module.weight),
        "torch/bias": _np(module.bias),
    }


def recurrent(torch: Any, kind: str) -> dict[str, Array]:
    steps, batch, fan_in, hidden = 5, 3, 4, 6
    module = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(fan_in, hidden).double()
    x = torch.randn(steps, batch, fan_in, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(1, batch, hidden, dtype=torch.float64, requires_grad=True)
    g = torch.randn(steps, batch, hidden, dtype=torch.float64)
    result: dict[str, Array] = {"x": _np(x), "h0": _np(h0[0]), "g": _np(g)}
    if kind == "lstm":
        c0 = torch.randn(1, batch, hidden, dtype=torch.float64, requires_grad=True)
        gc = torch.randn(batch, hidden, dtype=torch.float64)
        out, (_, c_n) = module(x, (h0, c0))
        loss = (out * g).sum() + (c_n[0] * gc).sum()
        result.update({"c0": _np(c0[0]), "gc": _np(gc), "c_n": _np(c_n[0])})
    else:
        out, _ = module(x, h0)
        loss = (out * g).sum()
    loss.backward()
    result.update({"out": _np(out), "dx": _np(x.grad), "dh0": _np(h0.grad[0])})
    if kind == "lstm":
        result["dc0"] = _np(c0.grad[0])
    for ours, theirs in (
        ("w_ih", "weight_ih_l0"),
        ("w_hh", "weight_hh_l0"),
        ("b_ih", "bias_ih_l0"),
        ("b_hh", "bias_hh_l0"),
    ):
        p = getattr(module, theirs)
        value, grad = _np(p), _np(p.grad)
        result[f"torch/{theirs}"] = value
        if ours.startswith("w"):  # typed_nn's x @ W layout: (in, gates * hidden)
            value, grad = np.ascontiguousarray(value.T), np.ascontiguousarray(grad.T)
        result[f"param/{ours}"], result[f"d{ours}"] = value, grad
    return result


def main() -> None:
    import torch
    from safetensors.numpy import save_file

    torch.manual_seed(20)
    OUT.mkdir(parents=True, exist_ok=True)
    files = {
        "batchnorm1d": batchnorm(torch, (8, 3)),
        "batchnorm2d": batchnorm(torch, (3, 2, 4, 5)),
        "layernorm": layernorm(torch),
        "lstm": recurrent(torch, "lstm"),
        "gru": recurrent(torch, "gru"),
    }
    for name, tensors in files.items():
        path = OUT / f"seq_{name}.safetensors"
        save_file(tensors, str(path), metadata={"generator": "scripts/gen_seq_references.py"})
        print(f"wrote {path.relative_to(OUT.parent.parent)} ({len(tensors)} tensors)")


if __name__ == "__main__":
    main()
