"""PyTorch state dicts both ways, on plain numpy arrays (torch is never imported).

* :func:`to_torch_state_dict` gives ``{torch_key: numpy array}`` in PyTorch's names and layouts,
  ready for ``module.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})``.
* :func:`from_torch_state_dict` copies ``{torch_key: array-like}`` (e.g.
  ``{k: v.numpy() for k, v in module.state_dict().items()}``) into typed_nn parameters.

A :class:`~typed_nn.model.torch_mapping.TorchMapping` says which key holds which parameter and
whether it is transposed. Loading checks everything first (every key, shape, element type and
writable memory) and raises one ``ParamError`` listing the problems before writing anything:
a failed load changes no parameter. Like ``torch.nn.Module.load_state_dict``, ``strict=False``
loads the keys both sides have and reports the others (a misshaped or mistyped entry is an
error in both modes).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt

from .. import devices
from ..data.tensor import Tensor, TensorLike
from ..errors import OperandError, ParamError, brief, flag, listed, message
from ..evaluate.cache import overwrite
from ..shape import format_shape
from .torch_mapping import TorchMapping, TorchParam
from .weights import SHOWN, _writable, checked_tensors

__all__ = ["TorchLoadReport", "from_torch_state_dict", "to_torch_state_dict"]

AnyParam: TypeAlias = Tensor[Any, Any, Any]
Array: TypeAlias = npt.NDArray[Any]


class TorchLoadReport(NamedTuple):
    """What :func:`from_torch_state_dict` did (PyTorch's ``missing_keys`` / ``unexpected_keys``).

    ``loaded``: typed_nn parameters written; ``missing_keys``: keys of the mapping the state
    lacked; ``unexpected_keys``: keys of the state the mapping does not know;
    ``unmapped_params``: parameters no mapping entry covers (left unchanged). All empty
    after a strict load.
    """

    loaded: tuple[str, ...]
    missing_keys: tuple[str, ...]
    unexpected_keys: tuple[str, ...]
    unmapped_params: tuple[str, ...]


def to_torch_state_dict(
    params: Mapping[str, TensorLike[Any, Any, Any]], mapping: TorchMapping, *, strict: bool = True
) -> dict[str, Array]:
    """``params`` (name → tensor, or a ``LoadBuffer``) as a PyTorch state dict of numpy arrays.

    Keys and order are the mapping's; dense weights are transposed to PyTorch's ``(out, in)``;
    every array is a C-contiguous copy on the host. PyTorch-only buffers
    (``num_batches_tracked``) are Int64 zeros. A mapping entry naming a parameter ``params``
    lacks is a ``ParamError``; so is a parameter the mapping does not cover, unless
    ``strict=False`` (then it is left out).
    """
    _check_kinds(params, mapping, "to_torch_state_dict", principal=False)
    strict = flag("to_torch_state_dict", "strict", strict)
    _check_covered(params, mapping, strict, "to_torch_state_dict", "written")
    state: dict[str, Array] = {}
    for entry in mapping:
        value = params[entry.param]
        _check_transposable(entry, value.shape, "to_torch_state_dict")
        host = value.numpy()
        state[entry.key] = np.array(host.T if entry.transpose else host, order="C", copy=True)
    for buffer in mapping.buffers:
        state[buffer.key] = np.zeros((), np.int64)
    return state


def from_torch_state_dict(
    state: Mapping[str, object],
    params: Mapping[str, AnyParam],
    mapping: TorchMapping,
    *,
    strict: bool = True,
) -> TorchLoadReport:
    """Copy the PyTorch ``state`` (key → numpy array or anything ``np.asarray`` reads) into
    the principal tensors ``params`` (name → tensor, or a ``LoadBuffer``) as ``mapping`` says.

    ``strict`` (PyTorch's default) requires every key of the mapping in ``state``, every key
    of ``state`` in the mapping and every parameter in the mapping; without it those are
    reported (:class:`TorchLoadReport`) and the rest is loaded. Shapes (after the mapping's
    transposition) and element types must match exactly, with no silent cast. Any problem is
    one ``ParamError`` listing them, raised before the first parameter is written.
    """
    if not isinstance(state, Mapping):
        raise OperandError(
            message(
                "from_torch_state_dict needs a mapping key -> array as the state.",
                [("received", type(state).__name__)],
                hint="pass {k: v.numpy() for k, v in module.state_dict().items()}.",
            )
        )
    _check_kinds(params, mapping, "from_torch_state_dict", principal=True)
    strict = flag("from_torch_state_dict", "strict", strict)
    unmapped = _check_covered(params, mapping, strict, "from_torch_state_dict", "loaded")
    known = set(mapping.keys)
    missing = [e.key for e in mapping if e.key not in state]
    unexpected = [k for k in state if k not in known]
    problems: list[tuple[str, str]] = []
    if strict and missing:
        problems.append(("missing keys", listed(missing)))
    if strict and unexpected:
        problems.append(("unexpected keys", listed(unexpected)))
    values, bad, kinds = _converted_values(state, params, mapping)
    problems += bad[:SHOWN]
    if len(bad) > SHOWN:
        problems.append(("...", f"{len(bad) - SHOWN:,} more entries do not match"))
    if not problems:
        frozen = [name for name in values if not _writable(params[name].array)]
        if frozen:
            problems.append(("read-only", listed(frozen)))
            kinds.add("read-only")
    if problems:
        raise ParamError(
            message(
                "cannot load the PyTorch state dict: it does not match the parameters.",
                problems,
                hint="nothing was changed. " + _hint(kinds, strict and bool(missing or unexpected)),
            )
        )
    for name, value in values.items():
        target = params[name]
        if target.device.name != "CPU":
            value = devices.array_module(target.device).asarray(value)
        overwrite(target, value)
    return TorchLoadReport(tuple(values), tuple(missing), tuple(unexpected), unmapped)


def _converted_values(
    state: Mapping[str, object], params: Mapping[str, AnyParam], mapping: TorchMapping
) -> tuple[dict[str, Array], list[tuple[str, str]], set[str]]:
    """The value of every parameter whose key ``state`` holds, in typed_nn's layout, by
    parameter name; the entries that do not fit (key, problem), and the problems' kinds."""
    values: dict[str, Array] = {}
    bad: list[tuple[str, str]] = []
    kinds: set[str] = set()
    for entry in mapping:
        if entry.key in state:
            target = params[entry.param]
            _check_transposable(entry, target.shape, "from_torch_state_dict")
            value, problem = _converted(entry, state[entry.key], target)
            if problem is None:
                values[entry.param] = value
            else:
                kinds.add(problem[0])
                bad.append((brief(entry.key, 60), problem[1]))
    return values, bad, kinds


def _check_kinds(params: object, mapping: object, doing: str, *, principal: bool) -> None:
    """``params`` a mapping of tensors (principal ones: ``Tensor``) holding every parameter
    ``mapping`` names."""
    if not isinstance(mapping, TorchMapping):
        raise OperandError(
            message(
                f"{doing} needs a TorchMapping.",
                [("received", type(mapping).__name__)],
                hint="build one from typed_nn.model.torch_mapping: "
                "torch_mapping.linear('net/fc1', '0') + ...",
            )
        )
    kind = Tensor if principal else TensorLike
    named = checked_tensors(
        params,
        kind,
        not_a_mapping=f"{doing} needs the parameters as a mapping name -> tensor (or a LoadBuffer).",
        mapping_hint="pass the LoadBuffer the model was initialised with.",
        not_a_tensor=lambda name: f"{doing}: parameter {brief(name)} is not a {kind.__name__}.",
        tensor_hint="load into the parameter tensors themselves (tn.Tensor)."
        if principal
        else "pass typed_nn tensors.",
    )
    absent = [e.param for e in mapping if e.param not in named]
    if absent:
        names = [str(n) for n in named]
        close = difflib.get_close_matches(absent[0], names, n=3, cutoff=0.5)
        raise ParamError(
            message(
                f"{doing}: the mapping names parameters the model does not have.",
                [
                    ("not parameters", listed(absent)),
                    ("closest", listed(close) if close else "none"),
                    ("parameters", listed(names)),
                ],
                hint="build the mapping with the model's layer names "
                "(build_mlp(..., name='mlp') -> torch_mapping.mlp('mlp', layers)).",
            )
        )


def _check_covered(
    params: Mapping[str, object], mapping: TorchMapping, strict: bool, doing: str, done: str
) -> tuple[str, ...]:
    """Parameters the mapping does not cover: an error when ``strict``, else returned."""
    mapped = {e.param for e in mapping}
    unmapped = tuple(n for n in params if n not in mapped)
    if strict and unmapped:
        raise ParamError(
            message(
                f"{doing}: parameters have no entry in the mapping.",
                [("unmapped", listed(unmapped))],
                hint=f"add their layers to the mapping (torch_mapping.linear(...) + ...), or "
                f"pass strict=False to leave them out (they are not {done}).",
            )
        )
    return unmapped


def _check_transposable(entry: TorchParam, shape: tuple[int, ...], doing: str) -> None:
    if entry.transpose and len(shape) != 2:
        raise ParamError(
            message(
                f"{doing}: the mapping transposes {entry.param!r}, which is not a matrix.",
                [("parameter", f"{entry.param} {format_shape(shape)}"), ("key", entry.key)],
                hint="only rank-2 weights are transposed: TorchParam(key, param) for the others.",
            )
        )


def _torch_shape(entry: TorchParam, shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape[::-1] if entry.transpose else shape


def _converted(
    entry: TorchParam, raw: object, target: AnyParam
) -> tuple[Array, tuple[str, str] | None]:
    """The value in typed_nn's layout, or a (kind, description) problem."""
    declared = f"parameter {entry.param!r} is {target.describe()}"
    if entry.transpose:
        declared += ", transposed"
    try:
        value = np.asarray(raw)
    except Exception as exc:  # whatever the object's __array__ raises
        text = f"{type(raw).__name__} cannot be read as an array ({brief(str(exc), 80)})"
        return np.empty(0), ("array", text)
    want_shape = _torch_shape(entry, target.shape)
    want_dtype = np.dtype(target.elem.dtype)
    if value.shape != want_shape:
        text = f"expected shape {format_shape(want_shape)} ({declared}), received "
        return value, ("shape", text + format_shape(value.shape))
    if value.dtype != want_dtype:
        text = f"expected dtype {want_dtype} ({declared}), received {value.dtype}"
        return value, ("dtype", text)
    return (value.T if entry.transpose else value), None


_HINTS = {
    "shape": "a misshaped entry comes from another module size or a mapping to the wrong "
    "layer: give the state dict as module.state_dict() holds it (the mapping transposes dense "
    "weights itself)",
    "dtype": "convert mistyped entries to the parameters' element type first "
    "(v.astype(np.float32)); no cast is made silently",
    "array": "pass numpy arrays (torch: v.detach().cpu().numpy())",
    "read-only": "load into parameters whose memory is writable (tensors you allocated)",
}


def _hint(kinds: Iterable[str], keys_differ: bool) -> str:
    found = set(kinds)
    parts = [text for kind, text in _HINTS.items() if kind in found]
    if keys_differ:
        parts.append(
            "build the mapping for this module (keys as in module.state_dict()), "
            "or pass strict=False to load the keys both have and get a report of the rest"
        )
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]
