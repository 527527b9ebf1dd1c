"""Differential test (issue 3): random well-typed graphs over the op catalogue, evaluated by
typed_nn and by a plain-numpy mirror, must agree within the element type's tolerance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any
from unittest import mock

import numpy as np
import pytest
from graphs import CATALOGUE, Graph, check_graph, graph_settings, ops, random_graphs
from helpers import tolerance, untyped
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import typed_nn as tn
from typed_nn.evaluate import memory
from typed_nn.evaluate.cache import invalidate_caches
from typed_nn.evaluate.executor import by_node

SETTINGS = graph_settings(1500)  # with the tests below: about 2,400 random graphs per run


@SETTINGS
@given(random_graphs())
def test_registered_roots_match_numpy(g: Graph) -> None:
    handles = [root.expr.eval_register() for root in g.roots]
    tn.EvalPlan.eval()
    check_graph(g, [h.data().numpy() for h in handles])


@settings(SETTINGS, max_examples=300)
@given(random_graphs(max_ops=6))
def test_evaluate_every_node_matches_numpy(g: Graph) -> None:
    """Every node of the graph, last first (so earlier nodes may come from caches)."""
    every = replace(g, roots=g.nodes[::-1])
    check_graph(every, [tn.evaluate(node.expr).numpy() for node in every.roots])


@settings(max_examples=len(CATALOGUE) * 6, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_every_op_alone(data: st.DataObject) -> None:
    """Each catalogue entry on its own (small graphs), so no op hides behind another."""
    index = data.draw(st.integers(0, len(CATALOGUE) - 1))
    g = data.draw(random_graphs(catalogue=[CATALOGUE[index]], max_ops=2))
    check_graph(g, [tn.evaluate(root.expr).numpy() for root in g.roots])


class Elsewhere(tn.TensorLike[Any, Any, Any]):
    """Storage-less data on the GPU tag (building nodes never touches a device)."""

    def __init__(self, shape: tuple[int, ...], elem: type[tn.ElemTag]) -> None:
        self._shape = shape
        self._elem = elem

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def elem(self) -> type[Any]:
        return self._elem

    @property
    def device(self) -> type[Any]:
        return tn.GPU

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


BINARY: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b),
    ("maximum", lambda a, b: ops.maximum(a, b)),
    ("minimum", lambda a, b: ops.minimum(a, b)),
]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(random_graphs(max_ops=4), st.data())
def test_bad_operands_raise_typed_errors(g: Graph, data: st.DataObject) -> None:
    """A node of a valid graph combined with a bad operand fails at build time with the
    typed error that names the op and the operands."""
    node = data.draw(st.sampled_from(g.nodes))
    x = node.expr
    name, op = data.draw(st.sampled_from(BINARY))
    swap = data.draw(st.booleans())

    def combine(other: Any) -> Any:
        return op(other, x) if swap else op(x, other)

    case = data.draw(st.sampled_from(("shape", "elem", "device", "operand", "dot")))
    wide = [i for i, n in enumerate(x.shape) if n > 1]  # a size-1 dim would broadcast
    if case == "shape" and wide:
        bad = list(x.shape)
        bad[data.draw(st.sampled_from(wide))] += data.draw(st.integers(1, 3))
        with pytest.raises(
            tn.ShapeError, match=rf"cannot build {name}: operands could not be broadcast together"
        ):
            combine(untyped.zeros(tuple(bad), g.elem, tn.CPU))
    elif case == "elem":
        other = tn.Float64 if g.elem is tn.Float32 else tn.Float32
        with pytest.raises(
            tn.ElemTypeError, match=rf"cannot build {name}: operands have different element types"
        ):
            combine(untyped.zeros(x.shape, other, tn.CPU))
    elif case == "device":
        with pytest.raises(
            tn.DeviceError, match=rf"cannot build {name}: operands live on different devices"
        ):
            combine(Elsewhere(x.shape, g.elem))
    elif case == "operand":
        thing = data.draw(st.sampled_from(("text", [1.0], np.zeros(x.shape, g.dtype), None, True)))
        with pytest.raises(
            tn.OperandError, match=rf"cannot build {name}: operand [12] is not typed_nn data"
        ):
            combine(thing)
    elif case == "dot" and x.rank in (1, 2):
        width = x.shape[-1] + data.draw(st.integers(1, 3))
        with pytest.raises(tn.ShapeError, match=r"cannot build dot: contracted dims differ"):
            ops.dot(x, untyped.zeros((width, 2), g.elem, tn.CPU))
    else:
        reject()


# --- writes into leaves (issue 17): assign, out= into a leaf and into a view of a leaf ---


def _tensor_leaves(g: Graph) -> list[Any]:
    """The principal-tensor leaves of ``g`` (the data a user can write into)."""
    return [n for n in g.nodes if type(n.expr) is tn.Tensor and n.expr.rank > 0]


def _recomputed(g: Graph) -> list[Any]:
    """The roots' values computed afresh node by node (every cache invalidated first)."""
    invalidate_caches()
    return [t.numpy() for t in by_node([root.expr for root in g.roots])]


