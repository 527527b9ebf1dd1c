"""The generated call guard agrees with ``Compiled._key``: for any call, the guard of a
signature accepts the call exactly when the call's key is that signature, and gives the same
arrays and numbers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import typed_nn as tn
from typed_nn.evaluate.compiled import Compiled
from typed_nn.evaluate.guard import NO_MATCH, call_guard

_base = np.arange(12, dtype=np.float32).reshape(3, 4)
_other = np.zeros((3, 4), np.float32)
TENSORS = [
    tn.tensor(_base, tn.Float32, tn.CPU, tn.Dim2),
    tn.Tensor(_base, tn.Float32, tn.CPU, tn.Dim2),  # the same memory, another tensor
    tn.tensor(_other, tn.Float32, tn.CPU, tn.Dim2),
    tn.tensor(_other, tn.Float64, tn.CPU, tn.Dim2),
    tn.tensor(np.zeros((4, 3), np.float32), tn.Float32, tn.CPU, tn.Dim2),
    tn.tensor(np.zeros(4, np.float32), tn.Float32, tn.CPU, tn.Dim1),
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


def _compiled(static: tuple[str, ...]) -> Compiled[Any, Any]:
    return Compiled(fn, static, 8)


calls = st.tuples(*(st.sampled_from(VALUES) for _ in range(3)))


@settings(max_examples=400, deadline=None)
@given(
    first=calls,
    second=calls,
    static=st.sampled_from([(), ("c",), ("a", "b")]),
)
def test_guard_accepts_exactly_the_calls_of_its_signature(
    first: tuple[Any, ...], second: tuple[Any, ...], static: tuple[str, ...]
) -> None:
    compiled = _compiled(static)
    key, _, _ = compiled._key(list(first))
    step: Any = SimpleNamespace(names=[], held=[], held_bases=frozenset(), shared=frozenset())
    guard = call_guard(key, compiled._names, frozenset(static), step)
    key2, arrays2, numbers2 = compiled._key(list(second))
    bound = guard(second)
    if bound is None:
        assert key2 != key
        return
    assert key2 == key
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
    assert last.replay((x,)) is not NO_MATCH  # the replay of the last Step runs it
    w._array = np.full(3, 2.0, np.float32)  # what loading new weights by replacement does
    assert last.replay((x,)) is NO_MATCH
    np.testing.assert_array_equal(f(x).numpy(), [0.0, 2.0, 4.0])  # the general path retraces
    assert f.traces == 2


def test_the_replay_runs_the_last_step_or_says_no_match() -> None:
    w = tn.tensor(np.zeros(3, np.float32), tn.Float32, tn.CPU, tn.Dim1)

    @tn.compile
    def f(x: tn.Tensor[tn.Float32, tn.CPU, tn.Dim1], k: int) -> None:
        w.assign(w + x * k)

    x = tn.tensor(np.arange(3, dtype=np.float32), tn.Float32, tn.CPU, tn.Dim1)
    f(x, 1)
    assert f._last is not None
    replay = f._last.replay
    assert replay((x, 1)) is None  # fn's own None, not "no match"
    np.testing.assert_array_equal(w.numpy(), [0.0, 2.0, 4.0])
    longer = tn.tensor(np.ones(4, np.float32), tn.Float32, tn.CPU, tn.Dim1)
    assert replay((longer, 1)) is NO_MATCH
    assert replay((x, 2)) is NO_MATCH
    assert replay((x,)) is NO_MATCH
    f(x, 2)  # another signature: traced, and its Step's replay is tried first from now on
    assert f.traces == 2
    assert f._last is not None
    assert f._last.replay is not replay
    assert replay((x, 1)) is NO_MATCH  # no longer the last Step's: the general path decides
    np.testing.assert_array_equal(w.numpy(), [0.0, 4.0, 8.0])
