"""The layer protocol: ports, configuration by policies, containers, checks and stacks.

A *layer template* is a subclass of :class:`Layer` (``AddLayer``, ``SigmoidLayer``, ...).
``make_infer_layer(AddLayer, *policies)`` and ``make_train_layer(AddLayer, input_map,
*policies)`` return a *configured* subclass, checked right there (MetaNN's static_asserts);
instances of it take a name. ``feed_forward`` / ``feed_backward`` only build lazy expressions.

What a composite layer can read from a configured class, without an instance:
``input_ports``, ``output_ports``, ``policies``, ``input_map`` (None for inference),
``is_update``, ``is_feedback_output``, ``template`` and ``output_types()`` (MetaNN's
``LayerOutputItemTypes``: the element, device and rank each output will have).

A layer template defines its ``forward`` only: every layer's backward is the vjp of that
forward (``derived.py``, DESIGN §7), with MetaNN's LIFO stack discipline, policies and neutral
invariant; MetaNN's own gradients (no gradient to the NLL truth, ``PDisableBptt``) are
``ops.stop_gradient`` in the forward.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Never, TypeAlias, TypeVar, cast, overload

from ..data.tensor import AnyTensor
from ..errors import DeviceError, ElemTypeError, LayerError, PolicyError, ShapeError, message
from ..inference_mode import state as inference_state
from ..ops.node import format_site, user_site
from ..ops.special import ZeroTensor
from ..policies import GradPolicy, PolicyContainer, PolicyItem, policy_select
from ..tags import Dv, E
from . import derived
from .declared import TYPE_DEFAULTS, Decl, Declared, declared_tags
from .in_map import (
    LayerInMap,
    PortType,
    check_input,
    check_undeclared_input,
    port_type,
    tensor_type,
)
from .keys import LayerOutput
from .stacks import LayerStack
from .state_entry import StateEntry
from .var_type_dict import DeclaredValues, VarTypeDict, VarValues, key_name

__all__ = ["Layer", "LayerT", "Values", "make_infer_layer", "make_train_layer"]

KIn = TypeVar("KIn")
KOut = TypeVar("KOut")
Values = VarValues[Any, Any]
"""A container of any ports and values (what the dynamic protocol methods exchange)."""


class Layer(Generic[KIn, KOut, Decl]):
    """Base of every layer template; configure it with make_train_layer / make_infer_layer.

    ``Layer[In, Out, Decl]``: input ports ``In``, output ports ``Out``; ``Decl`` is what the
    class was declared for (``Declared[E, Dv]``, or ``Undeclared``: see ``declared.py``).

    Subclasses set ``input_ports``, ``output_ports`` and ``stacks`` (names of their LIFO
    buffers, if any), implement ``forward`` on plain dicts (the backward is its vjp), and
    expose typed ``feed_forward`` / ``feed_backward`` that call ``_feed_forward`` /
    ``_feed_backward``.
    """

    input_ports: ClassVar[tuple[type, ...]] = ()
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    stacks: ClassVar[tuple[str, ...]] = ()
    template: ClassVar[type[Layer[Any, Any]]]
    policies: ClassVar[PolicyContainer] = PolicyContainer()
    input_map: ClassVar[LayerInMap | None] = None
    is_update: ClassVar[bool] = False
    is_feedback_output: ClassVar[bool] = False
    configured: ClassVar[bool] = False
    no_grad_ports: ClassVar[tuple[type, ...]] = ()
    """Input ports the backward gives no gradient (MetaNN's loss weights: the forward stops
    their gradient with ``ops.stop_gradient``); a composite's are those that feed only such
    ports of its sublayers."""

    if not TYPE_CHECKING:

        def __class_getitem__(cls, params: Any) -> Any:
            # The run-time side of the checkers' TypeVar defaults (Python 3.11's typing has
            # none): trailing parameters left out take their defaults (TYPE_DEFAULTS).
            given = params if isinstance(params, tuple) else (params,)
            missing = cls.__parameters__[len(given) :]
            if missing and all(p in TYPE_DEFAULTS for p in missing):
                params = (*given, *(TYPE_DEFAULTS[p] for p in missing))
            return super().__class_getitem__(params)

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        """Read the policies into class attributes; raise LayerError for invalid ones.

        The base reads GradPolicy (MetaNN principal layers: ``is_update`` is False).
        Override (calling super) to read more; runs once, when the configured class is made.
        """
        cls.is_feedback_output = policy_select(GradPolicy, policies).is_feedback_output
        cls.is_update = False

    @classmethod
    def ports_for(cls, policies: PolicyContainer) -> tuple[type, ...]:
        """The input ports under ``policies``: ``input_ports``, unless a template's ports
        follow its policies (a recurrent layer takes its kernel's)."""
        return cls.input_ports

    def __init__(self, name: str) -> None:
        if not type(self).configured:
            raise LayerError(
                message(
                    f"cannot create layer '{name}': {type(self).__name__} is not configured.",
                    [("layer", type(self).__name__)],
                    built_at=format_site(user_site()),
                    hint=f"declare it first: make_train_layer({type(self).__name__}, "
                    "LayerInMap({...}), *policies) or make_infer_layer(...).",
                )
            )
        self.name = name
        active = type(self).is_feedback_output or type(self).is_update
        self._stacks = {what: LayerStack(name, what, active=active) for what in self.stacks}
        self._record = LayerStack(name, "forward", active=active)
        self._param_sources: list[Layer[Any, Any]] | None = None

    # --- containers -------------------------------------------------------------------
    @overload
    def input_cont(self: Layer[KIn, Any, Declared[E, Dv]]) -> DeclaredValues[KIn, Never, E, Dv]: ...
    @overload
    def input_cont(self) -> VarValues[KIn, Never]: ...
    def input_cont(self) -> VarValues[KIn, Never]:
        """An empty container of the input ports (the forward input, the backward result);
        a ``DeclaredValues`` for a class declared ``Declared[E, Dv]``, whose ``set`` the
        checkers restrict to that element and device."""
        decl = _decl(self.input_ports)
        empty = decl.create() if type(self).input_map is None else decl.create_declared()
        return empty  # type: ignore[return-value]  # the ports are KIn

    def output_cont(self) -> VarValues[KOut, Never]:
        """An empty container of the output ports (the forward result, the backward input)."""
        return _decl(self.output_ports).create()  # type: ignore[return-value]  # ports are KOut

    # --- what subclasses implement ----------------------------------------------------
    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        """Output port -> lazy expression, from checked inputs (the backward is its vjp)."""
        raise NotImplementedError

    def param_sources(self) -> list[Layer[Any, Any]]:
        """The ParamSourceLayers of principal tensors this layer's forward reads (sublayers'
        included), in order (found once: the structure is fixed)."""
        if self._param_sources is None:
            self._param_sources = self._find_param_sources()
        return self._param_sources

    def _find_param_sources(self) -> list[Layer[Any, Any]]:
        return [p for child in self.children() for p in child.param_sources()]

    def children(self) -> tuple[Layer[Any, Any], ...]:
        """The layers this one is made of, in order (a composite's sublayers, a recurrent
        layer's kernel); none for an elementary layer. ``model_state`` walks them."""
        return ()

    def own_state(self) -> list[StateEntry]:
        """The state this layer holds itself, its children's not included: its parameters,
        buffers and random-number states (``state_entry.py``). A layer that keeps values
        from one forward to the next (a counter, statistics) reports them here, so that
        checkpoints and data-parallel ranks see them; tests/test_layers_state.py checks
        the catalogue."""
        return []

    def drop_stacks(self) -> None:
        """Pop what one forward pushed, but the ``forward`` record (the backward popped that):
        the own stacks here; composites also their sublayers' (which record nothing)."""
        for stack in self._stacks.values():
            stack.discard()

    def checked_grad(self, port: type, grad: Any, output: Any) -> Any:
        """The gradient of ``output`` given for ``port`` in a derived backward, checked
        (tn.vjp checks shape, element and device; layers may say more first)."""
        return grad

    # --- the protocol's machinery -----------------------------------------------------
    def _feed_forward(self, inputs: Values) -> Values:
        """Check the container and every input, then build the outputs."""
        self._check_container(inputs, self.input_ports, "feed_forward")
        cls = type(self)
        picked: dict[type, Any] = {}
        for port in self.input_ports:
            if not inputs.is_set(port):
                raise LayerError(
                    message(
                        f"cannot feed layer '{self.name}' forward: "
                        f"input port {key_name(port)} is not set.",
                        [("layer", self.name), ("set", _names(inputs.set_keys()))],
                        built_at=format_site(user_site()),
                        hint=f"set it: layer.input_cont().set({key_name(port)}, x).",
                    )
                )
            value = inputs.get(port)
            if cls.input_map is not None:
                value = check_input(self.name, port, cls.input_map[port], value)
            else:
                value = check_undeclared_input(self.name, port, value)
            picked[port] = value
        try:
            if self._record.active:
                outputs = derived.recorded_forward(self, picked, self._record)
            else:
                outputs = self.forward(picked)
        except (ShapeError, ElemTypeError, DeviceError) as err:  # an op's, naming no layer
            if getattr(err, "layer_named", False) or str(err).startswith("cannot feed layer"):
                raise
            headline = f"cannot feed layer '{self.name}' ({type(self).__name__}) forward:"
            named = type(err)(f"{headline}\n{err}")
            setattr(named, "layer_named", True)  # noqa: B010 (the innermost layer names it)
            raise named from err
        out: Values = self.output_cont()
        for port, value in outputs.items():
            out = out.set(port, value)
        observer = inference_state.observer
        if observer is not None:
            observer(self, out)
        return out

    def _feed_backward(self, grads: Values) -> Values:
        """The vjp of the recorded forward; an empty container where nothing was recorded
        (a layer that neither feeds back nor updates)."""
        self._check_container(grads, self.output_ports, "feed_backward")
        if inference_state.depth:
            raise LayerError(
                message(
                    f"cannot feed layer '{self.name}' backward inside tn.inference(): "
                    "forwards there keep nothing for a backward.",
                    [("layer", self.name)],
                    built_at=format_site(user_site()),
                    hint="run training forwards and backwards outside the with tn.inference() "
                    "block.",
                )
            )
        if not self._record.active:
            return self.input_cont()
        kept = self._record.pop()
        assert isinstance(kept, derived.ForwardRecord), "only records are pushed"
        return self._vjp_of(kept, grads)

    def _vjp_of(self, record: derived.ForwardRecord, grads: Values) -> Values:
        """The backward of the forward ``record`` holds (``derived.backward``)."""
        return derived.backward(self, record, grads)

    def _check_container(self, values: object, ports: tuple[type, ...], action: str) -> None:
        keys = values.keys if isinstance(values, VarValues) else None
        if keys == ports:
            return
        if keys is None or frozenset(keys) != frozenset(ports):
            received = _names(keys) if keys is not None else type(values).__name__
            raise LayerError(
                message(
                    f"cannot {action} layer '{self.name}': the container has the wrong ports.",
                    [("layer", self.name), ("declared", _names(ports)), ("received", received)],
                    built_at=format_site(user_site()),
                    hint="build it with layer.input_cont() (forward) or layer.output_cont() "
                    "(backward).",
                )
            )

    def stack(self, what: str) -> LayerStack:
        """The LIFO buffer named ``what`` (one of ``stacks``)."""
        return self._stacks[what]

    def declared(self, port: type) -> PortType:
        """The declared type of input ``port`` (train layers only)."""
        assert type(self).input_map is not None, "only train layers feed back"
        return type(self).input_map[port]  # type: ignore[index]  # asserted above

    def neutral_invariant(self) -> None:
        """LayerError "Stack is not empty." while a stack holds values."""
        for stack in self._stacks.values():
            stack.check_empty()
        self._record.check_empty()

    @classmethod
    def output_types(cls, input_types: Mapping[type, object] | None = None) -> dict[type, object]:
        """The declared type (``TensorLike[E, Dv, DimN]``) of each output, from the input types
        (the class's input map by default). Builds probe expressions; computes nothing."""
        given = input_types if input_types is not None else cls.input_map
        if given is None:
            raise LayerError(
                message(
                    f"cannot infer the output types of {cls.__name__}: no input types.",
                    hint="pass input_types={port: type} for an inference layer.",
                )
            )
        probes = {port: _probe(port_type(given[port])) for port in cls.input_ports}
        layer = cls.__new__(cls)
        Layer.__init__(layer, f"<types of {cls.__name__}>")
        return {p: tensor_type(v.elem, v.device, v.rank) for p, v in layer.forward(probes).items()}

    def __repr__(self) -> str:
        """``<Template 'name': train (update), LayerInput: TensorLike[Float32, CPU, Dim2] ->
        LayerOutput, ...>``: the template, the name, the mode and the ports' declared types."""
        cls = type(self)
        template = getattr(cls, "template", cls).__name__
        if cls.input_map is not None:
            flags = [
                f
                for f, on in (("update", cls.is_update), ("feedback", cls.is_feedback_output))
                if on
            ]
            mode = "train" + (f" ({', '.join(flags)})" if flags else "")
            ins = ", ".join(f"{key_name(p)}: {cls.input_map[p].show()}" for p in self.input_ports)
        else:
            mode, ins = "inference", ", ".join(key_name(p) for p in self.input_ports)
        outs = ", ".join(key_name(p) for p in self.output_ports)
        parts = [mode, f"{ins or '(no inputs)'} -> {outs}", *self.repr_details()]
        return f"<{template} {self.name!r}: {'; '.join(parts)}>"

    def repr_details(self) -> list[str]:
        """Further facts ``repr`` shows (a parameter's shape, a composite's sublayers)."""
        return []


LayerT = TypeVar("LayerT", bound=Layer[Any, Any])

if TYPE_CHECKING:
    _L = TypeVar("_L")
    TemplateOf: TypeAlias = type[_L]
else:

    class TemplateOf:
        """``type[L]`` for the checkers; at run time (what beartype reads in debug mode)
        anything: make_*_layer check their template themselves, and a ``Declared``
        subscription (``SigmoidLayer[Declared[Float32, CPU]]``) is no class."""

        def __class_getitem__(cls, item: object) -> object:
            return Any


def _probe(t: PortType) -> object:
    if t.is_number:
        return t.kind(1)
    assert t.elem is not None
    assert t.device is not None
    assert t.rank is not None
    return ZeroTensor((1,) * t.rank, t.elem, t.device)


def _names(keys: tuple[type, ...]) -> str:
    return ", ".join(key_name(k) for k in keys) or "(none)"


_DECLS: dict[tuple[type, ...], VarTypeDict[object]] = {}


def _decl(ports: tuple[type, ...]) -> VarTypeDict[object]:
    decl = _DECLS.get(ports)
    if decl is None:
        decl = _DECLS[ports] = VarTypeDict(*ports)
    return decl


def _flatten(items: tuple[PolicyItem | PolicyContainer, ...]) -> PolicyContainer:
    flat: list[PolicyItem] = []
    for item in items:
        flat.extend(item.items if isinstance(item, PolicyContainer) else (item,))
    return PolicyContainer(*flat)


_CONFIGURED: dict[tuple[type, LayerInMap | None, PolicyContainer], type] = {}


def _unsubscribed(layer: Any) -> tuple[Any, tuple[type, type] | None]:
    """``(LinearLayer, (Float32, CPU))`` for ``LinearLayer[Declared[Float32, CPU]]`` (a
    subscription that carries what the class is declared for, for the checkers); ``(layer,
    None)`` for a plain class."""
    origin = typing.get_origin(layer)
    if not (isinstance(origin, type) and issubclass(origin, Layer)):
        return layer, None
    args = typing.get_args(layer)
    return origin, declared_tags(args[-1]) if args else None


def _check_declared(layer: type, tags: tuple[type, type], input_map: LayerInMap) -> None:
    """Every tensor port of ``input_map`` has the element and device the subscription says."""
    elem, device = tags
    for port in input_map:
        t = input_map[port]
        if not t.is_number and (t.elem is not elem or t.device is not device):
            raise LayerError(
                message(
                    f"cannot make a train {layer.__name__}: it is declared for "
                    f"{elem.__name__} {device.__name__} data, but port {key_name(port)} is "
                    f"declared {t.show()}.",
                    [
                        (
                            "declared",
                            f"{layer.__name__}[Declared[{elem.__name__}, {device.__name__}]]",
                        ),
                        ("input map", repr(input_map)),
                    ],
                    built_at=format_site(user_site()),
                    hint="make the type argument and the input map agree.",
                )
            )


def _check_template(layer: object) -> None:
    """``layer`` must be a layer template (a ``Layer`` subclass not configured yet)."""
    if not (isinstance(layer, type) and issubclass(layer, Layer)) or layer.configured:
        problem = (
            "it is already configured"
            if isinstance(layer, type) and issubclass(layer, Layer)
            else "it is not a layer template"
        )
        raise LayerError(
            message(
                f"cannot configure {getattr(layer, '__name__', repr(layer))}: {problem}.",
                [("received", repr(layer))],
                built_at=format_site(user_site()),
                hint="pass a layer template such as AddLayer (a configured class's .template).",
            )
        )


def _check_forward_only(layer: type) -> None:
    """A template whose own backward would be ignored (MetaNN's ``FeedBackward``, a unary
    layer's gradient op) is refused: one layer system, every backward the forward's vjp."""
    for name in ("backward", "grad_op"):
        if callable(getattr(layer, name, None)):
            raise LayerError(
                message(
                    f"cannot configure {layer.__name__}: it defines {name}(), and a layer's "
                    "backward is the vjp of its forward.",
                    [("layer", layer.__name__), ("defines", name)],
                    built_at=format_site(user_site()),
                    hint="delete it and say a different gradient in forward with "
                    "ops.stop_gradient, e.g. a straight-through sign: "
                    "x + ops.stop_gradient(ops.sign(x) - x).",
                )
            )


def _check_sublayer_names(layer: type, policies: PolicyContainer) -> None:
    """Every ``SubPolicyContainer`` names a sublayer of ``layer`` (one naming none would be
    dropped: a weight meant to be frozen would train)."""
    topology = getattr(layer, "topology", None)
    names = list(topology.sublayers) if topology is not None else []
    unknown = [sub.name for sub in policies.subs if sub.name not in names]
    if unknown:
        raise PolicyError(
            message(
                f"cannot configure {layer.__name__}: a SubPolicyContainer names no sublayer of it.",
                [
                    ("unknown", ", ".join(map(repr, unknown))),
                    ("sublayers", ", ".join(map(repr, names)) or "none (not a composite)"),
                ],
                built_at=format_site(user_site()),
                hint="name a sublayer as its topology does; a sublayer's own sublayers nest: "
                "SubPolicyContainer('fc1', SubPolicyContainer('linear', ...)).",
            )
        )


def _make(
    layer: TemplateOf[LayerT], input_map: LayerInMap | None, policies: PolicyContainer
) -> type[LayerT]:
    layer, tags = _unsubscribed(layer)
    _check_template(layer)
    _check_forward_only(layer)
    if tags is not None and input_map is not None:
        _check_declared(layer, tags, input_map)
    key = (layer, input_map, policies)
    cached = _CONFIGURED.get(key)
    if cached is not None:
        return cached
    attrs = {
        "configured": True,
        "template": layer,
        "policies": policies,
        "input_map": input_map,
        "__module__": layer.__module__,
        "__qualname__": layer.__qualname__,
    }
    # A subclass per configuration: isinstance(x, AddLayer) holds and the class is cached.
    # type() makes a new class, which no checker can tie to LayerT: it subclasses layer.
    configured = cast("type[LayerT]", type(layer.__name__, (layer,), attrs))
    configured.configure(policies)
    _check_sublayer_names(configured, policies)  # a composite's topology may hang on them
    _CONFIGURED[key] = configured
    return configured


def make_infer_layer(
    layer: TemplateOf[LayerT], *policies: PolicyItem | PolicyContainer
) -> type[LayerT]:
    """An inference-only configured class of ``layer`` (MetaNN ``MakeInferLayer``).

    Raises:
        PolicyConflictError: two policies set one (major, minor).
        LayerError: the policies ask for updates or feedback (an inference layer has neither).
    """
    configured = _make(layer, None, _flatten(policies))
    if configured.is_update or configured.is_feedback_output:
        asked = "updates" if configured.is_update else "feedback output"
        raise LayerError(
            message(
                f"cannot make an inference {layer.__name__}: its policies ask for {asked}.",
                [("policies", repr(configured.policies))],
                built_at=format_site(user_site()),
                hint="drop PUpdate / PFeedbackOutput, or use make_train_layer(layer, "
                "LayerInMap({...}), *policies).",
            )
        )
    return configured


def make_train_layer(
    layer: TemplateOf[LayerT], input_map: LayerInMap, *policies: PolicyItem | PolicyContainer
) -> type[LayerT]:
    """A training configured class of ``layer`` whose inputs are checked against ``input_map``
    (MetaNN ``MakeTrainLayer``).

    Raises:
        PolicyConflictError: two policies set one (major, minor).
        LayerError: ``input_map`` is not a LayerInMap or its ports differ from the layer's.
        ShapeError, ElemTypeError, ...: the declared types cannot feed the layer's ops
            (e.g. a Float64 and a Float32 operand), found by building probe expressions.
    """
    if not isinstance(input_map, LayerInMap):
        raise LayerError(
            message(
                f"cannot make a train {getattr(layer, '__name__', layer)}: "
                "the input map is not a LayerInMap.",
                [("received", f"{input_map!r} ({type(input_map).__name__})")],
                built_at=format_site(user_site()),
                hint="wrap the dict: LayerInMap({LayerInput: tn.Matrix[tn.Float32, tn.CPU]}).",
            )
        )
    _check_template(_unsubscribed(layer)[0])
    ports_for = getattr(_unsubscribed(layer)[0], "ports_for", None)
    declared = tuple(ports_for(_flatten(policies))) if ports_for is not None else ()
    ports = frozenset(declared)
    if input_map.ports() != ports:
        missing = ports - input_map.ports()
        extra = input_map.ports() - ports
        raise LayerError(
            message(
                f"cannot make a train {layer.__name__}: the input map's ports differ from the "
                "layer's input ports.",
                [
                    ("declared", _names(declared)),
                    ("received", _names(tuple(input_map))),
                    ("missing", _names(tuple(missing))),
                    ("unknown", _names(tuple(extra))),
                ],
                built_at=format_site(user_site()),
                hint="map exactly the layer's input ports to their types.",
            )
        )
    configured = _make(layer, input_map, _flatten(policies))
    if configured.input_ports:
        configured.output_types()  # builds probe nodes: declared types the ops reject fail here
    return configured
