"""The memory model (docs/evaluation.md), one test per family of silent wrong numbers found from
outside (#32): nested gathers, rows read after an assign, one memory under two names, returned
views of inputs, DLPack exports of cached values. Each runs eager and compiled where both
apply, against numpy. The differential fuzzer (test_evaluate_fuzz.py) covers the families."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import options

RNG = np.random.default_rng(32)


def arrays(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape).astype(np.float32)


def both(fn: Callable[[], Any]) -> list[Any]:
    """``fn()`` eager and through ``tn.compile`` (two calls), as numpy arrays."""
    compiled = tn.compile(fn)
    return [fn().numpy(), compiled().numpy(), compiled().numpy()]


# --- 1. a gather of gathers writes every row ---


def test_a_concat_of_a_concat_of_computed_values_writes_every_row() -> None:
    a, b = arrays(4, 3), arrays(4, 3)
    A, B = t32(a), t32(b)
    want = np.concatenate([np.sin(a), np.cos(b), np.tanh(a)])
    for got in both(lambda: ops.concat([ops.concat([ops.sin(A), ops.cos(B)]), ops.tanh(A)])):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_stack_of_rows_inside_a_concat_writes_every_row() -> None:
    x, w = arrays(3, 4), arrays(4, 4)
    X, W = tn.tensor(x, tn.Float32, tn.CPU, tn.Dim2), t32(w)
    want = np.concatenate([np.stack([x[i] @ w for i in range(3)]), np.tanh(x)])

    def fn() -> Any:
        return ops.concat([ops.stack([X[i] @ W for i in range(3)]), ops.tanh(X)])

    for got in both(fn):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --- 2. rows read after an assign, and rows assigned, inside tn.compile ---


def test_a_stack_of_numbers_writes_every_element() -> None:
    """Items of rank 0 (dots of vectors, full reductions) computed in their places of the
    stack: each place is a 0-d view (``v[i]`` of a vector was a copy, written and lost)."""
    a, b = arrays(3), arrays(3)
    A, B = tn.tensor(a, tn.Float32, tn.CPU, tn.Dim1), tn.tensor(b, tn.Float32, tn.CPU, tn.Dim1)
    want = np.stack([a @ b, a @ (b * 2.0), np.mean(np.sin(a))])
    inner = np.stack([np.sin(a), want[0] * np.stack([a, b, a]).T @ want])

    def fn() -> Any:
        s = ops.stack([A @ B, A @ (B * 2.0), ops.reduce_mean(ops.sin(A))])
        return ops.stack([ops.sin(A), (A @ B) * ops.transpose(ops.stack([A, B, A])) @ s])

    for got in both(fn):
        np.testing.assert_allclose(got, inner, rtol=1e-5, atol=1e-6)
    for got in both(lambda: ops.stack([A @ A])):
        np.testing.assert_allclose(got, [a @ a], rtol=1e-6)


def test_a_row_read_after_an_assign_reads_the_new_value() -> None:
    s, x = arrays(3, 4), arrays(3, 4)
    S, X = t32(s.copy()), t32(x)

    def fn(x: Any) -> Any:
        S.assign(x * 2.0)
        return S[1] * 1.0, S[1] + S[0]

    one, two = tn.compile(fn)(X)
    np.testing.assert_allclose(one.numpy(), x[1] * 2.0)
    np.testing.assert_allclose(two.numpy(), x[1] * 2.0 + x[0] * 2.0)
    np.testing.assert_allclose(S.numpy(), x * 2.0)


def test_a_per_sample_loop_over_an_assigned_argument_reads_its_new_rows() -> None:
    x, w = arrays(4, 3), arrays(3, 2)
    X, W = t32(x.copy()), t32(w)

    def fn(xb: Any) -> Any:
        xb.assign(xb * 3.0)
        return ops.stack([ops.tanh(xb[i] @ W) for i in range(4)])

    np.testing.assert_allclose(tn.compile(fn)(X).numpy(), np.tanh((x * 3.0) @ w), rtol=1e-5)
    np.testing.assert_allclose(X.numpy(), x * 3.0)


def test_a_row_assign_shows_in_later_reads_of_the_whole_tensor() -> None:
    s, x = arrays(3, 4), arrays(3, 4)
    want = s.copy()
    want[1] = x[0] * 3.0
    S = t32(s.copy())

    def fn(x: Any) -> Any:
        S[1].assign(x[0] * 3.0)
        return S * 1.0, S[1] - S[0]

    whole, diff = tn.compile(fn)(t32(x))
    np.testing.assert_allclose(whole.numpy(), want)
    np.testing.assert_allclose(diff.numpy(), want[1] - want[0])
    np.testing.assert_allclose(S.numpy(), want)


def test_a_row_of_a_row_assigned_keeps_the_other_elements() -> None:
    s = arrays(2, 3, 4)
    want = s.copy()
    want[1, 2] = 7.0
    S = tn.tensor(s.copy(), tn.Float32, tn.CPU, tn.Dim3)

    def fn() -> Any:
        S[1][2].assign(S[1][2] * 0.0 + 7.0)
        return S * 1.0

    np.testing.assert_allclose(tn.compile(fn)().numpy(), want)
    np.testing.assert_allclose(S.numpy(), want)


# --- 3. one memory under two names has one value in a call ---


def _aliased(compiled: bool) -> list[np.ndarray]:
    W = t32(np.arange(9, dtype=np.float32).reshape(3, 3) * 0.1)

    def fn(x: Any) -> Any:
        W.assign(W * 0.5 + x)
        return x - W, x * 1.0

    f = tn.compile(fn) if compiled else fn
    return [r.numpy().copy() for r in f(W)] + [W.numpy().copy()]


def test_a_closed_over_tensor_passed_as_its_argument_reads_like_eager_code() -> None:
    for compiled, eager in zip(_aliased(True), _aliased(False), strict=True):
        np.testing.assert_allclose(compiled, eager, rtol=1e-6)


def test_one_tensor_passed_twice_reads_like_eager_code() -> None:
    def run(compiled: bool) -> list[np.ndarray]:
        a = t32(np.arange(4, dtype=np.float32))

        def fn(t: Any, u: Any) -> Any:
            t.assign(t + u)
            return u * 2.0

        f = tn.compile(fn) if compiled else fn
        return [f(a, a).numpy().copy(), a.numpy().copy()]

    for compiled, eager in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(compiled, eager)


def test_reading_part_of_assigned_memory_through_another_tensor_is_an_error() -> None:
    base = np.zeros((4, 4), np.float32)
    W = tn.tensor(base, tn.Float32, tn.CPU, tn.Dim2, copy=False)
    corner = tn.tensor(base[:2, :2], tn.Float32, tn.CPU, tn.Dim2, copy=False)

    def fn() -> Any:
        W.assign(W + 1.0)
        return corner * 2.0

    with pytest.raises(tn.CompileError, match="reads a tensor over part of the memory an earlier"):
        tn.compile(fn)()


def test_assigning_two_tensors_over_shared_memory_is_an_error() -> None:
    base = np.zeros((4, 4), np.float32)
    W = tn.tensor(base, tn.Float32, tn.CPU, tn.Dim2, copy=False)
    corner = tn.tensor(base[:2, :2], tn.Float32, tn.CPU, tn.Dim2, copy=False)

    other = t32(arrays(2, 2))

    def fn() -> None:
        W.assign(W + 1.0)
        corner.assign(other * 2.0)

    with pytest.raises(tn.CompileError, match="assigns two tensors that share memory"):
        tn.compile(fn)()


# --- 4. a result never shares an input's memory ---

VIEWS: list[tuple[str, Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]] = [
    ("transpose", ops.transpose, lambda a: a.T),
    ("reshape", lambda w: ops.reshape(w, (9,)), lambda a: a.reshape(9)),
    ("narrow", lambda w: ops.narrow(w, 0, 1, 2), lambda a: a[1:3]),
    ("permute", lambda w: ops.permute(w, (1, 0)), lambda a: a.T),
]
# (A row ``w[i]`` of a principal tensor is a principal tensor, returned as it is: a live view,
# as in eager code; see test_compile.py.)


@pytest.mark.parametrize("view", VIEWS, ids=[v[0] for v in VIEWS])
@pytest.mark.parametrize("how", ["argument", "closed-over", "eager"])
def test_a_returned_view_of_an_input_stays_valid(view: Any, how: str) -> None:
    _, make, mirror = view
    w0 = arrays(3, 3)
    W = t32(w0.copy())
    if how == "argument":
        r = tn.compile(lambda w: make(w))(W)
    elif how == "closed-over":
        r = tn.compile(lambda: make(W))()
    else:
        r = tn.evaluate(make(W))
    W.assign(W + 1.0)
    np.testing.assert_array_equal(r.numpy(), mirror(w0))
    assert not np.shares_memory(r.numpy(), W.numpy())


@pytest.mark.parametrize("view", VIEWS, ids=[v[0] for v in VIEWS])
def test_a_view_of_an_input_computed_inside_a_graph_then_handed_out_stays_valid(
    view: Any,
) -> None:
    """Evaluated as part of ``v * 2.0`` first, the view was cached as the input's memory, and
    a later ``tn.evaluate(v)`` handed that out: it changed with the input's next assign."""
    _, make, mirror = view
    w0 = arrays(3, 3)
    W = t32(w0.copy())
    v = make(W)
    tn.evaluate(v * 2.0)
    r = tn.evaluate(v)
    W.assign(W + 1.0)
    np.testing.assert_array_equal(r.numpy(), mirror(w0))
    assert not np.shares_memory(r.numpy(), W.numpy())


