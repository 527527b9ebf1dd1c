"""``nn.state_dict`` / ``nn.load_state_dict``: a module's parameters and buffers by PyTorch's
dotted names, as host arrays; loading checks everything before it changes anything."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..data.module import Module, named_persistent, require_module
from ..data.tensor import AnyTensor, Tensor
from ..devices import array_module
from ..errors import ModuleError, brief, listed, message
from ..evaluate.cache import overwrite
from ..tags import BFloat16

__all__ = ["load_state_dict", "state_dict"]


def _entries(m: Module, fn: str) -> dict[str, AnyTensor]:
    require_module(m, fn)
    return dict(named_persistent(m))


def state_dict(m: Module) -> dict[str, npt.NDArray[Any]]:
    """Every parameter and buffer of ``m`` by dotted name (``"0.weight"``, ``"norm.bias"``),
    module by module in field order, as numpy copies: what ``torch.nn.Module.state_dict()``
    holds for the same structure. Generator states are left out (PyTorch's state dicts keep
    no random state); checkpoints keep them."""
    out: dict[str, npt.NDArray[Any]] = {}
    for name, t in _entries(m, "state_dict").items():
        if not isinstance(t, Tensor):
            raise ModuleError(
                message(
                    f"nn.state_dict: {name} is not a principal tensor.",
                    [("received", t.describe())],
                    hint="take the state dict of a model, not of a tree of expressions "
                    "(tn.evaluate them, or nn.tree_map(tn.evaluate, tree)).",
                )
            )
        out[name] = np.array(t.numpy(), copy=True)
    return out


def load_state_dict(m: Module, sd: Mapping[str, Any], strict: bool = True) -> list[str]:
    """Copy ``sd``'s arrays (numpy arrays, tensors, or ``torch.Tensor``\\ s) into ``m``'s
    parameters and buffers of the same names (a tied tensor from any of its names the dict
    has: different values under two of them are a problem). Every problem — a missing or
    (with ``strict``) unexpected key, another shape or element type — is found first and
    reported together, and then nothing has changed. Returns the keys of ``m`` that ``sd`` lacks (``strict=False``
    only; with ``strict`` they are an error)."""
    entries = _entries(m, "load_state_dict")
    if not isinstance(sd, Mapping):
        raise ModuleError(
            message(
                "nn.load_state_dict needs a mapping of names to arrays.",
                [("received", type(sd).__name__)],
                hint="pass nn.state_dict(model), or a torch model's state_dict().",
            )
        )
    # A tensor under several paths (tied) is loaded from the first of them the dict has (the
    # others must hold the same values).
    paths: dict[int, list[str]] = {}
    for k, t in entries.items():
        paths.setdefault(id(t), []).append(k)
    found = {ks[0]: next((k for k in ks if k in sd), None) for ks in paths.values()}
    missing = [k for ks in paths.values() if found[ks[0]] is None for k in ks]
    unexpected = [k for k in sd if k not in entries]
    values = {first: _host(sd[k]) for first, k in found.items() if k is not None}
    problems = [
        f"{k}: {_mismatch(entries[k], v)}" for k, v in values.items() if _mismatch(entries[k], v)
    ]
    problems += _disagreeing(paths.values(), sd, values)
    if strict and missing:
        problems.append(f"missing keys: {listed(missing)}")
    if strict and unexpected:
        problems.append(f"unexpected keys: {listed(unexpected)}")
    if problems:
        raise ModuleError(
            message(
                f"cannot load the state dict into {type(m).__name__}: nothing was changed.",
                [("problem", p) for p in problems],
                hint="load a state dict of a model of this structure (names as in "
                "nn.state_dict(model)); strict=False skips missing and unexpected keys.",
            )
        )
    for k, v in values.items():
        target = entries[k]
        assert isinstance(target, Tensor)  # _mismatch refused any other
        overwrite(target, array_module(target.device).asarray(v))
    return missing


def _disagreeing(
    paths: Iterable[list[str]], sd: Mapping[str, Any], values: dict[str, Any]
) -> list[str]:
    """The tied tensors for which ``sd`` gives different values under two of its names
    (which one to load would be a guess: PyTorch keeps the last key's silently)."""
    problems = []
    for ks in paths:
        given = [k for k in ks if k in sd]
        chosen = values.get(ks[0]) if given else None
        for k in given[1:]:
            other = _host(sd[k])
            if chosen is not None and not _same_values(chosen, other):
                problems.append(
                    f"{given[0]} and {k} are one tied tensor, but the dict holds different "
                    "values for them"
                )
                break
    return problems


def _same_values(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def _host(value: Any) -> Any:
    if callable(getattr(value, "detach", None)):  # a torch.Tensor
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":  # numpy cannot read it: exactly via float32
            return value.float().numpy().astype(BFloat16.dtype)
        return value.numpy()
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, np.generic):  # a numpy scalar (a count after += 1): a 0-d array
        return np.asarray(value)
    return value


def _mismatch(target: AnyTensor, value: Any) -> str:
    if not isinstance(target, Tensor):
        return "the module holds an expression there, not a tensor"
    if not isinstance(value, np.ndarray):
        return f"{type(value).__name__} {brief(value)}, not an array"
    if value.shape != target.shape:
        return f"shape {value.shape}, the module's {target.shape}"
    if value.dtype != target.elem.dtype:
        return f"element type {value.dtype}, the module's {np.dtype(target.elem.dtype)}"
    return ""
