"""A checkpoint's metadata: the JSON stored beside its tensors, written and read back.

The JSON (``__metadata__["typed_nn.checkpoint"]``) holds the format version, a hash of the
model's structure (its parameters' and buffers' names, shapes and element types), the names of
its random-number states, the optimizer's kind, settings, step count and learning rate there,
the epoch, a numpy ``Generator``'s state, the history and a CRC-32 of all of it and every
tensor. Reading it
checks every field; matching it against a model and an optimizer lists what differs.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from collections.abc import Mapping
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ..data.tensor import Tensor
from ..errors import CheckpointError, ParamError, brief, listed, message
from .optim import Optimizer
from .safetensors_format import CODE_OF_ELEM, Entry, Fail
from .weights import little_endian

__all__ = [
    "FORMAT_VERSION",
    "GENERATOR",
    "METADATA_KEY",
    "EXTRA",
    "PARAM",
    "STATE",
    "Json",
    "CHECKPOINT",
    "checksum",
    "crc",
    "damage",
    "damaged",
    "jsonable",
    "model_problems",
    "optimizer_info",
    "optimizer_problems",
    "read_info",
    "structure",
]

Json: TypeAlias = object
"""JSON data: None, bools, numbers, strings, and lists and string-keyed dicts of them
(checked when saved; the history and the generator state are stored as such)."""
AnyParam: TypeAlias = Tensor[Any, Any, Any]

FORMAT_VERSION = 3
"""3: the CRC covers the metadata too (:func:`checksum`); 2: random-number states
(``generator/<name>``); 1 had none and reads as 2."""
READABLE = (1, 2, 3)
METADATA_KEY = "typed_nn.checkpoint"
PARAM, STATE, EXTRA, GENERATOR = "param/", "optimizer/", "extra/", "generator/"


def checksum(
    layout: Mapping[str, tuple[type, tuple[int, ...], npt.NDArray[Any]]], info: Mapping[str, Json]
) -> int:
    """A checkpoint's ``crc32``: of its metadata but the checksum itself (from version 3: a
    damaged step count or epoch is found too), then of its tensors (:func:`crc`)."""
    if info["version"] in (1, 2):
        return crc(layout)
    rest = {key: value for key, value in info.items() if key != "crc32"}
    return crc(layout, zlib.crc32(json.dumps(rest).encode()))  # in the file's key order


def crc(
    layout: Mapping[str, tuple[type, tuple[int, ...], npt.NDArray[Any]]], total: int = 0
) -> int:
    """CRC-32 of every tensor's name, element, shape and little-endian bytes, by name
    (continuing from ``total``)."""
    for name in sorted(layout):
        elem, shape, array = layout[name]
        total = zlib.crc32(f"{name}:{CODE_OF_ELEM[elem]}{list(shape)}".encode(), total)
        total = zlib.crc32(little_endian(array).tobytes(), total)
    return total


def structure(named: Mapping[str, AnyParam]) -> dict[str, Json]:
    """The model's structure: a hash of its parameters' (and buffers') names, shapes and
    element types."""
    described = [[n, list(w.shape), CODE_OF_ELEM[w.elem]] for n, w in sorted(named.items())]
    digest = hashlib.sha256(json.dumps(described).encode()).hexdigest()
    return {"hash": digest, "parameters": len(described)}


def optimizer_info(optimizer: Optimizer, step_count: int) -> dict[str, Json]:
    """Kind, settings, state slots, step count and the learning rate at that step."""
    lr = optimizer.lr(step_count) if callable(optimizer.lr) else optimizer.lr
    settings = {k: jsonable(v) for k, v in optimizer.hyperparameters().items()}
    return {
        "kind": type(optimizer).__name__,
        "settings": settings,
        "slots": list(optimizer.slots),
        "step_count": step_count,
        "lr": float(lr),
        "schedule": callable(optimizer.lr),
    }


def jsonable(value: object) -> Json:
    """A bit generator's state as JSON data (numpy arrays and integers become lists, ints)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ParamError(message("cannot store the generator state.", [("part", type(value).__name__)]))


def damage(source: str) -> Fail:
    """Makes the error of a checkpoint file the safetensors reader finds damaged."""

    def fail(
        what: str, items: list[tuple[str, str]] | None = None, tensor: str | None = None
    ) -> CheckpointError:
        return damaged(
            source, what, [*([] if tensor is None else [("tensor", brief(tensor))]), *(items or [])]
        )

    return fail


CHECKPOINT = (
    "the checkpoint",
    "save_checkpoint(path, model, optimizer, epoch=...) or fit's ModelCheckpoint",
    "run.ckpt",
)
"""A checkpoint file as ``weights.read_file``'s messages say it."""


def damaged(source: str, what: str, items: list[tuple[str, str]] | None = None) -> CheckpointError:
    """The error of a file that is not a valid checkpoint: ``what`` is wrong with it."""
    return CheckpointError(
        message(
            f"cannot load the checkpoint {source}: {what}",
            [("file", source), *(items or [])],
            hint="the file is damaged or not a typed_nn checkpoint; nothing was changed. "
            "Write it again with typed_nn.model.save_checkpoint (or fit's ModelCheckpoint).",
        )
    )


FIELDS: dict[str, tuple[type, ...]] = {
    "version": (int,),
    "model": (dict,),
    "optimizer": (dict,),
    "epoch": (int,),
    "rng": (dict, type(None)),
    "history": (dict, type(None)),
    "crc32": (int,),
}
OPTIMIZER_FIELDS: dict[str, tuple[type, ...]] = {
    "kind": (str,),
    "settings": (dict,),
    "slots": (list,),
    "step_count": (int,),
    "lr": (float, int),
    "schedule": (bool,),
}


def read_info(metadata: Mapping[str, str], source: str) -> dict[str, Json]:
    """The checkpoint's JSON metadata, checked field by field."""
    text = metadata.get(METADATA_KEY)
    if text is None:
        raise damaged(
            source,
            "it is a safetensors file without checkpoint metadata (a weight file?).",
            [("needed", f"__metadata__[{METADATA_KEY!r}]")],
        )
    try:
        info = json.loads(text)
    except ValueError as exc:
        raise damaged(source, f"its metadata is not valid JSON ({str(exc)[:120]}).") from None
    if not isinstance(info, dict):
        raise damaged(source, "its metadata is not a JSON object.")
    for fields, where in ((FIELDS, info), (OPTIMIZER_FIELDS, info.get("optimizer"))):
        for key, kinds in fields.items():
            value = where.get(key) if isinstance(where, dict) else None
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise damaged(
                    source,
                    f"its metadata lacks a valid {key!r}.",
                    [("found", brief(value)), ("expected", " or ".join(k.__name__ for k in kinds))],
                )
    if info["version"] not in READABLE:
        raise damaged(
            source,
            f"it has format version {info['version']}; this typed_nn reads "
            f"{' and '.join(map(str, READABLE))}.",
        )
    return info


def model_problems(
    named: Mapping[str, AnyParam],
    generators: Mapping[str, AnyParam] | None,
    entries: Mapping[str, Entry],
    info: Mapping[str, Json],
) -> list[tuple[str, str]]:
    """What differs between the file and the model: its parameters and buffers (``named``)
    and its random-number states (``generators``; None: not compared, as for a mapping of
    parameters, which has none)."""
    problems = _differences(PARAM, "parameter", named, entries)
    if generators is not None:
        problems += _differences(GENERATOR, "random-number state", generators, entries)
    model = info["model"]
    if not problems and isinstance(model, dict) and model.get("hash") != structure(named)["hash"]:
        problems.append(("model", "the saved structure hash differs (the metadata is damaged)"))
    return problems


def _differences(
    prefix: str, what: str, named: Mapping[str, AnyParam], entries: Mapping[str, Entry]
) -> list[tuple[str, str]]:
    """The names missing on either side, and the element types or shapes that differ."""
    saved = {n[len(prefix) :]: e for n, e in entries.items() if n.startswith(prefix)}
    problems: list[tuple[str, str]] = []
    missing = sorted(set(named) - set(saved))
    if missing:
        problems.append(("missing in file", listed(missing)))
    unexpected = sorted(set(saved) - set(named))
    if unexpected:
        problems.append((f"not a {what}", listed(unexpected)))
    for name in sorted(set(saved) & set(named)):
        entry, value = saved[name], named[name]
        if (entry.elem, entry.shape) != (value.elem, value.shape):
            found = f"{CODE_OF_ELEM[entry.elem]}{list(entry.shape)}"
            problems.append((brief(name), f"file has {found}, {what} is {value.describe()}"))
    return problems


def optimizer_problems(
    optimizer: Optimizer,
    named: Mapping[str, AnyParam],
    entries: Mapping[str, Entry],
    info: Mapping[str, Json],
    same_model: bool,
) -> list[tuple[str, str]]:
    """What differs in the optimizer (its state's shapes only checked for the same model)."""
    saved = info["optimizer"]
    assert isinstance(saved, dict)
    kind = type(optimizer).__name__
    if saved["kind"] != kind:
        return [("optimizer", f"file has {saved['kind']}, optimizer is {kind}")]
    problems: list[tuple[str, str]] = []
    settings = saved["settings"]
    assert isinstance(settings, dict)
    for key, setting in optimizer.hyperparameters().items():
        value = jsonable(setting)
        if settings.get(key) != value:
            problems.append(
                (f"{kind} {key}", f"file has {brief(settings.get(key))}, optimizer has {value!r}")
            )
    step_count = saved["step_count"]
    assert isinstance(step_count, int)
    # A number learning rate is restored, as PyTorch's optimizer state restores it (a loop
    # may have set it by hand); a schedule must give the saved rate at the saved step.
    schedule = optimizer.lr if callable(optimizer.lr) else None
    saved_lr = saved["lr"]
    if schedule is None and saved.get("schedule"):
        problems.append(
            (
                "learning rate",
                "the file's run used a schedule, the optimizer has a number: build it with "
                "the schedule",
            )
        )
    elif schedule is None and not (isinstance(saved_lr, float | int) and 0 <= saved_lr < math.inf):
        problems.append(("learning rate", f"file has {saved_lr!r}, not a finite number >= 0"))
    if schedule is not None and float(schedule(step_count)) != saved_lr:
        problems.append(
            (
                f"learning rate at step {step_count}",
                f"file has {saved_lr!r}, the schedule gives {float(schedule(step_count))!r}",
            )
        )
    for name, weight in named.items() if same_model else ():
        for slot in optimizer.slots:
            entry = entries.get(f"{STATE}{name}/{slot}")
            if entry is not None and (entry.elem, entry.shape) != (weight.elem, weight.shape):
                found = f"{CODE_OF_ELEM[entry.elem]}{list(entry.shape)}"
                problems.append(
                    (f"{brief(name)} {slot}", f"file has {found}, parameter is {weight.describe()}")
                )
    return problems
