"""Gathers computed in place (``codegen._row_blocks``): the operands of a concat or stack
along dim 0 are computed straight into their rows of its buffer, so the gather copies
nothing; the values are those of the schedule that copies (specialisation off)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import last_program, options
from typed_nn.evaluate.cache import invalidate_caches

Expr = Any
rng = np.random.default_rng(11)
A = rng.normal(size=(3, 4)).astype(np.float32)
B = rng.normal(size=(2, 4)).astype(np.float32)


def _values(roots: list[Expr]) -> list[np.ndarray[Any, Any]]:
    handles = [r.eval_register() for r in roots]
    tn.EvalPlan.eval()
    return [h.data().numpy().copy() for h in handles]


def _both(build: Callable[[], list[Expr]]) -> tuple[list[Any], list[Any], Any]:
    """(in-place gather values, copying values, the in-place program)."""
    fast = _values(build())
    program = last_program()
    invalidate_caches()
    with options.using(specialise=False):
        slow = _values(build())
    return fast, slow, program


def _same(fast: list[Any], slow: list[Any]) -> None:
    for f, s in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(f, s)


def test_a_concat_of_computed_rows_copies_nothing() -> None:
    fast, slow, program = _both(lambda: [ops.concat([ops.exp(t32(A)), t32(B) @ t32(A.T @ A)])])
    _same(fast, slow)
    assert program.calls["concat"] == 0
    assert "concat" not in program.source


def test_a_stack_of_computed_items_copies_nothing() -> None:
    fast, slow, program = _both(lambda: [ops.stack([ops.exp(t32(A)), ops.tanh(t32(A))])])
    _same(fast, slow)
    assert program.calls["stack"] == 0


def test_operands_read_again_after_the_gather_keep_their_values() -> None:
    def build() -> list[Expr]:
        a, b = ops.exp(t32(A)), ops.tanh(t32(B))
        return [ops.exp(ops.concat([a, b])), a * 2.0, ops.reduce_sum(b)]

    fast, slow, program = _both(build)
    _same(fast, slow)
    assert program.calls["concat"] == 0


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: [ops.concat([ops.exp(t32(A)), ops.exp(t32(A))], axis=1)], id="cols"),
        pytest.param(lambda: [ops.concat([ops.exp(t32(A)), t32(B)])], id="a-leaf"),
    ],
)
def test_gathers_of_columns_or_of_leaves_still_copy(build: Callable[[], list[Expr]]) -> None:
    fast, slow, program = _both(build)
    _same(fast, slow)
    assert program.calls["concat"] == 1


def test_a_returned_operand_is_not_a_view_of_the_gather() -> None:
    a = ops.exp(t32(A))
    got_a, got_c = _values([a, ops.concat([a, ops.tanh(t32(A))])])
    assert not np.shares_memory(got_a, got_c)
    np.testing.assert_array_equal(got_c[:3], got_a)


def test_a_compiled_step_reusing_its_buffers_keeps_every_run_right() -> None:
    """A lean program (tn.compile) writes element-wise results into their operands'
    buffers: never into a buffer other values are rows of. (Blocks of 64 KiB: smaller
    gathers live in buffers the program keeps, and are not gathered in place.)"""

    @tn.compile
    def step(x: tn.Matrix[tn.Float32, tn.CPU]) -> tuple[Expr, Expr]:
        a, b = ops.exp(x), ops.tanh(x)
        # exp reads the gather alone: it could write into its buffer, which holds a
        total = ops.reduce_mean(ops.exp(ops.concat([a, b])))
        return total, a * total  # a read after that exp

    for k in range(3):
        x = (rng.normal(size=(128, 128)) * 0.5).astype(np.float32)
        total, scaled = step(t32(x))
        a, b = np.exp(x), np.tanh(x)
        want = np.exp(np.concatenate([a, b])).mean()
        np.testing.assert_allclose(total.numpy(), want, rtol=1e-5)
        np.testing.assert_allclose(scaled.numpy(), a * want, rtol=1e-5, err_msg=f"run {k}")
    assert step._last.program.calls["concat"] == 0  # type: ignore[union-attr]


def test_an_operand_read_last_after_its_gather_is_not_overwritten_in_place() -> None:
    """An element-wise node reading a gathered operand last, after the gather ran, computes
    into a buffer of its own: the operand's memory is the gather's rows, read again later."""

    @tn.compile
    def step(x: tn.Matrix[tn.Float32, tn.CPU]) -> Expr:
        a, b = ops.exp(x), ops.tanh(x)
        c = ops.concat([a, b])
        d = a * ops.reduce_sum(c)  # reads a last; writing into a would change c's rows
        return ops.reduce_mean(c * ops.reduce_sum(d))

    for k in range(3):
        x = (rng.normal(size=(128, 128)) * 0.5).astype(np.float32)
        a, b = np.exp(x), np.tanh(x)
        c = np.concatenate([a, b])
        want = (c * (a * c.sum()).sum()).mean()
        np.testing.assert_allclose(step(t32(x)).numpy(), want, rtol=1e-4, err_msg=f"run {k}")
    assert step._last.program.calls["concat"] == 0  # type: ignore[union-attr]
