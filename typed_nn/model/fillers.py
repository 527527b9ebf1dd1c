"""Parameter fillers: write initial values into a principal tensor, in place (MetaNN fillers).

A filler is an object with ``fill(tensor)``. The random ones draw from their own
``numpy.random.Generator`` made by ``numpy.random.default_rng(seed)``, so one seed gives the
same values on every run (a Generator may be passed as the seed to share one stream), and
successive ``fill`` calls continue the stream. Draws are made in float64 and cast to the
tensor's element type; GPU tensors are filled from host draws.

* ``ConstantFiller(value=0)``: every element ``value``.
* ``GaussianFiller(mean, std)``: N(mean, std); std must be > 0.
* ``UniformFiller(min, max)``: U[min, max) for floats, integers in [min, max] for ints.
* ``VarScaleFiller(factor, *policies)``: variance scaling by the tensor's fans
  (:func:`var_scale_fans`); uniform with limit sqrt(3 factor / fan) or normal with std
  sqrt(factor / fan), fan chosen by ``VarScaleFillerPolicy.scale_mode``.
* ``XavierFiller()`` = VarScale, factor 1, fan average (uniform unless ``PNormVarScale``);
  ``MSRAFiller()`` = VarScale, factor 2, fan-in, normal.

>>> w = tn.zeros((64, 128), tn.Float32, tn.CPU)
>>> XavierFiller(seed=0).fill(w)      # U(-l, l), l = sqrt(3 / 96)
"""

from __future__ import annotations

import math
from typing import Any, Literal, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from .. import devices
from ..data.tensor import Tensor, check_writable
from ..errors import ElemTypeError, OperandError, ParamError, message
from ..evaluate.cache import overwrite
from ..policies import (
    PNormVarScale,
    PolicyContainer,
    PolicyObject,
    PVarScaleFanAvg,
    PVarScaleFanIn,
    VarScaleDistribution,
    VarScaleFillerPolicy,
    VarScaleMode,
    policy_select,
)
from ..shape import check_shape
from ..tags import D, Dv, E, FloatTag, IntTag

__all__ = [
    "ConstantFiller",
    "DistributePolicy",
    "Filler",
    "GaussianFiller",
    "MSRAFiller",
    "Seed",
    "UniformFiller",
    "VarScaleFiller",
    "VarScalePolicy",
    "XavierFiller",
    "var_scale_fans",
]

Seed: TypeAlias = int | np.random.Generator | None
"""A seed for ``numpy.random.default_rng``: an int, a Generator to draw from, or None (OS entropy)."""

VarScalePolicy: TypeAlias = PolicyObject[VarScaleFillerPolicy, str, object] | VarScaleFillerPolicy
"""What VarScaleFiller accepts: policy objects such as ``PNormVarScale``, or one policy instance."""

DistributePolicy: TypeAlias = PolicyObject[
    VarScaleFillerPolicy, Literal["distribute"], VarScaleDistribution
]
"""What XavierFiller accepts: ``PNormVarScale`` or ``PUniformVarScale`` (the fan mode is fixed)."""


class Filler(Protocol):
    """Anything that writes initial values into a principal tensor of any rank, in place.

    The shipped fillers subclass it; a user filler only needs the ``fill`` method.
    """

    def fill(self, tensor: Tensor[E, Dv, D]) -> None:
        """Overwrite every element of ``tensor`` (its memory is kept: views see the values)."""
        ...


def _target(tensor: object, filler: Filler) -> Tensor[Any, Any, Any]:
    if not isinstance(tensor, Tensor):
        raise OperandError(
            message(
                f"{type(filler).__name__} can only fill a principal tensor.",
                [("received", getattr(tensor, "describe", lambda: type(tensor).__name__)())],
                hint="allocate the parameter with tn.zeros(shape, elem, device) and fill that.",
            )
        )
    check_writable(tensor, f"fill with {type(filler).__name__}")
    return tensor


def _require_float(tensor: Tensor[Any, Any, Any], filler: Filler) -> None:
    if not issubclass(tensor.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"{type(filler).__name__} draws real numbers and cannot fill integer data.",
                [("declared", "a Float32 or Float64 tensor"), ("received", tensor.describe())],
                hint="use UniformFiller or ConstantFiller for integer tensors.",
            )
        )


