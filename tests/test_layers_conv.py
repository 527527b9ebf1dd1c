"""Conv2dLayer, MaxPool2dLayer, AvgPool2dLayer, FlattenLayer, DropoutLayer, EmbeddingLayer:
values and gradients against PyTorch references (tests/references/, written by
scripts/gen_conv_references.py), finite differences, the LIFO order, typed errors, and fresh
dropout masks in eager and compiled training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from composite_helpers import collect, fd_input, fd_param, init_params
from helpers import Array, check_layer_gradients, layer_feed, t64

import typed_nn as tn
from typed_nn import nn, ops
from typed_nn.layers import (
    AvgPool2dLayer,
    Conv2dLayer,
    DropoutLayer,
    EmbeddingLayer,
    FlattenLayer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    MaxPool2dLayer,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.model import LoadBuffer, MSRAFiller, ParamInitializer
from typed_nn.policies import PElemIs, PFeedbackOutput, PInitializerIs, PUpdate

safetensors_numpy = pytest.importorskip("safetensors.numpy")

REFS = Path(__file__).parent / "references"
F64 = tn.Float64
T4 = tn.Tensor[F64, tn.CPU, tn.Dim4]
IN4 = LayerInMap({LayerInput: T4})
LAZY4 = LayerInMap({LayerInput: tn.TensorLike[F64, tn.CPU, tn.Dim4]})
IDS2 = LayerInMap({LayerInput: tn.Tensor[tn.Int64, tn.CPU, tn.Dim2]})
rng = np.random.default_rng(20)


def refs(name: str) -> dict[str, Array]:
    loaded: dict[str, Array] = safetensors_numpy.load_file(str(REFS / f"{name}.safetensors"))
    return loaded


def conv(*args: Any, **kwargs: Any) -> Any:
    cls = make_train_layer(Conv2dLayer, IN4, PElemIs(F64), PUpdate, PFeedbackOutput)
    return cls(*args, **kwargs)


def backward(layer: Any, g: Array) -> Any:
    return layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))


# --- values against PyTorch ---------------------------------------------------------------
CONV_CASES = {
    "stride2_pad1": ((2, 2), (1, 1)),
    "stride1_pad0": ((1, 1), (0, 0)),
    "stride_hw": ((2, 1), (0, 2)),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv2d_matches_pytorch(case: str) -> None:
    r = {k.split("/")[1]: v for k, v in refs("conv2d").items() if k.startswith(case + "/")}
    stride, padding = CONV_CASES[case]
    o, c, kh, kw = r["weight"].shape
    layer = conv("c", c, o, (kh, kw), stride=stride, padding=padding)
    buffer = init_params(layer, {"c/weight": r["weight"], "c/bias": r["bias"]})
    out = layer_feed(layer, {LayerInput: r["x"]}).get(LayerOutput)
    np.testing.assert_allclose(out.numpy(), r["y"], rtol=1e-10, atol=1e-12)
    dx = backward(layer, r["g"]).get(LayerInput).numpy()
    grads = collect(layer)
    np.testing.assert_allclose(dx, r["dx"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["c/weight"], r["dweight"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["c/bias"], r["dbias"], rtol=1e-10, atol=1e-12)
    layer.neutral_invariant()
    if case == "stride_hw":  # finite differences, input and both parameters
        inputs = {LayerInput: r["x"]}
        np.testing.assert_allclose(
            dx, fd_input(layer, inputs, LayerInput, r["g"]), rtol=1e-6, atol=1e-8
        )
        for name, want in (("c/weight", r["dweight"]), ("c/bias", r["dbias"])):
            numeric = fd_param(layer, buffer, name, inputs, r["g"])
            np.testing.assert_allclose(want, numeric, rtol=1e-6, atol=1e-8, err_msg=name)
        layer.neutral_invariant()


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(("case", "size", "stride"), [("tiling", 2, 2), ("overlap", 3, 2)])
def test_pools_match_pytorch(kind: str, case: str, size: int, stride: int) -> None:
    r = {k.split("/")[1]: v for k, v in refs("pool2d").items() if k.startswith(f"{kind}_{case}/")}
    template = MaxPool2dLayer if kind == "max" else AvgPool2dLayer
    layer = make_train_layer(template, IN4, PFeedbackOutput)("pool", size, stride)
    out = layer_feed(layer, {LayerInput: r["x"]}).get(LayerOutput)
    np.testing.assert_allclose(out.numpy(), r["y"], rtol=1e-12, atol=1e-14)
    dx = backward(layer, r["g"]).get(LayerInput).numpy()
    np.testing.assert_allclose(dx, r["dx"], rtol=1e-12, atol=1e-14)
    layer.neutral_invariant()


def embedding(num: int = 7, dim: int = 4) -> Any:
    return make_train_layer(EmbeddingLayer, IDS2, PElemIs(F64), PUpdate)("emb", num, dim)


def test_embedding_matches_pytorch_and_accumulates_repeated_indices() -> None:
    r = refs("embedding")
    assert len(np.unique(r["indices"])) < r["indices"].size  # repeated indices
    layer = embedding()
    init_params(layer, {"emb/weight": r["weight"]})
    ids = tn.tensor(r["indices"], tn.Int64, tn.CPU, tn.Dim2)
    out = layer.feed_forward(layer.input_cont().set(LayerInput, ids)).get(LayerOutput)
    np.testing.assert_allclose(out.numpy(), r["y"])
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(r["g"])))
    assert back.set_keys() == ()  # the indices get no gradient
    np.testing.assert_allclose(collect(layer)["emb/weight"], r["dweight"], rtol=1e-12)
    layer.neutral_invariant()


# --- finite differences and LIFO -----------------------------------------------------------
def test_sizes_may_be_numpy_integers_as_docs_layers_md_says() -> None:
    c: Any = np.int64(3)  # a channel count read from an array (run time: typed int)
    conv = nn.Conv2d(c, c, c)
    assert conv.weight.shape == (3, 3, 3, 3)
    assert all(type(d) is int for d in conv.weight.shape)
    zero: Any = np.int64(0)
    with pytest.raises(tn.ShapeError, match="kernel_size must be an int >= 1"):
        nn.Conv2d(3, 3, zero)


def test_conv2d_and_its_gradients_of_an_empty_batch_are_empty() -> None:
    """N = 0, as PyTorch gives (the kernel's reshape had asked numpy to infer a dim of 0)."""
    x = tn.zeros((0, 1, 4, 4), tn.Float32, tn.CPU)
    w = tn.ones((2, 1, 3, 3), tn.Float32, tn.CPU)
    assert tn.evaluate(ops.conv2d(x, w, padding=1)).numpy().shape == (0, 2, 4, 4)
    gx, gw = tn.grad(ops.reduce_sum(ops.conv2d(x, w)), [x, w])
    assert tn.evaluate(gx).numpy().shape == (0, 1, 4, 4)
    np.testing.assert_array_equal(tn.evaluate(gw).numpy(), np.zeros((2, 1, 3, 3)))


def test_pool_and_flatten_finite_differences() -> None:
    x = rng.standard_normal((2, 2, 5, 5))
    for template in (MaxPool2dLayer, AvgPool2dLayer):
        check_layer_gradients(
            make_train_layer(template, IN4, PFeedbackOutput)("p", 2, 1), {LayerInput: x}
        )
    flat = make_train_layer(FlattenLayer, IN4, PFeedbackOutput)("f")
    assert layer_feed(flat, {LayerInput: x}).get(LayerOutput).shape == (2, 50)
    flat.feed_backward(flat.output_cont())
    check_layer_gradients(flat, {LayerInput: x})


def test_embedding_finite_differences() -> None:
    layer = embedding(5, 3)
    weight = rng.standard_normal((5, 3))
    buffer = init_params(layer, {"emb/weight": weight})
    ids = tn.tensor(np.array([[4, 0, 4], [1, 4, 2]]), tn.Int64, tn.CPU, tn.Dim2)
    g = rng.standard_normal((2, 3, 3))
    layer_feed(layer, {LayerInput: ids})
    backward(layer, g)
    numeric = fd_param(layer, buffer, "emb/weight", {LayerInput: ids}, g)
    np.testing.assert_allclose(collect(layer)["emb/weight"], numeric, rtol=1e-6, atol=1e-8)
    layer.neutral_invariant()


def test_conv_lifo_nine_forwards_then_nine_backwards() -> None:
    layer = conv("c", 2, 3, 3, padding=1, stride=2)
    w, b = rng.standard_normal((3, 2, 3, 3)), rng.standard_normal(3)
    init_params(layer, {"c/weight": w, "c/bias": b})
    xs = {n: rng.standard_normal((2, 2, 5, 4)) * n for n in range(1, 10)}
    for n in range(1, 10):
        layer_feed(layer, {LayerInput: xs[n]})
    for n in reversed(range(1, 10)):
        g = np.full((2, 3, 3, 2), float(n))
        dx = backward(layer, g).get(LayerInput).numpy()
        x, g_t = t64(xs[n]), t64(g)
        want = ops.conv2d_grad_input(g_t, t64(w), x.shape, 2, 1).numpy()
        np.testing.assert_allclose(dx, want, atol=1e-12)
        grads = collect(layer)
        np.testing.assert_allclose(
            grads["c/weight"], ops.conv2d_grad_weight(g_t, x, w.shape, 2, 1).numpy(), atol=1e-12
        )
        np.testing.assert_allclose(grads["c/bias"], g.sum(axis=(0, 2, 3)), atol=1e-12)
    layer.neutral_invariant()


@pytest.mark.parametrize("template", [MaxPool2dLayer, AvgPool2dLayer, FlattenLayer, DropoutLayer])
def test_parameterless_layers_lifo(template: Any) -> None:
    args = {MaxPool2dLayer: (2,), AvgPool2dLayer: (2,), FlattenLayer: (), DropoutLayer: (0.5,)}
    layer = make_train_layer(template, IN4, PFeedbackOutput)("l", *args[template])
    xs = {n: rng.standard_normal((2, 3, 4, 4)) + 5.0 * n for n in range(1, 10)}
    outs = {n: layer_feed(layer, {LayerInput: xs[n]}).get(LayerOutput) for n in range(1, 10)}
    for n in reversed(range(1, 10)):
        g = np.ones(outs[n].shape) * n
        dx = backward(layer, g).get(LayerInput).numpy()
        # every gradient here is g routed by its own forward: sum(dx * x) = sum(g * y)
        np.testing.assert_allclose(np.sum(dx * xs[n]), np.sum(g * outs[n].numpy()), rtol=1e-10)
    layer.neutral_invariant()


def test_embedding_lifo() -> None:
    layer = embedding(5, 2)
    weight = rng.standard_normal((5, 2))
    init_params(layer, {"emb/weight": weight})
    ids = {n: np.array([[n % 5, (2 * n) % 5]]) for n in range(1, 10)}
    for n in range(1, 10):
        layer_feed(layer, {LayerInput: tn.tensor(ids[n], tn.Int64, tn.CPU, tn.Dim2)})
    for n in reversed(range(1, 10)):
        backward(layer, np.full((1, 2, 2), float(n)))
        want = np.zeros((5, 2))
        np.add.at(want, ids[n].ravel(), float(n))
        np.testing.assert_allclose(collect(layer)["emb/weight"], want)
    layer.neutral_invariant()


# --- initialisation -------------------------------------------------------------------------
def test_conv_weight_filled_with_c_kh_kw_fan() -> None:
    cls = make_train_layer(Conv2dLayer, IN4, PElemIs(F64), PUpdate, PInitializerIs("w"))
    layer = cls("c", 16, 64, 3)
    init = ParamInitializer({"w": MSRAFiller(seed=0)})
    buffer: LoadBuffer[Any, Any] = LoadBuffer(F64, tn.CPU)
    layer.init(init, buffer)
    weight = buffer.try_get("c/weight")
    assert weight is not None
    assert weight.shape == (64, 16, 3, 3)
    std = float(weight.numpy().std())
    assert abs(std - np.sqrt(2 / (16 * 9))) < 0.05 * np.sqrt(2 / (16 * 9))
    assert sorted(buffer) == ["c/bias", "c/weight"]


def test_conv_without_bias_has_no_bias_parameter() -> None:
    layer = conv("c", 2, 3, 3, bias=False)
    w = rng.standard_normal((3, 2, 3, 3))
    init_params(layer, {"c/weight": w})
    x = rng.standard_normal((1, 2, 4, 4))
    out = layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, ops.conv2d(t64(x), t64(w)).numpy())
    backward(layer, np.ones(out.shape))
    assert sorted(collect(layer)) == ["c/weight"]
    layer.neutral_invariant()


