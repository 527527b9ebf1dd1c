"""Classes that check data by element, device and rank: what debug mode checks tags with.

beartype checks a subscripted user generic (``Tensor[Float32, CPU, Dim2]``) only by its class
(``Tensor``). For each tagged subscription, debug mode substitutes (inside beartype only, see
:mod:`typed_nn.debug.checker`) a cached class whose metaclass ``__instancecheck__`` also
compares the data's ``elem``, ``device`` and rank with the tags. A generic subscription
(``Matrix[FE, Dv]``, ``TensorLike[FE, Dv, D]``) is checked by its concrete tags (the rank
``Dim2`` of ``Matrix``), each TypeVar by its bound or constraints and, inside one checked call,
by the tag it was first bound to (:mod:`typed_nn.debug.generic`). The subscriptions themselves
are never changed: ``typing.get_origin`` / ``get_args`` and subclassing behave exactly as with
debug mode off.
"""

from __future__ import annotations

import typing
from abc import ABCMeta
from typing import Any, TypeVar

from ..data.tensor import TensorLike
from ..tags import DIM_TAGS, DeviceTag, DimTag, ElemTag
from . import generic

__all__ = ["TagCheckMeta", "concrete", "tagged"]

Part = type | TypeVar
"""One position of a tagged subscription: a tag class or a TypeVar of tags."""

_CHECK = "__typed_nn_check__"  # (origin, elem, device, rank), read on every check
_GENERIC = "__typed_nn_generic__"  # (origin, (elem, device, dim) parts) with a TypeVar
_CACHE: dict[tuple[type, tuple[Part, ...]], type] = {}
_KINDS = (ElemTag, DeviceTag, DimTag)


class TagCheckMeta(ABCMeta):
    """Metaclass of the check classes; ``isinstance`` compares the data's tags.

    It deliberately has no ``__repr__``: beartype reads the class's name instead (a metaclass
    ``__repr__`` upsets it), so the name is set to ``Tensor[Float32, CPU, Dim2]``.
    """

    def __instancecheck__(cls, obj: Any) -> bool:
        fixed = cls.__dict__.get(_CHECK)
        if fixed is not None:
            origin, elem, device, rank = fixed
            return (
                isinstance(obj, origin)
                and obj.elem is elem
                and obj.device is device
                and len(obj.shape) == rank
            )
        origin, parts = cls.__dict__[_GENERIC]
        if not isinstance(obj, origin):
            return generic.reject(cls.__name__, obj, None)
        rank = len(obj.shape)
        values = (obj.elem, obj.device, DIM_TAGS[rank] if rank < len(DIM_TAGS) else None)
        return generic.accept(cls.__name__, obj, parts, values)

    def __subclasscheck__(cls, sub: type) -> bool:
        return sub is cls


def _fits(part: object, kind: type) -> bool:
    """A tag class of ``kind``, or a TypeVar whose bound or constraints are of ``kind``."""
    if isinstance(part, TypeVar):
        limits = part.__constraints__ or (part.__bound__,)
        return all(t is None or (isinstance(t, type) and issubclass(t, kind)) for t in limits)
    return isinstance(part, type) and issubclass(part, kind)


def tagged(hint: object) -> tuple[type, tuple[Part, Part, Part]] | None:
    """``(origin, (elem, device, dim))`` for a ``TensorLike`` subscription whose arguments are
    tags or TypeVars of tags, else None."""
    origin = typing.get_origin(hint)
    if not (isinstance(origin, type) and issubclass(origin, TensorLike)):
        return None
    args = typing.get_args(hint)
    if len(args) != 3 or not all(_fits(a, k) for a, k in zip(args, _KINDS, strict=True)):
        return None
    return origin, (args[0], args[1], args[2])


def concrete(origin: type, tags: tuple[Part, Part, Part]) -> type:
    """The (cached) check class for ``origin[elem, device, dim]`` (tags or TypeVars)."""
    key = (origin, tags)
    check = _CACHE.get(key)
    if check is None:
        elem, device, dim = tags
        name = f"{origin.__name__}[{', '.join(t.__name__ for t in tags)}]"
        if any(isinstance(part, TypeVar) for part in tags):
            what: dict[str, object] = {_GENERIC: (origin, tags)}
        else:  # the common case, kept to one comparison per tag
            what = {_CHECK: (origin, elem, device, getattr(dim, "rank"))}  # noqa: B009
        namespace = {
            **what,
            "__module__": origin.__module__,
            "__qualname__": name,
            "__doc__": f"{name} checked by element, device and rank (typed_nn debug mode).",
            "__slots__": (),
        }
        check = TagCheckMeta(name, (), namespace)
        _CACHE[key] = check
    return check
