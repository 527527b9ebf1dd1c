"""Turning debug mode on: ``TYPED_NN_DEBUG=1`` at import, or ``typed_nn.debug.enable()``.

Off (the default), typed_nn imports neither beartype nor jaxtyping, and nothing of this mode
is installed: public functions are the plain functions and the executor runs no check. On,
two things are installed, once:

* every function exported by a typed_nn facade is checked by beartype on each call, with
  concrete tagged types (``Tensor[Float32, CPU, Dim2]``, ``Matrix[Float32, CPU]``) checked by
  element, device and rank (:mod:`typed_nn.debug.checker`);
* every evaluated node is checked for NaN / Inf, and Int32 arithmetic for wrap-around (the
  evaluator does not fuse meanwhile).

Subscriptions are never changed, on or off. Enable it before importing the code to check: a
public function bound earlier in a user module (``from typed_nn.ops import log``) stays the
unchecked one.
"""

from __future__ import annotations

import os

from ..evaluate import hooks

__all__ = ["ENV_VAR", "enable", "enable_if_requested", "is_enabled"]

ENV_VAR = "TYPED_NN_DEBUG"
"""Set to ``1`` (or ``true`` / ``yes`` / ``on``) to enable debug mode when typed_nn is imported."""


class _State:
    enabled = False


def is_enabled() -> bool:
    """Whether debug mode is on in this interpreter."""
    return _State.enabled


def enable() -> None:
    """Turn debug mode on for the rest of this interpreter's life (idempotent)."""
    if _State.enabled:
        return
    from .numeric import check_finite
    from .overflow import check_int_overflow
    from .public import wrap_facades

    hooks.node_checks.append(check_finite)
    hooks.node_checks.append(check_int_overflow)
    wrap_facades()
    _State.enabled = True


def enable_if_requested() -> None:
    """Enable debug mode when the ``TYPED_NN_DEBUG`` environment variable asks for it."""
    if os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on"):
        enable()