# --- dropout --------------------------------------------------------------------------------
M32 = tn.Matrix[tn.Float32, tn.CPU]


def dropout(rate: float = 0.5, seed: int = 0) -> Any:
    return make_train_layer(DropoutLayer, LayerInMap({LayerInput: M32}), PFeedbackOutput)(
        "drop", rate, seed=seed
    )


def ones(rows: int = 64, cols: int = 64) -> Any:
    return tn.tensor(np.ones((rows, cols), np.float32), tn.Float32, tn.CPU, tn.Dim2)


def test_dropout_drops_at_its_rate_scales_and_backward_uses_the_same_mask() -> None:
    layer = dropout(0.25, seed=1)
    y = layer.feed_forward(layer.input_cont().set(LayerInput, ones())).get(LayerOutput)
    dx = layer.feed_backward(layer.output_cont().set(LayerOutput, ones())).get(LayerInput)
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(y.numpy()[kept], 1 / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(dx.numpy(), y.numpy())  # the forward's mask
    layer.neutral_invariant()


def test_a_training_dropout_layer_passes_its_input_through_in_inference_mode() -> None:
    layer = dropout(0.5, seed=1)
    with tn.inference():
        y = layer.feed_forward(layer.input_cont().set(LayerInput, ones())).get(LayerOutput)
    np.testing.assert_array_equal(y.numpy(), ones().numpy())
    layer.neutral_invariant()  # nothing kept for a backward


def test_dropout_is_seeded_and_fresh_at_every_eager_call() -> None:
    a, b = dropout(seed=7), dropout(seed=7)
    masks = []
    for layer in (a, b):
        for _ in range(2):
            y = layer.feed_forward(layer.input_cont().set(LayerInput, ones()))
            masks.append(y.get(LayerOutput).numpy() != 0)
            layer.feed_backward(layer.output_cont())
    assert not np.array_equal(masks[0], masks[1])  # fresh per call
    np.testing.assert_array_equal(masks[0], masks[2])  # same seed, same sequence
    np.testing.assert_array_equal(masks[1], masks[3])
    other = dropout(seed=8)
    y = other.feed_forward(other.input_cont().set(LayerInput, ones())).get(LayerOutput)
    assert not np.array_equal(y.numpy() != 0, masks[0])


def test_dropout_layers_without_a_seed_draw_apart() -> None:
    """Two dropout layers of one model left at the default seed dropped the same elements;
    the default comes from the layer's name: the same name, the same stream."""
    layers = [
        make_train_layer(DropoutLayer, LayerInMap({LayerInput: M32}), PFeedbackOutput)(name, 0.5)
        for name in ("net/drop1", "net/drop2", "net/drop1")
    ]
    masks = [
        layer.feed_forward(layer.input_cont().set(LayerInput, ones())).get(LayerOutput).numpy() != 0
        for layer in layers
    ]
    assert not np.array_equal(masks[0], masks[1])
    np.testing.assert_array_equal(masks[0], masks[2])


def test_dropout_mask_is_fresh_at_every_compiled_step() -> None:
    """A compiled training step replays its program: a mask made once at trace time would
    be replayed frozen. Each call draws a new one, and its backward reads that same mask."""
    layer = dropout(0.5, seed=3)

    @tn.compile
    def step(x: M32, g: M32) -> tuple[Any, Any]:
        y = layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput)
        dx = layer.feed_backward(layer.output_cont().set(LayerOutput, g)).get(LayerInput)
        return y, dx

    results = [step(ones(), ones()) for _ in range(4)]
    assert step.traces == 1
    masks = [y.numpy() != 0 for y, _ in results]
    for i in range(4):
        np.testing.assert_array_equal(results[i][1].numpy(), results[i][0].numpy())
        for j in range(i):
            assert not np.array_equal(masks[i], masks[j]), (i, j)
    assert all(abs(m.mean() - 0.5) < 0.05 for m in masks)
    layer.neutral_invariant()


