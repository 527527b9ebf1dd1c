"""Image and normalisation modules: ``Conv2d``, ``MaxPool2d``, ``AvgPool2d``, ``Flatten``,
``BatchNorm``; computed by the functions MetaNN's layers use (one computation each)."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Literal, cast, overload

from .. import ops
from ..data.factories import ones, zeros
from ..data.module import Module, buffer
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..layers.conv_layers import conv2d_forward, flatten, pool2d
from ..layers.norm import batch_norm, check_batch_norm_input, update_running
from ..ops.conv import Pair, as_pair
from ..ops.node import format_site, user_site
from ..policies.precision import ComputeIn
from ..tags import (
    CPU,
    FE,
    D,
    DeviceTag,
    Dim0,
    Dim1,
    Dim2,
    Dim3,
    Dim4,
    Dim5,
    Dv,
    Float32,
    FloatTag,
    Int64,
)
from . import checks, init
from .layers import Gen, _tags
from .precision import CE, PC, Mixed

__all__ = ["AvgPool2d", "BatchNorm", "Conv2d", "Flatten", "MaxPool2d"]


def _pair(owner: str, what: str, value: object, minimum: int) -> tuple[int, int]:
    return as_pair(what, value, minimum, f"cannot create {owner}", format_site(user_site()))


class Conv2d(Mixed, Generic[FE, Dv, CE]):
    """2-D convolution of NCHW images, PyTorch's ``nn.Conv2d``: ``weight`` (out, in, kh, kw)
    and ``bias`` (out,) drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in·kh·kw."""

    weight: TensorLike[FE, Dv, Dim4]
    bias: TensorLike[FE, Dv, Dim1]
    """None with ``bias=False``, typed as a tensor as PyTorch types it (the common case reads
    ``grads.fc.bias`` with no narrowing)."""

    @overload
    def __init__(self: Conv2d[Float32, CPU], in_channels: int, out_channels: int, kernel_size: Pair, stride: Pair = 1, padding: Pair = 0, *, bias: bool = True, gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Conv2d[FE, CPU], in_channels: int, out_channels: int, kernel_size: Pair, stride: Pair = 1, padding: Pair = 0, *, bias: bool = True, elem: type[FE], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Conv2d[Float32, Dv], in_channels: int, out_channels: int, kernel_size: Pair, stride: Pair = 1, padding: Pair = 0, *, bias: bool = True, device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Conv2d[FE, Dv, FE], in_channels: int, out_channels: int, kernel_size: Pair, stride: Pair = 1, padding: Pair = 0, *, bias: bool = True, elem: type[FE], device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Conv2d[Float32, CPU, PC], in_channels: int, out_channels: int, kernel_size: Pair, stride: Pair = 1, padding: Pair = 0, *, bias: bool = True, precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: Conv2d[FE, Dv, PC], in_channels: int, out_channels: int, kernel_size: Pair, stride: Pair = 1, padding: Pair = 0, *, bias: bool = True, elem: type[FE], device: type[Dv], precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Pair,
        stride: Pair = 1,
        padding: Pair = 0,
        *,
        bias: bool = True,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
        gen: Gen = None,
    ) -> None:
        e, dv = _tags(elem, device)
        self._set_precision(precision, e)
        in_channels, out_channels = _pair("Conv2d", "channels", (in_channels, out_channels), 1)
        kh, kw = _pair("Conv2d", "kernel_size", kernel_size, 1)
        self.stride = _pair("Conv2d", "stride", stride, 1)
        self.padding = _pair("Conv2d", "padding", padding, 0)
        fan_in = in_channels * kh * kw
        shape = (out_channels, in_channels, kh, kw)
        self.weight = init.fan_in_uniform(shape, fan_in, e, dv, gen)
        self.bias = init.fan_in_uniform((out_channels,), fan_in, e, dv, gen) if bias else None  # type: ignore[assignment]

    def __call__(self, x: TensorLike[CE, Dv, Dim4]) -> TensorLike[CE, Dv, Dim4]:
        self._input(x)
        w = self._param(self.weight)
        b: TensorLike[FE, Dv, Dim1] | None = self.bias  # None with bias=False
        y = conv2d_forward(
            "Conv2d", x, w, None if b is None else self._param(b), self.stride, self.padding
        )
        return cast(TensorLike[CE, Dv, Dim4], y)


class _Pool2d(Module):
    """The ``kind`` of each ``kernel_size`` window (moved by ``stride``, default the window),
    PyTorch's pooling without padding."""

    kind: ClassVar[Literal["max", "avg"]]

    def __init__(self, kernel_size: Pair, stride: Pair | None = None) -> None:
        owner = type(self).__name__
        self.kernel_size = _pair(owner, "kernel_size", kernel_size, 1)
        self.stride = None if stride is None else _pair(owner, "stride", stride, 1)

    def __call__(self, x: TensorLike[FE, Dv, Dim4]) -> TensorLike[FE, Dv, Dim4]:
        y = pool2d(type(self).__name__, self.kind, x, self.kernel_size, self.stride)
        return cast(TensorLike[FE, Dv, Dim4], y)


class MaxPool2d(_Pool2d):
    """The maximum of each ``kernel_size`` window (moved by ``stride``, default the window),
    PyTorch's ``nn.MaxPool2d`` without padding."""

    kind: ClassVar[Literal["max", "avg"]] = "max"


