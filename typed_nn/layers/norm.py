"""``BatchNormLayer`` and ``LayerNormLayer`` (PyTorch's ``nn.BatchNorm1d/2d``, ``nn.LayerNorm``).

Both are defined by their forward (a forward-only cell, backward from ``tn.vjp``) with the
scale ``weight`` and shift ``bias`` as parameters (``name/weight``, ``name/bias``, shape
(C,) / (dim,), initialised to 1 and 0 unless loaded or preset; ``PUpdate`` trains them).

``BatchNormLayer(name, num_features, *, momentum=0.1, eps=1e-5)`` takes (N, C) or
(N, C, H, W) data and normalises each channel:

* a **training** layer (``make_train_layer``) uses the batch's mean and (biased) variance,
  and every forward updates the running statistics as PyTorch does:
  ``running = (1 - momentum) * running + momentum * batch_stat``, with the *unbiased*
  variance (n / (n - 1), n = N·H·W). The update is an ``assign`` of the running tensors
  (``name/running_mean``, ``name/running_var``: buffers, saved with the weights and in
  checkpoints — ``model_state`` —, never trained): eagerly it is written at once; inside ``tn.compile`` it is recorded, and the Step writes
  them in place after every read, one program with the forward (the batch statistics are
  computed once, shared by the update and the output);
* an **inference** layer (``make_infer_layer``) uses the running statistics.

Per-channel values reach an (N, C, H, W) batch as ``tile(v, (C, H, W), new_dims=(1, 2))``,
broadcast over N (broadcasting adds leading dims only): the tiles are 1/N of the data.

``LayerNormLayer(name, dim, *, eps=1e-5)`` normalises the last dim of data of any rank (its
statistics are taken on a view with that dim first, so they broadcast back without copies),
then applies ``weight`` and ``bias`` (dim,).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from .. import ops
from ..data.tensor import AnyTensor, Tensor, Vector
from ..errors import ShapeError, message
from ..inference_mode import inference_enabled
from ..ops.node import format_site, user_site
from ..policies import AnyPolicyObject, PNoUpdate, PParamTypeIs
from ..tags import HALF_TAGS, Float32
from .declared import Decl
from .keys import LayerInput, LayerOutput, PortKey
from .param_cells import (
    ANY_RANK,
    Cell,
    ConstantParamLayer,
    OnesParamLayer,
    ParamComposite,
    check_features,
    check_number,
    check_rank,
    feeding,
)
from .same_type_feeds import SameTypeFeeds, SameTypeFeeds2or4
from .source_layers import ParamSourceLayer, check_sizes
from .topology import (
    param_op_topology,
)

__all__ = [
    "BatchNormLayer",
    "LayerNormLayer",
    "batch_norm",
    "check_batch_norm_input",
    "check_layer_norm_input",
    "layer_norm",
    "update_running",
]


class NormWeight(PortKey):
    """The scale of a norm cell."""


class NormBias(PortKey):
    """The shift of a norm cell."""


class RunningMean(PortKey):
    """The running mean of a batch-norm cell."""


class RunningVar(PortKey):
    """The running variance of a batch-norm cell."""


_VECTOR: AnyPolicyObject = PParamTypeIs(Vector)


def training(layer: type[Any]) -> bool:
    """Whether a (configured) norm layer normalises with its batch's statistics and updates
    the running ones: a training layer does, outside ``tn.inference()``; an inference layer,
    or any layer inside ``tn.inference()``, uses the running statistics and changes nothing."""
    return layer.input_map is not None and not inference_enabled()


def per_channel(v: AnyTensor, x: AnyTensor) -> AnyTensor:
    """The (C,) vector ``v`` laid out to broadcast against (N, C, ...) ``x``."""
    if x.rank == 2:
        return v
    tiled: AnyTensor = ops.tile(v, x.shape[1:], new_dims=tuple(range(1, x.rank - 1)))
    return tiled


def _wide(*xs: AnyTensor) -> list[AnyTensor]:
    """16-bit data as Float32 (the rest as it is): a normalisation's squared deviations and
    its mean's rounding pass a 16-bit type's range and precision (a spread of 300 squares past
    Float16's 65504), so both normalisations compute in Float32 and round once at the end."""
    return [ops.astype(x, Float32) if x.elem in HALF_TAGS else x for x in xs]


def batch_stats(x: AnyTensor) -> tuple[AnyTensor, AnyTensor, AnyTensor]:
    """The per-channel mean, the centred data and the biased variance of ``x``, (N, C, ...),
    in Float32 for 16-bit data (``_wide``). Built the same way by the cell and the running
    update (one computation)."""
    (x,) = _wide(x)
    dims: Any = (0, *range(2, x.rank))  # every dim but the channels: 1 to 4, no one overload
    mean: AnyTensor = ops.reduce_mean(x, dims)
    centred = x - per_channel(mean, x)
    var: AnyTensor = ops.reduce_mean(ops.square(centred), dims)
    return mean, centred, var


class _NormCell(Cell):
    """A normalisation cell: ``eps``, added to the variance, is set at construction."""

    eps: float = 1e-5

    def __init__(self, name: str, eps: float = 1e-5) -> None:
        super().__init__(name)
        self.eps = eps


class BatchNormCell(_NormCell):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` per channel (batch statistics in a
    training layer, the running ones in an inference layer)."""

    input_ports: ClassVar[tuple[type, ...]] = (
        LayerInput,
        NormWeight,
        NormBias,
        RunningMean,
        RunningVar,
    )

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x: AnyTensor = inputs[LayerInput]
        check_rank(self.name, LayerInput, x, (2, 4), "(N, C) or (N, C, H, W) data")
        weight, bias = inputs[NormWeight], inputs[NormBias]
        mean, var = inputs[RunningMean], inputs[RunningVar]
        return {LayerOutput: batch_norm(x, weight, bias, mean, var, self.eps, training(type(self)))}


def batch_norm(
    x: AnyTensor,
    weight: AnyTensor,
    bias: AnyTensor,
    running_mean: AnyTensor,
    running_var: AnyTensor,
    eps: float,
    train: bool,
) -> AnyTensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` per channel of (N, C, ...) ``x``: the
    batch's statistics when ``train``, else the running ones. The one computation of
    ``BatchNormLayer`` and ``nn.BatchNorm``."""
    elem = x.elem
    x, weight, bias, running_mean, running_var = _wide(x, weight, bias, running_mean, running_var)
    if train:
        _, centred, var = batch_stats(x)
        scale = weight / ops.sqrt(var + eps)
        y = centred * per_channel(scale, x) + per_channel(bias, x)
    else:
        scale = weight / ops.sqrt(running_var + eps)
        shift = bias - running_mean * scale
        y = x * per_channel(scale, x) + per_channel(shift, x)
    return ops.astype(y, elem) if y.elem is not elem else y


BATCH_NORM_RANKS = {(2, 4): "(N, C) or (N, C, H, W) data", (2, 3, 4, 5): "(N, C, ...) data"}
"""What each batch norm takes: the layer, MetaNN's (typed as 2 or 4); the module, PyTorch's
``BatchNorm1d`` (N, C) and (N, C, L), ``2d`` (N, C, H, W) and ``3d`` (N, C, D, H, W)."""


def _rebuilt(owner: str, port: type | None, size: int) -> str:
    """The layer, or the module (``port`` None), built for ``size`` features, in a hint."""
    return f"the layer for {size}" if port is not None else f"{owner}({size})"


def check_batch_norm_input(
    owner: str,
    port: type | None,
    x: AnyTensor,
    num_features: int,
    train: bool,
    ranks: tuple[int, ...] = (2, 4),
) -> None:
    """Typed errors naming ``owner`` unless ``x`` has one of ``ranks`` dims,
    ``num_features`` channels in dim 1 and, when ``train``, more than one value per channel:
    the checks of ``BatchNormLayer`` and ``nn.BatchNorm`` (``port`` None)."""
    check_rank(owner, port, x, ranks, BATCH_NORM_RANKS[ranks])
    hint = f"feed data with {num_features} channels in dim 1, or build {_rebuilt(owner, port, x.shape[1])}."
    check_features(owner, port, x, 1, num_features, "channels", hint)
    if train and math.prod(x.shape) // num_features < 2:
        raise ShapeError(
            message(
                f"{feeding(owner, port)}: a training batch norm needs more than one "
                "value per channel.",
                [("received", x.describe())],
                built_at=format_site(user_site()),
                hint="train with a batch of at least 2 (or 2 positions per channel), or "
                "normalise with the running statistics (an inference layer, tn.inference() "
                "or a module's eval()).",
            )
        )


def update_running(
    running_mean: Tensor[Any, Any, Any],
    running_var: Tensor[Any, Any, Any],
    x: AnyTensor,
    momentum: float,
) -> None:
    """``running = (1 - momentum) * running + momentum * batch`` (the unbiased variance), as
    PyTorch's batch norm updates its statistics in training."""
    count = math.prod(x.shape) // x.shape[1]
    mean, _, var = batch_stats(x)
    for running, batch in ((running_mean, mean), (running_var, var * (count / (count - 1)))):
        (wide,) = _wide(running)
        new = wide * (1.0 - momentum) + batch * momentum
        running.assign(ops.astype(new, running.elem) if new.elem is not running.elem else new)


_AFFINE = (("weight", OnesParamLayer, NormWeight), ("bias", ConstantParamLayer, NormBias))
"""The per-feature scale (ones) and shift (zeros) of both normalisations, and their ports."""


class BatchNormLayer(SameTypeFeeds2or4, ParamComposite[LayerInput, LayerOutput, Any, Any, Decl]):
    """Batch normalisation over (N, C) or (N, C, H, W) data, PyTorch's ``BatchNorm1d/2d``.
    ``BatchNormLayer(name, num_features, *, momentum=0.1, eps=1e-5)``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    forced_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {
        "weight": (_VECTOR,),
        "bias": (_VECTOR,),
        "running_mean": (_VECTOR, PNoUpdate),
        "running_var": (_VECTOR, PNoUpdate),
    }
    topology = param_op_topology(
        "cell",
        BatchNormCell,
        [
            *_AFFINE,
            ("running_mean", ConstantParamLayer, RunningMean),
            ("running_var", OnesParamLayer, RunningVar),
        ],
    )

    def __init__(
        self, name: str, num_features: int, *, momentum: float = 0.1, eps: float = 1e-5
    ) -> None:
        example = "BatchNormLayer(name, num_features), e.g. (name, 64)."
        (num_features,) = check_sizes(name, {"num_features": num_features}, example)
        check_number(name, "momentum", momentum, 0.0, 1.0, "a number from 0 to 1")
        check_number(name, "eps", eps, 0.0, None, "a positive number")
        args = self.create_sublayers().set("cell", eps)
        for param in ("weight", "bias", "running_mean", "running_var"):
            args.set(param, num_features)
        super().__init__(name, args)
        self.num_features, self.momentum, self.eps = num_features, momentum, eps

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x: AnyTensor = inputs[LayerInput]
        update = training(type(self))
        check_batch_norm_input(self.name, LayerInput, x, self.num_features, update)
        outputs = super().forward(inputs)
        if update:
            self._update_running(x)
        return outputs

    def _update_running(self, x: AnyTensor) -> None:
        running = []
        for sub in ("running_mean", "running_var"):
            source = self.sublayers[sub]
            assert isinstance(source, ParamSourceLayer)
            param = source._param()
            assert isinstance(param, Tensor)  # a principal parameter (init allocates it)
            running.append(param)
        update_running(running[0], running[1], x, self.momentum)


class LayerNormCell(_NormCell):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, NormWeight, NormBias)

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x: AnyTensor = inputs[LayerInput]
        check_rank(self.name, LayerInput, x, ANY_RANK, "data of rank 1 or more")
        return {LayerOutput: layer_norm(x, inputs[NormWeight], inputs[NormBias], self.eps)}


def check_layer_norm_input(owner: str, port: type | None, x: AnyTensor, dim: int) -> None:
    """Typed errors naming ``owner`` unless ``x`` has rank 1 or more and a last dim of
    ``dim``: the checks of ``LayerNormLayer`` and ``nn.LayerNorm``."""
    check_rank(owner, port, x, ANY_RANK, "data of rank 1 or more")
    hint = f"feed data whose last dim is {dim}, or build {_rebuilt(owner, port, x.shape[-1])}."
    check_features(owner, port, x, -1, dim, "features", hint)


def layer_norm(x: AnyTensor, weight: AnyTensor, bias: AnyTensor, eps: float) -> AnyTensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim of ``x`` (any rank
    >= 1): the one computation of MetaNN's layer and of ``nn.LayerNorm``."""
    # statistics kept as a last dim of 1, so every pass reads x in its own (row-major) order
    elem = x.elem
    x, weight, bias = _wide(x, weight, bias)
    centred = x - ops.reduce_mean(x, -1, keep_dim=True)
    normed = centred / ops.sqrt(ops.reduce_mean(ops.square(centred), -1, keep_dim=True) + eps)
    y = normed * weight + bias
    return ops.astype(y, elem) if y.elem is not elem else y


class LayerNormLayer(SameTypeFeeds, ParamComposite[LayerInput, LayerOutput, Any, Any, Decl]):
    """Layer normalisation over the last dim, PyTorch's ``LayerNorm(dim)``.
    ``LayerNormLayer(name, dim, *, eps=1e-5)``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    forced_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {
        "weight": (_VECTOR,),
        "bias": (_VECTOR,),
    }
    topology = param_op_topology("cell", LayerNormCell, _AFFINE)

    def __init__(self, name: str, dim: int, *, eps: float = 1e-5) -> None:
        (dim,) = check_sizes(name, {"dim": dim}, "LayerNormLayer(name, dim), e.g. (name, 64).")
        check_number(name, "eps", eps, 0.0, None, "a positive number")
        args = self.create_sublayers().set("cell", eps).set("weight", dim).set("bias", dim)
        super().__init__(name, args)
        self.dim, self.eps = dim, eps

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        check_layer_norm_input(self.name, LayerInput, inputs[LayerInput], self.dim)
        return super().forward(inputs)
