"""Common sub-expressions: identical sub-trees registered in one plan are computed once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import options, stats


@pytest.fixture
def calls() -> Iterator[Counter[str]]:
    """Kernel applications by op name while the test runs."""
    stats.reset()
    stats.counting = True
    try:
        yield stats.kernel_calls
    finally:
        stats.counting = False


def _data() -> tuple[
    tn.Tensor[tn.Float32, tn.CPU, tn.Dim2], tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]
]:
    rng = np.random.default_rng(0)
    return t32(rng.normal(size=(3, 4))), t32(rng.normal(size=(4, 5)))


def test_separately_built_subtrees_are_computed_once(calls: Counter[str]) -> None:
    x, w = _data()
    left = ops.exp(x @ w) + 1.0  # built here ...
    right = ops.exp(x @ w) * 2.0  # ... and again here: different node objects
    nodes: list[Any] = [left, right]
    assert nodes[0].operands[0] is not nodes[1].operands[0]
    h1, h2 = left.eval_register(), right.eval_register()
    tn.EvalPlan.eval()
    assert calls["dot"] == 1
    assert calls["exp"] == 1
    e = np.exp(x.numpy() @ w.numpy())
    np.testing.assert_allclose(h1.data().numpy(), e + 1, rtol=1e-6)
    np.testing.assert_allclose(h2.data().numpy(), e * 2, rtol=1e-6)


def test_without_cse_each_copy_is_computed(calls: Counter[str]) -> None:
    x, w = _data()
    with options.using(cse=False):
        tn.evaluate(ops.exp(x @ w) + ops.exp(x @ w))
    assert calls["dot"] == 2
    assert calls["exp"] == 2


def test_equal_numbers_and_views_of_the_same_memory_merge(calls: Counter[str]) -> None:
    x, _ = _data()
    a = ops.sqrt(ops.square(x[0]) + 3)
    b = ops.sqrt(ops.square(x[0]) + 3)  # x[0] is a new view object, equal by provenance
    tn.evaluate(a * b)
    assert calls["square"] == 1
    assert calls["sqrt"] == 1


def test_different_params_or_operands_do_not_merge(calls: Counter[str]) -> None:
    x, _ = _data()
    tn.evaluate(ops.exp(x + 1) + ops.exp(x + 2) + ops.exp(x[0] + 1))
    assert calls["exp"] == 3


def test_merged_nodes_all_receive_the_cached_result() -> None:
    x, w = _data()
    a, b = ops.exp(x @ w), ops.exp(x @ w)
    ha, hb = a.eval_register(), b.eval_register()
    tn.EvalPlan.eval()
    assert ha.data() is hb.data()
    assert tn.evaluate(b) is ha.data()  # cached on both nodes
