"""Weight files: ``save_weights`` / ``load_weights`` in the safetensors format.

The files are ordinary safetensors files (``safetensors.numpy.load_file``,
``safetensors.torch.load_file`` and JAX's loaders read them; files they write load here) for
Float32, Float64, Int32 and Int64 parameters. Saving is atomic: the bytes go to a temporary
file in the target's folder, are flushed to disk, and replace the target in one rename, so a
crash never leaves a half-written file (and the next save removes a killed save's temporary:
:mod:`.atomic_write`). Loading reads and validates the *whole* file and matches it against
every parameter (names, shapes, element types, writable memory) before writing anything: a
failed load raises :class:`~typed_nn.WeightFileError` and leaves every parameter unchanged.

Every failure to read or write the file is a ``WeightFileError`` with a message of a few
lines, whatever the file holds; a path that does not exist (the file to load, the folder to
save in) is its subclass :class:`~typed_nn.WeightFileNotFoundError`, also a
``FileNotFoundError``. The ``OSError`` behind a path problem is the error's ``__cause__``.

>>> save_weights(tmp / "mlp.safetensors", {"fc1/weight": w, "fc1/bias": b})
>>> load_weights(tmp / "mlp.safetensors", {"fc1/weight": w, "fc1/bias": b})
('fc1/bias', 'fc1/weight')
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from .. import devices
from ..data.tensor import Tensor, TensorLike
from ..errors import (
    OperandError,
    ParamError,
    WeightFileError,
    WeightFileNotFoundError,
    bad_argument,
    brief,
    flag,
    listed,
    message,
)
from ..evaluate.cache import overwrite
from ..tags import dim_of_rank, tag_name
from .atomic_write import write_atomic
from .load_buffer import LoadBuffer
from .safetensors_format import CODE_OF_ELEM, METADATA, Entry, encode_header, parse

__all__ = ["load_weights", "save_weights"]

PathLike: TypeAlias = str | os.PathLike[str]
AnyTensor: TypeAlias = TensorLike[Any, Any, Any]
AnyParam: TypeAlias = Tensor[Any, Any, Any]
T = TypeVar("T", bound=TensorLike[Any, Any, Any])
WRITE_ORDER = ("I64", "F64", "F32", "I32", "BF16", "F16")
SHOWN = 5
"""Mismatched tensors a load error lists one per line (the rest are counted)."""


def save_weights(
    path: PathLike,
    params: Mapping[str, AnyTensor] | LoadBuffer[Any, Any],
    *,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``params`` (name → tensor; lazy values are evaluated) to ``path``, atomically.

    ``metadata`` is stored as the file's ``__metadata__`` (strings only). Stale temporaries
    of earlier saves to ``path`` that were killed are removed first. A path that is a folder
    or cannot be written, or a name the UTF-8 header cannot hold, is a ``WeightFileError``
    (``WeightFileNotFoundError`` when the folder does not exist); the old file stays intact.
    """
    check_path(path, "save_weights")
    target = Path(path)
    if not isinstance(params, Mapping):
        raise OperandError(
            message(
                "save_weights needs the parameters as a mapping name -> tensor or a LoadBuffer.",
                [("received", type(params).__name__)],
                hint="pass the model's LoadBuffer (build_mlp returns it), or {'fc1/weight': w}.",
            )
        )
    items = _checked_items(list(params.items()))
    given: object = metadata  # callers without a type checker may pass anything
    if given is not None and not (
        isinstance(given, Mapping) and all(isinstance(v, str) for v in (*given, *given.values()))
    ):
        raise ParamError(
            message(
                "save_weights: metadata must map strings to strings.",
                [("received", brief(metadata))],
                hint="convert the values with str().",
            )
        )
    for kind, text in [("parameter name", n) for n, _ in items] + _metadata_texts(metadata):
        _check_utf8(text, kind, target)
    if target.is_dir():  # before writing a whole temporary that could not replace it
        raise _os_error(IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)), "save", target)
    elems = {name: value.elem for name, value in items}
    arrays = {name: little_endian(value.numpy()) for name, value in items}
    # The reference writer's order (dtype I64, F64, F32, I32, then name): files are byte-identical
    # to safetensors' own, and the 8-byte types come first, so every tensor stays aligned.
    order = sorted(arrays, key=lambda n: (WRITE_ORDER.index(CODE_OF_ELEM[elems[n]]), n))
    layout = [(n, elems[n], arrays[n].shape, arrays[n].nbytes) for n in order]
    header = encode_header(layout, dict(metadata) if metadata else None)
    try:
        # as bytes: a bfloat16 array has no buffer format ("cannot include dtype 'E'")
        data = [arrays[n].reshape(-1).view(np.uint8).data for n in order if arrays[n].size]
        write_atomic(target, [header, *data])
    except OSError as exc:
        raise _os_error(exc, "save", target) from exc


