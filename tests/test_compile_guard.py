"""A Step's guard agrees with ``signature``: for any call, the guard of a signature's Step
accepts the call exactly when the call's signature is the Step's and, for a Step that writes,
its tensors' memory layout (which share memory) is the trace's; and gives the same arrays and
numbers."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate.compiled import Compiled
from typed_nn.evaluate.step import HeldMemory, memory_layout, signature

_base = np.arange(12, dtype=np.float32).reshape(3, 4)
_other = np.zeros((3, 4), np.float32)
_rows = tn.tensor(np.zeros((2, 3, 4), np.float32), tn.Float32, tn.CPU, tn.Dim3)
TENSORS = [
    tn.tensor(_base, tn.Float32, tn.CPU, tn.Dim2),
    tn.Tensor(_base, tn.Float32, tn.CPU, tn.Dim2),  # the same memory, another tensor
    tn.tensor(_other, tn.Float32, tn.CPU, tn.Dim2),
    tn.tensor(_other, tn.Float64, tn.CPU, tn.Dim2),
    tn.tensor(np.zeros((4, 3), np.float32), tn.Float32, tn.CPU, tn.Dim2),
    tn.tensor(np.zeros(4, np.float32), tn.Float32, tn.CPU, tn.Dim1),
    _rows[0],  # two parts of one memory
    _rows[1],
]
VALUES: list[Any] = [
    *TENSORS,
    0.5,
    2.0,
    np.float32(0.5),
    np.float64(2.0),
    1,
    2,
    True,
    "mode",
    (0.9, 0.999),
    (1, 2),
    None,
]


def fn(a: Any, b: Any, c: Any) -> Any:
    return a


def writes(a: Any, b: Any, c: Any) -> Any:
    if isinstance(a, tn.Tensor):
        a.assign(a * 1.0)
    return b


calls = st.tuples(*(st.sampled_from(VALUES) for _ in range(3)))


@settings(max_examples=400, deadline=None)
@given(
    first=calls,
    second=calls,
    static=st.sampled_from([(), ("c",), ("a", "b")]),
    body=st.sampled_from([fn, writes]),
)
def test_guard_accepts_exactly_the_calls_of_its_signature(
    first: tuple[Any, ...], second: tuple[Any, ...], static: tuple[str, ...], body: Any
) -> None:
    compiled: Compiled[Any, Any] = Compiled(body, static, 8)
    try:
        compiled(*first)
    except tn.TypedNNError:
        return  # a call fn cannot take (a lazy value, ...): no Step
    step = compiled._last
    assert step is not None
    names, static_names = ["a", "b", "c"], frozenset(static)
    key, arrays1, _ = signature(body, names, static_names, first)
    key2, arrays2, numbers2 = signature(body, names, static_names, second)
    bound = step.guard(second)
    same = key2 == key
    if step.assigns:  # its writes were planned for the trace's sharing, between the arguments
        held_at = step.held_at or HeldMemory([])  # and with the tensors it holds (static ones)
        same = same and memory_layout(arrays2, held_at) == memory_layout(arrays1, held_at)
    if bound is None:
        assert not same or step.stale()
        return
    assert same
    arrays, numbers = bound
    assert len(arrays) == len(arrays2)
    assert all(x is y for x, y in zip(arrays, arrays2, strict=True))
    assert numbers == numbers2
    assert all(type(x) is float for x in numbers)


def test_fp_errors_are_ignored_inside_and_restored_after() -> None:
    from typed_nn.fp_errors import ignore_fp_errors, restore_fp_errors

    before = np.geterr()
    token = ignore_fp_errors()
    try:
        assert set(np.geterr().values()) == {"ignore"}
    finally:
        restore_fp_errors(token)
    assert np.geterr() == before


def test_the_guard_declines_when_the_closed_over_tensors_memory_was_replaced() -> None:
    w = tn.tensor(np.ones(3, np.float32), tn.Float32, tn.CPU, tn.Dim1)

    @tn.compile
    def f(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim1]) -> Any:
        return x * w

    x = tn.tensor(np.arange(3, dtype=np.float32), tn.Float32, tn.CPU, tn.Dim1)
    f(x)
    last = f._last
    assert last is not None
    assert last.guard((x,)) is not None  # the last Step fits the call
    w._array = np.full(3, 2.0, np.float32)  # what loading new weights by replacement does
    assert last.guard((x,)) is None
    np.testing.assert_array_equal(f(x).numpy(), [0.0, 2.0, 4.0])  # the general path retraces
    assert f.traces == 2


def test_the_last_step_runs_the_calls_that_fit_it() -> None:
    w = tn.tensor(np.zeros(3, np.float32), tn.Float32, tn.CPU, tn.Dim1)

    @tn.compile
    def f(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim1], k: int) -> None:
        w.assign(w + x * k)

    x = tn.tensor(np.arange(3, dtype=np.float32), tn.Float32, tn.CPU, tn.Dim1)
    f(x, 1)
    first = f._last
    assert first is not None
    assert f(x, 1) is None  # fn's own None
    np.testing.assert_array_equal(w.numpy(), [0.0, 2.0, 4.0])
    longer = tn.tensor(np.ones(4, np.float32), tn.Float32, tn.CPU, tn.Dim1)
    assert first.guard((longer, 1)) is None
    assert first.guard((x, 2)) is None
    assert first.guard((x,)) is None
    f(x, 2)  # another signature: traced, and its Step is tried first from now on
    assert f.traces == 2
    assert f._last is not first
    np.testing.assert_array_equal(w.numpy(), [0.0, 4.0, 8.0])
    f(x, 1)  # the first signature again: its Step, from the cache, not traced again
    assert f.traces == 2
    assert f._last is first


def test_a_function_that_only_reads_ignores_which_arguments_share_memory() -> None:
    f = tn.compile(lambda a, b: a + b)
    x = tn.tensor(np.arange(3, dtype=np.float32), tn.Float32, tn.CPU, tn.Dim1)
    y = tn.tensor(np.ones(3, np.float32), tn.Float32, tn.CPU, tn.Dim1)
    longer = tn.tensor(np.ones(4, np.float32), tn.Float32, tn.CPU, tn.Dim1)
    np.testing.assert_array_equal(f(x, x).numpy(), [0.0, 2.0, 4.0])
    f(longer, longer)  # another signature: the first Step is no longer the last
    np.testing.assert_array_equal(f(x, y).numpy(), [1.0, 2.0, 3.0])  # the first Step fits
    assert f.traces == 2


def test_a_function_that_writes_keeps_one_step_per_sharing_of_its_arguments() -> None:
    @tn.compile
    def f(t: Any, u: Any) -> None:
        t.assign(t + u)

    def run(a: Any, b: Any) -> None:
        before = a.numpy() + b.numpy()
        f(a, b)
        np.testing.assert_array_equal(a.numpy(), before)

    x = tn.tensor(np.arange(3, dtype=np.float32), tn.Float32, tn.CPU, tn.Dim1)
    y = tn.tensor(np.ones(3, np.float32), tn.Float32, tn.CPU, tn.Dim1)
    for _ in range(2):
        run(x, x)  # t and u one memory: planned for that
        run(x, y)
    assert f.traces == 2


def test_an_argument_over_another_closed_over_tensor_than_at_the_trace_traces_again() -> None:
    """``f(P)`` then ``f(Q)``, ``f`` writing both: a program planned for ``x`` being ``P``
    (reads of ``x`` done before ``P`` is written) must not serve ``x`` being ``Q``. Before one
    memory layout per Step, the second call reused it and returned numbers off by 11.5."""
    start = np.arange(16, dtype=np.float32).reshape(4, 4)

    def run(compiled: bool) -> list[Any]:
        p = tn.tensor(start, tn.Float32, tn.CPU, tn.Dim2, copy=True)
        q = tn.tensor(start * 3.0 + 1.0, tn.Float32, tn.CPU, tn.Dim2, copy=True)

        def f(x: Any) -> Any:
            p.assign(p * 0.5 + x)
            q.assign(q * 0.5 + ops.transpose(x))
            return x * 1.0 + p

        g = tn.compile(f) if compiled else (lambda x: tn.evaluate(f(x)))
        values = [g(arg).numpy().copy() for arg in (p, q, p, q)]
        return [*values, p.numpy().copy(), q.numpy().copy()]

    for got, want in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_closed_over_tensor_read_as_the_argument_it_was_passed_as_traces_again() -> None:
    """``f(S0)`` writes a row of its argument, then reads the closed-over ``S0``: one memory at
    the trace, so ``S0`` reads as the argument's new value. ``f(S1)`` must not reuse that
    program (it would read ``S1`` for ``S0``): the fuzzer's program 412 of seed 12144406."""
    rng = np.random.default_rng(1)

    def run(compiled: bool) -> list[Any]:
        s0, s1, w, b = (
            tn.tensor(rng.uniform(-1, 1, (4, 4)), tn.Float32, tn.CPU, tn.Dim2) for _ in range(4)
        )

        def f(a: Any, b: Any) -> Any:
            a[3].assign(ops.sin(b[0]) * 0.5)
            return ops.tanh(s0 @ w) * 2.0

        g = tn.compile(f) if compiled else (lambda a, b: tn.evaluate(f(a, b)))
        return [g(arg, b).numpy().copy() for arg in (s0, s1, s0)]

    rng = np.random.default_rng(1)
    want = run(False)
    rng = np.random.default_rng(1)
    for got, expected in zip(run(True), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
