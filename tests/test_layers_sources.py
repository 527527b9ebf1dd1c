"""ParamSourceLayer (MetaNN's 8 cases, with small fakes for the model side) and
ValueSourceLayer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn.data.tensor import AnyTensor
from typed_nn.layers import (
    LayerInMap,
    LayerOutput,
    ParamSourceLayer,
    ValueSourceLayer,
    layer_grad_collect,
    layer_init,
    layer_save_weights,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.policies import (
    PElemIs,
    PInitializerIs,
    PNoUpdate,
    PParamTypeIs,
    PUpdate,
    PValueTypeIs,
)


class Filler:
    def __init__(self, value: float) -> None:
        self.value = value

    def fill(self, data: tn.Tensor[Any, Any, Any]) -> None:
        data.array[...] = self.value


class Initializer:
    """A fake ParamInitializer: a name map, stored parameters and fillers by key."""

    def __init__(
        self, params: dict[str, Any] | None = None, fillers: dict[object, Filler] | None = None
    ) -> None:
        self.params = params or {}
        self.fillers = fillers or {}
        self.name_map: dict[str, str] = {}

    def layer_name_to_param_name(self, layer_name: str) -> str:
        for prefix in sorted(self.name_map, reverse=True):
            if layer_name.startswith(prefix):
                return self.name_map[prefix] + layer_name[len(prefix) :]
        return layer_name

    def is_param_exist(self, name: str) -> bool:
        return name in self.params

    def get_param(self, name: str, dst: AnyTensor) -> None:
        assert isinstance(dst, tn.Tensor)
        dst.array[...] = self.params[name]

    def get_filler(self, key: object) -> Filler:
        return self.fillers[key]


class LoadBuffer:
    def __init__(self) -> None:
        self.data: dict[str, AnyTensor] = {}

    def try_get(self, name: str) -> AnyTensor | None:
        return self.data.get(name)

    def set(self, name: str, data: AnyTensor) -> None:
        assert name not in self.data, f"Duplicate parameter with name: {name}"
        self.data[name] = data


class Collector:
    def __init__(self) -> None:
        self.collected: list[tuple[str, AnyTensor, AnyTensor]] = []

    def collect(self, name: str, weight: AnyTensor, grad: AnyTensor) -> None:
        self.collected.append((name, weight, grad))


class Init:
    """Filler key."""


M: object = tn.Matrix  # rank from the alias; element and device from ParamPolicy
_EMPTY = LayerInMap({})


def param(*policies: Any) -> Any:
    return make_infer_layer(ParamSourceLayer, PParamTypeIs(M), PInitializerIs(Init), *policies)


def trainable(*policies: Any) -> Any:
    return make_train_layer(
        ParamSourceLayer, _EMPTY, PParamTypeIs(M), PInitializerIs(Init), *policies
    )


def test_init_from_initializer_data_with_name_map() -> None:
    init = Initializer(params={"net/w": np.arange(6.0).reshape(2, 3)})
    init.name_map["model/"] = "net/"
    buffer = LoadBuffer()
    layer = param()("model/w", 2, 3)
    layer_init(layer, init, buffer)
    assert layer.param_name == "net/w"
    out = layer.feed_forward(layer.input_cont()).get(LayerOutput)
    np.testing.assert_array_equal(out.numpy(), np.arange(6.0).reshape(2, 3))
    assert out.elem is tn.Float32
    assert buffer.data["net/w"] is out


def test_init_from_filler_and_missing_initializer() -> None:
    layer = param(PElemIs(tn.Float64))("w", 2, 2)
    layer.init(Initializer(fillers={Init: Filler(1.5)}), LoadBuffer())
    out = layer.feed_forward(layer.input_cont()).get(LayerOutput)
    assert out.elem is tn.Float64
    np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 1.5))
    bare = make_infer_layer(ParamSourceLayer, PParamTypeIs(M))("w", 2, 2)
    with pytest.raises(tn.LayerError, match=r"Cannot get the initializer for layer: w \(w\)"):
        bare.init(Initializer(), LoadBuffer())


def test_init_from_load_buffer_shares_the_tensor() -> None:
    buffer = LoadBuffer()
    shared = t32(np.ones((2, 3)))
    buffer.set("w", shared)
    layer = param()("w", 2, 3)
    layer.init(Initializer(fillers={Init: Filler(9.0)}), buffer)
    assert layer.feed_forward(layer.input_cont()).get(LayerOutput) is shared
    wrong = param()("w", 3, 2)
    with pytest.raises(
        tn.LayerError, match=r"(?s)Load parameter error: shape mismatch.*declared +: \(3, 2\)"
    ):
        wrong.init(Initializer(), buffer)


def test_forward_before_init_and_wrong_rank() -> None:
    layer = param()("w", 2, 3)
    with pytest.raises(tn.LayerError, match="layer 'w' has no parameter yet"):
        layer.feed_forward(layer.input_cont())
    typed = make_infer_layer(ParamSourceLayer, PParamTypeIs(tn.Matrix[tn.Float32, tn.CPU]))
    with pytest.raises(tn.LayerError, match=r"(?s)the shape has 1 dims.*declared : rank 2"):
        typed("w", 3)


def test_param_type_is_required() -> None:
    with pytest.raises(tn.LayerError, match=r"Use PParamTypeIs\(...\) to set parameter type."):
        make_infer_layer(ParamSourceLayer)
    with pytest.raises(tn.LayerError, match="is not a data type"):
        make_infer_layer(ParamSourceLayer, PParamTypeIs(int))
    with pytest.raises(tn.LayerError, match="ask for updates"):
        make_infer_layer(ParamSourceLayer, PParamTypeIs(M), PUpdate)


def test_no_update_keeps_no_gradient() -> None:
    L = trainable(PNoUpdate)
    assert not L.is_update
    assert not L.is_feedback_output
    layer = L("w", 2, 2)
    layer.init(Initializer(fillers={Init: Filler(0.0)}), LoadBuffer())
    grads = layer.feed_backward(layer.output_cont().set(LayerOutput, t32(np.ones((2, 2)))))
    assert grads.keys == ()
    collector = Collector()
    layer_grad_collect(layer, collector)
    assert collector.collected == []
    layer.neutral_invariant()


def test_update_collects_the_sum_of_gradients() -> None:
    L = trainable(PUpdate)
    assert L.is_update
    layer = L("w", 2, 2)
    layer.init(Initializer(fillers={Init: Filler(0.0)}), LoadBuffer())
    for n in range(1, 4):
        layer.feed_forward(layer.input_cont())
        layer.feed_backward(layer.output_cont().set(LayerOutput, t32(np.full((2, 2), float(n)))))
    with pytest.raises(tn.LayerError, match=r"Stack is not empty: layer 'w' still holds 3 value"):
        layer.neutral_invariant()
    collector = Collector()
    layer.grad_collect(collector)
    ((name, weight, grad),) = collector.collected
    assert name == "w"
    assert weight is layer.data
    np.testing.assert_array_equal(grad.numpy(), np.full((2, 2), 6.0))
    layer.neutral_invariant()
    with pytest.raises(tn.LayerError, match=r"Parameter and its grad shape mismatch\."):
        layer.feed_backward(layer.output_cont().set(LayerOutput, t32(np.ones((2, 3)))))


def test_dummy_grad_stores_nothing() -> None:
    layer = trainable(PUpdate)("w", 2, 2)
    layer.init(Initializer(fillers={Init: Filler(0.0)}), LoadBuffer())
    assert layer.feed_backward(layer.output_cont()).keys == ()
    layer.neutral_invariant()


def test_zero_tensor_parameter_is_built_at_once_and_never_updated() -> None:
    L = make_train_layer(ParamSourceLayer, _EMPTY, PParamTypeIs(tn.ZeroTensor), PUpdate)
    assert not L.is_update
    layer = L("zero", 2, 3)
    layer_init(layer, Initializer(), LoadBuffer())  # nothing to initialize
    out = layer.feed_forward(layer.input_cont()).get(LayerOutput)
    assert isinstance(out, tn.ZeroTensor)
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3), np.float32))


def test_save_weights() -> None:
    layer = param()("w", 1, 2)
    buffer = LoadBuffer()
    layer.init(Initializer(fillers={Init: Filler(1.0)}), buffer)
    layer_save_weights(layer, buffer)  # the same tensor is already there: nothing to do
    saver = LoadBuffer()
    saver.set("w", t32(np.ones((1, 2))))
    with pytest.raises(tn.LayerError, match="Duplicate save for data: w"):
        layer.save_weights(saver)


def test_value_source_converts_by_policy() -> None:
    floats = make_infer_layer(ValueSourceLayer)("v", 1.5)
    assert floats.feed_forward(floats.input_cont()).get(LayerOutput) == 1.5
    ints = make_infer_layer(ValueSourceLayer, PValueTypeIs(int))("v", 1.5)  # MetaNN: 1.5f -> 1
    value = ints.feed_forward(ints.input_cont()).get(LayerOutput)
    assert value == 1
    assert isinstance(value, int)
    tagged = make_infer_layer(ValueSourceLayer, PValueTypeIs(tn.Float64))("v", 2.5)
    scalar = tagged.feed_forward(tagged.input_cont()).get(LayerOutput)
    assert isinstance(scalar, tn.Tensor)
    assert scalar.elem is tn.Float64
    assert scalar.value() == 2.5
    assert tagged.feed_backward(tagged.output_cont()).keys == ()


def test_bare_tensor_type_takes_rank_from_the_shape() -> None:
    L = make_infer_layer(ParamSourceLayer, PParamTypeIs(tn.Tensor), PInitializerIs(Init))
    assert L.rank is None
    layer = L("t", 2, 3, 4)
    layer.init(Initializer(fillers={Init: Filler(2.0)}), LoadBuffer())
    out = layer.feed_forward(layer.input_cont()).get(LayerOutput)
    assert out.shape == (2, 3, 4)
    assert isinstance(out, tn.Tensor)