@settings(SETTINGS, max_examples=300)
@given(random_graphs(max_ops=8), st.data())
def test_evaluate_assign_a_leaf_evaluate_again(g: Graph, data: st.DataObject) -> None:
    """Values cached before a leaf is written in place are never read after it."""
    leaves = _tensor_leaves(g)
    if not leaves:
        reject()
    check_graph(g, [tn.evaluate(root.expr).numpy() for root in g.roots])
    target = data.draw(st.sampled_from(leaves)).expr
    before = target.numpy().copy()
    target.assign(target * 2.0 - 0.5)
    np.testing.assert_array_equal(target.numpy(), before * 2.0 - 0.5)
    after = [tn.evaluate(root.expr).numpy().copy() for root in g.roots]
    for got, want in zip(after, _recomputed(g), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=g.describe())


@settings(SETTINGS, max_examples=300)
@given(random_graphs(max_ops=8), st.data())
def test_out_into_a_leaf_the_graph_reads(g: Graph, data: st.DataObject) -> None:
    """``evaluate(root, out=leaf)``: the root's value lands in the leaf, whatever reads it."""
    pairs = [(r, n) for r in g.roots for n in _tensor_leaves(g) if n.value.shape == r.value.shape]
    if not pairs:
        reject()
    root, leaf = data.draw(st.sampled_from(pairs))
    out = tn.evaluate(root.expr, out=leaf.expr)
    assert out is leaf.expr
    check_graph(replace(g, roots=[root]), [leaf.expr.numpy()])


@settings(SETTINGS, max_examples=300)
@given(random_graphs(max_ops=8), st.data())
def test_out_into_a_row_of_a_leaf_the_graph_reads(g: Graph, data: st.DataObject) -> None:
    """``evaluate(e, out=leaf[i])`` where ``e`` reads the graph and the leaf itself (row i
    of a node over it): row i takes the value; the other rows keep theirs."""
    leaves = _tensor_leaves(g)
    if not leaves:
        reject()
    root, leaf = data.draw(st.sampled_from(g.roots)), data.draw(st.sampled_from(leaves))
    i = data.draw(st.integers(0, leaf.value.shape[0] - 1))
    before = leaf.expr.numpy().copy()
    total = ops.reduce_sum(root.expr) if root.expr.rank else root.expr
    value = total + (leaf.expr * 0.5)[i]
    tn.evaluate(value, out=leaf.expr[i])
    want = root.value.sum(dtype=np.float64) + 0.5 * before[i].astype(np.float64)
    tol = tolerance(g.elem)
    scale = 1.0 + float(np.abs(root.value).sum())
    np.testing.assert_allclose(
        leaf.expr.numpy()[i], want, rtol=tol["rtol"] * 10, atol=tol["atol"] * scale * 10
    )
    others = np.arange(before.shape[0]) != i
    np.testing.assert_array_equal(leaf.expr.numpy()[others], before[others])


@settings(SETTINGS, max_examples=300)
@given(random_graphs(max_ops=8))
def test_compiled_graphs_match_numpy_and_replay(g: Graph) -> None:
    """The graph as a compiled function of its leaves (closed over, read live): traced,
    compiled, replayed; the same numbers as numpy each time."""
    f = tn.compile(lambda: [root.expr for root in g.roots])
    check_graph(g, [t.numpy() for t in f()])
    check_graph(g, [t.numpy() for t in f()])
    assert f.traces == 1


@settings(SETTINGS, max_examples=300)
@given(random_graphs(max_ops=8))
def test_compiled_graphs_reusing_memory_as_for_large_arrays_match_numpy(g: Graph) -> None:
    """The same with no buffer small enough to keep (as on large arrays): operands are
    computed into their rows of a gather, element-wise steps write into operands they read
    last. Every reuse of memory must leave the numbers those of numpy."""
    with mock.patch.object(memory, "MIN_BYTES", 0):
        f = tn.compile(lambda: [root.expr for root in g.roots])
        check_graph(g, [t.numpy() for t in f()])
        check_graph(g, [t.numpy() for t in f()])
