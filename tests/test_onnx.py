"""ONNX export (typed_nn.onnx.export): models traced as tn.compile traces them, written as
ONNX, accepted by onnx.checker and run by onnxruntime with typed_nn's numbers (within 1e-5):
the bundled MLP, a CNN, a GRU over a sequence, an LSTM cell; every op of the rule table;
the errors (an op with no counterpart, an assign, a bad opset, the missing extra...)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import test_layers_vjp as lv
from helpers import t32, t64

import typed_nn as tn
from typed_nn import ops
from typed_nn.layers import LayerInput, LayerOutput
from typed_nn.ops.declare import catalogue
from typed_nn.ops.node import build
from typed_nn.ops.structure import DOT
from typed_nn.train.classifier import build_mlp

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from typed_nn.onnx import export  # noqa: E402  (after the skip: the tests need onnx)
from typed_nn.onnx.rules import RULES  # noqa: E402

Array = Any
ATOL = 1e-5


def run_onnx(path: Path, feeds: dict[str, Any]) -> list[Array]:
    """Check the model file, run it with onnxruntime."""
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    arrays = {k: np.asarray(v.numpy() if isinstance(v, tn.Tensor) else v) for k, v in feeds.items()}
    outputs: list[Array] = session.run(None, arrays)
    return outputs


def expected(result: Any) -> list[Array]:
    values = result if isinstance(result, tuple | list) else [result]
    return [tn.evaluate(v).numpy() for v in values]


def assert_exported_equal(
    fn: Callable[..., Any], args: tuple[Any, ...], feeds: dict[str, Any], path: Path, **kw: Any
) -> list[Array]:
    export(fn, args, path, **kw)
    got = run_onnx(path, feeds)
    want = expected(fn(*args))
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=ATOL, atol=ATOL)
    return got


def rand32(*shape: int, seed: int) -> tn.Tensor[Any, Any, Any]:
    return t32(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


# --- the bundled MLP ---------------------------------------------------------------------


@pytest.mark.parametrize("probabilities", [False, True], ids=["logits", "probabilities"])
def test_mlp_exports_and_runs_in_onnxruntime(tmp_path: Path, probabilities: bool) -> None:
    net, params = build_mlp([8, 16, 12, 3], "relu", seed=0)
    x = rand32(5, 8, seed=1)

    def forward(x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.TensorLike[Any, Any, Any]:
        logits = net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
        return ops.softmax(logits) if probabilities else logits

    path = tmp_path / "mlp.onnx"
    assert_exported_equal(forward, (x,), {"x": x}, path, params=params)
    model = onnx.load(str(path))
    weights = {init.name for init in model.graph.initializer}
    assert {"mlp/fc1/weight", "mlp/fc1/bias", "mlp/fc3/weight"} <= weights  # named by params
    assert [i.name for i in model.graph.input] == ["x"]
    assert [o.name for o in model.graph.output] == ["output"]
    assert model.opset_import[0].version == 17
    # the weights are read when exporting: a changed weight shows in a new export only
    w = dict(params.items())["mlp/fc1/weight"]
    w.assign(w * 2.0)
    assert_exported_equal(forward, (x,), {"x": x}, tmp_path / "mlp2.onnx")


# --- a CNN written with ops --------------------------------------------------------------


def test_cnn_exports_and_runs_in_onnxruntime(tmp_path: Path) -> None:
    conv1 = rand32(4, 1, 3, 3, seed=10)
    bias1 = rand32(4, seed=11)
    conv2 = rand32(6, 4, 3, 3, seed=12)
    dense = rand32(6 * 2 * 2, 5, seed=13)

    def cnn(images: tn.Tensor4[tn.Float32, tn.CPU]) -> tn.TensorLike[Any, Any, Any]:
        h = ops.conv2d(images, conv1, padding=1)  # (N, 4, 8, 8)
        h = ops.relu(h + ops.tile(bias1, h.shape, (0, 2, 3)))  # a bias per channel
        h = ops.max_pool2d(h, 2)  # (N, 4, 4, 4)
        h = ops.relu(ops.conv2d(h, conv2, stride=1, padding=(1, 1)))
        h = ops.max_pool2d(h, (2, 2), stride=2)  # (N, 6, 2, 2)
        flat = ops.reshape(h, (h.shape[0], 24))
        return ops.log_softmax(flat @ dense)

    images = rand32(3, 1, 8, 8, seed=14)
    path = tmp_path / "cnn.onnx"
    names = {"conv1/weight": conv1, "conv1/bias": bias1, "conv2/weight": conv2}
    assert_exported_equal(cnn, (images,), {"images": images}, path, params=names)
    stored = {i.name for i in onnx.load(str(path)).graph.initializer}
    assert {"conv1/weight", "conv1/bias", "conv2/weight", "dense"} <= stored


def test_strided_unpadded_conv_and_overlapping_pool(tmp_path: Path) -> None:
    w = rand32(3, 2, 3, 2, seed=20)

    def f(x: tn.Tensor4[tn.Float32, tn.CPU]) -> tn.TensorLike[Any, Any, Any]:
        return ops.max_pool2d(ops.conv2d(x, w, stride=(2, 1), padding=(0, 1)), 3, 1)

    x = rand32(2, 2, 9, 7, seed=21)
    assert_exported_equal(f, (x,), {"x": x}, tmp_path / "conv.onnx")


def test_average_pool_and_embedding(tmp_path: Path) -> None:
    table = rand32(7, 3, seed=22)

    def f(
        x: tn.Tensor4[tn.Float32, tn.CPU], rows: tn.Tensor[tn.Int64, tn.CPU, tn.Dim2]
    ) -> tuple[tn.TensorLike[Any, Any, Any], tn.TensorLike[Any, Any, Any]]:
        return ops.avg_pool2d(x, 2), ops.embedding(table, rows)

    x = rand32(2, 3, 5, 4, seed=23)
    rows = tn.tensor(np.array([[0, 6, 2], [2, 2, 5]]), tn.Int64, tn.CPU, tn.Dim2)
    assert_exported_equal(f, (x, rows), {"x": x, "rows": rows}, tmp_path / "pool.onnx")


def test_losses_on_integer_labels_and_the_composed_activations(tmp_path: Path) -> None:
    """cross_entropy (rank 2 and 3, every reduction, smoothing, ignore_index), the BCE on
    logits, gelu (both forms) and silu: compositions of exportable ops (label_pick is
    GatherElements)."""

    def f(x: Any, seq: Any, labels: Any, steps: Any, targets: Any) -> Any:
        return (
            ops.cross_entropy(x, labels),
            ops.cross_entropy(x, labels, reduction="none", label_smoothing=0.2),
            ops.cross_entropy(seq, steps, reduction="sum", ignore_index=0),
            ops.cross_entropy(seq, steps, label_smoothing=0.1, ignore_index=3),
            ops.binary_cross_entropy_with_logits(x, targets, reduction="none"),
            ops.binary_cross_entropy_with_logits(x, targets, pos_weight=targets[0] + 1.0),
            ops.gelu(x),
            ops.gelu(x, approximate="tanh"),
            ops.silu(x),
        )

    x, seq = rand32(3, 4, seed=60), rand32(2, 3, 4, seed=61)
    labels = tn.tensor(np.array([3, 0, 2]), tn.Int64, tn.CPU, tn.Dim1)
    steps = tn.tensor(np.array([[1, 0, 3], [2, 3, 0]]), tn.Int32, tn.CPU, tn.Dim2)
    targets = t32(np.random.default_rng(62).uniform(0, 1, (3, 4)).astype(np.float32))
    feeds = {"x": x, "seq": seq, "labels": labels, "steps": steps, "targets": targets}
    assert_exported_equal(f, (x, seq, labels, steps, targets), feeds, tmp_path / "ce.onnx")


def test_batched_matmul_follows_numpy(tmp_path: Path) -> None:
    v = rand32(3, seed=24)

    def f(
        a: tn.Tensor[tn.Float32, tn.CPU, tn.Dim3], b: tn.Tensor[tn.Float32, tn.CPU, tn.Dim3]
    ) -> tuple[tn.TensorLike[Any, Any, Any], tn.TensorLike[Any, Any, Any]]:
        return ops.matmul(a, b), ops.matmul(v, b)

    a, b = rand32(2, 4, 3, seed=25), rand32(2, 3, 5, seed=26)
    assert_exported_equal(f, (a, b), {"a": a, "b": b}, tmp_path / "matmul.onnx")


# --- recurrent networks ------------------------------------------------------------------


def test_gru_recurrent_layer_exports_and_runs_in_onnxruntime(tmp_path: Path) -> None:
    built = lv.RECURRENT["gru-6-steps-time-dim-0"](())  # RecurrentLayer of GruStep, 6 steps
    seq, h0 = built.inputs[LayerInput], built.inputs[lv.H]
    assert isinstance(seq, tn.Tensor)
    assert isinstance(h0, tn.Tensor)

    def gru(seq: tn.Tensor3[tn.Float64, tn.CPU], h0: tn.Matrix[tn.Float64, tn.CPU]) -> Any:
        cont = built.layer.input_cont().set(LayerInput, seq).set(lv.H, h0)
        return built.layer.feed_forward(cont).get(LayerOutput)

    got = assert_exported_equal(gru, (seq, h0), {"seq": seq, "h0": h0}, tmp_path / "gru.onnx")
    assert got[0].shape == (6, 2, 4)


def lstm_cell(
    x: tn.TensorLike[Any, Any, Any],
    h: tn.TensorLike[Any, Any, Any],
    c: tn.TensorLike[Any, Any, Any],
    w_ih: tn.Tensor[Any, Any, Any],
    w_hh: tn.Tensor[Any, Any, Any],
    bias: tn.Tensor[Any, Any, Any],
) -> tuple[tn.TensorLike[Any, Any, Any], tn.TensorLike[Any, Any, Any]]:
    """One LSTM step, gate column blocks i, f, g, o (the layout of CONVENTIONS.md)."""
    gates = x @ w_ih + h @ w_hh + bias
    size = h.shape[-1]
    i, f, g, o = (ops.narrow(gates, 1, k * size, size) for k in range(4))
    c_next = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    return ops.sigmoid(o) * ops.tanh(c_next), c_next


def test_lstm_over_a_sequence_exports_and_runs_in_onnxruntime(tmp_path: Path) -> None:
    hidden = 5
    w_ih = rand32(3, 4 * hidden, seed=30)
    w_hh = rand32(hidden, 4 * hidden, seed=31)
    bias = rand32(4 * hidden, seed=32)

    def lstm(seq: tn.Tensor3[tn.Float32, tn.CPU], h: Any, c: Any) -> Any:
        outputs = []
        for t in range(seq.shape[0]):  # unrolled at trace time; seq[t] is a row of the input
            h, c = lstm_cell(seq[t], h, c, w_ih, w_hh, bias)
            outputs.append(h)
        return ops.stack(outputs), c

    seq, h0, c0 = rand32(4, 2, 3, seed=33), rand32(2, hidden, seed=34), rand32(2, hidden, seed=35)
    path = tmp_path / "lstm.onnx"
    got = assert_exported_equal(
        lstm,
        (seq, h0, c0),
        {"seq": seq, "h": h0, "c": c0},
        path,
        output_names=["hidden_states", "cell"],
    )
    assert got[0].shape == (4, 2, hidden)
    model = onnx.load(str(path))
    assert [o.name for o in model.graph.output] == ["hidden_states", "cell"]
    assert {i.name for i in model.graph.initializer} >= {"w_ih", "w_hh", "bias"}  # closure names


# --- every op of the table ---------------------------------------------------------------

NO_COUNTERPART = {
    "abs_grad",
    "avg_pool2d_grad",
    "dropout_mask",
    "random",
    "embedding_grad",
    "acos_grad",
    "acosh_grad",
    "asin_grad",
    "asinh_grad",
    "conv2d_grad_input",
    "conv2d_grad_weight",
    "cos_grad",
    "exp_grad",
    "log_grad",
    "label_pick_grad",
    "log_softmax_grad",
    "max_pool2d_grad",
    "max_pool2d_select",
    "nll_loss_grad",
    "relu_grad",
    "sigmoid_grad",
    "sin_grad",
    "softmax_grad",
    "sqrt_grad",
    "square_grad",
    "tan_grad",
    "tanh_grad",
    "tile_grad",
}


def test_every_op_has_a_rule_or_is_listed_as_having_no_counterpart() -> None:
    ops_by_name = set(catalogue())
    one_operator = {name for name, d in catalogue().items() if d.onnx is not None}
    assert set(RULES) <= ops_by_name
    assert not set(RULES) & one_operator, "an op has both a rule and an ONNX operator"
    exportable = set(RULES) | one_operator
    assert exportable | NO_COUNTERPART == ops_by_name, "a new op needs an ONNX rule or a reason"
    assert not exportable & NO_COUNTERPART


def _unary_cases() -> dict[str, Callable[[Any], Any]]:
    return {
        "exp": ops.exp,
        "log": lambda x: ops.log(ops.abs(x) + 0.5),
        "sqrt": lambda x: ops.sqrt(ops.abs(x)),
        "square": ops.square,
        "sin": ops.sin,
        "cos": ops.cos,
        "tan": lambda x: ops.tan(x * 0.3),
        "asin": lambda x: ops.asin(ops.tanh(x) * 0.9),
        "acos": lambda x: ops.acos(ops.tanh(x) * 0.9),
        "asinh": ops.asinh,
        "acosh": lambda x: ops.acosh(ops.abs(x) + 1.5),
        "sigmoid": ops.sigmoid,
        "tanh": ops.tanh,
        "relu": ops.relu,
        "negative": lambda x: -x,
        "abs": ops.abs,
        "sign": ops.sign,
        "erf": ops.erf,
        "stop_gradient": ops.stop_gradient,
    }


@pytest.mark.parametrize("name", list(_unary_cases()))
def test_elementwise_ops(tmp_path: Path, name: str) -> None:
    op = _unary_cases()[name]
    x = rand32(3, 4, seed=40)
    assert_exported_equal(lambda x: op(x), (x,), {"x": x}, tmp_path / "u.onnx")


def test_arithmetic_with_numbers_float_arguments_and_broadcasting(tmp_path: Path) -> None:
    def f(a: Any, b: Any, scale: float, pair: tuple[float, float]) -> Any:
        s = (1.0 - a) * scale + b / 2.0 - 3.0 / (ops.abs(b) + 1.0)
        return ops.maximum(s, 0.25) + ops.maximum(a, b) * pair[0] - pair[1] * a

    a, b = rand32(2, 3, 4, seed=41), rand32(4, seed=42)
    feeds = {
        "a": a,
        "b": b,
        "scale": np.float32(0.5),
        "pair_0": np.float32(2),
        "pair_1": np.float32(3),
    }
    path = tmp_path / "arith.onnx"
    assert_exported_equal(f, (a, b, 0.5, (2.0, 3.0)), feeds, path)
    inputs = [(i.name, i.type.tensor_type.elem_type) for i in onnx.load(str(path)).graph.input]
    assert inputs == [("a", 1), ("b", 1), ("scale", 1), ("pair_0", 1), ("pair_1", 1)]  # FLOAT


def test_static_arguments_are_fixed_in_the_graph(tmp_path: Path) -> None:
    def f(x: Any, scale: float, repeat: int) -> Any:
        return ops.tile(x * scale, (repeat, *x.shape), (0,))

    x = rand32(2, 3, seed=43)
    path = tmp_path / "static.onnx"
    assert_exported_equal(f, (x, 1.5, 3), {"x": x}, path, static=["scale"])
    assert [i.name for i in onnx.load(str(path)).graph.input] == ["x"]


def test_float_argument_read_by_two_element_types_is_cast(tmp_path: Path) -> None:
    def f(a: Any, b: Any, scale: float) -> Any:
        return a * scale, b * scale

    a, b = rand32(3, seed=44), t64([1.0, 2.0])
    feeds = {"a": a, "b": b, "scale": np.float32(1.25)}
    assert_exported_equal(f, (a, b, 1.25), feeds, tmp_path / "cast.onnx")


def test_softmax_groups_and_reductions(tmp_path: Path) -> None:
    def f(x: Any) -> Any:
        return (
            ops.softmax(x, 2),
            ops.log_softmax(x, 3),
            ops.reduce_sum(x, (0, 2)),
            ops.reduce_mean(x, -1, keep_dim=True),
            ops.reduce_max(x, 1),
            ops.reduce_sum(x),
            ops.argmax(x, 1),
        )

    x = rand32(2, 3, 4, seed=45)
    for opset in (17, 18):
        assert_exported_equal(f, (x,), {"x": x}, tmp_path / f"red{opset}.onnx", opset=opset)


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "k"),
    [((4,), (4,), 1), ((4,), (4, 3), 1), ((2, 4), (4,), 1), ((2, 5, 4), (4, 3), 1),
     ((2, 4), (4, 3, 2), 1), ((2, 3, 4), (3, 4, 5), 2), ((3, 4), (3, 4), 2), ((2, 3, 4), (2, 3, 4), 3)],
)  # fmt: skip
def test_dot_contracts_like_metann(
    tmp_path: Path, a_shape: tuple[int, ...], b_shape: tuple[int, ...], k: int
) -> None:
    a, b = rand32(*a_shape, seed=46), rand32(*b_shape, seed=47)

    def dot(a: Any, b: Any) -> Any:
        return build(DOT, (a, b), (k,))  # ops.dot's overloads want k as a literal

    assert_exported_equal(dot, (a, b), {"a": a, "b": b}, tmp_path / "d.onnx")


def test_layout_and_structure_ops(tmp_path: Path) -> None:
    def f(x: Any, y: Any) -> Any:
        z = x * 1.0  # a node: its rows are slice nodes, not views
        return (
            ops.permute(x, (2, 0, 1)),
            ops.reshape(x, (6, 4)),
            z[1],
            x[1][2],  # a row of a row of the input: Gathers
            ops.narrow(x, 2, 1, 2),
            ops.concat([x, y], 1),
            ops.stack([x, y * 2.0], 2),
            ops.tile(x[0], (3, 3, 4), (0,)),
            ops.tile(y, (4, 6, 4)),
            ops.transpose(ops.reshape(z, (6, 4))),
        )

    x, y = rand32(2, 3, 4, seed=48), rand32(2, 3, 4, seed=49)
    assert_exported_equal(f, (x, y), {"x": x, "y": y}, tmp_path / "layout.onnx")


def test_where_interpolate_astype_sources_and_loss(tmp_path: Path) -> None:
    def f(x: Any, y: Any, c: Any, truth: Any) -> Any:
        pred = ops.softmax(x)
        s = ops.reduce_sum(y)
        return (
            ops.where(c, x, y),
            ops.interpolate(x, y, ops.sigmoid(c)),
            ops.astype(x * 3.0, tn.Int32),
            ops.astype(ops.astype(x * 3.0, tn.Int64) * 2, tn.Float64),
            tn.ConstantTensor(s, (2, 3)),
            tn.BiasVector(4, 1, s),
            tn.ZeroTensor((2, 2), tn.Float32, tn.CPU) + s,
            ops.nll_loss(truth, pred),
            ops.to_device(x, tn.CPU),
        )

    x, y = rand32(2, 3, seed=50), rand32(2, 3, seed=51)
    c = t32(np.array([[0, 1, 0], [2, 0, np.nan]], np.float32))
    truth = t32(np.array([[0, 1, 0], [0.5, 0, 0.5]], np.float32))
    feeds = {"x": x, "y": y, "c": c, "truth": truth}
    assert_exported_equal(f, (x, y, c, truth), feeds, tmp_path / "misc.onnx")


def test_returning_an_input_or_a_weight_and_one_value_twice(tmp_path: Path) -> None:
    w = rand32(3, seed=52)

    def f(x: Any) -> Any:
        y = ops.relu(x)
        return x, w, y, y

    x = rand32(3, seed=53)
    assert_exported_equal(f, (x,), {"x": x}, tmp_path / "ident.onnx")


def test_a_compiled_function_exports_as_its_function(tmp_path: Path) -> None:
    w = rand32(3, 2, seed=55)

    @tn.compile
    def predict(x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.TensorLike[tn.Float32, tn.CPU, tn.Dim2]:
        return ops.sigmoid(x @ w)

    x = rand32(4, 3, seed=56)
    predict(x)  # traced and run once already: export traces again, on its own
    assert_exported_equal(predict, (x,), {"x": x}, tmp_path / "compiled.onnx")
    assert predict.traces == 1


def test_deep_graph_is_written_without_recursion(tmp_path: Path) -> None:
    def f(x: Any) -> Any:
        for _ in range(3000):
            x = x * 1.0001
        return x

    x = rand32(2, seed=54)
    assert_exported_equal(f, (x,), {"x": x}, tmp_path / "deep.onnx")


# --- errors ------------------------------------------------------------------------------


def test_op_without_counterpart_is_an_export_error_naming_op_and_line(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"previous")

    def backward(x: Any, g: Any) -> Any:
        return ops.relu_grad(g, x)  # the line the error names

    line = backward.__code__.co_firstlineno + 1
    x, g = rand32(3, seed=60), rand32(3, seed=61)
    with pytest.raises(tn.ExportError) as err:
        export(backward, (x, g), path)
    text = str(err.value)
    assert "cannot export test_op_without_counterpart" in text
    assert "op 'relu_grad' has no ONNX counterpart" in text
    assert re.search(rf"built at +: test_onnx.py:{line}\n", text)
    assert "hint: export the forward computation only" in text
    assert path.read_bytes() == b"previous"  # a failed export changes nothing


def test_gradient_of_the_function_is_not_exported(tmp_path: Path) -> None:
    w = rand32(3, 2, seed=62)

    def grad_of_loss(x: Any) -> Any:
        return tn.grad(ops.reduce_sum(ops.tanh(x @ w)), [w])[0]

    with pytest.raises(tn.ExportError, match="op 'tanh_grad' has no ONNX counterpart"):
        export(grad_of_loss, (rand32(4, 3, seed=63),), tmp_path / "g.onnx")
    assert not (tmp_path / "g.onnx").exists()


def test_function_that_assigns_is_an_export_error(tmp_path: Path) -> None:
    state = rand32(3, seed=64)

    def update(x: Any) -> Any:
        state.assign(state + x)
        return state * 2.0

    with pytest.raises(tn.ExportError, match=r"cannot export .*update: it assigns a tensor"):
        export(update, (rand32(3, seed=65),), tmp_path / "a.onnx")


@pytest.mark.parametrize("opset", [16, 10_000, "17", True])
def test_opset_out_of_range(tmp_path: Path, opset: Any) -> None:
    with pytest.raises(tn.ExportError, match=f"opset {opset!r} is out of range") as err:
        export(ops.relu, (rand32(3, seed=66),), tmp_path / "o.onnx", opset=opset)
    assert "accepted : 17 to" in str(err.value)


def test_output_names_must_name_each_output_once(tmp_path: Path) -> None:
    x = rand32(3, seed=67)
    with pytest.raises(tn.ExportError, match="output_names does not name each output once"):
        export(lambda x: (x * 2.0, x * 3.0), (x,), tmp_path / "n.onnx", output_names=["a"])
    with pytest.raises(tn.ExportError, match="output_names does not name each output once"):
        export(lambda x: (x * 2.0, x * 3.0), (x,), tmp_path / "n.onnx", output_names=["a", "a"])
    with pytest.raises(tn.ExportError, match=r"names of inputs : 'x'"):
        export(lambda x: x * 2.0, (x,), tmp_path / "n.onnx", output_names=["x"])


def test_default_output_names_avoid_the_inputs(tmp_path: Path) -> None:
    output = rand32(3, seed=70)
    path = tmp_path / "names.onnx"
    assert_exported_equal(lambda output: output * 2.0, (output,), {"output": output}, path)
    assert [o.name for o in onnx.load(str(path)).graph.output] == ["output_1"]


def test_bad_arguments(tmp_path: Path) -> None:
    x = rand32(3, seed=68)
    with pytest.raises(tn.OperandError, match="argument 'x' is a lazy expression"):
        export(ops.relu, (x * 2.0,), tmp_path / "b.onnx")
    with pytest.raises(tn.OperandError, match="the example arguments do not fit its parameters"):
        export(ops.relu, (x, x, x), tmp_path / "b.onnx")  # type: ignore[arg-type]  # the run-time check
    with pytest.raises(tn.ExportError, match="static names no parameter"):
        export(lambda x: x * 2.0, (x,), tmp_path / "b.onnx", static=["y"])
    with pytest.raises(tn.ExportError, match="it returns no tensor"):
        export(lambda x: None, (x,), tmp_path / "b.onnx")


def test_missing_onnx_is_a_one_line_error_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    with pytest.raises(tn.MissingDependencyError) as err:
        export(ops.relu, (rand32(3, seed=69),), tmp_path / "m.onnx")
    assert str(err.value) == (
        "typed_nn.onnx.export needs onnx, which is not installed.\n"
        "hint: install the onnx extra: pip install 'typed_nn[onnx]'"
    )
