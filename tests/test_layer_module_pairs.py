"""Each layer template MetaNN never had and its ``typed_nn.nn`` module are one computation
(issue 39, item 8): given the same parameters, under the documented name and layout mapping
(docs/layers.md: the steps' and attention's dense weights are PyTorch's transposed), they give
the same outputs and the same gradients — the template's from its own ``feed_backward`` and
``grad_collect``, the module's from ``tn.grad``. Their input checks are shared too, so a
mistake reads the same through either."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import Any

import numpy as np
import pytest
from composite_helpers import collect, init_params
from helpers import Array, assert_close, layer_feed, t64

import typed_nn as tn
from typed_nn import nn, ops
from typed_nn.layers import (
    AvgPool2dLayer,
    BatchNormLayer,
    CellState,
    Conv2dLayer,
    EmbeddingLayer,
    FlattenLayer,
    LayerInMap,
    LayerInput,
    LayerNormLayer,
    LayerOutput,
    LstmStep,
    MaxPool2dLayer,
    MultiHeadAttentionLayer,
    Previous,
    TorchGruStep,
    make_train_layer,
    model_state,
)
from typed_nn.model import LoadBuffer, ParamInitializer
from typed_nn.policies import PElemIs, PFeedbackOutput, PUpdate

I4 = tn.Tensor[tn.Float64, tn.CPU, tn.Dim4]
T3 = tn.Tensor3[tn.Float64, tn.CPU]
M = tn.Matrix[tn.Float64, tn.CPU]
RNG = np.random.default_rng(39)


def close(actual: Array, desired: Array) -> None:
    """Float64 closeness: the same computation, so only the order of sums may differ."""
    assert_close(actual, desired, tn.Float64)


def _rand(*shape: int) -> Array:
    return RNG.standard_normal(shape)


def _train(template: Any, ports: dict[type, Any], *args: Any, **kwargs: Any) -> Any:
    """A Float64 training layer that updates and feeds back, named ``L``."""
    cls = make_train_layer(
        template, LayerInMap(ports), PElemIs(tn.Float64), PUpdate, PFeedbackOutput
    )
    return cls("L", *args, **kwargs)


Mapping = dict[str, tuple[str, bool]]
"""Module field -> (the template's parameter name, whether the module holds it transposed)."""


def _compare(
    layer: Any,
    params: dict[str, Array],
    module: Any,
    mapping: Mapping,
    inputs: dict[type, Array],
    call: Callable[[dict[type, Any]], dict[type, Any]],
    buffers: dict[str, Array] | None = None,
) -> None:
    """Load ``params`` into the template and, through ``mapping`` (plus ``buffers``), into
    the module; feed both ``inputs`` (``call`` maps the module's result to the template's
    output ports), then compare the outputs, the input gradients and the parameter gradients
    of sum(G * outputs)."""
    if params:
        init_params(layer, params)
    state = {key: params[name].T if t else params[name] for key, (name, t) in mapping.items()}
    nn.load_state_dict(module, {**state, **(buffers or {})})
    xs = {port: t64(value) for port, value in inputs.items()}
    ours = layer_feed(layer, inputs)
    theirs = call(xs)
    gs = {port: _rand(*theirs[port].shape) for port in theirs}
    cont = layer.output_cont()
    for port, out in theirs.items():
        close(ours.get(port).numpy(), tn.evaluate(out).numpy())
        cont = cont.set(port, t64(gs[port]))
    back = layer.feed_backward(cont)
    loss: Any = sum(ops.reduce_sum(out * t64(gs[port])) for port, out in theirs.items())
    for port, x in xs.items():
        close(back.get(port).numpy(), tn.evaluate(tn.grad(loss, x)).numpy())
    if params:
        layer_grads = collect(layer)
        module_grads = tn.grad(loss, module)
        assert sorted(name for name, _ in mapping.values()) == sorted(layer_grads)  # all compared
        for key, (name, transposed) in mapping.items():
            # by path, not nn.named_parameters: that lists a tensor once, and the LSTM's two
            # biases get one gradient node (they are summed first)
            want = tn.evaluate(reduce(getattr, key.split("."), module_grads)).numpy()
            close(layer_grads[name], want.T if transposed else want)


def _same(*names: str) -> Mapping:
    """Fields named as the template's parameters (under ``L/``), in the same layout."""
    return {name: (f"L/{name}", False) for name in names}


def _call(module: Any) -> Callable[[dict[type, Any]], dict[type, Any]]:
    return lambda xs: {LayerOutput: module(xs[LayerInput])}


def test_conv2d() -> None:
    w, b = _rand(3, 2, 3, 3), _rand(3)
    layer = _train(Conv2dLayer, {LayerInput: I4}, 2, 3, 3, 2, 1)
    module = nn.Conv2d(2, 3, 3, 2, 1, elem=tn.Float64, device=tn.CPU)
    x = _rand(2, 2, 7, 6)
    params = {"L/weight": w, "L/bias": b}
    _compare(layer, params, module, _same("weight", "bias"), {LayerInput: x}, _call(module))


@pytest.mark.parametrize(
    ("template", "module"),
    [
        (MaxPool2dLayer, nn.MaxPool2d((2, 3), stride=1)),
        (AvgPool2dLayer, nn.AvgPool2d((2, 3), stride=1)),
    ],
)
def test_pools(template: Any, module: Any) -> None:
    layer = _train(template, {LayerInput: I4}, (2, 3), stride=1)
    _compare(layer, {}, module, {}, {LayerInput: _rand(2, 3, 5, 6)}, _call(module))


def test_flatten() -> None:
    layer, module = _train(FlattenLayer, {LayerInput: I4}), nn.Flatten()
    _compare(layer, {}, module, {}, {LayerInput: _rand(2, 3, 2, 2)}, _call(module))


def test_embedding() -> None:
    w = _rand(7, 4)
    cls = make_train_layer(
        EmbeddingLayer,
        LayerInMap({LayerInput: tn.Matrix[tn.Int64, tn.CPU]}),
        PElemIs(tn.Float64),
        PUpdate,
    )
    layer, module = cls("L", 7, 4), nn.Embedding(7, 4, elem=tn.Float64, device=tn.CPU)
    init_params(layer, {"L/weight": w})
    nn.load_state_dict(module, {"weight": w})
    ids = tn.tensor(np.array([[1, 6, 1], [0, 3, 1]]), tn.Int64, tn.CPU, tn.Dim2)
    ours = layer.feed_forward(layer.input_cont().set(LayerInput, ids)).get(LayerOutput)
    theirs = module(ids)
    close(ours.numpy(), tn.evaluate(theirs).numpy())
    g = _rand(2, 3, 4)  # the repeated index 1 sums its rows' gradients in both
    layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    want = tn.grad(ops.reduce_sum(theirs * t64(g)), module).weight
    close(collect(layer)["L/weight"], tn.evaluate(want).numpy())
    bad = tn.tensor(np.array([[7]]), tn.Int64, tn.CPU, tn.Dim2)
    for owner, feed in (
        ("L", lambda: layer_feed(layer, {LayerInput: bad})),
        ("Embedding", lambda: module(bad)),
    ):
        with pytest.raises(
            tn.IndexRangeError, match=f"cannot feed layer '{owner}': index 7 is out of range for 7"
        ):
            feed()


def test_batch_norm_and_its_running_statistics() -> None:
    w, b, mean, var = _rand(3), _rand(3), _rand(3), np.abs(_rand(3)) + 0.5
    layer = _train(BatchNormLayer, {LayerInput: I4}, 3, momentum=0.2)
    module = nn.BatchNorm(3, momentum=0.2, elem=tn.Float64, device=tn.CPU)
    params = {"L/weight": w, "L/bias": b, "L/running_mean": mean, "L/running_var": var}
    buffers = {"running_mean": mean, "running_var": var, "num_batches_tracked": np.array(0)}
    x = _rand(4, 3, 2, 2)
    _compare(
        layer, params, module, _same("weight", "bias"), {LayerInput: x}, _call(module), buffers
    )
    stats = {n.removeprefix("L/"): t.read().numpy() for n, t in model_state(layer).buffers.items()}
    for key in ("running_mean", "running_var"):
        close(stats[key], nn.state_dict(module)[key])  # one update, the same numbers


def test_layer_norm() -> None:
    w, b = _rand(4), _rand(4)
    layer = _train(LayerNormLayer, {LayerInput: T3}, 4)
    module = nn.LayerNorm(4, elem=tn.Float64, device=tn.CPU)
    params, x = {"L/weight": w, "L/bias": b}, _rand(2, 3, 4)
    _compare(layer, params, module, _same("weight", "bias"), {LayerInput: x}, _call(module))


STEP: Mapping = {
    "weight_ih_l0": ("L/w_ih", True),
    "weight_hh_l0": ("L/w_hh", True),
    "bias_ih_l0": ("L/b_ih", False),
    "bias_hh_l0": ("L/b_hh", False),
}
"""docs/layers.md: PyTorch's recurrent weights are the steps' transposed."""


def _step_params(gates: int, fan_in: int, hidden: int) -> dict[str, Array]:
    width = gates * hidden
    w_ih, w_hh, b_ih, b_hh = _rand(fan_in, width), _rand(hidden, width), _rand(width), _rand(width)
    return {"L/w_ih": w_ih, "L/w_hh": w_hh, "L/b_ih": b_ih, "L/b_hh": b_hh}


def _one_step(state: Any) -> Any:
    """(batch, H) as an (num_layers = 1, batch, H) state."""
    return ops.reshape(state, (1, *state.shape))


def _last(h: Any) -> Any:
    return ops.reshape(h, h.shape[1:])


def test_lstm_step_is_one_step_of_the_lstm() -> None:
    params = _step_params(4, 3, 5)
    h, c = Previous(LayerOutput), Previous(CellState)
    ports: dict[type, Any] = {LayerInput: M, h: M, c: M}
    layer, module = _train(LstmStep, ports, 3, 5), nn.LSTM(3, 5, elem=tn.Float64, device=tn.CPU)

    def call(xs: dict[type, Any]) -> dict[type, Any]:
        _, (h_n, c_n) = module(_one_step(xs[LayerInput]), (_one_step(xs[h]), _one_step(xs[c])))
        return {LayerOutput: _last(h_n), CellState: _last(c_n)}

    inputs: dict[type, Array] = {LayerInput: _rand(2, 3), h: _rand(2, 5), c: _rand(2, 5)}
    _compare(layer, params, module, STEP, inputs, call)


def test_torch_gru_step_is_one_step_of_the_gru() -> None:
    params = _step_params(3, 3, 5)
    h = Previous(LayerOutput)
    layer = _train(TorchGruStep, {LayerInput: M, h: M}, 3, 5)
    module = nn.GRU(3, 5, elem=tn.Float64, device=tn.CPU)

    def call(xs: dict[type, Any]) -> dict[type, Any]:
        _, h_n = module(_one_step(xs[LayerInput]), _one_step(xs[h]))
        return {LayerOutput: _last(h_n)}

    _compare(layer, params, module, STEP, {LayerInput: _rand(2, 3), h: _rand(2, 5)}, call)


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention(causal: bool) -> None:
    w_qkv, b_qkv, w_out, b_out = _rand(8, 24), _rand(24), _rand(8, 8), _rand(8)
    layer = _train(MultiHeadAttentionLayer, {LayerInput: T3}, 8, 2, causal=causal)
    module = nn.MultiHeadAttention(8, 2, causal=causal, elem=tn.Float64, device=tn.CPU)
    params = {"L/w_qkv": w_qkv, "L/b_qkv": b_qkv, "L/w_out": w_out, "L/b_out": b_out}
    mapping = {
        "in_proj_weight": ("L/w_qkv", True),
        "in_proj_bias": ("L/b_qkv", False),
        "out_proj.weight": ("L/w_out", True),
        "out_proj.bias": ("L/b_out", False),
    }
    _compare(layer, params, module, mapping, {LayerInput: _rand(2, 5, 8)}, _call(module))


def test_the_shared_checks_name_the_layer_either_way() -> None:
    attention = _train(MultiHeadAttentionLayer, {LayerInput: T3}, 8, 2)
    init_params(
        attention,
        {
            "L/w_qkv": _rand(8, 24),
            "L/b_qkv": _rand(24),
            "L/w_out": _rand(8, 8),
            "L/b_out": _rand(8),
        },
    )
    norm = _train(BatchNormLayer, {LayerInput: M}, 3)
    norm.init(ParamInitializer(), LoadBuffer(tn.Float64, tn.CPU))
    for owner, feed in (
        ("L", lambda: layer_feed(attention, {LayerInput: _rand(2, 5, 6)})),
        (
            "MultiHeadAttention",
            lambda: nn.MultiHeadAttention(8, 2, elem=tn.Float64, device=tn.CPU)(
                t64(_rand(2, 5, 6))
            ),
        ),
    ):
        with pytest.raises(
            tn.ShapeError,
            match=f"cannot feed layer '{owner}': port .* has 6 features in dim 2, the layer was built for 8",
        ):
            feed()
    for owner, feed in (
        ("L", lambda: layer_feed(norm, {LayerInput: _rand(1, 3)})),
        ("BatchNorm", lambda: nn.BatchNorm(3, elem=tn.Float64)(t64(_rand(1, 3)))),
    ):
        with pytest.raises(
            tn.ShapeError,
            match=f"cannot (feed layer '{owner}'|apply {owner}): a training batch norm needs more "
            "than one value per channel",
        ):
            feed()


def test_layer_norm_and_embedding_modules_check_as_their_templates_do() -> None:
    norm = _train(LayerNormLayer, {LayerInput: M}, 4)
    init_params(norm, {"L/weight": _rand(4), "L/bias": _rand(4)})
    for owner, feed in (
        ("L", lambda: layer_feed(norm, {LayerInput: _rand(2, 5)})),
        ("LayerNorm", lambda: nn.LayerNorm(4, elem=tn.Float64)(t64(_rand(2, 5)))),
    ):
        with pytest.raises(
            tn.ShapeError,
            match=f"cannot (feed layer '{owner}': port .*|apply {owner}: its input) has 5 "
            "features in dim 1, (the layer|it) was built for 4",
        ):
            feed()
    floats: Any = t64(np.zeros((2, 3)))
    with pytest.raises(
        tn.ElemTypeError, match="cannot feed layer 'Embedding': the indices are not an integer"
    ):
        nn.Embedding(7, 4)(floats)
