"""GruStep: MetaNN's equations and parameter names; values against an independent numpy GRU
(forward and chain-rule backward) and finite differences."""

from __future__ import annotations

from typing import Any

import numpy as np
from composite_helpers import collect, fd_input, fd_param, gru_backward, gru_forward, init_params
from helpers import layer_feed, t64

import typed_nn as tn
from typed_nn.layers import (
    GruStep,
    LayerInMap,
    LayerInput,
    LayerOutput,
    Previous,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.policies import PElemIs, PFeedbackOutput, PParamTypeIs, PUpdate

M64 = tn.Matrix[tn.Float64, tn.CPU]
H = Previous(LayerOutput)
NAMES = ("W", "Wz", "Wr", "U", "Uz", "Ur")
rng = np.random.default_rng(5)


def gru(*policies: Any) -> Any:
    return make_train_layer(
        GruStep, LayerInMap({LayerInput: M64, H: M64}), PElemIs(tn.Float64), *policies
    )


def weights(fan_in: int, fan_out: int) -> dict[str, Any]:
    return {
        n: rng.standard_normal((fan_in if n.startswith("W") else fan_out, fan_out)) * 0.7
        for n in NAMES
    }


def test_parameter_names_and_shapes() -> None:
    layer = gru(PUpdate)("gru", 3, 2)
    p = weights(3, 2)
    buffer = init_params(layer, {f"gru/{n}/param": v for n, v in p.items()})
    assert sorted(buffer) == sorted(f"gru/{n}/param" for n in NAMES)
    assert layer.sublayers["W"].name == "gru/W"


def test_parameter_type_is_forced_to_a_matrix() -> None:
    cls = gru(PParamTypeIs(tn.Vector))  # overridden, as MetaNN's ChangePolicy does
    param = cls.sublayer_classes["W"].sublayer_classes["param"]
    assert (param.rank, param.elem) == (2, tn.Float64)


def test_forward_backward_match_numpy_and_finite_differences() -> None:
    layer = gru(PUpdate, PFeedbackOutput)("gru", 3, 2)
    p = weights(3, 2)
    buffer = init_params(layer, {f"gru/{n}/param": v for n, v in p.items()})
    x, h, g = rng.standard_normal((4, 3)), rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    inputs: dict[type, Any] = {LayerInput: x, H: h}
    out = layer_feed(layer, inputs).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, gru_forward(p, x, h)["out"])
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    grads = collect(layer)
    expected = gru_backward(p, x, h, g)
    np.testing.assert_allclose(back.get(LayerInput).numpy(), expected["x"])
    np.testing.assert_allclose(back.get(H).numpy(), expected["h"])
    for n in NAMES:
        np.testing.assert_allclose(grads[f"gru/{n}/param"], expected[n], err_msg=n)
    np.testing.assert_allclose(expected["x"], fd_input(layer, inputs, LayerInput, g), rtol=1e-6)
    np.testing.assert_allclose(expected["h"], fd_input(layer, inputs, H, g), rtol=1e-6)
    for n in ("U", "Uz", "Wr"):
        numeric = fd_param(layer, buffer, f"gru/{n}/param", inputs, g)
        np.testing.assert_allclose(expected[n], numeric, rtol=1e-6, atol=1e-9, err_msg=n)
    layer.neutral_invariant()


def test_inference_step() -> None:
    layer = make_infer_layer(GruStep, PElemIs(tn.Float64))("gru", 2, 3)
    p = weights(2, 3)
    init_params(layer, {f"gru/{n}/param": v for n, v in p.items()})
    x, h = rng.standard_normal((1, 2)), rng.standard_normal((1, 3))
    out = layer_feed(layer, {LayerInput: x, H: h}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, gru_forward(p, x, h)["out"])
    layer.neutral_invariant()
