"""``ComposeTopology``: the wiring of a composite layer, checked and sorted once (METANN.md §3.3).

A composite layer declares its sublayers and four kinds of clause, in any order::

    ComposeTopology(
        Sublayer("weight", ParamSourceLayer),
        Sublayer("dot", DotLayer),
        InConnect(LayerInput, "dot", LeftOperand),                 # composite input -> sublayer
        InternalConnect("weight", LayerOutput, "dot", RightOperand),  # sublayer -> sublayer
        OutConnect("dot", LayerOutput, LayerOutput),               # sublayer -> composite output
    )

Building it runs MetaNN's nine checks (empty, duplicate names, an input fed twice, an output
fed twice, connections naming unknown sublayers, a sublayer in no connection, a cycle), plus
ports a sublayer does not have and sublayer inputs fed by nothing; each is a
:class:`~typed_nn.errors.TopologyError` naming the clause, and for cycles and disconnection
what *was* reachable. ``order`` is MetaNN's topological order, computed here once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from ..errors import TopologyError, message
from ..ops.node import format_site, user_site
from .keys import LayerInput, LayerOutput
from .var_type_dict import key_name

__all__ = [
    "ComposeTopology",
    "InConnect",
    "InternalConnect",
    "OutConnect",
    "Sublayer",
    "param_op_topology",
    "topological_order",
]


class _Connect:
    """A connection: shown as ``Name('sublayer', Port, ...)``, its fields in order."""

    def __str__(self) -> str:
        # Sublayer names (str fields) as repr, ports by name; each subclass is a dataclass.
        shown = [
            repr(getattr(self, f.name)) if f.type == "str" else key_name(getattr(self, f.name))
            for f in fields(self)  # type: ignore[arg-type]
        ]
        return f"{type(self).__name__}({', '.join(shown)})"


@dataclass(frozen=True)
class Sublayer:
    """A sublayer: its ``name`` in the topology and its layer template (``AddLayer``, ...)."""

    name: str
    layer: type[Any]

    def __post_init__(self) -> None:
        name: object = self.name  # callers without a type checker may pass anything
        layer: object = self.layer
        problem = (
            "its name must be a non-empty str without '/' (a parameter path's separator)"
            if not isinstance(name, str) or not name or "/" in name
            else "its layer must be a layer template (a class, such as AddLayer)"
            if not isinstance(layer, type)
            else None
        )
        if problem is not None:
            shown = getattr(self.layer, "__name__", repr(self.layer))
            raise TopologyError(
                message(
                    f"cannot declare Sublayer({self.name!r}, {shown}): {problem}.",
                    [("name", repr(self.name)), ("layer", repr(self.layer))],
                    built_at=format_site(user_site()),
                    hint='e.g. Sublayer("fc1", LinearLayer).',
                )
            )

    def __str__(self) -> str:
        return f"Sublayer({self.name!r}, {getattr(self.layer, '__name__', self.layer)})"


@dataclass(frozen=True)
class InConnect(_Connect):
    """Composite input port ``in_port`` feeds ``sublayer``'s input port ``sublayer_port``."""

    in_port: type
    sublayer: str
    sublayer_port: type


@dataclass(frozen=True)
class InternalConnect(_Connect):
    """Output ``from_port`` of ``from_sublayer`` feeds input ``to_port`` of ``to_sublayer``."""

    from_sublayer: str
    from_port: type
    to_sublayer: str
    to_port: type


@dataclass(frozen=True)
class OutConnect(_Connect):
    """Output ``sublayer_port`` of ``sublayer`` is the composite output ``out_port``."""

    sublayer: str
    sublayer_port: type
    out_port: type


Clause = Sublayer | InConnect | InternalConnect | OutConnect


def _error(headline: str, items: list[tuple[str, str]], hint: str) -> TopologyError:
    return TopologyError(message(headline, items, built_at=format_site(user_site()), hint=hint))


def _names(names: Iterable[str]) -> str:
    shown = ", ".join(repr(n) for n in names)
    return shown or "(none)"


