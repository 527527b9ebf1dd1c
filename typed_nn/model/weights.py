"""Weight files: ``save_weights`` / ``load_weights`` in the safetensors format.

The files are ordinary safetensors files (``safetensors.numpy.load_file``,
``safetensors.torch.load_file`` and JAX's loaders read them; files they write load here) for
Float32, Float64, Int32 and Int64 parameters. Saving is atomic: the bytes go to a temporary
file in the target's folder, are flushed to disk, and replace the target in one rename, so a
crash never leaves a half-written file. Loading reads and validates the *whole* file and
matches it against every parameter (names, shapes, element types) before writing anything:
a failed load raises :class:`~typed_nn.WeightFileError` and leaves every parameter unchanged.

>>> save_weights(tmp / "mlp.safetensors", {"fc1/weight": w, "fc1/bias": b})
>>> load_weights(tmp / "mlp.safetensors", {"fc1/weight": w, "fc1/bias": b})
('fc1/bias', 'fc1/weight')
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from .. import backends
from ..data.tensor import Tensor
from ..data.tensor_like import TensorLike
from ..errors import OperandError, ParamError, WeightFileError, message
from ..tags import dim_of_rank, tag_name
from .load_buffer import LoadBuffer
from .safetensors_format import CODE_OF_ELEM, METADATA, Entry, encode_header, parse

__all__ = ["load_weights", "save_weights"]

PathLike: TypeAlias = str | os.PathLike[str]
AnyTensor: TypeAlias = TensorLike[Any, Any, Any]
AnyParam: TypeAlias = Tensor[Any, Any, Any]
WRITE_ORDER = ("I64", "F64", "F32", "I32")


def save_weights(
    path: PathLike,
    params: Mapping[str, AnyTensor] | LoadBuffer[Any, Any],
    *,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``params`` (name → tensor; lazy values are evaluated) to ``path``, atomically.

    ``metadata`` is stored as the file's ``__metadata__`` (strings only).
    """
    items = _checked_items(list(params.items()))
    if metadata is not None and not all(
        isinstance(v, str) for v in (*metadata, *metadata.values())
    ):
        raise ParamError(
            message(
                "save_weights: metadata must map strings to strings.",
                [("received", repr(dict(metadata))[:200])],
                hint="convert the values with str().",
            )
        )
    elems = {name: value.elem for name, value in items}
    arrays = {name: _little_endian(value.numpy()) for name, value in items}
    # The reference writer's order (dtype I64, F64, F32, I32, then name): files are byte-identical
    # to safetensors' own, and the 8-byte types come first, so every tensor stays aligned.
    order = sorted(arrays, key=lambda n: (WRITE_ORDER.index(CODE_OF_ELEM[elems[n]]), n))
    layout = [(n, elems[n], arrays[n].shape, arrays[n].nbytes) for n in order]
    header = encode_header(layout, dict(metadata) if metadata else None)
    _write_atomic(Path(path), header, [arrays[n] for n in order])


def _checked_items(items: list[tuple[object, object]]) -> list[tuple[str, AnyTensor]]:
    checked: list[tuple[str, AnyTensor]] = []
    for name, value in items:
        if not isinstance(name, str) or not name or name == METADATA:
            raise ParamError(
                message(
                    f"cannot save a parameter named {name!r}.",
                    hint=f"use a non-empty string other than {METADATA!r}.",
                )
            )
        if not isinstance(value, TensorLike):
            raise OperandError(
                message(
                    f"cannot save {name!r}: it is not typed_nn data.",
                    [("received", type(value).__name__)],
                    hint="pass tn.Tensor values (or a LoadBuffer).",
                )
            )
        checked.append((name, value))
    return checked


