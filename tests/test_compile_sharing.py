"""``tn.compile`` of functions whose tensors share memory, or assign tensors as they are: each
compiled call gives what the same code gives eagerly (each assign written at once), for every
argument sharing, call after call. The families an outside tester found (and the fuzzer's
``assign_tensor``/``assign_kept`` statements and row calls, ``tests/fuzz_programs.py``, now
cover); each test failed on 2228ab9."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import nn, ops, optim

M = tn.Tensor[tn.Float64, tn.CPU, tn.Dim2]
START = {
    "W": [[1.0, 2.0], [3.0, 4.0]],
    "S": [[-1.0, 0.5], [2.0, -3.0]],
    "P": [[10.0, 20.0], [30.0, 40.0]],
    "Q": [[0.25, 0.5], [0.75, 1.0]],
}


def _run(
    body: Callable[..., Any], calls: list[tuple[str, ...]], compiled: bool
) -> list[np.ndarray]:
    """Every call's outputs and the tensors after it: ``body(scope, *args)``, an argument named
    ``"R0"``/``"R1"`` being a row of the (2, 2, 2) tensor ``R``, any other one of ``scope``."""
    scope = {k: tn.tensor(np.array(v), tn.Float64, tn.CPU, tn.Dim2) for k, v in START.items()}
    rows = np.arange(8.0).reshape(2, 2, 2) / 8.0
    r = tn.tensor(rows, tn.Float64, tn.CPU, tn.Dim3)

    fn = functools.partial(body, scope)  # the arguments after scope, as tn.compile sees them
    run = tn.compile(fn) if compiled else (lambda *a: [tn.evaluate(o) for o in fn(*a)])
    seen: list[np.ndarray] = []
    kept: list[tuple[Any, np.ndarray]] = []
    for names in calls:
        args = [r[int(n[1])] if n.startswith("R") else scope[n] for n in names]
        outputs = run(*args)
        kept += [(o, o.numpy().copy()) for o in outputs]
        seen += [o.numpy().copy() for o in outputs]
        seen += [scope[k].numpy().copy() for k in START] + [r.numpy().copy()]
    for o, value in kept:  # a result stays what it was after later calls and assigns
        np.testing.assert_array_equal(o.numpy(), value)
    return seen


def _same_as_eager(body: Callable[..., Any], calls: list[tuple[str, ...]]) -> None:
    for got, want in zip(_run(body, calls, True), _run(body, calls, False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_tensor_assigned_as_it_is_has_its_value_after_the_earlier_assigns() -> None:
    def body(s: dict[str, M], b: M) -> list[Any]:
        s["W"].assign(b)
        s["W"].assign(s["W"])  # W as it is now: b's value, not W's before the call
        s["S"].assign(ops.permute(s["W"], (0, 1)))  # an identity view: W itself
        return [s["W"] * 1.0, s["S"] * 1.0]

    _same_as_eager(body, [("P",), ("Q",)])


def test_one_tensor_for_both_arguments_assigned_one_from_the_other() -> None:
    def body(s: dict[str, M], a: M, b: M) -> list[Any]:
        b.assign(b * 2.0)
        a.assign(b)
        return [a * 1.0]

    _same_as_eager(body, [("P", "P"), ("P", "Q"), ("P", "P")])


def test_a_value_both_returned_and_assigned_is_returned_as_a_copy() -> None:
    """The value built before the assign (eagerly, evaluated before it), in memory of its own:
    it was the target's, and changed with every later call and assign."""
    w = tn.tensor(np.array([1.0, 2.0, 3.0]), tn.Float64, tn.CPU, tn.Dim1)

    @tn.compile
    def step() -> tn.Vector[tn.Float64, tn.CPU]:
        v = w * 2.0
        w.assign(v)
        return v

    first = step()
    assert not np.shares_memory(first.numpy(), w.numpy())
    step()
    w.assign(w * 0.0)
    np.testing.assert_array_equal(first.numpy(), [2.0, 4.0, 6.0])


