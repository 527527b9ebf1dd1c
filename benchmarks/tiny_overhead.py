"""Lazy overhead on tiny tensors: a 20-node expression over 4x4 float32 tensors.

numpy eager computes the 20 ops directly. typed_nn builds the 20 lazy nodes and evaluates
them each iteration (the plan is analysed once and reused). The figure is the extra time per
node over numpy eager; target <= 0.5 us/node with a reused plan. Also shown: re-evaluating a
prebuilt expression (no build), to separate the builders' cost from the evaluator's.
"""

from __future__ import annotations

from typing import Any

from _common import header, race, setup_threads

setup_threads()

import numpy as np  # noqa: E402

import typed_nn as tn  # noqa: E402
from typed_nn import ops  # noqa: E402
from typed_nn.evaluate import stats  # noqa: E402
from typed_nn.evaluate.cache import invalidate_caches  # noqa: E402

NODES = 20


def expression(x: Any, y: Any, z: Any, lib: Any) -> Any:
    """20 ops: arithmetic, numbers, transcendental functions, shared operands."""
    a = x * y + z  # 2
    b = lib.exp(a * 0.5) - x  # 3
    c = lib.tanh(b) * y + 1.0  # 3
    d = lib.sqrt(lib.square(c) + 1.0) / (z * z + 2.0)  # 6
    e = lib.sin(d) + lib.cos(a) * x  # 4
    return e * 0.25 - d  # 2


def main() -> None:
    header(f"lazy overhead: a {NODES}-node expression over 4x4 float32 tensors")
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(4, 4)).astype(np.float32) for _ in range(3)]
    x, y, z = xs
    a, b, c = (tn.tensor(v, tn.Float32, tn.CPU, tn.Dim2) for v in xs)
    expected = expression(x, y, z, np)
    np.testing.assert_allclose(tn.evaluate(expression(a, b, c, ops)).numpy(), expected, rtol=1e-5)
    built = expression(a, b, c, ops)

    def again() -> Any:
        invalidate_caches()
        return tn.evaluate(built)

    times = race(
        {
            "numpy eager (20 ufunc calls)": lambda: expression(x, y, z, np),
            "typed_nn build only": lambda: expression(a, b, c, ops),
            "typed_nn build + evaluate": lambda: tn.evaluate(expression(a, b, c, ops)),
            "typed_nn evaluate a prebuilt expression": again,
        },
        repeats=200,
        inner=50,
    )
    t_np, t_build, t_tn, t_again = times.values()
    print(f"  analyses during the timed runs: {stats.analyses} (one per distinct structure)")
    per = (t_tn - t_np) / NODES * 1e6
    print(f"  build + evaluate over numpy eager: {per:.2f} us/node (target <= 0.5)")
    print(f"    of which building: {(t_build / NODES) * 1e6:.2f} us/node")
    print(f"  evaluate only over numpy eager: {(t_again - t_np) / NODES * 1e6:.2f} us/node")


if __name__ == "__main__":
    main()
