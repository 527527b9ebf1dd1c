"""Optimizers: SGD, momentum and Adam, updating parameters in place through lazy expressions.

MetaNN has no optimizer (METANN.md §6); these follow PyTorch's update rules. A step:

1. evaluates every parameter's gradient in **one** plan, before any weight changes (a
   gradient of one layer reads the weights of the layers after it, so updating a weight
   first would corrupt the others' gradients);
2. runs the optimizer's rule (:meth:`Optimizer.update`, stated once): each update one lazy
   expression assigned in place into its tensor (MShadow's ``w = w - lr * (g + wd * w)``,
   one fused pass with no full-size temporaries). Optimizer state (velocity, moments) is a
   tensor per parameter, assigned the same way, before the weight that reads it.

Inside a compiled training step the same ``step`` is recorded in the program: every update
is written after every read, and the step count (a rank-0 tensor) advances in the program
(docs/programs.md). ``typed_nn.optim``'s optimizers, built from a module, are thin over these:
one implementation of the rules and of their bookkeeping (step count, learning rate, state).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, TypeAlias

import numpy as np

from .. import devices
from ..data.factories import scalar as tn_scalar
from ..data.tensor import Tensor, TensorLike
from ..errors import CompileError, ElemTypeError, OperandError, ParamError, message
from ..evaluate import EvalPlan
from ..evaluate.cache import overwrite
from ..layers.param_cells import as_real
from ..ops import exp, sqrt, square
from ..tags import Dim0, FloatTag, dim_of_rank
from ..tracing import RunTimeNumber, check_each_call
from ..tracing import state as trace_state
from .grad_collector import GradCollector

__all__ = ["SGD", "Adam", "LearningRate", "Momentum", "Number", "Optimizer", "ParamGrads"]

AnyWeight: TypeAlias = Tensor[Any, Any, Any]
AnyGrad: TypeAlias = TensorLike[Any, Any, Any]
LearningRate: TypeAlias = float | Callable[[int], float]
"""A constant learning rate, or a schedule ``lr(step) -> float`` of the 0-based step."""
ParamGrads: TypeAlias = GradCollector[Any, Any] | Iterable[tuple[AnyWeight, AnyGrad]]
"""What ``step`` takes: a GradCollector, or (weight, grad) pairs (parameters of any rank)."""
Number: TypeAlias = float | TensorLike[Any, Any, Dim0]
"""A per-step number of a rule: a float, or a rank-0 tensor of the weight's element type."""


def _require(ok: bool, owner: str, what: str, value: object, hint: str) -> None:
    if not ok:
        raise ParamError(message(f"{owner}: {what}.", [("received", repr(value))], hint=hint))


def _non_negative(owner: str, name: str, value: object) -> None:
    number = as_real(value)
    ok = number is not None and number >= 0
    _require(ok, owner, f"{name} must be a finite number >= 0", value, f"pass {name} >= 0.")


def _in_unit(value: object) -> bool:
    number = as_real(value)
    return number is not None and 0 <= number < 1


def _positive(value: object) -> bool:
    number = as_real(value)
    return number is not None and number > 0


