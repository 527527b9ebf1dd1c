"""ComposeTopology: MetaNN's nine checks, port checks, and MetaNN's topological order."""

from __future__ import annotations

import pytest

from typed_nn.errors import TopologyError
from typed_nn.layers import (
    AddLayer,
    ComposeTopology,
    InConnect,
    InternalConnect,
    LayerInput,
    LayerOutput,
    LeftOperand,
    OutConnect,
    ParamSourceLayer,
    RightOperand,
    SigmoidLayer,
    Sublayer,
)
from typed_nn.layers.topology import topological_order


def edge(src: str, dst: str, port: type = LayerInput) -> InternalConnect:
    return InternalConnect(src, LayerOutput, dst, port)


def metann_case_6() -> tuple[Sublayer | InConnect | InternalConnect | OutConnect, ...]:
    """Declared 2, 1, 5, 3, 4; edges 2→3, 1→2, 2→4, 3→5, 4→5 (METANN.md §3.3)."""
    return (
        Sublayer("2", SigmoidLayer),
        Sublayer("1", SigmoidLayer),
        Sublayer("5", AddLayer),
        Sublayer("3", SigmoidLayer),
        Sublayer("4", SigmoidLayer),
        edge("2", "3"),
        edge("1", "2"),
        edge("2", "4"),
        edge("3", "5", LeftOperand),
        edge("4", "5", RightOperand),
        InConnect(LayerInput, "1", LayerInput),
        OutConnect("5", LayerOutput, LayerOutput),
    )


def test_metann_order_example() -> None:
    assert ComposeTopology(*metann_case_6()).order == ("1", "2", "3", "4", "5")


def test_clause_kinds_may_be_interleaved() -> None:
    # Only the order within each kind counts (declaration order, connection order).
    c = metann_case_6()
    mixed = (c[11], c[5], c[0], c[6], c[1], c[10], c[7], c[2], c[8], c[3], c[9], c[4])
    assert sorted(map(str, mixed)) == sorted(map(str, c))
    assert ComposeTopology(*mixed).order == ("1", "2", "3", "4", "5")


def test_connection_order_decides_among_ready_sources() -> None:
    # Reversed: "4" is dropped (ready) before "3", so it comes first: MetaNN's rule.
    assert ComposeTopology(*reversed(metann_case_6())).order == ("1", "2", "4", "3", "5")


def test_unlinked_first_in_declaration_order_then_ready_sources_then_sinks() -> None:
    # "p" takes part in no internal connection: first. "b" is a pure sink: last.
    names = ("b", "a", "p")
    order = topological_order(names, (InternalConnect("a", LayerOutput, "b", LayerInput),))
    assert order == ("p", "a", "b")


def test_successors_are_listed_once() -> None:
    topo = ComposeTopology(*metann_case_6())
    assert topo.successors("2") == ("3", "4")
    assert topo.successors("5") == ()


def test_empty() -> None:
    with pytest.raises(TopologyError, match=r"Sublayer is empty"):
        ComposeTopology(InConnect(LayerInput, "a", LayerInput))


def test_duplicate_sublayer_names() -> None:
    with pytest.raises(TopologyError, match=r"Two or more sublayers have same tag: 'a'"):
        ComposeTopology(
            Sublayer("a", SigmoidLayer),
            Sublayer("a", AddLayer),
            InConnect(LayerInput, "a", LayerInput),
        )


def test_input_fed_twice() -> None:
    with pytest.raises(
        TopologyError,
        match=r"(?s)One input corresponds to two or more sources: input LayerInput of "
        r"sublayer 'b'.*second +: InternalConnect\('a', LayerOutput, 'b', LayerInput\)",
    ):
        ComposeTopology(
            Sublayer("a", SigmoidLayer),
            Sublayer("b", SigmoidLayer),
            InConnect(LayerInput, "a", LayerInput),
            InConnect(LayerInput, "b", LayerInput),
            edge("a", "b"),
            OutConnect("b", LayerOutput, LayerOutput),
        )


def test_output_fed_twice() -> None:
    with pytest.raises(
        TopologyError,
        match=r"One output corresponds to two or more sources: composite output "
        r"LayerOutput",
    ):
        ComposeTopology(
            Sublayer("a", SigmoidLayer),
            Sublayer("b", SigmoidLayer),
            InConnect(LayerInput, "a", LayerInput),
            edge("a", "b"),
            OutConnect("a", LayerOutput, LayerOutput),
            OutConnect("b", LayerOutput, LayerOutput),
        )