def test_dropout_inference_and_rate_zero_are_identity() -> None:
    x = ones(3, 4)
    infer = make_infer_layer(DropoutLayer)("drop", 0.5)
    assert infer.feed_forward(infer.input_cont().set(LayerInput, x)).get(LayerOutput) is x
    zero = dropout(0.0)
    assert zero.feed_forward(zero.input_cont().set(LayerInput, x)).get(LayerOutput) is x


# --- a small CNN, trained through tn.vjp -----------------------------------------------------
def test_conv_pool_flatten_chain_input_gradients() -> None:
    x = rng.standard_normal((2, 1, 6, 6))
    layers: list[Any] = [
        make_train_layer(Conv2dLayer, IN4, PElemIs(F64), PFeedbackOutput)("c", 1, 2, 3, padding=1),
        make_train_layer(MaxPool2dLayer, LAZY4, PFeedbackOutput)("p", 2),
        make_train_layer(FlattenLayer, LAZY4, PFeedbackOutput)("f"),
    ]
    w, b = rng.standard_normal((2, 1, 3, 3)), rng.standard_normal(2)
    init_params(layers[0], {"c/weight": w, "c/bias": b})
    check_layer_gradients(layers[0], {LayerInput: x})
    h = layers[0].feed_forward(layers[0].input_cont().set(LayerInput, t64(x))).get(LayerOutput)
    h = layers[1].feed_forward(layers[1].input_cont().set(LayerInput, h)).get(LayerOutput)
    out = layers[2].feed_forward(layers[2].input_cont().set(LayerInput, h)).get(LayerOutput)
    assert out.shape == (2, 18)
    g: Any = t64(np.ones((2, 18)))
    for layer in reversed(layers):
        g = layer.feed_backward(layer.output_cont().set(LayerOutput, g)).get(LayerInput)
    assert g.shape == x.shape
    for layer in layers:
        layer.neutral_invariant()


