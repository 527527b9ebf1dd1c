"""``Declared[E, Dv]``: a layer class's type argument naming what it is declared for, checked
against its input map at run time (the static side is in tests/static/*layer_types*.py)."""

from __future__ import annotations

import typing
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn.layers import (
    AddLayer,
    ComposeKernel,
    Declared,
    DeclaredValues,
    Layer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    RightOperand,
    SigmoidLayer,
    Undeclared,
    VarValues,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.model import ConstantFiller, LoadBuffer, ParamInitializer
from typed_nn.policies import PInitializerIs, PUpdate

M32 = tn.Matrix[tn.Float32, tn.CPU]
M64 = tn.Matrix[tn.Float64, tn.CPU]


def test_a_declared_subscription_configures_its_template() -> None:
    policies = (PUpdate, PInitializerIs("w"))
    plain = make_train_layer(LinearLayer, LayerInMap({LayerInput: M32}), *policies)
    declared = make_train_layer(
        LinearLayer[Declared[tn.Float32, tn.CPU]], LayerInMap({LayerInput: M32}), *policies
    )
    assert declared is plain  # the same configured class: the argument is for the checkers
    assert declared.template is LinearLayer
    layer = declared("fc", 3, 2)
    layer.init(ParamInitializer({"w": ConstantFiller(0.5)}), LoadBuffer(tn.Float32, tn.CPU))
    x = tn.zeros((4, 3), tn.Float32, tn.CPU)
    cont = layer.input_cont().set(LayerInput, x)
    assert isinstance(cont, DeclaredValues)
    assert layer.feed_forward(cont).get(LayerOutput).shape == (4, 2)


def test_number_ports_do_not_count_against_the_declaration() -> None:
    in_map = LayerInMap({LeftOperand: M64, RightOperand: float})
    add = make_train_layer(AddLayer[Declared[tn.Float64, tn.CPU]], in_map)("add")
    x = tn.tensor(np.ones((2, 2)), tn.Float64, tn.CPU, tn.Dim2)
    out = add.feed_forward(add.input_cont().set(LeftOperand, x).set(RightOperand, 2.0))
    assert np.allclose(out.get(LayerOutput).numpy(), 3.0)


def test_a_declaration_that_contradicts_the_map_is_rejected() -> None:
    with pytest.raises(tn.LayerError) as err:
        make_train_layer(SigmoidLayer[Declared[tn.Float32, tn.CPU]], LayerInMap({LayerInput: M64}))
    text = str(err.value)
    assert "cannot make a train SigmoidLayer: it is declared for Float32 CPU data" in text
    assert "port LayerInput is declared TensorLike[Float64, CPU, Dim2]" in text
    assert "make the type argument and the input map agree" in text


def test_an_inference_layer_takes_a_subscription_and_any_container() -> None:
    act = make_infer_layer(SigmoidLayer[Declared[tn.Float32, tn.CPU]])("act")
    assert type(act).template is SigmoidLayer
    cont = act.input_cont()
    assert type(cont) is VarValues  # nothing declared at run time: no input map


def test_run_time_subscriptions_fill_in_the_defaults() -> None:
    args: tuple[Any, ...] = typing.get_args(ComposeKernel[LayerInput, LayerOutput])
    assert args == (LayerInput, LayerOutput, Any, Any, Undeclared)
    assert typing.get_args(Layer[LayerInput, LayerOutput]) == (LayerInput, LayerOutput, Undeclared)
    assert (
        typing.get_args(SigmoidLayer[Declared[tn.Float32, tn.CPU]])[0]
        == Declared[tn.Float32, tn.CPU]
    )


def test_a_declared_train_layer_still_checks_its_inputs_at_run_time() -> None:
    act = make_train_layer(SigmoidLayer, LayerInMap({LayerInput: M32}))("act")
    x64: Any = tn.zeros((2, 2), tn.Float64, tn.CPU)  # what the checkers reject, at run time
    with pytest.raises(tn.ElemTypeError, match="cannot feed layer 'act': port LayerInput"):
        act.feed_forward(act.input_cont().set(LayerInput, x64))
