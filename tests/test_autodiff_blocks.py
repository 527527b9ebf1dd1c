"""Cotangents that are zero-padded blocks of one tensor (``narrow``'s vjp, e.g. the gates of
an LSTM's fused projection) are summed as one concat of their blocks."""

from __future__ import annotations

import numpy as np
from helpers import t64

import typed_nn as tn
from typed_nn import ops
from typed_nn.ops.join import CONCAT
from typed_nn.ops.node import Operation

rng = np.random.default_rng(8)


def test_disjoint_blocks_sum_as_one_concat() -> None:
    a = rng.standard_normal((3, 8))
    x = t64(a)
    loss = ops.reduce_sum(ops.sigmoid(ops.narrow(x, 1, 0, 2))) + ops.reduce_sum(
        ops.square(ops.narrow(x, 1, 4, 3))
    )
    loss = loss + ops.reduce_sum(ops.narrow(x, 1, 2, 1) * 3.0)
    g = tn.grad(loss, x)
    assert isinstance(g, Operation)
    assert g.op is CONCAT
    assert len(g.operands) == 5  # sigmoid', 3, zeros, 2x, zeros: one kernel, no adds
    s = 1 / (1 + np.exp(-a[:, :2]))
    expected = np.zeros_like(a)
    expected[:, :2] = s * (1 - s)
    expected[:, 2] = 3.0
    expected[:, 4:7] = 2 * a[:, 4:7]
    np.testing.assert_allclose(tn.evaluate(g).numpy(), expected)


def test_overlapping_blocks_are_summed() -> None:
    a = rng.standard_normal((2, 6))
    x = t64(a)
    loss = ops.reduce_sum(ops.narrow(x, 1, 0, 4) * 2.0) + ops.reduce_sum(ops.narrow(x, 1, 2, 4))
    expected = np.array([2.0, 2.0, 3.0, 3.0, 1.0, 1.0]) * np.ones((2, 1))
    np.testing.assert_allclose(tn.evaluate(tn.grad(loss, x)).numpy(), expected)
    loss = ops.reduce_sum(ops.narrow(x, 0, 1, 1)) + ops.reduce_sum(ops.narrow(x, 1, 0, 1))
    expected = np.zeros((2, 6))  # blocks along different axes: not merged
    expected[1] += 1
    expected[:, 0] += 1
    np.testing.assert_allclose(tn.evaluate(tn.grad(loss, x)).numpy(), expected)
