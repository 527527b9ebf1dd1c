"""Writes into memory that the expression also reads: ``w.assign(expr(w))`` where ``expr``
reads ``w`` through a view (transpose, permute, reshape, a row, a narrowed block, a cached
view), row views that stay live at every rank, and results that cannot be written through.

Every case is checked against numpy on a copy, at sizes below and above the blocked
evaluator's block (~64K elements: 300 x 300)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from helpers import tagged

import typed_nn as tn
from typed_nn import ops
from typed_nn.tags import ElemTag

Array = npt.NDArray[Any]
AnyT = Any

# (name, the view of w as an expression, the same view in numpy)
VIEWS: list[tuple[str, Callable[[AnyT], AnyT], Callable[[Array], Array]]] = [
    ("transpose", ops.transpose, lambda a: a.T),
    ("permute", lambda w: ops.permute(w, (1, 0)), lambda a: a.T),  # pyright: ignore[reportDeprecated]
    ("reshape", lambda w: ops.reshape(ops.reshape(w, (-1,)), w.shape), lambda a: a),
    ("reshape_t", lambda w: ops.reshape(ops.transpose(w), w.shape), lambda a: a.T),
    ("row", lambda w: w[1], lambda a: a[1]),
    ("node_row", lambda w: (w * 1.0)[1] + 0.0, lambda a: a[1]),
    ("lazy_row", lambda w: ops.transpose(w)[0], lambda a: a.T[0]),
    (
        "rotated",
        lambda w: ops.concat([ops.narrow(w, 1, 1, w.shape[1] - 1), ops.narrow(w, 1, 0, 1)], axis=1),
        lambda a: np.concatenate([a[:, 1:], a[:, :1]], axis=1),
    ),
]

# (name, expression of (view, w), the same in numpy)
EXPRS: list[
    tuple[str, Callable[[AnyT, AnyT, AnyT], AnyT], Callable[[Array, Array, Array], Array]]
] = [
    ("sym", lambda v, w, c: 0.5 * (w + v), lambda v, w, c: 0.5 * (w + v)),
    (  # w read only through the view (a row broadcast to w's shape by adding zeros)
        "affine",
        lambda v, w, c: v * 2.0 + 1.0 + tn.ZeroTensor(w.shape, w.elem, w.device),
        lambda v, w, c: v * 2.0 + 1.0,
    ),
    ("sub", lambda v, w, c: w - v, lambda v, w, c: w - v),
    ("where_a", lambda v, w, c: ops.where(c, v, w), lambda v, w, c: np.where(c, v, w)),
    ("where_b", lambda v, w, c: ops.where(c, w, v), lambda v, w, c: np.where(c, w, v)),
    (
        "interp_a",
        lambda v, w, c: ops.interpolate(v, w, ops.sigmoid(w)),
        lambda v, w, c: v * _sig(w) + w * (1 - _sig(w)),
    ),
    (
        "interp_lam",
        lambda v, w, c: ops.interpolate(w, w * 2.0, ops.sigmoid(v)),
        lambda v, w, c: w * _sig(v) + 2 * w * (1 - _sig(v)),
    ),
    (
        "sigmoid_grad",
        lambda v, w, c: ops.sigmoid_grad(v, w),
        lambda v, w, c: np.broadcast_to(v, w.shape) * w * (1 - w),
    ),
    ("max", lambda v, w, c: ops.maximum(v, w), lambda v, w, c: np.maximum(v, w)),
    ("exp_mul", lambda v, w, c: ops.exp(v * 0.1) * w, lambda v, w, c: np.exp(v * 0.1) * w),
]


def _sig(x: Array) -> Array:
    out: Array = 1.0 / (1.0 + np.exp(-x))
    return out


@pytest.mark.parametrize("elem", [tn.Float32, tn.Float64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", [4, 9, 300])
@pytest.mark.parametrize("expr", EXPRS, ids=[e[0] for e in EXPRS])
@pytest.mark.parametrize("view", VIEWS, ids=[v[0] for v in VIEWS])
def test_assign_reading_its_target_through_a_view(
    view: tuple[str, Callable[[AnyT], AnyT], Callable[[Array], Array]],
    expr: tuple[str, Callable[[AnyT, AnyT, AnyT], AnyT], Callable[[Array, Array, Array], Array]],
    n: int,
    elem: type[ElemTag],
) -> None:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)).astype(elem.dtype)
    mask = rng.integers(0, 2, (n, n)).astype(np.int32)
    w = tagged(a.copy(), elem)
    cond = tagged(mask, tn.Int32)
    _, view_of, np_view = view
    _, make, np_make = expr
    want = np_make(np_view(a), a, mask.astype(bool))
    w.assign(make(view_of(w), w, cond))
    tol = 1e-5 if elem is tn.Float32 else 1e-12
    np.testing.assert_allclose(w.numpy(), np.broadcast_to(want, (n, n)), rtol=tol, atol=tol)


@pytest.mark.parametrize("n", [4, 300])
def test_assign_from_a_cached_view_of_the_target(n: int) -> None:
    a = np.random.default_rng(1).standard_normal((n, n))
    w = tagged(a.copy(), tn.Float64)
    t = ops.transpose(w)
    tn.evaluate(t)  # t's cached value is a view of w
    w.assign(t)
    np.testing.assert_array_equal(w.numpy(), a.T)
    w.assign(t * 2.0)  # the cache was invalidated: t is w.T again, read before written
    np.testing.assert_array_equal(w.numpy(), 2 * a)


def test_evaluate_into_a_row_of_the_value_read() -> None:
    a = np.arange(12.0).reshape(3, 4)
    w = tagged(a.copy(), tn.Float64)
    row = w[2]
    row.assign(w[0] + ops.reduce_sum(w, 0))
    want = a.copy()
    want[2] = a[0] + a.sum(axis=0)
    np.testing.assert_array_equal(w.numpy(), want)


# --- x[i] is a live view at every rank ---


@pytest.mark.parametrize("shape", [(4,), (4, 3), (4, 3, 2), (4, 3, 2, 2)])
def test_a_row_is_a_live_view_at_every_rank(shape: tuple[int, ...]) -> None:
    a = np.random.default_rng(2).standard_normal(shape)
    x = tagged(a.copy(), tn.Float64)
    s = x[1]
    x.assign(x * 10.0)
    np.testing.assert_allclose(s.numpy(), a[1] * 10.0)
    x[2].assign(x[2] * 0.0 + 7.0)
    np.testing.assert_array_equal(x.numpy()[2], np.full(shape[1:], 7.0))
    y = s * 2.0
    np.testing.assert_allclose(y.numpy(), a[1] * 20.0)
    x.assign(x + 1.0)  # a write to the base: values computed from the row are recomputed
    np.testing.assert_allclose(y.numpy(), (a[1] * 10.0 + 1.0) * 2.0)


def test_a_scalar_row_reads_its_value_live() -> None:
    x = tagged([1.0, 2.0, 3.0], tn.Float64)
    s = x[-1]
    x.assign(x * 2.0)
    assert s.value() == 6.0


# --- results cannot be written through ---


def test_writing_into_a_returned_result_cannot_poison_the_cache() -> None:
    e = tagged([1.0, 2.0], tn.Float64) * 3.0
    result = tn.evaluate(e)
    with pytest.raises(ValueError, match="read-only"):
        result.numpy()[:] = -5.0
    np.testing.assert_array_equal(tn.evaluate(e * 2.0).numpy(), [6.0, 12.0])
    with pytest.raises(ValueError, match="read-only"):
        e.numpy()[0] = 1.0


def test_interior_cached_values_are_read_only_too() -> None:
    x = tagged([1.0, 2.0], tn.Float64)
    inner = ops.exp(x)
    tn.evaluate(inner + 1.0)  # inner is cached as an interior value
    got = tn.evaluate(inner)
    with pytest.raises(ValueError, match="read-only"):
        got.array[0] = 0.0
    h = (inner * 2.0).eval_register()
    tn.EvalPlan.eval()
    with pytest.raises(ValueError, match="read-only"):
        h.data().numpy()[0] = 0.0


def test_own_tensors_and_out_targets_stay_writable() -> None:
    x = tn.tensor(np.array([1.0, 2.0]), tn.Float64, tn.CPU, tn.Dim1)
    x.numpy()[0] = 5.0  # documented: numpy() of a principal tensor is its memory
    assert x.numpy()[0] == 5.0
    out = tn.zeros((2,), tn.Float64, tn.CPU)
    assert tn.evaluate(x * 2.0, out=out) is out
    out.numpy()[1] = -1.0
    np.testing.assert_array_equal(out.numpy(), [10.0, -1.0])
    copy = tn.evaluate(x * 2.0).numpy().copy()  # the way to a writable array of a result
    copy[0] = 0.0