class Optimizer(ABC):
    """Base of the optimizers: the rule, its per-weight state and the step's bookkeeping.

    This class is the one optimizer implementation: ``typed_nn.optim``'s optimizers (built
    from a module) hold one and hand it (weight, gradient) pairs. Each optimizer states its
    rule once, in :meth:`update`, as assigns: its state first, then the weight, each reading
    what the assigns before it wrote. The step count and the learning rate are rank-0
    tensors per (element, device) of the weights, read by the update, so :meth:`step` runs
    eagerly (gradients evaluated first) and inside a function ``tn.compile`` traces, where
    it is recorded in the program and **the step count advances in the program**. The older
    compiled form, :meth:`apply` with :meth:`numbers` as run-time arguments, leaves the
    counting to its caller.
    """

    slots: ClassVar[tuple[str, ...]] = ()
    """The names of the state tensors the rule keeps per weight (saved in checkpoints)."""

    _label = ""
    """The name messages give the optimizer (the class's, unless an instance sets another:
    ``optim.AdamW`` is this module's Adam with decoupled weight decay)."""

    def __init__(self, lr: LearningRate, weight_decay: float) -> None:
        self._label = self._label or type(self).__name__
        if not callable(lr):
            _non_negative(self._label, "lr", lr)
        _non_negative(self._label, "weight_decay", weight_decay)
        self.weight_decay = weight_decay
        self._schedule: Callable[[int], float] | None = lr if callable(lr) else None
        self._lr = 0.0 if callable(lr) else float(lr)
        self._lr_from_calls = False
        """Whether a compiled program sets the rate from a float argument at every call
        (``opt.lr = lr`` traced): the rate tensors, not ``_lr``, hold the last call's."""
        self._numbers: dict[tuple[type, type], tuple[AnyWeight, AnyWeight]] = {}
        """(step count, learning rate) rank-0 tensors per (element, device) of the weights."""
        self._host_steps = 0
        """Steps counted on the host (eager steps, ``step_count`` set): the device's count
        runs ahead of it while compiled programs step."""
        self._lr_set_per_call = False
        self._later_lrs: dict[tuple[type, type], list[AnyWeight]] = {}
        """A schedule's rates for the 2nd, 3rd, ... step of one compiled call, per (element,
        device): ``prepare_step(s)`` sets the k-th to ``schedule(s + k)``."""
        self._in_trace: tuple[object, int] = (None, 0)
        """(the trace running, the steps it has recorded so far)."""
        self._traced_lr: tuple[object, float, set[tuple[type, type]]] = (None, 0.0, set())
        """(a trace, the rate set in it, the kinds whose tensor it was assigned to)."""
        self._state: dict[int, tuple[AnyWeight, dict[str, AnyWeight]]] = {}

    @property
    def lr(self) -> LearningRate:
        """The learning rate as built or last set: a number, or a schedule ``lr(step)``.
        Set it between calls of a compiled step: a run-time number there (no retrace)."""
        return self._schedule if self._schedule is not None else self._fixed_lr()

    @lr.setter
    def lr(self, value: LearningRate) -> None:
        if callable(value):
            self._schedule = value
            return
        check_each_call(value, partial(_non_negative, self._label, "lr"))  # at every call
        self._schedule = None
        if trace_state.trace is not None:  # recorded: a later step reads it, as eagerly
            self._assign_lr(value)
            return
        self._set_lr_tensors(float(value))

    @property
    def schedule(self) -> Callable[[int], float] | None:
        """The learning-rate schedule (None: a number)."""
        return self._schedule

    @property
    def step_count(self) -> int:
        """Steps taken, eagerly and by compiled programs (a checkpoint sets it back)."""
        counts = [int(c.numpy()) for c, _ in self._numbers.values()]
        return max(counts, default=self._host_steps)

    @step_count.setter
    def step_count(self, value: int) -> None:
        self._host_steps = int(value)
        for count, _ in self._numbers.values():
            overwrite(count, value)

    def current_lr(self) -> float:
        """The learning rate the next step uses (the schedule's value at ``step_count``)."""
        if self._schedule is None:
            return self._fixed_lr()
        lr = self._schedule(self.step_count)
        if not (type(lr) is float and 0 <= lr < math.inf):  # the common case, checked cheaply
            _non_negative(self._label, f"lr (at step {self.step_count})", lr)
        return float(lr)

    def prepare_step(self, step: int) -> None:
        """Before each call of a compiled step that runs :meth:`step`: set the learning rate
        to the schedule's at ``step`` (the steps taken so far), a run-time number of the
        program. A scheduled optimizer's ``step`` may be traced once this was called (fit
        calls it); without a schedule it does nothing."""
        if self._schedule is None:
            return
        self._lr_set_per_call, self._host_steps = True, int(step)
        _non_negative(self._label, f"lr (at step {step})", self._schedule(step))
        self._set_lr_tensors(float(self._schedule(step)))
        for later in self._later_lrs.values():
            for k, lr in enumerate(later, 1):
                overwrite(lr, self._scheduled(step + k))

    def state(self, weight: AnyWeight) -> dict[str, AnyWeight]:
        """The state tensors of ``weight`` (e.g. ``{"m": ..., "v": ...}`` for Adam)."""
        entry = self._state.get(id(weight))
        return dict(entry[1]) if entry is not None else {}

    def hyperparameters(self) -> dict[str, object]:
        """The rule's settings (``momentum``, ``betas``, ...): every public attribute (the
        learning rate and the step count are properties), for a checkpoint to compare."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def state_tensors(self, weight: AnyWeight) -> dict[str, AnyWeight]:
        """``weight``'s state tensors, one per name of ``slots`` (made, as zeros, when the
        rule has not run yet): the very tensors the rule updates in place."""
        return dict(self._slot(weight, self.slots)) if self.slots else {}

    def weights_with_state(self) -> list[AnyWeight]:
        """The weights the rule keeps state for (those it has updated), in first-update order."""
        return [weight for weight, _ in self._state.values()]

    def step_tensors(self, weights: Sequence[AnyWeight]) -> list[AnyWeight]:
        """Every tensor a :meth:`step` of ``weights`` writes: the weights, their state and
        the step counts (made now when no step has run). A step that must be undone — a
        ``LossScaler`` skipping an overflowing one — puts these back."""
        state = [t for w in weights for t in self.state_tensors(w).values()]
        counts = [self._numbers_of((w.elem, w.device))[0] for w in weights]
        return [*weights, *state, *dict.fromkeys(counts)]

    def numbers(self) -> tuple[float, ...]:
        """The next step's numbers (learning rate, bias corrections), from ``step_count``:
        the run-time arguments of :meth:`apply`."""
        return tuple(float(x) for x in self.numbers_at(self.current_lr(), self.step_count + 1.0))

    def numbers_at(self, lr: Any, t: Any) -> tuple[Any, ...]:
        """The numbers of step ``t`` (1-based) at learning rate ``lr``: Python floats, or
        rank-0 tensors when a step computes them in its program."""
        return (lr,)

    def step(self, grads: ParamGrads) -> None:
        """Update every parameter of ``grads`` once, in place. Eagerly the gradients are
        evaluated first, in one plan, so no update changes a gradient still to be read;
        inside ``tn.compile`` the step is recorded, its count advancing in the program."""
        pairs = _pairs(grads, self._label)
        tracing = trace_state.trace is not None
        if tracing and self._schedule is not None and not self._lr_set_per_call:
            raise _schedule_in_trace(self._label)
        if not pairs:
            return
        if not tracing:
            self._eager_step(pairs)
            return
        k = self._step_in_trace()
        for kind in {(w.elem, w.device) for w, _ in pairs}:
            count, _ = self._numbers_of(kind)
            count.assign(count + 1.0)
            self._traced_lr_into(kind)
        for weight, grad in pairs:
            kind = (weight.elem, weight.device)
            count, lr = self._numbers_of(kind)
            if k and self._schedule is not None:  # the schedule's rate k steps on
                lr = self._later_lr(kind, k)
            self.update(weight, grad, self.numbers_at(lr, count))

    def _step_in_trace(self) -> int:
        """How many steps the running trace recorded before this one."""
        trace, done = self._in_trace
        k = done if trace is trace_state.trace else 0
        self._in_trace = (trace_state.trace, k + 1)
        return k

    def _later_lr(self, kind: tuple[type, type], k: int) -> AnyWeight:
        """The rate tensor the k-th later step of a compiled call reads (made now at the
        schedule's rate for it; ``prepare_step`` sets it at every call)."""
        later = self._later_lrs.setdefault(kind, [])
        while len(later) < k:
            value = self._scheduled(self._host_steps + len(later) + 1)
            later.append(tn_scalar(value, kind[0], kind[1]))
        return later[k - 1]

    def _scheduled(self, step: int) -> float:
        assert self._schedule is not None
        lr = self._schedule(step)
        _non_negative(self._label, f"lr (at step {step})", lr)
        return float(lr)

    def _assign_lr(self, value: float) -> None:
        """``opt.lr = value`` inside a trace: an assign of every rate tensor (the value a
        number, or a float argument of the traced function), which later steps read; one
        made later in the trace is assigned it when a step first reads it."""
        self._lr = value if not isinstance(value, RunTimeNumber) else self._lr
        self._lr_from_calls = self._lr_from_calls or isinstance(value, RunTimeNumber)
        self._traced_lr = (trace_state.trace, value, set())
        for kind in self._numbers:
            self._traced_lr_into(kind)

    def _traced_lr_into(self, kind: tuple[type, type]) -> None:
        """The rate set in the running trace, assigned to ``kind``'s tensor (once)."""
        trace, value, done = self._traced_lr
        if trace is trace_state.trace and trace is not None and kind not in done:
            done.add(kind)
            _, lr = self._numbers_of(kind)
            lr.assign(tn_scalar(1.0, kind[0], kind[1]) * value)

    def _eager_step(self, pairs: list[tuple[AnyWeight, AnyGrad]]) -> None:
        """Gradients first, in one plan; the step's numbers computed on the host (rank-0
        tensors of the host values: a new value is no new program), then the counts."""
        numbers = self.numbers()
        values = _evaluate_grads(pairs)
        self.step_count += 1
        scalars: dict[tuple[type, type], tuple[Tensor[Any, Any, Dim0], ...]] = {}
        for (weight, _), grad in zip(pairs, values, strict=True):
            kind = (weight.elem, weight.device)
            if kind not in scalars:
                scalars[kind] = tuple(tn_scalar(x, weight.elem, weight.device) for x in numbers)
            self.update(weight, grad, scalars[kind])

    def apply(self, grads: ParamGrads, numbers: Sequence[Number]) -> None:
        """The rule for every (weight, grad) of ``grads`` with this step's ``numbers``: the
        form for a compiled training step, where the gradients are lazy and the updates are
        written after every read. The caller counts the step (``step_count += 1``)."""
        for weight, grad in _pairs(grads, self._label):
            self.update(weight, grad, numbers)

    @abstractmethod
    def update(self, weight: AnyWeight, grad: AnyGrad, numbers: Sequence[Number]) -> None:
        """Assign ``weight``'s new state, then its new value (``numbers``: see ``numbers``)."""

    def _numbers_of(self, kind: tuple[type, type]) -> tuple[AnyWeight, AnyWeight]:
        found = self._numbers.get(kind)
        if found is None:
            elem, device = kind
            count: AnyWeight = tn_scalar(float(self._host_steps), elem, device)
            found = self._numbers[kind] = (count, tn_scalar(self._fixed_lr(), elem, device))
        return found

    def _fixed_lr(self) -> float:
        """The rate without a schedule: the host's, or where compiled calls set it from a
        float argument, the last call's, read from the widest rate tensor as the shortest
        decimal its type rounds to it (0.02, not 0.0199999995)."""
        if not self._lr_from_calls or not self._numbers or trace_state.trace is not None:
            return self._lr
        _, lr = max(self._numbers.values(), key=lambda pair: pair[1].elem.dtype.itemsize)
        value = lr.numpy().item()  # a Python float
        if lr.elem.dtype == np.float32:
            return float(np.format_float_positional(np.float32(value), unique=True))
        return float(value)

    def _set_lr_tensors(self, value: float) -> None:
        self._lr = value
        for _, lr in self._numbers.values():
            overwrite(lr, value)

    def _slot(self, weight: AnyWeight, names: tuple[str, ...]) -> dict[str, AnyWeight]:
        """This weight's state tensors (zeros at first)."""
        entry = self._state.get(id(weight))
        if entry is None:
            xp = devices.array_module(weight.device)
            dim = dim_of_rank(weight.rank)
            slots = {
                n: Tensor(xp.zeros_like(weight.array), weight.elem, weight.device, dim)
                for n in names
            }
            # Keep the weight alive so that its id stays unique.
            entry = self._state[id(weight)] = (weight, slots)
        return entry[1]

    def _decayed(self, weight: AnyWeight, grad: AnyGrad) -> AnyGrad:
        """``grad + weight_decay * weight`` (L2 regularisation folded into the gradient)."""
        return grad + self.weight_decay * weight if self.weight_decay else grad


def _schedule_in_trace(owner: str) -> CompileError:
    return CompileError(
        message(
            f"{owner}.step inside tn.compile cannot run a learning-rate schedule: Python runs "
            "once, at trace time.",
            [("lr", "a callable schedule")],
            hint="call opt.prepare_step(opt.step_count) before each call of the compiled step "
            "(it sets that step's learning rate, a run-time number: no retrace; fit does), or "
            "build the optimizer with a number and set opt.lr between calls.",
        )
    )


class SGD(Optimizer):
    """Plain gradient descent: ``w <- w - lr * (g + weight_decay * w)``."""

    def __init__(self, lr: LearningRate, *, weight_decay: float = 0.0) -> None:
        super().__init__(lr, weight_decay)

    def update(self, weight: AnyWeight, grad: AnyGrad, numbers: Sequence[Number]) -> None:
        (lr,) = numbers
        weight.assign(weight - lr * self._decayed(weight, grad))


class Momentum(Optimizer):
    """SGD with momentum (PyTorch's rule): ``v <- mu v + g'``; ``w <- w - lr v``, with
    ``g' = g + weight_decay w``; Nesterov: ``w <- w - lr (g' + mu v)``."""

    slots = ("velocity",)

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

    def update(self, weight: AnyWeight, grad: AnyGrad, numbers: Sequence[Number]) -> None:
        (lr,) = numbers
        v = self._slot(weight, self.slots)["velocity"]
        mu = self.momentum
        g = self._decayed(weight, grad)
        v.assign(mu * v + g)  # the weight's update reads the new v
        weight.assign(weight - lr * (g + mu * v if self.nesterov else v))


class Adam(Optimizer):
    """Adam with bias correction (PyTorch's rule).

    ``weight_decay`` is *decoupled* by default (AdamW: ``w <- w (1 - lr wd)`` before the
    Adam step, which regularises every weight alike); ``decoupled_weight_decay=False`` adds
    ``wd * w`` to the gradient instead (L2, ``torch.optim.Adam``'s rule).
    """

    slots = ("m", "v")

    def __init__(
        self,
        lr: LearningRate = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        *,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = True,
        label: str = "",
    ) -> None:
        self._label = label
        super().__init__(lr, weight_decay)
        given: object = betas  # callers without a type checker may pass anything
        pair = isinstance(given, tuple | list) and len(given) == 2
        _require(
            pair, self._label, "betas must be a pair of numbers", betas, "use e.g. (0.9, 0.999)."
        )
        for i, beta in enumerate(betas):
            _require(
                _in_unit(beta),
                self._label,
                f"betas[{i}] must be in [0, 1)",
                beta,
                "use e.g. (0.9, 0.999).",
            )
        ok = _positive(eps)
        _require(ok, self._label, "eps must be a finite number > 0", eps, "use e.g. 1e-8.")
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = eps
        self.decoupled_weight_decay = decoupled_weight_decay

    def numbers_at(self, lr: Any, t: Any) -> tuple[Any, ...]:
        """(step size lr / (1 - b1^t), 1 / sqrt(1 - b2^t), decoupled decay factor) for step
        ``t``."""
        b1, b2 = self.betas
        return (lr / (1 - _power(b1, t)), 1 / _sqrt(1 - _power(b2, t)), 1 - lr * self.weight_decay)

    def update(self, weight: AnyWeight, grad: AnyGrad, numbers: Sequence[Number]) -> None:
        size, inv_bc2, keep = numbers
        slots = self._slot(weight, self.slots)
        m, v = slots["m"], slots["v"]
        b1, b2 = self.betas
        g = grad if self.decoupled_weight_decay else self._decayed(weight, grad)
        m.assign(b1 * m + (1 - b1) * g)
        v.assign(b2 * v + (1 - b2) * square(g))
        kept = weight * keep if self.decoupled_weight_decay and self.weight_decay else weight
        weight.assign(kept - size * m / (sqrt(v) * inv_bc2 + self.eps))


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


def _power(base: float, t: Any) -> Any:
    """``base ** t`` of a float, or of a rank-0 tensor ``t`` (``exp(t log base)``)."""
    if isinstance(t, int | float):
        return base**t
    return exp(t * math.log(base)) if base > 0 else t * 0.0


def _sqrt(x: Any) -> Any:
    return math.sqrt(x) if isinstance(x, int | float) else sqrt(x)
