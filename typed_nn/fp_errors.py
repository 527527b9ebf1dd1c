"""Silence numpy's floating-point warnings around kernels, cheaply.

Kernels run with every floating-point warning ignored (an overflow to inf is a value, which
debug mode checks). ``np.errstate`` builds its error state on every entry, 0.8 us: a tenth of
a small compiled step. numpy (>= 2.0) keeps that state in a context variable; the "ignore
all" state is built once here and set directly, which is what ``np.errstate`` does. If a
numpy release moves the variable, ``np.errstate`` is used instead.

    token = ignore_fp_errors()
    try:
        ...
    finally:
        restore_fp_errors(token)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

__all__ = ["ignore_fp_errors", "restore_fp_errors"]

_config = importlib.import_module("numpy._core._ufunc_config")
_contextvar: Any = getattr(_config, "_extobj_contextvar", None)
_make_extobj: Any = getattr(_config, "_make_extobj", None)

if _contextvar is not None and _make_extobj is not None:
    # The context variable's own methods, without a Python frame around them (0.08 us of
    # every compiled call): ``ignore_fp_errors()`` sets the "ignore all" state and returns
    # the token, ``restore_fp_errors(token)`` restores the state it replaced.
    ignore_fp_errors: Callable[[], Any] = partial(_contextvar.set, _make_extobj(all="ignore"))
    restore_fp_errors: Callable[[Any], None] = _contextvar.reset

else:  # pragma: no cover - numpy moved its private error state

    def ignore_fp_errors() -> Any:
        """Ignore floating-point errors in this context; returns the token to restore."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore_fp_errors(token: Any, /) -> None:  # positional-only, as ContextVar.reset
        """Restore the state ``ignore_fp_errors`` replaced."""
        token.__exit__(None, None, None)
