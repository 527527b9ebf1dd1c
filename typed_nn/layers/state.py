"""``model_state(model)``: all of a model's state, from one walk over its layers.

Every layer reports the state it holds itself (``Layer.own_state``: parameters, buffers such as
batch-norm statistics, random-number states such as dropout's) and the layers it is made of
(``Layer.children``); the walk visits them all, so whatever reads a model's state — a
checkpoint, data-parallel ranks agreeing on a start — sees every part of it, and a new
stateful layer only has to report its own.

>>> state = model_state(net)                      # doctest: +SKIP
>>> sorted(state.buffers)                         # doctest: +SKIP
['blk/bn/running_mean', 'blk/bn/running_var']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import LayerError, OperandError, message
from .protocol import Layer
from .state_entry import StateEntry, StateKind

__all__ = ["ModelState", "model_state"]


@dataclass(frozen=True)
class ModelState:
    """A model's state entries by name, in the walk's order (each name once: a parameter
    shared by two layers is one entry)."""

    entries: dict[str, StateEntry]

    def of(self, *kinds: StateKind) -> dict[str, StateEntry]:
        """The entries of these kinds, by name."""
        return {n: e for n, e in self.entries.items() if e.kind in kinds}

    @property
    def parameters(self) -> dict[str, StateEntry]:
        """The trained principal tensors."""
        return self.of("parameter")

    @property
    def buffers(self) -> dict[str, StateEntry]:
        """The principal tensors that are not trained (batch-norm statistics, ...)."""
        return self.of("buffer")

    @property
    def generators(self) -> dict[str, StateEntry]:
        """The random-number states (dropout's, ...)."""
        return self.of("generator")


def model_state(model: object) -> ModelState:
    """Every parameter, buffer and random-number state of ``model`` (a typed_nn layer) and of
    the layers it is made of, by name. Names are unique: two different tensors under one
    name are a ``LayerError``."""
    if not isinstance(model, Layer):
        raise OperandError(
            message(
                "cannot read the state of a model that is not a typed_nn layer.",
                [("received", type(model).__name__)],
                hint="pass the model's layer (make_train_layer(...)(name, ...)), or its "
                "parameters as a mapping name -> tensor.",
            )
        )
    found: dict[str, StateEntry] = {}
    for layer in _walk(model):
        for entry in layer.own_state():
            seen = found.get(entry.name)
            if seen is None:
                found[entry.name] = entry
            elif seen.kind == "generator" or seen.read() is not entry.read():
                raise LayerError(
                    message(
                        f"two states of the model are named {entry.name!r}.",
                        [("layer", layer.name), ("first", seen.kind), ("second", entry.kind)],
                        hint="give each layer its own name (or share one parameter tensor).",
                    )
                )
    return ModelState(found)


def _walk(layer: Layer[Any, Any]) -> Iterator[Layer[Any, Any]]:
    """``layer`` and every layer below it, depth first, in order (no recursion limit)."""
    pending = [layer]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(reversed(current.children()))
