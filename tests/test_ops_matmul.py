"""``@`` / ``ops.matmul`` follow numpy (PEP 465); ``ops.dot`` keeps MetaNN's contraction.

Values vs ``np.matmul`` over batched, broadcast and vector cases, eager, compiled and batched
evaluation, and every build-time error (both shapes named, numpy-style)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import t32, t64

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import options, stats
from typed_nn.evaluate.cache import invalidate_caches

rng = np.random.default_rng(20)

SHAPES = [
    ((3,), (3,)),
    ((4, 3), (3,)),
    ((3,), (3, 5)),
    ((4, 3), (3, 5)),
    ((2, 4, 3), (3, 5)),  # a stack of matrices times one matrix
    ((2, 4, 3), (3,)),
    ((3,), (2, 3, 4)),  # a vector times a stack: the stack's dim -2 is contracted
    ((4, 3), (2, 3, 5)),  # one matrix times a stack
    ((2, 4, 3), (2, 3, 5)),
    ((1, 4, 3), (6, 3, 5)),  # size-1 batch dims expand
    ((6, 1, 4, 3), (5, 3, 2)),  # batch dims of different ranks broadcast
    ((2, 2, 4, 3), (2, 2, 3, 4)),
    ((2, 3, 4), (4,)),
]


@pytest.mark.parametrize(("sa", "sb"), SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_numpy(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    expected = np.matmul(a, b)
    for got in (t64(a) @ t64(b), ops.matmul(t64(a), t64(b))):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_a_vector_times_a_stack_is_numpy_matmul_and_dot_keeps_metanns_contraction() -> None:
    v, t = rng.normal(size=3), rng.normal(size=(3, 3, 4))
    np.testing.assert_allclose((t64(v) @ t64(t)).numpy(), v @ t)  # contracts t's dim 1
    np.testing.assert_allclose(
        ops.dot(t64(v), t64(t), 1).numpy(), np.tensordot(v, t, axes=1)
    )  # contracts t's dim 0
    assert not np.allclose(v @ t, np.tensordot(v, t, axes=1))


def test_where_numpy_and_metann_agree_the_node_stays_a_dot() -> None:
    m, w = t64(rng.normal(size=(2, 4, 3))), t64(rng.normal(size=(3, 5)))
    node = m @ w
    assert isinstance(node, tn.ops.Operation)
    assert node.op.name == "dot"
    batched = m @ t64(rng.normal(size=(2, 3, 5)))
    assert isinstance(batched, tn.ops.Operation)
    assert batched.op.name == "matmul"


def test_compiled_matmul_and_its_gradients_equal_eager() -> None:
    a, b = t64(rng.normal(size=(2, 4, 3))), t64(rng.normal(size=(1, 3, 5)))

    def f(x: Any, y: Any) -> Any:
        loss = ops.reduce_sum(ops.square(x @ y))
        return (loss, *tn.grad(loss, (x, y)))

    eager = [r.numpy() for r in f(a, b)]
    compiled = tn.compile(f)
    for _ in range(2):
        for got, want in zip(compiled(a, b), eager, strict=True):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    assert eager[2].shape == (1, 3, 5)  # the gradient summed over the expanded batch dim


@pytest.fixture
def calls() -> Iterator[Counter[str]]:
    stats.reset()
    stats.counting = True
    try:
        yield stats.kernel_calls
    finally:
        stats.counting = False


@pytest.mark.optimiser
def test_per_sample_batched_matmuls_run_as_one_call(calls: Counter[str]) -> None:
    w = t32(rng.normal(size=(3, 5, 2)))  # shared stack of matrices
    xs = [t32(rng.normal(size=(3, 4, 5))) for _ in range(6)]
    handles = [(x @ w).eval_register() for x in xs]
    tn.EvalPlan.eval()
    assert calls["matmul"] == 1
    for x, h in zip(xs, handles, strict=True):
        np.testing.assert_allclose(h.data().numpy(), x.numpy() @ w.numpy(), rtol=1e-5)
    invalidate_caches()
    with options.using(batch=False):
        for x in xs:
            tn.evaluate(x @ w)
    assert calls["matmul"] == 1 + len(xs)


def test_per_sample_vector_products_with_a_stack_do_not_batch_wrongly() -> None:
    w = t32(rng.normal(size=(2, 5, 3)))
    xs = [t32(rng.normal(size=5)) for _ in range(4)]  # a stacked vector would become a matrix
    handles = [(x @ w).eval_register() for x in xs]
    tn.EvalPlan.eval()
    for x, h in zip(xs, handles, strict=True):
        np.testing.assert_allclose(h.data().numpy(), x.numpy() @ w.numpy(), rtol=1e-5)


def test_misaligned_matrix_dims_name_both_shapes() -> None:
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cannot build matmul: shapes \(2, 4, 3\) and \(2, 4, 5\) are not aligned: "
        r"3 \(dim 2 of lhs\) != 4 \(dim 1 of rhs\).*ops\.dot",
    ):
        t64(np.zeros((2, 4, 3))) @ t64(np.zeros((2, 4, 5)))
    with pytest.raises(tn.ShapeError, match=r"shapes \(4, 3\) and \(4, 5\) are not aligned"):
        t64(np.zeros((4, 3))) @ t64(np.zeros((4, 5)))  # the 2-D case says matmul too


def test_batch_dims_that_do_not_broadcast_name_both_shapes() -> None:
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)batch dims \(2\) and \(3\) of shapes \(2, 4, 3\) and \(3, 3, 5\) "
        r"do not broadcast.*equal or 1",
    ):
        ops.matmul(t64(np.zeros((2, 4, 3))), t64(np.zeros((3, 3, 5))))


def test_a_scalar_operand_is_rejected() -> None:
    with pytest.raises(tn.RankError, match="cannot build matmul: an operand is a scalar"):
        ops.matmul(tn.scalar(2.0, tn.Float64, tn.CPU), t64(np.zeros((2, 2, 2))))  # type: ignore[arg-type]


def test_mixed_elements_are_rejected_in_matmuls_terms() -> None:
    with pytest.raises(tn.ElemTypeError, match="cannot build matmul: operands have different"):
        t64(np.zeros((4, 3))) @ t32(np.zeros((3, 2)))
