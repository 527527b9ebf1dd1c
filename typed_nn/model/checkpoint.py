"""Training checkpoints: a model's whole state, the optimizer's and the loop's, in one file.

A checkpoint is a safetensors file written by :func:`~typed_nn.model.save_weights` (so
atomically, and readable by any safetensors reader) holding

* ``param/<name>``: every parameter and buffer (batch-norm statistics, ...);
* ``generator/<name>``: every random-number state of the model (a dropout layer's);
* ``optimizer/<name>/<slot>``: the optimizer's state tensors of each parameter it has
  updated (``Optimizer.slots``: Momentum's velocity, Adam's moments);
* ``extra/<name>``: arrays of the training loop (``fit`` keeps early stopping's best
  weights there);

and, as its ``__metadata__["typed_nn.checkpoint"]``, JSON (``checkpoint_format.py``). The
model is a typed_nn layer, whose state comes from one walk over it (``model_state``:
parameters, buffers, random-number states), or a mapping name -> parameter tensor (a
``LoadBuffer``), which has no random-number states.

:func:`load_checkpoint` validates everything first — the file (as ``load_weights`` does),
the metadata, the checksum, the state's names, shapes and element types, the optimizer's
kind and settings — and only then writes: a checkpoint of another model or optimizer, or a
damaged one, is a :class:`~typed_nn.CheckpointError` (or ``WeightFileError``) that names what
differs, and leaves the model and the optimizer unchanged.

>>> save_checkpoint(path, net, optimizer, epoch=5, rng=rng, history={"loss": [0.3]})
>>> ckpt = load_checkpoint(path, net, optimizer)      # net, optimizer restored
>>> ckpt.epoch, ckpt.history, ckpt.rng()
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from .. import devices
from ..data.module import Module, named_buffers, named_parameters, named_persistent
from ..data.tensor import Tensor, TensorLike
from ..errors import CheckpointError, OperandError, ParamError, bad_argument, brief, message
from ..evaluate.cache import overwrite
from ..layers.protocol import Layer
from ..layers.state import model_state
from ..layers.state_entry import StateEntry
from ..tags import CPU, dim_of_rank
from .checkpoint_format import (
    CHECKPOINT,
    EXTRA,
    FORMAT_VERSION,
    GENERATOR,
    METADATA_KEY,
    PARAM,
    STATE,
    Json,
    checksum,
    damage,
    damaged,
    jsonable,
    model_problems,
    optimizer_info,
    optimizer_problems,
    read_info,
    structure,
)
from .load_buffer import LoadBuffer
from .optim import Optimizer
from .safetensors_format import Entry, parse
from .weights import (
    SHOWN,
    PathLike,
    _check_writable,
    check_path,
    checked_tensors,
    read_file,
    save_weights,
)

__all__ = [
    "AnyOptimizer",
    "Checkpoint",
    "Json",
    "Model",
    "ModuleOptimizer",
    "load_checkpoint",
    "save_checkpoint",
]

AnyParam: TypeAlias = Tensor[Any, Any, Any]
Model: TypeAlias = Module | Layer[Any, Any] | Mapping[str, AnyParam] | LoadBuffer[Any, Any]
"""What a checkpoint saves and restores: an ``nn.Module`` (its parameters, buffers and
generators), a typed_nn layer (all of its state) or a mapping name -> parameter tensor."""


class ModuleOptimizer(Protocol):
    """A ``typed_nn.optim`` optimizer as a checkpoint sees it: its rule (state tensors,
    settings) and its step count, which the checkpoint saves and restores."""

    @property
    def rule(self) -> Optimizer: ...

    @property
    def step_count(self) -> int: ...

    @step_count.setter
    def step_count(self, value: int) -> None: ...


AnyOptimizer: TypeAlias = Optimizer | ModuleOptimizer
"""What a checkpoint saves and restores the state of: a ``typed_nn.optim`` optimizer or a
``typed_nn.model`` one."""


def _rule_of(optimizer: object, owner: str, model: object = None) -> Optimizer:
    """The update rule whose state a checkpoint holds (an OperandError for anything else);
    a ``typed_nn.optim`` optimizer must be ``model``'s, where that is a module."""
    built_for = getattr(optimizer, "model", None)
    if isinstance(model, Module) and isinstance(built_for, Module) and built_for is not model:
        raise ParamError(
            message(
                f"{owner}: the optimizer was built for another model.",
                [
                    (
                        "declared",
                        f"optim.{type(optimizer).__name__}(model) of this {type(model).__name__}",
                    ),
                    ("received", f"an optimizer of another {type(built_for).__name__}"),
                ],
                hint="pass the optimizer the model trains with: optim.Adam(model, lr=...).",
            )
        )
    rule = optimizer if isinstance(optimizer, Optimizer) else getattr(optimizer, "rule", None)
    if not isinstance(rule, Optimizer):
        raise OperandError(
            message(
                f"{owner} needs the optimizer whose state to save or restore.",
                [("received", type(optimizer).__name__)],
                hint="pass the optimizer the model trains with, e.g. optim.Adam(model).",
            )
        )
    return rule


