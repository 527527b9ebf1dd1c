"""What ``fit`` trains, behind one small interface: an ``nn.Module`` with a ``typed_nn.optim``
optimizer, or a MetaNN layer model (``TrainableModel``) with a ``typed_nn.model`` optimizer.

The loop (``fit_loop.py``) and the step (``step.py``) are written once against ``Trainee``:
the forward of a batch, the update from a loss inside the compiled step, the state that
early stopping copies and a checkpoint saves, the train/eval mode. A module's update is
``tn.grad(loss, model)`` then ``opt.step(grads)`` (recorded in the program, its step count
advancing there); a layer model's is ``tn.grad`` over the weights its layers collect, then
the rule's update with the optimizer's per-step numbers as run-time arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..autodiff import grad
from ..data.module import Module, named_buffers, named_parameters, tree_map
from ..data.tensor import Tensor, TensorLike
from ..layers.keys import LayerInput, LayerOutput
from ..layers.protocol import Layer
from ..layers.state import ModelState, model_state
from ..layers.state_entry import tensor_entry
from ..model import optim as rules
from ..model.grad_collector import GradCollector
from ..optim import Optimizer as ModuleOptimizer
from ..tags import CPU, DeviceTag, Float32
from .checks import bad_argument, declared_mismatch
from .epoch_metrics import Rated
from .model import TrainableModel

__all__ = ["LayerModel", "LayerTrainee", "ModuleTrainee", "Trainee", "trainee_of"]

Weight = Tensor[Any, Any, Any]
Lazy = TensorLike[Any, Any, Any]
DOING = "cannot fit"
Reduce = Callable[[list[Any]], list[Any]]
"""The gradients summed over the ranks (``GradientAllReduce``): the identity alone."""


@dataclass(frozen=True)
class LayerModel:
    """A MetaNN layer model that takes each sample in ``input_shape`` (e.g. ``(1, 8, 8)``:
    the digits' 64 features as 1-channel 8x8 images), for ``fit`` / ``predict`` /
    ``accuracy``; a bare layer model takes ``(batch, features)``. (An ``nn.Module`` reshapes
    in its own ``__call__``.)"""

    net: TrainableModel
    input_shape: tuple[int, ...] | None = None


class Trainee(Protocol):
    """A model with its optimizer, as fit's loop trains it."""

    model: Any
    """What a checkpoint saves (``save_checkpoint``'s model)."""
    input_shape: tuple[int, ...] | None
    """One sample's shape as the model takes it (None: its features)."""

    @property
    def optimizer(self) -> Any:
        """What a checkpoint saves with the model (``save_checkpoint``'s optimizer)."""
        ...

    device: type[DeviceTag]

    @property
    def rated(self) -> Rated: ...
    @property
    def rule(self) -> rules.Optimizer:
        """The update rule (its hyperparameters and per-weight state)."""
        ...

    def forward(self, x: Lazy) -> Any: ...
    def descend(self, loss: Lazy, out: Lazy, reduce: Reduce, numbers: tuple[float, ...]) -> None:
        """Inside the traced step: the gradients of ``loss`` (``out``: the forward's output),
        summed by ``reduce``, applied by the optimizer."""
        ...

    def numbers(self) -> tuple[float, ...]: ...
    def stepped(self) -> None: ...
    def state(self) -> ModelState:
        """Parameters, buffers and random-number states, by name."""
        ...

    def release(self) -> None:
        """After a forward that no backward follows: drop what it kept for one."""
        ...

    @property
    def training(self) -> bool: ...
    def set_training(self, on: bool) -> None: ...


class ModuleTrainee:
    """An ``nn.Module`` and its ``typed_nn.optim`` optimizer."""

    def __init__(self, model: Module, optimizer: ModuleOptimizer[Any] | None) -> None:
        self._optimizer = optimizer
        self._steps: int | None = None
        """Steps taken, kept on the host for a schedule (read from the optimizer first:
        after a resume)."""
        self.model: Module = model
        self.input_shape: tuple[int, ...] | None = None
        params = named_parameters(model)
        self.device: type[DeviceTag] = params[0][1].device if params else CPU

    @property
    def optimizer(self) -> ModuleOptimizer[Any]:
        assert self._optimizer is not None, "a trainee built to predict does not train"
        return self._optimizer

    @property
    def rated(self) -> Rated:
        return self.optimizer

    @property
    def rule(self) -> rules.Optimizer:
        return self.optimizer.rule

    def forward(self, x: Lazy) -> Any:
        forward: Any = self.model  # an nn.Module subclass defines __call__
        return forward(x)

    def descend(self, loss: Lazy, out: Lazy, reduce: Reduce, numbers: tuple[float, ...]) -> None:
        grads = grad(loss, self.model)
        summed = iter(reduce([g for _, g in named_parameters(grads)]))
        self.optimizer.step(tree_map(lambda _: next(summed), grads))

    def numbers(self) -> tuple[float, ...]:
        # the optimizer's step count and learning rate are tensors it holds; a schedule's
        # learning rate is set in them before each call
        if self.optimizer.schedule is not None:
            if self._steps is None:
                self._steps = self.optimizer.step_count
            self.optimizer.prepare_step(self._steps)
        return ()

    def stepped(self) -> None:
        if self._steps is not None:  # the device's count advanced in the program
            self._steps += 1

    def release(self) -> None:
        pass  # a module's forward keeps nothing

    def state(self) -> ModelState:
        params, bufs = named_parameters(self.model), named_buffers(self.model)
        # optim refuses a model whose leaves are expressions: every leaf is a Tensor
        entries = [tensor_entry(n, "parameter", t) for n, t in params if isinstance(t, Tensor)]
        entries += [tensor_entry(n, "buffer", t) for n, t in bufs if isinstance(t, Tensor)]
        return ModelState({e.name: e for e in entries})

    @property
    def training(self) -> bool:
        return bool(getattr(self.model, "training", True))

    def set_training(self, on: bool) -> None:
        self.model.train(on)


class LayerTrainee:
    """A MetaNN layer model (ports, ``feed_forward``/``feed_backward``, ``grad_collect``) and
    a ``typed_nn.model`` optimizer; ``device``: where its parameters live."""

    def __init__(
        self,
        model: TrainableModel,
        optimizer: rules.Optimizer | None,
        input_shape: tuple[int, ...] | None = None,
        device: type[DeviceTag] | None = None,
    ) -> None:
        self.model, self._optimizer, self.input_shape = model, optimizer, input_shape
        self.device = device if device is not None else _device_of(model)
        self.weights: list[tuple[str, Weight]] = []
        """The weights the model updates (PUpdate), named at the first trace."""

    @property
    def optimizer(self) -> rules.Optimizer:
        assert self._optimizer is not None, "a trainee built to predict does not train"
        return self._optimizer

    @property
    def rated(self) -> Rated:
        return self.optimizer

    @property
    def rule(self) -> rules.Optimizer:
        return self.optimizer

    def forward(self, x: Lazy) -> Any:
        model = self.model
        return model.feed_forward(model.input_cont().set(LayerInput, x)).get(LayerOutput)

    def descend(self, loss: Lazy, out: Lazy, reduce: Reduce, numbers: tuple[float, ...]) -> None:
        # The backward only pops the forward's stacks and lets the layers name their weights
        # (the gradient fed back is never evaluated); tn.grad derives the gradients.
        self.model.feed_backward(self.model.output_cont().set(LayerOutput, out))
        collected: GradCollector[Float32, Any] = GradCollector(Float32, self.device)
        self.model.grad_collect(collected)
        self.weights = [(name, w) for name, w, _ in collected]
        grads = reduce(grad(loss, [w for _, w in self.weights]))
        pairs = [(w, g) for (_, w), g in zip(self.weights, grads, strict=True)]
        self.optimizer.apply(pairs, numbers)

    def numbers(self) -> tuple[float, ...]:
        return self.optimizer.numbers()

    def stepped(self) -> None:
        self.optimizer.step_count += 1

    def release(self) -> None:
        self.model.feed_backward(self.model.output_cont())  # no gradient: pops the stacks

    def state(self) -> ModelState:
        if isinstance(self.model, Layer):
            return model_state(self.model)
        # not a typed_nn layer: the weights its step trains (fit refuses checkpoints of it)
        return ModelState({n: tensor_entry(n, "parameter", w) for n, w in self.weights})

    @property
    def training(self) -> bool:
        return True  # a layer's mode is its policies'

    def set_training(self, on: bool) -> None:
        pass


def _device_of(model: TrainableModel) -> type[DeviceTag]:
    """Where a layer model's parameters live (the CPU for a model that reports none)."""
    if isinstance(model, Layer):
        for entry in model_state(model).parameters.values():
            return entry.read().device
    return CPU


def trainee_of(
    model: Module | TrainableModel | LayerModel, optimizer: object, doing: str = DOING
) -> Trainee:
    """The trainee of ``model`` and ``optimizer``: a module trains with a ``typed_nn.optim``
    optimizer built from it, a layer model with a ``typed_nn.model`` optimizer."""
    if isinstance(model, Module):
        if not isinstance(optimizer, ModuleOptimizer):
            hint = "an nn.Module trains with typed_nn.optim: pass optim.Adam(model, lr=1e-3)."
            allowed = "a typed_nn.optim optimizer of the model"
            raise bad_argument(doing, "optimizer", allowed, optimizer, hint)
        if optimizer.model is not model:
            raise declared_mismatch(
                f"{doing}: the optimizer was built for another model.",
                f"optim.{type(optimizer).__name__}(model) of this {type(model).__name__}",
                f"an optimizer of another {type(optimizer.model).__name__}",
                "build the optimizer from the model you pass: optim.Adam(model, lr=...).",
            )
        return ModuleTrainee(model, optimizer)
    net, shape = (model.net, model.input_shape) if isinstance(model, LayerModel) else (model, None)
    if not isinstance(optimizer, rules.Optimizer):
        hint = (
            "a layer model trains with typed_nn.model's optimizers: pass e.g. SGD(0.1) or "
            "make_optimizer('adam') (typed_nn.optim's are for an nn.Module)."
        )
        raise bad_argument(doing, "optimizer", "a typed_nn.model Optimizer", optimizer, hint)
    return LayerTrainee(net, optimizer, shape)
