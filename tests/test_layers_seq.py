"""BatchNormLayer, LayerNormLayer, LstmStep and TorchGruStep: values and gradients against
PyTorch references (tests/references/seq_*.safetensors, scripts/gen_seq_references.py),
finite differences, LIFO, running statistics eagerly and under tn.compile, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from composite_helpers import collect, fd_param, init_params
from helpers import Array, check_layer_gradients, layer_feed, t64

import typed_nn as tn
from typed_nn.layers import (
    BatchNormLayer,
    CellState,
    LayerInMap,
    LayerInput,
    LayerNormLayer,
    LayerOutput,
    LstmStep,
    Previous,
    RecurrentLayer,
    TorchGruStep,
    make_infer_layer,
    make_train_layer,
    tensor_type,
)
from typed_nn.model import GradCollector, LoadBuffer, ParamInitializer
from typed_nn.model.safetensors_format import parse
from typed_nn.policies import (
    PActFuncIs,
    PElemIs,
    PFeedbackOutput,
    PSeqIDsAre,
    PUpdate,
    SeqID,
)

REFERENCES = Path(__file__).parent / "references"
H, C = Previous(LayerOutput), Previous(CellState)
F64 = PElemIs(tn.Float64)
rng = np.random.default_rng(20)


def reference(name: str) -> dict[str, Array]:
    """The arrays of tests/references/seq_<name>.safetensors."""
    data = (REFERENCES / f"seq_{name}.safetensors").read_bytes()
    entries, _, base = parse(data, name)
    return {k: e.array(data, base).copy() for k, e in entries.items()}


def typ(rank: int) -> object:
    return tensor_type(tn.Float64, tn.CPU, rank)


def params_of(ref: dict[str, Array], prefix: str) -> dict[str, Array]:
    return {f"{prefix}/{k[6:]}": v for k, v in ref.items() if k.startswith("param/")}


def close(a: Any, b: Array) -> None:
    np.testing.assert_allclose(np.asarray(a), b, rtol=1e-9, atol=1e-11)


# --- BatchNormLayer -----------------------------------------------------------------------


def batchnorm(rank: int, *policies: Any) -> Any:
    return make_train_layer(BatchNormLayer, LayerInMap({LayerInput: typ(rank)}), F64, *policies)


@pytest.mark.parametrize("name", ["batchnorm1d", "batchnorm2d"])
def test_batchnorm_matches_pytorch(name: str) -> None:
    batchnorm_against(reference(name))


def batchnorm_against(ref: dict[str, Array]) -> None:
    x, g = ref["x"], ref["g"]
    layer = batchnorm(x.ndim, PUpdate, PFeedbackOutput)("bn", x.shape[1], momentum=0.3, eps=1e-3)
    buffer = init_params(layer, params_of(ref, "bn"))
    out = layer_feed(layer, {LayerInput: x}).get(LayerOutput)
    # the running statistics are written at once (eagerly), from the unbiased variance
    close(buffer.try_get("bn/running_mean").numpy(), ref["running_mean_after"])  # type: ignore[union-attr]
    close(buffer.try_get("bn/running_var").numpy(), ref["running_var_after"])  # type: ignore[union-attr]
    close(out.numpy(), ref["out"])
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    close(back.get(LayerInput).numpy(), ref["dx"])
    grads = collect(layer)
    assert sorted(grads) == ["bn/bias", "bn/weight"]  # the running statistics are not trained
    close(grads["bn/weight"], ref["dweight"])
    close(grads["bn/bias"], ref["dbias"])
    layer.neutral_invariant()
    # an inference layer sharing the parameters uses the running statistics
    infer = make_infer_layer(BatchNormLayer, F64)("bn", x.shape[1], momentum=0.3, eps=1e-3)
    infer.init(ParamInitializer(), buffer)
    before = buffer.try_get("bn/running_mean").numpy().copy()  # type: ignore[union-attr]
    close(layer_feed(infer, {LayerInput: x}).get(LayerOutput).numpy(), ref["out_eval"])
    close(buffer.try_get("bn/running_mean").numpy(), before)  # type: ignore[union-attr]
    infer.neutral_invariant()
    # so does the training layer inside tn.inference(), keeping nothing for a backward
    with tn.inference():
        close(layer_feed(layer, {LayerInput: x}).get(LayerOutput).numpy(), ref["out_eval"])
    close(buffer.try_get("bn/running_mean").numpy(), before)  # type: ignore[union-attr]
    layer.neutral_invariant()


def test_batchnorm_defaults_and_names() -> None:
    layer = batchnorm(2, PUpdate)("bn", 3)
    buffer: LoadBuffer[Any, Any] = LoadBuffer(tn.Float64, tn.CPU)
    layer.init(ParamInitializer(), buffer)  # no filler needed: PyTorch's constants
    values = {name: t.numpy() for name, t in buffer.items()}
    assert sorted(values) == ["bn/bias", "bn/running_mean", "bn/running_var", "bn/weight"]
    close(values["bn/weight"], np.ones(3))
    close(values["bn/bias"], np.zeros(3))
    close(values["bn/running_mean"], np.zeros(3))
    close(values["bn/running_var"], np.ones(3))


@pytest.mark.parametrize("shape", [(6, 3), (3, 2, 3, 2)])
def test_batchnorm_finite_differences(shape: tuple[int, ...]) -> None:
    layer = batchnorm(len(shape), PUpdate, PFeedbackOutput)("bn", shape[1])
    c = shape[1]
    buffer = init_params(
        layer,
        {
            "bn/weight": rng.uniform(0.5, 1.5, c),
            "bn/bias": rng.standard_normal(c),
            "bn/running_mean": np.zeros(c),
            "bn/running_var": np.ones(c),
        },
    )
    x = rng.standard_normal(shape) * 1.5 + 0.5
    check_layer_gradients(
        shared(batchnorm(len(shape), PFeedbackOutput), buffer, shape[1]), {LayerInput: x}
    )
    g = rng.standard_normal(shape)
    layer_feed(layer, {LayerInput: x})
    layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    grads = collect(layer)
    for name in ("bn/weight", "bn/bias"):
        numeric = fd_param(layer, buffer, name, {LayerInput: x}, g)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-8, err_msg=name)
    layer.neutral_invariant()


def test_batchnorm_lifo() -> None:
    layer = batchnorm(2, PUpdate, PFeedbackOutput)("bn", 3)
    init_params(layer, {"bn/weight": np.ones(3), "bn/bias": np.zeros(3)} | _stats(3))
    xs = [rng.standard_normal((5, 3)) * (i + 1) + i for i in range(4)]
    for x in xs:
        layer_feed(layer, {LayerInput: x})
    for x in reversed(xs):
        g = rng.standard_normal((5, 3))
        back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
        xc = x - x.mean(0)
        inv = 1 / np.sqrt(xc.var(0) + 1e-5)
        y = xc * inv
        expected = inv * (g - g.mean(0) - y * (g * y).mean(0))  # paired with its own x
        close(back.get(LayerInput).numpy(), expected)
        close(collect(layer)["bn/weight"], (g * y).sum(0))
    layer.neutral_invariant()


def shared(cls: Any, buffer: LoadBuffer[Any, Any], *args: int, name: str = "bn") -> Any:
    """A layer of ``cls`` on the parameters in ``buffer`` (loaded: shared)."""
    layer = cls(name, *args)
    layer.init(ParamInitializer(), buffer)
    return layer


def _stats(c: int) -> dict[str, Array]:
    return {"bn/running_mean": np.zeros(c), "bn/running_var": np.ones(c)}


def test_batchnorm_running_statistics_under_compile() -> None:
    """A compiled training step (forward, backward, SGD on weight and bias) writes the running
    statistics in place at every call, as the eager forward does, and PyTorch's momentum."""
    ref = reference("batchnorm2d")
    x = ref["x"]
    layer = batchnorm(4, PUpdate, PFeedbackOutput)("bn", 2, momentum=0.3, eps=1e-3)
    buffer = init_params(layer, params_of(ref, "bn"))
    running_mean = buffer.try_get("bn/running_mean")
    running_var = buffer.try_get("bn/running_var")
    assert running_mean is not None
    assert running_var is not None
    xt, gt = t64(x), t64(ref["g"])

    @tn.compile
    def step(x: tn.Tensor[tn.Float64, tn.CPU, tn.Dim4], lr: float) -> Any:
        out = layer.feed_forward(layer.input_cont().set(LayerInput, x)).get(LayerOutput)
        dx = layer.feed_backward(layer.output_cont().set(LayerOutput, gt)).get(LayerInput)
        collector: GradCollector[Any, Any] = GradCollector(tn.Float64, tn.CPU)
        layer.grad_collect(collector)
        for _, weight, grad in collector:
            weight.assign(weight - lr * grad)
        return out, dx

    out, dx = step(xt, 0.0)
    close(out.numpy(), ref["out"])
    close(dx.numpy(), ref["dx"])
    close(running_mean.numpy(), ref["running_mean_after"])
    close(running_var.numpy(), ref["running_var_after"])
    n = x.size // 2
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3)) * n / (n - 1)
    for _ in range(2):  # replayed: each call updates once more
        expected_mean = 0.7 * running_mean.numpy() + 0.3 * mean
        expected_var = 0.7 * running_var.numpy() + 0.3 * var
        step(xt, 0.0)
        close(running_mean.numpy(), expected_mean)
        close(running_var.numpy(), expected_var)
    assert step.traces == 1
    weight = buffer.try_get("bn/weight")
    assert weight is not None
    before = weight.numpy().copy()
    step(xt, 0.5)  # weight and bias are trained; the statistics are not
    close(weight.numpy(), before - 0.5 * ref["dweight"])
    layer.neutral_invariant()


