"""Dynamic loss scaling for 16-bit training (PyTorch's ``GradScaler``), as traced assigns.

A Float16 backward pass underflows: gradients below 2**-24 become zero. Multiplying the loss
by a large scale lifts them into range; the gradients are divided by it again before the
optimizer sees them. Too large a scale overflows instead (an Inf or NaN gradient): that step
is skipped — every weight and optimizer state keeps its value — and the scale is halved.
After ``growth_interval`` good steps in a row the scale doubles, while the doubled scale is
a finite float32 (as PyTorch's: an inf scale would skip every step).

Everything is a tensor and an assign, decided by ``where`` on the device, never by Python
control flow, so the logic records into a compiled step once and replays with no retrace
and no host round trip (PyTorch's GradScaler reads the "found inf" flag back on the host).
The scale and the count of good steps are rank-0 Float32 tensors (:attr:`LossScaler.scale`,
:attr:`LossScaler.good_steps`) that a compiled step reads live.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np

from .. import tracing
from ..data.factories import scalar
from ..data.module import Module, parameters, tree_map
from ..data.tensor import Tensor, TensorLike
from ..errors import ParamError, message
from ..evaluate import evaluate
from ..ops.convert import astype
from ..ops.reduce import reduce_sum
from ..ops.select import maximum, where
from ..tags import CPU, FE, Dim0, Dv, Float32, dim_of_rank
from .optim import Number, Optimizer

if TYPE_CHECKING:  # typed_nn.optim imports this package's update rules: no import at run time
    from ..optim import Optimizer as ModuleOptimizer

__all__ = ["LossScaler"]

M = TypeVar("M", bound=Module)
Pairs = Sequence[tuple[Tensor[Any, Any, Any], TensorLike[Any, Any, Any]]]

Scalar32 = TensorLike[Float32, Any, Dim0]


class LossScaler(Generic[Dv]):
    """Dynamic loss scale on ``device``: ``scale_loss`` before ``tn.grad``, then ``apply``
    in place of ``optimizer.apply`` (inside ``tn.compile``) or ``step`` (eagerly).

    >>> scaler = LossScaler(tn.CPU, init_scale=2.0**15)
    >>> # with a module and a typed_nn.optim optimizer, eagerly or in a compiled step:
    >>> #   scaler.step(opt, tn.grad(scaler.scale_loss(loss), model))
    >>> # with typed_nn.model's rules over (weight, gradient) pairs, in a compiled step:
    >>> #   grads = tn.grad(scaler.scale_loss(loss), weights)
    >>> #   scaler.apply(opt, list(zip(weights, grads)), numbers)
    """

    def __init__(
        self,
        device: type[Dv] = CPU,  # type: ignore[assignment]  # the default device, as in zeros
        *,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
    ) -> None:
        _check(init_scale > 0 and growth_factor >= 1 and 0 < backoff_factor < 1, init_scale)
        _check(_is_count(growth_interval), growth_interval)
        self.growth_factor, self.backoff_factor = float(growth_factor), float(backoff_factor)
        self.growth_interval = growth_interval
        self.scale: Tensor[Float32, Dv, Dim0] = scalar(init_scale, Float32, device)
        self.good_steps: Tensor[Float32, Dv, Dim0] = scalar(0.0, Float32, device)

    def scale_loss(self, loss: TensorLike[FE, Dv, Dim0]) -> TensorLike[Float32, Dv, Dim0]:
        """``loss`` (any float type) in Float32, times the scale: differentiate this. The
        cotangent entering ``loss`` is the scale itself, so compute a 16-bit model's loss
        from Float32 logits (``ops.astype``) when the scale exceeds Float16's 65504."""
        return astype(loss, Float32) * self.scale

    def apply(
        self,
        optimizer: Optimizer,
        grads: Pairs,
        numbers: Sequence[Number],
    ) -> None:
        """``optimizer.apply`` on the unscaled ``grads`` ((weight, gradient of the scaled
        loss) pairs), skipped — every weight and state tensor keeps its value — when a
        gradient holds an Inf or NaN; then the scale's update. The form for a compiled step
        (the caller counts the optimizer's step, as with ``optimizer.apply``)."""
        bad = self._overflow([g for _, g in grads])
        inverse = 1.0 / self.scale
        kept = [w for w, _ in grads] + [t for w, _ in grads for t in _state(optimizer, w)]
        before = _snapshot(kept)
        optimizer.apply([(w, g * astype(inverse, g.elem)) for w, g in grads], numbers)
        for t, old in zip(kept, before, strict=True):
            t.assign(where(bad, old, t))
        self._update_scale(bad)

    @overload
    def step(self, optimizer: ModuleOptimizer[M], grads: M) -> None: ...
    @overload
    def step(self, optimizer: Optimizer, grads: Pairs) -> None: ...
    def step(self, optimizer: Any, grads: Any) -> None:
        """One step of ``optimizer`` on the unscaled gradients, skipped on an overflow.

        With a ``typed_nn.optim`` optimizer, ``grads`` is ``tn.grad(scaled_loss, model)``
        (a tree of the model's type); with a ``typed_nn.model`` optimizer, (weight, gradient)
        pairs. Eagerly or inside ``tn.compile``; a skipped step puts back every parameter,
        state tensor and the step count."""
        eager = tracing.state.trace is None
        inverse = 1.0 / self.scale
        weights: list[Tensor[Any, Any, Any]] = []
        if isinstance(grads, Module):
            if eager:  # every gradient before any update
                grads = tree_map(evaluate, grads)
            found, kept = parameters(grads), optimizer.step_tensors()
        else:
            weights = [w for w, _ in grads]
            found = [evaluate(g) if eager else g for _, g in grads]
            kept = optimizer.step_tensors(weights)
        bad = self._overflow(found)
        before = _snapshot(kept)
        if isinstance(grads, Module):
            optimizer.step(tree_map(lambda g: g * astype(inverse, g.elem), grads))
        else:
            unscaled = [g * astype(inverse, g.elem) for g in found]
            optimizer.step(list(zip(weights, unscaled, strict=True)))
        for t, old in zip(kept, before, strict=True):  # a skipped step puts everything back
            t.assign(where(bad, old, t))
        self._update_scale(bad)

    def _overflow(self, grads: Sequence[TensorLike[Any, Any, Any]]) -> Scalar32:
        """NaN (true in ``where``) when a gradient holds an Inf or NaN, else 0: ``g * 0`` is
        0 for a finite ``g`` and NaN for an Inf or NaN one."""
        bad: Scalar32 = _zero(self)
        for g in grads:
            bad = bad + reduce_sum(astype(g, Float32) * 0.0)
        return bad

    def _update_scale(self, bad: Scalar32) -> None:
        """Back off on a bad step; grow after ``growth_interval`` good ones in a row."""
        one, zero = _one(self), _zero(self)
        overflow = where(bad, one, zero)
        good = (self.good_steps + 1.0) * (1.0 - overflow)
        grow = where(good - float(self.growth_interval), zero, one)  # 1 when they are equal
        # only to a finite scale, as PyTorch's GradScaler (an inf scale skips every step); the
        # test reads no inf, which debug mode would report
        limit = float(np.finfo(np.float32).max) / self.growth_factor
        grows = where(maximum(self.scale - limit, zero), zero, grow)
        factor = (1.0 - overflow * (1.0 - self.backoff_factor)) * (
            1.0 + grows * (self.growth_factor - 1.0)
        )
        self.scale.assign(self.scale * factor)
        self.good_steps.assign(good * (1.0 - grow))