def test_a_closed_over_tensor_passed_and_assigned_through_the_argument_traces_again() -> None:
    """At the first call ``a`` is ``W``: ``a.assign`` replaced ``W.assign``, so that program
    writes ``a`` only; the distinct call must not reuse it (``W`` was left unchanged)."""

    def body(s: dict[str, M], a: M, b: M) -> list[Any]:
        s["W"].assign(b * 2.0)
        a.assign(b + 1.0)
        return []

    _same_as_eager(body, [("W", "Q"), ("P", "Q"), ("W", "Q"), ("P", "Q")])


@pytest.mark.parametrize("then", [("P", "P"), ("R0", "R0")])
def test_two_rows_of_one_tensor_are_two_memories_not_one(then: tuple[str, str]) -> None:
    """Rows ``R[0]``, ``R[1]`` share an owner but not their elements; one tensor passed twice is
    one memory: each is a program of its own."""

    def body(s: dict[str, M], a: M, b: M) -> list[Any]:
        b.assign(b + 1.0)
        return [a * 1.0]

    _same_as_eager(body, [("R0", "R1"), then, ("R0", "R1")])


def test_one_tensor_assigned_to_two_targets_writes_both() -> None:
    def body(s: dict[str, M], a: M) -> list[Any]:
        s["W"].assign(a)
        s["S"].assign(a)
        return []

    _same_as_eager(body, [("P",), ("Q",)])


def test_a_tensor_assigned_then_written_is_read_before_it_is_written() -> None:
    """``W`` takes ``b``'s value before ``b`` is written; ``W.assign(W)`` moves ``W``'s copy
    after ``b``'s in the program, which must still read the old ``b``."""

    def body(s: dict[str, M], a: M, b: M) -> list[Any]:
        s["W"].assign(b)
        b.assign(b * 2.0)
        a.assign(s["W"] + a * 0.5)
        s["W"].assign(s["W"])
        return [s["W"][1] * 1.0]

    _same_as_eager(body, [("W", "P"), ("S", "P"), ("Q", "P")])


def test_a_row_assigned_over_a_tensor_assigned_as_it_is_keeps_its_old_value() -> None:
    def body(s: dict[str, M], a: M) -> list[Any]:
        s["W"].assign(a)
        a.assign(a * 10.0)
        s["W"][0].assign(s["Q"][1])
        return [s["W"][1] * 1.0, s["W"] * 1.0]

    _same_as_eager(body, [("P",), ("R0",), ("P",)])


def test_a_tensor_assigned_from_itself_through_another_argument_is_unchanged() -> None:
    def body(s: dict[str, M], a: M, b: M) -> list[Any]:
        a.assign(s["S"])
        row = s["S"][1]
        s["S"][0].assign(ops.sin(row) * 0.5)
        b.assign(a)
        return [a * 2.0]

    _same_as_eager(body, [("S", "P"), ("Q", "P"), ("S", "S"), ("Q", "P")])


def test_autodiff_takes_a_tensor_passed_and_closed_over_for_one_as_eagerly() -> None:
    """``step(w)`` differentiating with respect to the closed-over ``w``: both paths, as
    eagerly (the argument is ``w``); a call passing another tensor, or another object over
    ``w``'s memory, is another graph. The compiled gradient had dropped the argument's path."""
    start = np.arange(4.0).reshape(2, 2) / 4.0
    w = tn.tensor(start, tn.Float64, tn.CPU, tn.Dim2)
    other = tn.tensor(start * 2.0, tn.Float64, tn.CPU, tn.Dim2)
    alias = tn.from_dlpack(w, tn.Float64, tn.CPU, tn.Dim2)  # w's memory, another tensor

    def grad_of(x: M) -> Any:
        return tn.grad(ops.reduce_sum(x @ w), w)

    compiled = tn.compile(grad_of)
    for x in (w, other, w, alias, w):
        np.testing.assert_allclose(compiled(x).numpy(), tn.evaluate(grad_of(x)).numpy())