# --- LayerNormLayer -----------------------------------------------------------------------


def test_layernorm_matches_pytorch() -> None:
    ref = reference("layernorm")
    layer = make_train_layer(
        LayerNormLayer, LayerInMap({LayerInput: typ(3)}), F64, PUpdate, PFeedbackOutput
    )("ln", 6, eps=1e-4)
    init_params(layer, params_of(ref, "ln"))
    close(layer_feed(layer, {LayerInput: ref["x"]}).get(LayerOutput).numpy(), ref["out"])
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(ref["g"])))
    close(back.get(LayerInput).numpy(), ref["dx"])
    grads = collect(layer)
    close(grads["ln/weight"], ref["dweight"])
    close(grads["ln/bias"], ref["dbias"])
    layer.neutral_invariant()


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 2, 3)])
def test_layernorm_finite_differences_and_lifo(shape: tuple[int, ...]) -> None:
    cls = make_train_layer(
        LayerNormLayer, LayerInMap({LayerInput: typ(len(shape))}), F64, PUpdate, PFeedbackOutput
    )
    layer = cls("ln", shape[-1])
    d = shape[-1]
    buffer = init_params(
        layer, {"ln/weight": rng.uniform(0.5, 1.5, d), "ln/bias": rng.standard_normal(d)}
    )
    x = rng.standard_normal(shape)
    feedback = make_train_layer(
        LayerNormLayer, LayerInMap({LayerInput: typ(len(shape))}), F64, PFeedbackOutput
    )
    check_layer_gradients(shared(feedback, buffer, d, name="ln"), {LayerInput: x})
    g = rng.standard_normal(shape)
    numeric = fd_param(layer, buffer, "ln/weight", {LayerInput: x}, g)
    layer_feed(layer, {LayerInput: x})
    layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_allclose(collect(layer)["ln/weight"], numeric, rtol=1e-6, atol=1e-8)
    xs = [rng.standard_normal(shape) * (i + 1) for i in range(3)]  # LIFO
    for xi in xs:
        layer_feed(layer, {LayerInput: xi})
    for xi in reversed(xs):
        layer.feed_backward(layer.output_cont().set(LayerOutput, t64(np.ones(shape))))
        y = (xi - xi.mean(-1, keepdims=True)) / np.sqrt(xi.var(-1, keepdims=True) + 1e-5)
        close(collect(layer)["ln/weight"], y.reshape(-1, d).sum(0))
    layer.neutral_invariant()


