"""Write the PyTorch reference values of the convolution, pooling and embedding layers.

Run once, with torch installed (``python scripts/gen_conv_references.py``); the tests
(tests/test_layers_conv.py) read the files it writes under tests/references/ without torch.
Each case stores its inputs, parameters, an output gradient ``g``, the forward output ``y``
and the gradients of ``sum(y * g)`` (float64, PyTorch's own kernels on the CPU):

* ``conv2d.safetensors``: ``<case>/x``, ``/weight`` (OIHW), ``/bias``, ``/g``, ``/y``,
  ``/dx``, ``/dweight``, ``/dbias``; cases ``stride2_pad1`` (3x3 kernel, stride 2, padding 1),
  ``stride1_pad0`` (2x3 kernel) and ``stride_hw`` (stride (2, 1), padding (0, 2));
* ``pool2d.safetensors``: ``<kind>_<case>/x``, ``/g``, ``/y``, ``/dx`` for ``max`` and
  ``avg``, cases ``tiling`` (size 2) and ``overlap`` (size 3, stride 2);
* ``embedding.safetensors``: ``weight`` (7, 4), ``indices`` (3, 5) Int64 with repeats,
  ``g``, ``y``, ``dweight``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.numpy import save_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "references"


def _np(t: torch.Tensor) -> np.ndarray:
    return np.array(t.detach().numpy())  # a copy, typed as numpy's with or without torch


def conv_cases(rng: np.random.Generator) -> dict[str, np.ndarray]:
    cases: dict[str, tuple[tuple[int, ...], tuple[int, ...], Any, Any]] = {
        "stride2_pad1": ((2, 3, 7, 6), (4, 3, 3, 3), 2, 1),
        "stride1_pad0": ((2, 2, 5, 6), (3, 2, 2, 3), 1, 0),
        "stride_hw": ((1, 2, 6, 5), (2, 2, 3, 3), (2, 1), (0, 2)),
    }
    out: dict[str, np.ndarray] = {}
    for name, (xs, ws, stride, padding) in cases.items():
        x = torch.tensor(rng.standard_normal(xs), requires_grad=True)
        w = torch.tensor(rng.standard_normal(ws), requires_grad=True)
        b = torch.tensor(rng.standard_normal(ws[0]), requires_grad=True)
        y: Any = torch.nn.functional.conv2d(x, w, b, stride=stride, padding=padding)
        g = torch.tensor(rng.standard_normal(tuple(y.shape)))
        (y * g).sum().backward()
        assert x.grad is not None
        assert w.grad is not None
        assert b.grad is not None
        parts = {"x": x, "weight": w, "bias": b, "g": g, "y": y}
        parts.update(dx=x.grad, dweight=w.grad, dbias=b.grad)
        out.update({f"{name}/{k}": _np(v) for k, v in parts.items()})
    return out


def pool_cases(rng: np.random.Generator) -> dict[str, np.ndarray]:
    cases = {"tiling": ((2, 3, 6, 8), 2, 2), "overlap": ((2, 2, 7, 7), 3, 2)}
    pools: dict[str, Any] = {
        "max": torch.nn.functional.max_pool2d,
        "avg": torch.nn.functional.avg_pool2d,
    }
    out: dict[str, np.ndarray] = {}
    for kind, pool in pools.items():
        for name, (xs, size, stride) in cases.items():
            x = torch.tensor(rng.standard_normal(xs), requires_grad=True)
            y = pool(x, size, stride)
            g = torch.tensor(rng.standard_normal(tuple(y.shape)))
            (y * g).sum().backward()
            assert x.grad is not None
            parts = {"x": x, "g": g, "y": y, "dx": x.grad}
            out.update({f"{kind}_{name}/{k}": _np(v) for k, v in parts.items()})
    return out


def embedding_case(rng: np.random.Generator) -> dict[str, np.ndarray]:
    emb = torch.nn.Embedding(7, 4).double()
    with torch.no_grad():
        emb.weight.copy_(torch.tensor(rng.standard_normal((7, 4))))
    indices = torch.tensor([[0, 3, 3, 6, 1], [2, 2, 2, 5, 0], [6, 1, 3, 4, 3]], dtype=torch.int64)
    y: Any = emb(indices)
    g = torch.tensor(rng.standard_normal(tuple(y.shape)))
    (y * g).sum().backward()
    assert emb.weight.grad is not None
    parts = {"weight": emb.weight, "indices": indices, "g": g, "y": y}
    parts["dweight"] = emb.weight.grad
    return {k: _np(v) for k, v in parts.items()}


def main() -> None:
    rng = np.random.default_rng(20)
    OUT.mkdir(parents=True, exist_ok=True)
    save_file(conv_cases(rng), str(OUT / "conv2d.safetensors"))
    save_file(pool_cases(rng), str(OUT / "pool2d.safetensors"))
    save_file(embedding_case(rng), str(OUT / "embedding.safetensors"))
    print(f"wrote {', '.join(p.name for p in sorted(OUT.glob('*.safetensors')))} in {OUT}")


if __name__ == "__main__":
    main()
