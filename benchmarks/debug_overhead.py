"""Cost of debug mode per checked call: plain call vs beartype-checked call, side by side.

Run: ``python benchmarks/debug_overhead.py``. Debug mode is not switched on for the process:
the checked callables are built directly, exactly as ``typed_nn.debug.enable()`` builds them,
so one process times both sides. Off, debug mode adds nothing (no wrapper; tested in
tests/test_debug.py), so "plain" is also the cost with debug mode off.
"""

from __future__ import annotations

import platform
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
from beartype import beartype

import typed_nn as tn
from typed_nn.data.tensor import Tensor
from typed_nn.debug.checker import CONF
from typed_nn.debug.public import checked
from typed_nn.ops import math as ops_math

NUMBER = 20_000
REPEAT = 15


def per_call_ns(plain: Callable[[], object], debug: Callable[[], object]) -> tuple[float, float]:
    """Best of REPEAT interleaved runs of NUMBER calls each, in nanoseconds per call.

    Interleaving keeps a burst of load on a shared machine from landing on one side only.
    """
    best = [float("inf"), float("inf")]
    for _ in range(REPEAT):
        for i, fn in enumerate((plain, debug)):
            best[i] = min(best[i], timeit.timeit(fn, number=NUMBER))
    return best[0] / NUMBER * 1e9, best[1] / NUMBER * 1e9


def user_function() -> Callable[[Any], Any]:
    """A user function annotated with a concrete tagged type."""

    def first_row(x: Tensor[tn.Float32, tn.CPU, tn.Dim2]) -> Any:
        return x

    return first_row


def main() -> None:
    x = tn.tensor(np.ones((4, 3)), tn.Float32, tn.CPU, tn.Dim2)
    exp = ops_math.exp
    debug_exp = checked(exp)  # what debug mode puts in tn.ops
    bare_exp = beartype(conf=CONF)(exp)  # beartype's own wrapper, for reference
    plain_user = user_function()
    checked_user = beartype(conf=CONF)(user_function())  # as install() checks it
    rows = [
        ("ops.exp(x) (builds a node)", lambda: exp(x), lambda: debug_exp(x)),
        ("  same, beartype wrapper alone", lambda: exp(x), lambda: bare_exp(x)),
        (
            "user f(x: Tensor[Float32, CPU, Dim2])",
            lambda: plain_user(x),
            lambda: checked_user(x),
        ),
    ]
    print(f"python {platform.python_version()} on {platform.processor() or platform.machine()}")
    print(f"{'call':40} {'plain ns':>10} {'checked ns':>11} {'extra ns':>9} {'ratio':>6}")
    for name, plain, debug in rows:
        p, d = per_call_ns(plain, debug)
        print(f"{name:40} {p:10.0f} {d:11.0f} {d - p:9.0f} {d / p:6.2f}")


if __name__ == "__main__":
    main()