# --- LstmStep and TorchGruStep in a RecurrentLayer ----------------------------------------


def rnn(step: Any, *policies: Any) -> Any:
    states = {H: typ(2), C: typ(2)} if step is LstmStep else {H: typ(2)}
    return make_train_layer(
        RecurrentLayer,
        LayerInMap({LayerInput: typ(3), **states}),
        PActFuncIs(step),
        PSeqIDsAre(SeqID(LayerInput, 0)),
        F64,
        *policies,
    )


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_recurrent_steps_match_pytorch(kind: str) -> None:
    steps_against(kind, reference(kind))


def steps_against(kind: str, ref: dict[str, Array]) -> None:
    step = LstmStep if kind == "lstm" else TorchGruStep
    layer = rnn(step, PUpdate, PFeedbackOutput)("rnn", 4, 6)
    init_params(layer, params_of(ref, "rnn/kernel"))
    inputs: dict[type, Any] = {LayerInput: ref["x"], H: ref["h0"]}
    if kind == "lstm":
        inputs[C] = ref["c0"]
    outs = layer_feed(layer, inputs)
    close(outs.get(LayerOutput).numpy(), ref["out"])
    grads = layer.output_cont().set(LayerOutput, t64(ref["g"]))
    if kind == "lstm":
        close(outs.get(CellState).numpy()[-1], ref["c_n"])
        gc = np.zeros_like(ref["g"])
        gc[-1] = ref["gc"]  # the loss reads the last cell state only
        grads = grads.set(CellState, t64(gc))
    back = layer.feed_backward(grads)
    close(back.get(LayerInput).numpy(), ref["dx"])
    close(back.get(H).numpy(), ref["dh0"])
    if kind == "lstm":
        close(back.get(C).numpy(), ref["dc0"])
    collected = collect(layer)
    for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
        close(collected[f"rnn/kernel/{name}"], ref[f"d{name}"])
    layer.neutral_invariant()