def test_autodiff_takes_one_tensor_passed_twice_for_one_as_eagerly() -> None:
    a = tn.tensor(np.array([[1.0, 2.0]]), tn.Float64, tn.CPU, tn.Dim2)
    b = tn.tensor(np.array([[3.0, 5.0]]), tn.Float64, tn.CPU, tn.Dim2)

    def grad_of(x: M, y: M) -> Any:
        return tn.grad(ops.reduce_sum(x * y), x)

    compiled = tn.compile(grad_of)
    for args in ((a, a), (a, b), (a, a)):
        np.testing.assert_allclose(compiled(*args).numpy(), tn.evaluate(grad_of(*args)).numpy())
    assert compiled.traces == 2


def test_a_compiled_sgd_step_over_a_parameter_passed_as_its_input_matches_eager() -> None:
    def run(compiled: bool) -> np.ndarray:
        tn.manual_seed(0)
        model = nn.Linear(2, 2)
        opt = optim.SGD(model, lr=0.1)

        def step(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]) -> None:
            opt.step(tn.grad(ops.reduce_sum(ops.square(model(x))), model))

        run_step = tn.compile(step) if compiled else step
        weight = model.weight
        assert isinstance(weight, tn.Tensor)
        for _ in range(3):
            run_step(weight)  # the weight is the batch too
        return weight.numpy().copy()

    np.testing.assert_allclose(run(True), run(False), rtol=1e-6)


def test_a_row_of_a_tensor_assigned_its_own_old_value_reads_that_value() -> None:
    """``S.assign(T)`` where ``T`` holds ``S``'s old value (``T.assign(S)`` first): a row
    ``S[1]`` read after it is a row of that old value, not a CompileError about reading part
    of assigned memory (the fuzzer, program 24558 of seed 11686819)."""

    def body(s: dict[str, M]) -> list[Any]:
        s["Q"].assign(s["S"])
        s["S"][1].assign(s["S"][0] * 10.0)
        s["S"].assign(s["Q"])
        return [s["S"][1] * 1.0]

    _same_as_eager(body, [(), ()])


def _imported(t: M) -> M:
    """Another tensor object over ``t``'s memory (a DLPack import has its own numpy base)."""
    return tn.from_dlpack(np.from_dlpack(t), tn.Float64, tn.CPU, tn.Dim2)


def _bump_then_read(t: M, u: M) -> tn.TensorLike[tn.Float64, tn.CPU, tn.Dim2]:
    t.assign(t + 1.0)
    return u * 10.0  # u over t's memory reads the new value, as eagerly


@pytest.mark.parametrize("pair", ["two imports", "a tensor and its import"])
def test_arguments_over_one_memory_are_one_memory_whatever_their_objects(pair: str) -> None:
    """A program traced for separate memories must not serve a call whose arguments share
    memory through distinct objects (outside tester 5, r4)."""
    step = tn.compile(_bump_then_read)
    fresh = [tn.tensor(np.zeros((1, 3)), tn.Float64, tn.CPU, tn.Dim2) for _ in range(2)]
    np.testing.assert_array_equal(step(*fresh).numpy(), np.full((1, 3), 0.0))
    buf = np.zeros((1, 3))
    w = tn.from_dlpack(buf, tn.Float64, tn.CPU, tn.Dim2)
    t = tn.from_dlpack(buf, tn.Float64, tn.CPU, tn.Dim2) if pair == "two imports" else w
    u = _imported(w)
    np.testing.assert_array_equal(step(t, u).numpy(), np.full((1, 3), 10.0))
    np.testing.assert_array_equal(buf, np.ones((1, 3)))
    assert step.traces == 2


def test_an_argument_over_a_closed_over_tensors_memory_reads_its_assigned_value() -> None:
    w = tn.tensor(np.ones((1, 2)), tn.Float64, tn.CPU, tn.Dim2)

    @tn.compile
    def body(x: M) -> tn.TensorLike[tn.Float64, tn.CPU, tn.Dim2]:
        w.assign(w * 10.0)
        return x + 0.5

    np.testing.assert_array_equal(body(tn.zeros((1, 2), tn.Float64, tn.CPU)).numpy(), [[0.5, 0.5]])
    np.testing.assert_array_equal(body(_imported(w)).numpy(), [[100.5, 100.5]])


