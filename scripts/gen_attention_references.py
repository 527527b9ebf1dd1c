"""Write tests/references/attention.safetensors: PyTorch's multi-head attention, for
tests/test_layers_attention.py (which reads the file without torch).

``nn.MultiheadAttention(8, 2, batch_first=True)`` in float64 on an input (2, 5, 8) as query,
key and value: its parameters, and its outputs without a mask, with a causal mask, with an
explicit (seq, seq) additive mask and with one (batch, seq, seq) mask per sample; for the
causal case also the gradients of ``sum(g * y)`` for a fixed ``g``. Run once, with torch:
``python scripts/gen_attention_references.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "references" / "attention.safetensors"
BATCH, SEQ, D, HEADS = 2, 5, 8, 2


def main() -> None:
    torch.manual_seed(20)
    mha = torch.nn.MultiheadAttention(D, HEADS, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # PyTorch initialises the biases to 0: make them count
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    x = torch.randn(BATCH, SEQ, D, dtype=torch.float64, requires_grad=True)
    causal = torch.triu(torch.full((SEQ, SEQ), float("-inf"), dtype=torch.float64), 1)
    mask = torch.randn(SEQ, SEQ, dtype=torch.float64)
    mask[0, 3] = mask[2, 1] = float("-inf")  # two dropped positions among additive values
    per_sample = torch.randn(BATCH, SEQ, SEQ, dtype=torch.float64)
    per_sample[1, 4, 0] = float("-inf")

    def attend(attn_mask: torch.Tensor | None) -> torch.Tensor:
        y: torch.Tensor = mha(x, x, x, attn_mask=attn_mask, need_weights=False)[0]
        return y

    g = torch.randn(BATCH, SEQ, D, dtype=torch.float64)
    y_causal = attend(causal)
    loss: Any = (y_causal * g).sum()  # Any: torch's types, or none where torch is missing
    loss.backward()
    tensors = {
        "x": x,
        "in_proj_weight": mha.in_proj_weight,
        "in_proj_bias": mha.in_proj_bias,
        "out_proj_weight": mha.out_proj.weight,
        "out_proj_bias": mha.out_proj.bias,
        "y": attend(None),
        "y_causal": y_causal,
        "mask": mask,
        "y_mask": attend(mask),
        "per_sample_mask": per_sample,
        # PyTorch takes a 3-D mask per (sample, head): the sample's repeated over its heads
        "y_per_sample_mask": attend(per_sample.repeat_interleave(HEADS, dim=0)),
        "g": g,
        "grad_x": x.grad,
        "grad_in_proj_weight": mha.in_proj_weight.grad,
        "grad_in_proj_bias": mha.in_proj_bias.grad,
        "grad_out_proj_weight": mha.out_proj.weight.grad,
        "grad_out_proj_bias": mha.out_proj.bias.grad,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    missing = [k for k, v in tensors.items() if v is None]
    assert not missing, f"no gradient for {missing}"
    save_file({k: v.detach().contiguous() for k, v in tensors.items() if v is not None}, str(OUT))


if __name__ == "__main__":
    main()
