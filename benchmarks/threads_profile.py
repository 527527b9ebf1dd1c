"""Where a compiled step's time goes, at 1 and 2 threads: BLAS products, element-wise passes,
other kernels, and the program's own Python.

Every callable the step's generated program calls (its kernels, ufuncs and specialised forms,
``last_program().source`` names them) is wrapped with a timer; a kernel is "BLAS" when it is a
matrix product (``matmul``, ``einsum``, a ``dot`` / ``matmul`` node's specialised form),
"element-wise" when it is a ufunc or an element-wise gradient kernel (each pass of a fused
region counts), "other" otherwise (softmax, reductions, gathers, reshapes, ...). "Python" is the step's wall time minus all of them (the program's
lines, the compiled call's guard and binding). First, the large MLP's eight products alone in
numpy and torch at 1 and 2 threads. Run: ``python benchmarks/threads_profile.py``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from threads import block_steps, mlp_epochs

import typed_nn as tn

Spent = defaultdict[str, float]

BLAS = ("matmul", "dot", "contract")


def _kind(name: str, fn: Any) -> str:
    label = f"{name} {getattr(fn, '__name__', '')} {getattr(fn, '__qualname__', '')}".lower()
    if any(word in label for word in BLAS):
        return "BLAS"
    if isinstance(fn, np.ufunc) or getattr(fn, "__qualname__", "") == "_grad.<locals>.impl":
        return "element-wise"  # a ufunc, or an element-wise gradient kernel (relu_grad, ...)
    return "other"


def _timed(kind: str, fn: Any, spent: Spent) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[kind] += time.perf_counter() - start

    return call


def instrument(program: Any, spent: Spent) -> None:
    """Wrap the kernels in ``program``'s namespace (not a blocked loop, ``BL``: its passes count)."""
    names = program.fn.__globals__
    for name, value in list(names.items()):
        if callable(value) and not isinstance(value, type) and name[:1] in "KUSIF":
            names[name] = _timed(_kind(name, value), value, spent)


def profile(label: str, fn: Callable[[], Any], program: Callable[[], Any], runs: int) -> None:
    fn()
    spent: Spent = defaultdict(float)
    instrument(program(), spent)
    for n in (1, 2):
        tn.set_num_threads(n)
        best, parts = float("inf"), Spent(float)
        for _ in range(runs):
            spent.clear()
            start = time.perf_counter()
            fn()
            took = time.perf_counter() - start
            if took < best:
                best, parts = took, Spent(float, spent)
        python = best - sum(parts.values())
        shares = ", ".join(
            f"{k} {v * 1e3:.2f} ms ({v / best:.0%})"
            for k, v in [*sorted(parts.items()), ("Python", python)]
        )
        print(f"{label}, {n} thread(s): {best * 1e3:.2f} ms = {shares}")


MLP_PRODUCTS = [  # (m, k, n) of the large MLP step's products, batch 128
    *((128, 784, 512), (128, 512, 256), (128, 256, 10)),  # forward
    *((128, 10, 256), (128, 256, 512)),  # input gradients
    *((784, 128, 512), (512, 128, 256), (256, 128, 10)),  # weight gradients
]


def products(torch: Any, repeats: int) -> None:
    """The large MLP step's eight products alone, numpy (OpenBLAS) and torch, 1 and 2 threads
    alternated: how much each BLAS gains on these shapes."""
    rng = np.random.default_rng(0)
    pairs = [
        (rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32))
        for m, k, n in MLP_PRODUCTS
    ]
    tpairs = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in pairs]
    fns: dict[str, Callable[[], Any]] = {
        "numpy (OpenBLAS)": lambda: [a @ b for a, b in pairs],
        "torch": lambda: [torch.mm(a, b) for a, b in tpairs],
    }
    best: dict[tuple[str, int], float] = {}
    for r in range(repeats + 1):
        for n in (1, 2):
            tn.set_num_threads(n)
            torch.set_num_threads(n)
            for name, fn in fns.items():
                start = time.perf_counter()
                for _ in range(32):
                    fn()
                took = time.perf_counter() - start
                if r:
                    best[name, n] = min(best.get((name, n), took), took)
    for name in fns:
        one, two = best[name, 1], best[name, 2]
        print(f"MLP products x32, {name}: {one * 1e3:.2f} -> {two * 1e3:.2f} ms, {one / two:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    import torch

    from typed_nn.evaluate import last_program

    print(f"load {os.getloadavg()[0]:.2f}")
    products(torch, max(3, args.runs // 4))
    mlp, _ = mlp_epochs(torch)
    steps = mlp.__closure__
    assert steps is not None
    step = next(c.cell_contents for c in steps if hasattr(c.cell_contents, "_last"))
    profile("large MLP, 32 steps", mlp, lambda: step._last.program, max(2, args.runs // 8))
    block, _ = block_steps(torch)
    block()
    profile("transformer block step", block, last_program_of_block(block), args.runs)
    del last_program
    print(f"load after {os.getloadavg()[0]:.2f}")


def last_program_of_block(block: Callable[[], Any]) -> Callable[[], Any]:
    """The program of the block's compiled step (``TypedBlock._step``'s last Step)."""
    cells = block.__closure__
    assert cells is not None
    ours = next(c.cell_contents for c in cells if hasattr(c.cell_contents, "_step"))
    return lambda: ours._step._last.program


if __name__ == "__main__":
    main()