class AvgPool2d(_Pool2d):
    """The mean of each ``kernel_size`` window, PyTorch's ``nn.AvgPool2d`` without padding."""

    kind: ClassVar[Literal["max", "avg"]] = "avg"


class Flatten(Module):
    """(N, d1, d2, ...) -> (N, d1·d2·...), PyTorch's ``nn.Flatten()``."""

    def __call__(self, x: TensorLike[FE, Dv, Any]) -> TensorLike[FE, Dv, Dim2]:
        return cast(TensorLike[FE, Dv, Dim2], flatten("Flatten", x))


class BatchNorm(Mixed, Generic[FE, Dv, CE]):
    """Batch normalisation over (N, C, ...) data of rank 2 to 5, PyTorch's ``BatchNorm1d``
    (N, C) and (N, C, L), ``2d`` (N, C, H, W) and ``3d`` (N, C, D, H, W):
    ``weight`` ones and ``bias`` zeros (C,), trained; ``running_mean`` and ``running_var``
    buffers, updated in training mode (``model.train()``) with ``momentum`` and used in
    evaluation mode (``model.eval()``). With ``precision=``, it takes and returns ``CE`` data
    but normalises in ``elem``, as PyTorch's autocast does (its statistics are ``elem``
    buffers)."""

    weight: TensorLike[FE, Dv, Dim1]
    bias: TensorLike[FE, Dv, Dim1]
    running_mean: TensorLike[FE, Dv, Dim1]
    running_var: TensorLike[FE, Dv, Dim1]
    num_batches_tracked: TensorLike[Int64, Dv, Dim0]

    @overload
    def __init__(self: BatchNorm[Float32, CPU], num_features: int, *, momentum: float = 0.1, eps: float = 1e-5) -> None: ...  # fmt: skip
    @overload
    def __init__(self: BatchNorm[FE, CPU], num_features: int, *, momentum: float = 0.1, eps: float = 1e-5, elem: type[FE]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: BatchNorm[Float32, Dv], num_features: int, *, momentum: float = 0.1, eps: float = 1e-5, device: type[Dv]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: BatchNorm[FE, Dv, FE], num_features: int, *, momentum: float = 0.1, eps: float = 1e-5, elem: type[FE], device: type[Dv]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: BatchNorm[Float32, CPU, PC], num_features: int, *, momentum: float = 0.1, eps: float = 1e-5, precision: ComputeIn[PC]) -> None: ...  # fmt: skip
    @overload
    def __init__(self: BatchNorm[FE, Dv, PC], num_features: int, *, momentum: float = 0.1, eps: float = 1e-5, elem: type[FE], device: type[Dv], precision: ComputeIn[PC]) -> None: ...  # fmt: skip
    def __init__(
        self,
        num_features: int,
        *,
        momentum: float = 0.1,
        eps: float = 1e-5,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
    ) -> None:
        e, dv = _tags(elem, device)
        self._set_precision(precision, e)
        self.num_features = checks.size("BatchNorm", "num_features", num_features)
        self.momentum = checks.fraction("BatchNorm", "momentum", momentum)
        self.eps = checks.positive("BatchNorm", "eps", eps)
        self.weight = ones((num_features,), e, dv)
        self.bias = zeros((num_features,), e, dv)
        self.running_mean = buffer(zeros((num_features,), e, dv))
        self.running_var = buffer(ones((num_features,), e, dv))
        self.num_batches_tracked = buffer(zeros((), Int64, dv))  # as PyTorch counts them

    # (N, C), (N, C, L), (N, C, H, W) or (N, C, D, H, W): another rank is a static error
    @overload
    def __call__(self, x: TensorLike[CE, Dv, Dim2]) -> TensorLike[CE, Dv, Dim2]: ...
    @overload
    def __call__(self, x: TensorLike[CE, Dv, Dim3]) -> TensorLike[CE, Dv, Dim3]: ...
    @overload
    def __call__(self, x: TensorLike[CE, Dv, Dim4]) -> TensorLike[CE, Dv, Dim4]: ...
    @overload
    def __call__(self, x: TensorLike[CE, Dv, Dim5]) -> TensorLike[CE, Dv, Dim5]: ...
    def __call__(self, x: TensorLike[CE, Dv, D]) -> TensorLike[CE, Dv, D]:
        train = self.training
        check_batch_norm_input("BatchNorm", None, x, self.num_features, train, (2, 3, 4, 5))
        self._input(x)
        ce = self.compute_elem
        if ce is not None:  # normalised in the parameters' type, the result cast back
            wide: Any = ops.astype(x, self.weight.elem)
            return cast(TensorLike[CE, Dv, D], ops.astype(self._normalise(wide), ce))
        return cast(TensorLike[CE, Dv, D], self._normalise(x))

    def _normalise(self, x: AnyTensor) -> AnyTensor:
        train = self.training
        y = batch_norm(
            x, self.weight, self.bias, self.running_mean, self.running_var, self.eps, train
        )
        if train:
            mean, var, count = self.running_mean, self.running_var, self.num_batches_tracked
            assert isinstance(mean, Tensor)
            assert isinstance(var, Tensor)
            update_running(mean, var, x, self.momentum)
            assert isinstance(count, Tensor)
            count.assign(count + 1)
        return y