def test_pytorch_state_dict_maps_to_the_parameters() -> None:
    """CONVENTIONS.md: w_ih / w_hh are weight_ih_l0 / weight_hh_l0 transposed; biases equal."""
    for kind in ("lstm", "gru"):
        ref = reference(kind)
        close(ref["param/w_ih"], ref["torch/weight_ih_l0"].T)
        close(ref["param/w_hh"], ref["torch/weight_hh_l0"].T)
        close(ref["param/b_ih"], ref["torch/bias_ih_l0"])
        close(ref["param/b_hh"], ref["torch/bias_hh_l0"])


def step_params(prefix: str, gates: int, fan_in: int, hidden: int) -> dict[str, Array]:
    width = gates * hidden
    return {
        f"{prefix}/w_ih": rng.standard_normal((fan_in, width)) * 0.6,
        f"{prefix}/w_hh": rng.standard_normal((hidden, width)) * 0.6,
        f"{prefix}/b_ih": rng.standard_normal(width) * 0.3,
        f"{prefix}/b_hh": rng.standard_normal(width) * 0.3,
    }


@pytest.mark.parametrize("step", [LstmStep, TorchGruStep])
def test_steps_finite_differences(step: Any) -> None:
    lstm = step is LstmStep
    states = {H: typ(2), C: typ(2)} if lstm else {H: typ(2)}
    layer = make_train_layer(
        step, LayerInMap({LayerInput: typ(2), **states}), F64, PUpdate, PFeedbackOutput
    )("s", 3, 2)
    buffer = init_params(layer, step_params("s", 4 if lstm else 3, 3, 2))
    values: dict[type, Any] = {
        LayerInput: rng.standard_normal((4, 3)),
        H: rng.standard_normal((4, 2)),
    }
    if lstm:
        values[C] = rng.standard_normal((4, 2))
    feedback: Any = make_train_layer(
        step, LayerInMap({LayerInput: typ(2), **states}), F64, PFeedbackOutput
    )
    for output in (LayerOutput, CellState) if lstm else (LayerOutput,):
        check_layer_gradients(shared(feedback, buffer, 3, 2, name="s"), values, output=output)
        g = rng.standard_normal((4, 2))
        layer_feed(layer, values)
        layer.feed_backward(layer.output_cont().set(output, t64(g)))
        grads = collect(layer)
        for name in ("s/w_hh", "s/b_ih"):
            numeric = _fd_output_param(layer, buffer, name, values, g, output)
            np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-8, err_msg=name)
    layer.neutral_invariant()


