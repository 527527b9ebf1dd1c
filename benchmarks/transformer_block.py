"""A pre-LN transformer block's training step: typed_nn beside PyTorch eager, on CPU or GPU.

    h = x + attention(layer_norm1(x))                  # 4 heads, causal
    y = h + relu(layer_norm2(h) @ w1 + b1) @ w2 + b2   # feed-forward width 256
    loss = mean((y - target)**2); Adam (lr 1e-3) on the block's 12 parameters

d_model 64, seq 64, batch 16, Float32. typed_nn's attention and layer norms are the library's
layers (``MultiHeadAttentionLayer``, ``LayerNormLayer``: their forwards only), the rest ops;
``tn.grad`` differentiates the loss, ``optim``'s ``Adam.apply`` writes the updates as assigns,
and ``tn.compile`` makes the whole step one program. PyTorch: ``nn.LayerNorm``,
``nn.MultiheadAttention(batch_first=True)``, ``nn.Linear``, ``torch.optim.Adam`` (its default
for the device), the same initial weights. Their losses agree step by step (checked first).

Run: ``python benchmarks/transformer_block.py [--repeats 20]`` (CPU, one thread each, min of
interleaved repeats); ``benchmarks/gpu.py`` times the same step on the GPU. Target: <= 1.0x.

Profile (issue 35; 2026-11-27, the 2-vCPU AMD EPYC, one thread): the compiled step is one
generated program of ~410 statements, each timed in place over 200 calls. Its time by kernel:
the products 59 % (``dot`` 44 %: the linears as one GEMM each, their weight gradients;
``matmul_out`` 15 %: the attention's batched products), element-wise passes ~20 % (multiply,
subtract, add, divide, exp, maximum), the softmax's backward 3 %, layout copies ~8 % (the
heads' split ``batch_narrow`` and join, reshapes, tiles), buffer allocation 3 %. Before
issue 35, layer norm computed its statistics over a features-first permuted view: every pass
after it, and the backward's, read a transposed layout at ~10x a contiguous pass's cost
(a (16, 64, 64) multiply: 200 us against 14 us), 1.4 ms of the step's 9.2 ms. It now reduces
over the last dim with ``keep_dim`` (1.12x -> 0.90x PyTorch, ``compare_commits.py``).
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy / torch are imported)
from __future__ import annotations

import argparse
from typing import Any

from _common import header, race, ratio, setup_threads

setup_threads()

import numpy as np
import numpy.typing as npt

import typed_nn as tn
from typed_nn import nn, ops, optim
from typed_nn.layers import (
    LayerInput,
    LayerNormLayer,
    LayerOutput,
    MultiHeadAttentionLayer,
    make_infer_layer,
)
from typed_nn.model import Adam, LoadBuffer, ParamInitializer
from typed_nn.policies import PDeviceIs

BATCH, SEQ, D, HEADS, FF = 16, 64, 64, 4, 256
LR = 1e-3
F32 = tn.Float32
Array = npt.NDArray[np.float32]
Untyped = Any


def weights(seed: int = 0) -> dict[str, Array]:
    """The block's initial parameters by typed_nn name (layouts: ``x @ w``)."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float) -> Array:
        return (rng.normal(size=shape) * scale).astype(np.float32)

    return {
        "ln1/weight": 1 + normal(D, scale=0.1),
        "ln1/bias": normal(D, scale=0.1),
        "attn/w_qkv": normal(D, 3 * D, scale=D**-0.5),
        "attn/b_qkv": normal(3 * D, scale=0.1),
        "attn/w_out": normal(D, D, scale=D**-0.5),
        "attn/b_out": normal(D, scale=0.1),
        "ln2/weight": 1 + normal(D, scale=0.1),
        "ln2/bias": normal(D, scale=0.1),
        "ff/w1": normal(D, FF, scale=D**-0.5),
        "ff/b1": normal(FF, scale=0.1),
        "ff/w2": normal(FF, D, scale=FF**-0.5),
        "ff/b2": normal(D, scale=0.1),
    }


def batch(seed: int = 1) -> tuple[Array, Array]:
    """An input (batch, seq, d) and a regression target of the same shape."""
    rng = np.random.default_rng(seed)
    x, target = (rng.normal(size=(BATCH, SEQ, D)).astype(np.float32) for _ in range(2))
    return x, target


