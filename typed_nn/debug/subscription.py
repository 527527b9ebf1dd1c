"""Classes that check data by element, device and rank: what debug mode checks tags with.

beartype checks a subscripted user generic (``Tensor[Float32, CPU, Dim2]``) only by its class
(``Tensor``). For each fully concrete subscription, debug mode substitutes (inside beartype
only, see :mod:`typed_nn.debug.checker`) a cached class whose metaclass ``__instancecheck__``
also compares the data's ``elem``, ``device`` and rank with the tags. The subscriptions
themselves are never changed: ``typing.get_origin`` / ``get_args`` and subclassing behave
exactly as with debug mode off.
"""

from __future__ import annotations

import typing
from abc import ABCMeta
from typing import Any

from ..data.tensor import TensorLike
from ..tags import DeviceTag, DimTag, ElemTag

__all__ = ["TagCheckMeta", "concrete", "concrete_tags"]

_CHECK = "__typed_nn_check__"  # (origin, elem, device, rank), read on every check
_CACHE: dict[tuple[type, tuple[type, ...]], type] = {}


class TagCheckMeta(ABCMeta):
    """Metaclass of the check classes; ``isinstance`` compares the data's tags.

    It deliberately has no ``__repr__``: beartype reads the class's name instead (a metaclass
    ``__repr__`` upsets it), so the name is set to ``Tensor[Float32, CPU, Dim2]``.
    """

    def __instancecheck__(cls, obj: Any) -> bool:
        origin, elem, device, rank = cls.__dict__[_CHECK]
        return (
            isinstance(obj, origin)
            and obj.elem is elem
            and obj.device is device
            and len(obj.shape) == rank
        )

    def __subclasscheck__(cls, sub: type) -> bool:
        return sub is cls


def concrete_tags(hint: object) -> tuple[type, tuple[type, type, type]] | None:
    """``(origin, (elem, device, dim))`` for a concrete ``TensorLike`` subscription, else None."""
    origin = typing.get_origin(hint)
    if not (isinstance(origin, type) and issubclass(origin, TensorLike)):
        return None
    args = typing.get_args(hint)
    kinds = (ElemTag, DeviceTag, DimTag)
    if len(args) != 3 or not all(
        isinstance(a, type) and issubclass(a, k) for a, k in zip(args, kinds, strict=True)
    ):
        return None
    return origin, (args[0], args[1], args[2])


def concrete(origin: type, tags: tuple[type, type, type]) -> type:
    """The (cached) check class for ``origin[elem, device, dim]``."""
    key = (origin, tags)
    check = _CACHE.get(key)
    if check is None:
        elem, device, dim = tags
        name = f"{origin.__name__}[{', '.join(t.__name__ for t in tags)}]"
        namespace = {
            _CHECK: (origin, elem, device, getattr(dim, "rank")),  # noqa: B009 - DimTag's ClassVar
            "__module__": origin.__module__,
            "__qualname__": name,
            "__doc__": f"{name} checked by element, device and rank (typed_nn debug mode).",
            "__slots__": (),
        }
        check = TagCheckMeta(name, (), namespace)
        _CACHE[key] = check
    return check
