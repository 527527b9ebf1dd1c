"""Turning debug mode on: ``TYPED_NN_DEBUG=1`` at import, or ``typed_nn.debug.enable()``.

Off (the default), typed_nn imports neither beartype nor jaxtyping, and nothing of this mode
is installed: public functions are the plain functions, subscriptions are Generic's own, and
the executor runs no check. On, three things are installed, once:

* concrete subscriptions (``Tensor[Float32, CPU, Dim2]``, ``Matrix[Float32, CPU]``) become
  classes that ``isinstance``, beartype and jaxtyping check by element, device and rank;
* every function exported by a typed_nn facade is checked by beartype on each call;
* every evaluated node is checked for NaN / Inf (the evaluator does not fuse meanwhile).

Enable it before importing the code to check: names already bound in user modules to a
public function or an alias (``from typed_nn import Matrix``) keep the unchecked object.
"""

from __future__ import annotations

import os
import sys
from typing import Any, get_args

from ..data.tensor import Matrix, Scalar, Tensor3, Tensor4, Vector
from ..data.tensor_like import TensorLike, subscription_hooks
from ..evaluate import hooks

__all__ = ["ENV_VAR", "FACADES", "enable", "enable_if_requested", "is_enabled"]

ENV_VAR = "TYPED_NN_DEBUG"
"""Set to ``1`` (or ``true`` / ``yes`` / ``on``) to enable debug mode when typed_nn is imported."""

FACADES = (
    "typed_nn",
    "typed_nn.data",
    "typed_nn.evaluate",
    "typed_nn.ops",
    "typed_nn.layers",
    "typed_nn.model",
    "typed_nn.policies",
)
"""The modules whose exported functions are the public surface."""

_ALIASES: tuple[object, ...] = (Scalar, Vector, Matrix, Tensor3, Tensor4)


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
    from .public import wrap_facades
    from .subscription import checkable

    subscription_hooks.append(checkable)
    _rebind_aliases()
    hooks.node_checks.append(check_finite)
    wrap_facades()
    _State.enabled = True


def enable_if_requested() -> None:
    """Enable debug mode when the ``TYPED_NN_DEBUG`` environment variable asks for it."""
    if os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on"):
        enable()


def _rebind_aliases() -> None:
    """Re-create ``Matrix`` & co. through the debug subscription, wherever typed_nn bound them.

    They were made when typed_nn was imported, before the hook existed; re-created, their
    concrete subscriptions (``Matrix[Float32, CPU]``) become checkable.
    """
    for old in _ALIASES:
        new = _subscribe(TensorLike, get_args(old))
        for module_name, module in list(sys.modules.items()):
            if module_name.split(".")[0] != "typed_nn" or module is None:
                continue
            for attr, value in list(vars(module).items()):
                if value is old:
                    setattr(module, attr, new)


def _subscribe(generic: Any, args: tuple[Any, ...]) -> Any:
    return generic[args]