class TypedBlock:
    """The block and its compiled training step on ``device``; ``step(x, target)`` returns the
    loss (a rank-0 tensor on the device)."""

    def __init__(self, w: dict[str, Array], device: type[tn.DeviceTag]) -> None:
        on = PDeviceIs(device)
        self.attn = make_infer_layer(MultiHeadAttentionLayer, on)("attn", D, HEADS, causal=True)
        self.ln1 = make_infer_layer(LayerNormLayer, on)("ln1", D)
        self.ln2 = make_infer_layer(LayerNormLayer, on)("ln2", D)
        init = ParamInitializer()
        for name, value in w.items():
            init.set_param(name, value)
        self.params: LoadBuffer[tn.Float32, Any] = LoadBuffer(F32, device)
        for layer in (self.attn, self.ln1, self.ln2):
            layer.init(init, self.params)
        for name in ("ff/w1", "ff/b1", "ff/w2", "ff/b2"):
            value = w[name]
            self.params.set(name, tn.tensor(value, F32, device, tn.tags.dim_of_rank(value.ndim)))
        self.adam = Adam(LR)
        self._step = tn.compile(self._traced)

    def forward(self, x: Untyped) -> Untyped:
        p = dict(self.params.items())

        def feed(layer: Any, value: Untyped) -> Untyped:
            return layer.feed_forward(layer.input_cont().set(LayerInput, value)).get(LayerOutput)

        h = x + feed(self.attn, feed(self.ln1, x))
        hidden = ops.relu(feed(self.ln2, h) @ p["ff/w1"] + p["ff/b1"])
        return h + hidden @ p["ff/w2"] + p["ff/b2"]

    def _traced(self, x: Untyped, target: Untyped, numbers: tuple[float, ...]) -> Untyped:
        loss = ops.mse_loss(target, self.forward(x))
        params = [w for _, w in self.params.items()]
        self.adam.apply(list(zip(params, tn.grad(loss, params), strict=True)), numbers)
        return loss

    def step(self, x: Untyped, target: Untyped) -> Untyped:
        loss = self._step(x, target, self.adam.numbers())
        self.adam.step_count += 1
        return loss


class ModuleBlock(nn.Module):
    """The same block written with ``typed_nn.nn`` modules (PyTorch's layouts: ``Linear`` and
    the attention's projections hold the transposes of :func:`weights`)."""

    def __init__(
        self, w: dict[str, Array], device: type[tn.DeviceTag], precision: Any = None
    ) -> None:
        """``precision``: a compute type policy (``PMixedFloat16``) for every layer, or None."""
        on: dict[str, Any] = {"elem": F32, "device": device, "precision": precision}
        self.half = precision is not None
        self.ln1 = nn.LayerNorm(D, **on)
        self.attn = nn.MultiHeadAttention(D, HEADS, causal=True, **on)
        self.ln2 = nn.LayerNorm(D, **on)
        self.ff1 = nn.Linear(D, FF, **on)
        self.ff2 = nn.Linear(FF, D, **on)
        names = {"attn/w_qkv": "attn.in_proj_weight", "attn/b_qkv": "attn.in_proj_bias"}
        names |= {"attn/w_out": "attn.out_proj.weight", "attn/b_out": "attn.out_proj.bias"}
        names |= {f"ff/w{i}": f"ff{i}.weight" for i in (1, 2)}
        names |= {f"ff/b{i}": f"ff{i}.bias" for i in (1, 2)}
        state = {names.get(k, k.replace("/", ".")): v.T.copy() for k, v in w.items()}
        nn.load_state_dict(self, state)

    def __call__(self, x: tn.Tensor3[tn.Float32, Any]) -> tn.Tensor3[tn.Float32, Any]:
        if not self.half:
            same: tn.Tensor3[tn.Float32, Any] = self.body(x)
            return same
        u: Untyped = ops  # the layers compute in Float16: the input cast in, the output out
        out: tn.Tensor3[tn.Float32, Any] = u.astype(self.body(u.astype(x, tn.Float16)), F32)
        return out

    def body(self, x: Untyped) -> Untyped:
        h = x + self.attn(self.ln1(x))
        return h + self.ff2(ops.relu(self.ff1(self.ln2(h))))


def module_step(block: ModuleBlock) -> Any:
    """``block``'s compiled training step with ``optim.Adam``: ``step(x, target) -> loss``."""
    adam = optim.Adam(block, lr=LR)

    @tn.compile
    def step(x: Untyped, target: Untyped) -> Untyped:
        loss = ops.mse_loss(target, block(x))
        adam.step(tn.grad(loss, block))
        return loss

    return step


