"""Training checkpoints: parameters, optimizer state and the loop's position, in one file.

A checkpoint is a safetensors file written by :func:`~typed_nn.model.save_weights` (so
atomically, and readable by any safetensors reader) holding

* ``param/<name>``: every parameter;
* ``optimizer/<name>/<slot>``: the optimizer's state tensors of each parameter it has
  updated (``Optimizer.slots``: Momentum's velocity, Adam's moments);
* ``extra/<name>``: arrays of the training loop (``fit`` keeps early stopping's best
  weights there);

and, as its ``__metadata__["typed_nn.checkpoint"]``, JSON with the format version, a hash of
the model's structure (names, shapes, element types), the optimizer's kind, settings, step
count (the schedule's position) and learning rate there, the epoch, the state of a numpy
``Generator`` (the shuffling), the history, and a CRC-32 of every tensor's bytes.

:func:`load_checkpoint` validates everything first — the file (as ``load_weights`` does),
the metadata, the checksum, the parameters' names, shapes and element types, the optimizer's
kind and settings — and only then writes: a checkpoint of another model or optimizer, or a
damaged one, is a :class:`~typed_nn.CheckpointError` (or ``WeightFileError``) that names what
differs, and leaves the model and the optimizer unchanged.

>>> save_checkpoint(path, params, optimizer, epoch=5, rng=rng, history={"loss": [0.3]})
>>> ckpt = load_checkpoint(path, params, optimizer)      # params, optimizer restored
>>> ckpt.epoch, ckpt.history, ckpt.rng()
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from .. import devices
from ..data.tensor import Tensor, TensorLike
from ..errors import CheckpointError, OperandError, ParamError, brief, listed, message
from ..tags import CPU, dim_of_rank
from .load_buffer import LoadBuffer
from .optim import Optimizer
from .safetensors_format import CODE_OF_ELEM, Entry, parse
from .weights import SHOWN, _check_writable, checked_tensors, read_file, save_weights

__all__ = ["FORMAT_VERSION", "Checkpoint", "Json", "load_checkpoint", "save_checkpoint"]

Json: TypeAlias = object
"""JSON data: None, bools, numbers, strings, and lists and string-keyed dicts of them
(checked when saved; the history and the generator state are stored as such)."""
PathLike: TypeAlias = str | os.PathLike[str]
AnyParam: TypeAlias = Tensor[Any, Any, Any]
Params: TypeAlias = Mapping[str, AnyParam] | LoadBuffer[Any, Any]

FORMAT_VERSION = 1
METADATA_KEY = "typed_nn.checkpoint"
PARAM, STATE, EXTRA = "param/", "optimizer/", "extra/"
HINT = (
    "nothing was changed. Resume with the model and the optimizer the checkpoint was saved "
    "from (the same layers, optimizer kind and settings, learning rate or schedule)."
)


@dataclass(frozen=True)
class Checkpoint:
    """What :func:`load_checkpoint` gives back besides the restored parameters and optimizer:
    the ``epoch`` saved, the numpy generator's state (None if none was saved), the history
    and the loop's extra arrays (host copies)."""

    epoch: int
    rng_state: dict[str, Json] | None
    history: dict[str, Json] | None
    arrays: dict[str, npt.NDArray[Any]] = field(default_factory=dict)

    def rng(self) -> np.random.Generator:
        """A generator in the saved state (the draws continue where the saved run's stopped)."""
        if self.rng_state is None:
            raise CheckpointError(
                message(
                    "the checkpoint holds no random generator state.",
                    hint="pass rng= to save_checkpoint to store one.",
                )
            )
        name = self.rng_state.get("bit_generator")
        bit_generator = getattr(np.random, name, None) if isinstance(name, str) else None
        if not (
            isinstance(bit_generator, type) and issubclass(bit_generator, np.random.BitGenerator)
        ):
            raise CheckpointError(
                message(
                    "the checkpoint's random generator state names no numpy bit generator.",
                    [("received", brief(name))],
                    hint="the file is damaged; save the checkpoint again.",
                )
            )
        generator = bit_generator()
        generator.state = self.rng_state
        return np.random.Generator(generator)


