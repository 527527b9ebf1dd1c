"""A new user's character-level language model, written with ``typed_nn.nn`` modules, one
training step beside PyTorch eager (issue 35).

    h = embedding(ids)                                  # 90 symbols, d_model 64
    logits = head(layer_norm(h + attention(h)))         # 4 heads, causal; head 64 -> 90
    loss = cross_entropy(logits, next ids); AdamW (lr 3e-3)

batch 16, seq 64, Float32. typed_nn: the model of docs/modules.md (``nn.Embedding``,
``nn.MultiHeadAttention(causal=True)``, ``nn.LayerNorm``, ``nn.Linear``), its step
``tn.compile``\\ d (``ops.cross_entropy`` on the integer targets, ``tn.grad(loss, model)``,
``optim.AdamW.step``). PyTorch: the same modules (``batch_first`` attention with a causal mask),
``torch.optim.AdamW``, its weights loaded into the typed_nn model by
``nn.load_state_dict`` (PyTorch's names and layouts), so the losses agree (checked first).
Target: <= 1.0x PyTorch eager.

Profile (2026-11-27, the 2-vCPU AMD EPYC, one thread, load ~4, ``--profile``): the compiled
step is one generated program of 358 statements, so a call has no per-node Python, no graph
build, collect or plan lookup (a call's fixed cost is ~3 us of 6 ms): its time is its
kernels', run one by one. By op, the shares of the kernels' time: the products 38 %
(``contract_into``: the rank-3 linears as one GEMM each; ``matmul_out``: the attention's
batched products), element-wise passes not fused into regions (subtract, multiply, add,
divide) ~25 %, the attention's softmax and its backward ~18 % (the largest single statement
is the scores' ``x - max(x)`` pass over 64x64x64, 0.8 ms: ``peak_of`` takes a causal row's
maximum over its bit patterns and then re-reduces the rows that are all negative), the
cross-entropy's log-softmax over (1024, 90) ~6 %, the embedding's scatter-add ~4 % (0.57 ms
before it summed sorted runs with ``reduceat``), tiles, reshapes and the heads' split and
join ~10 %. Measured side by side in one process the step is 0.8-1.2x PyTorch eager across
runs on the loaded machine (``benchmarks/RESULTS.md``).

Run: ``python benchmarks/char_lm.py [--repeats 20] [--profile]`` (one thread each, minimum of
interleaved repeats).
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy / torch are imported)
from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

from _common import header, race, ratio, setup_threads

setup_threads()

import numpy as np

import typed_nn as tn
from typed_nn import nn, ops, optim

VOCAB, D, HEADS, SEQ, BATCH, LR = 90, 64, 4, 64, 16, 3e-3
Ids = tn.Matrix[tn.Int64, tn.CPU]


class CharLM(nn.Module):
    """docs/modules.md's model."""

    def __init__(self, vocab: int, d: int) -> None:
        self.emb = nn.Embedding(vocab, d)
        self.attn = nn.MultiHeadAttention(d, HEADS, causal=True)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def __call__(self, ids: Ids) -> tn.Tensor3[tn.Float32, tn.CPU]:
        h = self.emb(ids)
        return self.head(self.norm(h + self.attn(h)))


def typed_step(state: dict[str, Any]) -> Any:
    """typed_nn's compiled step, its model loaded with ``state`` (a torch state dict)."""
    tn.manual_seed(0)
    lm = CharLM(VOCAB, D)
    nn.load_state_dict(lm, state)
    opt = optim.AdamW(lm, lr=LR)

    @tn.compile
    def step(ids: Ids, targets: Ids) -> tn.Scalar[tn.Float32, tn.CPU]:
        loss = ops.cross_entropy(lm(ids), targets)
        opt.step(tn.grad(loss, lm))
        return loss

    return step


