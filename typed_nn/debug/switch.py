"""Turning debug mode on: ``TYPED_NN_DEBUG=1`` at import, or ``typed_nn.debug.enable()``.

Off (the default), typed_nn imports neither beartype nor jaxtyping, and nothing of this mode
is installed: public functions are the plain functions and the executor runs no check. On,
two things are installed, once:

* every function exported by a typed_nn facade is checked by beartype on each call, with
  concrete tagged types (``Tensor[Float32, CPU, Dim2]``, ``Matrix[Float32, CPU]``) checked by
  element, device and rank (:mod:`typed_nn.debug.checker`);
* every evaluated node is checked for NaN / Inf, and Int32 arithmetic for wrap-around (the
  evaluator does not fuse meanwhile);
* the evaluator's sanitizer is on (``options.sanitize``: a cached value that changed after it
  was computed, a program's memory reuse; docs/evaluation.md).

Subscriptions are never changed, on or off. Enable it before importing the code to check: a
public function bound earlier in a user module (``from typed_nn.ops import log``) stays the
unchecked one. It needs the ``debug`` extra (beartype, jaxtyping): without it, turning it on
is a ``MissingDependencyError`` naming the extra, at ``import typed_nn`` too when
``TYPED_NN_DEBUG`` asks for it.
"""

from __future__ import annotations

import importlib
import os

from ..errors import missing_dependency
from ..evaluate import hooks
from ..evaluate.options import options

__all__ = ["ENV_VAR", "enable", "enable_if_requested", "is_enabled", "require"]

ENV_VAR = "TYPED_NN_DEBUG"
"""Set to ``1`` (or ``true`` / ``yes`` / ``on``) to enable debug mode when typed_nn is imported."""


class _State:
    enabled = False


def is_enabled() -> bool:
    """Whether debug mode is on in this interpreter."""
    return _State.enabled


def require(*packages: str, feature: str = "debug mode") -> None:
    """Import ``packages`` (of the debug extra): a ``MissingDependencyError`` naming the
    extra and its install command for the first that is not installed."""
    for package in packages:
        try:
            importlib.import_module(package)
        except ImportError:
            raise missing_dependency(feature, package, "debug") from None


def enable() -> None:
    """Turn debug mode on for the rest of this interpreter's life (idempotent); a
    ``MissingDependencyError`` without the debug extra's beartype."""
    if _State.enabled:
        return
    _enable("debug mode")


def _enable(feature: str) -> None:
    require("beartype", feature=feature)
    from .numeric import check_finite
    from .overflow import check_int_cast, check_int_overflow
    from .public import wrap_facades

    hooks.node_checks.append(check_finite)
    hooks.node_checks.append(check_int_overflow)
    hooks.node_checks.append(check_int_cast)
    options.sanitize = True  # the memory checks too (docs/evaluation.md, "Memory")
    wrap_facades()
    _State.enabled = True


def enable_if_requested() -> None:
    """Enable debug mode when the ``TYPED_NN_DEBUG`` environment variable asks for it."""
    value = os.environ.get(ENV_VAR, "")
    if value.strip().lower() in ("1", "true", "yes", "on") and not _State.enabled:
        _enable(f"debug mode ({ENV_VAR}={value})")