def _fd_output_param(
    layer: Any, buffer: Any, name: str, values: dict[type, Any], g: Array, output: type
) -> Array:
    """Central differences of ``sum(g * output)`` with respect to the parameter ``name``."""
    array = buffer.try_get(name).array
    saved = array.copy()
    grad: Array = np.zeros_like(saved)
    for i in np.ndindex(saved.shape):
        sides = []
        for delta in (1e-6, -1e-6):
            array[...] = saved
            array[i] += delta
            out = layer_feed(layer, values).get(output).numpy()
            layer.feed_backward(layer.output_cont())
            sides.append(float(np.sum(g * out)))
        grad[i] = (sides[0] - sides[1]) / 2e-6
    array[...] = saved
    return grad


@pytest.mark.parametrize("step", [LstmStep, TorchGruStep])
def test_steps_lifo_and_inference(step: Any) -> None:
    lstm = step is LstmStep
    layer = rnn(step, PUpdate, PFeedbackOutput)("r", 3, 2)
    p = step_params("r/kernel", 4 if lstm else 3, 3, 2)
    init_params(layer, p)
    lengths = [2, 4, 3]
    seqs = []
    for n in lengths:
        values: dict[type, Any] = {LayerInput: rng.standard_normal((n, 5, 3)), H: np.zeros((5, 2))}
        if lstm:
            values[C] = np.zeros((5, 2))
        seqs.append(values)
        layer_feed(layer, values)
    infer = make_infer_layer(
        RecurrentLayer, PActFuncIs(step), PSeqIDsAre(SeqID(LayerInput, 0)), F64
    )("r", 3, 2)
    init_params(infer, p)
    for values in reversed(seqs):
        n = values[LayerInput].shape[0]
        back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(np.ones((n, 5, 2)))))
        assert back.get(LayerInput).shape == (n, 5, 3)  # paired with its own sequence
        expected = layer_feed(infer, values).get(LayerOutput).numpy()
        assert expected.shape == (n, 5, 2)
    collect(layer)
    layer.neutral_invariant()
    infer.neutral_invariant()


# --- bad input ----------------------------------------------------------------------------


def test_batchnorm_bad_input() -> None:
    layer = make_infer_layer(BatchNormLayer, F64)("bn", 3)
    layer.init(ParamInitializer(), LoadBuffer(tn.Float64, tn.CPU))
    with pytest.raises(
        tn.RankError,
        match=r"cannot feed layer 'bn': port LayerInput needs rank "
        r"2 or 4, got rank 3",
    ):
        layer_feed(layer, {LayerInput: np.zeros((2, 3, 4))})
    with pytest.raises(
        tn.ShapeError,
        match=r"port LayerInput has 4 channels in dim 1, the layer "
        r"was built for 3",
    ):
        layer_feed(layer, {LayerInput: np.zeros((2, 4))})
    train = batchnorm(2)("bt", 3)
    train.init(ParamInitializer(), LoadBuffer(tn.Float64, tn.CPU))
    with pytest.raises(tn.ShapeError, match="needs more than one value per channel"):
        layer_feed(train, {LayerInput: np.zeros((1, 3))})
    with pytest.raises(tn.RankError, match="needs rank 2 or 4, got rank 3"):
        batchnorm(3)  # rejected when declared
    layer.neutral_invariant()
    train.neutral_invariant()