def torch_model() -> tuple[Any, Any]:
    """PyTorch's model and step (``None`` without torch)."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)

    module: Any = torch.nn.Module  # torch is untyped where it is not installed

    class TorchLM(module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(VOCAB, D)
            self.attn = torch.nn.MultiheadAttention(D, HEADS, batch_first=True)
            self.norm = torch.nn.LayerNorm(D)
            self.head = torch.nn.Linear(D, VOCAB)
            self.register_buffer("mask", torch.triu(torch.full((SEQ, SEQ), float("-inf")), 1))

        def forward(self, ids: Any) -> Any:
            h = self.emb(ids)
            a = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
            return self.head(self.norm(h + a))

    model = TorchLM()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)

    def step(ids: Any, targets: Any) -> Any:
        opt.zero_grad()
        logits = model(ids)
        loss: Any = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), targets.reshape(-1)
        )
        loss.backward()
        opt.step()
        return loss

    return model, step


def profile(step: Any, ids: Any, targets: Any, calls: int = 50) -> None:
    """Each kernel's median time per step, summed by op (the step's program, line by line)."""
    compiled = step._last
    program = compiled.program
    lines = program.source.splitlines()
    timed = [lines[0], "    _T = []"]
    stmts: list[str] = []
    for line in lines[1:]:
        top = line.startswith("    ") and not line.startswith("     ")
        if top and not line.strip().startswith(("else", "elif", "return")):
            timed.append("    _T.append(_clock())")
            stmts.append(line.strip())
        if line.strip().startswith("return"):
            timed += ["    _T.append(_clock())", "    _TIMES.append(_T)"]
        timed.append(line)
    scope = dict(program.fn.__globals__)
    times: list[list[float]] = []
    scope.update(_clock=time.perf_counter, _TIMES=times)
    exec("\n".join(timed), scope)
    arrays, numbers = compiled.guard((ids, targets))
    for _ in range(calls):
        scope["_run"](arrays, numbers, np.empty)
    per = np.median(np.diff(np.array(times), axis=1), axis=0)
    by_op: Counter[str] = Counter()
    for stmt, t in zip(stmts, per, strict=True):
        by_op[_op_of(stmt, program.fn.__globals__)] += t
    total = float(per.sum())
    print(f"  kernels: {total * 1e3:.2f} ms per step, {len(stmts)} statements")
    for op, t in by_op.most_common(14):
        print(f"    {op:<28} {t * 1e3:7.3f} ms  {100 * t / total:5.1f} %")


def _op_of(stmt: str, names: dict[str, Any]) -> str:
    """The kernel a statement of a program calls (its first K/S/I name), by name."""
    for word in stmt.replace("(", " ").replace("=", " ").replace(",", " ").split():
        if word[:1] in ("K", "S", "I") and word[1:2].isdigit():
            fn = names.get(word)
            if callable(fn):
                return str(getattr(fn, "__name__", word))
            return "fused element-wise" if word[0] == "I" else word
    return "views, buffers, checks"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import torch

    model, theirs = torch_model()
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items() if k != "mask"}
    state = _renamed(state)
    ours = typed_step(state)
    text = np.random.default_rng(1).integers(0, VOCAB, (BATCH, SEQ + 1))
    ids = tn.tensor(text[:, :-1], tn.Int64, tn.CPU, tn.Dim2)
    targets = tn.tensor(text[:, 1:], tn.Int64, tn.CPU, tn.Dim2)
    tids, ttargets = torch.from_numpy(text[:, :-1]), torch.from_numpy(text[:, 1:])
    for k in range(3):  # the same model and optimizer: the same losses
        a, b = float(ours(ids, targets).item()), float(theirs(tids, ttargets).detach())
        assert abs(a - b) <= 1e-4 * abs(b), f"step {k}: typed_nn {a} vs PyTorch {b}"
    header(f"character LM step (vocab {VOCAB}, d {D}, {HEADS} heads, seq {SEQ}, batch {BATCH})")
    best = race(
        {
            "typed_nn (nn modules, tn.compile)": lambda: ours(ids, targets),
            "PyTorch eager": lambda: theirs(tids, ttargets),
        },
        repeats=args.repeats,
    )
    ratio("typed_nn / PyTorch eager (target <= 1.0)", *best.values())
    if args.profile:
        profile(ours, ids, targets)


def _renamed(state: dict[str, Any]) -> dict[str, Any]:
    """PyTorch's names as the typed_nn catalogue spells them (identical where they agree)."""
    return state


if __name__ == "__main__":
    main()