def test_arguments_over_overlapping_parts_of_a_buffer_are_refused_after_a_warm_up() -> None:
    """Reading after an assign a tensor over part of the assigned memory is a CompileError, on
    the first call as on a call after a program traced for separate memories."""

    def shift(
        t: tn.Tensor[tn.Float64, tn.CPU, tn.Dim1], u: tn.Tensor[tn.Float64, tn.CPU, tn.Dim1]
    ) -> Any:
        t.assign(u * 1.0)
        return t + u

    step = tn.compile(shift)
    step(tn.zeros((5,), tn.Float64, tn.CPU), tn.zeros((5,), tn.Float64, tn.CPU))
    b = np.arange(6.0)
    parts = [tn.from_dlpack(b[k : k + 5], tn.Float64, tn.CPU, tn.Dim1) for k in (0, 1)]
    with pytest.raises(tn.CompileError, match="over part of the memory an earlier assign changed"):
        step(*parts)
    np.testing.assert_array_equal(b, np.arange(6.0))  # nothing written


def test_a_row_passed_as_an_argument_after_an_assign_of_its_tensor_says_to_index_inside() -> None:
    """A row ``w[1]`` made outside is another tensor over part of ``w``: the error says to pass
    ``w`` and take the row inside, which compiles (outside tester 5, r12)."""
    w = tn.tensor(np.arange(1.0, 7.0).reshape(3, 2), tn.Float64, tn.CPU, tn.Dim2)

    def body(x: tn.Tensor[tn.Float64, tn.CPU, tn.Dim1]) -> Any:
        w.assign(w * 10.0)
        return x + 0.5

    with pytest.raises(
        tn.CompileError,
        match=r"(?s)over part of the memory an earlier assign changed.*a row passed as an "
        r"argument, or a view made outside, is another tensor over part of its memory: pass "
        r"the tensor and index it inside",
    ):
        tn.compile(body)(w[1])
    np.testing.assert_array_equal(w.numpy(), np.arange(1.0, 7.0).reshape(3, 2))

    @tn.compile
    def inside(t: M, i: int) -> Any:
        t.assign(t * 10.0)
        return t[i] + 0.5

    np.testing.assert_array_equal(inside(w, 1).numpy(), [30.5, 40.5])


def test_an_argument_written_by_the_program_is_checked_writable_before_anything_runs() -> None:
    """A read-only argument was a 'failed while writing its targets' error after the other
    targets were written; it is the ReadOnlyError of an assign, and nothing is written."""
    w = tn.tensor(np.ones((2, 3)), tn.Float64, tn.CPU, tn.Dim2)

    @tn.compile
    def step(t: M) -> Any:
        w.assign(w * 2.0)
        t[0].assign(t[1] + 1.0)
        return t * 2.0

    step(tn.zeros((2, 3), tn.Float64, tn.CPU))
    frozen = np.zeros((2, 3))
    frozen.flags.writeable = False
    with pytest.raises(tn.ReadOnlyError, match="cannot assign: the tensor's memory is read-only"):
        step(tn.tensor(frozen, tn.Float64, tn.CPU, tn.Dim2, copy=False))
    np.testing.assert_array_equal(w.numpy(), np.full((2, 3), 2.0))  # the first call's only


def test_a_row_and_an_import_of_it_passed_apart_are_one_memory() -> None:
    """A row of a tensor beside a DLPack import of that row (another tensor over exactly its
    memory): one memory, as the Step's trace took it; debug mode's by-node run traced the row
    as a row of its tensor, whose memory the import's assign changed in part, and refused it."""
    r = np.random.default_rng(3).normal(size=(2, 3)).astype(np.float32)
    R = tn.tensor(r.copy(), tn.Float32, tn.CPU, tn.Dim2)

    def both(a: Any, b: Any) -> Any:
        a.assign(a + 1.0)
        return b * 2.0

    imported = tn.from_dlpack(np.from_dlpack(R.numpy()[0]), tn.Float32, tn.CPU, tn.Dim1)
    got = tn.compile(both)(imported, R[0])
    np.testing.assert_allclose(R.numpy()[0], r[0] + 1.0, rtol=1e-6)
    np.testing.assert_allclose(got.numpy(), (r[0] + 1.0) * 2.0, rtol=1e-6)
