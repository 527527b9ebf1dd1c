"""Which array library an implementation's operands live in (numpy, or cupy on the GPU).

Most numpy implementations run unchanged on cupy arrays: numpy hands ufuncs and array
functions (``np.exp``, ``np.tensordot``, ``np.stack``, ...) to cupy through
``__array_ufunc__`` / ``__array_function__``. Calls that *make* an array from nothing
(``np.empty``, ``np.zeros``, ``np.full``, ``np.asarray``, ``np.ascontiguousarray``) are not
dispatched: an implementation that allocates asks :func:`module_of` for the library of its
inputs instead. Both backends then share one function (``backends/cupy`` registers it for
the GPU), with numpy inputs taking exactly the numpy path they took before.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["asarray_like", "module_of"]

_HOST_TYPES = (np.ndarray, int, float, bool)


def module_of(*values: Any) -> ModuleType:
    """numpy, or the GPU array library when any of ``values`` is a GPU (cupy) array.

    Python numbers and numpy arrays or scalars count as host values. cupy is looked up, never
    imported here: a cupy array can only exist once cupy was imported.
    """
    for v in values:
        t = type(v)
        if t in _HOST_TYPES or isinstance(v, np.ndarray | np.generic):
            continue
        if t.__module__.startswith("cupy"):
            from ..tags import GPU
            from . import array_module  # the device's module (registers the backend once)

            return array_module(GPU)
    return np


def asarray_like(value: Any, like: Any, dtype: Any = None) -> Any:
    """``value`` as an array of ``like``'s library (a 0-d array rather than a scalar)."""
    return module_of(like).asarray(value, dtype=dtype)
