"""Layers with no inputs: ``ParamSourceLayer`` (a trainable parameter) and ``ValueSourceLayer``
(a constant). MetaNN ``others/param_source_layer.h`` and ``value_source_layer.h``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, ClassVar, Never, SupportsIndex

from ..data.factories import tensor, zeros
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import LayerError, message
from ..ops.dynamic import make_dynamic
from ..ops.node import format_site, user_site
from ..ops.special import ZeroTensor
from ..policies import (
    GradPolicy,
    ParamPolicy,
    PolicyContainer,
    ValueSourcePolicy,
    has_policy,
    policy_select,
)
from ..shape import format_shape
from ..tags import CPU, DeviceTag, Dim0, DimTag, ElemTag, Float32, tag_name
from . import derived
from .in_map import tagged_parts
from .keys import LayerOutput
from .model_protocols import GradCollectorLike, InitializerLike, LoadBufferLike, SaverLike
from .protocol import Layer
from .stacks import LayerStack
from .state_entry import StateEntry, StateKind, tensor_entry
from .var_type_dict import VarValues

__all__ = ["ParamSourceLayer", "ValueSourceLayer"]


def _error(headline: str, items: list[tuple[str, str]], hint: str) -> LayerError:
    return LayerError(message(headline, items, built_at=format_site(user_site()), hint=hint))


def _tag(arg: object, base: type, fallback: object) -> Any:
    return arg if isinstance(arg, type) and issubclass(arg, base) else fallback


def check_sizes(layer: str, sizes: Mapping[str, object], hint: str) -> tuple[int, ...]:
    """The sizes given to layer ``layer``'s constructor as Python ints, or a LayerError naming
    the first that is not an int >= 1 (numpy integers count; bools, floats, strings do not)."""
    checked = []
    for what, value in sizes.items():
        size = None
        if isinstance(value, SupportsIndex) and not isinstance(value, bool):
            size = operator.index(value)
        if size is None or size < 1:
            raise _error(
                f"cannot create layer '{layer}': {what} must be an int >= 1, got {value!r}.",
                [("layer", layer)],
                hint,
            )
        checked.append(size)
    return tuple(checked)


class ParamSourceLayer(Layer[Never, LayerOutput]):
    """Outputs its parameter. Policies: ``PParamTypeIs(...)`` (required: ``tn.Matrix``,
    ``tn.Matrix[Float32, CPU]``, ``tn.Tensor``, ``tn.ZeroTensor``, ...), ``PInitializerIs(key)``,
    ``PElemIs`` / ``PDeviceIs`` (when the type does not fix them) and ``PUpdate``.

    Instances take a name and the parameter's shape: ``L("fc/weight", 784, 128)``. A principal
    parameter is allocated by ``init``; a ``ZeroTensor`` one is built at once and never updated.
    """

    stacks: ClassVar[tuple[str, ...]] = ("grad",)
    kind: ClassVar[type] = Tensor
    elem: ClassVar[type[ElemTag]] = Float32
    device: ClassVar[type[DeviceTag]] = CPU
    rank: ClassVar[int | None] = None
    principal: ClassVar[bool] = True
    initializer_key: ClassVar[object] = None

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        if not has_policy(policies, ParamPolicy, "param_type"):
            raise _error(
                f"cannot configure {cls.__name__}: no parameter type.",
                [("policies", repr(policies))],
                "Use PParamTypeIs(...) to set parameter type.",
            )
        param = policy_select(ParamPolicy, policies)
        declared = param.param_type
        origin, args = tagged_parts(declared) or (declared, (None, None, None))
        if not (isinstance(origin, type) and issubclass(origin, TensorLike)) or len(args) != 3:
            raise _error(
                f"cannot configure {cls.__name__}: {declared!r} is not a data type.",
                [("received", repr(declared))],
                "use PParamTypeIs(tn.Matrix), PParamTypeIs(tn.Matrix[tn.Float32, tn.CPU]) or "
                "PParamTypeIs(tn.ZeroTensor).",
            )
        cls.kind = Tensor if origin is TensorLike else origin
        cls.principal = issubclass(cls.kind, Tensor)
        cls.elem = _tag(args[0], ElemTag, param.elem or Float32)
        cls.device = _tag(args[1], DeviceTag, param.device or CPU)
        dim = _tag(args[2], DimTag, None)
        cls.rank = dim.rank if dim is not None else None
        cls.initializer_key = param.initializer
        cls.is_update = cls.principal and policy_select(GradPolicy, policies).is_update
        cls.is_feedback_output = False

    def __init__(self, name: str, *shape: int) -> None:
        super().__init__(name)
        cls = type(self)
        dims = {f"dim {i} of its shape": size for i, size in enumerate(shape)}
        shape = check_sizes(
            name, dims, "give the parameter's shape as ints >= 1, e.g. L(name, 3, 4)."
        )
        if cls.rank is not None and len(shape) != cls.rank:
            raise _error(
                f"cannot create layer '{name}': the shape has {len(shape)} dims.",
                [("layer", name), ("declared", f"rank {cls.rank}"), ("received", str(shape))],
                f"give {cls.rank} sizes, e.g. L(name, {', '.join(['3'] * cls.rank)}).",
            )
        self.shape = shape
        self.param_name = name
        self._record = LayerStack(name, "forward", active=False)  # the forward is the parameter
        self.data: AnyTensor | None = None
        if not cls.principal:
            self.data = ZeroTensor(shape, cls.elem, cls.device)

    def repr_details(self) -> list[str]:
        cls = type(self)
        return [
            f"{cls.kind.__name__}[{tag_name(cls.elem)}, {tag_name(cls.device)}, Dim{len(self.shape)}]{format_shape(self.shape)}"
        ]

    def _param(self) -> AnyTensor:
        if self.data is None:
            raise _error(
                f"layer '{self.name}' has no parameter yet.",
                [("layer", self.name)],
                "call layer_init(layer, initializer, load_buffer) first.",
            )
        return self.data

    def init(self, initializer: InitializerLike, load_buffer: LoadBufferLike) -> None:
        """Load (shared), copy from the initializer, or fill; then record in ``load_buffer``."""
        if not type(self).principal:
            return
        name = self.param_name = initializer.layer_name_to_param_name(self.name)
        found = load_buffer.try_get(name)
        if found is not None:
            if found.shape != self.shape:
                raise _error(
                    "Load parameter error: shape mismatch.",
                    [
                        ("layer", self.name),
                        ("parameter", name),
                        ("declared", str(self.shape)),
                        ("received", found.describe()),
                    ],
                    "load a parameter of the layer's shape, or fix the layer's shape.",
                )
            self.data = found
            return
        data: AnyTensor = zeros(self.shape, type(self).elem, type(self).device)
        self._fill(initializer, name, data)
        load_buffer.set(name, data)
        self.data = data

    def _fill(self, initializer: InitializerLike, name: str, data: AnyTensor) -> None:
        """Copy the initializer's preset parameter ``name`` into ``data``, else fill it with
        the filler of ``PInitializerIs(key)``."""
        if initializer.is_param_exist(name):
            initializer.get_param(name, data)
        elif type(self).initializer_key is None:
            raise _error(
                f"Cannot get the initializer for layer: {self.name} ({name})",
                [("layer", self.name), ("parameter", name)],
                "set one with PInitializerIs(key), or give the initializer that parameter.",
            )
        else:
            initializer.get_filler(type(self).initializer_key).fill(data)  # type: ignore[arg-type]

    def save_weights(self, saver: SaverLike) -> None:
        """Record the parameter under its name; a different tensor there already is an error."""
        if not type(self).principal:
            return
        data = self._param()
        existing = saver.try_get(self.param_name)
        if existing is not None:
            if existing is data:
                return
            raise _error(
                f"Duplicate save for data: {self.param_name}",
                [("layer", self.name), ("parameter", self.param_name)],
                "give each parameter layer its own name (or share one tensor).",
            )
        saver.set(self.param_name, data)

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        return {LayerOutput: derived.param_value(self, self._param())}

    def _find_param_sources(self) -> list[Layer[Any, Any]]:
        return [self] if type(self).principal else []  # a ZeroTensor one is never updated

    def own_state(self) -> list[StateEntry]:
        """The parameter, once allocated (``init``): trained with ``PUpdate``, else a buffer
        (batch-norm statistics, a frozen weight); a ``ZeroTensor`` one is no state."""
        if not type(self).principal or not isinstance(self.data, Tensor):
            return []
        kind: StateKind = "parameter" if type(self).is_update else "buffer"
        return [tensor_entry(self.param_name, kind, self.data)]

    def drop_stacks(self) -> None:
        """Nothing: a forward stores nothing here (the grad stack fills in backwards)."""

    # A source has no inputs; its output's type comes from PParamTypeIs, a run-time policy.
    def feed_forward(self, inputs: VarValues[Never, object]) -> VarValues[LayerOutput, AnyTensor]:
        """``LayerOutput`` = the parameter (the tensor itself)."""
        return self._feed_forward(inputs)

    def feed_backward(self, grads: VarValues[LayerOutput, AnyTensor]) -> VarValues[Never, Never]:
        """Keep the gradient for ``grad_collect`` (when updated: the vjp of the forward, which
        is the gradient itself); returns an empty container. As in MetaNN, no feed_forward
        needs to come first: the forward (the parameter) is known without a record."""
        self._check_container(grads, self.output_ports, "feed_backward")
        params = ((self, self._param()),) if type(self).is_update else ()
        outputs: dict[type, object] = {LayerOutput: self.data}
        return self._vjp_of(derived.ForwardRecord((), params, outputs), grads)

    def checked_grad(self, port: type, grad: Any, output: Any) -> Any:
        if isinstance(grad, TensorLike):
            self._check_grad(grad)
        return grad

    def keep_grad(self, grad: AnyTensor) -> None:
        """Keep ``grad`` (the parameter's shape) for ``grad_collect``; a layer that does not
        update keeps nothing."""
        if not type(self).is_update:
            return
        self._check_grad(grad)
        self.stack("grad").push(make_dynamic(grad))

    def _check_grad(self, grad: AnyTensor) -> None:
        data = self._param()
        if grad.shape != data.shape:
            raise _error(
                "Parameter and its grad shape mismatch.",
                [
                    ("layer", self.name),
                    ("parameter", data.describe()),
                    ("grad", grad.describe()),
                ],
                "feed back a gradient of the parameter's shape.",
            )

    def grad_collect(self, collector: GradCollectorLike) -> None:
        """Hand the sum of the kept gradients to ``collector`` and empty the stack."""
        stack = self.stack("grad")
        if not len(stack):
            return
        total = stack.pop()
        while len(stack):
            total = stack.pop() + total  # type: ignore[operator]  # kept gradients are data
        assert isinstance(total, TensorLike)
        collector.collect(self.param_name, self._param(), total)


class ValueSourceLayer(Layer[Never, LayerOutput]):
    """Outputs a constant ``value_type(value)`` (``PValueTypeIs``: float by default, int, or an
    element tag for a CPU scalar tensor)."""

    value_type: ClassVar[type] = float

    @classmethod
    def configure(cls, policies: PolicyContainer) -> None:
        super().configure(policies)
        cls.value_type = policy_select(ValueSourcePolicy, policies).value_type

    def __init__(self, name: str, value: float) -> None:
        super().__init__(name)
        kind: Any = type(self).value_type  # a number type or an element tag, read from policy
        # tensor(), not scalar(): a float value for an integer tag is a run-time check here
        self.value: object = (
            tensor(value, kind, CPU, Dim0) if issubclass(kind, ElemTag) else kind(value)
        )

    def forward(self, inputs: dict[type, Any]) -> dict[type, Any]:
        return {LayerOutput: self.value}

    def feed_forward(self, inputs: VarValues[Never, object]) -> VarValues[LayerOutput, object]:
        """``LayerOutput`` = the converted value."""
        return self._feed_forward(inputs)

    def feed_backward(self, grads: VarValues[LayerOutput, object]) -> VarValues[Never, Never]:
        """Nothing to feed back: an empty container."""
        return self._feed_backward(grads)
