"""``GradCollector[E, Dv]``: the gradients of every parameter after a backward pass.

MetaNN ``model/weight_cont/grad_collector.h``. Parameter layers ``collect(name, weight,
grad)`` their lazy gradients; a weight used several times (weight sharing, a recurrent step
per time step) collects several, and ``GradInfo.grad()`` is their **sum**, still lazy, so
the optimizer evaluates every gradient of a step in one plan.

>>> col = GradCollector(tn.Float32, tn.CPU)
>>> col.collect("w", w, g1); col.collect("w", w, g2)
>>> [(name, grad) for name, weight, grad in col]    # grad is g1 + g2, unevaluated

``gradients_of(params)`` gives the collected gradients as a gradient tree of the module
``params`` (``layer_params(net)``), so MetaNN's backward (``feed_backward``,
``grad_collect``) feeds the modules' optimizers: ``optim.Adam(params).step(
col.gradients_of(params))``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import reduce
from typing import Any, Generic, TypeVar

from ..data.module import Module, mark_gradient_of, named_parameters, tree_map
from ..data.tensor import Tensor, TensorLike
from ..errors import (
    DeviceError,
    ElemTypeError,
    ModuleError,
    OperandError,
    ParamError,
    ShapeError,
    listed,
    message,
)
from ..ops.special import zeros_like
from ..tags import D, Dv, E
from .tagged_store import TaggedStore

__all__ = ["GradCollector", "GradInfo"]

M = TypeVar("M", bound=Module)


class GradInfo(Generic[E, Dv]):
    """One parameter: its weight tensor and the gradients collected for it."""

    def __init__(self, weight: Tensor[E, Dv, Any]) -> None:
        self._weight = weight
        self._grads: list[TensorLike[E, Dv, Any]] = []

    @property
    def weight(self) -> Tensor[E, Dv, Any]:
        """The parameter tensor the gradients belong to."""
        return self._weight

    def add(self, grad: TensorLike[E, Dv, Any]) -> None:
        """Append one gradient (same shape as the weight; checked by ``GradCollector``)."""
        self._grads.append(grad)

    def __len__(self) -> int:
        return len(self._grads)

    def grad(self) -> TensorLike[E, Dv, Any]:
        """The gradient: the single one collected, or the lazy sum of all of them."""
        if not self._grads:
            raise ParamError(
                message(
                    "Empty grad.",
                    [("weight", self._weight.describe())],
                    hint="collect at least one gradient before reading it.",
                )
            )
        return reduce(lambda a, b: a + b, self._grads)


class GradCollector(TaggedStore[E, Dv]):
    """Gradients by parameter name for data of element ``E`` on device ``Dv``.

    Iterating yields ``(name, weight, grad)`` in collection order (``grad`` summed, lazy).
    """

    def __init__(self, elem: type[E], device: type[Dv]) -> None:
        super().__init__(elem, device)
        self._infos: dict[str, GradInfo[E, Dv]] = {}

    def collect(self, name: str, weight: TensorLike[E, Dv, D], grad: TensorLike[E, Dv, D]) -> None:
        """Record ``grad`` (lazy, same shape as the principal ``weight``) as a gradient of
        parameter ``name``."""
        weight = self._check(name, weight, grad)
        info = self._infos.get(name)
        if info is None:
            info = self._infos[name] = GradInfo(weight)
        elif info.weight != weight:
            raise ParamError(
                message(
                    f"two different weights collected under the name {name!r}.",
                    [("first", info.weight.describe()), ("now", weight.describe())],
                    hint="shared parameters must be one tensor (share it through a LoadBuffer); "
                    "otherwise give them different names.",
                )
            )
        info.add(grad)

    def _check(self, name: str, weight: object, grad: object) -> Tensor[E, Dv, Any]:
        if not isinstance(weight, Tensor) or not isinstance(grad, TensorLike):
            raise OperandError(
                message(
                    f"collect({name!r}, weight, grad) needs a principal weight tensor and "
                    "typed_nn data as its gradient.",
                    [("weight", type(weight).__name__), ("grad", type(grad).__name__)],
                    hint="pass the parameter tn.Tensor and the lazy gradient expression.",
                )
            )
        if weight.shape != grad.shape:
            raise ShapeError(
                message(
                    "Shape of Weight/Grad mismatch.",
                    [
                        ("parameter", repr(name)),
                        ("weight", weight.describe()),
                        ("grad", grad.describe()),
                    ],
                    hint="a gradient has its weight's shape; reduce broadcast dims first.",
                )
            )
        for error, what, values in (
            (ElemTypeError, "element", (weight.elem, grad.elem, self._elem)),
            (DeviceError, "device", (weight.device, grad.device, self._device)),
        ):
            if len(set(values)) != 1:
                raise error(
                    message(
                        f"cannot collect {name!r}: the {what} differs from the collector's.",
                        [
                            (
                                "collector",
                                f"GradCollector[{self._elem.__name__}, {self._device.__name__}]",
                            ),
                            ("weight", weight.describe()),
                            ("grad", grad.describe()),
                        ],
                        hint=f"use one GradCollector per {what}.",
                    )
                )
        return weight

    def get(self, name: str) -> GradInfo[E, Dv]:
        """The GradInfo of parameter ``name``."""
        info = self._infos.get(name)
        if info is None:
            raise ParamError(
                message(
                    f"no gradient was collected for {name!r}.",
                    [("collected", ", ".join(map(repr, self._infos)) or "(none)")],
                    hint="run the backward pass and layer_grad_collect first.",
                )
            )
        return info

    def items(self) -> Iterator[tuple[str, GradInfo[E, Dv]]]:
        """(name, GradInfo) pairs in collection order."""
        return iter(list(self._infos.items()))

    def __iter__(self) -> Iterator[tuple[str, Tensor[E, Dv, Any], TensorLike[E, Dv, Any]]]:
        for name, info in list(self._infos.items()):
            yield name, info.weight, info.grad()

    def gradients_of(self, params: M) -> M:
        """The collected gradients as a tree of ``params``' type (what ``tn.grad(loss,
        params)`` gives): each parameter's summed gradient, a ``ZeroTensor`` for one that
        collected none. Every collected weight must be a parameter of ``params``."""
        if not isinstance(params, Module):
            raise ModuleError(
                message(
                    "GradCollector.gradients_of needs the module tree of the parameters.",
                    [("received", type(params).__name__)],
                    hint="pass layer_params(net) of the layer model whose grad_collect filled "
                    "this collector.",
                )
            )
        by_weight = {id(info.weight): info for info in self._infos.values()}
        known = {id(w) for _, w in named_parameters(params)}
        strays = [name for name, info in self._infos.items() if id(info.weight) not in known]
        if strays:
            raise ModuleError(
                message(
                    f"GradCollector.gradients_of: {len(strays)} collected weight(s) are not "
                    f"parameters of the {type(params).__name__}.",
                    [("not in the tree", listed(strays))],
                    hint="pass layer_params(net) of the layer model whose grad_collect filled "
                    "this collector (a frozen weight is a buffer of that tree, not a parameter).",
                )
            )

        # as tn.grad: a parameter the backward did not reach gets a ZeroTensor
        def collected(weight: TensorLike[Any, Any, Any]) -> TensorLike[Any, Any, Any]:
            info = by_weight.get(id(weight))
            return zeros_like(weight) if info is None else info.grad()

        grads = tree_map(collected, params)
        mark_gradient_of(grads, params)
        return grads

    def __len__(self) -> int:
        return len(self._infos)

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def clear(self) -> None:
        """Forget every collected gradient (call after each optimizer step)."""
        self._infos.clear()

    def __repr__(self) -> str:
        inner = ", ".join(f"{n!r}: {len(i)} grad(s)" for n, i in self._infos.items())
        return f"GradCollector[{self._elem.__name__}, {self._device.__name__}]({{{inner}}})"