def _checked_items(items: list[tuple[object, object]]) -> list[tuple[str, AnyTensor]]:
    checked: list[tuple[str, AnyTensor]] = []
    for name, value in items:
        if not isinstance(name, str) or not name or name == METADATA:
            raise ParamError(
                message(
                    f"cannot save a parameter named {brief(name)}.",
                    hint=f"use a non-empty string other than {METADATA!r}.",
                )
            )
        if not isinstance(value, TensorLike):
            raise OperandError(
                message(
                    f"cannot save {brief(name)}: it is not typed_nn data.",
                    [("received", type(value).__name__)],
                    hint="pass tn.Tensor values (or a LoadBuffer).",
                )
            )
        checked.append((name, value))
    return checked


def little_endian(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array``'s values as a C-contiguous little-endian array (the file's byte order)."""
    # Not ascontiguousarray: it turns a rank-0 array into rank 1.
    return np.array(array, dtype=array.dtype.newbyteorder("<"), order="C", copy=None)


def _metadata_texts(metadata: Mapping[str, str] | None) -> list[tuple[str, str]]:
    pairs = (metadata or {}).items()
    return [kt for k, v in pairs for kt in (("metadata key", k), ("metadata value", v))]


def _check_utf8(text: str, kind: str, target: Path) -> None:
    """The header is UTF-8 JSON: a lone surrogate (from undecodable bytes) cannot be written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WeightFileError(
            message(
                f"cannot save weights to {target}: a {kind} cannot be encoded in UTF-8.",
                [
                    (kind, brief(text)),
                    ("at", f"character {exc.start}: {text[exc.start]!r}, a lone surrogate"),
                ],
                hint="the safetensors header is UTF-8 JSON; rename it (text decoded with "
                "errors='surrogateescape' holds such characters: decode it as UTF-8 instead).",
            )
        ) from None


def check_path(path: object, owner: str) -> None:
    """``path`` must be a file path (a str or an ``os.PathLike``): an ``OperandError`` in
    ``owner``'s name otherwise."""
    if not isinstance(path, str | os.PathLike):
        hint = "pass e.g. 'runs/model.safetensors' or pathlib.Path('runs') / 'model.ckpt'."
        raise bad_argument(OperandError, owner, "path", "a file path (str or PathLike)", path, hint)


WEIGHTS = ("weights", "save_weights(path, params)", "model.safetensors")
"""What a file is, what writes one and a name for one, as messages say them."""


def read_file(path: PathLike, kind: tuple[str, str, str] = WEIGHTS) -> tuple[str, bytes]:
    """The path as messages name it, and the bytes of the file there (a ``WeightFileError``
    if they cannot be read; ``kind``: the file's, as :data:`WEIGHTS`)."""
    try:
        return os.fspath(path), Path(path).read_bytes()
    except OSError as exc:
        raise _os_error(exc, "load", Path(path), kind) from exc


