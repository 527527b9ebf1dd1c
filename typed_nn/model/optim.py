"""Optimizers: SGD, momentum and Adam, updating parameters in place through lazy expressions.

MetaNN has no optimizer (METANN.md §6); these follow PyTorch's update rules. A step:

1. evaluates every parameter's gradient in **one** plan, before any weight changes (a
   gradient of one layer reads the weights of the layers after it, so updating a weight
   first would corrupt the others' gradients);
2. writes each update as one lazy expression evaluated in place into its tensor
   (``tn.evaluate(expr, out=weight)``: MShadow's ``w = w - lr * (g + wd * w)``, one fused
   pass with no full-size temporaries). Optimizer state (velocity, moments) is a tensor per
   parameter, updated in place the same way, before the weight that reads it.

``lr`` is a float or a schedule: any callable ``lr(step) -> float`` of the 0-based step
number, e.g. ``lambda t: 0.1 * 0.95 ** (t // 100)``.

>>> opt = SGD(0.1, weight_decay=1e-4)
>>> opt.step(collector)          # a GradCollector, or pairs (weight, grad)
"""

from __future__ import annotations

import copy
import math
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from .. import backends
from ..data.factories import scalar as tn_scalar
from ..data.tensor import Tensor
from ..data.tensor_like import TensorLike
from ..errors import ElemTypeError, OperandError, ParamError, message
from ..evaluate import EvalPlan, evaluate
from ..ops import sqrt, square
from ..tags import Dim0, FloatTag, dim_of_rank
from .grad_collector import GradCollector

__all__ = ["SGD", "Adam", "LearningRate", "Momentum", "OnePass", "Optimizer", "ParamGrads"]

AnyWeight: TypeAlias = Tensor[Any, Any, Any]
AnyGrad: TypeAlias = TensorLike[Any, Any, Any]
LearningRate: TypeAlias = float | Callable[[int], float]
"""A constant learning rate, or a schedule ``lr(step) -> float`` of the 0-based step."""
ParamGrads: TypeAlias = GradCollector[Any, Any] | Iterable[tuple[AnyWeight, AnyGrad]]
"""What ``step`` takes: a GradCollector, or (weight, grad) pairs (parameters of any rank)."""
Update: TypeAlias = tuple[AnyWeight, AnyGrad]
Scalar: TypeAlias = float | Tensor[Any, Any, Dim0]


def _require(ok: bool, owner: str, what: str, value: object, hint: str) -> None:
    if not ok:
        raise ParamError(message(f"{owner}: {what}.", [("received", repr(value))], hint=hint))


def _non_negative(owner: str, name: str, value: object) -> None:
    ok = isinstance(value, int | float) and math.isfinite(value) and value >= 0
    _require(ok, owner, f"{name} must be a finite number >= 0", value, f"pass {name} >= 0.")


def _in_unit(value: object) -> bool:
    return isinstance(value, int | float) and 0 <= value < 1


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


class OnePass:
    """A whole step's updates as one multi-target evaluation, built once and run every step.

    Each ``(target, expression)`` of ``updates`` reads only the values from before the step
    (a weight's rule refers to its state's *update expressions*, not to the state tensors),
    so all of them can be evaluated in one pass and written after every read.
    ``prepare()`` writes this step's numbers (learning rate, bias corrections) into the
    rank-0 placeholders the expressions read; the caller then evaluates and counts the step.
    """

    def __init__(self, updates: list[Update], prepare: Callable[[], None]) -> None:
        self.updates = updates
        self.prepare = prepare


