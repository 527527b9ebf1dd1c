"""``Module``: a model is a typed tree of parameters (DESIGN §5c; users import it as
``typed_nn.nn.Module``).

A module's fields (its instance attributes, in the order they were set) are:

* **parameters**: typed_nn data (a ``Tensor`` in a model; any ``TensorLike`` in a tree of
  gradients that ``tn.grad(loss, model)`` returns);
* **buffers**: non-trained state set as ``self.name = nn.buffer(tensor)`` (batch-norm
  statistics), and the state of stateful objects such as ``tn.Generator`` (a class that
  names its state tensors in ``_tree_buffers``);
* **submodules**, and lists, tuples and dicts (string keys) of any of these;
* **static configuration**: numbers, strings, booleans, None, types (tags), functions, and
  tuples of them.

Anything else is a ``ModuleError`` when it is set. One walk serves everything that takes a
module: :func:`named_parameters` (PyTorch's dotted names: ``block.0.weight``),
:func:`named_buffers`, :func:`tree_map` (the same type back), and through them ``tn.grad``,
the optimizers, state dicts and checkpoints. A tensor set under two paths is one parameter:
listed once, under its first path, and its gradient sums its uses.
"""

from __future__ import annotations

import enum
import functools
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any, Self, SupportsIndex, TypeVar, cast, overload

import numpy as np

from .. import inference_mode, tracing
from ..errors import ModuleError, message
from ..inference_mode import serving
from .scalable import ScalableTensor
from .tensor import AnyTensor, Tensor, TensorLike

__all__ = [
    "Module",
    "buffer",
    "buffers",
    "named_buffers",
    "named_parameters",
    "named_persistent",
    "named_submodules",
    "parameters",
    "require_module",
    "tree_map",
]

M = TypeVar("M", bound="Module")
T = TypeVar("T")

_STATIC = (
    int,
    float,
    complex,
    str,
    bytes,
    bool,
    type(None),
    type,
    enum.Enum,
    np.dtype,
    np.number,
    np.bool_,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    functools.partial,
)
"""Field values that are configuration, copied as they are by every walk."""

replaced = [0]
"""How many times a field of any module was set again or deleted (a parameter replaced by
another tensor, a submodule swapped, a configuration number changed). A compiled function
traced before holds the old objects and values, so ``tn.compile`` traces again when this
changed (``Step.stale``); setting the fields of a module being built does not count."""


