"""Kept buffers shared by values never in use at once (``codegen._shared_buffers``): a
compiled step's small temporaries of one shape reuse one buffer once the value before is
read for the last time, by itself or by any view of it; every run keeps its values."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from helpers import t32

import typed_nn as tn
from typed_nn import ops

Expr = Any
rng = np.random.default_rng(5)
STEPS = 6


def _source(step: Any) -> str:
    """The source of a compiled function's last Step's program."""
    source: str = step._last.program.source
    return source


def _buffers(step: Any) -> tuple[int, int]:
    """(kept buffers the lean program writes into, distinct ones among them)."""
    source = _source(step)
    named = re.findall(r"\bB(\d+)\b", source)
    return len(named), len(set(named))


def test_a_recurrence_reuses_its_temporaries_buffers_and_matches_numpy() -> None:
    @tn.compile
    def step(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim3], w: tn.Matrix[tn.Float32, tn.CPU]) -> Expr:
        h = ops.tanh(x[0])
        for t in range(1, STEPS):  # a product between element-wise regions each step
            h = ops.tanh(h @ w + x[t]) * h
        return ops.reduce_sum(h)

    def numpy_step(x: np.ndarray[Any, Any], w: np.ndarray[Any, Any]) -> Any:
        h = np.tanh(x[0])
        for t in range(1, STEPS):
            h = np.tanh(h @ w + x[t]) * h
        return h.sum()

    for _ in range(3):  # the kept buffers hold the previous run's values each time
        x = rng.normal(size=(STEPS, 4, 5)).astype(np.float32)
        w = rng.normal(size=(5, 5)).astype(np.float32)
        got = step(t32(x), t32(w)).numpy()
        np.testing.assert_allclose(got, numpy_step(x, w), rtol=1e-5)
    writes, distinct = _buffers(step)
    assert writes > distinct  # temporaries of later steps reuse earlier steps' buffers


def test_a_view_keeps_its_buffer_until_its_last_read() -> None:
    """``early`` is read only through its transpose (a view of its buffer), once at the start
    and once at the end: no temporary computed between may be written into its buffer."""

    @tn.compile
    def step(x: tn.Matrix[tn.Float32, tn.CPU], w: tn.Matrix[tn.Float32, tn.CPU]) -> Expr:
        flipped = ops.transpose(ops.exp(x @ w))
        y = flipped @ w
        for _ in range(4):
            y = ops.tanh(y @ w) * 2.0
        return y + flipped

    for _ in range(3):
        x = rng.normal(size=(3, 3)).astype(np.float32)
        w = rng.normal(size=(3, 3)).astype(np.float32) * 0.5
        flipped = np.exp(x @ w).T
        y = flipped @ w
        for _ in range(4):
            y = np.tanh(y @ w) * 2.0
        np.testing.assert_allclose(step(t32(x), t32(w)).numpy(), y + flipped, rtol=1e-5)


def test_fused_regions_of_one_shape_share_their_scratch_registers() -> None:
    """Each step's ``tanh(a) * x[t] + sigmoid(a) * h`` is a fused region with scratch registers; the
    regions of all steps share one set (``_Gen.register``) and still give numpy's values."""

    @tn.compile
    def step(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim3], w: tn.Matrix[tn.Float32, tn.CPU]) -> Expr:
        h: Expr = x[0]
        for t in range(1, STEPS):
            a = h @ w
            h = ops.tanh(a) * x[t] + ops.sigmoid(a) * h
        return ops.reduce_sum(h)

    def numpy_step(x: np.ndarray[Any, Any], w: np.ndarray[Any, Any]) -> Any:
        h = x[0]
        for t in range(1, STEPS):
            a = h @ w
            h = np.tanh(a) * x[t] + h / (1 + np.exp(-a))
        return h.sum()

    for _ in range(3):
        x = rng.normal(size=(STEPS, 4, 5)).astype(np.float32) * 0.5
        w = rng.normal(size=(5, 5)).astype(np.float32) * 0.5
        np.testing.assert_allclose(step(t32(x), t32(w)).numpy(), numpy_step(x, w), rtol=1e-5)
    registers = re.findall(r"\bR\d+\b", _source(step))
    assert len(registers) >= 2 * (STEPS - 1)  # every step's region writes registers
    assert len(set(registers)) <= 3  # one shared set, not one per region