HINT = (
    "nothing was changed. Resume with the model and the optimizer the checkpoint was saved "
    "from (the same layers, optimizer kind and settings, learning rate or schedule)."
)


@dataclass(frozen=True)
class Checkpoint:
    """What :func:`load_checkpoint` gives back besides the restored model and optimizer:
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


@dataclass(frozen=True)
class _State:
    """A model's state as a checkpoint sees it: parameters and buffers by name, and its
    random-number states (None for a mapping of parameters, which has none)."""

    tensors: dict[str, AnyParam]
    generators: dict[str, StateEntry] | None

    def generator_values(self) -> dict[str, AnyParam] | None:
        if self.generators is None:
            return None
        return {name: entry.read() for name, entry in self.generators.items()}


def save_checkpoint(
    path: PathLike,
    model: Model,
    optimizer: AnyOptimizer,
    *,
    epoch: int,
    rng: np.random.Generator | None = None,
    history: Mapping[str, Json] | None = None,
    extra: Mapping[str, TensorLike[Any, Any, Any]] | None = None,
) -> None:
    """Write ``model``'s state, ``optimizer``'s state and settings, ``epoch`` (epochs done),
    ``rng``'s state and ``history`` (a JSON object: a mapping of strings to JSON data) to
    ``path``, atomically; ``extra``: more arrays of the training loop, given back by
    :func:`load_checkpoint` as ``Checkpoint.arrays``.

    ``model``: a typed_nn layer (its parameters, buffers and random-number states) or a
    mapping name -> parameter tensor. Every weight the optimizer keeps state for must be one
    of its parameters (its state would be lost otherwise): a ``CheckpointError`` says how
    many are not. Every argument is checked before anything is written.
    """
    check_path(path, "save_checkpoint")
    state = _state_of(model, "save_checkpoint")
    rule, step_count = _rule_of(optimizer, "save_checkpoint", model), optimizer.step_count
    _check_save_arguments(epoch, rng, history, extra)
    _check_state_saved(path, state.tensors, rule)
    tensors = _tensors_to_save(state, rule, extra)
    info: dict[str, Json] = {
        "format": "typed_nn checkpoint",
        "version": FORMAT_VERSION,
        "model": structure(state.tensors),
        "optimizer": optimizer_info(rule, step_count),
        "epoch": epoch,
        "rng": jsonable(rng.bit_generator.state) if rng is not None else None,
        "history": dict(history) if history is not None else None,
    }
    try:
        info = json.loads(json.dumps(info))  # as the file holds it (int keys are strings)
        layout = {n: (t.elem, t.shape, t.array) for n, t in tensors.items()}
        info["crc32"] = checksum(layout, info)
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


def _state_of(model: object, owner: str) -> _State:
    """``model``'s state: a module's or a layer's from one walk, a mapping's parameters."""
    if isinstance(model, Module):  # generator states are buffers of the tree
        return _State(_module_tensors(model), None)
    if isinstance(model, Layer):
        entries = model_state(model)
        tensors = {name: e.read() for name, e in entries.of("parameter", "buffer").items()}
        return _State(tensors, entries.generators)
    named = checked_tensors(
        model,
        Tensor,
        not_a_mapping=f"{owner} needs the model: a typed_nn layer, or its parameters as a "
        "mapping name -> tensor.",
        mapping_hint="pass the model's layer, or its LoadBuffer (build_mlp returns both), or "
        "{'fc1/weight': w}.",
        not_a_tensor=lambda name: f"{owner}: parameter {brief(name)} is not a principal tensor.",
        tensor_hint="pass the parameter tensors themselves (tn.Tensor), by name.",
        string_names=True,
    )
    return _State(named, None)


def _module_tensors(model: Module) -> dict[str, AnyParam]:
    named = dict(named_parameters(model) + named_buffers(model))
    for name, t in named.items():
        if not isinstance(t, Tensor):
            raise OperandError(
                message(
                    f"cannot checkpoint {type(model).__name__}: {name} is not a principal tensor.",
                    [("received", t.describe())],
                    hint="save the model itself, not a tree of expressions.",
                )
            )
    return cast(dict[str, AnyParam], named)


def _under_saved_names(
    model: Module, tensors: dict[str, AnyParam], entries: Mapping[str, Entry]
) -> dict[str, AnyParam]:
    """``tensors`` with a tied one under the path the file saved it as: a checkpoint names a
    tied tensor by its first path, and which path is first changed once (a module's own
    parameters now come before its submodules', as in PyTorch)."""
    paths: dict[int, list[str]] = {}
    for path, t in named_persistent(model):
        paths.setdefault(id(t), []).append(path)
    renamed: dict[str, AnyParam] = {}
    for name, t in tensors.items():
        if PARAM + name not in entries:
            saved = [p for p in paths.get(id(t), ()) if PARAM + p in entries and p not in tensors]
            name = saved[0] if saved else name
        renamed[name] = t
    return renamed


def _check_save_arguments(epoch: object, rng: object, history: object, extra: object) -> None:
    """save_checkpoint's epoch, generator, history and extra arrays (checked at run time:
    callers may pass anything)."""
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
        raise _bad_argument(
            "epoch", "an integer >= 0 (the epochs done)", epoch, "pass epoch=5 after five epochs."
        )
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise _bad_argument(
            "rng",
            "a numpy Generator or None",
            rng,
            "pass the np.random.default_rng(seed) the training loop draws from.",
        )
    if history is not None and not (
        isinstance(history, Mapping) and all(isinstance(k, str) for k in history)
    ):
        raise _bad_argument(
            "history",
            "a mapping of strings to JSON data (a JSON object), or None",
            history,
            "pass e.g. {'loss': [0.3, 0.2]}, or dataclasses.asdict(history) for fit's History.",
        )
    if extra is not None and not isinstance(extra, Mapping):
        raise _bad_argument(
            "extra", "a mapping name -> tensor, or None", extra, "pass e.g. {'best/w': w}."
        )


def _bad_argument(name: str, allowed: str, value: object, hint: str) -> ParamError:
    return bad_argument(ParamError, "save_checkpoint", name, allowed, value, hint)


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
                hint="pass the model the optimizer trains (its layer, or its LoadBuffer).",
            )
        )


