"""A model's state from one walk (``model_state``), across the layer catalogue.

Every exported layer is built, trained a few forwards (eager and compiled, as ``fit`` runs
them), saved to a checkpoint, run on, restored and run again: the runs after the save and
after the restore must give the same outputs and leave every attribute of every layer equal
(read generically, so a counter or statistic a layer keeps without reporting it in
``own_state`` fails here). A new layer must join ``CASES`` (the first test fails until it
does), so a stateful layer cannot be forgotten.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import layers
from typed_nn.layers import (
    MLP,
    AttentionMask,
    CellState,
    ComposeKernel,
    DropoutLayer,
    InterpolateLayerLambda,
    InterpolateLayerWeight1,
    InterpolateLayerWeight2,
    Layer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LossLayerWeight,
    Previous,
    RightOperand,
    Sequential,
    UnaryLayer,
    layer_init,
    make_train_layer,
    model_state,
    residual,
    tensor_type,
)
from typed_nn.model import (
    SGD,
    GaussianFiller,
    LoadBuffer,
    ParamInitializer,
    load_checkpoint,
    save_checkpoint,
)
from typed_nn.policies import (
    PActFuncIs,
    PDimArrayIs,
    PInitializerIs,
    PParamTypeIs,
    PSeqIDsAre,
    PUpdate,
    SeqID,
)
from typed_nn.tags import dim_of_rank

H, C = Previous(LayerOutput), Previous(CellState)


@dataclass
class Case:
    """A training layer, initialised, and the inputs it is fed."""

    layer: Any
    inputs: dict[type, object]


def data(*shape: int, seed: int = 0, low: float = 0.2, high: float = 0.9) -> Any:
    values = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    return tn.tensor(values, tn.Float32, tn.CPU, dim_of_rank(len(shape)))


def built(template: Any, inputs: dict[type, object], *args: Any, **kwargs: Any) -> Case:
    """``template`` as a training layer for ``inputs`` (policies in ``kwargs['policies']``),
    made with ``args``, every parameter drawn from one filler."""
    policies = kwargs.pop("policies", ())
    in_map = LayerInMap(
        {
            port: tensor_type(v.elem, v.device, v.rank) if isinstance(v, tn.TensorLike) else float
            for port, v in inputs.items()
        }
    )
    cls = make_train_layer(template, in_map, PUpdate, PInitializerIs("w"), *policies)
    return initialised(cls("m", *args, **kwargs), inputs)


def initialised(layer: Any, inputs: dict[type, object]) -> Case:
    init = ParamInitializer({"w": GaussianFiller(0.0, 0.3, seed=0)})
    layer_init(layer, init, LoadBuffer(tn.Float32, tn.CPU))
    return Case(layer, inputs)


def unary(template: Any, low: float = 0.2, high: float = 0.9) -> Callable[[], Case]:
    return lambda: built(template, {LayerInput: data(4, 3, low=low, high=high)})


def binary(template: Any) -> Callable[[], Case]:
    return lambda: built(template, {LeftOperand: data(4, 3), RightOperand: data(4, 3, seed=1)})


class Block(Sequential[tn.Dim2, tn.Dim2]):
    chain = (("fc", layers.LinearLayer), ("bn", layers.BatchNormLayer), ("drop", DropoutLayer))


class Body(Sequential[tn.Dim2, tn.Dim2]):
    chain = (("fc", layers.LinearLayer), ("drop", DropoutLayer))


def sequence(steps: int = 4, batch: int = 2, width: int = 3) -> Any:
    return data(steps, batch, width, seed=3)


CASES: dict[type, Callable[[], Case]] = {
    **{
        t: unary(t)
        for t in (
            layers.AbsLayer,
            layers.AcosLayer,
            layers.AsinLayer,
            layers.AsinhLayer,
            layers.CosLayer,
            layers.ExpLayer,
            layers.LogLayer,
            layers.ReLULayer,
            layers.SigmoidLayer,
            layers.SinLayer,
            layers.SoftmaxLayer,
            layers.SquareLayer,
            layers.TanLayer,
            layers.TanhLayer,
            layers.TransposeLayer,
        )
    },
    layers.AcoshLayer: unary(layers.AcoshLayer, 1.2, 2.0),
    **{t: binary(t) for t in (layers.AddLayer, layers.SubtractLayer, layers.MultiplyLayer)},
    layers.DotLayer: lambda: built(
        layers.DotLayer, {LeftOperand: data(4, 3), RightOperand: data(3, 5)}
    ),
    layers.InterpolateLayer: lambda: built(
        layers.InterpolateLayer,
        {
            InterpolateLayerWeight1: data(4, 3),
            InterpolateLayerWeight2: data(4, 3, seed=1),
            InterpolateLayerLambda: data(4, 3, seed=2),
        },
    ),
    layers.NLLLossLayer: lambda: built(
        layers.NLLLossLayer, {LayerInput: data(4, 3), LossLayerWeight: data(4, 3, seed=1)}
    ),
    layers.PermuteLayer: lambda: built(
        layers.PermuteLayer, {LayerInput: data(2, 4, 3)}, policies=(PDimArrayIs(2, 0, 1),)
    ),
    layers.ParamSourceLayer: lambda: built(
        layers.ParamSourceLayer, {}, 3, 2, policies=(PParamTypeIs(tn.Matrix),)
    ),
    layers.ValueSourceLayer: lambda: built(layers.ValueSourceLayer, {}, 2.0),
    layers.BiasLayer: lambda: built(layers.BiasLayer, {LayerInput: data(4, 3)}, 3),
    layers.WeightLayer: lambda: built(layers.WeightLayer, {LayerInput: data(4, 3)}, 3, 2),
    layers.LinearLayer: lambda: built(layers.LinearLayer, {LayerInput: data(4, 3)}, 3, 2),
    layers.SingleLayerPerceptron: lambda: built(
        layers.SingleLayerPerceptron,
        {LayerInput: data(4, 3)},
        3,
        2,
        policies=(PActFuncIs(layers.SigmoidLayer),),
    ),
    MLP: lambda: initialised(
        MLP.build("m", [3, 4, 2], [layers.ReLULayer, None], weight_init="w", bias_init="w"),
        {LayerInput: data(4, 3)},
    ),
    layers.GruStep: lambda: built(
        layers.GruStep, {LayerInput: data(4, 3), H: data(4, 5, seed=1)}, 3, 5
    ),
    layers.TorchGruStep: lambda: built(
        layers.TorchGruStep, {LayerInput: data(4, 3), H: data(4, 5, seed=1)}, 3, 5
    ),
    layers.LstmStep: lambda: built(
        layers.LstmStep,
        {LayerInput: data(4, 3), H: data(4, 5, seed=1), C: data(4, 5, seed=2)},
        3,
        5,
    ),
    layers.RecurrentLayer: lambda: built(
        layers.RecurrentLayer,
        {LayerInput: sequence(), H: data(2, 5, seed=1)},
        3,
        5,
        policies=(PActFuncIs(layers.GruStep), PSeqIDsAre(SeqID(LayerInput, 0))),
    ),
    layers.Conv2dLayer: lambda: built(
        layers.Conv2dLayer, {LayerInput: data(2, 2, 5, 5)}, 2, 3, 3, padding=1
    ),
    layers.MaxPool2dLayer: lambda: built(layers.MaxPool2dLayer, {LayerInput: data(2, 2, 4, 4)}, 2),
    layers.AvgPool2dLayer: lambda: built(layers.AvgPool2dLayer, {LayerInput: data(2, 2, 4, 4)}, 2),
    layers.FlattenLayer: lambda: built(layers.FlattenLayer, {LayerInput: data(2, 2, 3, 3)}),
    layers.EmbeddingLayer: lambda: built(
        layers.EmbeddingLayer,
        {LayerInput: tn.tensor(np.array([[0, 3], [2, 1]]), tn.Int64, tn.CPU, tn.Dim2)},
        4,
        3,
    ),
    layers.MultiHeadAttentionLayer: lambda: built(
        layers.MultiHeadAttentionLayer, {LayerInput: data(2, 3, 4)}, 4, 2, causal=True
    ),
    layers.MaskedMultiHeadAttentionLayer: lambda: built(
        layers.MaskedMultiHeadAttentionLayer,
        {LayerInput: data(2, 3, 4), AttentionMask: data(3, 3, seed=1, low=-1.0, high=0.0)},
        4,
        2,
    ),
    layers.BatchNormLayer: lambda: built(layers.BatchNormLayer, {LayerInput: data(8, 3)}, 3),
    layers.LayerNormLayer: lambda: built(layers.LayerNormLayer, {LayerInput: data(4, 3)}, 3),
    DropoutLayer: lambda: built(DropoutLayer, {LayerInput: data(4, 3)}, 0.5, seed=7),
    Sequential: lambda: built(
        Block, {LayerInput: data(8, 3)}, {"fc": (3, 4), "bn": (4,), "drop": (0.5,)}
    ),
    layers.Residual: lambda: built(
        residual(Body), {LayerInput: data(8, 3)}, {"fc": (3, 3), "drop": (0.25,)}
    ),
}
TEMPLATES: tuple[type, ...] = (Layer, UnaryLayer, ComposeKernel)
"""Exported bases that are subclassed, never built themselves."""


def test_every_exported_layer_is_in_the_catalogue() -> None:
    exported = {
        v for v in vars(layers).values() if isinstance(v, type) and issubclass(v, Layer)
    } - set(TEMPLATES)
    missing = sorted(t.__name__ for t in exported - set(CASES))
    assert not missing, f"add these layers to CASES: {missing}"


# --- the round trip -------------------------------------------------------------------------


def forward(case: Case) -> Any:
    """One training forward, its output, and the layer's stacks popped (as ``fit``'s step
    does after its backward)."""
    layer = case.layer
    inputs = layer.input_cont()
    for port, value in case.inputs.items():
        inputs = inputs.set(port, value)
    out = layer.feed_forward(inputs).get(LayerOutput)
    layer.feed_backward(layer.output_cont())
    return out if isinstance(out, tn.TensorLike) else tn.scalar(out, tn.Float32, tn.CPU)


def run(case: Case, step: Callable[[], Any], times: int = 2) -> list[np.ndarray]:
    """``times`` compiled and eager forwards; their outputs."""
    outputs = []
    for _ in range(times):
        outputs.append(step().numpy().copy())
        outputs.append(forward(case).numpy().copy())
    return outputs


TRANSIENT = {"_stacks", "_record", "_param_sources"}
"""Layer attributes that hold nothing between runs (stacks are empty after each forward's
pop; the parameter-source list is derived from the structure)."""


def snapshot(value: object, seen: set[int] | None = None) -> object:
    """Every value ``value`` holds, recursively (layers' attributes, tensors' elements)."""
    seen = set() if seen is None else seen
    if isinstance(value, tn.Tensor):
        return (value.elem.__name__, value.numpy().tolist())
    if isinstance(value, bool | int | float | str | type(None)):
        return value
    if id(value) in seen:
        return "(seen)"
    seen.add(id(value))
    if isinstance(value, Layer):
        items = vars(value).items()
        return {k: snapshot(v, seen) for k, v in items if k not in TRANSIENT}
    if isinstance(value, dict):
        return {repr(k): snapshot(v, seen) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [snapshot(v, seen) for v in value]
    return type(value).__name__  # functions, classes, stacks: structure, not state


def round_trip(case: Case, path: Path) -> None:
    """Run, save, run on; restore, run again: the two runs after the save are the same."""
    step = tn.compile(lambda: forward(case))
    run(case, step)
    save_checkpoint(path, case.layer, SGD(0.1), epoch=0)
    after_save, state_after_save = run(case, step), snapshot(case.layer)
    load_checkpoint(path, case.layer, SGD(0.1))
    after_load, state_after_load = run(case, step), snapshot(case.layer)
    for a, b in zip(after_save, after_load, strict=True):
        np.testing.assert_array_equal(a, b)
    assert state_after_load == state_after_save


@pytest.mark.parametrize("template", list(CASES), ids=[t.__name__ for t in CASES])
def test_every_layer_continues_from_a_checkpoint_as_it_would_have(
    template: type, tmp_path: Path
) -> None:
    round_trip(CASES[template](), tmp_path / "state.ckpt")


class Counting(DropoutLayer):
    """A layer that keeps a counter it does not report: what the round trip must catch."""

    def forward(self, inputs: dict[type, Any]) -> dict[type, Any]:
        self.hidden_count = getattr(self, "hidden_count", 0) + 1
        return super().forward(inputs)


def test_state_a_layer_keeps_without_reporting_it_is_caught(tmp_path: Path) -> None:
    case = built(Counting, {LayerInput: data(4, 3)}, 0.0)
    with pytest.raises(AssertionError):
        round_trip(case, tmp_path / "state.ckpt")


# --- what the walk finds ----------------------------------------------------------------------


def test_the_walk_names_parameters_buffers_and_generators() -> None:
    case = CASES[Sequential]()
    state = model_state(case.layer)
    assert sorted(state.parameters) == ["m/bn/bias", "m/bn/weight", "m/fc/bias", "m/fc/weight"]
    assert sorted(state.buffers) == ["m/bn/running_mean", "m/bn/running_var"]
    assert list(state.generators) == ["m/drop"]
    seed = zlib.crc32(b"m/drop")  # no seed given: its name's (two layers draw apart)
    assert state.generators["m/drop"].read().numpy().tolist() == [seed, 0, 0, 0]
    forward(case)
    assert state.generators["m/drop"].read().numpy().tolist() == [seed, 1, 0, 0]  # one call


def test_a_restored_dropout_state_starts_its_compiled_counter_there() -> None:
    case = CASES[DropoutLayer]()
    (entry,) = model_state(case.layer).generators.values()
    entry.write(np.array([7, 2, 5, 0], np.int64))  # no compiled forward yet: kept for the first
    step = tn.compile(lambda: forward(case))
    step()
    assert entry.read().numpy().tolist() == [7, 2, 6, 0]
    entry.write(np.array([7, 2, 9, 0], np.int64))  # now in the compiled step's own tensor
    step()
    assert entry.read().numpy().tolist() == [7, 2, 10, 0]


def test_a_model_that_is_not_a_layer_has_no_walk() -> None:
    with pytest.raises(
        tn.OperandError,
        match=r"^cannot read the state of a model that is not a typed_nn layer\.\n"
        r"  received : dict\n",
    ):
        model_state({"w": data(2, 2)})


class Twice(DropoutLayer):
    """A layer whose child has its own name: two generators of one name."""

    other: Layer[Any, Any]

    def children(self) -> tuple[Layer[Any, Any], ...]:
        return (self.other,)


def test_two_states_of_one_name_are_an_error() -> None:
    cls = make_train_layer(Twice, LayerInMap({LayerInput: tensor_type(tn.Float32, tn.CPU, 2)}))
    layer = cls("d", 0.5)
    layer.other = cls("d", 0.5)
    with pytest.raises(
        tn.LayerError,
        match=r"^two states of the model are named 'd'\.\n  layer  : d\n  first  : generator\n",
    ):
        model_state(layer)


def _walk_names(layer: Any) -> Iterator[str]:
    yield layer.name
    for child in layer.children():
        yield from _walk_names(child)


def test_children_reach_every_sublayer_of_a_composite() -> None:
    case = CASES[layers.Residual]()
    names = list(_walk_names(case.layer))
    assert names[:3] == ["m", "m", "m/fc"]  # the residual, its body, the body's first layer
    assert {"m/fc/weight", "m/fc/bias", "m/drop", "m/add"} <= set(names)