class _Buffer:
    """What :func:`buffer` hands to ``Module.__setattr__``: a tensor to hold as a buffer."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: object) -> None:
        self.tensor = tensor


def buffer(tensor: T) -> T:
    """Mark ``tensor`` as a buffer of the module it is set on (``self.running_mean =
    nn.buffer(tn.zeros((n,), tn.Float32, tn.CPU))``): state a checkpoint and a state dict
    keep, that no gradient or optimizer touches."""
    if not isinstance(tensor, Tensor):
        raise ModuleError(
            message(
                "nn.buffer needs a principal tensor.",
                [("received", type(tensor).__name__)],
                hint="make it with tn.tensor(...) or tn.zeros(...).",
            )
        )
    return cast(T, _Buffer(tensor))


class Module:
    """Base of every model: subclass it and set fields in ``__init__`` (see the module doc).

    >>> class Affine(nn.Module):
    ...     def __init__(self) -> None:
    ...         self.weight = tn.zeros((3, 2), tn.Float32, tn.CPU)
    ...     def __call__(self, x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
    ...         return x @ self.weight
    """

    _tn_buffers: frozenset[str] = frozenset()
    """The names of this module's fields that are buffers (set by ``nn.buffer``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _serving_installed:
            _make_servable(cls)

    def __setattr__(self, name: str, value: object) -> None:
        if name in self.__dict__ and not name.startswith("_tn_"):
            replaced[0] += 1
        if isinstance(value, _Buffer):
            value = value.tensor
            object.__setattr__(self, "_tn_buffers", self._tn_buffers | {name})
        elif name in self._tn_buffers and not name.startswith("_tn_"):
            object.__setattr__(self, "_tn_buffers", self._tn_buffers - {name})
        if not name.startswith("_tn_"):
            path = f"{type(self).__name__}.{name}"
            _check_field(value, path)
            value = _watched(value, path)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        replaced[0] += 1
        object.__delattr__(self, name)

    @property
    def training(self) -> bool:
        """Training mode (``BatchNorm`` normalises by the batch and updates its statistics,
        ``Dropout`` drops), True at first: set for the whole tree by :meth:`train` and
        :meth:`eval`. A compiled function that read it holds for that mode: called after the
        mode changed, it traces again."""
        mode: bool = self.__dict__.get("_tn_training", True)
        trace = tracing.state.trace
        if trace is not None:
            trace.read_mode(self, mode)
        return mode

    @training.setter
    def training(self, mode: bool) -> None:
        object.__setattr__(self, "_tn_training", bool(mode))

    def train(self, mode: bool = True) -> Self:
        """Put this module and every submodule in training mode (``mode=False``: evaluation);
        returns the module, as PyTorch's ``Module.train``."""
        for m in _modules(self):
            object.__setattr__(m, "_tn_training", bool(mode))
        return self

    def eval(self) -> Self:
        """Put this module and every submodule in evaluation mode (``train(False)``)."""
        return self.train(False)

    def __getstate__(self) -> dict[str, Any]:
        """A copy or pickle leaves out the compiled programs of ``tn.inference()`` calls
        (``_tn_served``: locks and buffers, made again when needed)."""
        return {k: v for k, v in vars(self).items() if k != "_tn_served"}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={_brief(v)}" for k, v in _fields(self))
        return f"{type(self).__name__}({fields})"


class _FieldList(list[Any]):
    """A module's list field: items set, added or removed are checked as fields are (a bad
    item changes nothing), and count as a field set again (``replaced``: a compiled function
    traces again)."""

    __slots__ = ("_tn_path",)

    def __init__(self, items: Any = (), path: str = "") -> None:
        super().__init__(items)
        self._tn_path = path

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (_FieldList, (list(self), self._tn_path))

    def _rewatch(self) -> None:
        for i, item in enumerate(self):
            list.__setitem__(self, i, _watched(item, f"{self._tn_path}[{i}]"))


class _FieldDict(dict[str, Any]):
    """A module's dict field: as :class:`_FieldList`, by key."""

    __slots__ = ("_tn_path",)

    def __init__(self, items: Any = (), path: str = "") -> None:
        super().__init__(items)
        self._tn_path = path

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return (_FieldDict, (dict(self), self._tn_path))

    def _rewatch(self) -> None:
        for key, item in self.items():
            dict.__setitem__(self, key, _watched(item, f"{self._tn_path}[{key!r}]"))


_MATERIALISE = {"extend": list, "__iadd__": list, "__ior__": dict, "update": dict}
"""Mutators whose argument may be an iterator: read once, then tried and applied."""


def _mutator(cls: type, name: str) -> None:
    """``cls.name``: the container's own, tried on a copy and checked first, so a bad item
    raises before anything changed."""
    plain = cls.__mro__[1]
    base = getattr(plain, name)
    materialise = _MATERIALISE.get(name)

    @functools.wraps(base)
    def changing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if materialise is not None:
            args, kwargs = (materialise(*args, **kwargs),), {}
        trial = plain(self)
        base(trial, *args, **kwargs)
        _check_field(trial, self._tn_path)
        result = base(self, *args, **kwargs)
        self._rewatch()
        replaced[0] += 1
        return self if name.startswith("__i") else result

    setattr(cls, name, changing)


for _name in (
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "sort",
    "reverse",
):
    _mutator(_FieldList, _name)
for _name in (
    "__setitem__",
    "__delitem__",
    "__ior__",
    "pop",
    "popitem",
    "clear",
    "update",
    "setdefault",
):
    _mutator(_FieldDict, _name)


def _watched(value: object, path: str) -> object:
    """A list or dict field (nested ones too) as its watched twin; anything else as it is."""
    if type(value) is list:
        return _FieldList((_watched(v, f"{path}[{i}]") for i, v in enumerate(value)), path)
    if type(value) is dict:
        return _FieldDict({k: _watched(v, f"{path}[{k!r}]") for k, v in value.items()}, path)
    if type(value) is tuple:
        return tuple(_watched(v, f"{path}[{i}]") for i, v in enumerate(value))
    return value


_serving_installed = False
"""Whether module classes' ``__call__`` go through :func:`_servable`: from the first
``tn.inference(compiled=True)`` block on (a wrapped call costs ~0.7 us more; a program that
never asks pays nothing)."""
_install_lock = threading.Lock()


def _install_serving() -> None:
    """Wrap every module class's own ``__call__`` (and, from now on, each new class's)."""
    global _serving_installed
    with _install_lock:
        if _serving_installed:
            return
        todo = [Module]
        while todo:
            cls = todo.pop()
            _make_servable(cls)
            todo.extend(cls.__subclasses__())
        _serving_installed = True


def _make_servable(cls: type) -> None:
    call = cls.__dict__.get("__call__")
    if call is not None and not hasattr(call, "__tn_served__"):
        setattr(cls, "__call__", _servable(call))  # noqa: B010


inference_mode.on_first_compiled.append(_install_serving)


def _servable(call: Callable[..., T]) -> Callable[..., T]:
    """``call`` (a subclass's ``__call__``), run as a compiled program where a compiled
    ``tn.inference()`` block serves it (``inference_mode.module_call``); otherwise as it is.
    Inside a trace a call is part of the traced graph."""

    @functools.wraps(call)
    def served_call(self: Module, *args: Any, **kwargs: Any) -> T:
        if serving() and tracing.state.trace is None:
            served: T = inference_mode.module_call[0](call, self, args, kwargs)
            return served
        return call(self, *args, **kwargs)

    served_call.__tn_served__ = True  # type: ignore[attr-defined]
    return served_call


# --- the walk -----------------------------------------------------------------------------


def _fields(m: Module) -> Iterator[tuple[str, object]]:
    return ((k, v) for k, v in vars(m).items() if not k.startswith("_tn_"))


def _modules(m: Module) -> Iterator[Module]:
    """``m`` and every module below it."""
    yield m
    yield from (sub for _, sub, _ in named_submodules(m))


def named_submodules(m: Module, depth: int | None = None) -> Iterator[tuple[str, Module, int]]:
    """Every module below ``m`` in field order, down to ``depth`` levels: (dotted path,
    module, level), level 1 for the modules in ``m``'s own fields (``summary``'s rows)."""
    yield from _submodules(m, "", 1, depth)


def _submodules(
    node: object, path: str, level: int, depth: int | None
) -> Iterator[tuple[str, Module, int]]:
    if isinstance(node, Module):
        if path:  # node itself is listed by the caller that found it
            yield path, node, level - 1
        if depth is None or level <= depth:
            for name, value in _fields(node):
                yield from _submodules(value, _join(path, name), level + 1, depth)
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            yield from _submodules(value, _join(path, str(i)), level, depth)
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _submodules(value, _join(path, str(key)), level, depth)


def _stateful(value: object) -> tuple[str, ...] | None:
    names: object = getattr(type(value), "_tree_buffers", None)
    return cast(tuple[str, ...], names) if isinstance(names, tuple) else None


PARAM, BUFFER, STATE = 0, 1, 2
"""Leaf kinds: a parameter; a buffer (``nn.buffer``); a stateful object's state (a
generator's: a buffer that state dicts leave out, as PyTorch's keep no random state)."""


def _walk(node: object, path: str, kind: int) -> Iterator[tuple[str, int, AnyTensor]]:
    """(path, kind, leaf) for every data leaf under ``node``: a module's own parameters, then
    its own buffers, then what its other fields hold, each in field order (PyTorch's order)."""
    if isinstance(node, TensorLike):
        yield path, kind, node
    elif isinstance(node, Module):
        buffered = node._tn_buffers
        fields = list(_fields(node))
        own = [(n, v) for n, v in fields if isinstance(v, TensorLike)]
        for name, leaf in sorted(own, key=lambda f: f[0] in buffered):  # a stable sort
            inner = BUFFER if kind == PARAM and name in buffered else kind
            yield _join(path, name), inner, leaf
        for name, value in fields:
            if not isinstance(value, TensorLike):
                yield from _walk(value, _join(path, name), kind)
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            yield from _walk(value, _join(path, str(i)), kind)
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, _join(path, str(key)), kind)
    else:
        for name in _stateful(node) or ():
            yield from _walk(getattr(node, name), _join(path, name), STATE)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _unique(m: Module, kinds: tuple[int, ...]) -> list[Any]:
    seen: set[int] = set()
    found = []
    for path, kind, leaf in _walk(m, "", PARAM):
        if kind in kinds and id(leaf) not in seen:
            seen.add(id(leaf))
            found.append((path, leaf))
    return found


