"""``DropoutLayer``: zero each element with probability ``rate`` while training (PyTorch's
``nn.Dropout``: the kept ones are scaled by ``1 / (1 - rate)``, so the mean is unchanged).

``DropoutLayer(name, rate, *, seed=None)``; ``rate`` in [0, 1); no seed: one derived from the
layer's name (two dropout layers of a model draw different masks). A training layer
(``make_train_layer``) drops; an inference layer (``make_infer_layer``) is the identity.
The backward (derived from the forward) multiplies by the same mask.

The masks are seeded and fresh at every training forward, eager or inside a ``tn.compile``\\ d
step: the mask is ``ops.dropout_mask`` of a state ``[seed, counter]`` (the values are a
function of the state, so a forward and its backward read one mask). Called eagerly, each
forward makes its own constant state from the layer's call count (the same seed gives the
same sequence of masks). Traced by ``tn.compile``, the forward draws from the layer's
``tn.Generator`` of that device, which reads its state *tensor* and records ``counter + 1``
into it: every replay of the compiled step reads a new counter and draws a new mask, where a
mask made once at trace time would be replayed frozen.

The layer's random-number state (``own_state``: the seed, the eager forwards and the compiled
forwards per device) is saved by checkpoints: a resumed run draws the masks the uninterrupted
run would have.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .. import devices, ops, tracing
from ..data.factories import tensor
from ..data.tensor import AnyTensor, Tensor
from ..errors import LayerError, message
from ..evaluate.cache import overwrite
from ..inference_mode import inference_enabled
from ..ops.node import format_site, user_site
from ..tags import CPU, GPU, DeviceTag, Dim1, Int64
from .in_map import float_input_type, tensor_type
from .keys import LayerInput, LayerOutput
from .param_cells import as_real
from .protocol import Layer
from .same_type_feeds import SameTypeFeeds
from .state_entry import StateEntry

__all__ = ["DropoutLayer"]

_EAGER, _TRACED = 0, 1
"""Mask streams: eager and compiled forwards never draw the same mask."""
_DEVICES: tuple[type[DeviceTag], ...] = (CPU, GPU)
"""The devices whose compiled-forward counters ``own_state`` reports, in its order."""


class DropoutLayer(SameTypeFeeds, Layer[LayerInput, LayerOutput]):
    """Drops elements with probability ``rate`` while training (see the module)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)

    def __init__(self, name: str, rate: float, *, seed: int | None = None) -> None:
        """``seed``: the stream's; None (the default) derives it from ``name`` (its path in a
        composite), so that two dropout layers of one model drop different elements."""
        super().__init__(name)
        given = as_real(rate)  # callers without a type checker may pass anything
        if given is None or not 0.0 <= given < 1.0:
            raise LayerError(
                message(
                    f"cannot create layer '{name}': the dropout rate must be in [0, 1), "
                    f"got {rate!r}.",
                    [("layer", name), ("received", repr(rate))],
                    built_at=format_site(user_site()),
                    hint="rate is the probability of dropping an element, e.g. 0.1 or 0.5 "
                    "(1 would drop everything).",
                )
            )
        seed_given: object = zlib.crc32(name.encode()) if seed is None else seed
        if not isinstance(seed_given, int | np.integer) or isinstance(seed_given, bool):
            raise LayerError(
                message(
                    f"cannot create layer '{name}': the seed must be an int, got {seed!r}.",
                    [("layer", name)],
                    built_at=format_site(user_site()),
                    hint="e.g. seed=0.",
                )
            )
        self.rate, self.seed = given, int(seed_given)
        self.calls = 0
        """Eager training forwards so far (the counter of the next eager mask)."""
        self.generators: dict[type[DeviceTag], ops.Generator[Any]] = {}
        """Per device, the generator compiled forwards draw from (its state [seed, counter])."""
        self._starts: dict[type[DeviceTag], int] = {}
        """Per device without a state yet, the counter its state starts from (restored)."""

    @classmethod
    def output_types(cls, input_types: Mapping[type, object] | None = None) -> dict[type, object]:
        """The input's type (the rate is per instance: no probe forward is run)."""
        given = input_types if input_types is not None else cls.input_map
        if given is None:
            return super().output_types(None)  # raises: an inference layer needs input types
        x = float_input_type(cls.__name__, given[LayerInput], "drops")
        assert x.elem is not None
        assert x.device is not None
        assert x.rank is not None
        return {LayerOutput: tensor_type(x.elem, x.device, x.rank)}

    @property
    def training(self) -> bool:
        """A training layer drops, outside ``tn.inference()``; an inference layer, or any
        layer inside ``tn.inference()``, passes its input through."""
        return type(self).input_map is not None and not inference_enabled()

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x = inputs[LayerInput]
        if not self.training or self.rate == 0.0:
            return {LayerOutput: x}
        keep = 1.0 - self.rate
        if tracing.state.trace is not None:  # tn.compile: the counter is read at every replay
            gen = self.generators.get(x.device)
            if gen is None:
                gen = self.generators[x.device] = ops.Generator(self.seed, x.device)
                start = np.array([self.seed, self._starts.pop(x.device, 0)], np.int64)
                gen.state.array[...] = devices.array_module(x.device).asarray(start)
            mask = ops.dropout_mask(gen, x.shape, keep, x.elem, _TRACED)
        else:
            self.calls += 1
            counter = tensor(np.array([self.seed, self.calls], np.int64), Int64, x.device, Dim1)
            mask = ops.dropout_mask(counter, x.shape, keep, x.elem, _EAGER)
        return {LayerOutput: x * mask}

    def own_state(self) -> list[StateEntry]:
        """The random-number state, ``[seed, eager forwards, compiled forwards on the CPU,
        on the GPU]`` (Int64, on the host)."""
        return [StateEntry(self.name, "generator", self._read_state, self._write_state)]

    def _read_state(self) -> Tensor[Int64, Any, Dim1]:
        counters = [
            int(gen.state.numpy()[1])
            if (gen := self.generators.get(d)) is not None
            else self._starts.get(d, 0)
            for d in _DEVICES
        ]
        return tensor(np.array([self.seed, self.calls, *counters], np.int64), Int64, CPU, Dim1)

    def _write_state(self, values: npt.NDArray[Any]) -> None:
        seed, calls, *counters = (int(v) for v in values)
        self.seed, self.calls = seed, calls
        for device, counter in zip(_DEVICES, counters, strict=True):
            gen = self.generators.get(device)
            if gen is None:  # made at the next compiled forward on that device
                self._starts.pop(device, None)
                if counter:
                    self._starts[device] = counter
            else:  # in place: a compiled step reads this tensor
                start = np.array([seed, counter], np.int64)
                overwrite(gen.state, devices.array_module(device).asarray(start))

    def __repr__(self) -> str:
        return f"DropoutLayer({self.name!r}, {self.rate}, seed={self.seed})"