def test_internal_connection_to_unknown_sublayer() -> None:
    with pytest.raises(
        TopologyError,
        match=r"(?s)Internal connections have tags are not sublayer tags: 'c'.*"
        r"clause.*InternalConnect\('a', LayerOutput, 'c', LayerInput\).*declared sublayers : "
        r"'a', 'b'",
    ):
        ComposeTopology(
            Sublayer("a", SigmoidLayer),
            Sublayer("b", SigmoidLayer),
            InConnect(LayerInput, "a", LayerInput),
            edge("a", "c"),
        )


def test_input_connection_to_unknown_sublayer() -> None:
    with pytest.raises(TopologyError, match=r"One or more input tags are not sublayer tags: 'x'"):
        ComposeTopology(Sublayer("a", SigmoidLayer), InConnect(LayerInput, "x", LayerInput))


def test_output_connection_from_unknown_sublayer() -> None:
    with pytest.raises(TopologyError, match=r"One or more output tags are not sublayer tags: 'y'"):
        ComposeTopology(
            Sublayer("a", SigmoidLayer),
            InConnect(LayerInput, "a", LayerInput),
            OutConnect("y", LayerOutput, LayerOutput),
        )


def test_sublayer_in_no_connection_says_what_is_connected() -> None:
    with pytest.raises(
        TopologyError,
        match=r"(?s)One ore more sublayer tags not belong to any connection containers: 'lost'"
        r".*connected +: 'a'",
    ):
        ComposeTopology(
            Sublayer("a", SigmoidLayer),
            Sublayer("lost", SigmoidLayer),
            InConnect(LayerInput, "a", LayerInput),
            OutConnect("a", LayerOutput, LayerOutput),
        )


def test_cycle_says_what_was_ordered() -> None:
    with pytest.raises(
        TopologyError,
        match=r"(?s)Cycle exist in the compose layer.*ordered +: 'in', 'src'.*in a cycle +: "
        r"'a', 'b'",
    ):
        ComposeTopology(
            Sublayer("in", SigmoidLayer),
            Sublayer("src", SigmoidLayer),
            Sublayer("a", AddLayer),
            Sublayer("b", SigmoidLayer),
            InConnect(LayerInput, "in", LayerInput),
            InConnect(LayerInput, "src", LayerInput),
            edge("src", "a", LeftOperand),
            edge("a", "b"),
            edge("b", "a", RightOperand),
            OutConnect("b", LayerOutput, LayerOutput),
            OutConnect("in", LayerOutput, LeftOperand),
        )


def test_not_a_clause() -> None:
    with pytest.raises(TopologyError, match=r"'a' is not a clause"):
        ComposeTopology(Sublayer("a", SigmoidLayer), "a")  # type: ignore[arg-type]  # on purpose


def test_port_the_sublayer_does_not_have() -> None:
    with pytest.raises(
        TopologyError,
        match=r"(?s)sublayer 'a' \(SigmoidLayer\) has no input port LeftOperand.*"
        r"input ports : LayerInput",
    ):
        ComposeTopology(Sublayer("a", SigmoidLayer), InConnect(LayerInput, "a", LeftOperand))
    with pytest.raises(TopologyError, match=r"sublayer 'p' \(ParamSourceLayer\) has no output "):
        ComposeTopology(
            Sublayer("p", ParamSourceLayer),
            Sublayer("a", AddLayer),
            InConnect(LayerInput, "a", LeftOperand),
            InternalConnect("p", LayerInput, "a", RightOperand),
        )


def test_input_port_fed_by_nothing_says_what_was_reachable() -> None:
    with pytest.raises(
        TopologyError,
        match=r"(?s)Graph disconnected: input RightOperand of sublayer 'add' is fed by no "
        r"connection.*reachable : 'act'\n",
    ):
        ComposeTopology(
            Sublayer("act", SigmoidLayer),
            Sublayer("add", AddLayer),
            Sublayer("other", SigmoidLayer),
            InConnect(LayerInput, "act", LayerInput),
            edge("act", "add", LeftOperand),
            edge("add", "other"),
            OutConnect("other", LayerOutput, LayerOutput),
        )
