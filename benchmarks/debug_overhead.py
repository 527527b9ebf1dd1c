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
from typed_nn.debug.public import CONF, checked
from typed_nn.debug.subscription import concrete
from typed_nn.ops import math as ops_math

NUMBER = 20_000
REPEAT = 7


def per_call_ns(fn: Callable[[], object]) -> float:
    """Best of REPEAT runs of NUMBER calls, in nanoseconds per call."""
    return min(timeit.repeat(fn, number=NUMBER, repeat=REPEAT)) / NUMBER * 1e9


def user_function() -> Callable[[Any], Any]:
    """A user function annotated with a concrete tagged type, as debug mode checks it."""

    def first_row(x: Any) -> Any:
        return x

    first_row.__annotations__ = {"x": concrete(Tensor, (tn.Float32, tn.CPU, tn.Dim2))}
    return first_row


def main() -> None:
    x = tn.tensor(np.ones((4, 3)), tn.Float32, tn.CPU, tn.Dim2)
    exp = ops_math.exp
    debug_exp = checked(exp)  # what debug mode puts in tn.ops
    bare_exp = beartype(conf=CONF)(exp)  # beartype's own wrapper, for reference
    plain_user = user_function()
    checked_user = beartype(conf=CONF)(user_function())
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
        p, d = per_call_ns(plain), per_call_ns(debug)
        print(f"{name:40} {p:10.0f} {d:11.0f} {d - p:9.0f} {d / p:6.2f}")


if __name__ == "__main__":
    main()
