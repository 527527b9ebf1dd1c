"""Convolution, pooling and flattening layers over NCHW images (PyTorch's ``nn.Conv2d``,
``nn.MaxPool2d``, ``nn.AvgPool2d``, ``nn.Flatten``).

Each defines its forward only; its backward is ``tn.vjp`` of that forward (``derived.py``),
with MetaNN's LIFO stacks, policies and neutral invariant.

* ``Conv2dLayer(name, in_channels, out_channels, kernel_size, stride=1, padding=0, *,
  bias=True)`` (stride and padding positional too, as in PyTorch, so a composite can set
  them with ``create_sublayers().set(...)``): ``conv2d(x, weight) + bias`` per output
  channel; ``x`` (N, C, H, W) -> (N, O, H', W'). Parameters ``name/weight`` (O, C, KH, KW) and ``name/bias`` (O,), as
  PyTorch lays them out (``nn.Conv2d``'s state dict loads unchanged); ``bias=False`` has no
  bias parameter. A composite of two ``ParamSourceLayer`` sublayers (policies as for
  ``LinearLayer``: ``PUpdate``, ``PInitializerIs``, ``PElemIs`` / ``PDeviceIs``) and the
  forward-only ``Conv2dOp``. Fillers read the weight's fans as fan_in = C·KH·KW and
  fan_out = O·KH·KW.
* ``MaxPool2dLayer(name, size, stride=None)``, ``AvgPool2dLayer(name, size, stride=None)``:
  the maximum / mean of each window (no padding; stride defaults to the size).
* ``FlattenLayer(name)``: (N, ...) -> (N, product of the rest), e.g. before a LinearLayer.

The shape checks come at feed time and name the layer: an input that is not rank 4, a
channel count other than the layer's, a kernel larger than the padded input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from .. import ops
from ..data.tensor import AnyTensor, TensorLike
from ..errors import RankError, ShapeError, message
from ..ops.conv import as_pair
from ..ops.node import format_site, user_site
from ..ops.special import ZeroTensor
from ..policies import AnyPolicyObject, ParamPolicy, PParamTypeIs, policy_select
from ..tags import CPU, FE, Dim1, Dim2, Dim4, Dv, Float32
from .compose import ComposeKernel, as_instance
from .declared import Decl
from .in_map import float_input_type, port_type, tensor_type
from .keys import LayerInput, LayerOutput, PortKey
from .protocol import Layer, make_infer_layer
from .source_layers import ParamSourceLayer
from .topology import (
    param_op_topology,
)
from .var_type_dict import VarValues

__all__ = [
    "AvgPool2dLayer",
    "Conv2dBias",
    "Conv2dLayer",
    "Conv2dOp",
    "Conv2dWeight",
    "FlattenLayer",
    "MaxPool2dLayer",
    "pool2d",
]

Pair = int | tuple[int, int]


class Conv2dWeight(PortKey):
    """Conv2dOp's weight (O, C, KH, KW)."""


class Conv2dBias(PortKey):
    """Conv2dOp's bias (O,)."""


def _check_pair(layer: str, what: str, value: object, minimum: int) -> tuple[int, int]:
    return as_pair(what, value, minimum, f"cannot create layer '{layer}'", format_site(user_site()))


def _image(layer: str, x: AnyTensor) -> None:
    """RankError naming the layer unless ``x`` is an NCHW batch."""
    if x.rank != 4:
        raise RankError(
            message(
                f"cannot feed layer '{layer}': it takes NCHW images (rank 4), got rank {x.rank}.",
                [("layer", layer), ("received", x.describe())],
                built_at=format_site(user_site()),
                hint="reshape a batch of images to (N, C, H, W), e.g. ops.reshape(x, (N, 1, 8, 8)).",
            )
        )


def _fits(layer: str, x: AnyTensor, kernel: tuple[int, int], padding: tuple[int, int]) -> None:
    """ShapeError naming the layer when the window does not fit the padded input."""
    h, w = x.shape[2] + 2 * padding[0], x.shape[3] + 2 * padding[1]
    if kernel[0] > h or kernel[1] > w:
        raise ShapeError(
            message(
                f"cannot feed layer '{layer}': its {kernel[0]}x{kernel[1]} window is larger "
                f"than the padded {h}x{w} input.",
                [("layer", layer), ("received", x.describe()), ("padding", str(padding))],
                built_at=format_site(user_site()),
                hint="use a smaller kernel, more padding, or larger images.",
            )
        )


