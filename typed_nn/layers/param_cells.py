"""What the forward-defined parameter layers (norms, LSTM / PyTorch GRU steps) share.

Each such layer is a composite of ``ParamSourceLayer`` sublayers feeding one *cell*: a
forward-only layer whose inputs are the data and the parameters, so its backward is derived
from ``tn.vjp`` of its forward (``derived.py``) and every parameter gets its gradient through
the usual composite walk. The composite's own ``forward`` checks the data against the sizes
the instance was built with, so a mistake names the layer and the sizes.

* :class:`Cell` builds its output types from probes of consistent shapes (``probe_shape``):
  the default all-ones probes cannot be split into gates.
* :class:`ParamComposite` forces per-parameter policies over inherited ones
  (``forced_policies``: a bias is a vector even under a parent's ``PParamTypeIs(Matrix)``,
  running statistics never update).
* :class:`ConstantParamLayer` / :class:`OnesParamLayer`: parameters PyTorch initialises to a
  constant (norm scale 1, shift 0, running mean 0, running variance 1), filled with it unless
  loaded or preset in the initializer (``PInitializerIs`` is not consulted).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..data.tensor import AnyTensor, Tensor
from ..errors import LayerError, RankError, ShapeError, message
from ..evaluate.cache import overwrite
from ..ops.node import format_site, user_site
from ..ops.special import ZeroTensor
from ..policies import AnyPolicyObject, PolicyContainer, change_policy
from ..tags import MAX_RANK
from .compose import ComposeKernel, DIn, DOut, KIn, KOut
from .declared import Decl
from .in_map import port_type, tensor_type
from .model_protocols import InitializerLike
from .protocol import Layer
from .source_layers import ParamSourceLayer
from .var_type_dict import VarValues, key_name

__all__ = [
    "ANY_RANK",
    "Cell",
    "ConstantParamLayer",
    "OnesParamLayer",
    "ParamComposite",
    "check_features",
    "check_number",
    "check_rank",
    "feeding",
]

ANY_RANK = tuple(range(1, MAX_RANK + 1))
"""The ranks of data with at least one dim."""


class Cell(Layer[Any, Any]):
    """A forward-only layer of a parameter composite (its backward is derived)."""

    @classmethod
    def probe_shape(cls, port: type, rank: int) -> tuple[int, ...]:
        """The shape of the probe of ``port`` (declared with ``rank`` dims)."""
        return (1,) * rank

    @classmethod
    def output_types(cls, input_types: Mapping[type, object] | None = None) -> dict[type, object]:
        given = input_types if input_types is not None else cls.input_map
        if given is None:
            return super().output_types(None)  # raises: no input types
        probes: dict[type, Any] = {}
        for port in cls.input_ports:
            t = port_type(given[port])
            assert t.elem is not None
            assert t.device is not None
            assert t.rank is not None
            probes[port] = ZeroTensor(cls.probe_shape(port, t.rank), t.elem, t.device)
        layer = cls.__new__(cls)
        Layer.__init__(layer, f"<types of {cls.__name__}>")
        return {p: tensor_type(v.elem, v.device, v.rank) for p, v in layer.forward(probes).items()}

    def feed_forward(self, inputs: VarValues[Any, Any]) -> VarValues[Any, Any]:
        """The outputs (lazy)."""
        return self._feed_forward(inputs)

    def feed_backward(self, grads: VarValues[Any, Any]) -> VarValues[Any, Any]:
        """The gradients of the data and parameter ports (derived from the forward)."""
        return self._feed_backward(grads)


class ParamComposite(ComposeKernel[KIn, KOut, DIn, DOut, Decl]):
    """A composite whose sublayers get ``forced_policies[name]`` over whatever they inherit;
    its type arguments are ``ComposeKernel``'s (ports, ranks, ``Decl``)."""

    forced_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {}

    @classmethod
    def _policies_of(cls, policies: PolicyContainer, name: str) -> PolicyContainer:
        picked = super()._policies_of(policies, name)
        for forced in cls.forced_policies.get(name, ()):
            picked = change_policy(forced, picked)
        return picked


class ConstantParamLayer(ParamSourceLayer):
    """A parameter filled with ``fill_value`` (0) unless loaded or preset by name."""

    fill_value: ClassVar[float] = 0.0

    def _fill(self, initializer: InitializerLike, name: str, data: AnyTensor) -> None:
        if initializer.is_param_exist(name):
            initializer.get_param(name, data)
        else:
            assert isinstance(data, Tensor)  # init allocates a principal tensor
            overwrite(data, type(self).fill_value)


class OnesParamLayer(ConstantParamLayer):
    """A parameter filled with ones unless loaded or preset by name."""

    fill_value: ClassVar[float] = 1.0


def feeding(layer: str, port: type | None) -> str:
    """How a message begins: feeding a layer (at ``port``), or applying a module (``port``
    None: PyTorch users know no ports)."""
    return f"cannot apply {layer}" if port is None else f"cannot feed layer '{layer}'"


def _fed(port: type | None) -> str:
    return "its input" if port is None else f"port {key_name(port)}"


def check_rank(
    layer: str, port: type | None, x: AnyTensor, ranks: tuple[int, ...], what: str
) -> None:
    """RankError naming ``layer`` and ``port`` (None: a module's input) unless ``x`` has one
    of ``ranks`` dims."""
    if x.rank in ranks:
        return
    if len(ranks) > 2 and ranks == tuple(range(ranks[0], ranks[-1] + 1)):  # contiguous
        shown = f"{ranks[0]} to {ranks[-1]}"
    else:
        shown = " or ".join(str(r) for r in ranks)
    raise RankError(
        message(
            f"{feeding(layer, port)}: {_fed(port)} needs rank {shown}, got rank {x.rank}.",
            [("declared", what), ("received", x.describe())],
            built_at=format_site(user_site()),
            hint=f"feed {what}.",
        )
    )


def check_features(
    layer: str, port: type | None, x: AnyTensor, dim: int, size: int, what: str, hint: str
) -> None:
    """ShapeError naming ``layer`` and ``port`` (None: a module's input) unless dim ``dim``
    of ``x`` is ``size``."""
    got = x.shape[dim]
    if got == size:
        return
    raise ShapeError(
        message(
            f"{feeding(layer, port)}: {_fed(port)} has {got} {what} in dim {dim % x.rank}, "
            f"{'it' if port is None else 'the layer'} was built for {size}.",
            [("declared", f"{size} {what}"), ("received", x.describe())],
            built_at=format_site(user_site()),
            hint=hint,
        )
    )


def as_real(value: object) -> float | None:
    """``value`` as a finite float if it is a real number (Python's or numpy's, not a bool)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def check_number(
    layer: str, what: str, value: object, low: float, high: float | None, allowed: str
) -> None:
    """LayerError naming ``layer`` unless ``value`` is a finite number in [low, high], or
    above ``low`` when ``high`` is None; ``allowed`` says so in the message."""
    number = as_real(value)
    if number is not None and (low <= number <= high if high is not None else number > low):
        return
    raise LayerError(
        message(
            f"cannot create layer '{layer}': {what} must be {allowed}.",
            [("received", repr(value))],
            built_at=format_site(user_site()),
            hint=f"pass a {what} with {allowed}.",
        )
    )
