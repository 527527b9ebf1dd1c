"""``build_mlp``: an initialised MLP classifier, and ``make_optimizer`` by name.

::

    net, params = build_mlp([64, 128, 10], "relu", seed=0)   # He (MSRA) weights for ReLU
    fit(net, split.train, make_optimizer("adam"), test=split.test)
    save_weights("digits.safetensors", params)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar, get_args, overload

from ..errors import TrainingError, message
from ..layers import MLP, ReLULayer, SigmoidLayer, TanhLayer, layer_init
from ..model import (
    SGD,
    Adam,
    ConstantFiller,
    LoadBuffer,
    Momentum,
    MSRAFiller,
    Optimizer,
    ParamInitializer,
    XavierFiller,
)
from ..model.fillers import Filler
from ..tags import CPU, DeviceTag, Float32
from .checks import check_int
from .schedules import cosine

__all__ = [
    "ActivationName",
    "OptimizerName",
    "build_mlp",
    "cosine_schedule",
    "default_lr",
    "make_optimizer",
]

Dv = TypeVar("Dv", bound=DeviceTag)
ActivationName = Literal["relu", "sigmoid", "tanh"]
OptimizerName = Literal["sgd", "momentum", "adam"]
ACTIVATIONS: dict[str, type] = {"relu": ReLULayer, "sigmoid": SigmoidLayer, "tanh": TanhLayer}
DEFAULT_LR: dict[str, float] = {"sgd": 0.1, "momentum": 0.05, "adam": 1e-3}


def _unknown(doing: str, what: str, value: str, choices: tuple[str, ...]) -> TrainingError:
    return TrainingError(
        message(
            f"{doing}: unknown {what} {value!r}.",
            [("choices", ", ".join(choices)), ("received", repr(value))],
            hint=f"use one of: {', '.join(choices)}.",
        )
    )


@overload
def build_mlp(
    widths: Sequence[int], activation: ActivationName = ..., *, seed: int = ..., name: str = ...
) -> tuple[MLP[Float32, CPU], LoadBuffer[Float32, CPU]]: ...
@overload
def build_mlp(
    widths: Sequence[int],
    activation: ActivationName = ...,
    *,
    seed: int = ...,
    name: str = ...,
    device: type[Dv],
) -> tuple[MLP[Float32, Dv], LoadBuffer[Float32, Dv]]: ...
def build_mlp(
    widths: Sequence[int],
    activation: ActivationName = "relu",
    *,
    seed: int = 0,
    name: str = "mlp",
    device: type[DeviceTag] = CPU,
) -> tuple[MLP[Float32, Any], LoadBuffer[Float32, Any]]:
    """A training MLP ``widths[0] -> ... -> widths[-1]`` with ``activation`` after every hidden
    layer and logits out, its parameters initialised on ``device``; returns it and its
    parameters by name.

    Weights: MSRA (He, normal) for ReLU, Xavier (Glorot, uniform) for sigmoid and tanh,
    drawn from ``seed`` (on the host, so a GPU model starts from the same numbers as a CPU
    one); biases zero. Names: ``{name}/fc1/weight``, ``{name}/fc1/bias``, ...
    """
    if activation not in ACTIVATIONS:
        raise _unknown("cannot build the MLP", "activation", activation, get_args(ActivationName))
    filler: Filler = MSRAFiller(seed=seed) if activation == "relu" else XavierFiller(seed=seed)
    acts: list[type | None] = [ACTIVATIONS[activation]] * (len(widths) - 2) + [None]
    net = MLP.build(name, widths, acts, weight_init="weight", bias_init="bias", device=device)
    params: LoadBuffer[Float32, Any] = LoadBuffer(Float32, device)
    init = ParamInitializer({"weight": filler, "bias": ConstantFiller(0.0)})
    layer_init(net, init, params)
    return net, params


def default_lr(optimizer: OptimizerName) -> float:
    """The learning rate ``make_optimizer`` uses when none is given."""
    if optimizer not in DEFAULT_LR:
        raise _unknown("cannot make the optimizer", "optimizer", optimizer, get_args(OptimizerName))
    return DEFAULT_LR[optimizer]


def cosine_schedule(lr: float, total_steps: int) -> Callable[[int], float]:
    """``lr`` decayed along half a cosine to 0 at ``total_steps`` (constant 0 after)."""
    return cosine(lr, total_steps)


def optimizer_schedule(
    optimizer: OptimizerName, lr: float | None, total_steps: int | None
) -> float | Callable[[int], float]:
    """The learning rate of ``make_optimizer``'s (and ``make_module_optimizer``'s) optimizer:
    ``lr`` (default: ``default_lr``), decayed by ``cosine_schedule`` over ``total_steps``
    when given, else constant. Checks the name whether or not ``lr`` is given."""
    default = default_lr(optimizer)
    if total_steps is not None:
        check_int("cannot make the optimizer", "total_steps", total_steps, 1, 1000)
    rate = default if lr is None else lr
    return rate if total_steps is None else cosine_schedule(rate, total_steps)


def make_optimizer(
    optimizer: OptimizerName, lr: float | None = None, *, total_steps: int | None = None
) -> Optimizer:
    """``SGD``, ``Momentum`` (0.9) or ``Adam`` with ``lr`` (default: ``default_lr``), decayed
    by ``cosine_schedule`` over ``total_steps`` when given, else constant. An unknown name
    is a ``TrainingError`` listing the known ones."""
    schedule = optimizer_schedule(optimizer, lr, total_steps)
    if optimizer == "sgd":
        return SGD(schedule)
    if optimizer == "momentum":
        return Momentum(schedule, 0.9)
    return Adam(schedule)