def _little_endian(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    # Not ascontiguousarray: it turns a rank-0 array into rank 1.
    return np.array(array, dtype=array.dtype.newbyteorder("<"), order="C", copy=None)


def _write_atomic(path: Path, header: bytes, arrays: list[npt.NDArray[Any]]) -> None:
    """Write to a temporary file beside ``path``, fsync it, rename it over ``path``."""
    directory = path.parent
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            for array in arrays:
                if array.size:
                    f.write(array.data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_weights(
    path: PathLike,
    into: Mapping[str, AnyParam] | LoadBuffer[Any, Any],
    *,
    strict: bool = True,
) -> tuple[str, ...]:
    """Copy the tensors of the file at ``path`` into ``into``; returns the names loaded, sorted.

    ``into`` is a mapping name → principal tensor (values are copied into their memory), or a
    ``LoadBuffer``: names it holds are copied into, names it lacks are added as new tensors
    (load into an empty buffer, then initialise a network from it). ``strict`` requires every
    parameter of ``into`` to be in the file and, for a mapping, every tensor of the file to
    be a parameter; without it, only the common names are loaded. Shapes and element types
    must match exactly (no silent casts).
    """
    source = os.fspath(path)
    data = Path(path).read_bytes()
    entries, _, base = parse(data, source)
    targets = _match(entries, into, strict, source)
    # Every value is read (and moved to its device) before the first parameter is written.
    values = {name: _value(entries[name], data, base, t, into) for name, t in targets.items()}
    for name, target in targets.items():
        if target is not None:
            target.array[...] = values[name]
        elif isinstance(into, LoadBuffer):
            dim = dim_of_rank(len(entries[name].shape))
            into.set(name, Tensor(values[name], into.elem, into.device, dim))
    return tuple(sorted(targets))


def _params(into: object) -> dict[str, AnyParam]:
    if not isinstance(into, Mapping | LoadBuffer):
        raise OperandError(
            message(
                "load_weights needs a mapping name -> tensor or a LoadBuffer to load into.",
                [("received", type(into).__name__)],
                hint="pass e.g. {'fc1/weight': w, ...}.",
            )
        )
    params: dict[str, AnyParam] = {}
    for name, value in into.items():
        if not isinstance(value, Tensor):
            shown = value.describe() if isinstance(value, TensorLike) else type(value).__name__
            raise OperandError(
                message(
                    f"cannot load into {name!r}: only principal tensors can be written.",
                    [("received", shown)],
                    hint="load into the parameter tensors themselves (tn.Tensor).",
                )
            )
        params[name] = value
    return params


def _match(
    entries: dict[str, Entry], into: object, strict: bool, source: str
) -> dict[str, AnyParam | None]:
    """Parameter (or None: a new LoadBuffer entry) per name to load; every mismatch is an error."""
    params = _params(into)
    buffer = into if isinstance(into, LoadBuffer) else None
    problems: list[tuple[str, str]] = []
    missing = sorted(set(params) - set(entries))
    if strict and missing:
        problems.append(("missing in file", ", ".join(map(repr, missing))))
    unexpected = sorted(set(entries) - set(params))
    if strict and unexpected and buffer is None:
        problems.append(("not a parameter", ", ".join(map(repr, unexpected))))
    targets: dict[str, AnyParam | None] = {}
    for name, entry in sorted(entries.items()):
        target = params.get(name)
        if target is not None:
            ok = (entry.elem, entry.shape) == (target.elem, target.shape)
            declared = target.describe()
        elif buffer is not None:
            ok = entry.elem is buffer.elem
            declared = f"LoadBuffer[{tag_name(buffer.elem)}, {tag_name(buffer.device)}]"
        else:
            continue
        if not ok:
            found = f"{CODE_OF_ELEM[entry.elem]}{list(entry.shape)}"
            problems.append((repr(name), f"file has {found}, parameter is {declared}"))
        targets[name] = target
    if problems:
        raise WeightFileError(
            message(
                f"cannot load weights from {source}: the file does not match the parameters.",
                [("file", source), *problems],
                hint="nothing was changed. Load into the network the file was saved from, "
                "or pass strict=False to load only the names both have.",
            )
        )
    return targets


def _value(entry: Entry, data: bytes, base: int, target: AnyParam | None, into: object) -> Any:
    """The entry's values on the device they go to (an owned array for a new tensor)."""
    host = entry.array(data, base)
    if target is not None:
        device = target.device
    else:
        assert isinstance(into, LoadBuffer)
        device, host = into.device, host.astype(entry.elem.dtype)  # owned, native order, writable
    if device.name != "CPU":
        return backends.array_module(device).asarray(host)
    return host
