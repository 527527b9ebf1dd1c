"""Per-sample loop vs hand-batched: 64 forwards + backwards of a 64-128-10 MLP.

The MetaNN claim: register each sample's forward and backward in a loop, evaluate once, and
the evaluator batches the registrations into mini-batch calls. Compared with the same
gradient computed by hand as one batch (typed_nn and plain numpy), and with a per-sample
numpy loop. Target: the per-sample typed_nn loop within 2x of the hand-batched version.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from _common import header, race, ratio, setup_threads

setup_threads()

import numpy as np  # noqa: E402

import typed_nn as tn  # noqa: E402
from typed_nn import ops  # noqa: E402

Array = Any
B, IN, HID, OUT = 64, 64, 128, 10
rng = np.random.default_rng(0)
X = rng.normal(size=(B, IN)).astype(np.float32)
T = np.eye(OUT, dtype=np.float32)[rng.integers(0, OUT, size=B)]
W1 = (rng.normal(size=(IN, HID)) * 0.1).astype(np.float32)
B1 = np.zeros(HID, np.float32)
W2 = (rng.normal(size=(HID, OUT)) * 0.1).astype(np.float32)
B2 = np.zeros(OUT, np.float32)


def tensors() -> dict[str, Any]:
    t = tn.tensor
    f, c = tn.Float32, tn.CPU
    return {
        "w1": t(W1, f, c, tn.Dim2),
        "b1": t(B1, f, c, tn.Dim1),
        "w2": t(W2, f, c, tn.Dim2),
        "b2": t(B2, f, c, tn.Dim1),
        "xs": [t(X[i : i + 1], f, c, tn.Dim2) for i in range(B)],
        "ts": [t(T[i : i + 1], f, c, tn.Dim2) for i in range(B)],
        "x": t(X, f, c, tn.Dim2),
        "t": t(T, f, c, tn.Dim2),
        "one": tn.scalar(1.0, f, c),
    }


def grads(p: dict[str, Any], x: Any, t: Any) -> tuple[Any, ...]:
    """Loss and the four gradients for one (1, IN) sample or one (B, IN) batch."""
    a1 = x @ p["w1"] + p["b1"]
    h = ops.relu(a1)
    y = ops.softmax(h @ p["w2"] + p["b2"])
    loss = ops.nll_loss(t, y)
    dz = ops.softmax_grad(ops.nll_loss_grad(p["one"], t, y), y)
    da = ops.relu_grad(dz @ ops.transpose(p["w2"]), a1)
    db1 = ops.reduce_sum(da, first=1)
    db2 = ops.reduce_sum(dz, first=1)
    return loss, ops.transpose(x) @ da, db1, ops.transpose(h) @ dz, db2


def per_sample(p: dict[str, Any]) -> list[Any]:
    """64 per-sample gradients, summed with plain adds, registered and evaluated once."""
    per = [grads(p, x, t) for x, t in zip(p["xs"], p["ts"], strict=True)]
    sums = [functools.reduce(operator.add, parts) for parts in zip(*per, strict=True)]
    handles = [s.eval_register() for s in sums]
    tn.EvalPlan.eval()
    return [h.data() for h in handles]


def batched(p: dict[str, Any]) -> list[Any]:
    """The same gradients written as one mini-batch (nll_loss's mean is per batch: scale by B
    to match the per-sample sums)."""
    loss, dw1, db1, dw2, db2 = grads(p, p["x"], p["t"])
    handles = [(v * float(B)).eval_register() for v in (loss, dw1, db1, dw2, db2)]
    tn.EvalPlan.eval()
    return [h.data() for h in handles]


def numpy_batched() -> list[Array]:
    a1 = X @ W1 + B1
    h = np.maximum(a1, 0)
    z = h @ W2 + B2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    loss = -(T * np.log(y)).sum()
    dz = y - T
    da = (dz @ W2.T) * (a1 > 0)
    return [loss, X.T @ da, da.sum(0), h.T @ dz, dz.sum(0)]


def numpy_per_sample() -> list[Array]:
    acc = [
        np.float32(0),
        np.zeros_like(W1),
        np.zeros_like(B1),
        np.zeros_like(W2),
        np.zeros_like(B2),
    ]
    for i in range(B):
        x, t = X[i : i + 1], T[i : i + 1]
        a1 = x @ W1 + B1
        h = np.maximum(a1, 0)
        z = h @ W2 + B2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        y = e / e.sum(axis=1, keepdims=True)
        dz = y - t
        da = (dz @ W2.T) * (a1 > 0)
        for j, v in enumerate([-(t * np.log(y)).sum(), x.T @ da, da.sum(0), h.T @ dz, dz.sum(0)]):
            acc[j] = acc[j] + v
    return acc


def main() -> None:
    header("per-sample loop of 64 MLP (64-128-10) forwards + backwards, evaluated once")
    p = tensors()
    expected = numpy_batched()
    for got in (per_sample(p), batched(p)):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g.numpy(), e, rtol=2e-3, atol=2e-4)
    times = race(
        {
            "numpy hand-batched": numpy_batched,
            "numpy per-sample loop": numpy_per_sample,
            "typed_nn hand-batched": lambda: batched(p),
            "typed_nn per-sample, batched by the evaluator": lambda: per_sample(p),
        },
        repeats=30,
    )
    t_np_b, t_np_s, t_tn_b, t_tn_s = times.values()
    ratio("numpy per-sample / numpy batched", t_np_s, t_np_b)
    ratio("typed_nn per-sample / typed_nn hand-batched (target <= 2)", t_tn_s, t_tn_b)
    ratio("typed_nn per-sample / numpy hand-batched", t_tn_s, t_np_b)


if __name__ == "__main__":
    main()