# --- bad input ------------------------------------------------------------------------------
def test_conv_rejects_the_wrong_rank() -> None:
    layer = conv("c", 1, 2, 3)
    init_params(layer, {"c/weight": np.zeros((2, 1, 3, 3)), "c/bias": np.zeros(2)})
    with pytest.raises(tn.RankError, match="cannot feed layer 'c': port LayerInput"):
        layer_feed(layer, {LayerInput: np.zeros((4, 9))})
    with pytest.raises(tn.RankError, match="cannot make Conv2dOp: it takes NCHW images"):
        # The mypy plugin rejects it too: Conv2dLayer's feed_forward takes Dim4 data.
        make_train_layer(Conv2dLayer, LayerInMap({LayerInput: tn.Matrix[F64, tn.CPU]}))  # type: ignore[input-rank]
    with pytest.raises(tn.ElemTypeError, match="cannot make MaxPool2dLayer: it takes float data"):
        make_train_layer(
            MaxPool2dLayer, LayerInMap({LayerInput: tn.Tensor[tn.Int64, tn.CPU, tn.Dim4]})
        )
    with pytest.raises(tn.ElemTypeError, match="cannot make DropoutLayer: it drops float data"):
        make_train_layer(DropoutLayer, LayerInMap({LayerInput: tn.Matrix[tn.Int64, tn.CPU]}))
    infer = make_infer_layer(Conv2dLayer, PElemIs(F64))("i", 1, 2, 3)
    init_params(infer, {"i/weight": np.zeros((2, 1, 3, 3)), "i/bias": np.zeros(2)})
    with pytest.raises(
        tn.RankError, match=r"cannot feed layer 'i': it takes NCHW images \(rank 4\), got rank 3"
    ):
        layer_feed(infer, {LayerInput: np.zeros((1, 8, 8))})