def save_checkpoint(
    path: PathLike,
    params: Params,
    optimizer: Optimizer,
    *,
    epoch: int,
    rng: np.random.Generator | None = None,
    history: Mapping[str, Json] | None = None,
    extra: Mapping[str, TensorLike[Any, Any, Any]] | None = None,
) -> None:
    """Write ``params``, ``optimizer``'s state and settings, ``epoch`` (epochs done), ``rng``'s
    state and ``history`` (JSON data) to ``path``, atomically; ``extra``: more arrays of the
    training loop, given back by :func:`load_checkpoint` as ``Checkpoint.arrays``.

    Every weight the optimizer keeps state for must be one of ``params`` (its state would be
    lost otherwise): a ``CheckpointError`` says how many are not.
    """
    named = _checked_params(params, "save_checkpoint")
    _check_save_arguments(optimizer, epoch, rng)
    _check_state_saved(path, named, optimizer)
    tensors = _tensors_to_save(named, optimizer, extra)
    info: dict[str, Json] = {
        "format": "typed_nn checkpoint",
        "version": FORMAT_VERSION,
        "model": _structure(named),
        "optimizer": _optimizer_info(optimizer, optimizer.step_count),
        "epoch": epoch,
        "rng": _jsonable(rng.bit_generator.state) if rng is not None else None,
        "history": dict(history) if history is not None else None,
        "crc32": _crc({n: (t.elem, t.shape, _little_endian(t.array)) for n, t in tensors.items()}),
    }
    try:
        text = json.dumps(info)
    except (TypeError, ValueError) as exc:
        raise ParamError(
            message(
                "save_checkpoint: the history must be JSON data (numbers, strings, lists, dicts).",
                [("problem", str(exc)[:200])],
                hint="convert it first, e.g. dataclasses.asdict(history).",
            )
        ) from None
    save_weights(path, tensors, metadata={METADATA_KEY: text})


def _check_save_arguments(optimizer: object, epoch: object, rng: object) -> None:
    """save_checkpoint's optimizer, epoch and generator (checked at run time: callers may
    pass anything)."""
    if not isinstance(optimizer, Optimizer):
        raise OperandError(
            message(
                "save_checkpoint needs the optimizer whose state to save.",
                [("received", type(optimizer).__name__)],
                hint="pass the typed_nn.model optimizer the model trains with, e.g. Adam(1e-3).",
            )
        )
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
        raise ParamError(
            message(
                "save_checkpoint: epoch must be an integer >= 0 (the epochs done).",
                [("received", brief(epoch))],
                hint="pass epoch=5 after five epochs.",
            )
        )
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ParamError(
            message(
                "save_checkpoint: rng must be a numpy Generator or None.",
                [("received", type(rng).__name__)],
                hint="pass the np.random.default_rng(seed) the training loop draws from.",
            )
        )


def _check_state_saved(path: PathLike, named: Mapping[str, AnyParam], optimizer: Optimizer) -> None:
    """Every weight the optimizer keeps state for is one of the parameters saved."""
    names_of = {id(w): name for name, w in named.items()}
    orphans = [w for w in optimizer.weights_with_state() if id(w) not in names_of]
    if orphans:
        raise CheckpointError(
            message(
                f"cannot save a checkpoint to {os.fspath(path)}: the optimizer keeps state for "
                f"{len(orphans)} weight(s) that are not among the parameters given.",
                [("first", orphans[0].describe()), ("parameters", f"{len(named)} given")],
                hint="pass every parameter the optimizer updates (e.g. the model's LoadBuffer).",
            )
        )


def _tensors_to_save(
    named: Mapping[str, AnyParam],
    optimizer: Optimizer,
    extra: Mapping[str, TensorLike[Any, Any, Any]] | None,
) -> dict[str, AnyParam]:
    """Host copies of the parameters, the optimizer's state tensors and the extra arrays,
    by their names in the file."""
    tensors: dict[str, AnyParam] = {PARAM + n: _host(w) for n, w in named.items()}
    stateful = {id(w) for w in optimizer.weights_with_state()}
    for name, weight in named.items():
        if id(weight) in stateful:
            for slot, state in optimizer.state(weight).items():
                tensors[f"{STATE}{name}/{slot}"] = _host(state)
    for name, value in (extra or {}).items():
        if not isinstance(value, TensorLike):
            raise OperandError(
                message(
                    f"save_checkpoint: extra array {brief(name)} is not typed_nn data.",
                    [("received", type(value).__name__)],
                    hint="pass tn.Tensor values.",
                )
            )
        tensors[EXTRA + name] = _host(value)
    return tensors


