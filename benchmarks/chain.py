"""The element-wise chain ``tanh(a*x + b) * sigmoid(c*x) + 0.5*x`` on 1e7 float32 values.

Anchors: numpy eager, numpy with preallocated buffers, torch eager and torch.compile (when
installed; the first compiled call is excluded). typed_nn builds the expression and
evaluates it each iteration (one fused, blocked pass into a pooled result).
Targets: <= 0.75x torch.compile's time, >= 2.5x faster than numpy eager.
"""

from __future__ import annotations

from typing import Any

from _common import header, race, ratio, setup_threads

setup_threads()

import numpy as np  # noqa: E402
from _anchors import optional  # noqa: E402

import typed_nn as tn  # noqa: E402
from typed_nn import ops  # noqa: E402

A, B, C = 0.5, 0.1, 2.0
N = 10**7


def main() -> None:
    header(f"chain tanh(a*x + b) * sigmoid(c*x) + 0.5*x, float32, n = {N:.0e}")
    x = np.random.default_rng(0).normal(size=N).astype(np.float32)

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

    fns: dict[str, Any] = {"numpy eager": eager, "numpy preallocated": prealloc}
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