def test_conv_rejects_the_wrong_channel_count_and_a_too_large_kernel() -> None:
    layer = conv("c", 3, 2, 5, padding=1)
    init_params(layer, {"c/weight": np.zeros((2, 3, 5, 5)), "c/bias": np.zeros(2)})
    with pytest.raises(
        tn.ShapeError, match="cannot feed layer 'c': the input has 1 channels, the layer takes 3"
    ):
        layer_feed(layer, {LayerInput: np.zeros((2, 1, 8, 8))})
    with pytest.raises(tn.ShapeError, match="its 5x5 window is larger than the padded 4x5 input"):
        layer_feed(layer, {LayerInput: np.zeros((2, 3, 2, 3))})
    pool = make_train_layer(MaxPool2dLayer, IN4)("p", 3)
    with pytest.raises(tn.ShapeError, match="cannot feed layer 'p': its 3x3 window is larger"):
        layer_feed(pool, {LayerInput: np.zeros((1, 1, 2, 8))})
    layer.neutral_invariant()
    with pytest.raises(tn.ShapeError, match="kernel_size must be an int >= 1"):
        conv("c", 3, 2, 0)


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5, float("nan")])
def test_dropout_rate_outside_zero_one(rate: float) -> None:
    with pytest.raises(tn.LayerError, match=r"the dropout rate must be in \[0, 1\)"):
        dropout(rate)


