"""beartype as debug mode configures it: tagged types checked by element, device and rank.

``CONF`` carries a hint override that replaces, while beartype builds a checker, every
concrete subscription (``Tensor[Float32, CPU, Dim2]``, ``Matrix[Float32, CPU]``, a user alias,
a generic ``Matrix[FE, Dv]``) by its check class from :mod:`typed_nn.debug.subscription`,
also inside other hints (``list[Matrix[Float32, CPU]] | None``). ``beartype_tagged`` is
beartype with ``CONF`` and a TypeVar scope per call: the type checker debug mode gives
jaxtyping's import hook.

Imported only when debug mode is enabled (it imports beartype).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from beartype import BeartypeConf, FrozenDict, beartype
from beartype.roar import BeartypeCallHintReturnViolation, BeartypeCallHintViolation

from . import generic
from .subscription import concrete, tagged

__all__ = ["CONF", "TagOverrides", "beartype_tagged"]

F = TypeVar("F", bound=Callable[..., Any])


class _Marker:
    """A key that makes TagOverrides unequal to beartype's default (empty) overrides, whose
    configuration beartype would otherwise hand back from its cache."""


class TagOverrides(FrozenDict[object, object]):
    """beartype ``hint_overrides`` computed per hint: tagged subscriptions -> check classes."""

    def get(self, hint: object, default: object = None) -> object:
        found = tagged(hint)
        if found is not None:
            return concrete(*found)
        return super().get(hint, default)


def _keep_global_random() -> None:
    """Give beartype a private random source.

    beartype samples one item of each checked container with ``random.getrandbits``, i.e. the
    global generator: debug mode would then change what a user's seeded ``random`` produces.
    beartype 0.23 binds that function in one module; point it at a private generator.
    """
    import random

    from beartype._check.code import codemain  # private, hence the guard

    if hasattr(codemain, "getrandbits"):
        # Deliberately rebinds the name codemain imported from random (not re-exported).
        codemain.getrandbits = random.Random(0x7E57ED).getrandbits  # pyright: ignore[reportPrivateImportUsage]


_keep_global_random()

CONF = BeartypeConf(
    is_color=False, is_pep484_tower=True, hint_overrides=TagOverrides({_Marker: _Marker})
)
"""beartype's configuration in debug mode: no colour codes (messages are matched in tests);
the numeric tower, as the type checkers read hints (an int where ``float`` or ``complex`` is
declared: numpy's ``ArrayLike`` declares numbers as ``complex``)."""


def beartype_tagged(fn: F) -> F:
    """``beartype(conf=CONF)(fn)``: beartype that checks tags too, each TypeVar of tags bound
    once per call (``x: Matrix[FE, Dv]`` and the result share ``FE``).

    A tag mismatch under a TypeVar-generic annotation is raised as typed_nn's error
    (``ElemTypeError``, ``DeviceError``, ``RankError``), from beartype's violation.
    """
    checked = beartype(conf=CONF)(fn)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        scope = generic.opened()
        try:
            return checked(*args, **kwargs)
        except BeartypeCallHintViolation as exc:
            if scope.failure is None:
                raise
            is_return = isinstance(exc, BeartypeCallHintReturnViolation)
            arguments = generic.arguments_of(fn, args, kwargs)
            raise generic.violation(fn, scope.failure, arguments, is_return=is_return) from exc
        finally:
            generic.closed()

    wrapped: F = call  # type: ignore[assignment]
    return wrapped