class _ImageLayer(Layer[Any, LayerOutput]):
    """A forward-only layer whose output has the element and device of its ``LayerInput``
    and rank ``out_rank``: its output types are known from the class (the window sizes are
    per instance, so no probe forward is run)."""

    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    out_rank: ClassVar[int] = 4

    @classmethod
    def output_types(cls, input_types: Mapping[type, object] | None = None) -> dict[type, object]:
        given = input_types if input_types is not None else cls.input_map
        if given is None:
            return super().output_types(None)  # raises: an inference layer needs input types
        x = port_type(given[LayerInput])
        if x.rank is not None and x.rank != 4 and cls.out_rank == 4:
            raise RankError(
                message(
                    f"cannot make {cls.__name__}: it takes NCHW images (rank 4), declared "
                    f"rank {x.rank}.",
                    [("declared", repr(given[LayerInput]))],
                    built_at=format_site(user_site()),
                    hint="declare LayerInput as tn.Tensor[elem, device, tn.Dim4].",
                )
            )
        x = float_input_type(cls.__name__, given[LayerInput], "takes")  # after the rank check
        assert x.elem is not None
        assert x.device is not None
        return {LayerOutput: tensor_type(x.elem, x.device, cls.out_rank)}


def conv2d_forward(
    owner: str,
    x: AnyTensor,
    w: AnyTensor,
    b: AnyTensor | None,
    stride: tuple[int, int],
    padding: tuple[int, int],
) -> AnyTensor:
    """``conv2d(x, w, stride, padding) + b`` (``b`` per output channel; None or a ZeroTensor:
    no bias), its input checked first: the one computation of ``Conv2dLayer`` and
    ``nn.Conv2d`` (``owner`` names the layer in errors)."""
    _image(owner, x)
    if x.shape[1] != w.shape[1]:
        raise ShapeError(
            message(
                f"cannot feed layer '{owner}': the input has {x.shape[1]} channels, the "
                f"layer takes {w.shape[1]}.",
                [("layer", owner), ("received", x.describe()), ("weight", w.describe())],
                built_at=format_site(user_site()),
                hint=f"give (N, {w.shape[1]}, H, W) images, or make the layer with "
                f"in_channels={x.shape[1]}.",
            )
        )
    _fits(owner, x, (w.shape[2], w.shape[3]), padding)
    y = ops.conv2d(x, w, stride, padding)
    if b is None or isinstance(b, ZeroTensor):
        return y
    # The bias (O,) repeated over N, H', W' (broadcasting expands no size-1 dims).
    return y + ops.tile(b, y.shape, new_dims=(0, 2, 3))


def pool2d(
    owner: str,
    kind: Literal["max", "avg"],
    x: AnyTensor,
    size: tuple[int, int],
    stride: tuple[int, int] | None,
) -> AnyTensor:
    """The maximum / mean of each ``size`` window of NCHW ``x`` (moved by ``stride``, default
    the window), its input checked first: the one forward of ``MaxPool2dLayer`` /
    ``AvgPool2dLayer`` and ``nn.MaxPool2d`` / ``nn.AvgPool2d`` (``owner`` names the layer)."""
    _image(owner, x)
    _fits(owner, x, size, (0, 0))
    return (ops.max_pool2d if kind == "max" else ops.avg_pool2d)(x, size, stride)


def flatten(owner: str, x: AnyTensor) -> AnyTensor:
    """(N, d1, d2, ...) -> (N, d1·d2·...), of ``FlattenLayer`` and ``nn.Flatten``."""
    if x.rank < 1:
        raise RankError(
            message(
                f"cannot feed layer '{owner}': a scalar has no batch dim to keep.",
                [("layer", owner), ("received", x.describe())],
                built_at=format_site(user_site()),
                hint="feed a batch (N, ...).",
            )
        )
    rows = (x.shape[0], math.prod(x.shape[1:]))
    return x if x.shape == rows else ops.reshape(x, rows)


class Conv2dOp(_ImageLayer):
    """``conv2d(x, weight, stride, padding) + bias`` (bias per output channel), from its
    three input ports; ``Conv2dOp(name, stride, padding)``. Conv2dLayer's sublayer."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, Conv2dWeight, Conv2dBias)

    def __init__(self, name: str, stride: tuple[int, int], padding: tuple[int, int]) -> None:
        super().__init__(name)
        self.stride, self.padding = stride, padding

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x, w, b = inputs[LayerInput], inputs[Conv2dWeight], inputs[Conv2dBias]
        owner = self.name.rsplit("/", 1)[0]
        return {LayerOutput: conv2d_forward(owner, x, w, b, self.stride, self.padding)}

    def feed_forward(
        self, inputs: VarValues[LayerInput | Conv2dWeight | Conv2dBias, TensorLike[FE, Dv, Any]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Dim4]]:
        """``LayerOutput`` = the convolution plus the bias (lazy)."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, Dim4]]
    ) -> VarValues[LayerInput | Conv2dWeight | Conv2dBias, TensorLike[FE, Dv, Any]]:
        """The gradients of the three inputs (derived)."""
        return self._feed_backward(grads)


