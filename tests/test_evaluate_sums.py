"""Sums of like terms (``evaluate/sums.py``): an add-tree of same-shaped ``dot``\\ s is one
``dot`` of concatenations, one of same-shaped ``reduce_sum``\\ s one ``reduce_sum``; the
numbers are those of the graph as built (rewrites off), up to float rounding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t32, t64, untyped

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import last_program, options, stats
from typed_nn.evaluate.cache import invalidate_caches
from typed_nn.evaluate.rewrite import TRANSPOSED_PRODUCT
from typed_nn.evaluate.sums import SUM_OF_DOTS, SUM_OF_REDUCE_SUMS

Expr = tn.TensorLike[Any, Any, Any]
Arrays = list[np.ndarray[Any, Any]]
rng = np.random.default_rng(3)
T = 5
P = [rng.normal(size=(6, 4)).astype(np.float32) for _ in range(T)]  # rows x fan_in
G = [rng.normal(size=(6, 3)).astype(np.float32) for _ in range(T)]  # rows x fan_out


def _both(build: Callable[[], list[Expr]]) -> tuple[Arrays, Arrays, list[str], Any]:
    """(merged values, as-built values, rules fired, the merged program's kernel calls).

    Batching is off: these terms are independent, and batching takes such a sum first (one
    ``batch_dot_sum``, tests/test_evaluate_batch.py); BPTT's terms are not (last test)."""
    stats.reset()
    with options.using(batch=False):
        fast = _values(build())
    program = last_program()
    assert program is not None
    invalidate_caches()
    with options.using(rewrite=False):
        slow = _values(build())
    return fast, slow, list(program.fired), program.calls


def _values(roots: list[Expr]) -> Arrays:
    """The roots evaluated in one plan (registered, then one ``EvalPlan.eval()``)."""
    handles = [r.eval_register() for r in roots]
    tn.EvalPlan.eval()
    return [h.data().numpy().copy() for h in handles]


def _chain(terms: list[Expr]) -> Expr:
    total = terms[0]
    for t in terms[1:]:
        total = t + total  # the order backpropagation accumulates in
    return total


def _weight_and_bias_grads() -> list[Expr]:
    ps, gs = [t32(p) for p in P], [t32(g) for g in G]
    weight = _chain([ops.transpose(p) @ g for p, g in zip(ps, gs, strict=True)])
    return [weight, _chain([ops.reduce_sum(g, 0) for g in gs])]


def _close(fast: Arrays, slow: Arrays) -> None:
    for f, s in zip(fast, slow, strict=True):
        np.testing.assert_allclose(f, s, rtol=1e-5, atol=1e-5)


def test_sum_of_transposed_dots_is_one_dot_and_the_bias_sum_shares_its_concat() -> None:
    fast, slow, fired, calls = _both(_weight_and_bias_grads)
    _close(fast, slow)
    np.testing.assert_allclose(fast[0], np.concatenate(P).T @ np.concatenate(G), rtol=1e-5)
    assert sorted(fired) == [SUM_OF_DOTS, SUM_OF_REDUCE_SUMS]
    assert stats.rewrites[SUM_OF_DOTS] == 1
    assert (calls["dot"], calls["reduce_sum"], calls["add"]) == (1, 1, 0)
    # one concatenation of the p_i (rows of the transposed left side), one of the g_i for
    # both the dot and the reduction, since both sums order their terms the same way
    assert calls["concat"] == 2


def test_sum_of_plain_dots_concatenates_the_left_sides_by_columns() -> None:
    a = [rng.normal(size=(2, 6)).astype(np.float32) for _ in range(T)]
    fast, slow, fired, calls = _both(
        lambda: [_chain([t32(x) @ t32(p) for x, p in zip(a, P, strict=True)])]
    )
    _close(fast, slow)
    assert (fired, calls["dot"]) == ([SUM_OF_DOTS], 1)


def test_like_terms_under_one_view_merge_under_it() -> None:
    """Each term through its own transpose (a weight transposed at every use) or reshape:
    the sum of the views is the view of the sum."""

    def build() -> list[Expr]:
        ps, gs = [t32(p) for p in P], [t32(g) for g in G]
        dots = [ops.transpose(ops.transpose(p) @ g) for p, g in zip(ps, gs, strict=True)]
        sums = [untyped.ops.reshape(ops.reduce_sum(g, 0), (3, 1)) for g in gs]
        return [_chain(dots), _chain(sums)]

    fast, slow, fired, calls = _both(build)
    _close(fast, slow)
    # and the transpose of the merged product is that product written row-major
    assert sorted(fired) == sorted([SUM_OF_DOTS, SUM_OF_REDUCE_SUMS, TRANSPOSED_PRODUCT])
    assert (calls["dot"], calls["reduce_sum"], calls["add"]) == (1, 1, 0)
    assert fast[0].shape == (3, 4)


def test_reduce_sums_over_several_dims_keep_their_dims() -> None:
    xs = [rng.normal(size=(2, 3, 4)) for _ in range(T)]
    fast, slow, fired, _ = _both(
        lambda: [_chain([untyped.ops.reduce_sum(t64(x), (1, 2), keep_dim=True) for x in xs])]
    )
    _close(fast, slow)
    assert (fired, fast[0].shape) == ([SUM_OF_REDUCE_SUMS], (2, 1, 1))


def test_merged_sums_in_a_compiled_gradient_match_the_uncompiled_ones() -> None:
    """A recurrence reusing its weights: each gradient is a sum of per-step dots (BPTT).
    The input weight's terms read the steps x[t] of the sequence, which batching turns into
    items of one transposed x; the recurrent weight's read the states."""
    u = t32(rng.normal(size=(4, 5)).astype(np.float32) * 0.5)
    w = t32(rng.normal(size=(5, 5)).astype(np.float32) * 0.5)
    xs = rng.normal(size=(T, 6, 4)).astype(np.float32)

    def grads(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim3]) -> tuple[Expr, Expr]:
        h: Expr = untyped.zeros((6, 5), tn.Float32, tn.CPU)
        for t in range(T):
            h = ops.tanh(x[t] @ u + h @ w)
        g: tuple[Expr, Expr] = tn.grad(ops.reduce_sum(ops.square(h)), (u, w))
        return g

    invalidate_caches()
    with options.using(rewrite=False, batch=False):
        expected = [tn.evaluate(e).numpy().copy() for e in grads(t32(xs))]
    compiled = tn.compile(grads)
    for _ in range(2):
        for got, want in zip(compiled(t32(xs)), expected, strict=True):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    program = compiled._last.program  # type: ignore[union-attr]
    assert program.fired.count(SUM_OF_DOTS) == 2
    # x[t] @ u batched into one, h @ w and dA @ wᵀ per step, one per weight's gradient
    assert program.calls["dot"] == 1 + T + (T - 1) + 2