def named_parameters(m: Module) -> list[tuple[str, AnyTensor]]:
    """Every parameter of ``m`` with its dotted path (``"layers.0.weight"``), in PyTorch's
    order (a module's own parameters, then its submodules'); a tensor under two paths is
    listed once, under its first."""
    require_module(m, "named_parameters")
    return _unique(m, (PARAM,))


def parameters(m: Module) -> list[AnyTensor]:
    """The tensors of :func:`named_parameters`."""
    return [leaf for _, leaf in named_parameters(m)]


def named_buffers(m: Module) -> list[tuple[str, AnyTensor]]:
    """Every buffer of ``m`` (``nn.buffer`` fields, generator states) with its dotted path:
    what a checkpoint keeps beside the parameters."""
    require_module(m, "named_buffers")
    return _unique(m, (BUFFER, STATE))


def named_persistent(m: Module) -> list[tuple[str, AnyTensor]]:
    """Parameters and ``nn.buffer`` fields in PyTorch's state-dict order (a module's own
    parameters, its own buffers, then its submodules', each in field order):
    what a state dict holds, a tensor under every path it has (a tied weight, a shared
    submodule's), as PyTorch's state dicts list it. Generator states are left out, as
    PyTorch's state dicts keep no random state (a checkpoint keeps them)."""
    require_module(m, "state_dict")
    return [(path, leaf) for path, kind, leaf in _walk(m, "", PARAM) if kind in (PARAM, BUFFER)]


