"""Programs (issue 19): ``tn.grad`` + ``tn.compile`` against numpy, jax.jit and PyTorch.

Run: ``python benchmarks/programs.py [--quick]`` (``--quick``: tiny sizes and repeats, a smoke
test). Each question runs in its own process (``--question N``; one library per process:
jax only where a question uses it, torch only in question 4), one BLAS / OpenMP / XLA thread,
its variants timed round-robin and compared by their minimums (``_common.race``).

1. A 20-node element-wise expression on 4x4 float32 (4 rounds of
   ``x = tanh(x*y + 0.5) - y*0.25``): compiled typed_nn per call vs numpy eager vs jax.jit.
   Target: compiled <= 1.0x numpy eager. Also the uncompiled build + evaluate, in us/node
   over numpy eager (was 2.7 us/node).
2. A Python loop over 64 samples inside a compiled function, each sample's loss and
   ``tn.grad`` (MLP 64-128-10), summed, vs the same gradients written as one batch of 64 and
   compiled. Target: <= 1.5x (was 15.4x).
3. Digits MLP 64-128-10 (ReLU, softmax + NLL, SGD 0.1), batch 32, one epoch: a step written
   as a user would (loss, ``tn.grad``, SGD ``assign``\\ s, ``tn.compile``) vs hand-written
   numpy vs jax.jit (``value_and_grad`` + update). Targets: <= 1.0x numpy, <= 1.2x jax.
4. GRU (hidden 32, batch 32, 10 random bits, running-parity targets): one compiled training
   step written from ops vs PyTorch eager ``nn.GRU`` + ``Linear`` per step. Target: <= 1.0x.
5. MShadow's update ``w = -eta*(g + lam*w)`` and the chain
   ``tanh(a*x + b)*sigmoid(c*x) + 0.5*x`` at 1e7 float32, through ``assign`` (uncompiled)
   and compiled, vs hand-blocked numpy (the anchors of ``mshadow_update.py`` / ``chain.py``).
   Target: <= 1.0x hand-blocked.
"""

# ruff: noqa: E402  (thread counts must be set before numpy / jax / torch are imported)
from __future__ import annotations

import os

from _common import header, race, ratio, setup_threads

setup_threads()
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import argparse
import functools
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import Compiled

Array = Any
"""A numpy (or jax) array."""
F32, CPU = tn.Float32, tn.CPU
M32 = tn.Matrix[tn.Float32, tn.CPU]
Param2 = tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]
Param1 = tn.Tensor[tn.Float32, tn.CPU, tn.Dim1]


def matrix(a: Array) -> Param2:
    return tn.tensor(np.ascontiguousarray(a, np.float32), F32, CPU, tn.Dim2)


def vector(a: Array) -> Param1:
    return tn.tensor(np.ascontiguousarray(a, np.float32), F32, CPU, tn.Dim1)


def optional(name: str) -> Any:
    """The module, or None with a note (``_anchors.optional``, imported only when needed so
    that each question's process loads only its own anchors)."""
    from _anchors import optional as load

    return load(name)


def target(label: str, a: float, b: float, goal: float) -> float:
    """Print the ratio ``a / b`` and whether it meets ``<= goal``; return it."""
    r = a / b
    verdict = "met" if r <= goal else f"missed by {r / goal:.2f}x"
    print(f"  ratio {label:<46} {r:8.2f}x   target <= {goal}: {verdict}")
    return r


# --- 1. a 20-node element-wise expression on 4x4 float32 ----------------------------------

ROUNDS = 4
NODES = 5 * ROUNDS  # mul, add, tanh, mul, sub per round


def rounds(x: Any, y: Any, lib: Any) -> Any:
    """``ROUNDS`` rounds of ``x = tanh(x*y + 0.5) - y*0.25`` with numpy, jax.numpy or ops."""
    for _ in range(ROUNDS):
        x = lib.tanh(x * y + 0.5) - y * 0.25
    return x


