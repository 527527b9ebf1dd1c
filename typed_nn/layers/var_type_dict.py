"""``VarTypeDict``: a container whose keys are classes fixed at declaration (MetaNN §7).

Layers take their inputs and give their outputs in these containers::

    Params = VarTypeDict(A, B, Weight)
    v = Params.create().set(A, 1.0).set(B, 2.0)    # any order; each set returns a new container
    v.get(A)                                        # 1.0

An undeclared key, a key declared twice, or reading a key that was never set raises
:class:`~typed_nn.errors.LayerError` at once, naming the key and the declared keys.

Static typing: ``VarTypeDict(A, B)`` is a ``VarTypeDict[A | B]`` (for up to eight keys), so
mypy and pyright reject ``get`` / ``set`` of a key that was not declared. The container's
second type argument is the union of the types of the values set so far, so ``get`` returns
that union: ``create().set(A, 1.0).get(A)`` is a ``float``. Python has no per-key value types
(MetaNN's ``Values<T...>``), so a container holding a float and a str reads ``float | str``
for every key; a key that is declared but unset is a run-time error only. (Recording the keys
set so far in a third, contravariant type argument does track chained ``set`` calls in both
checkers, but ``set`` would then need a method type variable for the key that is bounded by the
class's declared keys, which typing cannot express: both checkers solve such a variable from
the receiver before the argument, so either every key reads as set or undeclared keys are no
longer rejected at ``set``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, Never, TypeVar, overload

from ..data.tensor import TensorLike
from ..errors import LayerError, message
from ..ops.node import format_site, user_site
from ..tags import D, Dv, E

__all__ = ["DeclaredValues", "VarTypeDict", "VarValues", "key_name"]

K = TypeVar("K")
V_co = TypeVar("V_co", covariant=True)
V2 = TypeVar("V2")
K1 = TypeVar("K1")
K2 = TypeVar("K2")
K3 = TypeVar("K3")
K4 = TypeVar("K4")
K5 = TypeVar("K5")
K6 = TypeVar("K6")
K7 = TypeVar("K7")
K8 = TypeVar("K8")

_UNSET: object = object()


def key_name(key: object) -> str:
    """How a key class is shown in messages (``LayerOutput``, ``Previous(LayerOutput)``)."""
    return getattr(key, "__name__", repr(key))


def _names(keys: tuple[type, ...]) -> str:
    return ", ".join(key_name(k) for k in keys) or "(no keys)"


class VarTypeDict(Generic[K]):
    """The declaration of a container: its key classes, in order.

    Args:
        *keys: distinct classes (port keys such as ``LayerInput``, or any user classes).

    Raises:
        LayerError: a key that is not a class, or one given twice.
    """

    __slots__ = ("_index", "_keys")

    # One overload per key count (alike on purpose): each binds the union of its keys.
    @overload
    def __init__(self: VarTypeDict[Never]) -> None: ...
    @overload
    def __init__(self: VarTypeDict[K1], k1: type[K1], /) -> None: ...
    @overload
    def __init__(self: VarTypeDict[K1 | K2], k1: type[K1], k2: type[K2], /) -> None: ...
    @overload
    def __init__(
        self: VarTypeDict[K1 | K2 | K3], k1: type[K1], k2: type[K2], k3: type[K3], /
    ) -> None: ...
    @overload
    def __init__(
        self: VarTypeDict[K1 | K2 | K3 | K4],
        k1: type[K1],
        k2: type[K2],
        k3: type[K3],
        k4: type[K4],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: VarTypeDict[K1 | K2 | K3 | K4 | K5],
        k1: type[K1],
        k2: type[K2],
        k3: type[K3],
        k4: type[K4],
        k5: type[K5],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: VarTypeDict[K1 | K2 | K3 | K4 | K5 | K6],
        k1: type[K1],
        k2: type[K2],
        k3: type[K3],
        k4: type[K4],
        k5: type[K5],
        k6: type[K6],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: VarTypeDict[K1 | K2 | K3 | K4 | K5 | K6 | K7],
        k1: type[K1],
        k2: type[K2],
        k3: type[K3],
        k4: type[K4],
        k5: type[K5],
        k6: type[K6],
        k7: type[K7],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: VarTypeDict[K1 | K2 | K3 | K4 | K5 | K6 | K7 | K8],
        k1: type[K1],
        k2: type[K2],
        k3: type[K3],
        k4: type[K4],
        k5: type[K5],
        k6: type[K6],
        k7: type[K7],
        k8: type[K8],
        /,
    ) -> None: ...
    @overload
    def __init__(self: VarTypeDict[object], *keys: type) -> None: ...
    def __init__(self, *keys: type) -> None:
        index: dict[type, int] = {}
        for i, key in enumerate(keys):
            if not isinstance(key, type):
                raise LayerError(
                    message(
                        f"cannot declare VarTypeDict: key {i + 1} is not a class.",
                        [("received", f"{key!r} ({type(key).__name__})")],
                        built_at=format_site(user_site()),
                        hint="declare keys as classes: 'class Weight: ...'.",
                    )
                )
            if key in index:
                raise LayerError(
                    message(
                        f"cannot declare VarTypeDict: key {key_name(key)} is given twice.",
                        [("keys", _names(keys))],
                        built_at=format_site(user_site()),
                        hint="each key may appear once.",
                    )
                )
            index[key] = i
        self._keys = keys
        self._index = index

    @property
    def keys(self) -> tuple[type, ...]:
        """The declared keys, in declaration order."""
        return self._keys

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def create(self) -> VarValues[K, Never]:
        """An empty container of these keys (every slot unset)."""
        return VarValues(self, (_UNSET,) * len(self._keys))

    def create_declared(self) -> DeclaredValues[K, Never, Any, Any]:
        """An empty ``DeclaredValues`` of these keys (a declared layer's inputs)."""
        return DeclaredValues(self, (_UNSET,) * len(self._keys))

    def position(self, key: object, action: str) -> int:
        """The slot of ``key``; a LayerError naming ``action`` if it was not declared."""
        try:
            return self._index[key]  # type: ignore[index]  # any object may be looked up
        except (KeyError, TypeError):
            raise LayerError(
                message(
                    f"cannot {action} key {key_name(key)}: it is not declared in this container.",
                    [("declared", _names(self._keys)), ("received", key_name(key))],
                    built_at=format_site(user_site()),
                    hint="use one of the declared keys (a layer's ports are listed by "
                    "input_ports / output_ports).",
                )
            ) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VarTypeDict) and self._keys == other._keys

    def __hash__(self) -> int:
        return hash(self._keys)

    def __repr__(self) -> str:
        return f"VarTypeDict({_names(self._keys)})"