def torch_block(torch: Any, w: dict[str, Array], device: str, autocast: bool = False) -> Any:
    """The same block in PyTorch on ``device``: ``step(x, target) -> loss`` (eager); with
    ``autocast``, its forward under ``torch.autocast`` in float16 (a CUDA device)."""
    block = torch_block_module(torch, w, device)
    adam = torch.optim.Adam(block.parameters(), lr=LR)

    def step(x: Any, target: Any) -> Any:
        adam.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=autocast):
            y = block(x)
        loss = torch.nn.functional.mse_loss(y.float(), target)
        loss.backward()
        adam.step()
        return loss

    return step


def torch_block_module(torch: Any, w: dict[str, Array], device: str) -> Any:
    """The block as a ``torch.nn.Module`` on ``device``, holding :func:`weights`."""
    nn = torch.nn
    module: Any = nn.Module

    class Block(module):  # type: ignore[misc]  # torch is untyped here
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.attn = nn.MultiheadAttention(D, HEADS, batch_first=True)
            self.ff1, self.ff2 = nn.Linear(D, FF), nn.Linear(FF, D)
            self.register_buffer("mask", torch.triu(torch.full((SEQ, SEQ), float("-inf")), 1))

        def forward(self, x: Any) -> Any:
            a = self.ln1(x)
            h = x + self.attn(a, a, a, attn_mask=self.mask, need_weights=False)[0]
            return h + self.ff2(torch.relu(self.ff1(self.ln2(h))))

    block = Block()
    theirs = {  # torch's Linear weights are typed_nn's transposed
        "ln1/weight": block.ln1.weight,
        "ln1/bias": block.ln1.bias,
        "attn/w_qkv": block.attn.in_proj_weight,
        "attn/b_qkv": block.attn.in_proj_bias,
        "attn/w_out": block.attn.out_proj.weight,
        "attn/b_out": block.attn.out_proj.bias,
        "ln2/weight": block.ln2.weight,
        "ln2/bias": block.ln2.bias,
        "ff/w1": block.ff1.weight,
        "ff/b1": block.ff1.bias,
        "ff/w2": block.ff2.weight,
        "ff/b2": block.ff2.bias,
    }
    with torch.no_grad():
        for name, param in theirs.items():
            param.copy_(torch.from_numpy(w[name].T.copy()))
    return block.to(device)


def loss_gap(ours: TypedBlock, theirs: Any, x: Any, tx: Any, target: Any, tt: Any) -> float:
    """The largest relative difference between the two blocks' losses over three steps."""
    worst = 0.0
    for _ in range(3):
        a = float(ours.step(x, target).numpy())
        b = float(theirs(tx, tt).item())
        worst = max(worst, abs(a - b) / abs(b))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    w = weights()
    xs, ts = batch()
    x, target = (tn.tensor(a, F32, tn.CPU, tn.Dim3) for a in (xs, ts))
    tx, tt = torch.from_numpy(xs), torch.from_numpy(ts)
    ours, theirs = TypedBlock(w, tn.CPU), torch_block(torch, w, "cpu")
    worst = loss_gap(ours, theirs, x, tx, target, tt)
    assert worst < 1e-4, f"typed_nn and PyTorch losses differ by {worst:.2e} (relative)"
    modules = module_step(ModuleBlock(w, tn.CPU))
    fresh = TypedBlock(w, tn.CPU)
    for _ in range(3):  # the module block's step is the layer block's, step by step
        a, b = float(modules(x, target).numpy()), float(fresh.step(x, target).numpy())
        assert abs(a - b) <= 1e-4 * abs(b), f"module and layer blocks differ: {a} vs {b}"
    header(
        f"pre-LN transformer block training step (batch {BATCH}, seq {SEQ}, d {D}, {HEADS} "
        f"heads, FF {FF}, MSE, Adam; losses agree to {worst:.1e}) on the CPU, one thread"
    )
    best = race(
        {
            "typed_nn (tn.compile)": lambda: ours.step(x, target),
            "typed_nn modules + optim": lambda: modules(x, target),
            "PyTorch eager": lambda: theirs(tx, tt),
        },
        repeats=args.repeats,
    )
    ratio("typed_nn / PyTorch eager", best["typed_nn (tn.compile)"], best["PyTorch eager"])
    ratio(
        "modules / layers (target <= 1.0)",
        best["typed_nn modules + optim"],
        best["typed_nn (tn.compile)"],
    )


if __name__ == "__main__":
    main()