def test_a_number_row_of_an_argument_taken_before_an_assign_reads_the_new_value() -> None:
    """``a[0]`` of a vector is a 0-d view, eagerly and compiled (the program read it as a
    number at the start of the call, before the assign)."""

    def f(a: Any) -> Any:
        r = a[0]
        a[0].assign(r + 1.5)
        return r

    for fn in (f, tn.compile(f)):
        a = tn.tensor(np.array([0.25, 7.0], np.float32), tn.Float32, tn.CPU, tn.Dim1)
        assert float(tn.evaluate(fn(a)).item()) == 1.75
        np.testing.assert_array_equal(a.numpy(), [1.75, 7.0])


@pytest.mark.parametrize(
    "make",
    [lambda t: t * 2.0, ops.transpose, lambda t: ops.sin(t), lambda t: t @ t],
    ids=["scale", "transpose", "sin", "product"],
)
@pytest.mark.parametrize("into", ["another", "itself"])
def test_a_handle_the_assign_of_its_value_evaluates_is_not_the_targets_memory(
    make: Callable[[Any], Any], into: str
) -> None:
    """A registered value that an assign of the same value evaluates (one value to CSE)
    was handed out as the target's memory: the next write into the target changed it."""
    a = arrays(3, 3).astype(np.float64)
    t = tn.tensor(a.copy(), tn.Float64, tn.CPU, tn.Dim2)
    u = t if into == "itself" else tn.tensor(a.copy(), tn.Float64, tn.CPU, tn.Dim2)
    handle = make(t).eval_register()
    u.assign(make(t))
    got = handle.data()
    want = got.numpy().copy()
    u.assign(u * 100.0)
    np.testing.assert_array_equal(got.numpy(), want)
    assert not np.shares_memory(got.numpy(), u.numpy())


