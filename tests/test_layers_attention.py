"""MultiHeadAttentionLayer: values and gradients against PyTorch's nn.MultiheadAttention
(tests/references/attention.safetensors, written by scripts/gen_attention_references.py),
finite differences, the LIFO discipline, compiled evaluation and its errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from composite_helpers import collect, fd_input, fd_param, init_params
from helpers import Array, layer_feed, t64

import typed_nn as tn
from typed_nn.layers import (
    AttentionMask,
    LayerInMap,
    LayerInput,
    LayerOutput,
    MaskedMultiHeadAttentionLayer,
    MultiHeadAttentionLayer,
    make_train_layer,
)
from typed_nn.layers.attention import MASKED, MASKS_KEPT
from typed_nn.model.safetensors_format import parse
from typed_nn.policies import PDeviceIs, PElemIs, PFeedbackOutput, PUpdate

T3 = tn.Tensor3[tn.Float64, tn.CPU]
REFERENCES = Path(__file__).parent / "references" / "attention.safetensors"
rng = np.random.default_rng(20)


def references() -> dict[str, Array]:
    data = REFERENCES.read_bytes()
    entries, _, base = parse(data, str(REFERENCES))
    return {name: e.array(data, base).copy() for name, e in entries.items()}


REF = references()


def torch_params(name: str) -> dict[str, Array]:
    """PyTorch's parameters under typed_nn's names and layouts (CONVENTIONS: transposed)."""
    return {
        f"{name}/w_qkv": REF["in_proj_weight"].T.copy(),
        f"{name}/b_qkv": REF["in_proj_bias"],
        f"{name}/w_out": REF["out_proj_weight"].T.copy(),
        f"{name}/b_out": REF["out_proj_bias"],
    }


def attention(*, causal: bool = False, heads: int = 2, d: int = 8) -> Any:
    cls = make_train_layer(
        MultiHeadAttentionLayer,
        LayerInMap({LayerInput: T3}),
        PElemIs(tn.Float64),
        PUpdate,
        PFeedbackOutput,
    )
    return cls("mha", d, heads, causal=causal)


def masked_attention(mask_type: Any, *, causal: bool = False) -> Any:
    in_map = LayerInMap({LayerInput: T3, AttentionMask: mask_type})
    cls = make_train_layer(
        MaskedMultiHeadAttentionLayer, in_map, PElemIs(tn.Float64), PUpdate, PFeedbackOutput
    )
    return cls("mha", 8, 2, causal=causal)


def finite(mask: Array) -> Array:
    """PyTorch's -inf as the layer's documented large negative number."""
    return np.where(np.isinf(mask), MASKED, mask)


def forward(layer: Any, inputs: dict[type, Any]) -> Array:
    out: Array = layer_feed(layer, inputs).get(LayerOutput).numpy()
    return out


def backward(layer: Any, g: Array) -> Any:
    return layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))


@pytest.mark.parametrize("causal", [False, True])
def test_values_match_pytorch(causal: bool) -> None:
    layer = attention(causal=causal)
    init_params(layer, torch_params("mha"))
    got = forward(layer, {LayerInput: REF["x"]})
    np.testing.assert_allclose(got, REF["y_causal" if causal else "y"], rtol=1e-10, atol=1e-12)
    backward(layer, np.zeros_like(got))


@pytest.mark.parametrize(
    ("mask", "expected"), [("mask", "y_mask"), ("per_sample_mask", "y_per_sample_mask")]
)
def test_explicit_masks_match_pytorch(mask: str, expected: str) -> None:
    m = finite(REF[mask])
    layer = masked_attention(tn.Matrix[tn.Float64, tn.CPU] if m.ndim == 2 else T3)
    init_params(layer, torch_params("mha"))
    got = forward(layer, {LayerInput: REF["x"], AttentionMask: m})
    np.testing.assert_allclose(got, REF[expected], rtol=1e-10, atol=1e-12)


def test_gradients_match_pytorch() -> None:
    layer = attention(causal=True)
    init_params(layer, torch_params("mha"))
    forward(layer, {LayerInput: REF["x"]})
    back = backward(layer, REF["g"])
    np.testing.assert_allclose(back.get(LayerInput).numpy(), REF["grad_x"], rtol=1e-9, atol=1e-12)
    grads = collect(layer)
    expected = {
        "mha/w_qkv": REF["grad_in_proj_weight"].T,
        "mha/b_qkv": REF["grad_in_proj_bias"],
        "mha/w_out": REF["grad_out_proj_weight"].T,
        "mha/b_out": REF["grad_out_proj_bias"],
    }
    assert sorted(grads) == sorted(expected)
    for name, want in expected.items():
        np.testing.assert_allclose(grads[name], want, rtol=1e-9, atol=1e-12, err_msg=name)
    layer.neutral_invariant()


def test_gradients_match_finite_differences() -> None:
    layer = masked_attention(tn.Matrix[tn.Float64, tn.CPU], causal=True)
    params = {
        "mha/w_qkv": rng.normal(size=(8, 24)) * 0.5,
        "mha/b_qkv": rng.normal(size=24),
        "mha/w_out": rng.normal(size=(8, 8)),
        "mha/b_out": rng.normal(size=8),
    }
    buffer = init_params(layer, params)
    inputs: dict[type, Any] = {
        LayerInput: rng.normal(size=(2, 3, 8)),
        AttentionMask: rng.normal(size=(3, 3)),
    }
    g = rng.normal(size=(2, 3, 8))
    forward(layer, inputs)
    back = backward(layer, g)
    grads = collect(layer)
    for port in (LayerInput, AttentionMask):
        np.testing.assert_allclose(
            back.get(port).numpy(), fd_input(layer, inputs, port, g), rtol=1e-6, atol=1e-7
        )
    for name in params:
        np.testing.assert_allclose(
            grads[name], fd_param(layer, buffer, name, inputs, g), rtol=1e-6, atol=1e-7
        )
    layer.neutral_invariant()


def test_forwards_and_backwards_pair_last_in_first_out() -> None:
    layer = attention(causal=True)
    init_params(layer, torch_params("mha"))
    xs = [rng.normal(size=(2, 5, 8)) for _ in range(3)]
    gs = [rng.normal(size=(2, 5, 8)) for _ in range(3)]
    alone = []
    for x, g in zip(xs, gs, strict=True):
        forward(layer, {LayerInput: x})
        alone.append(backward(layer, g).get(LayerInput).numpy())
        collect(layer)
    for x in xs:
        forward(layer, {LayerInput: x})
    for i in reversed(range(3)):
        got = backward(layer, gs[i]).get(LayerInput).numpy()
        np.testing.assert_allclose(got, alone[i], rtol=1e-12)
    collect(layer)
    layer.neutral_invariant()


def test_compiled_forward_and_backward_equal_eager() -> None:
    layer = attention(causal=True)
    init_params(layer, torch_params("mha"))
    x, g = t64(REF["x"]), t64(REF["g"])

    def step() -> list[Any]:
        out = layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput)
        dx = layer.feed_backward(layer.output_cont().set(LayerOutput, g)).get(LayerInput)
        col = tn.model.GradCollector(tn.Float64, tn.CPU)
        layer.grad_collect(col)
        return [out, dx, *(grad for _, _, grad in col)]

    eager = [tn.evaluate(v).numpy().copy() for v in step()]
    compiled = tn.compile(step)
    for _ in range(2):
        for got, want in zip(compiled(), eager, strict=True):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eager[0], REF["y_causal"], rtol=1e-10, atol=1e-12)


@pytest.mark.gpu
def test_a_causal_layer_compiles_on_the_gpu(cupy_module: Any) -> None:
    """Its mask is made on the GPU when the forward is built: no evaluation, which a trace
    refuses (a mask moved with to_device and evaluated could not be traced)."""
    cls = make_train_layer(
        MultiHeadAttentionLayer,
        LayerInMap({LayerInput: tn.Tensor3[tn.Float64, tn.GPU]}),
        PElemIs(tn.Float64),
        PDeviceIs(tn.GPU),
        PUpdate,
        PFeedbackOutput,
    )
    layer = cls("mha", 8, 2, causal=True)
    init = tn.model.ParamInitializer()
    for name, value in torch_params("mha").items():
        init.set_param(name, value)
    layer.init(init, tn.model.LoadBuffer(tn.Float64, tn.GPU))
    x, g = (tn.tensor(REF[k], tn.Float64, tn.GPU, tn.Dim3) for k in ("x", "g"))

    @tn.compile
    def step() -> list[Any]:
        out = layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput)
        dx = layer.feed_backward(layer.output_cont().set(LayerOutput, g)).get(LayerInput)
        return [out, dx]

    for _ in range(2):
        out, dx = step()
        np.testing.assert_allclose(out.numpy(), REF["y_causal"], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dx.numpy(), REF["grad_x"], rtol=1e-9, atol=1e-12)
    assert step.traces == 1


def test_float32_runs() -> None:
    cls = make_train_layer(
        MultiHeadAttentionLayer, LayerInMap({LayerInput: tn.Tensor3[tn.Float32, tn.CPU]}), PUpdate
    )
    layer = cls("mha", 8, 4, causal=True)
    init = tn.model.ParamInitializer()
    for name, value in torch_params("mha").items():
        init.set_param(name, value.astype(np.float32))
    layer.init(init, tn.model.LoadBuffer(tn.Float32, tn.CPU))
    x = tn.tensor(REF["x"].astype(np.float32), tn.Float32, tn.CPU, tn.Dim3)
    out = layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput)
    assert out.elem is tn.Float32
    assert np.isfinite(out.numpy()).all()


def test_heads_that_do_not_divide_the_width_are_rejected() -> None:
    with pytest.raises(
        tn.LayerError,
        match=r"(?s)cannot create layer 'mha': 3 heads do not divide the model width 8.*"
        r"n_heads >= 1 dividing d_model",
    ):
        attention(heads=3)
    with pytest.raises(tn.LayerError, match="n_heads must be an int >= 1, got 0"):
        attention(heads=0)


def test_an_input_of_another_width_is_rejected_naming_the_layer() -> None:
    layer = attention()
    init_params(layer, torch_params("mha"))
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cannot feed layer 'mha': port LayerInput has 6 features in dim 2, the layer "
        r"was built for 8.*hint: feed \(batch, seq, 8\) data, or build the layer with d_model=6",
    ):
        layer_feed(layer, {LayerInput: np.zeros((2, 5, 6))})


def test_causal_masks_for_many_lengths_are_not_all_kept() -> None:
    """One causal mask per sequence length is cached, the least recently used dropped past
    MASKS_KEPT (variable lengths would otherwise keep a (seq, seq) mask for each)."""
    layer = attention(causal=True)
    init_params(layer, torch_params("mha"))
    cell = layer.sublayers["attn"]
    first = forward(layer, {LayerInput: REF["x"]})
    for seq in range(1, MASKS_KEPT + 6):
        forward(layer, {LayerInput: rng.normal(size=(2, seq, 8))})
        assert len(cell._masks) <= MASKS_KEPT
    np.testing.assert_array_equal(forward(layer, {LayerInput: REF["x"]}), first)


def test_a_mask_of_the_wrong_shape_is_rejected() -> None:
    layer = masked_attention(tn.Matrix[tn.Float64, tn.CPU])
    init_params(layer, torch_params("mha"))
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cannot feed layer 'mha/attn' forward: the attention mask has shape \(4, 5\)"
        r".*accepted : \(5, 5\) or \(2, 5, 5\)",
    ):
        layer_feed(layer, {LayerInput: REF["x"], AttentionMask: np.zeros((4, 5))})


def test_an_input_that_is_not_batch_seq_width_is_rejected() -> None:
    with pytest.raises(tn.ShapeError, match=r"attention takes \(batch, seq, d\)"):
        make_train_layer(  # type: ignore[input-rank]  # the mypy plugin rejects it too
            MultiHeadAttentionLayer, LayerInMap({LayerInput: tn.Matrix[tn.Float64, tn.CPU]})
        )