_KERNEL: AnyPolicyObject = PParamTypeIs(TensorLike[Any, Any, Dim4])
_BIAS: AnyPolicyObject = PParamTypeIs(TensorLike[Any, Any, Dim1])


class Conv2dLayer(ComposeKernel[LayerInput, LayerOutput, Dim4, Dim4, Decl]):
    """A 2-D convolution of NCHW images with ``out_channels`` filters (see the module): its
    ``feed_forward`` maps ``TensorLike[E, Dv, Dim4]`` to ``TensorLike[E, Dv, Dim4]``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {
        "weight": (_KERNEL,),
        "bias": (_BIAS,),
    }
    topology = param_op_topology(
        "conv",
        Conv2dOp,
        [("weight", ParamSourceLayer, Conv2dWeight), ("bias", ParamSourceLayer, Conv2dBias)],
    )

    def __init__(
        self,
        name: str,
        in_channels: int,
        out_channels: int,
        kernel_size: Pair,
        stride: Pair = 1,
        padding: Pair = 0,
        *,
        bias: bool = True,
    ) -> None:
        kh, kw = _check_pair(name, "kernel_size", kernel_size, 1)
        channels = _check_pair(name, "channels", (in_channels, out_channels), 1)
        conv = (_check_pair(name, "stride", stride, 1), _check_pair(name, "padding", padding, 0))
        args = self.create_sublayers().set("weight", channels[1], channels[0], kh, kw)
        super().__init__(name, args.set("bias", channels[1]).set("conv", *conv))
        self.in_channels, self.out_channels = channels
        self.kernel_size, (self.stride, self.padding) = (kh, kw), conv
        if not bias:  # a zero bias: never initialised, saved or updated
            param = policy_select(ParamPolicy, type(self).policies)
            zero = make_infer_layer(
                ParamSourceLayer,
                PParamTypeIs(ZeroTensor[param.elem or Float32, param.device or CPU, Dim1]),  # type: ignore[misc]  # a runtime subscription
            )
            # as_instance, as every sublayer a composite holds (pyright sees no Layer as a
            # LayerInstance: a ClassVar output_ports and input_cont's self-typed overload)
            self.sublayers["bias"] = as_instance(zero(f"{name}/bias", channels[1]), name)

    def __repr__(self) -> str:
        return (
            f"Conv2dLayer({self.name!r}, {self.in_channels}, {self.out_channels}, "
            f"{self.kernel_size}, stride={self.stride}, padding={self.padding})"
        )


class _PoolLayer(_ImageLayer):
    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    kind: ClassVar[Literal["max", "avg"]]

    def __init__(self, name: str, size: Pair, stride: Pair | None = None) -> None:
        super().__init__(name)
        self.size = _check_pair(name, "size", size, 1)
        self.pool_stride = _check_pair(name, "stride", size if stride is None else stride, 1)

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        pooled = pool2d(self.name, self.kind, inputs[LayerInput], self.size, self.pool_stride)
        return {LayerOutput: pooled}

    # Own signature (not SameTypeFeeds): images only, Dim4 in and out.
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[FE, Dv, Dim4]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Dim4]]:
        """``LayerOutput`` = the pooled images (lazy), (N, C, H', W')."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, Dim4]]
    ) -> VarValues[LayerInput, TensorLike[FE, Dv, Dim4]]:
        """``LayerInput`` = the input gradient (with ``PFeedbackOutput``)."""
        return self._feed_backward(grads)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.size}, stride={self.pool_stride})"


class MaxPool2dLayer(_PoolLayer):
    """The maximum of each window; the gradient goes to each window's first maximum."""

    kind: ClassVar[Literal["max", "avg"]] = "max"


class AvgPool2dLayer(_PoolLayer):
    """The mean of each window."""

    kind: ClassVar[Literal["max", "avg"]] = "avg"


class FlattenLayer(_ImageLayer):
    """(N, d1, d2, ...) -> (N, d1·d2·...): a batch of anything to a batch of rows."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    out_rank: ClassVar[int] = 2

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        return {LayerOutput: flatten(self.name, inputs[LayerInput])}

    # Own signature (not SameTypeFeeds): any rank in, rank 2 out.
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[FE, Dv, Any]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Dim2]]:
        """``LayerOutput`` = the batch as rows (lazy; a view when evaluated)."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, Dim2]]
    ) -> VarValues[LayerInput, TensorLike[FE, Dv, Any]]:
        """``LayerInput`` = the gradient in the input's shape (with ``PFeedbackOutput``)."""
        return self._feed_backward(grads)
