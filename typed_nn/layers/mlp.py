"""``MLP``: a stack of fully connected layers, built from SingleLayerPerceptron / LinearLayer.

``MLP.build("net", widths=[64, 128, 10], activations=[ReLULayer, None], weight_init="w",
bias_init="b")`` returns a training ``MLP`` layer: ``fc1`` is a SingleLayerPerceptron 64→128
with ReLU, ``fc2`` a LinearLayer 128→10 whose output is the logits. An activation ``None``
means no activation (a LinearLayer); ``SoftmaxLayer`` as the last one gives probabilities,
ready for an ``NLLLossLayer`` (the evaluator fuses ``softmax_grad(nll_loss_grad(...))``).

Parameter names: ``net/fc1/weight``, ``net/fc1/bias``, ``net/fc2/weight``, ... — so a
``ParamInitializer`` fills them by key, a ``LoadBuffer`` shares or saves them and a
``GradCollector`` receives them under those names.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from ..errors import LayerError, message
from ..ops.node import format_site, user_site
from ..policies import (
    AnyPolicyObject,
    PActFuncIs,
    PDeviceIs,
    PElemIs,
    PFeedbackNoOutput,
    PInitializerIs,
    PolicyItem,
    PUpdate,
    SubPolicyContainer,
)
from ..tags import CPU, DeviceTag, Dim2, Float32, FloatTag
from .compose import ComposeKernel
from .declared import Declared
from .in_map import LayerInMap, tensor_type
from .keys import LayerInput, LayerOutput
from .linear import LinearLayer
from .perceptron import SingleLayerPerceptron
from .protocol import make_infer_layer, make_train_layer
from .topology import ComposeTopology, InConnect, InternalConnect, OutConnect, Sublayer

__all__ = ["MLP"]

if TYPE_CHECKING:
    # PEP 696 defaults, for the checkers only (typing_extensions is not a dependency; at run
    # time the type variables need none). A bare ``MLP`` annotation is ``MLP[Any, Any]`` (it
    # accepts any MLP, as before MLP was generic); ``MLP.build`` without ``elem`` / ``device``
    # gives ``MLP[Float32, CPU]``, as it builds at run time.
    from typing_extensions import TypeVar

    NetElem = TypeVar("NetElem", bound=FloatTag, default=Any)
    NetDevice = TypeVar("NetDevice", bound=DeviceTag, default=Any)
    BuildElem = TypeVar("BuildElem", bound=FloatTag, default=Float32)
    BuildDevice = TypeVar("BuildDevice", bound=DeviceTag, default=CPU)
else:
    from typing import TypeVar

    NetElem = TypeVar("NetElem", bound=FloatTag)
    NetDevice = TypeVar("NetDevice", bound=DeviceTag)
    BuildElem = TypeVar("BuildElem", bound=FloatTag)
    BuildDevice = TypeVar("BuildDevice", bound=DeviceTag)

Activations = tuple[type | None, ...]
_TEMPLATES: dict[Activations, type[MLP]] = {}


class MLP(
    ComposeKernel[LayerInput, LayerOutput, Dim2, Dim2, Declared[NetElem, NetDevice]],
    Generic[NetElem, NetDevice],
):
    """``LayerInput`` (batch, widths[0]) → ``LayerOutput`` (batch, widths[-1]).

    Sublayers ``fc1`` … ``fcN`` in a chain; ``fc{i}`` is a SingleLayerPerceptron with
    ``PActFuncIs(activations[i-1])``, or a LinearLayer where that activation is None.

    Statically an MLP is ``MLP[elem, device]`` (``MLP.build`` infers both from its
    ``elem`` / ``device`` arguments): its input and output are ``Matrix[elem, device]``,
    so data of another element or device is rejected by mypy and pyright too.
    """

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    activations: ClassVar[Activations] = ()

    @classmethod
    def template_for(cls, activations: Sequence[type | None]) -> type[MLP]:
        """The unconfigured MLP template for these activations (one class per tuple)."""
        acts = tuple(activations)
        if not acts:
            raise _error("an MLP needs at least one layer.", [("activations", "[]")])
        if acts not in _TEMPLATES:
            subs = [
                Sublayer(f"fc{i}", LinearLayer if a is None else SingleLayerPerceptron)
                for i, a in enumerate(acts, 1)
            ]
            links = [
                InternalConnect(f"fc{i}", LayerOutput, f"fc{i + 1}", LayerInput)
                for i in range(1, len(acts))
            ]
            topology = ComposeTopology(
                *subs,
                *links,
                InConnect(LayerInput, "fc1", LayerInput),
                OutConnect(f"fc{len(acts)}", LayerOutput, LayerOutput),
            )
            name = "MLP_" + "_".join("linear" if a is None else a.__name__ for a in acts)
            attrs = {"topology": topology, "activations": acts, "__module__": cls.__module__}
            _TEMPLATES[acts] = type(name, (cls,), attrs)
        return _TEMPLATES[acts]

    @classmethod
    def build(
        cls,
        name: str,
        widths: Sequence[int],
        activations: Sequence[type | None],
        *policies: PolicyItem,
        weight_init: Hashable | None = None,
        bias_init: Hashable | None = None,
        elem: type[BuildElem] = Float32,  # type: ignore[assignment]  # BuildElem defaults to it
        device: type[BuildDevice] = CPU,  # type: ignore[assignment]  # BuildDevice defaults to it
        train: bool = True,
    ) -> MLP[BuildElem, BuildDevice]:
        """A configured MLP layer named ``name``.

        Args:
            widths: ``[fan_in, hidden..., fan_out]``; one more than ``activations``.
            activations: a layer template (``ReLULayer``, ``SigmoidLayer``, ``TanhLayer``,
                ``SoftmaxLayer``...) or None (no activation) per layer.
            *policies: further policies for every sublayer (``SubPolicyContainer("fc2", ...)``
                for one layer); one of the (major, minor) this function sets by default
                (``PUpdate``, ``PFeedbackNoOutput``, ``PElemIs``, ``PDeviceIs``) replaces it.
            weight_init, bias_init: ``PInitializerIs`` keys of every weight and every bias.
            elem, device: of the input, the parameters and the output.
            train: a training layer (``PUpdate``, input ``Matrix[elem, device]``, no input
                gradient) or an inference one.
        """
        if len(widths) != len(activations) + 1 or any(w < 1 for w in widths):
            raise _error(
                "an MLP needs one width per layer boundary: len(widths) == "
                "len(activations) + 1, every width >= 1.",
                [("widths", str(list(widths))), ("activations", str(len(activations)))],
            )
        template = cls.template_for(activations)
        given = {p.key for p in policies if not isinstance(p, SubPolicyContainer)}
        defaults: list[AnyPolicyObject] = [PElemIs(elem), PDeviceIs(device)]
        if train:
            defaults += [PUpdate, PFeedbackNoOutput]
        sub: list[PolicyItem] = [p for p in defaults if p.key not in given]
        for i, act in enumerate(template.activations, 1):
            params: list[PolicyItem] = []
            if weight_init is not None:
                params.append(SubPolicyContainer("weight", PInitializerIs(weight_init)))
            if bias_init is not None:
                params.append(SubPolicyContainer("bias", PInitializerIs(bias_init)))
            if act is not None:
                params = [PActFuncIs(act), SubPolicyContainer("linear", *params)]
            sub.append(SubPolicyContainer(f"fc{i}", *params))
        layer: Any
        if train:
            in_map = LayerInMap({LayerInput: tensor_type(elem, device, 2)})
            layer = make_train_layer(template, in_map, *sub, *policies)
        else:
            layer = make_infer_layer(template, *sub, *policies)
        built: MLP[BuildElem, BuildDevice] = layer(name, widths)
        return built

    def __init__(self, name: str, widths: Sequence[int]) -> None:
        args = self.create_sublayers()
        for i in range(1, len(type(self).activations) + 1):
            args.set(f"fc{i}", widths[i - 1], widths[i])
        super().__init__(name, args)


def _error(headline: str, items: list[tuple[str, str]]) -> LayerError:
    return LayerError(
        message(
            f"cannot build MLP: {headline}",
            items,
            built_at=format_site(user_site()),
            hint="e.g. MLP.build('net', widths=[64, 128, 10], activations=[ReLULayer, None]).",
        )
    )
