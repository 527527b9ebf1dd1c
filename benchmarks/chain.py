"""The element-wise chain ``tanh(a*x + b) * sigmoid(c*x) + 0.5*x`` on 1e7 float32 values.

Anchors: numpy eager, numpy with preallocated buffers, numpy hand-blocked (in place over
64K-element blocks), torch eager and torch.compile (when installed; the first compiled call is
excluded). typed_nn builds the expression and evaluates it each iteration (one fused,
blocked pass into a pooled result).
Targets: <= 0.75x torch.compile's time, >= 2.5x faster than numpy eager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from _common import header, race, ratio, setup_threads

setup_threads()

import numpy as np  # noqa: E402
from _anchors import optional  # noqa: E402

import typed_nn as tn  # noqa: E402
from typed_nn import ops  # noqa: E402

A, B, C = 0.5, 0.1, 2.0
N = 10**7
BLOCK = 1 << 16


def numpy_variants(x: Any) -> dict[str, Callable[[], Any]]:
    """The numpy anchors, each returning the chain of ``x``: eager (temporaries), with two
    preallocated full-size buffers, and hand-blocked (two 64K-element scratch blocks, the
    result written into one preallocated array)."""

    def eager() -> Any:
        return np.tanh(A * x + B) * (1 / (1 + np.exp(-C * x))) + 0.5 * x

    t1, t2 = np.empty_like(x), np.empty_like(x)

    def prealloc() -> Any:
        np.multiply(x, A, out=t1)
        np.add(t1, B, out=t1)
        np.tanh(t1, out=t1)
        np.multiply(x, -C, out=t2)
        np.exp(t2, out=t2)
        np.add(t2, 1, out=t2)
        np.divide(t1, t2, out=t1)
        np.multiply(x, 0.5, out=t2)
        return np.add(t1, t2, out=t1)

    out = np.empty_like(x)
    b1, b2 = np.empty(BLOCK, x.dtype), np.empty(BLOCK, x.dtype)

    def blocked() -> Any:
        for lo in range(0, x.size, BLOCK):
            hi = min(lo + BLOCK, x.size)
            xb, s1, s2 = x[lo:hi], b1[: hi - lo], b2[: hi - lo]
            np.multiply(xb, A, out=s1)
            s1 += B
            np.tanh(s1, out=s1)
            np.multiply(xb, -C, out=s2)
            np.exp(s2, out=s2)
            s2 += 1
            s1 /= s2
            np.multiply(xb, 0.5, out=s2)
            np.add(s1, s2, out=out[lo:hi])
        return out

    return {"numpy eager": eager, "numpy preallocated": prealloc, "numpy hand-blocked": blocked}


def main() -> None:
    header(f"chain tanh(a*x + b) * sigmoid(c*x) + 0.5*x, float32, n = {N:.0e}")
    x = np.random.default_rng(0).normal(size=N).astype(np.float32)
    fns: dict[str, Any] = dict(numpy_variants(x))
    eager = fns["numpy eager"]
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        tx = torch.from_numpy(x)

        def chain(v: Any) -> Any:
            return torch.tanh(A * v + B) * torch.sigmoid(C * v) + 0.5 * v

        fns["torch eager"] = lambda: chain(tx)
        try:
            compiled = torch.compile(chain)
            compiled(tx)
            fns["torch.compile"] = lambda: compiled(tx)
        except Exception as exc:  # no compiler toolchain: report and go on
            print(f"  (torch.compile unavailable: {type(exc).__name__}: {exc})"[:200])
    xt = tn.tensor(x, tn.Float32, tn.CPU, tn.Dim1)

    def typed() -> Any:
        return tn.evaluate(ops.tanh(A * xt + B) * ops.sigmoid(C * xt) + 0.5 * xt)

    got = typed().numpy()
    np.testing.assert_allclose(got, eager(), rtol=1e-5, atol=1e-6)
    fns["typed_nn evaluate (fused, blocked)"] = typed
    times = race(fns, repeats=10)
    t = times["typed_nn evaluate (fused, blocked)"]
    if "torch.compile" in times:
        ratio("typed_nn / torch.compile (target <= 0.75)", t, times["torch.compile"])
    ratio("numpy eager / typed_nn (target >= 2.5)", times["numpy eager"], t)


if __name__ == "__main__":
    main()
