"""Differential test (issue 3): random well-typed graphs over the op catalogue, evaluated by
typed_nn and by a plain-numpy mirror, must agree within the element type's tolerance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from graphs import CATALOGUE, Graph, check_graph, ops, random_graphs
from helpers import untyped
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import typed_nn as tn

SETTINGS = settings(
    max_examples=1500,  # with the tests below: about 2,400 random graphs per run
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


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
    if case == "shape" and x.rank >= 1:
        bad = list(x.shape)
        bad[data.draw(st.integers(0, x.rank - 1))] += data.draw(st.integers(1, 3))
        with pytest.raises(tn.ShapeError, match=rf"cannot build {name}: shapes do not broadcast"):
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
