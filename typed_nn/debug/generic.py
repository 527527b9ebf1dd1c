"""TypeVars of tags bound once per checked call: ``Matrix[FE, Dv]`` in debug mode.

A checked call (:func:`typed_nn.debug.checker.beartype_tagged`, hence typed_nn's public
functions and the functions of a package under ``typed_nn.debug.install``) opens a scope.
Within it, the first data checked against a TypeVar position (``FE`` of ``x: Matrix[FE, Dv]``)
binds the TypeVar to that data's tag; every later parameter, and the return value, must carry
the same tag. Outside a scope (beartype's own import hook, ``install(pkg, shapes=False)``) a
TypeVar is checked by its bound or constraints only, as beartype checks TypeVars.

A mismatch is recorded in the scope for the check's caller to turn into typed_nn's error
(:func:`violation`), which names the function, the parameter, both tags and a fix.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import DeviceError, ElemTypeError, RankError, TypedNNError, message

__all__ = [
    "Failure",
    "Scope",
    "accept",
    "arguments_of",
    "closed",
    "opened",
    "reject",
    "violation",
]

_ERRORS: tuple[type[TypedNNError], ...] = (ElemTypeError, DeviceError, RankError)
_WHAT = ("element", "device", "rank")


@dataclass(frozen=True)
class Failure:
    """Why ``obj`` did not match ``declared``: at ``position`` (0 element, 1 device, 2 rank)
    ``value`` is not ``part`` (a tag or a TypeVar); ``binder`` is the data that bound it."""

    declared: str
    obj: Any
    position: int
    part: object
    value: type | None
    bound: type | None = None
    binder: object = None


class Scope:
    """The TypeVars bound so far in one checked call, and its last mismatch."""

    __slots__ = ("bindings", "failure")

    def __init__(self) -> None:
        self.bindings: dict[TypeVar, tuple[type, object]] = {}
        self.failure: Failure | None = None


_LOCAL = threading.local()


def _stack() -> list[Scope]:
    stack: list[Scope] | None = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


def opened() -> Scope:
    """Open a scope for one checked call (close it with :func:`closed`)."""
    scope = Scope()
    _stack().append(scope)
    return scope


def closed() -> None:
    """Close the innermost scope."""
    _stack().pop()


def reject(declared: str, obj: object, failure: Failure | None) -> bool:
    """Record ``failure`` (None: not a tag mismatch, beartype reports it) and return False."""
    stack = _stack()
    if stack:
        stack[-1].failure = failure
    return False


def accept(
    declared: str, obj: Any, parts: tuple[object, ...], values: tuple[type | None, ...]
) -> bool:
    """Whether ``obj``'s tags ``values`` match ``parts``; binds its TypeVars in the scope."""
    stack = _stack()
    scope = stack[-1] if stack else None
    new: list[tuple[TypeVar, type]] = []
    for position, (part, value) in enumerate(zip(parts, values, strict=True)):
        if not isinstance(part, TypeVar):
            if value is not part:
                return reject(declared, obj, Failure(declared, obj, position, part, value))
            continue
        limits = part.__constraints__ or (part.__bound__,)
        if value is None or not any(t is None or issubclass(value, t) for t in limits):
            return reject(declared, obj, Failure(declared, obj, position, part, value))
        earlier = scope.bindings.get(part) if scope is not None else None
        if earlier is None:
            new.append((part, value))
        elif earlier[0] is not value:
            failure = Failure(declared, obj, position, part, value, *earlier)
            return reject(declared, obj, failure)
    if scope is not None:
        for part, value in new:
            scope.bindings[part] = (value, obj)
    return True


def violation(
    fn: Callable[..., Any],
    failure: Failure,
    arguments: Mapping[str, object],
    *,
    is_return: bool,
) -> TypedNNError:
    """typed_nn's error for ``failure`` in a call of ``fn`` with ``arguments``."""
    function = f"{fn.__module__}.{fn.__qualname__}"
    where = "return value" if is_return else _where(failure.obj, arguments)
    part, value = failure.part, failure.value
    if failure.position == 2:
        got = str(len(failure.obj.shape))
    else:
        got = value.__name__ if value is not None else "?"
    items = [
        ("function", function),
        ("declared", failure.declared),
        ("received", _describe(failure.obj)),
    ]
    if failure.bound is not None:
        part_name = getattr(part, "__name__", str(part))
        headline = (
            f"{fn.__qualname__}: {where} has {_WHAT[failure.position]} {got}, but "
            f"{part_name} is {failure.bound.__name__} in this call."
        )
        items.append(
            (
                "bound",
                f"{part_name} = {failure.bound.__name__} by {_where(failure.binder, arguments)}",
            )
        )
    else:
        headline = (
            f"{fn.__qualname__}: {where} has {_WHAT[failure.position]} {got}, "
            f"not {_declared_part(part, failure.position)}."
        )
    return _ERRORS[failure.position](message(headline, items, hint=_hint(failure)))


def _declared_part(part: object, position: int) -> str:
    if isinstance(part, TypeVar):
        limits = part.__constraints__ or (part.__bound__,)
        names = " or ".join(getattr(t, "__name__", "any tag") for t in limits)
        return f"{part.__name__} (a {names})"
    rank = getattr(part, "rank", None)
    return (
        f"rank {rank} ({getattr(part, '__name__', part)})"
        if position == 2
        else str(getattr(part, "__name__", part))
    )


def _hint(failure: Failure) -> str:
    tag = failure.bound or (None if isinstance(failure.part, TypeVar) else failure.part)
    name = getattr(tag, "__name__", None)
    if failure.position == 0:
        fix = f"convert it with ops.astype(x, tn.{name})" if name else "convert it (ops.astype)"
        return f"{fix}, or annotate with a second TypeVar where elements may differ."
    if failure.position == 1:
        fix = f"move it with ops.to_device(x, tn.{name})" if name else "move it (ops.to_device)"
        return f"{fix}, or annotate with a second TypeVar where devices may differ."
    return (
        "reshape it, or declare the rank it has: Vector is rank 1, Matrix rank 2, "
        "a TypeVar such as D any rank."
    )


def _describe(obj: object) -> str:
    describe = getattr(obj, "describe", None)
    return str(describe()) if callable(describe) else type(obj).__name__


def _where(obj: object, arguments: Mapping[str, object]) -> str:
    """``parameter 'x'``: the argument that is (or directly holds) ``obj``."""
    for name, value in arguments.items():
        held = list(value.values()) if isinstance(value, dict) else value
        if value is obj or (isinstance(held, list | tuple) and any(v is obj for v in held)):
            return f"parameter {name!r}"
    return "an argument"


def arguments_of(
    fn: Callable[..., Any], args: tuple[object, ...], kwargs: dict[str, Any]
) -> dict[str, object]:
    """``fn``'s parameters bound to ``args`` and ``kwargs`` (empty when they do not bind)."""
    try:
        return dict(inspect.signature(fn).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {}
