"""``typed_nn.optim``: optimizers built from a module (DESIGN §5c, docs/modules.md).

``opt = optim.Adam(model, lr=1e-3)`` is an ``Adam[type(model)]``; ``opt.step(grads)`` takes
the gradients ``tn.grad(loss, model)`` returned — a tree of the model's own type, so another
model's gradients are a static error. The update rules are ``typed_nn.model``'s (one
implementation, PyTorch's formulas). The step count and the learning rate are rank-0 tensors
of the optimizer, read by the update, so the same ``step`` runs eagerly (gradients evaluated
first, then every weight updated in place) and inside ``tn.compile``, where it is recorded in
the program: **the step count advances in the program** at every call, and ``opt.lr = x``
between calls changes the learning rate without a retrace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..data.module import Module, gradient_of, named_parameters
from ..data.tensor import AnyTensor, Tensor
from ..errors import ElemTypeError, ModuleError, OperandError, listed, message
from ..model import optim as rules
from ..tags import FloatTag

__all__ = ["SGD", "Adam", "AdamW", "Momentum", "Optimizer"]

M = TypeVar("M", bound=Module)
Schedule = float | Callable[[int], float]


class Optimizer(Generic[M]):
    """An update rule over one module's parameters: see the module doc. The rule
    (``self.rule``, a ``typed_nn.model`` optimizer) does the work and keeps the bookkeeping
    (step count, learning rate, state tensors); this front-end pairs the model's parameters
    with a gradient tree of the model's type."""

    def __init__(self, model: M, rule: rules.Optimizer) -> None:
        if not isinstance(model, Module):
            raise ModuleError(
                message(
                    f"optim.{type(self).__name__} needs the model (an nn.Module).",
                    [("received", type(model).__name__)],
                    hint=f"optim.{type(self).__name__}(model, lr=...).",
                )
            )
        self.model = model
        self.rule = rule
        for path, p in named_parameters(model):
            _trainable(type(self).__name__, path, p)

    @property
    def lr(self) -> float:
        """The learning rate of the next step; set it between calls of a compiled step (a
        run-time number there: no retrace)."""
        return self.rule.current_lr()

    @lr.setter
    def lr(self, value: float) -> None:
        self.rule.lr = value  # checked there (a finite number >= 0)

    @property
    def schedule(self) -> Callable[[int], float] | None:
        """The learning-rate schedule the optimizer was built with (None: a number)."""
        return self.rule.schedule

    def prepare_step(self, step: int) -> None:
        """See ``typed_nn.model.Optimizer.prepare_step`` (a schedule's rate before each
        call of a compiled step)."""
        self.rule.prepare_step(step)

    @property
    def step_count(self) -> int:
        """Steps taken (eagerly and by compiled programs); a checkpoint sets it back."""
        return self.rule.step_count

    @step_count.setter
    def step_count(self, value: int) -> None:
        self.rule.step_count = value

    def step(self, grads: M) -> None:
        """Update every parameter of the model by ``grads`` (``tn.grad(loss, model)``)."""
        self.rule.step(_pairs(type(self).__name__, self.model, grads))

    def step_tensors(self) -> list[Tensor[Any, Any, Any]]:
        """Every tensor :meth:`step` writes (see ``typed_nn.model.Optimizer.step_tensors``)."""
        weights = [w for _, w in named_parameters(self.model) if isinstance(w, Tensor)]
        return self.rule.step_tensors(weights)


class SGD(Optimizer[M]):
    """``w <- w - lr (g + weight_decay w)`` (``torch.optim.SGD`` without momentum)."""

    def __init__(self, model: M, lr: Schedule, *, weight_decay: float = 0.0) -> None:
        super().__init__(model, rules.SGD(lr, weight_decay=weight_decay))


class Momentum(Optimizer[M]):
    """SGD with momentum, PyTorch's rule (``torch.optim.SGD(momentum=..., nesterov=...)``)."""

    def __init__(
        self,
        model: M,
        lr: Schedule,
        momentum: float = 0.9,
        *,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        rule = rules.Momentum(lr, momentum, weight_decay=weight_decay, nesterov=nesterov)
        super().__init__(model, rule)


class Adam(Optimizer[M]):
    """``torch.optim.Adam``: weight decay as L2 added to the gradient."""

    def __init__(
        self,
        model: M,
        lr: Schedule = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        *,
        weight_decay: float = 0.0,
    ) -> None:
        rule = rules.Adam(lr, betas, eps, weight_decay=weight_decay, decoupled_weight_decay=False)
        super().__init__(model, rule)


class AdamW(Optimizer[M]):
    """``torch.optim.AdamW``: decoupled weight decay (``w <- w (1 - lr wd)`` first)."""

    def __init__(
        self,
        model: M,
        lr: Schedule = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        *,
        weight_decay: float = 0.01,
    ) -> None:
        rule = rules.Adam(
            lr, betas, eps, weight_decay=weight_decay, decoupled_weight_decay=True, label="AdamW"
        )
        super().__init__(model, rule)


def _trainable(owner: str, path: str, p: AnyTensor) -> None:
    if not isinstance(p, Tensor):
        raise ModuleError(
            message(
                f"optim.{owner}: the model's {path} is not a principal tensor.",
                [("received", p.describe())],
                hint="build the optimizer from the model, not from a tree of expressions.",
            )
        )
    if not issubclass(p.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"optim.{owner} cannot train the integer parameter {path}.",
                [("parameter", p.describe())],
                hint="hold integer state as a buffer: self.name = nn.buffer(tensor).",
            )
        )


def _pairs(owner: str, model: Module, grads: object) -> list[tuple[Any, AnyTensor]]:
    """(weight, gradient) by path; the trees must have one structure and shapes."""
    if not isinstance(grads, Module):
        raise OperandError(
            message(
                f"{owner}.step needs the gradients as a tree of the model's type.",
                [("declared", type(model).__name__), ("received", type(grads).__name__)],
                hint="pass grads = tn.grad(loss, model).",
            )
        )
    weights, found = named_parameters(model), dict(named_parameters(grads))
    problems = [p for p, _ in weights if p not in found]
    problems += [
        f"{p}: shape {found[p].shape}, the parameter's {w.shape}"
        for p, w in weights
        if p in found and found[p].shape != w.shape
    ]
    if problems or type(grads) is not type(model):
        raise ModuleError(
            message(
                f"{owner}.step: the gradients do not fit the model {type(model).__name__}.",
                [("gradients", type(grads).__name__), ("differences", listed(problems) or "-")],
                hint="pass tn.grad(loss, model) of this optimizer's model.",
            )
        )
    own = [p for p, w in weights if found[p] is w]
    if own:  # opt.step(model): the weights would be their own gradients
        raise ModuleError(
            message(
                f"{owner}.step: the gradients are the model's own parameters.",
                [("parameters", listed(own)), ("given", type(grads).__name__)],
                hint="pass the gradients, opt.step(tn.grad(loss, model)), not the model.",
            )
        )
    source = gradient_of(grads)  # the same structure, but another instance's?
    if source is not None and source is not model:
        raise ModuleError(
            message(
                f"{owner}.step: the gradients are those of another {type(source).__name__} "
                "than this optimizer's model.",
                [
                    ("model", f"{type(model).__name__} at {id(model):#x}"),
                    ("gradients of", f"{type(source).__name__} at {id(source):#x}"),
                ],
                hint="pass tn.grad(loss, model) of the model this optimizer was built from "
                "(optim.Adam(model, ...)), or build an optimizer for the other model.",
            )
        )
    return [(w, found[p]) for p, w in weights]