def test_embedding_rejects_out_of_range_and_non_integer_indices() -> None:
    layer = embedding(5, 2)
    init_params(layer, {"emb/weight": np.zeros((5, 2))})
    for bad in (5, -1):
        ids = tn.tensor(np.array([[0, bad]]), tn.Int64, tn.CPU, tn.Dim2)
        with pytest.raises(tn.IndexRangeError, match=f"index {bad} is out of range for 5"):
            layer_feed(layer, {LayerInput: ids})
    with pytest.raises(tn.ElemTypeError, match="cannot feed layer 'emb': port LayerInput"):
        layer_feed(layer, {LayerInput: np.zeros((1, 2))})
    with pytest.raises(tn.ElemTypeError, match="the indices are not an integer tensor"):
        make_train_layer(EmbeddingLayer, LayerInMap({LayerInput: tn.Matrix[F64, tn.CPU]}))
    infer = make_infer_layer(EmbeddingLayer, PElemIs(F64))("e", 5, 2)
    init_params(infer, {"e/weight": np.zeros((5, 2))})
    with pytest.raises(
        tn.ElemTypeError, match="cannot feed layer 'e': the indices are not an integer"
    ):
        layer_feed(infer, {LayerInput: np.zeros((1, 2))})
    # indices that are a lazy node are checked when evaluated
    lazy = make_train_layer(
        EmbeddingLayer,
        LayerInMap({LayerInput: tn.TensorLike[tn.Int64, tn.CPU, tn.Dim2]}),
        PElemIs(F64),
    )("emb", 5, 2)
    init_params(lazy, {"emb/weight": np.zeros((5, 2))})
    ids = tn.tensor(np.array([[1, 2]]), tn.Int64, tn.CPU, tn.Dim2)
    out = layer_feed(lazy, {LayerInput: ids * 3}).get(LayerOutput)
    lazy.feed_backward(lazy.output_cont())
    lazy.neutral_invariant()
    with pytest.raises(
        tn.IndexRangeError, match=r"embedding index out of range: 6 is not in 0 \.\. 4"
    ):
        out.numpy()
    layer.neutral_invariant()