def q1_tiny(quick: bool) -> None:
    header(f"1. a {NODES}-node element-wise expression on 4x4 float32, per call")
    rng = np.random.default_rng(0)
    x, y = (rng.normal(size=(4, 4)).astype(np.float32) for _ in range(2))
    xt, yt = matrix(x), matrix(y)
    compiled = tn.compile(lambda a, b: rounds(a, b, ops))
    one_node = tn.compile(lambda a: a + 0.5)
    expected = rounds(x, y, np)
    np.testing.assert_allclose(compiled(xt, yt).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(tn.evaluate(rounds(xt, yt, ops)).numpy(), expected, rtol=1e-6)
    fns: dict[str, Callable[[], Any]] = {
        f"numpy eager ({NODES} ufunc calls)": lambda: rounds(x, y, np),
        "typed_nn compiled call": lambda: compiled(xt, yt),
        "typed_nn compiled call, 1-node function (fixed cost)": lambda: one_node(xt),
        "typed_nn build + evaluate (uncompiled)": lambda: tn.evaluate(rounds(xt, yt, ops)),
    }
    jax = optional("jax")
    if jax is not None:
        jitted = jax.jit(lambda a, b: rounds(a, b, jax.numpy))
        jx, jy = jax.numpy.asarray(x), jax.numpy.asarray(y)
        np.testing.assert_allclose(np.asarray(jitted(jx, jy)), expected, rtol=1e-5, atol=1e-6)
        fns["jax.jit call (+ block_until_ready)"] = lambda: jitted(jx, jy).block_until_ready()
    times = race(fns, repeats=5 if quick else 200, inner=5 if quick else 50)
    t_np = times[f"numpy eager ({NODES} ufunc calls)"]
    t_c = times["typed_nn compiled call"]
    t_u = times["typed_nn build + evaluate (uncompiled)"]
    target("compiled / numpy eager", t_c, t_np, 1.0)
    if "jax.jit call (+ block_until_ready)" in times:
        ratio("compiled / jax.jit", t_c, times["jax.jit call (+ block_until_ready)"])
        ratio("jax.jit / numpy eager", times["jax.jit call (+ block_until_ready)"], t_np)
    print(f"  compiled over numpy eager: {(t_c - t_np) / NODES * 1e6:+.2f} us/node")
    per = (t_u - t_np) / NODES * 1e6
    print(f"  uncompiled build + evaluate over numpy eager: {per:.2f} us/node (was 2.7)")
    print(f"  traces: {compiled.traces} (one per signature)")


# --- 2. per-sample loop of 64 MLP gradients vs one batch --------------------------------


def mlp_loss(
    x: M32, t: M32, p: tuple[Param2, Param1, Param2, Param1]
) -> tn.Scalar[tn.Float32, tn.CPU]:
    """Mean NLL of softmax(relu(x @ w1 + b1) @ w2 + b2) against one-hot ``t``."""
    w1, b1, w2, b2 = p
    return ops.nll_loss(t, ops.softmax(ops.relu(x @ w1 + b1) @ w2 + b2))


def _sum_all(parts: list[list[Any]]) -> tuple[Any, ...]:
    """Element-wise sums of per-sample [loss, g1, g2, ...] lists (plain adds)."""
    return tuple(
        functools.reduce(lambda a, b: a + b, column) for column in zip(*parts, strict=True)
    )


def q2_per_sample(quick: bool) -> None:
    import mlp_per_sample as ref  # the data and the numpy hand-batched anchor of issue 4

    n = ref.B
    header(f"2. per-sample loop of {n} MLP 64-128-10 loss + tn.grad, compiled, vs one batch")
    X, T = ref.X, ref.T
    p = (matrix(ref.W1), vector(ref.B1), matrix(ref.W2), vector(ref.B2))
    xs = [matrix(X[i : i + 1]) for i in range(n)]  # one (1, 64) tensor per sample
    ts = [matrix(T[i : i + 1]) for i in range(n)]
    one = tn.scalar(1.0, F32, CPU)

    @tn.compile
    def per_sample() -> tuple[Any, ...]:
        """As a user writes it: each sample's loss and its tn.grad, summed."""
        parts = []
        for x, t in zip(xs, ts, strict=True):
            loss = mlp_loss(x, t, p)
            parts.append([loss, *tn.grad(loss, p)])
        return _sum_all(parts)

    @tn.compile
    def per_sample_shared_seed() -> tuple[Any, ...]:
        """The same with tn.vjp and one shared seed tensor (tn.grad makes a new one per call)."""
        parts = []
        for x, t in zip(xs, ts, strict=True):
            loss = mlp_loss(x, t, p)
            parts.append([loss, *tn.vjp(loss, p, one)])
        return _sum_all(parts)

    @tn.compile
    def per_sample_narrow(xb: M32, tb: M32) -> tuple[Any, ...]:
        """The samples taken from the batch arguments by ops.narrow."""
        parts = []
        for i in range(n):
            loss = mlp_loss(ops.narrow(xb, 0, i, 1), ops.narrow(tb, 0, i, 1), p)
            parts.append([loss, *tn.grad(loss, p)])
        return _sum_all(parts)

    @tn.compile
    def per_sample_rows(xb: M32, tb: M32) -> tuple[Any, ...]:
        """The samples as rows ``xb[i]`` (vectors) of the batch arguments."""
        w1, b1, w2, b2 = p
        parts = []
        for i in range(n):
            logits = ops.relu(xb[i] @ w1 + b1) @ w2 + b2
            loss = ops.nll_loss(tb[i], ops.softmax(logits))
            parts.append([loss, *tn.grad(loss, p)])
        return _sum_all(parts)

    @tn.compile
    def batched(xb: M32, tb: M32) -> tuple[Any, ...]:
        """Hand-batched: nll_loss is the batch mean, so scale by n to match the sums."""
        loss = mlp_loss(xb, tb, p) * float(n)
        return (loss, *tn.grad(loss, p))

    xb, tb = matrix(X), matrix(T)
    start = time.perf_counter()
    expected = [np.asarray(v) for v in ref.numpy_batched()]
    for name, got in (
        ("per_sample", per_sample()),
        ("per_sample_shared_seed", per_sample_shared_seed()),
        ("per_sample_narrow", per_sample_narrow(xb, tb)),
        ("per_sample_rows", per_sample_rows(xb, tb)),
        ("batched", batched(xb, tb)),
    ):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g.numpy(), e, rtol=2e-3, atol=2e-4, err_msg=name)
    print(f"  (first calls, traced and checked: {time.perf_counter() - start:.2f} s)")
    fns: dict[str, Callable[[], Any]] = {
        "numpy hand-batched (mlp_per_sample.py)": ref.numpy_batched,
        "typed_nn compiled hand-batched": lambda: batched(xb, tb),
        "typed_nn compiled per-sample loop (tn.grad)": per_sample,
        "  same, tn.vjp with one shared seed": per_sample_shared_seed,
        "  same, samples by ops.narrow of an argument": lambda: per_sample_narrow(xb, tb),
        "  same, samples as rows xb[i] of an argument": lambda: per_sample_rows(xb, tb),
    }
    jax = optional("jax")
    if jax is not None:
        fns.update(_jax_per_sample(jax, ref, expected))
    times = race(fns, repeats=3 if quick else 40)
    t_b = times["typed_nn compiled hand-batched"]
    t_s = times["typed_nn compiled per-sample loop (tn.grad)"]
    target("per-sample / hand-batched (typed_nn)", t_s, t_b, 1.5)
    ratio("  shared seed / hand-batched", times["  same, tn.vjp with one shared seed"], t_b)
    ratio(
        "  narrow rows / hand-batched", times["  same, samples by ops.narrow of an argument"], t_b
    )
    ratio("  xb[i] rows / hand-batched", times["  same, samples as rows xb[i] of an argument"], t_b)
    ratio(
        "typed_nn hand-batched / numpy hand-batched",
        t_b,
        times["numpy hand-batched (mlp_per_sample.py)"],
    )
    if "jax.jit per-sample loop" in times:
        ratio(
            "jax per-sample / jax batched",
            times["jax.jit per-sample loop"],
            times["jax.jit batched"],
        )
    for name, fn in (
        ("per-sample", per_sample),
        ("shared seed", per_sample_shared_seed),
        ("narrow rows", per_sample_narrow),
        ("xb[i] rows", per_sample_rows),
    ):
        calls = _kernel_calls(fn)
        if calls is not None:
            print(f"  kernel calls per run, {name}: {calls}")