def _tensors_to_save(
    state: _State, optimizer: Optimizer, extra: Mapping[str, TensorLike[Any, Any, Any]] | None
) -> dict[str, AnyParam]:
    """Host copies of the parameters and buffers, the random-number states, the optimizer's
    state tensors and the extra arrays, by their names in the file."""
    tensors: dict[str, AnyParam] = {PARAM + n: _host(w) for n, w in state.tensors.items()}
    for name, value in (state.generator_values() or {}).items():
        tensors[GENERATOR + name] = _host(value)
    stateful = {id(w) for w in optimizer.weights_with_state()}
    for name, weight in state.tensors.items():
        if id(weight) in stateful:
            for slot, tensor in optimizer.state(weight).items():
                tensors[f"{STATE}{name}/{slot}"] = _host(tensor)
    given: Iterable[tuple[object, object]] = (extra or {}).items()  # callers may pass anything
    for key, item in given:
        if not isinstance(item, TensorLike) or not isinstance(key, str):
            raise OperandError(
                message(
                    f"save_checkpoint: extra array {brief(key)} is not typed_nn data named by "
                    "a string.",
                    [("received", f"{brief(key)}: {type(item).__name__}")],
                    hint="pass tn.Tensor values by str names.",
                )
            )
        tensors[EXTRA + key] = _host(item)
    return tensors


