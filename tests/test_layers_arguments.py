"""What layers accept when they are made and fed, across the catalogue: sizes are ints >= 1
(numpy integers too) checked when the layer is made, naming the argument; rates and other
numbers may be numpy numbers; a layer with no declared input types still takes typed_nn
data only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import layers
from typed_nn.layers import LayerInput, LayerOutput, make_infer_layer
from typed_nn.model import ConstantFiller, LoadBuffer, ParamInitializer
from typed_nn.policies import PInitializerIs, PParamTypeIs

Make = Callable[[Any], Any]

SIZED: dict[str, tuple[str, Make]] = {
    "linear fan_in": ("fan_in", lambda n: make_infer_layer(layers.LinearLayer)("x", n, 3)),
    "linear fan_out": ("fan_out", lambda n: make_infer_layer(layers.LinearLayer)("x", 3, n)),
    "batch norm": ("num_features", lambda n: make_infer_layer(layers.BatchNormLayer)("x", n)),
    "layer norm": ("dim", lambda n: make_infer_layer(layers.LayerNormLayer)("x", n)),
    "embedding": ("num_embeddings", lambda n: make_infer_layer(layers.EmbeddingLayer)("x", n, 3)),
    "lstm fan_in": ("fan_in", lambda n: make_infer_layer(layers.LstmStep)("x", n, 3)),
    "lstm hidden": ("hidden", lambda n: make_infer_layer(layers.LstmStep)("x", 3, n)),
    "gru hidden": ("hidden", lambda n: make_infer_layer(layers.TorchGruStep)("x", 3, n)),
    "attention d_model": (
        "d_model",
        lambda n: make_infer_layer(layers.MultiHeadAttentionLayer)("x", n, 1),
    ),
    "attention n_heads": (
        "n_heads",
        lambda n: make_infer_layer(layers.MultiHeadAttentionLayer)("x", 4, n),
    ),
}


@pytest.mark.parametrize("bad", [0, -3, 2.5, "4", True, None])
@pytest.mark.parametrize("case", list(SIZED))
def test_sizes_that_are_not_ints_of_at_least_one_are_rejected_when_made(
    case: str, bad: object
) -> None:
    what, make = SIZED[case]
    with pytest.raises(
        tn.LayerError,
        match=rf"cannot create layer 'x': {what} must be an int >= 1, got {bad!r}\.",
    ):
        make(bad)


@pytest.mark.parametrize("case", list(SIZED))
def test_numpy_integer_sizes_are_sizes(case: str) -> None:
    _, make = SIZED[case]
    make(np.int64(4))


def test_a_parameter_source_checks_its_shape() -> None:
    source = make_infer_layer(layers.ParamSourceLayer, PParamTypeIs(tn.Matrix))
    with pytest.raises(
        tn.LayerError,
        match=r"cannot create layer 'w': dim 1 of its shape must be an int >= 1, got 0\.",
    ):
        source("w", 3, 0)


@pytest.mark.parametrize("rate", [0.5, np.float32(0.5), np.float64(0.25), np.int64(0)])
def test_dropout_rates_may_be_numpy_numbers(rate: Any) -> None:
    layer = make_infer_layer(layers.DropoutLayer)("d", rate)
    assert isinstance(layer.rate, float)
    assert layer.rate == float(rate)


@pytest.mark.parametrize("rate", [np.float32(1.0), np.bool_(False), np.float64("nan")])
def test_numpy_rates_outside_zero_one_are_rejected(rate: Any) -> None:
    with pytest.raises(tn.LayerError, match=r"the dropout rate must be in \[0, 1\)"):
        make_infer_layer(layers.DropoutLayer)("d", rate)


def test_batch_norm_takes_a_numpy_momentum() -> None:
    momentum: Any = np.float32(0.25)  # an untyped caller's numpy number
    layer = make_infer_layer(layers.BatchNormLayer)("b", 3, momentum=momentum)
    assert layer.momentum == 0.25


def _initialised(layer: Any) -> Any:
    layer.init(ParamInitializer({"w": ConstantFiller(0.1)}), LoadBuffer(tn.Float32, tn.CPU))
    return layer


UNDECLARED: dict[str, Callable[[], tuple[Any, tuple[int, ...]]]] = {
    "conv": lambda: (
        _initialised(make_infer_layer(layers.Conv2dLayer, PInitializerIs("w"))("c", 1, 2, 3)),
        (1, 1, 5, 5),
    ),
    "max pool": lambda: (make_infer_layer(layers.MaxPool2dLayer)("c", 2), (1, 1, 4, 4)),
    "batch norm": lambda: (_initialised(make_infer_layer(layers.BatchNormLayer)("c", 3)), (4, 3)),
    "layer norm": lambda: (_initialised(make_infer_layer(layers.LayerNormLayer)("c", 3)), (4, 3)),
    "dropout": lambda: (make_infer_layer(layers.DropoutLayer)("c", 0.5), (4, 3)),
    "relu": lambda: (make_infer_layer(layers.ReLULayer)("c"), (4, 3)),
}


@pytest.mark.parametrize("case", list(UNDECLARED))
def test_a_layer_with_no_declared_inputs_takes_typed_nn_data_only(case: str) -> None:
    layer, shape = UNDECLARED[case]()
    for raw in (np.zeros(shape, np.float32), np.zeros(shape).tolist()):
        with pytest.raises(
            tn.OperandError,
            match=r"(?s)cannot feed layer 'c': port LayerInput takes typed_nn data\..*"
            r"hint: wrap arrays with tn.tensor",
        ):
            layer.feed_forward(layer.input_cont().set(LayerInput, raw))
    y = layer.feed_forward(layer.input_cont().set(LayerInput, t32(np.ones(shape))))
    assert isinstance(y.get(LayerOutput), tn.TensorLike)


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_attention_causal_is_a_bool(bad: object) -> None:
    """ "yes" was taken as True."""
    with pytest.raises(
        tn.LayerError, match=rf"cannot create layer 'x': causal must be True or False, got {bad!r}"
    ):
        make_infer_layer(layers.MultiHeadAttentionLayer)("x", 4, 2, causal=bad)  # type: ignore[arg-type]
    make_infer_layer(layers.MultiHeadAttentionLayer)("x", 4, 2, causal=np.bool_(True))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "layer", "problem"),
    [
        ("a", 3, "its layer must be a layer template"),
        ("a/b", layers.AddLayer, "its name must be a non-empty str without '/'"),
        ("", layers.AddLayer, "its name must be a non-empty str"),
    ],
)
def test_a_sublayer_declaration_is_checked(name: str, layer: Any, problem: str) -> None:
    """``Sublayer("a", 3)`` was an AttributeError when the topology was built."""
    from typed_nn.errors import TopologyError

    with pytest.raises(TopologyError, match=rf"cannot declare Sublayer\({name!r}, .*\): {problem}"):
        layers.Sublayer(name, layer)