def _jax_per_sample(jax: Any, ref: Any, expected: list[Array]) -> dict[str, Callable[[], Any]]:
    """jax.jit of the same per-sample loop (unrolled when traced) and of the batch."""
    jnp = jax.numpy
    params = tuple(jnp.asarray(a) for a in (ref.W1, ref.B1, ref.W2, ref.B2))

    def loss(p: Any, x: Any, t: Any) -> Any:
        w1, b1, w2, b2 = p
        z = jnp.maximum(x @ w1 + b1, 0) @ w2 + b2
        return -(t * jax.nn.log_softmax(z)).sum() / x.shape[0]

    def loop(p: Any, x: Any, t: Any) -> Any:
        parts = [jax.value_and_grad(loss)(p, x[i : i + 1], t[i : i + 1]) for i in range(len(x))]
        total = sum(v for v, _ in parts)
        return total, jax.tree_util.tree_map(lambda *g: sum(g), *(g for _, g in parts))

    def batch(p: Any, x: Any, t: Any) -> Any:
        n = x.shape[0]
        value, grads = jax.value_and_grad(lambda q: loss(q, x, t) * n)(p)
        return value, grads

    per_sample, batched = jax.jit(loop), jax.jit(batch)
    jx, jt = jnp.asarray(ref.X), jnp.asarray(ref.T)
    for fn in (per_sample, batched):
        value, grads = fn(params, jx, jt)
        for g, e in zip((value, *grads), expected, strict=True):
            np.testing.assert_allclose(np.asarray(g), e, rtol=2e-3, atol=2e-4)
    return {
        "jax.jit batched": lambda: jax.block_until_ready(batched(params, jx, jt)),
        "jax.jit per-sample loop": lambda: jax.block_until_ready(per_sample(params, jx, jt)),
    }