class Optimizer(ABC):
    """Base of the optimizers: learning rate (or schedule), step count, per-weight state."""

    def __init__(self, lr: LearningRate, weight_decay: float) -> None:
        if not callable(lr):
            _non_negative(type(self).__name__, "lr", lr)
        _non_negative(type(self).__name__, "weight_decay", weight_decay)
        self.lr = lr
        self.weight_decay = weight_decay
        self.step_count = 0
        self._state: dict[int, tuple[AnyWeight, dict[str, AnyWeight]]] = {}

    def current_lr(self) -> float:
        """The learning rate the next step uses (the schedule's value at ``step_count``)."""
        lr = self.lr(self.step_count) if callable(self.lr) else self.lr
        if not (type(lr) is float and 0 <= lr < math.inf):  # the common case, checked cheaply
            _non_negative(type(self).__name__, f"lr (at step {self.step_count})", lr)
        return float(lr)

    def state(self, weight: AnyWeight) -> dict[str, AnyWeight]:
        """The state tensors of ``weight`` (e.g. ``{"m": ..., "v": ...}`` for Adam)."""
        entry = self._state.get(id(weight))
        return dict(entry[1]) if entry is not None else {}

    def step(self, grads: ParamGrads) -> None:
        """Update every parameter of ``grads`` once, in place."""
        pairs = _pairs(grads, type(self).__name__)
        if not pairs:
            return
        lr = self.current_lr()
        values = _evaluate_grads(pairs)
        self.step_count += 1
        updates: list[Update] = []
        for (weight, _), grad in zip(pairs, values, strict=True):
            updates.extend(self._updates(weight, grad, lr))
        _assign_all(updates)

    def one_pass(self, grads: ParamGrads) -> OnePass | None:
        """This optimizer's rule over the lazy ``grads`` as one evaluation per step (see
        ``OnePass``), or None when it has none (``step`` is then the way)."""
        return None

    def _placeholder(self, weight: AnyWeight) -> Tensor[Any, Any, Dim0]:
        """A rank-0 tensor of the weight's element type, written by a ``OnePass.prepare``."""
        return tn_scalar(0.0, weight.elem, weight.device)

    def _slot(self, weight: AnyWeight, names: tuple[str, ...]) -> dict[str, AnyWeight]:
        """This weight's state tensors (zeros at first)."""
        entry = self._state.get(id(weight))
        if entry is None:
            xp = backends.array_module(weight.device)
            dim = dim_of_rank(weight.rank)
            slots = {
                n: Tensor(xp.zeros_like(weight.array), weight.elem, weight.device, dim)
                for n in names
            }
            # Keep the weight alive so that its id stays unique.
            entry = self._state[id(weight)] = (weight, slots)
        return entry[1]

    def _per_step(self, weight: AnyWeight, value: float, varies: bool = True) -> Scalar:
        """``value`` as a number, or as a rank-0 tensor when it changes from step to step:
        the evaluator keys compiled schedules on structure, and numbers are structure,
        so a per-step number would make it analyse and compile every step anew."""
        return tn_scalar(value, weight.elem, weight.device) if varies else value

    def _lr(self, weight: AnyWeight, lr: float) -> Scalar:
        return self._per_step(weight, lr, varies=callable(self.lr))

    def _decayed(self, weight: AnyWeight, grad: AnyGrad) -> AnyGrad:
        """``grad + weight_decay * weight`` (L2 regularisation folded into the gradient)."""
        return grad + self.weight_decay * weight if self.weight_decay else grad

    @abstractmethod
    def _updates(self, weight: AnyWeight, grad: AnyWeight, lr: float) -> list[Update]:
        """(target, expression) pairs for one weight, state before the weight."""


class SGD(Optimizer):
    """Plain gradient descent: ``w <- w - lr * (g + weight_decay * w)``."""

    def __init__(self, lr: LearningRate, *, weight_decay: float = 0.0) -> None:
        super().__init__(lr, weight_decay)

    def _updates(self, weight: AnyWeight, grad: AnyWeight, lr: float) -> list[Update]:
        return [(weight, weight - self._lr(weight, lr) * self._decayed(weight, grad))]

    def one_pass(self, grads: ParamGrads) -> OnePass | None:
        """``w - lr g'`` for every weight in one evaluation; lr is one placeholder per element
        type and device, written only when the (scheduled) value changes."""
        updates: list[Update] = []
        rates: dict[tuple[type, type], Tensor[Any, Any, Dim0]] = {}
        for weight, grad in _pairs(grads, "SGD"):
            kind = (weight.elem, weight.device)
            lr = rates.get(kind)
            if lr is None:
                lr = rates[kind] = self._placeholder(weight)
            updates.append((weight, weight - lr * self._decayed(weight, grad)))
        written: list[float] = []

        def prepare() -> None:
            value = self.current_lr()
            if written != [value]:
                for rate in rates.values():
                    rate.array[...] = value
                written[:] = [value]

        return OnePass(updates, prepare)