def topological_order(
    names: tuple[str, ...], edges: tuple[InternalConnect, ...]
) -> tuple[str, ...]:
    """MetaNN's ``TopologicalOrdering_``: the sublayer order for forward (reverse: backward).

    1. Sublayers in no internal connection go first, in declaration order.
    2. While connections remain: walk them in clause order; a connection whose source is not
       a target of any remaining connection has a ready source, recorded once in order of
       first appearance, and is dropped. No connection dropped: a cycle (TopologyError).
    3. The remaining sublayers (pure sinks) follow in declaration order.

    Example: declared ``2, 1, 5, 3, 4`` with edges 2→3, 1→2, 2→4, 3→5, 4→5 gives
    ``1, 2, 3, 4, 5``.
    """
    linked = {e.from_sublayer for e in edges} | {e.to_sublayer for e in edges}
    ordered = [n for n in names if n not in linked]
    unordered = [n for n in names if n in linked]
    remaining = list(edges)
    while remaining:
        targets = {e.to_sublayer for e in remaining}
        ready: list[str] = []
        kept: list[InternalConnect] = []
        for edge in remaining:
            if edge.from_sublayer in targets:
                kept.append(edge)
            elif edge.from_sublayer not in ready:
                ready.append(edge.from_sublayer)
        if len(kept) == len(remaining):
            raise _error(
                "Cycle exist in the compose layer: no sublayer of the remaining connections "
                "is ready.",
                [
                    ("ordered", _names(ordered)),
                    ("in a cycle", _names(dict.fromkeys(e.from_sublayer for e in kept))),
                    ("connections", "; ".join(str(e) for e in kept)),
                ],
                "a sublayer may not feed (directly or through others) one of its own inputs; "
                "unroll the loop (RecurrentLayer feeds a step kernel its Previous output).",
            )
        remaining = kept
        ordered.extend(ready)
        unordered = [n for n in unordered if n not in ready]
    return (*ordered, *unordered)