def _kernel_calls(fn: Any) -> int | None:
    """Kernel applications per run of a compiled function's (only) Step, when visible."""
    program = getattr(getattr(fn, "_last", None), "program", None)
    calls = getattr(program, "calls", None)
    return sum(calls.values()) if calls is not None else None


# --- 3. digits MLP, one epoch of SGD at batch 32 ------------------------------------------

LR = 0.1


class DigitsBatches:
    """One epoch's mini-batches (a fixed permutation), gathered once for every side."""

    def __init__(self, quick: bool, batch: int = 32, seed: int = 0) -> None:
        from typed_nn.train import load_digits

        split = load_digits(seed=seed)
        self.test = split.test
        train = split.train
        n = 320 if quick else len(train)
        order = np.random.default_rng(seed).permutation(len(train))[:n]
        eye = np.eye(train.n_classes, dtype=np.float32)
        self.batches = [
            (train.features[order[i : i + batch]], eye[train.labels[order[i : i + batch]]])
            for i in range(0, n, batch)
        ]


class NumpyMLP:
    """Hand-written numpy: forward, backward and in-place updates (digits_mlp.py's loop)."""

    def __init__(self, weights: list[Array]) -> None:
        self.w1, self.b1, self.w2, self.b2 = (w.copy() for w in weights)

    def step(self, x: Array, y: Array, with_loss: bool) -> Array:
        w1, b1, w2, b2 = self.w1, self.b1, self.w2, self.b2
        h = x @ w1
        h += b1
        a = np.maximum(h, 0.0)
        z = a @ w2
        z += b2
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        loss = -np.log(z[y > 0]).sum() / len(x) if with_loss else None
        z -= y
        z *= np.float32(1.0 / len(x))  # d loss / d logits
        ga = z @ w2.T
        ga *= h > 0
        w2 -= np.float32(LR) * (a.T @ z)
        b2 -= np.float32(LR) * z.sum(axis=0)
        w1 -= np.float32(LR) * (x.T @ ga)
        b1 -= np.float32(LR) * ga.sum(axis=0)
        return loss

    def weights(self) -> list[Array]:
        return [self.w1, self.b1, self.w2, self.b2]


