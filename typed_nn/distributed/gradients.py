"""The gradient all-reduce of a data-parallel training step, as nodes of its graph.

A compiled training step (``typed_nn/train/step.py``) computes each rank's gradients and the
optimizer's update in one program. :class:`GradientAllReduce` puts the exchange between them,
inside that program: per element type and device (a bucket), every gradient, weighted by this
rank's share of the global batch, is flattened into one contiguous buffer (``concat``), the
buffer is summed over every rank by one ``all_reduce`` node (one MPI or NCCL call per bucket
per step, not one per parameter), and each parameter's gradient is read back as a view of
the sum (``narrow`` + ``reshape``) by the optimizer's update.

The weight makes the sum the global batch's gradient whatever the shards' sizes: a rank
holding ``m`` of the global batch's ``B`` samples computes the mean over its ``m`` and
weighs it ``m / B``. It is a rank-0 tensor the step reads live, so a new weight (the last,
smaller batch of an epoch) is no new program.

The ``all_reduce`` node is internal (not in the op catalogue): the evaluator runs it like
any non-fused op, writing the sum into the buffer its plan gives (on the CPU) — mpi4py's
``Allreduce`` receives straight into it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import ops
from ..data.factories import zeros
from ..data.tensor import Tensor, TensorLike
from ..devices import module_of
from ..evaluate.cache import overwrite
from ..ops.declare import OpDecl, Operand, Params, implement
from ..ops.node import build
from ..tags import CPU, GPU, DeviceTag, ElemTag
from .world import World

__all__ = ["ALL_REDUCE", "GradientAllReduce"]

Grad = TensorLike[Any, Any, Any]


def _infer(
    decl: OpDecl, operands: tuple[Operand, ...], params: Params
) -> tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]:
    (x,) = operands
    return x.shape, x.elem, x.device


ALL_REDUCE = OpDecl("all_reduce", 1, _infer, params=("world",), internal=True)
"""``all_reduce(x; world)``: the sum of ``x`` over every rank of ``world``."""


@implement(ALL_REDUCE, CPU, writes_into=True)
def _all_reduce(x: Any, world: World, out: Any = None) -> Any:
    out = np.empty_like(x) if out is None else out
    world.all_reduce_arrays(np.ascontiguousarray(x), out)
    return out


@implement(ALL_REDUCE, GPU)
def _all_reduce_gpu(x: Any, world: World) -> Any:
    xp = module_of(x)
    out = xp.empty_like(x)
    world.all_reduce_arrays(xp.ascontiguousarray(x), out)
    return out


class GradientAllReduce:
    """Sums a step's gradients over the ranks of ``world``, bucketed, inside the step."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._weights: dict[tuple[type[ElemTag], type[DeviceTag]], Tensor[Any, Any, Any]] = {}
        self._weight = 1.0

    def set_weight(self, weight: float) -> None:
        """This rank's share of the next step's global batch (its samples / the batch's)."""
        self._weight = weight
        for t in self._weights.values():
            overwrite(t, weight)

    def _weight_of(self, elem: type[ElemTag], device: type[DeviceTag]) -> Tensor[Any, Any, Any]:
        t = self._weights.get((elem, device))
        if t is None:
            t = self._weights[(elem, device)] = zeros((), elem, device)
            t.array[...] = self._weight
        return t

    def __call__(self, grads: list[Grad]) -> list[Grad]:
        """The summed gradients, each of its own gradient's shape (lazy); ``grads``
        unchanged in a one-process world."""
        if self.world.size <= 1:
            return grads
        buckets: dict[tuple[type[ElemTag], type[DeviceTag]], list[int]] = {}
        for i, g in enumerate(grads):  # in parameter order: the same buckets on every rank
            buckets.setdefault((g.elem, g.device), []).append(i)
        summed = list(grads)
        for (elem, device), members in buckets.items():
            weight = self._weight_of(elem, device)
            sizes = [math.prod(grads[i].shape) for i in members]
            flat = ops.concat(
                [
                    ops.reshape(grads[i] * weight, (size,))
                    for i, size in zip(members, sizes, strict=True)
                ]
            )
            total: Grad = build(ALL_REDUCE, (flat,), (self.world,))
            start = 0
            for i, size in zip(members, sizes, strict=True):
                part = ops.narrow(total, 0, start, size)
                summed[i] = ops.reshape(part, grads[i].shape)
                start += size
        return summed