def buffers(m: Module) -> list[AnyTensor]:
    """The tensors of :func:`named_buffers`."""
    return [leaf for _, leaf in named_buffers(m)]


# One overload per number of trees: a lambda's parameters are then typed (tensors), which
# pyright's strict mode asks of ``nn.tree_map(lambda p, g: p - 0.1 * g, model, grads)``.
@overload
def tree_map(fn: Callable[[AnyTensor], AnyTensor], m: M, /) -> M: ...
@overload
def tree_map(fn: Callable[[AnyTensor, AnyTensor], AnyTensor], m: M, other: M, /) -> M: ...
@overload
def tree_map(
    fn: Callable[[AnyTensor, AnyTensor, AnyTensor], AnyTensor], m: M, other: M, third: M, /
) -> M: ...
@overload
def tree_map(fn: Callable[..., AnyTensor], m: M, /, *rest: M) -> M: ...
def tree_map(fn: Callable[..., AnyTensor], m: M, /, *rest: M) -> M:
    """A module of ``m``'s type whose parameters are ``fn(p, *ps)``: ``p`` a parameter of
    ``m``, ``ps`` those at the same path of ``rest`` (trees of the same structure, e.g. the
    gradients ``tn.grad(loss, m)`` returned). Buffers and configuration are ``m``'s own.

    >>> half = nn.tree_map(lambda p: p * 0.5, model)
    """
    require_module(m, "tree_map")
    for i, other in enumerate(rest):
        require_module(other, f"tree_map (tree {i + 2})")
    new = cast(M, _map(fn, m, rest, type(m).__name__, False, {}))
    owner = gradient_of(m)
    if owner is not None:  # clipped or scaled gradients are still that model's
        mark_gradient_of(new, owner)
    return new


def mark_gradient_of(tree: Module, model: Module) -> None:
    """Record that ``tree`` holds the gradients of ``model`` (``tn.grad`` / ``tn.vjp`` of a
    module), so an optimizer of another model of the same class can refuse them. A strong
    reference: gradients of a model made inline (``tn.grad(loss_of(Twin()), ...)``) or
    deleted since are still another model's."""
    object.__setattr__(tree, "_tn_gradient_of", model)


def gradient_of(tree: Module) -> Module | None:
    """The model whose gradients ``tree`` holds (:func:`mark_gradient_of`), if known."""
    return cast(Module | None, vars(tree).get("_tn_gradient_of"))


def _map(
    fn: Callable[..., AnyTensor],
    node: Any,
    rest: tuple[Any, ...],
    path: str,
    buf: bool,
    done: dict[tuple[int, ...], Any],
) -> Any:
    """``done``: what each (node, rest's nodes) became, so that a tensor or module at two paths
    (a tied weight, a shared submodule) is one in the new tree too."""
    for other in rest:
        _same_kind(node, other, path)
    key = (id(node), *map(id, rest))
    if key in done:
        return done[key]
    if isinstance(node, TensorLike):
        done[key] = node if buf else fn(node, *rest)
        return done[key]
    if isinstance(node, Module):
        new = done[key] = object.__new__(type(node))
        object.__setattr__(new, "_tn_buffers", node._tn_buffers)
        if "_tn_training" in vars(node):
            object.__setattr__(new, "_tn_training", vars(node)["_tn_training"])
        for name, value in _fields(node):
            kids = tuple(_field_of(o, name, path) for o in rest)
            inner = buf or name in node._tn_buffers
            object.__setattr__(new, name, _map(fn, value, kids, f"{path}.{name}", inner, done))
        return new
    if isinstance(node, list | tuple):
        items = [
            _map(fn, v, tuple(o[i] for o in rest), f"{path}[{i}]", buf, done)
            for i, v in enumerate(node)
        ]
        return items if isinstance(node, list) else type(node)(items)
    if isinstance(node, dict):
        return {
            k: _map(fn, v, tuple(o[k] for o in rest), f"{path}[{k!r}]", buf, done)
            for k, v in node.items()
        }
    return node  # configuration, a stateful object (a generator): shared


