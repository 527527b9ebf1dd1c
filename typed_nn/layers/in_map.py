"""``LayerInMap``: the declared type of each input port of a training layer (MetaNN §3.1).

A declared type is one of:

* a tagged data type: an alias such as ``tn.Matrix[tn.Float32, tn.CPU]`` or a class
  subscription such as ``tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]``; an input must be an
  instance of that class (``TensorLike`` accepts any data kind, lazy nodes included) with
  exactly that element, device and rank. ``DynamicData[...]`` wraps the input with
  ``make_dynamic``, as MetaNN does;
* a number type (``int`` or ``float``): the input is converted with ``int(x)`` / ``float(x)``
  and gets no gradient.

The map is checked when it is built (every type concrete), hashable, and compared by content.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from ..data.factories import check_tags
from ..data.tensor import TensorLike
from ..errors import DeviceError, ElemTypeError, LayerError, OperandError, RankError, message
from ..ops.dynamic import DynamicData, make_dynamic
from ..ops.node import format_site, user_site
from ..tags import DEVICE_TAGS, ELEM_TAGS, DeviceTag, DimTag, ElemTag, FloatTag, dim_of_rank
from .var_type_dict import key_name

__all__ = [
    "LayerInMap",
    "PortType",
    "float_input_type",
    "port_type",
    "tagged_parts",
    "tensor_type",
]

NUMBER_TYPES: tuple[type, ...] = (int, float)

# ``TensorLike[elem, device, dim]`` for tags known only at run time: the same alias object
# ``tn.Matrix[tn.Float32, tn.CPU]`` gives (mypy accepts only literal types inside [...]).
_subscript: Callable[[tuple[type, ...]], object] = TensorLike.__class_getitem__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class PortType:
    """A parsed declared type: ``kind`` (a TensorLike subclass) with tags, or a number type."""

    declared: object = field(compare=False)
    kind: type
    elem: type[ElemTag] | None = None
    device: type[DeviceTag] | None = None
    rank: int | None = None

    @property
    def is_number(self) -> bool:
        """Whether the port takes a Python number (converted; no gradient)."""
        return self.elem is None

    def show(self) -> str:
        """``Matrix[Float32, CPU]``-style text for messages."""
        if self.elem is None or self.device is None:
            return self.kind.__name__
        return f"{self.kind.__name__}[{self.elem.__name__}, {self.device.__name__}, Dim{self.rank}]"


def _bad_type(declared: object, problem: str) -> LayerError:
    return LayerError(
        message(
            f"cannot declare a layer input of type {declared!r}: {problem}.",
            [("received", repr(declared))],
            built_at=format_site(user_site()),
            hint="use a tagged type such as tn.Matrix[tn.Float32, tn.CPU], or int / float.",
        )
    )


def tagged_parts(declared: object) -> tuple[type, tuple[object, ...]] | None:
    """(origin class, type arguments) of a subscription such as ``tn.Matrix[Float32, CPU]``;
    None when ``declared`` is not a subscription of a TensorLike class."""
    origin = typing.get_origin(declared)
    if not (isinstance(origin, type) and issubclass(origin, TensorLike)):
        return None
    return origin, typing.get_args(declared)


def port_type(declared: object) -> PortType:
    """Parse a declared input type; LayerError if it is not a concrete tagged type or number."""
    if isinstance(declared, PortType):
        return declared
    if declared in NUMBER_TYPES:
        assert isinstance(declared, type)
        return PortType(declared, declared)
    parts = tagged_parts(declared)
    if parts is None:
        if isinstance(declared, type) and issubclass(declared, TensorLike):
            raise _bad_type(declared, "its element, device and rank are not given")
        raise _bad_type(declared, "it is neither typed_nn data nor a number type")
    origin, args = parts
    if len(args) != 3:
        raise _bad_type(declared, "it needs element, device and rank tags")
    elem, device, dim = args
    if not (
        isinstance(elem, type)
        and issubclass(elem, ElemTag)
        and isinstance(device, type)
        and issubclass(device, DeviceTag)
        and isinstance(dim, type)
        and issubclass(dim, DimTag)
    ):
        raise _bad_type(declared, "its element, device and rank must be concrete tags")
    return PortType(declared, origin, elem, device, dim.rank)


def float_input_type(layer: str, declared: object, does: str) -> PortType:
    """The declared ``LayerInput`` type of a layer that ``does`` something to float data
    only (``"takes"``, ``"drops"``); an integer or untagged declaration is an error."""
    x = port_type(declared)
    if x.elem is None or not issubclass(x.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"cannot make {layer}: it {does} float data, declared {declared!r}.",
                built_at=format_site(user_site()),
                hint="declare LayerInput as Float32 or Float64 data.",
            )
        )
    return x


def tensor_type(elem: type[ElemTag], device: type[DeviceTag], rank: int) -> object:
    """The declared type ``TensorLike[elem, device, DimN]`` (what type inference produces)."""
    if elem not in ELEM_TAGS or device not in DEVICE_TAGS:
        check_tags("tensor_type", "tensor_type(tn.Float32, tn.CPU, 2)", elem=elem, device=device)
    return _subscript((elem, device, dim_of_rank(rank)))


class LayerInMap:
    """Input port -> declared type, for ``make_train_layer``.

    Example: ``LayerInMap({LeftOperand: tn.Matrix[tn.Float32, tn.CPU], RightOperand: float})``.
    """

    __slots__ = ("_items",)

    def __init__(self, types: Mapping[type, object]) -> None:
        items: dict[type, PortType] = {}
        for port, declared in types.items():
            if not isinstance(port, type):
                raise LayerError(
                    message(
                        "cannot declare LayerInMap: a port key is not a class.",
                        [("received", repr(port))],
                        built_at=format_site(user_site()),
                        hint="key the map by port classes, e.g. LayerInput.",
                    )
                )
            items[port] = port_type(declared)
        self._items = items

    def __getitem__(self, port: type) -> PortType:
        return self._items[port]

    def __iter__(self) -> Iterator[type]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def ports(self) -> frozenset[type]:
        """The ports the map declares."""
        return frozenset(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LayerInMap) and self._items == other._items

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{key_name(k)}: {t.show()}" for k, t in self._items.items())
        return f"LayerInMap({{{inner}}})"


def check_input(layer: str, port: type, declared: PortType, value: object) -> object:
    """``value`` checked against ``declared`` (converted for number ports), as MetaNN's
    ``PickItemFromCont``; errors name the layer, the port, declared and received."""
    if declared.is_number:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return declared.kind(value)
        fix = f"pass a Python {declared.kind.__name__}"
        raise _wrong(OperandError, layer, port, declared, value, "takes a number", fix)
    if not isinstance(value, TensorLike):
        fix = "wrap arrays with tn.tensor(array, elem, device, dim)"
        raise _wrong(OperandError, layer, port, declared, value, "takes typed_nn data", fix)
    error: type[Exception]
    if value.elem is not declared.elem:
        error, fix = ElemTypeError, f"convert with ops.astype(x, {_name(declared.elem)})"
    elif value.device is not declared.device:
        error, fix = DeviceError, f"move it with ops.to_device(x, {_name(declared.device)})"
    elif value.rank != declared.rank:
        error, fix = RankError, f"give data of rank {declared.rank}, or declare Dim{value.rank}"
    elif declared.kind is DynamicData:
        return make_dynamic(value)
    elif not isinstance(value, declared.kind):
        error, fix = OperandError, f"pass a {declared.kind.__name__} or declare tn.TensorLike[...]"
    else:
        return value
    raise _wrong(error, layer, port, declared, value, "received the wrong type", fix)


def check_undeclared_input(layer: str, port: type, value: object) -> object:
    """``value`` fed to a layer with no declared input map: typed_nn data or a number (the
    ports' types are unknown), never a raw array or list."""
    if isinstance(value, TensorLike) or (
        isinstance(value, int | float) and not isinstance(value, bool)
    ):
        return value
    raise OperandError(
        message(
            f"cannot feed layer '{layer}': port {key_name(port)} takes typed_nn data.",
            [("layer", layer), ("port", key_name(port)), ("received", _show(value))],
            built_at=format_site(user_site()),
            hint="wrap arrays with tn.tensor(array, elem, device, dim).",
        )
    )


def _wrong(
    error: type[Exception],
    layer: str,
    port: type,
    declared: PortType,
    value: object,
    problem: str,
    fix: str,
) -> Exception:
    received = value.describe() if isinstance(value, TensorLike) else _show(value)
    return error(
        message(
            f"cannot feed layer '{layer}': port {key_name(port)} {problem}.",
            [
                ("layer", layer),
                ("port", key_name(port)),
                ("declared", declared.show()),
                ("received", received),
            ],
            built_at=format_site(user_site()),
            hint=f"{fix}.",
        )
    )


def _name(tag: type | None) -> str:
    return tag.__name__ if tag is not None else "?"


def _show(value: object) -> str:
    return f"{type(value).__name__} {value!r}"