def load_checkpoint(path: PathLike, params: Params, optimizer: Optimizer) -> Checkpoint:
    """Restore ``params`` and ``optimizer`` (state tensors, step count) from the checkpoint at
    ``path``; returns its epoch, generator state, history and extra arrays.

    Everything is checked before anything is written; on any mismatch or damage the model
    and the optimizer are unchanged.
    """
    named = _checked_params(params, "load_checkpoint")
    source, data = read_file(path)
    entries, metadata, base = parse(data, source)
    info = _read_info(metadata, source)
    arrays = {name: e.array(data, base) for name, e in entries.items()}
    layout = {n: (e.elem, e.shape, arrays[n]) for n, e in entries.items()}
    if _crc(layout) != info["crc32"]:
        raise _damaged(source, "the tensors' bytes do not match the checksum saved with them.")
    _check_matches(source, named, optimizer, entries, info)
    _check_writable(dict(named), source)
    _write_params_and_state(named, optimizer, arrays)
    optimizer_info = info["optimizer"]
    assert isinstance(optimizer_info, dict)
    step_count = optimizer_info["step_count"]
    assert isinstance(step_count, int)
    optimizer.step_count = step_count
    rng, history = info["rng"], info["history"]
    extra = {
        n[len(EXTRA) :]: a.astype(a.dtype.newbyteorder("="))  # an owned, writable copy
        for n, a in arrays.items()
        if n.startswith(EXTRA)
    }
    epoch = info["epoch"]
    assert isinstance(epoch, int)
    return Checkpoint(
        epoch,
        rng if isinstance(rng, dict) else None,
        history if isinstance(history, dict) else None,
        extra,
    )


def _check_matches(
    source: str,
    named: Mapping[str, AnyParam],
    optimizer: Optimizer,
    entries: Mapping[str, Entry],
    info: Mapping[str, Json],
) -> None:
    """The checkpoint was saved from this model and optimizer: a ``CheckpointError`` listing
    what differs otherwise."""
    problems = _model_problems(named, entries, info)
    problems += _optimizer_problems(optimizer, named, entries, info, not problems)
    if problems:
        if len(problems) > SHOWN + 1:
            problems = [*problems[:SHOWN], ("...", f"{len(problems) - SHOWN} more differences")]
        raise CheckpointError(
            message(
                f"cannot load the checkpoint {source}: it was saved from another model or "
                "optimizer.",
                [("file", source), *problems],
                hint=HINT,
            )
        )


def _write_params_and_state(
    named: Mapping[str, AnyParam], optimizer: Optimizer, arrays: Mapping[str, npt.NDArray[Any]]
) -> None:
    """Write the saved parameters and optimizer state (every value is moved to its device
    before the first write)."""
    values = {name: _on_device(arrays[PARAM + name], weight) for name, weight in named.items()}
    states = {
        (name, slot): _on_device(arrays[f"{STATE}{name}/{slot}"], weight)
        for name, weight in named.items()
        for slot in optimizer.slots
        if f"{STATE}{name}/{slot}" in arrays
    }
    stateful = {id(w) for w in optimizer.weights_with_state()}
    for name, weight in named.items():
        weight.array[...] = values[name]
        if not optimizer.slots:
            continue
        if (name, optimizer.slots[0]) in states or id(weight) in stateful:
            # Saved state is restored; state the saved run had not made yet starts at zero.
            for slot, tensor in optimizer.state_tensors(weight).items():
                saved = states.get((name, slot))
                tensor.array[...] = saved if saved is not None else 0


def _checked_params(params: object, owner: str) -> dict[str, AnyParam]:
    return checked_tensors(
        params,
        Tensor,
        not_a_mapping=f"{owner} needs the parameters as a mapping name -> tensor or a LoadBuffer.",
        mapping_hint="pass the model's LoadBuffer (build_mlp returns it), or {'fc1/weight': w}.",
        not_a_tensor=lambda name: f"{owner}: parameter {brief(name)} is not a principal tensor.",
        tensor_hint="pass the parameter tensors themselves (tn.Tensor), by name.",
        string_names=True,
    )


def _host(value: TensorLike[Any, Any, Any]) -> AnyParam:
    """``value`` as a tensor on the host (evaluated, copied from the GPU if need be)."""
    return Tensor(value.numpy(), value.elem, CPU, dim_of_rank(value.rank))