class Momentum(Optimizer):
    """SGD with momentum (PyTorch's rule): ``v <- mu v + g'``; ``w <- w - lr v``, with
    ``g' = g + weight_decay w``; Nesterov: ``w <- w - lr (g' + mu v)``."""

    def __init__(
        self,
        lr: LearningRate,
        momentum: float = 0.9,
        *,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(lr, weight_decay)
        _non_negative("Momentum", "momentum", momentum)
        hint = "pass momentum > 0 with nesterov=True."
        ok = momentum > 0 or not nesterov
        _require(ok, "Momentum", "nesterov needs momentum > 0", momentum, hint)
        self.momentum = momentum
        self.nesterov = nesterov

    def _updates(self, weight: AnyWeight, grad: AnyWeight, lr: float) -> list[Update]:
        v = self._slot(weight, ("velocity",))["velocity"]
        mu = self.momentum
        g = self._decayed(weight, grad)
        # v is updated first; the weight's expression then reads the new v.
        step = g + mu * v if self.nesterov else v
        return [(v, mu * v + g), (weight, weight - self._lr(weight, lr) * step)]

    def one_pass(self, grads: ParamGrads) -> OnePass | None:
        """``v' = mu v + g'`` and ``w - lr v'`` (Nesterov: ``w - lr (g' + mu v')``) for every
        weight, in one evaluation; lr is a placeholder set per step."""
        updates: list[Update] = []
        rates: list[Tensor[Any, Any, Dim0]] = []
        mu = self.momentum
        for weight, grad in _pairs(grads, "Momentum"):
            v = self._slot(weight, ("velocity",))["velocity"]
            rates.append(lr := self._placeholder(weight))
            g = self._decayed(weight, grad)
            new_v = mu * v + g
            step = g + mu * new_v if self.nesterov else new_v
            updates += [(v, new_v), (weight, weight - lr * step)]

        def prepare() -> None:
            value = self.current_lr()
            for rate in rates:
                rate.array[...] = value

        return OnePass(updates, prepare)


class Adam(Optimizer):
    """Adam with bias correction (PyTorch's rule).

    ``weight_decay`` is *decoupled* by default (AdamW: ``w <- w (1 - lr wd)`` before the
    Adam step, which regularises every weight alike); ``decoupled_weight_decay=False`` adds
    ``wd * w`` to the gradient instead (L2, ``torch.optim.Adam``'s rule).
    """

    def __init__(
        self,
        lr: LearningRate = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        *,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = True,
    ) -> None:
        super().__init__(lr, weight_decay)
        for i, beta in enumerate(betas):
            _require(
                _in_unit(beta),
                "Adam",
                f"betas[{i}] must be in [0, 1)",
                beta,
                "use e.g. (0.9, 0.999).",
            )
        ok = _positive(eps)
        _require(ok, "Adam", "eps must be a finite number > 0", eps, "use e.g. 1e-8.")
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = eps
        self.decoupled_weight_decay = decoupled_weight_decay

    def _updates(self, weight: AnyWeight, grad: AnyWeight, lr: float) -> list[Update]:
        slots = self._slot(weight, ("m", "v"))
        m, v = slots["m"], slots["v"]
        b1, b2 = self.betas
        t = self.step_count
        g = grad if self.decoupled_weight_decay else self._decayed(weight, grad)
        step_size = self._per_step(weight, lr / (1 - b1**t))
        inv_bc2 = self._per_step(weight, 1 / math.sqrt(1 - b2**t))
        decay = lr * self.weight_decay if self.decoupled_weight_decay else 0.0
        kept = weight * self._per_step(weight, 1 - decay) if decay else weight
        new_w = kept - step_size * m / (sqrt(v) * inv_bc2 + self.eps)
        return [(m, b1 * m + (1 - b1) * g), (v, b2 * v + (1 - b2) * square(g)), (weight, new_w)]

    def one_pass(self, grads: ParamGrads) -> OnePass | None:
        """The moments' updates and each weight's step over the *updated* moments, in one
        evaluation; the step size, the second bias correction and the decoupled decay
        factor are placeholders set per step."""
        updates: list[Update] = []
        numbers: list[tuple[Tensor[Any, Any, Dim0], ...]] = []
        b1, b2 = self.betas
        decoupled = self.decoupled_weight_decay and self.weight_decay > 0
        for weight, grad in _pairs(grads, "Adam"):
            slots = self._slot(weight, ("m", "v"))
            m, v = slots["m"], slots["v"]
            size, inv_bc2, keep = (self._placeholder(weight) for _ in range(3))
            numbers.append((size, inv_bc2, keep))
            g = grad if self.decoupled_weight_decay else self._decayed(weight, grad)
            new_m, new_v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * square(g)
            kept = weight * keep if decoupled else weight
            new_w = kept - size * new_m / (sqrt(new_v) * inv_bc2 + self.eps)
            updates += [(m, new_m), (v, new_v), (weight, new_w)]

        def prepare() -> None:
            lr, t = self.current_lr(), self.step_count + 1  # ``step`` counts before updating
            values = (lr / (1 - b1**t), 1 / math.sqrt(1 - b2**t), 1 - lr * self.weight_decay)
            for placeholders in numbers:
                for placeholder, value in zip(placeholders, values, strict=True):
                    placeholder.array[...] = value

        return OnePass(updates, prepare)


def _pairs(grads: ParamGrads, owner: str) -> list[tuple[AnyWeight, AnyGrad]]:
    """(weight, grad) per distinct weight; a weight given twice gets the sum of its grads."""
    raw = [(w, g) for _, w, g in grads] if isinstance(grads, GradCollector) else _raw(grads, owner)
    merged: dict[int, tuple[AnyWeight, AnyGrad]] = {}
    for weight, grad in raw:
        if not isinstance(weight, Tensor) or not isinstance(grad, TensorLike):
            raise OperandError(
                message(
                    f"{owner}.step needs (weight, grad) pairs: a principal tensor and typed_nn data.",
                    [("weight", type(weight).__name__), ("grad", type(grad).__name__)],
                    hint="pass a GradCollector, or [(w, g), ...] with w a tn.Tensor.",
                )
            )
        if not issubclass(weight.elem, FloatTag):
            raise ElemTypeError(
                message(
                    f"{owner} cannot update integer parameters.",
                    [("weight", weight.describe())],
                    hint="declare trainable parameters with Float32 or Float64 elements.",
                )
            )
        known = merged.get(id(weight))
        merged[id(weight)] = (weight, grad if known is None else known[1] + grad)
    return list(merged.values())


def _raw(grads: object, owner: str) -> list[tuple[object, object]]:
    """The items of ``grads``, checked to be an iterable (not a dict, not a tensor) of pairs."""
    if isinstance(grads, Mapping | TensorLike | str) or not isinstance(grads, Iterable):
        shown = type(grads).__name__
        if isinstance(grads, Mapping):
            shown += f" with keys {', '.join(map(repr, list(grads)[:3]))}"
        raise OperandError(
            message(
                f"{owner}.step needs (weight, grad) pairs or a GradCollector.",
                [
                    ("declared", "GradCollector, or an iterable of (weight, grad)"),
                    ("received", shown),
                ],
                hint="pass [(w, g), ...] (e.g. list(zip(weights, grads))), or the GradCollector "
                "that the model's grad_collect filled.",
            )
        )
    raw: list[tuple[object, object]] = []
    for i, item in enumerate(grads):
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise OperandError(
                message(
                    f"{owner}.step needs (weight, grad) pairs: item {i} is not a pair.",
                    [("declared", "(weight, grad)"), ("received", _describe(item))],
                    hint="give each parameter as a tuple (w, g), e.g. [(w, g)].",
                )
            )
        raw.append((item[0], item[1]))
    return raw


def _describe(item: object) -> str:
    if isinstance(item, tuple | list):
        return f"{type(item).__name__} of {len(item)}"
    simple = isinstance(item, str | int | float)
    return f"{type(item).__name__} {reprlib.repr(item)}" if simple else type(item).__name__


def _evaluate_grads(pairs: list[tuple[AnyWeight, AnyGrad]]) -> list[AnyWeight]:
    """Every gradient evaluated in one plan (shared backward sub-expressions computed once).

    A gradient that *is* one of the weights is copied, so updating that weight cannot change it.
    """
    handles = [g.eval_register() for _, g in pairs]
    EvalPlan.eval()
    values = [h.data() for h in handles]
    weights = [w for w, _ in pairs]
    return [copy.deepcopy(v) if any(v == w for w in weights) else v for v in values]


def _assign_all(updates: list[Update]) -> None:
    """Evaluate each expression into its target, in order, each as one in-place pass.

    The order matters: a weight's expression reads its state tensors after their update, so
    these must be separate evaluations (one multi-target pass would need the expressions to
    reference the state *updates* instead).
    """
    for target, expr in updates:
        evaluate(expr, out=target)
