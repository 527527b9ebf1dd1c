"""PyTorch state dicts both ways (typed_nn.model.to_torch_state_dict / from_torch_state_dict).

The layouts are checked against fixtures written by scripts/gen_torch_state_references.py: each
PyTorch module's state dict is mapped into typed_nn parameters with the agreed layout
(CONVENTIONS: torch_mapping), the module's forward is recomputed from those parameters with
typed_nn ops, and compared with the output PyTorch computed. No torch needed, except for the
round trips through real PyTorch modules (skipped without torch): a trained MLP and CNN to a
``torch.nn.Sequential`` and back, and the state dicts of ``nn.LSTM``, ``nn.GRU``,
``nn.BatchNorm2d``, ``nn.Embedding`` and ``nn.MultiheadAttention`` loaded into the typed_nn
layers, whose outputs equal the modules'.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from safetensors.numpy import load_file

import typed_nn as tn
from typed_nn import CPU, Dim1, Dim2, Dim3, Dim4, Float32, ops
from typed_nn.layers import (
    BatchNormLayer,
    CellState,
    EmbeddingLayer,
    LayerInput,
    LayerOutput,
    LstmStep,
    MultiHeadAttentionLayer,
    Previous,
    RecurrentLayer,
    TorchGruStep,
    make_infer_layer,
)
from typed_nn.model import (
    LoadBuffer,
    ParamInitializer,
    TorchMapping,
    from_torch_state_dict,
    to_torch_state_dict,
    torch_mapping,
)
from typed_nn.model.torch_mapping import TorchParam
from typed_nn.policies import PActFuncIs, PElemIs, PSeqIDsAre, SeqID
from typed_nn.train import LayerModel, fit, load_digits, predict
from typed_nn.train.classifier import build_mlp, make_optimizer
from typed_nn.train.cnn import build_cnn

REFERENCES = Path(__file__).parent / "references"
Array = npt.NDArray[Any]
Layer = tuple[dict[str, tuple[int, ...]], TorchMapping]


def _reference(kind: str) -> tuple[dict[str, Array], Array, Array]:
    stored = load_file(str(REFERENCES / f"torch_state_{kind}.safetensors"))
    state = {k.removeprefix("state/"): v for k, v in stored.items() if k.startswith("state/")}
    return state, stored["input"], stored["output"]


def _loaded(kind: str, shapes: Mapping[str, tuple[int, ...]], mapping: TorchMapping) -> Any:
    """The reference's state dict loaded (strictly) into zero parameters of ``shapes``;
    returns (params, input, expected output, state)."""
    state, x, y = _reference(kind)
    params: LoadBuffer[Float32, CPU] = LoadBuffer(Float32, CPU)
    for name, shape in shapes.items():
        params.set(name, tn.zeros(shape, Float32, CPU))
    report = from_torch_state_dict(state, params, mapping)
    assert report.loaded == tuple(shapes)
    assert report.missing_keys == report.unexpected_keys == report.unmapped_params == ()
    return params, x, y, state


def _f32(a: Array) -> Array:
    return np.asarray(a, np.float32)


def _m(a: Array) -> tn.TensorLike[Float32, CPU, Dim2]:
    return tn.tensor(_f32(a), Float32, CPU, Dim2)


def _mat(params: LoadBuffer[Float32, CPU], name: str) -> tn.Tensor[Float32, CPU, Dim2]:
    value = params.try_get(name, Dim2)
    assert value is not None
    return value


def _vec(params: LoadBuffer[Float32, CPU], name: str) -> tn.Tensor[Float32, CPU, Dim1]:
    value = params.try_get(name, Dim1)
    assert value is not None
    return value


def _close(got: tn.TensorLike[Float32, CPU, Any], want: Array) -> None:
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def _check_round_trip(
    params: LoadBuffer[Float32, CPU], mapping: TorchMapping, state: dict[str, Array]
) -> None:
    back = to_torch_state_dict(params, mapping)
    assert sorted(back) == sorted(state)  # PyTorch's names (the fixture file sorts them)
    for key, value in state.items():
        want = np.zeros((), np.int64) if key.endswith("num_batches_tracked") else value
        assert back[key].dtype == want.dtype
        np.testing.assert_array_equal(back[key], want)


def test_linear_layout() -> None:
    mapping = torch_mapping.linear("fc", "")
    params, x, y, state = _loaded("linear", {"fc/weight": (5, 3), "fc/bias": (3,)}, mapping)
    _close(ops.dot(_m(x), _mat(params, "fc/weight")) + params["fc/bias"], y)
    _check_round_trip(params, mapping, state)


def test_conv2d_layout() -> None:
    mapping = torch_mapping.conv2d("conv", "")
    shapes = {"conv/weight": (3, 2, 3, 3), "conv/bias": (3,)}
    params, x, y, state = _loaded("conv2d", shapes, mapping)
    w = params.try_get("conv/weight", Dim4)
    assert w is not None
    out = ops.conv2d(tn.tensor(_f32(x), Float32, CPU, Dim4), w, padding=1)
    # The bias adds per output channel: channels last, it broadcasts over the trailing dim.
    _close(ops.permute(out, (0, 2, 3, 1)) + params["conv/bias"], y.transpose(0, 2, 3, 1))
    _check_round_trip(params, mapping, state)


def test_embedding_layout() -> None:
    mapping = torch_mapping.embedding("emb", "")
    params, x, y, state = _loaded("embedding", {"emb/weight": (7, 4)}, mapping)
    one_hot = tn.tensor(np.eye(7, dtype=np.float32)[x], Float32, CPU, Dim3)
    _close(ops.dot(one_hot, _mat(params, "emb/weight")), y)
    _check_round_trip(params, mapping, state)


def _batch_norm(x: tn.TensorLike[Float32, CPU, Any], params: LoadBuffer[Float32, CPU]) -> Any:
    """Inference-mode batch norm of channels-last ``x`` from the running statistics."""
    mean, var = params["bn/running_mean"], params["bn/running_var"]
    return (x - mean) / ops.sqrt(var + 1e-5) * params["bn/weight"] + params["bn/bias"]


BN_SHAPES = {f"bn/{n}": (3,) for n in ("weight", "bias", "running_mean", "running_var")}


def test_batch_norm_1d_layout() -> None:
    mapping = torch_mapping.batch_norm("bn", "")
    params, x, y, state = _loaded("batchnorm1d", BN_SHAPES, mapping)
    assert int(state["num_batches_tracked"]) == 3  # ignored on load, 0 on export
    _close(_batch_norm(_m(x), params), y)
    _check_round_trip(params, mapping, state)


def test_batch_norm_2d_layout() -> None:
    mapping = torch_mapping.batch_norm("bn", "")
    params, x, y, state = _loaded("batchnorm2d", BN_SHAPES, mapping)
    nhwc = tn.tensor(_f32(x).transpose(0, 2, 3, 1), Float32, CPU, Dim4)
    _close(_batch_norm(nhwc, params), y.transpose(0, 2, 3, 1))
    _check_round_trip(params, mapping, state)


def test_layer_norm_layout() -> None:
    mapping = torch_mapping.layer_norm("ln", "")
    params, x, y, state = _loaded("layernorm", {"ln/weight": (4,), "ln/bias": (4,)}, mapping)
    xt = ops.transpose(_m(x))  # (dim, batch): per-sample statistics broadcast over the last dim
    centred = xt - ops.reduce_mean(xt, first=1)
    normed = ops.transpose(centred / ops.sqrt(ops.reduce_mean(centred * centred, first=1) + 1e-5))
    _close(normed * params["ln/weight"] + params["ln/bias"], y)
    _check_round_trip(params, mapping, state)


def _recurrent_shapes(name: str, gates: int) -> dict[str, tuple[int, ...]]:
    hidden, fan_in = 4, 3
    return {
        f"{name}/w_ih": (fan_in, gates * hidden),
        f"{name}/w_hh": (hidden, gates * hidden),
        f"{name}/b_ih": (gates * hidden,),
        f"{name}/b_hh": (gates * hidden,),
    }


def _block(x: tn.TensorLike[Float32, CPU, Dim2], i: int) -> tn.TensorLike[Float32, CPU, Dim2]:
    return ops.narrow(x, 1, 4 * i, 4)


def test_lstm_layout() -> None:
    mapping = torch_mapping.lstm("lstm", "")
    params, x, y, state = _loaded("lstm", _recurrent_shapes("lstm", 4), mapping)
    w_ih, w_hh = _mat(params, "lstm/w_ih"), _mat(params, "lstm/w_hh")
    b_ih, b_hh = _vec(params, "lstm/b_ih"), _vec(params, "lstm/b_hh")
    h: tn.TensorLike[Float32, CPU, Dim2] = tn.zeros((2, 4), Float32, CPU)
    c: tn.TensorLike[Float32, CPU, Dim2] = tn.zeros((2, 4), Float32, CPU)
    for t in range(x.shape[1]):
        gates = ops.dot(_m(x[:, t]), w_ih) + b_ih + ops.dot(h, w_hh) + b_hh
        i, f, g, o = (_block(gates, k) for k in range(4))  # PyTorch's gate order
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
        h = ops.sigmoid(o) * ops.tanh(c)
        _close(h, y[:, t])
    _check_round_trip(params, mapping, state)


def test_gru_layout() -> None:
    mapping = torch_mapping.gru("gru", "")
    params, x, y, state = _loaded("gru", _recurrent_shapes("gru", 3), mapping)
    w_ih, w_hh = _mat(params, "gru/w_ih"), _mat(params, "gru/w_hh")
    b_ih, b_hh = _vec(params, "gru/b_ih"), _vec(params, "gru/b_hh")
    h: tn.TensorLike[Float32, CPU, Dim2] = tn.zeros((2, 4), Float32, CPU)
    for t in range(x.shape[1]):
        gi, gh = ops.dot(_m(x[:, t]), w_ih) + b_ih, ops.dot(h, w_hh) + b_hh
        r = ops.sigmoid(_block(gi, 0) + _block(gh, 0))
        z = ops.sigmoid(_block(gi, 1) + _block(gh, 1))
        n = ops.tanh(_block(gi, 2) + r * _block(gh, 2))  # reset gate on h·W_hn + b_hn
        h = n + z * (h - n)
        _close(h, y[:, t])
    _check_round_trip(params, mapping, state)


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_layout(causal: bool) -> None:
    d, heads = 8, 2
    width = d // heads
    mapping = torch_mapping.multi_head_attention("mha", "")
    shapes = {
        "mha/w_qkv": (d, 3 * d),
        "mha/b_qkv": (3 * d,),
        "mha/w_out": (d, d),
        "mha/b_out": (d,),
    }
    params, x, y, state = _loaded("mha_causal" if causal else "mha", shapes, mapping)
    w_qkv, w_out = _mat(params, "mha/w_qkv"), _mat(params, "mha/w_out")
    seq = x.shape[1]
    mask = _m(np.triu(np.full((seq, seq), -1e9), 1) if causal else np.zeros((seq, seq)))
    for b in range(x.shape[0]):
        qkv = ops.dot(_m(x[b]), w_qkv) + params["mha/b_qkv"]  # column blocks q, k, v
        outs = []
        for head in range(heads):
            q, k, v = (ops.narrow(qkv, 1, part * d + head * width, width) for part in range(3))
            scores = ops.dot(q, ops.transpose(k)) * (1.0 / np.sqrt(width)) + mask
            outs.append(ops.dot(ops.softmax(scores), v))
        _close(ops.dot(ops.concat(outs, axis=1), w_out) + params["mha/b_out"], y[b])
    _check_round_trip(params, mapping, state)


# ---- a model trained here, through a real torch.nn.Sequential and back ------------------


def test_trained_mlp_round_trip_through_torch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional anchor)")
    split = load_digits(seed=0)
    net, params = build_mlp([64, 32, 16, 10], "relu", seed=0)
    fit(net, split.train, make_optimizer("adam"), epochs=2, batch_size=64)
    mapping = torch_mapping.mlp("mlp", 3)
    module = torch.nn.Sequential(
        torch.nn.Linear(64, 32),
        torch.nn.ReLU(),
        torch.nn.Linear(32, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 10),
    )
    state = to_torch_state_dict(params, mapping)
    module.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})  # strict
    with torch.no_grad():
        logits = module(torch.from_numpy(split.test.features))
    np.testing.assert_allclose(
        torch.softmax(logits, 1).numpy(), predict(net, split.test), rtol=1e-4, atol=1e-6
    )

    torch.manual_seed(1)  # other weights in PyTorch, loaded back into the typed_nn model
    for layer in module:
        if isinstance(layer, torch.nn.Linear):
            layer.reset_parameters()
    back = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    report = from_torch_state_dict(back, params, mapping)
    assert report.loaded == tuple(params)
    np.testing.assert_array_equal(params["mlp/fc1/weight"].numpy(), back["0.weight"].T)
    with torch.no_grad():
        logits = module(torch.from_numpy(split.test.features))
    np.testing.assert_allclose(
        torch.softmax(logits, 1).numpy(), predict(net, split.test), rtol=1e-4, atol=1e-6
    )


def test_trained_cnn_round_trip_through_torch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional anchor)")
    nn = torch.nn
    split = load_digits(seed=0)
    shape = (1, 8, 8)
    net, params = build_cnn(seed=0)
    fit(
        LayerModel(net, input_shape=shape),
        split.train,
        make_optimizer("adam"),
        epochs=2,
        batch_size=64,
    )
    mapping = torch_mapping.digits_cnn("cnn")
    module = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 10),
    )
    images = torch.from_numpy(split.test.features.reshape(-1, *shape))

    def torch_probabilities() -> Array:
        with torch.no_grad():
            out: Array = torch.softmax(module(images), 1).numpy()
        return out

    state = to_torch_state_dict(params, mapping)
    assert list(state) == ["0.weight", "0.bias", "4.weight", "4.bias"]
    module.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})  # strict
    ours = predict(net, split.test, input_shape=shape)
    np.testing.assert_allclose(torch_probabilities(), ours, rtol=1e-5, atol=1e-5)

    torch.manual_seed(1)  # other weights in PyTorch, loaded back into the typed_nn model
    for layer in (module[0], module[4]):
        layer.reset_parameters()
    back = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    report = from_torch_state_dict(back, params, mapping)
    assert report.loaded == tuple(params)
    after = predict(net, split.test, input_shape=shape)
    assert not np.allclose(after, ours)  # the new weights are in use
    np.testing.assert_allclose(torch_probabilities(), after, rtol=1e-5, atol=1e-5)


# ---- PyTorch modules' state dicts through the real typed_nn layers ---------------------------


def _torch_into(
    layer: Any, module: Any, mapping: TorchMapping, shapes: Mapping[str, tuple[int, ...]]
) -> LoadBuffer[Float32, CPU]:
    """``module``'s state dict loaded strictly into zero parameters of ``shapes``, which
    ``layer`` then takes (a layer loads what its load buffer holds); exporting them gives the
    state dict back."""
    state = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    params: LoadBuffer[Float32, CPU] = LoadBuffer(Float32, CPU)
    for name, shape in shapes.items():
        params.set(name, tn.zeros(shape, Float32, CPU))
    from_torch_state_dict(state, params, mapping)
    layer.init(ParamInitializer(), params)
    assert sorted(params) == sorted(shapes)  # the layer created none of its own
    _check_round_trip(params, mapping, state)
    return params


def _forward(layer: Any, inputs: Mapping[type, Any]) -> Any:
    cont = layer.input_cont()
    for port, value in inputs.items():
        cont = cont.set(port, value)
    return layer.feed_forward(cont)


def _t(a: Array, rank: type) -> Any:
    return tn.tensor(np.ascontiguousarray(a), Float32, CPU, rank)


def _randomised(torch: Any, module: Any) -> Any:
    torch.manual_seed(0)
    with torch.no_grad():
        for value in module.state_dict().values():
            if value.is_floating_point():
                value.copy_(torch.randn(value.shape) * 0.5)
    return module.eval()


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_torch_recurrent_layers_load_into_steps(kind: str) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional anchor)")
    fan_in, hidden, steps, batch = 3, 4, 5, 2
    lstm = kind == "lstm"
    module = _randomised(torch, (torch.nn.LSTM if lstm else torch.nn.GRU)(fan_in, hidden))
    step = LstmStep if lstm else TorchGruStep
    h_port, c_port = Previous(LayerOutput), Previous(CellState)
    layer = make_infer_layer(
        RecurrentLayer, PActFuncIs(step), PSeqIDsAre(SeqID(LayerInput, 0)), PElemIs(Float32)
    )("rnn", fan_in, hidden)
    mapping = (torch_mapping.lstm if lstm else torch_mapping.gru)("rnn/kernel", "")
    _torch_into(layer, module, mapping, _recurrent_shapes("rnn/kernel", 4 if lstm else 3))
    x = torch.randn(steps, batch, fan_in)
    h0, c0 = torch.randn(1, batch, hidden), torch.randn(1, batch, hidden)
    inputs: dict[type, Any] = {LayerInput: _t(x.numpy(), Dim3), h_port: _t(h0[0].numpy(), Dim2)}
    if lstm:
        inputs[c_port] = _t(c0[0].numpy(), Dim2)
    with torch.no_grad():
        want, _ = module(x, (h0, c0) if lstm else h0)
    _close(_forward(layer, inputs).get(LayerOutput), want.numpy())


def test_torch_batch_norm_loads_into_the_layer() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional anchor)")
    module = torch.nn.BatchNorm2d(3)
    module.train()
    with torch.no_grad():  # non-trivial running statistics and affine parameters
        for _ in range(3):
            module(torch.randn(6, 3, 4, 4) * 2.0 + 0.5)
        module.weight.uniform_(0.5, 1.5)
        module.bias.uniform_(-0.5, 0.5)
    module.eval()
    layer = make_infer_layer(BatchNormLayer, PElemIs(Float32))("bn", 3)
    shapes = {f"bn/{n}": (3,) for n in ("weight", "bias", "running_mean", "running_var")}
    params = _torch_into(layer, module, torch_mapping.batch_norm("bn", ""), shapes)
    np.testing.assert_array_equal(params["bn/running_var"].numpy(), module.running_var.numpy())
    x = torch.randn(2, 3, 4, 4)
    with torch.no_grad():
        want = module(x).numpy()
    _close(_forward(layer, {LayerInput: _t(x.numpy(), Dim4)}).get(LayerOutput), want)


def test_torch_embedding_loads_into_the_layer() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional anchor)")
    module = _randomised(torch, torch.nn.Embedding(7, 4))
    layer = make_infer_layer(EmbeddingLayer, PElemIs(Float32))("emb", 7, 4)
    _torch_into(layer, module, torch_mapping.embedding("emb", ""), {"emb/weight": (7, 4)})
    ids = np.array([[0, 3, 6], [3, 3, 1]])
    with torch.no_grad():
        want = module(torch.from_numpy(ids)).numpy()
    got = _forward(layer, {LayerInput: tn.tensor(ids, tn.Int64, CPU, Dim2)}).get(LayerOutput)
    _close(got, want)


@pytest.mark.parametrize("causal", [False, True])
def test_torch_multi_head_attention_loads_into_the_layer(causal: bool) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional anchor)")
    d, heads, seq = 8, 2, 5
    module = _randomised(torch, torch.nn.MultiheadAttention(d, heads, batch_first=True))
    layer = make_infer_layer(MultiHeadAttentionLayer, PElemIs(Float32))(
        "mha", d, heads, causal=causal
    )
    shapes = {
        "mha/w_qkv": (d, 3 * d),
        "mha/b_qkv": (3 * d,),
        "mha/w_out": (d, d),
        "mha/b_out": (d,),
    }
    _torch_into(layer, module, torch_mapping.multi_head_attention("mha", ""), shapes)
    x = torch.randn(3, seq, d)
    mask = torch.triu(torch.full((seq, seq), float("-inf")), 1) if causal else None
    with torch.no_grad():
        want, _ = module(x, x, x, attn_mask=mask, need_weights=False)
    _close(_forward(layer, {LayerInput: _t(x.numpy(), Dim3)}).get(LayerOutput), want.numpy())


# ---- mappings ------------------------------------------------------------------------------


def test_mlp_mapping_names_and_layouts() -> None:
    mapping = torch_mapping.mlp("net", 2) + torch_mapping.batch_norm("bn", "head.norm")
    assert mapping.keys == (
        "0.weight",
        "0.bias",
        "2.weight",
        "2.bias",
        "head.norm.weight",
        "head.norm.bias",
        "head.norm.running_mean",
        "head.norm.running_var",
        "head.norm.num_batches_tracked",
    )
    assert mapping.params[0] == TorchParam("0.weight", "net/fc1/weight", transpose=True)
    assert [e.key for e in torch_mapping.mlp("m", 2, module="body", stride=1)] == [
        "body.0.weight",
        "body.0.bias",
        "body.1.weight",
        "body.1.bias",
    ]
    assert torch_mapping.digits_cnn("net", module="features").params == (
        TorchParam("features.0.weight", "net/conv/weight"),
        TorchParam("features.0.bias", "net/conv/bias"),
        TorchParam("features.4.weight", "net/fc/weight", transpose=True),
        TorchParam("features.4.bias", "net/fc/bias"),
    )


def test_mapping_rejects_duplicates() -> None:
    with pytest.raises(
        tn.ParamError, match=r"names a PyTorch key twice\.\n  repeated : '0.bias', '0.weight'"
    ):
        torch_mapping.linear("a", "0") + torch_mapping.linear("b", "0")
    with pytest.raises(tn.ParamError, match=r"typed_nn parameter twice\.\n  repeated : 'a/bias'"):
        torch_mapping.linear("a", "0") + torch_mapping.linear("a", "1")
    with pytest.raises(tn.ParamError, match="needs at least one layer"):
        torch_mapping.mlp("m", 0)


# ---- bad input: typed errors naming the key, nothing changed ---------------------------------


def _model() -> tuple[LoadBuffer[Float32, CPU], TorchMapping, dict[str, Array]]:
    _, params = build_mlp([4, 3, 2], "relu", seed=0)
    mapping = torch_mapping.mlp("mlp", 2)
    rng = np.random.default_rng(0)
    state = {
        k: rng.standard_normal(v.shape).astype(np.float32)
        for k, v in to_torch_state_dict(params, mapping).items()
    }
    return params, mapping, state


def _snapshot(params: LoadBuffer[Float32, CPU]) -> dict[str, Array]:
    return {name: t.numpy().copy() for name, t in params.items()}


def _unchanged(params: LoadBuffer[Float32, CPU], before: dict[str, Array]) -> None:
    for name, value in before.items():
        np.testing.assert_array_equal(params[name].numpy(), value)


def test_strict_load_rejects_missing_and_unexpected_keys() -> None:
    params, mapping, state = _model()
    before = _snapshot(params)
    del state["2.bias"]
    state["2.scale"] = np.ones(2, np.float32)
    with pytest.raises(tn.ParamError) as caught:
        from_torch_state_dict(state, params, mapping)
    text = str(caught.value)
    assert "cannot load the PyTorch state dict: it does not match the parameters." in text
    assert "missing keys    : '2.bias'" in text
    assert "unexpected keys : '2.scale'" in text
    assert "hint: nothing was changed." in text
    assert "or pass strict=False to load the keys both have" in text
    _unchanged(params, before)


def test_non_strict_load_reports_like_torch() -> None:
    params, mapping, state = _model()
    bias = params["mlp/fc2/bias"].numpy().copy()
    del state["2.bias"]
    state["2.scale"] = np.ones(2, np.float32)
    report = from_torch_state_dict(state, params, mapping, strict=False)
    assert report.missing_keys == ("2.bias",)
    assert report.unexpected_keys == ("2.scale",)
    assert report.loaded == ("mlp/fc1/weight", "mlp/fc1/bias", "mlp/fc2/weight")
    np.testing.assert_array_equal(params["mlp/fc1/weight"].numpy(), state["0.weight"].T)
    np.testing.assert_array_equal(params["mlp/fc2/bias"].numpy(), bias)  # not in the state


def test_misshaped_entry_names_key_and_shapes_in_both_modes() -> None:
    params, mapping, state = _model()
    before = _snapshot(params)
    state["0.weight"] = state["0.weight"].T.copy()  # typed_nn's layout, not PyTorch's
    for strict in (True, False):
        with pytest.raises(
            tn.ParamError,
            match=r"'0.weight' : expected shape \(3, 4\) \(parameter 'mlp/fc1/weight' is "
            r"Tensor\[Float32, CPU, Dim2\]\(4, 3\), transposed\), received \(4, 3\)\n"
            r"hint: nothing was changed\. A misshaped entry",
        ):
            from_torch_state_dict(state, params, mapping, strict=strict)
    _unchanged(params, before)


def test_wrong_dtype_is_not_cast() -> None:
    params, mapping, state = _model()
    before = _snapshot(params)
    state["2.bias"] = state["2.bias"].astype(np.float64)
    with pytest.raises(
        tn.ParamError,
        match=r"'2.bias' : expected dtype float32 \(parameter 'mlp/fc2/bias' is "
        r"Tensor\[Float32, CPU, Dim1\]\(2\)\), received float64\n.*v\.astype\(np\.float32\)",
    ):
        from_torch_state_dict(state, params, mapping)
    _unchanged(params, before)


def test_unreadable_value() -> None:
    class Unreadable:
        def __array__(self, dtype: object = None, copy: object = None) -> Array:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad.")

    params, mapping, state = _model()
    values: dict[str, object] = dict(state)
    values["0.bias"] = Unreadable()
    with pytest.raises(
        tn.ParamError,
        match=r"'0.bias' : Unreadable cannot be read as an array \(\"Can't call numpy",
    ):
        from_torch_state_dict(values, params, mapping)
    values["0.bias"] = "abc"
    with pytest.raises(tn.ParamError, match=r"'0.bias' : expected shape \(3\) .*, received \(\)"):
        from_torch_state_dict(values, params, mapping)


def test_read_only_parameters_are_not_written() -> None:
    params, mapping, state = _model()
    before = _snapshot(params)
    params["mlp/fc2/bias"].array.flags.writeable = False
    with pytest.raises(
        tn.ParamError, match=r"read-only : 'mlp/fc2/bias'\nhint: nothing was changed\. Load"
    ):
        from_torch_state_dict(state, params, mapping)
    _unchanged(params, before)


def test_mapping_and_model_must_agree() -> None:
    params, _, state = _model()
    wrong = torch_mapping.mlp("net", 2)
    with pytest.raises(
        tn.ParamError,
        match=r"the mapping names parameters the model does not have\.\n"
        r"  not parameters : 'net/fc1/weight', .*\n  closest        : 'mlp/fc1/weight'",
    ):
        from_torch_state_dict(state, params, wrong)
    with pytest.raises(tn.ParamError, match="to_torch_state_dict: the mapping names parameters"):
        to_torch_state_dict(params, wrong)
    partial = torch_mapping.linear("mlp/fc1", "0")
    with pytest.raises(
        tn.ParamError,
        match=r"to_torch_state_dict: parameters have no entry in the mapping\.\n"
        r"  unmapped : 'mlp/fc2/weight', 'mlp/fc2/bias'",
    ):
        to_torch_state_dict(params, partial)
    assert list(to_torch_state_dict(params, partial, strict=False)) == ["0.weight", "0.bias"]
    with pytest.raises(tn.ParamError, match="from_torch_state_dict: parameters have no entry"):
        from_torch_state_dict(state, params, partial)
    report = from_torch_state_dict(state, params, partial, strict=False)
    assert report.unmapped_params == ("mlp/fc2/weight", "mlp/fc2/bias")
    assert report.unexpected_keys == ("2.weight", "2.bias")


def test_transposing_a_vector_is_a_mapping_error() -> None:
    params, _, state = _model()
    mapping = TorchMapping((TorchParam("0.bias", "mlp/fc1/bias", transpose=True),))
    with pytest.raises(
        tn.ParamError, match="the mapping transposes 'mlp/fc1/bias', which is not a matrix"
    ):
        from_torch_state_dict(state, params, mapping, strict=False)


def test_wrong_argument_kinds() -> None:
    params, mapping, state = _model()
    with pytest.raises(tn.OperandError, match="needs a mapping key -> array as the state"):
        from_torch_state_dict([1, 2], params, mapping)  # type: ignore[arg-type]
    with pytest.raises(tn.OperandError, match="to_torch_state_dict needs a TorchMapping"):
        to_torch_state_dict(params, {"0.weight": "mlp/fc1/weight"})  # type: ignore[arg-type]
    lazy = {"mlp/fc1/weight": params["mlp/fc1/weight"] * 2.0}
    with pytest.raises(tn.OperandError, match="parameter 'mlp/fc1/weight' is not a Tensor"):
        from_torch_state_dict(state, lazy, torch_mapping.linear("mlp/fc1", "0"), strict=False)  # type: ignore[arg-type]


def test_export_copies_and_writes_buffers_as_zero() -> None:
    params, _, _ = _model()
    mapping = torch_mapping.mlp("mlp", 2)
    state = to_torch_state_dict(params, mapping)
    assert state["0.weight"].flags.c_contiguous
    state["0.weight"][...] = 7.0  # a copy: the parameter is untouched
    assert not np.any(params["mlp/fc1/weight"].numpy() == 7.0)