class TypedMLP:
    """typed_nn as a user writes it: the loss from ops, tn.grad, SGD assigns, tn.compile."""

    def __init__(self, weights: list[Array]) -> None:
        self.p = (matrix(weights[0]), vector(weights[1]), matrix(weights[2]), vector(weights[3]))
        w1, b1, w2, b2 = p = self.p

        @tn.compile
        def step(x: M32, y: M32, lr: float) -> tn.Scalar[tn.Float32, tn.CPU]:
            loss = mlp_loss(x, y, p)
            g1, gb1, g2, gb2 = tn.grad(loss, p)
            w1.assign(w1 - lr * g1)
            b1.assign(b1 - lr * gb1)
            w2.assign(w2 - lr * g2)
            b2.assign(b2 - lr * gb2)
            return loss

        @tn.compile
        def step_no_loss(x: M32, y: M32, lr: float) -> None:
            g1, gb1, g2, gb2 = tn.grad(mlp_loss(x, y, p), p)
            w1.assign(w1 - lr * g1)
            b1.assign(b1 - lr * gb1)
            w2.assign(w2 - lr * g2)
            b2.assign(b2 - lr * gb2)

        self.step, self.step_no_loss = step, step_no_loss

    def weights(self) -> list[Array]:
        return [w.numpy() for w in self.p]


def _jax_mlp(jax: Any, weights: list[Array]) -> tuple[Callable[[list[Any]], Any], list[Any]]:
    """jax.jit of value_and_grad + the SGD update; returns (epoch function, state)."""
    jnp = jax.numpy

    def loss_fn(p: Any, x: Any, y: Any) -> Any:
        w1, b1, w2, b2 = p
        z = jnp.maximum(x @ w1 + b1, 0) @ w2 + b2
        return -(y * jax.nn.log_softmax(z)).sum() / x.shape[0]

    def sgd(p: Any, x: Any, y: Any) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return tuple(w - LR * g for w, g in zip(p, grads, strict=True)), loss

    step = jax.jit(sgd)

    state: list[Any] = [tuple(jnp.asarray(w) for w in weights)]

    def epoch(batches: list[Any]) -> Any:
        p, loss = state[0], None
        for x, y in batches:
            p, loss = step(p, x, y)
        state[0] = p
        return jax.block_until_ready(loss)

    return epoch, state


def q3_digits(quick: bool) -> None:
    from digits_mlp import initial_weights  # the same MSRA-normal start as digits_mlp.py

    data = DigitsBatches(quick)
    header(f"3. digits MLP 64-128-10, SGD {LR}, batch 32: one epoch ({len(data.batches)} steps)")
    weights = initial_weights([64, 128, 10], 0)
    ref, ref_nl = NumpyMLP(weights), NumpyMLP(weights)
    typed, typed_nl = TypedMLP(weights), TypedMLP(weights)
    tn_batches = [(matrix(x), matrix(y)) for x, y in data.batches]
    fns: dict[str, Callable[[], Any]] = {
        "numpy hand-written, returns the loss": lambda: [
            ref.step(x, y, True) for x, y in data.batches
        ],
        "numpy hand-written, no loss": lambda: [ref_nl.step(x, y, False) for x, y in data.batches],
        "typed_nn compiled step, returns the loss": lambda: [
            typed.step(x, y, LR) for x, y in tn_batches
        ],
        "typed_nn compiled step, no loss": lambda: [
            typed_nl.step_no_loss(x, y, LR) for x, y in tn_batches
        ],
    }
    jax = optional("jax")
    jax_state: list[Any] = []
    if jax is not None:
        epoch, jax_state = _jax_mlp(jax, weights)
        jax_batches = [(jax.numpy.asarray(x), jax.numpy.asarray(y)) for x, y in data.batches]
        fns["jax.jit value_and_grad + update, returns the loss"] = lambda: epoch(jax_batches)
    epochs = 3 if quick else 60
    times = race(fns, repeats=epochs)
    # Every side ran the same epochs from the same weights: they must agree. Each sums in its
    # own order (numpy's pairwise reduce, einsum, XLA), and 2,700 SGD steps amplify float32
    # rounding to ~1e-3 in the smallest weights.
    for other in (ref_nl.weights(), typed.weights(), typed_nl.weights(), *jax_state[:1]):
        for a, b in zip(ref.weights(), other, strict=True):
            np.testing.assert_allclose(np.asarray(b), a, rtol=1e-3, atol=2e-3)
    logits = np.maximum(data.test.features @ ref.w1 + ref.b1, 0) @ ref.w2 + ref.b2
    acc = float(np.mean(logits.argmax(axis=1) == data.test.labels))
    print(f"  weights of every side agree after {1 + epochs} epochs; test acc {acc:.4f}")
    t_tn = times["typed_nn compiled step, returns the loss"]
    t_np = times["numpy hand-written, returns the loss"]
    target("typed_nn / numpy (both return the loss)", t_tn, t_np, 1.0)
    ratio(
        "typed_nn / numpy, neither computes the loss",
        times["typed_nn compiled step, no loss"],
        times["numpy hand-written, no loss"],
    )
    if jax is not None:
        t_jax = times["jax.jit value_and_grad + update, returns the loss"]
        target("typed_nn / jax.jit", t_tn, t_jax, 1.2)
        ratio("jax.jit / numpy", t_jax, t_np)
    print(f"  per step: typed_nn {t_tn / len(data.batches) * 1e6:.1f} us, ", end="")
    print(f"numpy {t_np / len(data.batches) * 1e6:.1f} us")