def _state(optimizer: Optimizer, weight: Tensor[Any, Any, Any]) -> list[Tensor[Any, Any, Any]]:
    return list(optimizer.state_tensors(weight).values())


def _snapshot(tensors: list[Tensor[Any, Any, Any]]) -> list[TensorLike[Any, Any, Any]]:
    """The values of ``tensors`` before the optimizer's assigns: inside a trace, nodes built
    now (they read the tensors as they are before the step: a compiled step writes after
    every read); eagerly, copies (each assign writes at once)."""
    if tracing.state.trace is not None:
        return [t + 0.0 for t in tensors]
    return [Tensor(t.array.copy(), t.elem, t.device, dim_of_rank(t.rank)) for t in tensors]


def _one(s: LossScaler[Any]) -> Scalar32:
    return scalar(1.0, Float32, s.scale.device)


def _zero(s: LossScaler[Any]) -> Scalar32:
    return scalar(0.0, Float32, s.scale.device)


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 1


def _check(ok: bool, value: object) -> None:
    if not ok:
        raise ParamError(
            message(
                "LossScaler needs init_scale > 0, growth_factor >= 1, 0 < backoff_factor < 1 "
                "and an integer growth_interval >= 1.",
                [("received", repr(value))],
                hint="e.g. LossScaler(tn.CPU, init_scale=2.0**16, growth_interval=2000).",
            )
        )