def test_layernorm_bad_input() -> None:
    layer = make_infer_layer(LayerNormLayer, F64)("ln", 4)
    layer.init(ParamInitializer(), LoadBuffer(tn.Float64, tn.CPU))
    with pytest.raises(
        tn.ShapeError,
        match=r"cannot feed layer 'ln': port LayerInput has 3 "
        r"features in dim 1, the layer was built for 4",
    ):
        layer_feed(layer, {LayerInput: np.zeros((2, 3))})
    with pytest.raises(tn.RankError, match="needs rank 1 to 6, got rank 0"):
        layer_feed(layer, {LayerInput: tn.scalar(1.0, tn.Float64, tn.CPU)})


def test_steps_bad_input() -> None:
    layer = make_infer_layer(LstmStep, F64)("lstm", 3, 2)
    init_params(layer, step_params("lstm", 4, 3, 2))
    ok: dict[type, Any] = {LayerInput: np.zeros((4, 3)), H: np.zeros((4, 2)), C: np.zeros((4, 2))}
    with pytest.raises(
        tn.ShapeError,
        match=r"cannot feed layer 'lstm': port LayerInput has 5 "
        r"features in dim 1, the layer was built for 3",
    ):
        layer_feed(layer, {**ok, LayerInput: np.zeros((4, 5))})
    with pytest.raises(tn.ShapeError, match=r"port Previous\(CellState\) has 3 units in dim 1"):
        layer_feed(layer, {**ok, C: np.zeros((4, 3))})
    with pytest.raises(
        tn.ShapeError, match=r"port Previous\(LayerOutput\) has batch 2, the data 4"
    ):
        layer_feed(layer, {**ok, H: np.zeros((2, 2))})
    with pytest.raises(tn.RankError, match=r"port LayerInput needs rank 2, got rank 1"):
        layer_feed(layer, {**ok, LayerInput: np.zeros(3)})
    gru = make_infer_layer(TorchGruStep, F64)("gru", 3, 2)
    init_params(gru, step_params("gru", 3, 3, 2))
    with pytest.raises(
        tn.ShapeError,
        match=r"cannot feed layer 'gru': port Previous\(LayerOutput\) "
        r"has 5 units in dim 1, the layer was built for 2",
    ):
        layer_feed(gru, {LayerInput: np.zeros((4, 3)), H: np.zeros((4, 5))})
    with pytest.raises(tn.RankError, match="needs rank 2, got rank 3"):
        make_train_layer(TorchGruStep, LayerInMap({LayerInput: typ(3), H: typ(2)}), F64)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_recurrent_steps_compiled(kind: str) -> None:
    """Forward, BPTT and the collected gradients in one compiled function agree with PyTorch,
    traced once and replayed."""
    ref = reference(kind)
    step = LstmStep if kind == "lstm" else TorchGruStep
    layer = rnn(step, PUpdate)("rnn", 4, 6)
    init_params(layer, params_of(ref, "rnn/kernel"))
    states = {H: t64(ref["h0"])} | ({C: t64(ref["c0"])} if kind == "lstm" else {})
    g = t64(ref["g"])
    gc = np.zeros_like(ref["g"])
    if kind == "lstm":
        gc[-1] = ref["gc"]

    @tn.compile
    def run(x: tn.Tensor[tn.Float64, tn.CPU, tn.Dim3]) -> Any:
        cont = layer.input_cont().set(LayerInput, x)
        for port, value in states.items():
            cont = cont.set(port, value)
        out = layer.feed_forward(cont).get(LayerOutput)
        grads = layer.output_cont().set(LayerOutput, g)
        if kind == "lstm":
            grads = grads.set(CellState, t64(gc))
        layer.feed_backward(grads)
        collector: GradCollector[Any, Any] = GradCollector(tn.Float64, tn.CPU)
        layer.grad_collect(collector)
        return out, {name.split("/")[-1]: grad for name, _, grad in collector}

    for _ in range(2):
        out, grads = run(t64(ref["x"]))
        close(out.numpy(), ref["out"])
        for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
            close(grads[name].numpy(), ref[f"d{name}"])
    assert run.traces == 1
    layer.neutral_invariant()


