"""Two commits side by side in one run: is a change (a refactoring) slower?

Run: ``python benchmarks/compare_commits.py BASE [HEAD]`` (HEAD by default). Each commit is
checked out into a temporary git worktree; the same measurements run in a child process per
commit (``PYTHONPATH`` = that worktree, one BLAS thread), alternated ``--rounds`` times, and
the minimums are compared:

* a 20-node element-wise expression on 4x4 float32, built and evaluated (uncompiled);
* the same expression through ``tn.compile``, per call;
* ``typed-nn train digits --epochs 8`` as a whole process (import included).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import header, setup_threads

setup_threads()

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import subprocess, sys, time
import numpy as np

OUT = sys.argv[1]  # the training run's output folder
import typed_nn as tn
from typed_nn import ops

rng = np.random.default_rng(0)
x0, y0 = (
    tn.tensor(rng.normal(size=(4, 4)).astype(np.float32), tn.Float32, tn.CPU, tn.Dim2)
    for _ in range(2)
)

def expr(x, y):
    for _ in range(4):  # 5 nodes a round
        x = ops.tanh(x * y + 0.5) - y * 0.25
    return x

def best(fn, n, rounds=7):
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t) / n)
    return min(times)

uncompiled = best(lambda: expr(x0, y0).numpy(), 300)
compiled_expr = tn.compile(expr)
compiled_expr(x0, y0)
compiled = best(lambda: compiled_expr(x0, y0), 3000)
train = [sys.executable, "-c", "import sys; from typed_nn.cli import main; "
         "sys.exit(main(['train', 'digits', '--epochs', '8', '--no-progress', '--out', sys.argv[1]]))",
         OUT]
t = time.perf_counter()
subprocess.run(train, check=True, capture_output=True)
print(uncompiled, compiled, time.perf_counter() - t)
"""

MEASURES = (
    ("20-node 4x4 expression, uncompiled, per call", 1e6, "us"),
    ("the same, compiled, per call", 1e6, "us"),
    ("typed-nn train digits --epochs 8, whole process", 1.0, "s"),
)


def measure(tree: Path, out: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # one BLAS thread: set by setup_threads
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(out)], env=env, check=True, capture_output=True, text=True
    )
    return [float(v) for v in done.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("base", help="the commit before the change")
    parser.add_argument("head", nargs="?", default="HEAD", help="the commit after it")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {}
        for label, rev in (("base", args.base), ("head", args.head)):
            tree = Path(tmp) / label
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev],
                check=True,
            )
            trees[label] = tree
        try:
            best: dict[str, list[float]] = {}
            for _ in range(args.rounds):
                for label, tree in trees.items():
                    got = measure(tree, Path(tmp) / f"out_{label}")
                    best[label] = [
                        min(a, b) for a, b in zip(best.get(label, got), got, strict=True)
                    ]
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)])
    header(f"{args.base} -> {args.head} (minimum of {args.rounds} alternated rounds)")
    for i, (what, scale, unit) in enumerate(MEASURES):
        base, head = best["base"][i] * scale, best["head"][i] * scale
        print(f"  {what:50s} {base:8.2f} -> {head:8.2f} {unit}  ({head / base:.2f}x)")


if __name__ == "__main__":
    main()