def _store(tensor: Tensor[Any, Any, Any], values: npt.NDArray[Any]) -> None:
    """Write host ``values`` (any float/int dtype) into ``tensor``'s memory."""
    values = values.astype(tensor.elem.dtype, copy=False)
    if tensor.device.name != "CPU":
        values = devices.array_module(tensor.device).asarray(values)
    overwrite(tensor, values)


def _check_finite(filler: str, **values: float) -> None:
    for name, value in values.items():
        if not math.isfinite(value):
            raise ParamError(
                message(
                    f"{filler}: {name} must be a finite number.",
                    [(name, repr(value))],
                    hint=f"pass a finite {name}.",
                )
            )


class ConstantFiller(Filler):
    """Fills every element with ``value`` (MetaNN ``ConstantFiller``, default 0)."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = value

    def fill(self, tensor: Tensor[E, Dv, D]) -> None:
        t = _target(tensor, self)
        if issubclass(t.elem, IntTag) and not float(self.value).is_integer():
            raise ParamError(
                message(
                    f"ConstantFiller({self.value!r}) cannot fill integer data exactly.",
                    [("received", t.describe())],
                    hint="use an integer value for integer tensors.",
                )
            )
        overwrite(t, self.value)

    def __repr__(self) -> str:
        return f"ConstantFiller({self.value!r})"


class _RandomFiller(Filler):
    """A filler with its own random stream."""

    def __init__(self, seed: Seed) -> None:
        self.rng = np.random.default_rng(seed)


class GaussianFiller(_RandomFiller):
    """Normal draws N(mean, std) (MetaNN ``GaussianFiller``); float tensors only."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, *, seed: Seed = None) -> None:
        _check_finite("GaussianFiller", mean=mean, std=std)
        if std <= 0:
            raise ParamError(
                message(
                    "Invalid std.",
                    [("filler", "GaussianFiller"), ("std", repr(std))],
                    hint="the standard deviation must be > 0; use ConstantFiller for a constant.",
                )
            )
        super().__init__(seed)
        self.mean, self.std = mean, std

    def fill(self, tensor: Tensor[E, Dv, D]) -> None:
        t = _target(tensor, self)
        _require_float(t, self)
        _store(t, self.rng.normal(self.mean, self.std, t.shape))

    def __repr__(self) -> str:
        return f"GaussianFiller(mean={self.mean!r}, std={self.std!r})"


class UniformFiller(_RandomFiller):
    """Uniform draws (MetaNN ``UniformFiller``): [min, max) for floats, [min, max] for ints."""

    def __init__(self, min: float, max: float, *, seed: Seed = None) -> None:
        _check_finite("UniformFiller", min=min, max=max)
        if min >= max:
            raise ParamError(
                message(
                    "min is larger or equal to max",
                    [("filler", "UniformFiller"), ("min", repr(min)), ("max", repr(max))],
                    hint="pass min < max.",
                )
            )
        super().__init__(seed)
        self.min, self.max = min, max

    def fill(self, tensor: Tensor[E, Dv, D]) -> None:
        t = _target(tensor, self)
        if issubclass(t.elem, IntTag):
            lo, hi = math.ceil(self.min), math.floor(self.max)
            if lo > hi:
                raise ParamError(
                    message(
                        f"UniformFiller({self.min!r}, {self.max!r}) contains no integer.",
                        [("received", t.describe())],
                        hint="widen the range to include an integer.",
                    )
                )
            _store(t, self.rng.integers(lo, hi, t.shape, endpoint=True))
        else:
            _store(t, self.rng.uniform(self.min, self.max, t.shape))

    def __repr__(self) -> str:
        return f"UniformFiller({self.min!r}, {self.max!r})"