ROWS = [rng.normal(size=s) for s in [(2, 3), (4, 3), (2, 3)]]


def _reused_term() -> list[Expr]:
    ps, gs = [t32(p) for p in P], [t32(g) for g in G]
    terms = [ops.transpose(p) @ g for p, g in zip(ps, gs, strict=True)]
    return [_chain(terms), terms[0] * 2.0]


def test_the_like_terms_of_a_mixed_sum_merge() -> None:
    """The chain adds a row last: the tree at the root mixes terms, its inner tree does not."""
    fast, slow, fired, calls = _both(
        lambda: [_chain([ops.reduce_sum(t32(g), 0) for g in G] + [t32(G[0][0])])]
    )
    _close(fast, slow)
    assert (fired, calls["reduce_sum"], calls["add"]) == ([SUM_OF_REDUCE_SUMS], 1, 1)


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda: [
                _chain([ops.transpose(t32(p)) @ t32(g) for p, g in zip(P[:2], G[:2], strict=True)])
            ],
            id="two-terms",
        ),
        pytest.param(_reused_term, id="term-used-elsewhere"),
        pytest.param(
            lambda: [_chain([untyped.ops.reduce_sum(t64(x), 0) for x in ROWS])],
            id="different-shapes",
        ),
    ],
)
def test_sums_that_do_not_merge_run_as_built(build: Callable[[], list[Expr]]) -> None:
    fast, slow, fired, _ = _both(build)
    _close(fast, slow)
    assert not {SUM_OF_DOTS, SUM_OF_REDUCE_SUMS} & set(fired)


def test_a_sequence_s_every_step_concatenated_is_the_sequence_reshaped() -> None:
    """``Σ x[t]ᵀ·g_t`` concatenates ``x[0] … x[T-1]`` on their rows: that is ``x`` reshaped
    (a view, no copy) when the terms are taken in step order. Each g_t depends on g_t+1, as
    in backpropagation through time (the last step's gradient is made first)."""
    xs = np.stack(P)
    gs = [G[-1]]
    for g in reversed(G[:-1]):
        gs.insert(0, g + 0.5 * gs[0])

    def build() -> list[Expr]:
        seq: tn.Tensor[tn.Float32, tn.CPU, tn.Dim3] = t32(xs)
        x = ops.tanh(seq)  # a computed sequence (slices of data are data)
        grads: list[Expr] = [t32(G[-1])]
        for g in reversed(G[:-1]):
            grads.insert(0, t32(g) + 0.5 * grads[0])
        return [_chain([ops.transpose(x[t]) @ grads[t] for t in range(T)])]

    fast, slow, fired, calls = _both(build)
    _close(fast, slow)
    want = np.tanh(np.concatenate(P)).T @ np.concatenate(gs)
    np.testing.assert_allclose(fast[0], want, rtol=1e-5, atol=1e-5)
    assert fired == [SUM_OF_DOTS]
    assert (calls["dot"], calls["concat"]) == (1, 1)  # the g_t gathered, x's rows a view
