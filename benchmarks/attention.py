"""Multi-head self-attention, forward + backward: typed_nn (compiled) vs PyTorch eager.

Batch 8, sequence 64, width 64, 4 heads, causal, Float32. typed_nn: a training
``MultiHeadAttentionLayer`` (its backward derived from ``tn.vjp`` of its forward), one
``tn.compile``d step that feeds the input forward, the output gradient backward and collects
the four parameter gradients. PyTorch: ``nn.MultiheadAttention(64, 4, batch_first=True)``
with the same weights and the same causal mask, ``(y * g).sum().backward()`` (gradients
cleared first). The two agree to 1e-4 (checked before timing). One thread each (BLAS and
``torch.set_num_threads(1)``), min of repeats, interleaved. Target: <= 1.0x.

The same computation with modules: ``nn.MultiHeadAttention(causal=True)`` (PyTorch's
``in_proj_weight`` / ``out_proj`` names and layouts), ``tn.vjp`` of its output with respect to
the input and the four parameters, compiled; it should be no slower than the layer's step.

Run: ``python benchmarks/attention.py [--repeats 30]``.
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy / torch are imported)
from __future__ import annotations

import argparse
import platform
from typing import Any

from _common import header, race, ratio, setup_threads

setup_threads()

import numpy as np

import typed_nn as tn
from typed_nn import nn, ops
from typed_nn.layers import (
    LayerInMap,
    LayerInput,
    LayerOutput,
    MultiHeadAttentionLayer,
    make_train_layer,
)
from typed_nn.model import GradCollector, LoadBuffer, ParamInitializer
from typed_nn.policies import PFeedbackOutput, PUpdate

BATCH, SEQ, D, HEADS = 8, 64, 64, 4
F32, CPU = tn.Float32, tn.CPU


def weights(seed: int) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(D)
    return {
        "w_qkv": (rng.normal(size=(D, 3 * D)) * scale).astype(np.float32),
        "b_qkv": (rng.normal(size=3 * D) * 0.1).astype(np.float32),
        "w_out": (rng.normal(size=(D, D)) * scale).astype(np.float32),
        "b_out": (rng.normal(size=D) * 0.1).astype(np.float32),
    }


def typed_nn_step(w: dict[str, np.ndarray[Any, Any]]) -> Any:
    cls = make_train_layer(
        MultiHeadAttentionLayer,
        LayerInMap({LayerInput: tn.Tensor3[tn.Float32, tn.CPU]}),
        PUpdate,
        PFeedbackOutput,
    )
    layer = cls("mha", D, HEADS, causal=True)
    init = ParamInitializer()
    for name, value in w.items():
        init.set_param(f"mha/{name}", value)
    layer.init(init, LoadBuffer(F32, CPU))

    @tn.compile
    def step(x: tn.Tensor3[tn.Float32, tn.CPU], g: tn.Tensor3[tn.Float32, tn.CPU]) -> list[Any]:
        y = layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput)
        dx = layer.feed_backward(layer.output_cont().set(LayerOutput, g)).get(LayerInput)
        collected: GradCollector[Any, Any] = GradCollector(F32, CPU)
        layer.grad_collect(collected)
        return [y, dx, *(grad for _, _, grad in sorted(collected, key=lambda e: e[0]))]

    return step


def module_step(w: dict[str, np.ndarray[Any, Any]]) -> Any:
    """The step with ``nn.MultiHeadAttention``; its outputs in ``typed_nn_step``'s order."""
    tn.manual_seed(0)
    mha = nn.MultiHeadAttention(D, HEADS, causal=True)
    state = {"in_proj_weight": w["w_qkv"].T.copy(), "in_proj_bias": w["b_qkv"]}
    state |= {"out_proj.weight": w["w_out"].T.copy(), "out_proj.bias": w["b_out"]}
    nn.load_state_dict(mha, state)

    @tn.compile
    def step(x: tn.Tensor3[tn.Float32, tn.CPU], g: tn.Tensor3[tn.Float32, tn.CPU]) -> list[Any]:
        y = mha(x)
        out_bias = mha.out_proj.bias
        assert out_bias is not None
        wrt = (x, out_bias, mha.in_proj_bias, mha.out_proj.weight, mha.in_proj_weight)
        dx, db_out, db_qkv, dw_out, dw_qkv = tn.vjp(y, wrt, g)
        # the weights' gradients in typed_nn_step's layout (x @ w)
        return [y, dx, db_out, db_qkv, ops.transpose(dw_out), ops.transpose(dw_qkv)]

    return step


def torch_step(w: dict[str, np.ndarray[Any, Any]]) -> Any:
    import torch

    torch.set_num_threads(1)
    mha = torch.nn.MultiheadAttention(D, HEADS, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(w["w_qkv"].T.copy()))
        mha.in_proj_bias.copy_(torch.from_numpy(w["b_qkv"]))
        mha.out_proj.weight.copy_(torch.from_numpy(w["w_out"].T.copy()))
        mha.out_proj.bias.copy_(torch.from_numpy(w["b_out"]))
    mask = torch.triu(torch.full((SEQ, SEQ), float("-inf")), 1)

    def step(x: Any, g: Any) -> list[Any]:
        mha.zero_grad(set_to_none=True)
        x.grad = None
        y, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
        (y * g).sum().backward()
        weight_grads = (mha.out_proj.weight.grad, mha.in_proj_weight.grad)
        biases = [mha.out_proj.bias.grad, mha.in_proj_bias.grad]
        return [y, x.grad, *biases, *(w.T for w in weight_grads if w is not None)]

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    import torch

    w = weights(0)
    rng = np.random.default_rng(1)
    x_np = rng.normal(size=(BATCH, SEQ, D)).astype(np.float32)
    g_np = rng.normal(size=(BATCH, SEQ, D)).astype(np.float32)
    x, g = tn.tensor(x_np, F32, CPU, tn.Dim3), tn.tensor(g_np, F32, CPU, tn.Dim3)
    tx = torch.from_numpy(x_np).requires_grad_(True)
    tg = torch.from_numpy(g_np)

    ours, modules, theirs = typed_nn_step(w), module_step(w), torch_step(w)
    # names sorted: b_out, b_qkv, w_out, w_qkv (typed_nn's layout; PyTorch's transposed above)
    expected = [t.detach().numpy() for t in theirs(tx, tg)]
    for got in (ours(x, g), modules(x, g)):
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-3, atol=1e-4)

    header(
        f"multi-head attention forward + backward (batch {BATCH}, seq {SEQ}, d {D}, "
        f"{HEADS} heads, causal, Float32) on {platform.machine()} / {platform.processor() or '?'}"
    )
    best = race(
        {
            "typed_nn (tn.compile)": lambda: [t.numpy() for t in ours(x, g)],
            "typed_nn modules (tn.compile)": lambda: [t.numpy() for t in modules(x, g)],
            "PyTorch eager (1 thread)": lambda: theirs(tx, tg),
        },
        repeats=args.repeats,
        inner=5,
    )
    ratio(
        "typed_nn / PyTorch eager",
        best["typed_nn modules (tn.compile)"],
        best["PyTorch eager (1 thread)"],
    )
    ratio("layers / PyTorch eager", best["typed_nn (tn.compile)"], best["PyTorch eager (1 thread)"])
    ratio(
        "modules / layers (target <= 1.0)",
        best["typed_nn modules (tn.compile)"],
        best["typed_nn (tn.compile)"],
    )
    print(f"  typed_nn traces: {ours.traces}")


if __name__ == "__main__":
    main()
