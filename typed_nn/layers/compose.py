"""``ComposeKernel``: a layer built from sublayers wired by a ``ComposeTopology`` (METANN.md §3.3).

A composite template subclasses :class:`ComposeKernel` and declares its ports and topology::

    class BiasLayer(ComposeKernel[LayerInput, LayerOutput]):
        input_ports = (LayerInput,)
        output_ports = (LayerOutput,)
        topology = ComposeTopology(Sublayer("param", ParamSourceLayer), Sublayer("add", AddLayer),
                                   InConnect(LayerInput, "add", LeftOperand), ...)

        def __init__(self, name: str, *shape: int) -> None:
            super().__init__(name, self.create_sublayers().set("param", *shape))

Configuring it (``make_train_layer`` / ``make_infer_layer``) configures every sublayer, in
topological order, with MetaNN's policy rules:

(a) a sublayer takes ``sub_policies(policies, name)``: its ``SubPolicyContainer`` wins, the
    parent's plain policies are inherited (then the class's ``sublayer_policies`` defaults);
(b) when the composite feeds back, every sublayer fed by a composite input gets
    ``PFeedbackOutput``;
(c) every direct successor of a sublayer that updates or feeds back gets ``PFeedbackOutput``
    (the walk is in topological order, so this propagates).

A training composite infers its sublayers' input maps: composite inputs keep their declared
types, internal connections take the upstream sublayer's ``output_types()``. ``is_update`` is
true when any sublayer updates. Forward runs the sublayers in order; backward is one
``tn.vjp`` of that whole forward (``derived.py``): the gradients of MetaNN's reverse walk over
the sublayers (summed where one output feeds several inputs), as one graph. ``init``, ``save_weights``, ``grad_collect`` and
``neutral_invariant`` go to every sublayer in order. Sublayers are named
``"<composite name>/<sublayer name>"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from ..data.tensor import AnyTensor, TensorLike
from ..errors import LayerError, TopologyError, TypedNNError, message
from ..ops.node import format_site, user_site
from ..policies import (
    AnyPolicyObject,
    GradPolicy,
    PFeedbackOutput,
    PolicyContainer,
    change_policy,
    policy_select,
    sub_policies,
)
from ..tags import CPU, FE, DimTag, Dv
from .declared import TYPE_DEFAULTS, Decl
from .in_map import LayerInMap, tensor_type
from .interface import (
    layer_grad_collect,
    layer_init,
    layer_neutral_invariant,
    layer_save_weights,
)
from .keys import LayerOutput
from .model_protocols import GradCollectorLike, InitializerLike, LoadBufferLike, SaverLike
from .protocol import Layer, Values, make_infer_layer, make_train_layer
from .source_layers import ParamSourceLayer, ValueSourceLayer
from .topology import ComposeTopology
from .var_type_dict import VarValues, key_name

__all__ = [
    "DIn",
    "DOut",
    "ComposeKernel",
    "LayerInstance",
    "SublayerArgs",
    "as_instance",
    "layer_output_types",
]

KIn = TypeVar("KIn")
KOut = TypeVar("KOut")
if TYPE_CHECKING:
    # PEP 696 defaults, for the checkers only (typing_extensions is not a dependency): a
    # composite declared ``ComposeKernel[In, Out]`` has inputs and outputs of any rank.
    from typing_extensions import TypeVar as DefaultTypeVar

    DIn = DefaultTypeVar("DIn", bound=DimTag, default=Any)
    DOut = DefaultTypeVar("DOut", bound=DimTag, default=Any)
else:
    DIn = TypeVar("DIn", bound=DimTag)
    DOut = TypeVar("DOut", bound=DimTag)
TYPE_DEFAULTS.update({DIn: Any, DOut: Any})
AnyLayer = Layer[Any, Any]


@runtime_checkable
class LayerInstance(Protocol):
    """What a composite needs of a sublayer instance: its containers and the two passes."""

    name: str

    @property
    def output_ports(self) -> tuple[type, ...]: ...
    def input_cont(self) -> Values: ...
    def output_cont(self) -> Values: ...
    def feed_forward(self, inputs: Any, /) -> Any: ...
    def feed_backward(self, grads: Any, /) -> Any: ...


def as_instance(layer: object, owner: str) -> LayerInstance:
    """``layer``, checked to have what a composite calls; LayerError naming ``owner`` if not."""
    if not isinstance(layer, LayerInstance):
        missing = [
            m
            for m in ("input_cont", "output_cont", "feed_forward", "feed_backward")
            if not hasattr(layer, m)
        ]
        raise _error(
            f"cannot use {layer!r} as a sublayer of '{owner}': it lacks {', '.join(missing)}.",
            [("sublayer", f"{layer!r} ({type(layer).__name__})")],
            "a sublayer template defines feed_forward and feed_backward (see AddLayer).",
        )
    return layer


def _error(headline: str, items: list[tuple[str, str]], hint: str) -> LayerError:
    return LayerError(message(headline, items, built_at=format_site(user_site()), hint=hint))


def layer_output_types(
    layer: type[AnyLayer], input_types: Mapping[type, object] | None = None
) -> dict[type, object]:
    """The output types of a configured layer class, source layers included (their output is
    their parameter or value, known from the policies without an instance)."""
    if issubclass(layer, ParamSourceLayer):
        if layer.rank is None:
            raise _error(
                f"cannot infer the output type of {layer.__name__}: its parameter type has "
                "no rank.",
                [("policies", repr(layer.policies))],
                "declare the rank: PParamTypeIs(tn.Matrix) or PParamTypeIs(tn.Vector).",
            )
        return {LayerOutput: tensor_type(layer.elem, layer.device, layer.rank)}
    if issubclass(layer, ValueSourceLayer):
        kind = layer.value_type
        return {LayerOutput: kind if kind in (int, float) else tensor_type(kind, CPU, 0)}
    return layer.output_types(input_types)


class SublayerArgs:
    """Constructor arguments of a composite's sublayers (MetaNN ``CreateSublayers().Set<N>``).

    ``composite.create_sublayers().set("weight", 784, 128).set("bias", 128)``; a sublayer
    not set is built from its name alone. ``name=`` overrides the sublayer's layer name
    (default ``"<composite>/<sublayer>"``).
    """

    def __init__(self, composite: type[ComposeKernel[Any, Any]]) -> None:
        self._composite = composite
        self.args: dict[str, tuple[tuple[object, ...], str | None]] = {}

    def set(self, sublayer: str, *args: object, name: str | None = None) -> SublayerArgs:
        """Record ``sublayer``'s constructor arguments (after its name); returns ``self``."""
        known = self._composite.topology.sublayers
        if sublayer not in known:
            raise _error(
                f"cannot set the arguments of sublayer {sublayer!r}: "
                f"{self._composite.__name__} has no such sublayer.",
                [("sublayers", ", ".join(repr(n) for n in known))],
                "use a sublayer name from the composite's topology.",
            )
        self.args[sublayer] = (args, name)
        return self