# --- 4. GRU training step: compiled typed_nn vs PyTorch eager ---------------------------

HID, GB, STEPS, GRU_LR = 32, 32, 10, 0.5


def parity_batch(rng: np.random.Generator) -> tuple[Array, Array]:
    """(batch, steps) random bits and their running parity (the targets)."""
    bits = rng.integers(0, 2, size=(GB, STEPS)).astype(np.float32)
    return bits, (np.cumsum(bits, axis=1) % 2).astype(np.float32)


def gru_weights(torch: Any) -> dict[str, Array]:
    """PyTorch's initial nn.GRU(1, 32) + Linear(32, 1) weights, or a seeded equivalent when
    torch is not installed: per gate g in r, z, n: Wi (1, 32), Wh (32, 32), bi, bh (32,)."""
    if torch is not None:
        torch.manual_seed(0)
        gru, lin = torch.nn.GRU(1, HID, batch_first=True), torch.nn.Linear(HID, 1)
        wi, wh = gru.weight_ih_l0.detach().numpy(), gru.weight_hh_l0.detach().numpy()
        bi, bh = gru.bias_ih_l0.detach().numpy(), gru.bias_hh_l0.detach().numpy()
        v, c = lin.weight.detach().numpy().T, lin.bias.detach().numpy()
    else:
        rng = np.random.default_rng(0)
        bound = 1 / np.sqrt(HID)
        wi, wh, bi, bh = (
            rng.uniform(-bound, bound, s).astype(np.float32)
            for s in ((3 * HID, 1), (3 * HID, HID), (3 * HID,), (3 * HID,))
        )
        v, c = rng.uniform(-bound, bound, (HID, 1)), rng.uniform(-bound, bound, (1,))
    out: dict[str, Array] = {"V": v, "c": c}
    for k, g in enumerate("rzn"):
        rows = slice(k * HID, (k + 1) * HID)
        out.update(
            {f"Wi{g}": wi[rows].T, f"Wh{g}": wh[rows].T, f"bi{g}": bi[rows], f"bh{g}": bh[rows]}
        )
    return out


def typed_gru_step(weights: dict[str, Array]) -> Compiled[..., Any]:
    """A compiled training step: PyTorch's GRU equations from ops over 10 steps, a sigmoid
    read-out per step, binary cross-entropy, tn.grad of every weight, SGD assigns."""
    p: dict[str, Any] = {k: matrix(w) if w.ndim == 2 else vector(w) for k, w in weights.items()}

    @tn.compile
    def step(x: M32, y: M32, lr: float) -> tn.Scalar[tn.Float32, tn.CPU]:
        h: M32 = tn.zeros((GB, HID), F32, CPU)
        total: tn.Scalar[tn.Float32, tn.CPU] | None = None
        for t in range(STEPS):
            xt, yt = ops.narrow(x, 1, t, 1), ops.narrow(y, 1, t, 1)  # (batch, 1)
            r = ops.sigmoid(xt @ p["Wir"] + p["bir"] + h @ p["Whr"] + p["bhr"])
            z = ops.sigmoid(xt @ p["Wiz"] + p["biz"] + h @ p["Whz"] + p["bhz"])
            n = ops.tanh(xt @ p["Win"] + p["bin"] + r * (h @ p["Whn"] + p["bhn"]))
            h = ops.interpolate(h, n, z)  # z * h + (1 - z) * n
            q = ops.sigmoid(h @ p["V"] + p["c"])
            ll = ops.reduce_sum(yt * ops.log(q) + (1.0 - yt) * ops.log(1.0 - q))
            total = ll if total is None else total + ll
        assert total is not None
        loss = total * (-1.0 / (GB * STEPS))
        grads = tn.grad(loss, p)
        for k, w in p.items():
            w.assign(w - lr * grads[k])
        return loss

    return step


