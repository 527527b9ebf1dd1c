"""Debug mode's checks on typed_nn's public functions (beartype).

Every plain function exported by a typed_nn facade module (``typed_nn``, ``typed_nn.ops``,
``typed_nn.layers``, ...) is replaced *in that facade* by a beartype-checked wrapper, so a call
through ``tn.`` / ``ops.`` checks its arguments and result against the annotations, tags
included (see :mod:`typed_nn.debug.checker`). Facades imported later are wrapped when
they are imported. The functions' own modules keep the originals, so typed_nn's internal calls
cost nothing more.

Where typed_nn's own checks also reject the call (an ``OperandError``, a ``RankError``, ...),
their error wins: it names the op and the fix, which beartype's cannot. Methods (``x.assign``,
operators) are not wrapped: operators are checked when their node is built.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import inspect
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from beartype.roar import (
    BeartypeCallHintParamViolation,
    BeartypeCallHintReturnViolation,
    BeartypeException,
)

from ..errors import TypedNNError
from .checker import beartype_tagged

__all__ = ["FACADES", "UNCHECKED", "checked", "wrap_facades", "wrap_module"]

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


UNCHECKED: dict[str, str] = {}
"""Public functions debug mode left unwrapped, with beartype's reason (see docs/debug.md)."""

_CHECKED = "__typed_nn_checked__"
_RESULT = "__typed_nn_result__"


def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its parameters and result checked by beartype (debug mode).

    ``fn`` runs first, from this wrapper, so typed_nn's own checks keep their richer errors
    and nodes record the user's line as their build site (a beartype wrapper frame between
    the user and ``fn`` would be taken for it). beartype then checks the arguments and the
    result through a stub that has ``fn``'s signature and annotations.
    """
    try:
        bear = beartype_tagged(_stub(fn))
    except BeartypeException as exc:  # a hint beartype cannot check (a plain Protocol, ...)
        UNCHECKED[f"{fn.__module__}.{fn.__qualname__}"] = f"{type(exc).__name__}: {exc}"
        return fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except TypedNNError:
            raise
        except Exception as exc:
            # A crash on arguments typed_nn did not expect: say which argument was wrong.
            try:
                bear(*_as_python(args), **_as_python(kwargs), **{_RESULT: None})
            except BeartypeCallHintParamViolation as violation:
                raise violation from exc
            except BeartypeCallHintReturnViolation:
                pass
            raise
        return bear(*_as_python(args), **_as_python(kwargs), **{_RESULT: result})

    setattr(call, _CHECKED, True)
    return call


def _as_python(value: Any) -> Any:
    r"""``value`` with numpy numbers as the Python numbers they stand for, in tuples, lists
    and dicts too: what normal mode takes for an ``int``, a ``float`` or a ``bool`` (a shape
    of ``np.int64``\ s), debug mode checks as one."""
    kind = type(value)
    if kind is tuple or kind is list:
        return kind(_as_python(v) for v in value)
    if kind is dict:
        return {k: _as_python(v) for k, v in value.items()}
    if isinstance(value, np.generic) and not isinstance(value, np.str_ | np.bytes_):
        return value.item()
    return value


def _stub(fn: Callable[..., Any]) -> types.FunctionType:
    """A function with ``fn``'s parameters, defaults and annotations that returns its
    ``__typed_nn_result__`` keyword argument (what beartype decorates)."""
    assert isinstance(fn, types.FunctionType)
    code = fn.__code__
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    params = list(names[:n_pos])
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    i = n_pos + n_kw
    if code.co_flags & inspect.CO_VARARGS:
        params.append("*" + names[i])
        i += 1
    else:
        params.append("*")
    params += [*names[n_pos : n_pos + n_kw], _RESULT]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + names[i])
    namespace: dict[str, Any] = {}
    exec(f"def {fn.__name__}({', '.join(params)}):\n    return {_RESULT}\n", namespace)
    stub = types.FunctionType(
        namespace[fn.__name__].__code__, fn.__globals__, fn.__name__, fn.__defaults__
    )
    stub.__kwdefaults__ = fn.__kwdefaults__
    # numpy's ArrayLike is a static union (its nested-sequence protocol refuses a tuple of
    # floats at run time): numpy itself, then typed_nn's checks, judge the data
    stub.__annotations__ = {
        k: "object" if v in ("npt.ArrayLike", "ArrayLike") else v
        for k, v in fn.__annotations__.items()
    }
    stub.__module__ = fn.__module__
    stub.__qualname__ = fn.__qualname__
    return stub


def _is_public_function(name: str, value: object) -> bool:
    return (
        not name.startswith("_")
        and isinstance(value, types.FunctionType)
        and value.__module__.startswith("typed_nn")
        and not value.__module__.startswith("typed_nn.debug")
        and not getattr(value, _CHECKED, False)
    )


def wrap_module(module: types.ModuleType) -> list[str]:
    """Replace the module's exported functions by checked ones; returns the names wrapped."""
    wrapped: dict[int, Callable[..., Any]] = {}
    names = []
    for name, value in list(vars(module).items()):
        if _is_public_function(name, value):
            if id(value) not in wrapped:
                wrapped[id(value)] = checked(value)
            setattr(module, name, wrapped[id(value)])
            names.append(name)
    return names


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Wraps a facade that is first imported after debug mode was enabled."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in FACADES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            execute(module)
            wrap_module(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def wrap_facades() -> None:
    """Wrap the facades imported so far, and the others when they are imported."""
    for name in FACADES:
        module = sys.modules.get(name)
        if module is not None:
            wrap_module(module)
    if not any(isinstance(f, _WrapOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _WrapOnImport())