# --- 5. DLPack exports of cached values: see test_dlpack.py ---


def test_a_step_never_writes_over_an_operand_it_also_reads_through_a_row() -> None:
    """Found by the fuzzer in CI (under the sanitizer): ``v * v[0]`` is the last read of ``v``,
    but the row ``v[0]`` is read as it broadcasts, so the product must not be written into
    ``v``'s buffer. (numpy's ufuncs copy an overlapping operand aside, so the numbers were
    right on the CPU at the price of a copy; a fused pass or a GPU kernel copies nothing.)"""
    s = arrays(3, 3)
    S = tn.tensor(s, tn.Float32, tn.CPU, tn.Dim2)

    def fn() -> Any:
        v = ops.negative(S)
        return (v * v[0]) @ S  # the product a step of its own (not fused)

    want = (-s * -s[0]) @ s
    f = tn.compile(fn)
    with options.using(sanitize=True):
        for _ in range(2):
            np.testing.assert_allclose(f().numpy(), want, rtol=1e-6)


def test_a_step_never_writes_over_an_operand_it_reads_transposed() -> None:
    """Found by the fuzzer in CI (seed 188959, program 496): ``transpose(v) * 1.5`` reads
    ``v``'s buffer in another order than it would write it: no writing into it."""
    s = arrays(4, 4)
    S = tn.tensor(s, tn.Float32, tn.CPU, tn.Dim2)

    def fn() -> Any:
        v = S * 2.0
        return (ops.transpose(v) * 1.5) @ S

    f = tn.compile(fn)
    with options.using(sanitize=True):
        for _ in range(2):
            np.testing.assert_allclose(f().numpy(), ((s * 2.0).T * 1.5) @ s, rtol=1e-5)
