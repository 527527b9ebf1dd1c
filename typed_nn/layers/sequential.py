"""``Sequential`` and ``residual``: composites wired without writing a topology.

``Sequential`` chains sublayers that each take ``LayerInput`` and give ``LayerOutput``::

    class Block(Sequential[Dim2, Dim2]):
        chain = (("fc1", LinearLayer), ("act", ReLULayer), ("fc2", LinearLayer))

is the composite whose topology is ``InConnect(LayerInput, "fc1", LayerInput)``, ``fc1 → act →
fc2`` by ``InternalConnect``s and ``OutConnect("fc2", LayerOutput, LayerOutput)``: configured,
named, initialised and differentiated like any ``ComposeKernel`` (MetaNN's policy rules, the
backward the vjp of the forward). ``Block("blk", {"fc1": (4, 8), "fc2":
(8, 4)})`` gives the sublayers' constructor arguments by name.

``residual(Body)`` is the template of ``x + Body(x)``: sublayers ``body`` (named as the
residual layer itself, so its parameters are ``res/fc1/weight``, ...) and ``add``;
``residual(Block)("res", {"fc1": ...})`` passes the arguments after the name to the body.

Static types: the type arguments of ``Sequential[DIn, DOut]`` are the input and output ranks
(``ComposeKernel``'s rule: float data of rank ``DIn`` gives outputs of rank ``DOut``, same
element and device); ``residual(Body)`` keeps the body's rank: ``residual(Block)`` is a
``Residual[Dim2]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, ClassVar, overload

from ..errors import LayerError, message
from ..ops.node import format_site, user_site
from ..shape import deprecated
from .binary_layers import AddLayer
from .compose import ComposeKernel, DIn, DOut
from .declared import Decl
from .keys import LayerInput, LayerOutput, LeftOperand, RightOperand
from .protocol import Layer
from .topology import ComposeTopology, InConnect, InternalConnect, OutConnect, Sublayer

__all__ = ["Residual", "Sequential", "residual"]

ChainItem = Sublayer | tuple[str, type[Layer[Any, Any]]]
SublayerArguments = Mapping[str, Sequence[object]]


def _error(headline: str, items: list[tuple[str, str]], hint: str) -> LayerError:
    return LayerError(message(headline, items, built_at=format_site(user_site()), hint=hint))


def chain_topology(owner: str, chain: Sequence[ChainItem]) -> ComposeTopology:
    """The topology of sublayers fed one into the next, ``LayerInput`` → ``LayerOutput``."""
    subs: list[Sublayer] = []
    for item in chain:
        given: object = item  # callers without a type checker may pass anything
        if isinstance(given, tuple) and len(given) == 2 and isinstance(given[0], str):
            given = Sublayer(given[0], given[1])
        if not isinstance(given, Sublayer):
            raise _error(
                f"cannot declare {owner}: {item!r} is not a sublayer of the chain.",
                [("received", f"{item!r} ({type(item).__name__})")],
                'give ("name", LayerTemplate) pairs or Sublayer("name", LayerTemplate).',
            )
        subs.append(given)
    if not subs:
        raise _error(
            f"cannot declare {owner}: the chain is empty.",
            [("chain", "()")],
            'give at least one sublayer: chain = (("fc", LinearLayer),).',
        )
    links = [InternalConnect(a.name, LayerOutput, b.name, LayerInput) for a, b in pairwise(subs)]
    return ComposeTopology(
        *subs,
        InConnect(LayerInput, subs[0].name, LayerInput),
        *links,
        OutConnect(subs[-1].name, LayerOutput, LayerOutput),
    )


def _arguments(layer: ComposeKernel[Any, Any], given: SublayerArguments | None) -> Any:
    args = layer.create_sublayers()
    for sub, values in (given or {}).items():
        args.set(sub, *values)
    return args


class Sequential(ComposeKernel[LayerInput, LayerOutput, DIn, DOut, Decl]):
    """Sublayers fed one into the next: set ``chain`` (``("name", Template)`` pairs, or
    ``Sublayer`` clauses) in a subclass. ``Sequential[DIn, DOut]``: input and output ranks.

    ``Block(name, {"fc1": (4, 8), ...})``: each sublayer's constructor arguments after its name
    (a sublayer not given is built from its name alone).
    """

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    chain: ClassVar[Sequence[ChainItem]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        chain = cls.__dict__.get("chain")
        if chain is not None and "topology" not in cls.__dict__:
            cls.topology = chain_topology(cls.__name__, chain)
        super().__init_subclass__(**kwargs)  # checks the ports of the topology set here

    def __init__(self, name: str, sublayers: SublayerArguments | None = None) -> None:
        super().__init__(name, _arguments(self, sublayers))


class Residual(ComposeKernel[LayerInput, LayerOutput, DIn, DIn, Decl]):
    """``x + body(x)``; made by :func:`residual`. ``Residual[D]``: input and output rank ``D``.

    ``residual(Body)(name, *body_args)``: the body is built as ``Body(name, *body_args)``.
    """

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    body: ClassVar[type[Layer[Any, Any]]]

    def __init__(self, name: str, *body_args: object) -> None:
        args = self.create_sublayers().set("body", *body_args, name=name)
        super().__init__(name, args)


_RESIDUALS: dict[type, type[Residual[Any]]] = {}


@overload
def residual(
    body: type[ComposeKernel[LayerInput, LayerOutput, DIn, DIn]],
) -> type[Residual[DIn]]: ...
@overload
@deprecated("residual's body must keep its input's rank (x + body(x)); this body changes it")
def residual(
    body: type[ComposeKernel[LayerInput, LayerOutput, DIn, DOut]],
) -> type[Residual[Any]]: ...
@overload
def residual(body: type[Layer[LayerInput, LayerOutput]]) -> type[Residual[Any]]: ...
def residual(body: type[Layer[Any, Any]]) -> type[Residual[Any]]:
    """The template of ``x + body(x)`` (one class per body template).

    Raises:
        LayerError: ``body`` is not a layer template taking ``LayerInput`` and giving
            ``LayerOutput``.
    """
    given: object = body
    if not (isinstance(given, type) and issubclass(given, Layer)) or given.configured:
        raise _error(
            f"cannot make a residual of {given!r}: it is not a layer template.",
            [("received", f"{given!r} ({type(given).__name__})")],
            "pass a template such as a Sequential subclass (a configured class's .template).",
        )
    if tuple(body.input_ports) != (LayerInput,) or tuple(body.output_ports) != (LayerOutput,):
        raise _error(
            f"cannot make a residual of {body.__name__}: x + body(x) needs one input "
            "LayerInput and one output LayerOutput.",
            [
                ("input ports", ", ".join(p.__name__ for p in body.input_ports) or "(none)"),
                ("output ports", ", ".join(p.__name__ for p in body.output_ports) or "(none)"),
            ],
            "wrap a LayerInput → LayerOutput layer (a Sequential, a LinearLayer, ...).",
        )
    cached = _RESIDUALS.get(body)
    if cached is None:
        topology = ComposeTopology(
            Sublayer("body", body),
            Sublayer("add", AddLayer),
            InConnect(LayerInput, "body", LayerInput),
            InConnect(LayerInput, "add", LeftOperand),
            InternalConnect("body", LayerOutput, "add", RightOperand),
            OutConnect("add", LayerOutput, LayerOutput),
        )
        attrs = {"topology": topology, "body": body, "__module__": Residual.__module__}
        cached = _RESIDUALS[body] = type(f"Residual_{body.__name__}", (Residual,), attrs)
    return cached