def _little_endian(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.asarray(array, dtype=array.dtype.newbyteorder("<"))


def _crc(layout: Mapping[str, tuple[type, tuple[int, ...], npt.NDArray[Any]]]) -> int:
    """CRC-32 of every tensor's name, element, shape and little-endian bytes, by name."""
    crc = 0
    for name in sorted(layout):
        elem, shape, array = layout[name]
        crc = zlib.crc32(f"{name}:{CODE_OF_ELEM[elem]}{list(shape)}".encode(), crc)
        crc = zlib.crc32(np.ascontiguousarray(_little_endian(array)).tobytes(), crc)
    return crc


def _structure(named: Mapping[str, AnyParam]) -> dict[str, Json]:
    """The model's structure: a hash of its parameters' names, shapes and element types."""
    described = [[n, list(w.shape), CODE_OF_ELEM[w.elem]] for n, w in sorted(named.items())]
    digest = hashlib.sha256(json.dumps(described).encode()).hexdigest()
    return {"hash": digest, "parameters": len(described)}


def _optimizer_info(optimizer: Optimizer, step_count: int) -> dict[str, Json]:
    """Kind, settings, state slots, step count and the learning rate at that step."""
    lr = optimizer.lr(step_count) if callable(optimizer.lr) else optimizer.lr
    settings = {k: _jsonable(v) for k, v in optimizer.hyperparameters().items()}
    return {
        "kind": type(optimizer).__name__,
        "settings": settings,
        "slots": list(optimizer.slots),
        "step_count": step_count,
        "lr": float(lr),
        "schedule": callable(optimizer.lr),
    }


def _jsonable(value: object) -> Json:
    """A bit generator's state as JSON data (numpy arrays and integers become lists, ints)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ParamError(message("cannot store the generator state.", [("part", type(value).__name__)]))


def _damaged(source: str, what: str, items: list[tuple[str, str]] | None = None) -> CheckpointError:
    return CheckpointError(
        message(
            f"cannot load the checkpoint {source}: {what}",
            [("file", source), *(items or [])],
            hint="the file is damaged or not a typed_nn checkpoint; nothing was changed. "
            "Write it again with typed_nn.model.save_checkpoint (or fit's checkpoint_path=).",
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


def _read_info(metadata: Mapping[str, str], source: str) -> dict[str, Json]:
    """The checkpoint's JSON metadata, checked field by field."""
    text = metadata.get(METADATA_KEY)
    if text is None:
        raise _damaged(
            source,
            "it is a safetensors file without checkpoint metadata (a weight file?).",
            [("needed", f"__metadata__[{METADATA_KEY!r}]")],
        )
    try:
        info = json.loads(text)
    except ValueError as exc:
        raise _damaged(source, f"its metadata is not valid JSON ({str(exc)[:120]}).") from None
    if not isinstance(info, dict):
        raise _damaged(source, "its metadata is not a JSON object.")
    for fields, where in ((FIELDS, info), (OPTIMIZER_FIELDS, info.get("optimizer"))):
        for key, kinds in fields.items():
            value = where.get(key) if isinstance(where, dict) else None
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise _damaged(
                    source,
                    f"its metadata lacks a valid {key!r}.",
                    [("found", brief(value)), ("expected", " or ".join(k.__name__ for k in kinds))],
                )
    if info["version"] != FORMAT_VERSION:
        raise _damaged(
            source,
            f"it has format version {info['version']}; this typed_nn reads {FORMAT_VERSION}.",
        )
    return info


def _model_problems(
    named: Mapping[str, AnyParam], entries: Mapping[str, Entry], info: Mapping[str, Json]
) -> list[tuple[str, str]]:
    saved = {n[len(PARAM) :]: e for n, e in entries.items() if n.startswith(PARAM)}
    problems: list[tuple[str, str]] = []
    missing = sorted(set(named) - set(saved))
    if missing:
        problems.append(("missing in file", listed(missing)))
    unexpected = sorted(set(saved) - set(named))
    if unexpected:
        problems.append(("not a parameter", listed(unexpected)))
    for name in sorted(set(saved) & set(named)):
        entry, weight = saved[name], named[name]
        if (entry.elem, entry.shape) != (weight.elem, weight.shape):
            found = f"{CODE_OF_ELEM[entry.elem]}{list(entry.shape)}"
            problems.append((brief(name), f"file has {found}, parameter is {weight.describe()}"))
    model = info["model"]
    if not problems and isinstance(model, dict) and model.get("hash") != _structure(named)["hash"]:
        problems.append(("model", "the saved structure hash differs (the metadata is damaged)"))
    return problems


def _optimizer_problems(
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
        value = _jsonable(setting)
        if settings.get(key) != value:
            problems.append(
                (f"{kind} {key}", f"file has {brief(settings.get(key))}, optimizer has {value!r}")
            )
    step_count = saved["step_count"]
    assert isinstance(step_count, int)
    lr = optimizer.lr(step_count) if callable(optimizer.lr) else optimizer.lr
    if float(lr) != saved["lr"]:  # JSON keeps a float exactly
        problems.append(
            (
                f"learning rate at step {step_count}",
                f"file has {saved['lr']!r}, optimizer has {float(lr)!r}",
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


def _on_device(host: npt.NDArray[Any], weight: AnyParam) -> Any:
    if weight.device.name != "CPU":
        return devices.array_module(weight.device).asarray(host)
    return host
