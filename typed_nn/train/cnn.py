"""``build_cnn``: a small initialised convolutional classifier of 8x8 images (the digits).

::

    net, params = build_cnn(seed=0)   # conv 8 3x3 pad 1 -> relu -> maxpool 2 -> flatten -> linear 10
    fit(net, split.train, make_optimizer("adam"), test=split.test, input_shape=(1, 8, 8))

The network is a composite of the catalogue's layers (``DigitsCNN``); every backward is
derived from the forwards (``tn.vjp``). Parameters: ``{name}/conv/weight`` (8, 1, 3, 3)
OIHW and ``{name}/conv/bias`` (8,), ``{name}/fc/weight`` (8·H/2·W/2, classes) and
``{name}/fc/bias``; weights MSRA (He) with the conv weight's fan_in C·KH·KW, biases zero.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..data.tensor import TensorLike
from ..layers import (
    Conv2dLayer,
    FlattenLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LinearLayer,
    MaxPool2dLayer,
    ReLULayer,
    layer_init,
    make_train_layer,
)
from ..layers.compose import ComposeKernel
from ..layers.declared import Decl
from ..layers.topology import ComposeTopology, InConnect, InternalConnect, OutConnect, Sublayer
from ..model import ConstantFiller, LoadBuffer, MSRAFiller, ParamInitializer
from ..policies import (
    PDeviceIs,
    PElemIs,
    PFeedbackOutput,
    PInitializerIs,
    PUpdate,
    SubPolicyContainer,
)
from ..tags import CPU, DeviceTag, Dim2, Dim4, Float32

__all__ = ["DigitsCNN", "build_cnn"]


def _link(src: str, dst: str) -> InternalConnect:
    return InternalConnect(src, LayerOutput, dst, LayerInput)


class DigitsCNN(ComposeKernel[LayerInput, LayerOutput, Dim4, Dim2, Decl]):
    """conv(channels, 3x3, padding 1) -> ReLU -> 2x2 max pool -> flatten -> linear(classes):
    (N, 1, H, W) images in, (N, classes) scores out.

    ``DigitsCNN(name, height, width, channels=8, classes=10)`` for (N, 1, height, width)
    images (height and width even)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("conv", Conv2dLayer),
        Sublayer("relu", ReLULayer),
        Sublayer("pool", MaxPool2dLayer),
        Sublayer("flat", FlattenLayer),
        Sublayer("fc", LinearLayer),
        InConnect(LayerInput, "conv", LayerInput),
        _link("conv", "relu"),
        _link("relu", "pool"),
        _link("pool", "flat"),
        _link("flat", "fc"),
        OutConnect("fc", LayerOutput, LayerOutput),
    )

    def __init__(
        self, name: str, height: int, width: int, channels: int = 8, classes: int = 10
    ) -> None:
        args = self.create_sublayers().set("conv", 1, channels, 3, 1, 1).set("pool", 2)
        super().__init__(name, args.set("fc", channels * (height // 2) * (width // 2), classes))


def build_cnn(
    *,
    height: int = 8,
    width: int = 8,
    channels: int = 8,
    classes: int = 10,
    seed: int = 0,
    name: str = "cnn",
    device: type[DeviceTag] = CPU,
) -> tuple[DigitsCNN, LoadBuffer[Float32, Any]]:
    """A training ``DigitsCNN`` for (N, 1, height, width) Float32 images on ``device``, its
    parameters initialised (MSRA weights from ``seed``, zero biases); returns it and its
    parameters by name."""
    images = TensorLike[Float32, device, Dim4]  # type: ignore[valid-type]  # a run-time tag
    cls = make_train_layer(
        DigitsCNN,
        LayerInMap({LayerInput: images}),
        PUpdate,
        PElemIs(Float32),
        PDeviceIs(device),
        PInitializerIs("weight"),
        SubPolicyContainer("conv", SubPolicyContainer("bias", PInitializerIs("bias"))),
        SubPolicyContainer("fc", SubPolicyContainer("bias", PInitializerIs("bias"))),
        PFeedbackOutput,
    )
    net = cls(name, height, width, channels, classes)
    params: LoadBuffer[Float32, Any] = LoadBuffer(Float32, device)
    init = ParamInitializer({"weight": MSRAFiller(seed=seed), "bias": ConstantFiller(0.0)})
    layer_init(net, init, params)
    return net, params