def _os_error(
    exc: OSError, action: str, path: Path, kind: tuple[str, str, str] = WEIGHTS
) -> WeightFileError:
    """A ``WeightFileError`` (``WeightFileNotFoundError`` for a missing path) for ``exc``."""
    what, writer, example = kind
    verb = f"cannot {action} {what} {'from' if action == 'load' else 'to'} {path}"
    if isinstance(exc, IsADirectoryError) or path.is_dir():
        problem, hint = "it is a folder", f"name a file in it, e.g. {path / example}."
    elif isinstance(exc, FileNotFoundError) and action == "load":
        problem, hint = "no such file", f"check the path; {writer} writes one."
    elif isinstance(exc, FileNotFoundError) and not path.parent.is_dir():
        problem = "its folder does not exist"
        hint = f"create the folder first: Path({str(path.parent)!r}).mkdir(parents=True)."
    else:
        problem = (exc.strerror or type(exc).__name__).lower()
        hint = "check the path's permissions and the free space"
        hint += "; the previous file, if any, is unchanged." if action == "save" else "."
    error = WeightFileNotFoundError if isinstance(exc, FileNotFoundError) else WeightFileError
    return error(
        message(
            f"{verb}: {problem}.", [("file", str(path)), ("os error", str(exc)[:300])], hint=hint
        )
    )


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
    must match exactly (no silent casts), and every parameter loaded into must be writable.
    Any problem is a ``WeightFileError`` (``WeightFileNotFoundError`` for a missing file)
    raised before the first parameter is written.
    """
    check_path(path, "load_weights")
    source, data = read_file(path)
    entries, _, base = parse(data, source)
    targets = _match(entries, into, flag("load_weights", "strict", strict), source)
    _check_writable(targets, source)
    # Every value is read (and moved to its device) before the first parameter is written.
    values = {name: _value(entries[name], data, base, t, into) for name, t in targets.items()}
    for name, target in targets.items():
        if target is not None:
            overwrite(target, values[name])
        elif isinstance(into, LoadBuffer):
            dim = dim_of_rank(len(entries[name].shape))
            into.set(name, Tensor(values[name], into.elem, into.device, dim))
    return tuple(sorted(targets))


def _params(into: object) -> dict[str, AnyParam]:
    return checked_tensors(
        into,
        Tensor,
        not_a_mapping="load_weights needs a mapping name -> tensor or a LoadBuffer to load into.",
        mapping_hint="pass e.g. {'fc1/weight': w, ...}.",
        not_a_tensor=lambda name: (
            f"cannot load into {name!r}: only principal tensors can be written."
        ),
        tensor_hint="load into the parameter tensors themselves (tn.Tensor).",
    )


def checked_tensors(
    params: object,
    kind: type[T],
    *,
    not_a_mapping: str,
    mapping_hint: str,
    not_a_tensor: Callable[[object], str],
    tensor_hint: str,
    string_names: bool = False,
) -> dict[str, T]:
    """``params`` (a mapping name -> tensor, e.g. a ``LoadBuffer``) as a dict, every value a
    ``kind`` (with ``string_names``, every name a str); otherwise an ``OperandError`` in the
    caller's words: ``not_a_mapping`` and ``not_a_tensor(name)`` with their hints."""
    if not isinstance(params, Mapping):
        raise OperandError(
            message(not_a_mapping, [("received", type(params).__name__)], hint=mapping_hint)
        )
    checked: dict[str, T] = {}
    for name, value in params.items():
        if not isinstance(value, kind) or (string_names and not isinstance(name, str)):
            shown = value.describe() if isinstance(value, TensorLike) else type(value).__name__
            raise OperandError(message(not_a_tensor(name), [("received", shown)], hint=tensor_hint))
        checked[name] = value
    return checked


def _match(
    entries: dict[str, Entry], into: object, strict: bool, source: str
) -> dict[str, AnyParam | None]:
    """Parameter (or None: a new LoadBuffer entry) per name to load; every mismatch is an error."""
    params = _params(into)
    buffer = into if isinstance(into, LoadBuffer) else None
    problems: list[tuple[str, str]] = []
    missing = sorted(set(params) - set(entries))
    if strict and missing:
        problems.append(("missing in file", listed(missing)))
    unexpected = sorted(set(entries) - set(params))
    if strict and unexpected and buffer is None:
        problems.append(("not a parameter", listed(unexpected)))
    mismatched = 0
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
            mismatched += 1
            found = f"{CODE_OF_ELEM[entry.elem]}{list(entry.shape)}"
            if mismatched <= SHOWN:
                problems.append((brief(name), f"file has {found}, parameter is {declared}"))
        targets[name] = target
    if mismatched > SHOWN:
        problems.append(("...", f"{mismatched - SHOWN:,} more tensors do not match"))
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


def _check_writable(targets: dict[str, AnyParam | None], source: str) -> None:
    """Every parameter to be written must have writable memory (checked before any write)."""
    frozen = [name for name, t in targets.items() if t is not None and not _writable(t.array)]
    if frozen:
        raise WeightFileError(
            message(
                f"cannot load weights from {source}: parameters are read-only.",
                [
                    ("file", source),
                    ("read-only", listed(frozen)),
                    ("needed", "parameters whose memory is writable (numpy flags.writeable)"),
                ],
                hint="nothing was changed. Load into tensors you allocated "
                "(tn.zeros(shape, elem, device)) or into copies: "
                "tn.tensor(t.numpy(), elem, device, dim).",
            )
        )


def _writable(array: Any) -> bool:
    """False for a numpy array whose ``writeable`` flag is off (cupy arrays are writable)."""
    flags = getattr(array, "flags", None)
    return bool(getattr(flags, "writeable", True))


def _value(entry: Entry, data: bytes, base: int, target: AnyParam | None, into: object) -> Any:
    """The entry's values on the device they go to (an owned array for a new tensor)."""
    host = entry.array(data, base)
    if target is not None:
        device = target.device
    else:
        assert isinstance(into, LoadBuffer)
        device, host = into.device, host.astype(entry.elem.dtype)  # owned, native order, writable
    if device.name != "CPU":
        return devices.array_module(device).asarray(host)
    return host
