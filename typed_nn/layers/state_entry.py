"""One named piece of a layer's state, as a layer reports it (``Layer.own_state``).

Three kinds, as PyTorch and equinox name them: a ``parameter`` (a principal tensor the model
trains), a ``buffer`` (a principal tensor it does not train: batch-norm statistics, a frozen
weight) and a ``generator`` (the state of a random-number stream: a dropout layer's). The
walk over a whole model is ``typed_nn.layers.state.model_state``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy.typing as npt

from .. import devices
from ..data.tensor import Tensor
from ..evaluate.cache import overwrite

__all__ = ["StateEntry", "StateKind", "tensor_entry"]

StateKind: TypeAlias = Literal["parameter", "buffer", "generator"]
AnyTensor: TypeAlias = Tensor[Any, Any, Any]


@dataclass(frozen=True)
class StateEntry:
    """``name`` (unique in the model), its ``kind``, ``read()``: the current values as a
    principal tensor (the live tensor itself for parameters and buffers), and ``write(a)``:
    set them from the host array ``a`` (of ``read()``'s shape and dtype), in place."""

    name: str
    kind: StateKind
    read: Callable[[], AnyTensor]
    write: Callable[[npt.NDArray[Any]], None]


def tensor_entry(name: str, kind: StateKind, tensor: AnyTensor) -> StateEntry:
    """The entry of a principal tensor: read is the tensor, write copies into its memory
    (on its device), so everything that holds the tensor sees the new values."""

    def write(values: npt.NDArray[Any]) -> None:
        overwrite(tensor, devices.array_module(tensor.device).asarray(values))

    return StateEntry(name, kind, lambda: tensor, write)
