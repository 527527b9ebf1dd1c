"""Debug mode's view of ``TensorLike[...]`` subscriptions: checkable by element, device, rank.

beartype and jaxtyping check a subscripted user generic (``Tensor[Float32, CPU, Dim2]``) only
by its class. In debug mode a *fully concrete* subscription becomes a cached class whose
metaclass ``__instancecheck__`` also compares the data's ``elem``, ``device`` and ``rank``
with the tags, so both libraries (and plain ``isinstance``) check the tags. Subscriptions
that still hold TypeVars (``TensorLike[E, Dv, Dim2]``, the ``Matrix`` alias) stay real
generic aliases, so subclassing keeps working; subscripting them further
(``Matrix[Float32, CPU]``) goes through the same concrete route.

Nothing here is imported unless debug mode is enabled (``typed_nn.debug.enable()``).
"""

from __future__ import annotations

import types
import typing
from abc import ABCMeta
from typing import Any

from ..tags import DeviceTag, DimTag, ElemTag

__all__ = ["TagCheckMeta", "checkable", "concrete"]

_ORIGIN = "__typed_nn_origin__"
_TAGS = "__typed_nn_tags__"
_CHECK = "__typed_nn_check__"  # (origin, elem, device, rank): read on every check
_CACHE: dict[tuple[type, tuple[type, ...]], type] = {}


class TagCheckMeta(ABCMeta):
    """Metaclass of the concrete check classes; ``isinstance`` compares the data's tags.

    It deliberately has no ``__repr__``: beartype reads the class's name instead (a metaclass
    ``__repr__`` upsets it), so the name is set to ``Tensor[Float32, CPU, Dim2]``.
    """

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> type:
        if _TAGS in namespace:  # one of ours, built by concrete()
            return super().__new__(mcls, name, bases, namespace, **kwargs)
        # A user class subclassing ``Tensor[Float32, CPU, Dim2]``: subclass the real generic
        # alias instead, exactly as without debug mode.
        real = tuple(_real_alias(b) if _TAGS in vars(b) else b for b in bases)
        namespace["__orig_bases__"] = real
        resolved = types.resolve_bases(real)
        meta = types._calculate_meta(type, resolved)  # type: ignore[attr-defined]
        cls: type = meta(name, resolved, namespace, **kwargs)
        return cls

    def __instancecheck__(cls, obj: object) -> bool:
        origin, elem, device, rank = cls.__dict__[_CHECK]
        return (
            isinstance(obj, origin)
            and obj.elem is elem
            and obj.device is device
            and len(obj.shape) == rank
        )

    def __subclasscheck__(cls, sub: type) -> bool:
        if sub is cls:
            return True
        tags = vars(sub).get(_TAGS)
        return tags == getattr(cls, _TAGS) and issubclass(sub, getattr(cls, _ORIGIN))


def _real_alias(check: type) -> Any:
    origin = getattr(check, _ORIGIN)
    return typing._GenericAlias(origin, getattr(check, _TAGS))  # type: ignore[attr-defined]


def _is_tags(args: tuple[Any, ...]) -> bool:
    kinds = (ElemTag, DeviceTag, DimTag)
    return len(args) == 3 and all(
        isinstance(a, type) and issubclass(a, k) for a, k in zip(args, kinds, strict=True)
    )


def concrete(origin: type, tags: tuple[type, ...]) -> type:
    """The (cached) check class for ``origin[elem, device, dim]``."""
    key = (origin, tags)
    check = _CACHE.get(key)
    if check is None:
        name = f"{origin.__name__}[{', '.join(t.__name__ for t in tags)}]"
        namespace = {
            _ORIGIN: origin,
            _TAGS: tags,
            _CHECK: (origin, *tags[:2], tags[2].rank),  # type: ignore[attr-defined]
            "__module__": origin.__module__,
            "__qualname__": name,
            "__doc__": f"{name} checked by element, device and rank (typed_nn debug mode).",
            "__slots__": (),
            "__args__": tags,
        }
        check = TagCheckMeta(name, (), namespace)
        _CACHE[key] = check
    return check


class _DebugAlias(typing._GenericAlias, _root=True):  # type: ignore[name-defined,misc,call-arg]
    """A generic alias (``TensorLike[E, Dv, Dim2]``) whose concrete subscriptions are checkable."""

    def copy_with(self, args: tuple[Any, ...]) -> Any:
        if _is_tags(args):
            return concrete(self.__origin__, args)
        return _DebugAlias(self.__origin__, args, name=self._name, inst=self._inst)


def checkable(alias: Any) -> Any:
    """The subscription hook: concrete subscriptions become check classes (see module doc)."""
    args = alias.__args__
    if _is_tags(args):
        return concrete(alias.__origin__, args)
    return _DebugAlias(alias.__origin__, args, name=alias._name, inst=alias._inst)