def _field_of(other: Module, name: str, path: str) -> object:
    if name not in vars(other):
        raise ModuleError(
            message(
                f"nn.tree_map: the trees differ at {path}: one has field {name!r}, another not.",
                [("fields", ", ".join(k for k, _ in _fields(other)))],
                hint="map trees of one structure (a model and its gradients).",
            )
        )
    return vars(other)[name]


def _kind(x: Any) -> type:
    """``x``'s type, a module's watched list or dict field taken for a list or dict (a
    gradient tree holds plain ones)."""
    return list if type(x) is _FieldList else dict if type(x) is _FieldDict else type(x)


def _same_kind(node: Any, other: Any, path: str) -> None:
    if isinstance(node, TensorLike) and isinstance(other, TensorLike):
        if node.shape == other.shape:
            return
        problem = f"shapes {node.shape} and {other.shape}"
    elif _kind(node) is _kind(other) or not isinstance(node, Module | list | tuple | dict):
        lengths = isinstance(node, list | tuple | dict) and len(node) != len(other)
        keys = isinstance(node, dict) and set(node) != set(other)
        if not (lengths or keys):
            return
        problem = "containers of other lengths or keys"
    else:
        problem = f"{type(node).__name__} and {type(other).__name__}"
    raise ModuleError(
        message(
            f"nn.tree_map: the trees differ at {path}: {problem}.",
            [("first", _brief(node)), ("other", _brief(other))],
            hint="map trees of one structure (a model and its gradients).",
        )
    )


# --- field checks ---------------------------------------------------------------------------


def _check_field(value: object, path: str) -> None:
    """A field's value must be data, a module, a container of them or configuration. A
    model's tensors are its parameters, so a lazy expression (a value computed from them, say
    kept for inspection in ``__call__``) is refused; gradient trees, which hold expressions,
    are built by ``tree_map``, not by setting fields."""
    if isinstance(value, Tensor | ScalableTensor | Module) or _stateful(value) is not None:
        return
    if isinstance(value, TensorLike):
        raise ModuleError(
            message(
                f"cannot set {path}: a lazy expression would be a parameter of the module (its "
                "tensors are its parameters: trained, saved, loaded).",
                [("received", value.describe()), ("accepted", "a principal tensor")],
                hint="to inspect an intermediate value, return it from __call__; to make it a "
                "parameter, evaluate it first: tn.evaluate(expr).",
            )
        )
    if isinstance(value, _STATIC):
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check_field(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ModuleError(
                    message(
                        f"cannot set {path}: a dict field needs string keys (its paths' names).",
                        [("key", repr(key))],
                        hint="use str keys, e.g. {'encoder': ...}.",
                    )
                )
            _check_field(item, f"{path}[{key!r}]")
        return
    raise ModuleError(
        message(
            f"cannot set {path}: a module field holds typed_nn data, modules, lists, tuples or "
            "dicts of them, or configuration.",
            [("received", _brief(value)), ("accepted", _ACCEPTED)],
            hint=_hint(value),
        )
    )


_ACCEPTED = "Tensor, nn.Module, list/tuple/dict of them, numbers, strings, types, functions"


def _hint(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"wrap the array: tn.tensor(array, tn.Float32, tn.CPU, tn.Dim{value.ndim})."
    if isinstance(value, set | frozenset):
        return "use a tuple or a list: a set has no order, so no paths."
    return "keep other objects outside the module, or store their configuration (numbers)."


def _brief(value: object) -> str:
    if isinstance(value, TensorLike):
        return value.describe()
    if isinstance(value, Module):
        return f"{type(value).__name__}(...)"
    text = repr(value)
    return text if len(text) <= 60 else f"{type(value).__name__} {text[:50]}..."


def require_module(m: object, fn: str) -> None:
    """A ``ModuleError`` naming ``nn.{fn}`` unless ``m`` is an ``nn.Module``."""
    if not isinstance(m, Module):
        raise ModuleError(
            message(
                f"nn.{fn} needs an nn.Module.",
                [("received", _brief(m))],
                hint="pass the model (an instance of an nn.Module subclass).",
            )
        )