def torch_gru_step(torch: Any) -> Callable[[Any, Any], Any]:
    """PyTorch eager: nn.GRU + Linear (same seed as gru_weights), BCE-with-logits, SGD."""
    torch.manual_seed(0)
    gru, lin = torch.nn.GRU(1, HID, batch_first=True), torch.nn.Linear(HID, 1)
    opt = torch.optim.SGD([*gru.parameters(), *lin.parameters()], lr=GRU_LR)
    bce = torch.nn.BCEWithLogitsLoss()

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        out, _ = gru(x.unsqueeze(-1))
        loss = bce(lin(out).squeeze(-1), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def q4_gru(quick: bool) -> None:
    header(f"4. GRU hidden {HID}, batch {GB}, {STEPS} bits, running parity: one training step")
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
    step = typed_gru_step(gru_weights(torch))
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    x, y = parity_batch(rng)
    loss = float(step(matrix(x), matrix(y), GRU_LR).numpy())
    print(f"  (first call, traced: {time.perf_counter() - start:.2f} s)")
    fns: dict[str, Callable[[], Any]] = {}
    if torch is not None:
        torch_step = torch_gru_step(torch)
        first = float(torch_step(torch.from_numpy(x), torch.from_numpy(y)))
        losses = [(loss, first)]
        for _ in range(2 if quick else 10):  # same weights, same batches: same losses
            x, y = parity_batch(rng)
            mine = float(step(matrix(x), matrix(y), GRU_LR).numpy())
            losses.append((mine, float(torch_step(torch.from_numpy(x), torch.from_numpy(y)))))
        mine_all, theirs = zip(*losses, strict=True)
        np.testing.assert_allclose(mine_all, theirs, rtol=1e-4)
        print(f"  losses agree with torch over {len(losses)} steps (last {losses[-1][0]:.5f})")
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        fns["torch eager nn.GRU + Linear, step"] = lambda: torch_step(tx, ty)
    xt, yt = matrix(x), matrix(y)
    fns["typed_nn compiled step"] = lambda: step(xt, yt, GRU_LR)
    times = race(fns, repeats=3 if quick else 100)
    if torch is not None:
        t_torch = times["torch eager nn.GRU + Linear, step"]
        target("typed_nn / torch eager", times["typed_nn compiled step"], t_torch, 1.0)
    calls = _kernel_calls(step)
    if calls is not None:
        print(f"  kernel calls per typed_nn step: {calls}")


# --- 5. large element-wise programs: assign and compiled vs hand-blocked numpy ----------


def q5_large(quick: bool) -> None:
    import chain
    import mshadow_update

    n = 10**5 if quick else 10**7
    repeats = 3 if quick else 20
    rng = np.random.default_rng(0)
    eta, lam = mshadow_update.ETA, mshadow_update.LAM

    header(f"5a. MShadow update w = -eta*(g + lam*w), float32, n = {n:.0e}")
    w = rng.normal(size=n).astype(np.float32)
    g = rng.normal(size=n).astype(np.float32)
    fns = dict(mshadow_update.numpy_variants(w, g))
    wt = tn.tensor(w, F32, CPU, tn.Dim1, copy=False)
    gt = tn.tensor(g, F32, CPU, tn.Dim1, copy=False)

    @tn.compile
    def update(w: tn.Tensor[tn.Float32, tn.CPU, tn.Dim1], g: tn.Vector[tn.Float32, tn.CPU]) -> None:
        w.assign(-eta * (g + lam * w))  # eta, lam: Python constants, as in the uncompiled line

    def check(fn: Callable[[], Any]) -> None:
        before = w.copy()
        fn()
        np.testing.assert_allclose(w, -eta * (g + lam * before), rtol=1e-5, atol=1e-7)

    uncompiled = "w.assign(expr) (uncompiled)"
    fns[f"typed_nn {uncompiled}"] = lambda: wt.assign(-eta * (gt + lam * wt))
    fns["typed_nn compiled w.assign"] = lambda: update(wt, gt)
    for fn in fns.values():
        check(fn)
    times = race(fns, repeats=repeats)
    hand = times["numpy hand-blocked"]
    target("uncompiled assign / hand-blocked", times[f"typed_nn {uncompiled}"], hand, 1.0)
    target("compiled / hand-blocked", times["typed_nn compiled w.assign"], hand, 1.0)
    ratio(
        "numpy eager / typed_nn compiled", times["numpy eager"], times["typed_nn compiled w.assign"]
    )

    header(f"5b. chain tanh(a*x + b)*sigmoid(c*x) + 0.5*x, float32, n = {n:.0e}")
    x = rng.normal(size=n).astype(np.float32)
    anchors = chain.numpy_variants(x)
    xt = tn.tensor(x, F32, CPU, tn.Dim1, copy=False)
    yt = tn.zeros((n,), F32, CPU)

    def expr(v: tn.Vector[tn.Float32, tn.CPU]) -> tn.Vector[tn.Float32, tn.CPU]:
        return ops.tanh(chain.A * v + chain.B) * ops.sigmoid(chain.C * v) + 0.5 * v

    @tn.compile
    def compiled(v: tn.Vector[tn.Float32, tn.CPU]) -> None:
        yt.assign(expr(v))

    expected = anchors["numpy eager"]()
    close = functools.partial(np.testing.assert_allclose, desired=expected, rtol=1e-5, atol=1e-6)
    close(anchors["numpy hand-blocked"]())
    fns2: dict[str, Callable[[], Any]] = dict(anchors)
    fns2["typed_nn y.assign(chain) (uncompiled)"] = lambda: yt.assign(expr(xt))
    fns2["typed_nn compiled y.assign(chain)"] = lambda: compiled(xt)
    for label in ("typed_nn y.assign(chain) (uncompiled)", "typed_nn compiled y.assign(chain)"):
        yt.assign(tn.zeros((n,), F32, CPU))
        fns2[label]()
        close(yt.numpy())
    times = race(fns2, repeats=repeats)
    hand = times["numpy hand-blocked"]
    target(
        "uncompiled assign / hand-blocked",
        times["typed_nn y.assign(chain) (uncompiled)"],
        hand,
        1.0,
    )
    target("compiled / hand-blocked", times["typed_nn compiled y.assign(chain)"], hand, 1.0)
    ratio(
        "numpy eager / typed_nn compiled",
        times["numpy eager"],
        times["typed_nn compiled y.assign(chain)"],
    )


# --- driver -------------------------------------------------------------------------------

QUESTIONS: dict[int, Callable[[bool], None]] = {
    1: q1_tiny,
    2: q2_per_sample,
    3: q3_digits,
    4: q4_gru,
    5: q5_large,
}


def versions() -> str:
    parts = [f"Python {platform.python_version()}"]
    for name in ("numpy", "jax", "torch"):
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} not installed")
    return ", ".join(parts)


def machine() -> str:
    """CPU model and count (``lscpu`` where available)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return f"{platform.machine()}, {os.cpu_count()} CPUs"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return f"{fields.get('Model name', '?').strip()}, {fields.get('CPU(s)', '?').strip()} CPUs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="tiny sizes and repeats")
    parser.add_argument("--question", type=int, choices=sorted(QUESTIONS), action="append")
    args = parser.parse_args()
    if args.question and len(args.question) == 1:
        QUESTIONS[args.question[0]](args.quick)
        return 0
    print(f"machine: {machine()}; {versions()}; 1 thread (BLAS, OpenMP, XLA, torch)")
    failed = 0
    for q in args.question or sorted(QUESTIONS):
        command = [sys.executable, str(Path(__file__).resolve()), "--question", str(q)]
        done = subprocess.run([*command, *(["--quick"] if args.quick else [])], check=False)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