class ComposeKernel(Layer[KIn, KOut, Decl], Generic[KIn, KOut, DIn, DOut, Decl]):
    """Base of composite layers: set ``input_ports``, ``output_ports`` and ``topology``.

    ``ComposeKernel[In, Out, DIn, DOut, Decl]``: input ports ``In``, output ports ``Out``,
    ``Decl`` as for every layer (``declared.py``); the type
    arguments ``DIn`` / ``DOut`` (rank tags, default: any rank) type ``feed_forward`` with no
    override: data ``TensorLike[FE, Dv, DIn]`` gives outputs ``TensorLike[FE, Dv, DOut]`` of the
    inputs' element and device (a composite that changes them declares its own
    ``feed_forward``), and ``feed_backward`` the reverse.

    Class attributes of a configured composite: ``sublayer_classes`` (name -> configured
    class), and everything a layer has. Instance attribute ``sublayers``: name -> layer.
    """

    topology: ClassVar[ComposeTopology]
    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {}
    """Defaults per sublayer, used when neither the sublayer's nor the parent's policies set
    the same (major, minor), e.g. ``{"weight": (PParamTypeIs(tn.Matrix),)}``."""
    sublayer_classes: ClassVar[dict[str, type[AnyLayer]]] = {}
    _output_types: ClassVar[dict[type, object] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        topology = cls.__dict__.get("topology")
        if isinstance(topology, ComposeTopology):
            cls._check_ports(topology)

    @classmethod
    def _check_ports(cls, topology: ComposeTopology) -> None:
        """Composite ports: every input used, every output fed, no foreign port."""
        used = {i.in_port for i in topology.in_connects}
        fed = {o.out_port for o in topology.out_connects}
        for what, ports, got in (
            ("input", cls.input_ports, used),
            ("output", cls.output_ports, fed),
        ):
            extra, missing = got - set(ports), set(ports) - got
            if extra or missing:
                names = ", ".join(key_name(p) for p in (*extra, *missing))
                problem = "is not a port of" if extra else "is not connected in"
                raise TopologyError(
                    message(
                        f"cannot declare {cls.__name__}: composite {what} {names} {problem} "
                        "the composite.",
                        [
                            (f"{what} ports", ", ".join(key_name(p) for p in ports) or "(none)"),
                            ("connections", "; ".join(str(c) for c in topology.connections())),
                        ],
                        built_at=format_site(user_site()),
                        hint=f"connect exactly the composite's {what} ports "
                        f"({'InConnect' if what == 'input' else 'OutConnect'}).",
                    )
                )

    # --- configuration: MetaNN's SublayerInstantiation_ ---------------------------------
    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        topology = cls.topology
        cls.is_feedback_output = policy_select(GradPolicy, policies).is_feedback_output
        train = cls.input_map is not None
        final = {name: cls._policies_of(policies, name) for name in topology.sublayers}
        if cls.is_feedback_output:  # (b)
            for i in topology.in_connects:
                final[i.sublayer] = change_policy(PFeedbackOutput, final[i.sublayer])
        types: dict[tuple[str, type], object] = {}
        if cls.input_map is not None:
            for i in topology.in_connects:
                types[(i.sublayer, i.sublayer_port)] = cls.input_map[i.in_port]
        classes: dict[str, type[AnyLayer]] = {}
        for name in topology.order:
            sub = classes[name] = cls._configure_sublayer(
                name, final[name], types if train else None
            )
            if sub.is_feedback_output or sub.is_update:  # (c)
                for succ in topology.successors(name):
                    final[succ] = change_policy(PFeedbackOutput, final[succ])
            if train:
                outs = layer_output_types(sub)
                for e in topology.internal_connects:
                    if e.from_sublayer == name:
                        types[(e.to_sublayer, e.to_port)] = outs[e.from_port]
        cls.sublayer_classes = classes
        cls.is_update = any(c.is_update for c in classes.values())
        cls.no_grad_ports = tuple(
            p
            for p in cls.input_ports
            if all(
                i.sublayer_port in classes[i.sublayer].no_grad_ports
                for i in topology.in_connects
                if i.in_port is p
            )
        )
        cls._output_types = None
        if train:
            cls._output_types = {
                o.out_port: layer_output_types(classes[o.sublayer])[o.sublayer_port]
                for o in topology.out_connects
            }

    @classmethod
    def _policies_of(cls, policies: PolicyContainer, name: str) -> PolicyContainer:
        """(a): the sublayer's own policies, the parent's inherited, then class defaults."""
        picked = sub_policies(policies, name)
        keys = {obj.key for obj in picked.objects}
        extra = [d for d in cls.sublayer_policies.get(name, ()) if d.key not in keys]
        return PolicyContainer(*picked.items, *extra) if extra else picked

    @classmethod
    def _configure_sublayer(
        cls, name: str, policies: PolicyContainer, types: dict[tuple[str, type], object] | None
    ) -> type[AnyLayer]:
        template = cls.topology.sublayers[name]
        try:
            if types is None:
                return make_infer_layer(template, policies)
            in_map = LayerInMap({port: t for (sub, port), t in types.items() if sub == name})
            return make_train_layer(template, in_map, policies)
        except TypedNNError as err:
            headline = (
                f"cannot configure {cls.__name__}: its sublayer {name!r} "
                f"({template.__name__}) was rejected:"
            )
            raise type(err)(f"{headline}\n{err}") from err

    @classmethod
    def output_types(cls, input_types: Mapping[type, object] | None = None) -> dict[type, object]:
        """The declared type of each composite output (from the sublayers' output types)."""
        if input_types is None and cls._output_types is not None:
            return dict(cls._output_types)
        if input_types is None:
            return super().output_types(None)  # raises: an inference layer needs input types
        topology = cls.topology
        types: dict[tuple[str, type], object] = {
            (i.sublayer, i.sublayer_port): input_types[i.in_port] for i in topology.in_connects
        }
        outs: dict[str, dict[type, object]] = {}
        for name in topology.order:
            given = {port: t for (sub, port), t in types.items() if sub == name}
            outs[name] = layer_output_types(cls.sublayer_classes[name], given)
            for e in topology.internal_connects:
                if e.from_sublayer == name:
                    types[(e.to_sublayer, e.to_port)] = outs[name][e.from_port]
        return {o.out_port: outs[o.sublayer][o.sublayer_port] for o in topology.out_connects}

    @classmethod
    def create_sublayers(cls) -> SublayerArgs:
        """A builder of the sublayers' constructor arguments."""
        return SublayerArgs(cls)

    # --- instances ----------------------------------------------------------------------
    def __init__(self, name: str, sublayers: SublayerArgs | None = None) -> None:
        super().__init__(name)
        given_value: object = sublayers  # a dict (as Sequential takes) reaches here untyped
        if given_value is not None and not isinstance(given_value, SublayerArgs):
            first = type(self).topology.order[0]
            raise _error(
                f"cannot create layer '{name}': sublayers must be the composite's SublayerArgs.",
                [("received", f"{type(sublayers).__name__} {sublayers!r}")],
                f"{type(self).__name__}.create_sublayers().set({first!r}, *args) for each "
                "sublayer that takes constructor arguments.",
            )
        given = sublayers.args if sublayers is not None else {}
        self.sublayers: dict[str, LayerInstance] = {}
        for sub in self.topology.order:
            layer_cls = type(self).sublayer_classes[sub]
            args, layer_name = given.get(sub, ((), None))
            full = layer_name if layer_name is not None else f"{name}/{sub}"
            if sub not in given:
                try:
                    self.sublayers[sub] = as_instance(layer_cls(full), name)
                except TypeError as err:
                    raise _error(
                        f"Sublayer not initialized: {sub!r} of layer '{name}' needs "
                        "constructor arguments.",
                        [
                            ("layer", name),
                            ("sublayer", f"{sub} ({layer_cls.__name__})"),
                            ("error", str(err)),
                        ],
                        f'give them: create_sublayers().set("{sub}", ...).',
                    ) from err
                continue
            self.sublayers[sub] = as_instance(layer_cls(full, *args), name)

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        topology = self.topology
        slots: dict[str, dict[type, object]] = {name: {} for name in topology.order}
        for i in topology.in_connects:
            slots[i.sublayer][i.sublayer_port] = inputs[i.in_port]
        results: dict[str, Values] = {}
        for name in topology.order:
            layer = self.sublayers[name]
            cont: Values = layer.input_cont()
            for port, value in slots[name].items():
                cont = cont.set(port, value)
            out = results[name] = layer.feed_forward(cont)
            for e in topology.outgoing[name]:
                slots[e.to_sublayer][e.to_port] = out.get(e.from_port)
        return {o.out_port: results[o.sublayer].get(o.sublayer_port) for o in topology.out_connects}

    def feed_forward(
        self, inputs: VarValues[KIn, TensorLike[FE, Dv, DIn]]
    ) -> VarValues[KOut, TensorLike[FE, Dv, DOut]]:
        """The composite outputs (lazy), from its inputs through every sublayer in order."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[KOut, TensorLike[FE, Dv, DOut]]
    ) -> VarValues[KIn, TensorLike[FE, Dv, DIn]]:
        """The composite input gradients (when it feeds back); parameter gradients are kept
        by the parameter sublayers for ``grad_collect``."""
        return self._feed_backward(grads)

    # --- forwarded to every sublayer, in topological order --------------------------------
    def init(self, initializer: InitializerLike, load_buffer: LoadBufferLike) -> None:
        """Initialise every parameter sublayer (MetaNN ``Init``)."""
        for layer in self.sublayers.values():
            layer_init(layer, initializer, load_buffer)

    def save_weights(self, saver: SaverLike) -> None:
        """Record every parameter in ``saver``."""
        for layer in self.sublayers.values():
            layer_save_weights(layer, saver)

    def grad_collect(self, collector: GradCollectorLike) -> None:
        """Hand every kept parameter gradient to ``collector``."""
        for layer in self.sublayers.values():
            layer_grad_collect(layer, collector)

    def repr_details(self) -> list[str]:
        return [f"sublayers {', '.join(self.sublayers)}"]

    def neutral_invariant(self) -> None:
        """LayerError while any sublayer (named first), or this layer, still holds values
        from a forward."""
        for layer in self.sublayers.values():
            layer_neutral_invariant(layer)
        super().neutral_invariant()

    def children(self) -> tuple[AnyLayer, ...]:
        """The sublayers that are typed_nn layers, in topological order."""
        return tuple(s for s in self.sublayers.values() if isinstance(s, Layer))

    def drop_stacks(self) -> None:
        """Pop what one forward pushed in every sublayer (the backward's first step)."""
        super().drop_stacks()
        for layer in self.children():
            layer.drop_stacks()
