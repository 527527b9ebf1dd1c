"""Write the PyTorch state-dict reference fixtures under tests/references/ (needs torch).

One small safetensors file per module kind, ``torch_state_<kind>.safetensors``, holding the
module's state dict under ``state/<key>`` (exactly as ``module.state_dict()`` names and lays
them out), an ``input`` and the module's ``output`` for it (eval mode, no gradient). The tests
(tests/test_model_torch_state.py) map each state dict to typed_nn's parameter layout
(CONVENTIONS: typed_nn.model.torch_mapping), recompute the forward with typed_nn ops and compare,
so CI checks the layouts without torch. Run once from the repository root:

    python scripts/gen_torch_state_references.py
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.numpy import save_file
from torch import nn

OUT = Path(__file__).resolve().parent.parent / "tests" / "references"


def _random_like(module: nn.Module, gen: torch.Generator) -> None:
    """Every float entry of the state dict redrawn (biases and norm weights non-trivial too)."""
    with torch.no_grad():
        for value in module.state_dict().values():
            if value.is_floating_point():
                value.copy_(torch.randn(value.shape, generator=gen, dtype=value.dtype) * 0.5)


def _write(
    kind: str, module: nn.Module, x: torch.Tensor, run: Callable[[Any], torch.Tensor]
) -> None:
    module.eval()
    with torch.no_grad():
        y = run(x)
    tensors = {f"state/{k}": v.detach().numpy().copy() for k, v in module.state_dict().items()}
    tensors["input"] = x.numpy().copy()
    tensors["output"] = y.detach().numpy().copy()
    # Not ascontiguousarray: it turns the rank-0 num_batches_tracked into rank 1.
    save_file(
        {k: np.array(v, order="C") for k, v in tensors.items()},
        OUT / f"torch_state_{kind}.safetensors",
    )
    print(kind, {k: tuple(v.shape) for k, v in tensors.items()})


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen)

    linear = nn.Linear(5, 3)
    _random_like(linear, gen)
    _write("linear", linear, randn(4, 5), linear)

    conv = nn.Conv2d(2, 3, kernel_size=3, stride=1, padding=1)
    _random_like(conv, gen)
    _write("conv2d", conv, randn(2, 2, 5, 5), conv)

    embedding = nn.Embedding(7, 4)
    _random_like(embedding, gen)
    _write("embedding", embedding, torch.tensor([[0, 3, 6], [3, 3, 1]]), embedding)

    # Running statistics from a few training-mode batches, so eval mode uses non-trivial ones.
    bn1 = nn.BatchNorm1d(3)
    _random_like(bn1, gen)
    assert bn1.running_var is not None
    bn1.running_var.abs_().add_(0.5)
    bn1.train()
    for _ in range(3):
        bn1(randn(8, 3) * 2.0 + 1.0)
    _write("batchnorm1d", bn1, randn(4, 3), bn1)

    bn2 = nn.BatchNorm2d(3)
    _random_like(bn2, gen)
    assert bn2.running_var is not None
    bn2.running_var.abs_().add_(0.5)
    bn2.train()
    for _ in range(3):
        bn2(randn(4, 3, 2, 2) * 2.0 - 1.0)
    _write("batchnorm2d", bn2, randn(2, 3, 2, 2), bn2)

    layer_norm = nn.LayerNorm(4)
    _random_like(layer_norm, gen)
    _write("layernorm", layer_norm, randn(3, 4), layer_norm)

    lstm = nn.LSTM(3, 4, batch_first=True)
    _random_like(lstm, gen)
    _write("lstm", lstm, randn(2, 5, 3), lambda x: lstm(x)[0])

    gru = nn.GRU(3, 4, batch_first=True)
    _random_like(gru, gen)
    _write("gru", gru, randn(2, 5, 3), lambda x: gru(x)[0])

    attention = nn.MultiheadAttention(8, 2, batch_first=True)
    _random_like(attention, gen)
    _write("mha", attention, randn(2, 4, 8), lambda x: attention(x, x, x, need_weights=False)[0])

    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)  # True: masked out
    _write(
        "mha_causal",
        attention,
        randn(2, 4, 8),
        lambda x: attention(x, x, x, attn_mask=causal, need_weights=False)[0],
    )


if __name__ == "__main__":
    main()
