"""Plan reuse: a graph whose structure was seen before skips the analysis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import options, stats
from typed_nn.ops import declare

rng = np.random.default_rng(4)


def _step(x: Any, w: Any) -> Any:
    return ops.sigmoid(x @ w + 1.0) * 2.0


def test_same_structure_with_new_values_skips_analysis() -> None:
    w = t32(rng.normal(size=(3, 2)))
    tn.evaluate(_step(t32(rng.normal(size=(4, 3))), w))
    stats.reset()
    for _ in range(5):
        xv = rng.normal(size=(4, 3)).astype(np.float32)
        got = tn.evaluate(_step(t32(xv), w)).numpy()
        np.testing.assert_allclose(got, 2 / (1 + np.exp(-(xv @ w.numpy() + 1))), rtol=1e-6)
    assert stats.analyses == 0
    assert stats.plan_hits == 5


@pytest.mark.parametrize(
    "change",
    [
        lambda x, w: _step(t32(rng.normal(size=(5, 3))), w),  # another shape
        lambda x, w: ops.sigmoid(x @ w + 2.0) * 2.0,  # another number
        lambda x, w: ops.tanh(x @ w + 1.0) * 2.0,  # another op
        lambda x, w: ops.sigmoid(x @ w + 1.0) * ops.sigmoid(x @ w + 1.0),  # another sharing
    ],
)
def test_a_different_structure_is_analysed(change: Callable[[Any, Any], Any]) -> None:
    x, w = t32(rng.normal(size=(4, 3))), t32(rng.normal(size=(3, 2)))
    tn.evaluate(_step(x, w))
    stats.reset()
    tn.evaluate(change(x, w))
    assert stats.analyses == 1


def test_plan_cache_off_analyses_every_time() -> None:
    w = t32(rng.normal(size=(3, 2)))
    stats.reset()
    with options.using(plan_cache=False):
        for _ in range(3):
            tn.evaluate(_step(t32(rng.normal(size=(4, 3))), w))
    assert stats.analyses == 3


def test_a_replaced_implementation_invalidates_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    x = t32(rng.normal(size=(2, 2)))
    tn.evaluate(ops.exp(x) + 1.0)
    monkeypatch.setitem(
        declare._IMPLS["exp"], "CPU", [declare.Kernel(0, lambda a: np.zeros_like(a))]
    )
    got = tn.evaluate(ops.exp(x) + 1.0).numpy()
    np.testing.assert_array_equal(got, np.ones((2, 2), np.float32))


def test_the_plan_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from typed_nn.evaluate import executor

    monkeypatch.setattr(executor, "MAX_PLANS", 3)
    executor.clear_plan_cache()
    x = t32(rng.normal(size=4))
    for k in range(6):
        tn.evaluate(ops.exp(x) + float(k))  # a new number: a new structure
    assert len(executor._plans()) == 3
    stats.reset()
    tn.evaluate(ops.exp(x) + 5.0)
    assert stats.analyses == 0


def test_plans_idle_for_a_while_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    from typed_nn.evaluate import executor

    monkeypatch.setattr(executor, "IDLE_EVALUATIONS", 8)
    executor.clear_plan_cache()
    x = t32(rng.normal(size=4))
    tn.evaluate(ops.exp(x) + 1.0)  # a plan, then a steady loop of another structure
    for _ in range(20):
        tn.evaluate(ops.tanh(x))
    assert len(executor._plans()) == 1
    stats.reset()
    tn.evaluate(ops.tanh(x))
    assert stats.analyses == 0  # the loop's plan stayed


def test_a_one_node_graph_is_collected_as_the_walk_collects_it() -> None:
    """``collect`` takes a node over leaf tensors without its walk: the same slots and key."""
    from typed_nn.evaluate.cache import epoch
    from typed_nn.evaluate.collect import Collected, _Walk, collect

    x = t32(rng.normal(size=(2, 3)))
    y = t32(rng.normal(size=(2, 3)))
    same_memory = tn.from_dlpack(np.from_dlpack(x), tn.Float32, tn.CPU, tn.Dim2)
    exprs = [x + y, y + x, x + x, x + same_memory, x * 2.0, ops.concat([x, y, x, 3.0 * y])]
    for e in exprs:
        walked = Collected()
        walk = _Walk(walked, True, epoch(), False)
        walk.slots_for(e)
        walked.roots.append(walk.slot_of[id(e)])
        col = collect([e], True, epoch())
        assert (col.sig, col.roots, len(col.env)) == (walked.sig, walked.roots, len(walked.env))
        assert [s for _, s in col.leaves] == [s for _, s in walked.leaves]