class VarValues(Generic[K, V_co]):
    """The values of a :class:`VarTypeDict`: immutable; ``set`` returns a new container."""

    __slots__ = ("_decl", "_values")

    def __init__(self, decl: VarTypeDict[K], values: tuple[object, ...]) -> None:
        self._decl = decl
        self._values = values

    @property
    def keys(self) -> tuple[type, ...]:
        """The declared keys, in declaration order."""
        return self._decl.keys

    @property
    def declaration(self) -> VarTypeDict[K]:
        """The VarTypeDict this container belongs to."""
        return self._decl

    def set(self, key: type[K], value: V2) -> VarValues[K, V_co | V2]:
        """A new container equal to this one with ``key`` set to ``value``."""
        i = self._decl.position(key, "set")
        values = (*self._values[:i], value, *self._values[i + 1 :])
        return VarValues(self._decl, values)

    def get(self, key: type[K]) -> V_co:
        """The value of ``key``; LayerError if ``key`` is undeclared or was never set."""
        value = self._values[self._decl.position(key, "get")]
        if value is _UNSET:
            raise LayerError(
                message(
                    f"Empty Value: key {key_name(key)} was never set.",
                    [("declared", _names(self.keys)), ("set", _names(self.set_keys()))],
                    built_at=format_site(user_site()),
                    hint=f"set it first: container.set({key_name(key)}, value).",
                )
            )
        return value  # type: ignore[return-value]  # slots hold only values set through set()

    def is_set(self, key: type[K]) -> bool:
        """Whether ``key`` holds a value (MetaNN ``!IsValueEmpty``)."""
        return self._values[self._decl.position(key, "query")] is not _UNSET

    def set_keys(self) -> tuple[type, ...]:
        """The keys that hold a value, in declaration order."""
        return tuple(k for k, v in zip(self.keys, self._values, strict=True) if v is not _UNSET)

    def items(self) -> Iterator[tuple[type, V_co]]:
        """(key, value) for every key that holds a value, in declaration order."""
        for key, value in zip(self.keys, self._values, strict=True):
            if value is not _UNSET:
                yield key, value  # type: ignore[misc]  # set slots hold V_co values

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{key_name(k)}={'<unset>' if v is _UNSET else v!r}"
            for k, v in zip(self.keys, self._values, strict=True)
        )
        return f"VarValues({shown})"


class DeclaredValues(VarValues[K, V_co], Generic[K, V_co, E, Dv]):
    """The inputs of a layer declared for element ``E`` on device ``Dv`` (what its
    ``input_cont()`` gives): ``set`` takes data of that element and device, or a number (for a
    number port), so mypy and pyright reject other data where it is set. The layer still
    checks every input against its declared map when fed."""

    __slots__ = ()

    @overload  # type: ignore[override]  # narrower than VarValues.set: that is its point
    def set(
        self, key: type[K], value: TensorLike[E, Dv, D]
    ) -> DeclaredValues[K, V_co | TensorLike[E, Dv, D], E, Dv]: ...
    @overload
    def set(self, key: type[K], value: float) -> DeclaredValues[K, V_co | float, E, Dv]: ...
    def set(self, key: type[K], value: object) -> DeclaredValues[K, Any, E, Dv]:
        """A new container equal to this one with ``key`` set to ``value``."""
        i = self._decl.position(key, "set")
        values = (*self._values[:i], value, *self._values[i + 1 :])
        return DeclaredValues(self._decl, values)