class ComposeTopology:
    """The checked wiring of a composite layer.

    Args:
        *clauses: ``Sublayer``, ``InConnect``, ``InternalConnect`` and ``OutConnect`` clauses
            in any order.

    Attributes:
        sublayers: name -> layer template, in declaration order.
        in_connects, internal_connects, out_connects: the clauses of each kind, in order.
        order: the sublayer names in MetaNN's topological order.
        outgoing, incoming: sublayer name -> its InternalConnect clauses from / to it.
        fed_by_inputs: sublayer name -> the InConnect clauses that feed it.

    Raises:
        TopologyError: any of MetaNN's nine conditions, an unknown clause, a port a sublayer
            does not have, or a sublayer input that nothing feeds.
    """

    def __init__(self, *clauses: Clause) -> None:
        for clause in clauses:
            if not isinstance(clause, Sublayer | InConnect | InternalConnect | OutConnect):
                raise _error(
                    f"cannot build ComposeTopology: {clause!r} is not a clause.",
                    [("received", f"{clause!r} ({type(clause).__name__})")],
                    "use Sublayer, InConnect, InternalConnect and OutConnect clauses.",
                )
        subs = [c for c in clauses if isinstance(c, Sublayer)]
        self.in_connects = tuple(c for c in clauses if isinstance(c, InConnect))
        self.internal_connects = tuple(c for c in clauses if isinstance(c, InternalConnect))
        self.out_connects = tuple(c for c in clauses if isinstance(c, OutConnect))
        self.sublayers: dict[str, type[Any]] = {}
        self._check_sublayers(subs)
        self._check_unique()
        self._check_names()
        self._check_ports()
        self.order = topological_order(tuple(self.sublayers), self.internal_connects)
        # Per-sublayer views, so forward and backward do not scan every clause per sublayer.
        self.outgoing = {
            n: tuple(e for e in self.internal_connects if e.from_sublayer == n)
            for n in self.sublayers
        }
        self.incoming = {
            n: tuple(e for e in self.internal_connects if e.to_sublayer == n)
            for n in self.sublayers
        }
        self.fed_by_inputs = {
            n: tuple(i for i in self.in_connects if i.sublayer == n) for n in self.sublayers
        }

    # --- MetaNN's checks 1, 2 ----------------------------------------------------------
    def _check_sublayers(self, subs: list[Sublayer]) -> None:
        if not subs:
            raise _error(
                "Sublayer is empty: the topology declares no Sublayer clause.",
                [("clauses", str(len(self.connections())))],
                'declare at least one: Sublayer("name", AddLayer).',
            )
        for sub in subs:
            if sub.name in self.sublayers:
                raise _error(
                    f"Two or more sublayers have same tag: {sub.name!r}.",
                    [
                        ("first", str(Sublayer(sub.name, self.sublayers[sub.name]))),
                        ("second", str(sub)),
                    ],
                    "give each sublayer its own name.",
                )
            self.sublayers[sub.name] = sub.layer

    # --- 3, 4 ---------------------------------------------------------------------------
    def _check_unique(self) -> None:
        fed: dict[tuple[str, type], InConnect | InternalConnect] = {}
        dests: list[tuple[tuple[str, type], InConnect | InternalConnect]] = [
            ((c.sublayer, c.sublayer_port), c) for c in self.in_connects
        ]
        dests += [((e.to_sublayer, e.to_port), e) for e in self.internal_connects]
        for dest, c in dests:
            if dest in fed:
                raise _error(
                    "One input corresponds to two or more sources: input "
                    f"{key_name(dest[1])} of sublayer {dest[0]!r} is fed twice.",
                    [("first", str(fed[dest])), ("second", str(c))],
                    "feed each sublayer input from one place; add the values with an "
                    "AddLayer sublayer first.",
                )
            fed[dest] = c
        outs: dict[type, OutConnect] = {}
        for o in self.out_connects:
            if o.out_port in outs:
                raise _error(
                    "One output corresponds to two or more sources: composite output "
                    f"{key_name(o.out_port)} is fed twice.",
                    [("first", str(outs[o.out_port])), ("second", str(o))],
                    "connect each composite output port once.",
                )
            outs[o.out_port] = o

    # --- 5, 6, 7, 8 ---------------------------------------------------------------------
    def _check_names(self) -> None:
        known = set(self.sublayers)
        declared = ("declared sublayers", _names(self.sublayers))
        hint = "name a declared sublayer (names are case-sensitive)."
        for e in self.internal_connects:
            if {e.from_sublayer, e.to_sublayer} - known:
                raise _error(
                    "Internal connections have tags are not sublayer tags: "
                    f"{_names(sorted({e.from_sublayer, e.to_sublayer} - known))}.",
                    [("clause", str(e)), declared],
                    hint,
                )
        ends: tuple[tuple[str, tuple[InConnect | OutConnect, ...]], ...] = (
            ("input", self.in_connects),
            ("output", self.out_connects),
        )
        for kind, clauses in ends:
            for c in clauses:
                if c.sublayer not in known:
                    raise _error(
                        f"One or more {kind} tags are not sublayer tags: {c.sublayer!r}.",
                        [("clause", str(c)), declared],
                        hint,
                    )
        used = {i.sublayer for i in self.in_connects} | {o.sublayer for o in self.out_connects}
        used |= {e.from_sublayer for e in self.internal_connects}
        used |= {e.to_sublayer for e in self.internal_connects}
        unused = [n for n in self.sublayers if n not in used]
        if unused:
            raise _error(
                "One ore more sublayer tags not belong to any connection containers: "
                f"{_names(unused)}.",
                [
                    ("disconnected", _names(unused)),
                    ("connected", _names(n for n in self.sublayers if n in used)),
                ],
                "connect every sublayer (InConnect, InternalConnect or OutConnect), or remove it.",
            )

    # --- ports: what MetaNN's compiler finds when it fills the sublayers' containers -----
    def _check_ports(self) -> None:
        def check(name: str, port: type, side: str, clause: object) -> None:
            layer = self.sublayers[name]
            if getattr(layer, "ports_from_policies", False):
                return  # e.g. RecurrentLayer: its ports are its kernel's, known when configured
            ports: tuple[type, ...] = getattr(layer, f"{side}_ports", ())
            if port not in ports:
                raise _error(
                    f"sublayer {name!r} ({layer.__name__}) has no {side} port {key_name(port)}.",
                    [
                        ("clause", str(clause)),
                        (f"{side} ports", ", ".join(key_name(p) for p in ports) or "(none)"),
                    ],
                    f"connect one of {layer.__name__}'s {side} ports.",
                )

        for i in self.in_connects:
            check(i.sublayer, i.sublayer_port, "input", i)
        for e in self.internal_connects:
            check(e.from_sublayer, e.from_port, "output", e)
            check(e.to_sublayer, e.to_port, "input", e)
        for o in self.out_connects:
            check(o.sublayer, o.sublayer_port, "output", o)
        fed = {(i.sublayer, i.sublayer_port) for i in self.in_connects}
        fed |= {(e.to_sublayer, e.to_port) for e in self.internal_connects}
        for name, layer in self.sublayers.items():
            if getattr(layer, "ports_from_policies", False):
                continue
            for port in getattr(layer, "input_ports", ()):
                if (name, port) not in fed:
                    raise _error(
                        f"Graph disconnected: input {key_name(port)} of sublayer {name!r} is "
                        "fed by no connection.",
                        [
                            ("sublayer", str(Sublayer(name, layer))),
                            ("reachable", _names(self._reachable())),
                        ],
                        f"feed it: InConnect(<composite input>, {name!r}, {key_name(port)}) "
                        f"or InternalConnect(<sublayer>, LayerOutput, {name!r}, "
                        f"{key_name(port)}).",
                    )

    def _reachable(self) -> list[str]:
        """Sublayers that can run: every input fed by a composite input or by one that can."""
        sources: dict[tuple[str, type], str | None] = {
            (i.sublayer, i.sublayer_port): None for i in self.in_connects
        }
        sources.update(
            {(e.to_sublayer, e.to_port): e.from_sublayer for e in self.internal_connects}
        )
        done: list[str] = []
        progress = True
        while progress:
            progress = False
            for name, layer in self.sublayers.items():
                feeds = [sources.get((name, p), "") for p in getattr(layer, "input_ports", ())]
                if name not in done and all(f is None or f in done for f in feeds):
                    done.append(name)
                    progress = True
        return [n for n in self.sublayers if n in done]

    def connections(self) -> tuple[InConnect | InternalConnect | OutConnect, ...]:
        """Every connection clause: inputs, internal, outputs."""
        return (*self.in_connects, *self.internal_connects, *self.out_connects)

    def successors(self, name: str) -> tuple[str, ...]:
        """The sublayers ``name`` feeds directly (through InternalConnect), without repeats."""
        return tuple(dict.fromkeys(e.to_sublayer for e in self.outgoing[name]))

    def __repr__(self) -> str:
        return f"ComposeTopology({', '.join(self.order)})"


def param_op_topology(
    op: str,
    layer: type[Any],
    params: Iterable[tuple[str, type[Any], type]],
    inputs: Iterable[tuple[type, type]] = ((LayerInput, LayerInput),),
    outputs: Iterable[tuple[type, type]] = ((LayerOutput, LayerOutput),),
) -> ComposeTopology:
    """The topology of a parameter composite: one op sublayer ``op`` (template ``layer``) fed
    by the parameter sublayers ``params`` (name, source template, op port they feed), and by
    the composite's ``inputs`` (composite port, op port); ``outputs`` (op port, composite
    port) are the composite's outputs. The clauses come in that order: parameters first."""
    params = tuple(params)
    return ComposeTopology(
        *(Sublayer(name, source) for name, source, _ in params),
        Sublayer(op, layer),
        *(InConnect(port, op, op_port) for port, op_port in inputs),
        *(InternalConnect(name, LayerOutput, op, op_port) for name, _, op_port in params),
        *(OutConnect(op, op_port, port) for op_port, port in outputs),
    )