def var_scale_fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) of a parameter of ``shape``.

    A matrix (r, c) has fan_in r and fan_out c (typed_nn's ``x @ W`` layout: (in, out));
    scalars and vectors (1, 1). A higher rank is a convolution weight laid out (out, in,
    *kernel) (OIHW for conv2d, as PyTorch): fan_in = in * kernel size, fan_out = out * kernel
    size, so an (8, 1, 3, 3) weight has fan_in 9 and fan_out 72. (MetaNN's rule, count / last
    dim, would give 24: it reads the kernel width as the output width.)

    >>> var_scale_fans((64, 128)), var_scale_fans((8, 1, 3, 3))
    ((64, 128), (9, 72))
    """
    shape = check_shape(shape, "var_scale_fans")
    if len(shape) < 2:
        return 1, 1
    if len(shape) == 2:
        return shape[0], shape[1]
    kernel = math.prod(shape[2:])
    return shape[1] * kernel, shape[0] * kernel


def _resolve(policies: tuple[VarScalePolicy, ...], filler: str) -> VarScaleFillerPolicy:
    instances = [p for p in policies if isinstance(p, VarScaleFillerPolicy)]
    objects = [p for p in policies if isinstance(p, PolicyObject)]
    wrong = [p for p in policies if p not in instances and p not in objects]
    wrong += [p for p in objects if p.major is not VarScaleFillerPolicy]
    if wrong or (instances and len(policies) > 1):
        raise ParamError(
            message(
                f"{filler} takes VarScaleFillerPolicy objects or one VarScaleFillerPolicy.",
                [("received", ", ".join(repr(p) for p in policies))],
                hint="pass e.g. PNormVarScale, PVarScaleFanIn, or VarScaleFillerPolicy(...) alone.",
            )
        )
    if instances:
        return instances[0]
    return policy_select(VarScaleFillerPolicy, PolicyContainer(*objects))


class VarScaleFiller(_RandomFiller):
    """Variance scaling (MetaNN ``VarScaleFiller``); float tensors only.

    Args:
        factor: the variance numerator (1 for Xavier/Glorot, 2 for MSRA/He).
        policies: ``PNormVarScale`` / ``PUniformVarScale`` and ``PVarScaleFanIn`` / ``FanOut``
            / ``FanAvg`` (defaults: uniform, fan average), or one ``VarScaleFillerPolicy``.
        seed: see :data:`Seed`.
    """

    def __init__(self, factor: float = 1.0, *policies: VarScalePolicy, seed: Seed = None) -> None:
        _check_finite(type(self).__name__, factor=factor)
        if factor <= 0:
            raise ParamError(
                message(
                    f"{type(self).__name__}: factor must be > 0.",
                    [("factor", repr(factor))],
                    hint="use 1 (Xavier) or 2 (MSRA).",
                )
            )
        super().__init__(seed)
        self.factor = factor
        self.policy = _resolve(policies, type(self).__name__)

    def fill(self, tensor: Tensor[E, Dv, D]) -> None:
        t = _target(tensor, self)
        _require_float(t, self)
        if t.size == 0:
            return
        fan_in, fan_out = var_scale_fans(t.shape)
        mode = self.policy.scale_mode
        fan = {
            VarScaleMode.FAN_IN: fan_in,
            VarScaleMode.FAN_OUT: fan_out,
            VarScaleMode.FAN_AVG: (fan_in + fan_out) / 2,
        }[mode]
        if self.policy.distribute is VarScaleDistribution.UNIFORM:
            limit = math.sqrt(3 * self.factor / fan)
            _store(t, self.rng.uniform(-limit, limit, t.shape))
        else:
            _store(t, self.rng.normal(0.0, math.sqrt(self.factor / fan), t.shape))

    def __repr__(self) -> str:
        p = self.policy
        return f"{type(self).__name__}(factor={self.factor!r}, {p.distribute.name}, {p.scale_mode.name})"


class XavierFiller(VarScaleFiller):
    """Xavier/Glorot: variance scaling, factor 1, fan average; uniform unless ``PNormVarScale``.

    Only the distribution may be chosen (``PNormVarScale`` / ``PUniformVarScale``), statically
    too: the fan mode is fixed to the fan average.
    """

    def __init__(self, *policies: DistributePolicy, seed: Seed = None) -> None:
        if any(getattr(p, "minor", "distribute") != "distribute" for p in policies):
            raise ParamError(
                message(
                    "XavierFiller fixes the fan mode to the fan average.",
                    [("received", ", ".join(repr(p) for p in policies))],
                    hint="use VarScaleFiller(1.0, ...) to choose another fan mode.",
                )
            )
        super().__init__(1.0, *policies, PVarScaleFanAvg, seed=seed)


class MSRAFiller(VarScaleFiller):
    """MSRA/He: variance scaling, factor 2, fan-in, normal draws."""

    def __init__(self, *, seed: Seed = None) -> None:
        super().__init__(2.0, PNormVarScale, PVarScaleFanIn, seed=seed)
