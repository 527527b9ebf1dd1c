"""Policy major classes: the base class and how a major's minors are read and checked.

A *major* groups related choices (MetaNN's ``MajorClass``). It is a frozen dataclass whose
fields are its *minor categories*, each with a default::

    @dataclass(frozen=True)
    class GradPolicy(PolicyMajor):
        is_update: bool = False
        is_feedback_output: bool = False

An instance of the major is a complete answer for every minor: ``policy_select`` returns one.
The first time a major is used it is checked (a frozen dataclass, every field defaulted,
annotations typed_nn can check) and what was read is cached.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import TypeVar

from typed_nn.errors import PolicyError, message

from .annotations import describe, is_supported, show_value, value_fits
from .report import built_at

__all__ = ["MajorT", "PolicyMajor", "check_value", "minor_annotation", "minor_defaults"]


class PolicyMajor:
    """Base of every policy major class; subclasses are frozen dataclasses of minors."""

    __slots__ = ()


MajorT = TypeVar("MajorT", bound=PolicyMajor)
"""A policy major class (``GradPolicy``, a user's own major, ...)."""

_ANNOTATIONS: dict[type[PolicyMajor], dict[str, object]] = {}
_DEFAULTS: dict[type[PolicyMajor], dict[str, object]] = {}


def _fail(major: type, problem: str, hint: str) -> PolicyError:
    """A PolicyError saying why ``major`` cannot be used as a policy major."""
    return PolicyError(
        message(
            f"cannot use {major.__qualname__} as a policy major: {problem}.",
            [("major", major.__qualname__)],
            built_at=built_at(),
            hint=hint,
        )
    )


def _read_major(major: object) -> None:
    """Check ``major`` once and cache its minors' annotations and defaults."""
    if not (isinstance(major, type) and issubclass(major, PolicyMajor)):
        raise PolicyError(
            message(
                f"cannot use {show_value(major)} as a policy major: not a PolicyMajor subclass.",
                [("received", show_value(major))],
                hint="declare it as '@dataclass(frozen=True) class MyPolicy(PolicyMajor): ...'.",
            )
        )
    params: object = getattr(major, "__dataclass_params__", None)
    own = "__dataclass_fields__" in major.__dict__
    if not (own and getattr(params, "frozen", False)):
        raise _fail(major, "it is not a frozen dataclass", "decorate it @dataclass(frozen=True).")
    try:
        hints = typing.get_type_hints(major)
    except NameError as exc:
        problem = f"an annotation cannot be resolved ({exc})"
        raise _fail(major, problem, "define the major and its types at module level.") from None
    annotations: dict[str, object] = {}
    defaults: dict[str, object] = {}
    fields: dict[str, dataclasses.Field[object]] = major.__dict__["__dataclass_fields__"]
    for field in fields.values():
        if typing.get_origin(hints[field.name]) is typing.ClassVar:
            continue
        if field.default_factory is not dataclasses.MISSING:
            default: object = field.default_factory()
        elif field.default is not dataclasses.MISSING:
            default = field.default
        else:
            raise _fail(
                major, f"minor '{field.name}' has no default", f"give it one: '{field.name}: ...'."
            )
        if not is_supported(hints[field.name]):
            raise _fail(
                major,
                f"minor '{field.name}' is annotated {describe(hints[field.name])}",
                "use a class, type, type[X], X | None, tuple[X, ...], Literal or Callable.",
            )
        annotations[field.name] = hints[field.name]
        defaults[field.name] = default
    _ANNOTATIONS[major] = annotations
    _DEFAULTS[major] = defaults


def minor_defaults(major: type[PolicyMajor]) -> dict[str, object]:
    """Every minor of ``major`` with its default, in declaration order (a fresh dict)."""
    if major not in _DEFAULTS:
        _read_major(major)
    return dict(_DEFAULTS[major])


def minor_annotation(major: type[PolicyMajor], minor: str, *, policy: str) -> object:
    """The annotation of ``major.minor``; a PolicyError naming ``policy`` if there is none."""
    if major not in _ANNOTATIONS:
        _read_major(major)
    annotations = _ANNOTATIONS[major]
    if minor in annotations:
        return annotations[minor]
    given: object = minor  # callers without a type checker may pass anything
    close = difflib.get_close_matches(given, annotations, n=1) if isinstance(given, str) else []
    suggestion = f"did you mean '{close[0]}'? " if close else ""
    raise PolicyError(
        message(
            f"cannot declare policy {policy}: {major.__qualname__} has no minor '{minor}'.",
            [("declared", ", ".join(annotations)), ("received", repr(minor))],
            built_at=built_at(),
            hint=f"{suggestion}use one of the minors of {major.__qualname__}.",
        )
    )


def check_value(major: type[PolicyMajor], minor: str, value: object, *, policy: str) -> None:
    """Raise a PolicyError naming ``policy`` unless ``value`` fits ``major.minor``."""
    annotation = minor_annotation(major, minor, policy=policy)
    if value_fits(annotation, value):
        return
    default = _DEFAULTS[major][minor]
    raise PolicyError(
        message(
            f"cannot declare policy {policy}: "
            f"{major.__qualname__}.{minor} takes {describe(annotation)}.",
            [
                ("declared", describe(annotation)),
                ("received", f"{show_value(value)} ({type(value).__qualname__})"),
            ],
            built_at=built_at(),
            hint=f"pass a value of type {describe(annotation)}, "
            f"like the default {show_value(default)}.",
        )
    )
