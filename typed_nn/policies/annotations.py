"""Run-time checks of a policy value against its minor's annotation.

A minor category is a dataclass field, and its annotation is the contract for every value a
policy object may give it. This module answers two questions about an annotation: does a
value fit it (:func:`value_fits`), and how to name it in an error (:func:`describe`). Only
the forms a minor needs are supported (see :func:`is_supported`); anything else is refused when
the major is first used, so a typo in an annotation never silently accepts every value.
"""

from __future__ import annotations

import collections.abc
import enum
import types
import typing

__all__ = ["describe", "is_supported", "show_value", "value_fits"]


def _union_args(annotation: object) -> tuple[object, ...] | None:
    """The members of ``X | Y`` or ``Optional[X]``; None for anything else."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return None


def is_supported(annotation: object) -> bool:
    """Whether :func:`value_fits` can check values against ``annotation``.

    Supported: ``object``, ``None``, plain classes (enums included), ``type``, ``type[X]``,
    unions of those, ``tuple[X, ...]``, ``tuple[X, Y]``, ``Literal[...]`` and ``Callable``.
    """
    members = _union_args(annotation)
    if members is not None:
        return all(is_supported(m) for m in members)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal or origin is collections.abc.Callable:
        return True
    if origin is type:
        return len(args) == 1 and isinstance(args[0], type)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return is_supported(args[0])
        return all(is_supported(a) for a in args)
    return annotation is None or isinstance(annotation, type)


def value_fits(annotation: object, value: object) -> bool:
    """Whether ``value`` is a legal value of a minor annotated ``annotation``.

    ``bool`` does not count as ``int`` or ``float`` here (``PModifyDimNumIs(True)`` is a
    mistake, not the number 1); ``int`` counts as ``float``, as it does for mypy.
    """
    members = _union_args(annotation)
    if members is not None:
        return any(value_fits(m, value) for m in members)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin is collections.abc.Callable:
        return callable(value)
    if origin is type:
        return isinstance(value, type) and issubclass(value, args[0])
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(value_fits(args[0], v) for v in value)
        if len(value) != len(args):
            return False
        return all(value_fits(a, v) for a, v in zip(args, value, strict=True))
    return _fits_class(annotation, value)


def _fits_class(annotation: object, value: object) -> bool:
    """The plain-class case of :func:`value_fits` (with the bool and int rules)."""
    if annotation is None:
        return value is None
    if annotation is object:
        return True
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(annotation, type) and isinstance(value, annotation)


def describe(annotation: object) -> str:
    """A short readable name for an annotation: ``int``, ``type | None``, ``tuple[int, ...]``."""
    if annotation is None or annotation is types.NoneType:
        return "None"
    if annotation is Ellipsis:
        return "..."
    if isinstance(annotation, list):  # the parameter list of a Callable
        return "[" + ", ".join(describe(a) for a in annotation) + "]"
    members = _union_args(annotation)
    if members is not None:
        return " | ".join(describe(m) for m in members)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin is not None:
        name = getattr(origin, "__qualname__", repr(origin))
        return f"{name}[{', '.join(describe(a) for a in args)}]" if args else name
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation)


def show_value(value: object) -> str:
    """A value as a user wrote it: classes by name, enum members as ``Enum.NAME``."""
    if isinstance(value, type):
        return value.__qualname__
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, tuple):
        inner = ", ".join(show_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)