def test_norm_constructor_arguments_are_checked() -> None:
    cls = make_infer_layer(BatchNormLayer, F64)
    with pytest.raises(
        tn.LayerError, match=r"cannot create layer 'bn': momentum must be a number from 0 to 1"
    ):
        cls("bn", 3, momentum=1.5)
    with pytest.raises(tn.LayerError, match=r"eps must be a positive number\.\n  received : 0\.0"):
        cls("bn", 3, eps=0.0)
    with pytest.raises(tn.LayerError, match="cannot create layer 'ln': eps must be a positive"):
        make_infer_layer(LayerNormLayer, F64)("ln", 3, eps=float("nan"))


def test_a_compiled_lstm_step_folds_its_input_biases_into_the_gemms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over a whole sequence the input part ``x·W_ih + b`` is one tall product: the bias
    rides in the GEMM as ``[x | 1]·[W_ih; b]``, and the backward takes ``W_ih``'s and the
    biases' gradients as the row blocks of ``[x | 1]ᵀ·dA`` (``x`` read as its steps' rows).
    The trained weights match the unrewritten step's."""
    from typed_nn.evaluate import hooks, last_program, options
    from typed_nn.evaluate.rewrite import FOLDED_BIAS, FOLDED_BIAS_GRADIENT

    monkeypatch.setattr(hooks, "node_checks", [])  # compiled programs, also in debug mode
    params = step_params("lstm/kernel", 4, 16, 32)
    x = t64(rng.standard_normal((8, 64, 16)))
    zeros = t64(np.zeros((64, 32)))

    def train(fold: bool) -> tuple[list[float], dict[str, Array], list[str]]:
        layer = rnn(LstmStep, PUpdate)("lstm", 16, 32)
        init_params(layer, params)
        weights: dict[str, Any] = {}

        @tn.compile
        def step(x: Any) -> Any:
            inputs = layer.input_cont().set(LayerInput, x).set(H, zeros).set(C, zeros)
            out = layer.feed_forward(inputs).get(LayerOutput)
            layer.feed_backward(layer.output_cont().set(LayerOutput, out * 0.01))
            collector: GradCollector[Any, Any] = GradCollector(tn.Float64, tn.CPU)
            layer.grad_collect(collector)
            for name, weight, grad in collector:
                weights[name] = weight  # the parameter, updated in place at every call
                weight.assign(weight - 0.5 * grad)
            return tn.ops.reduce_mean(tn.ops.square(out))

        with options.using(rewrite=fold):
            losses = [float(step(x).numpy()) for _ in range(3)]
            fired = list(last_program().fired)  # type: ignore[union-attr]
        assert len(weights) == 4
        return losses, {name: w.numpy() for name, w in weights.items()}, fired

    losses, weights, fired = train(True)
    assert losses[2] < losses[0]  # it trains
    assert FOLDED_BIAS in fired
    assert FOLDED_BIAS_GRADIENT in fired
    plain_losses, plain_weights, _ = train(False)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-10)
    for name, value in plain_weights.items():
        np.testing.assert_allclose(weights[name], value, rtol=1e-9, atol=1e-12)