def load_checkpoint(path: PathLike, model: Model, optimizer: AnyOptimizer) -> Checkpoint:
    """Restore ``model`` (a typed_nn layer's parameters, buffers and random-number states,
    or a mapping's parameters) and ``optimizer`` (state tensors, step count) from the
    checkpoint at ``path``; returns its epoch, generator state, history and extra arrays.

    Everything is checked before anything is written; on any mismatch or damage the model
    and the optimizer are unchanged.
    """
    check_path(path, "load_checkpoint")
    state = _state_of(model, "load_checkpoint")
    rule = _rule_of(optimizer, "load_checkpoint", model)
    source, data = read_file(path, CHECKPOINT)
    entries, metadata, base = parse(data, source, damage(source))
    info = read_info(metadata, source)
    arrays = {name: e.array(data, base) for name, e in entries.items()}
    if (
        checksum({n: (e.elem, e.shape, arrays[n]) for n, e in entries.items()}, info)
        != info["crc32"]
    ):
        raise damaged(source, "its bytes do not match the checksum saved with them.")
    if isinstance(model, Module):
        state = _State(_under_saved_names(model, state.tensors, entries), None)
    _check_matches(source, state, rule, entries, info)
    _check_writable(dict(state.tensors), source)
    _write_state(state, rule, arrays)
    optimizer_saved = info["optimizer"]
    assert isinstance(optimizer_saved, dict)
    step_count = optimizer_saved["step_count"]
    assert isinstance(step_count, int)
    optimizer.step_count = step_count
    if not callable(rule.lr):  # a number: the saved run's rate (checked, a finite number)
        saved_lr = optimizer_saved["lr"]
        assert isinstance(saved_lr, float | int)
        rule.lr = float(saved_lr)
    rng, history, epoch = info["rng"], info["history"], info["epoch"]
    extra = {
        n[len(EXTRA) :]: a.astype(a.dtype.newbyteorder("="))  # an owned, writable copy
        for n, a in arrays.items()
        if n.startswith(EXTRA)
    }
    assert isinstance(epoch, int)
    return Checkpoint(
        epoch,
        rng if isinstance(rng, dict) else None,
        history if isinstance(history, dict) else None,
        extra,
    )


def _check_matches(
    source: str,
    state: _State,
    optimizer: Optimizer,
    entries: Mapping[str, Entry],
    info: Mapping[str, Json],
) -> None:
    """The checkpoint was saved from this model and optimizer: a ``CheckpointError`` listing
    what differs otherwise."""
    problems = model_problems(state.tensors, state.generator_values(), entries, info)
    problems += optimizer_problems(optimizer, state.tensors, entries, info, not problems)
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


def _write_state(
    state: _State, optimizer: Optimizer, arrays: Mapping[str, npt.NDArray[Any]]
) -> None:
    """Write the saved parameters, buffers, optimizer state and random-number states (every
    tensor's values are moved to its device before the first write)."""
    named = state.tensors
    values = {name: _on_device(arrays[PARAM + name], weight) for name, weight in named.items()}
    states = {
        (name, slot): _on_device(arrays[f"{STATE}{name}/{slot}"], weight)
        for name, weight in named.items()
        for slot in optimizer.slots
        if f"{STATE}{name}/{slot}" in arrays
    }
    stateful = {id(w) for w in optimizer.weights_with_state()}
    for name, weight in named.items():
        overwrite(weight, values[name])
        if not optimizer.slots:
            continue
        if (name, optimizer.slots[0]) in states or id(weight) in stateful:
            # Saved state is restored; state the saved run had not made yet starts at zero.
            for slot, tensor in optimizer.state_tensors(weight).items():
                saved = states.get((name, slot))
                overwrite(tensor, saved if saved is not None else 0)
    for name, entry in (state.generators or {}).items():
        entry.write(arrays[GENERATOR + name])


def _host(value: TensorLike[Any, Any, Any]) -> AnyParam:
    """``value`` as a tensor on the host (evaluated, copied from the GPU if need be)."""
    return Tensor(value.numpy(), value.elem, CPU, dim_of_rank(value.rank))


def _on_device(host: npt.NDArray[Any], weight: AnyParam) -> Any:
    if weight.device is not CPU:
        return devices.array_module(weight.device).asarray(host)
    return host
