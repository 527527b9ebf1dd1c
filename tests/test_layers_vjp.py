"""Every layer's backward against ``tn.vjp`` of its forward graph.

Each case runs a layer's forward on random float64 inputs, then its ``feed_backward`` with a
random output gradient, and checks that the input gradients it returns and the parameter
gradients it leaves for ``grad_collect`` equal ``tn.vjp`` of the forward's output with
respect to the input tensors and the parameter tensors, with the same cotangent (to 1e-10).
The policies are respected: without ``PFeedbackOutput`` no input gradient comes back, without
``PUpdate`` nothing is collected, number ports and the NLL truth get no gradient.

Every layer's backward is one ``tn.vjp`` of its recorded forward (``layers/derived.py``): the
elementary layers, the composites (MetaNN's walk over the sublayers as one graph) and
RecurrentLayer (BPTT). The last tests cover the partial derivatives MetaNN's backwards give
(inputs that are nodes, one tensor on two ports, a weight shared with an upstream layer,
BPTT off), sublayers fed backward on their own, and templates that bring a backward of
their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from composite_helpers import init_params
from helpers import Array, t64

import typed_nn as tn
from typed_nn import ops
from typed_nn.layers import (
    MLP,
    AbsLayer,
    AcoshLayer,
    AcosLayer,
    AddLayer,
    AsinhLayer,
    AsinLayer,
    BiasLayer,
    ComposeKernel,
    ComposeTopology,
    CosLayer,
    DotLayer,
    ExpLayer,
    GruStep,
    InConnect,
    InternalConnect,
    InterpolateLayer,
    InterpolateLayerLambda,
    InterpolateLayerWeight1,
    InterpolateLayerWeight2,
    Layer,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    LinearLayer,
    LogLayer,
    LossLayerWeight,
    MultiplyLayer,
    NLLLossLayer,
    OutConnect,
    ParamSourceLayer,
    PermuteLayer,
    PortKey,
    Previous,
    RecurrentLayer,
    ReLULayer,
    RightOperand,
    SigmoidLayer,
    SingleLayerPerceptron,
    SinLayer,
    SoftmaxLayer,
    SquareLayer,
    Sublayer,
    SubtractLayer,
    TanhLayer,
    TanLayer,
    TransposeLayer,
    UnaryLayer,
    ValueSourceLayer,
    VarValues,
    WeightLayer,
    layer_grad_collect,
    make_train_layer,
    tensor_type,
)
from typed_nn.layers.derived import ForwardRecord
from typed_nn.model import GradCollector
from typed_nn.policies import (
    PActFuncIs,
    PBiasNotInvolved,
    PDimArrayIs,
    PDisableBptt,
    PElemIs,
    PFeedbackOutput,
    PModifyDimNumIs,
    PNoUpdate,
    PParamTypeIs,
    PSeqIDsAre,
    PUpdate,
    SeqID,
    SubPolicyContainer,
)

F64 = tn.Float64
H = Previous(LayerOutput)
Tensor64 = tn.Tensor[Any, Any, Any]


def close(got: Array, want: Array, what: str = "") -> None:
    """Equal to 1e-10 (relative and absolute), float64 summed in different orders."""
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=what)


def typ(rank: int) -> object:
    """``TensorLike[Float64, CPU, Dim<rank>]``."""
    return tensor_type(F64, tn.CPU, rank)


def arr(x: object) -> Array:
    """The values of typed_nn data, evaluated."""
    assert isinstance(x, tn.TensorLike)
    return x.numpy()


def rand(*shape: int, seed: int, low: float | None = None, high: float | None = None) -> Array:
    gen = np.random.default_rng(seed)
    if low is None or high is None:
        return gen.standard_normal(shape)
    return gen.uniform(low, high, shape)


def away_from_zero(*shape: int, seed: int) -> Array:
    """Random values with |v| >= 0.1 (abs and relu are not differentiable at 0)."""
    v = rand(*shape, seed=seed)
    return np.where(np.abs(v) < 0.1, 0.5, v)


# --- the comparison ---------------------------------------------------------------------------


@dataclass
class Built:
    """A configured layer instance with its inputs and its parameters (by collector name)."""

    layer: Any
    inputs: dict[type, object]
    params: dict[str, Tensor64]
    no_grad: tuple[type, ...] = ()


def forward(built: Built) -> Any:
    cont = built.layer.input_cont()
    for port, value in built.inputs.items():
        cont = cont.set(port, value)
    return built.layer.feed_forward(cont).get(LayerOutput)


def check_against_vjp(built: Built, *, expect: str | None = None) -> None:
    """feed_backward + grad_collect == tn.vjp of the forward (inputs and parameters)."""
    layer = built.layer
    out = forward(built)
    if expect is not None:
        assert recorded(layer) == expect
    g = t64(rand(*out.shape, seed=99))
    tensors = [
        (p, v)
        for p, v in built.inputs.items()
        if isinstance(v, tn.TensorLike) and p not in built.no_grad
    ]
    names = sorted(built.params)
    wrt = [v for _, v in tensors] + [built.params[n] for n in names]
    wanted = [w.numpy() for w in tn.vjp(out, wrt, g)] if wrt else []
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, g))
    collected = collect(layer)
    cls = type(layer)
    if cls.is_feedback_output:
        for (port, _), want in zip(tensors, wanted, strict=False):
            assert back.is_set(port), f"no gradient for {port.__name__}"
            got = back.get(port).numpy()
            assert got.shape == want.shape, (port.__name__, got.shape, want.shape)
            close(got, want, port.__name__)
        for port in built.inputs:
            if port in built.no_grad or not isinstance(built.inputs[port], tn.TensorLike):
                assert not back.is_set(port), f"{port.__name__} got a gradient"
    else:
        assert back.set_keys() == (), "a layer without PFeedbackOutput returned gradients"
    if cls.is_update:
        updated = sorted(collected)
        frozen = [n for n in names if n not in updated]
        assert all(n in names for n in updated), (updated, names)
        for name, want in zip(names, wanted[len(tensors) :], strict=True):
            if name in frozen:
                continue
            close(collected[name], want, name)
    else:
        assert collected == {}, "a layer without PUpdate collected gradients"
    layer.neutral_invariant()


def collect(layer: Any) -> dict[str, Array]:
    """What ``layer_grad_collect`` hands over (nothing for a layer without parameters)."""
    col: GradCollector[Any, Any] = GradCollector(F64, tn.CPU)
    layer_grad_collect(layer, col)
    return {name: grad.numpy() for name, _, grad in col}


def recorded(layer: Any) -> str:
    """What the last forward left for its backward: "vjp" (a record)."""
    top = layer._record._items[-1]
    return "vjp" if isinstance(top, ForwardRecord) else str(top)


# --- elementary layers ------------------------------------------------------------------------

Make = Callable[[tuple[Any, ...]], Built]


def binary(template: type[Any], left: Any, right: Any) -> Make:
    def make(policies: tuple[Any, ...]) -> Built:
        def declared(v: Any) -> object:
            return typ(v.rank) if isinstance(v, tn.TensorLike) else float

        in_map = LayerInMap({LeftOperand: declared(left), RightOperand: declared(right)})
        layer = make_train_layer(template, in_map, *policies)("op")
        return Built(layer, {LeftOperand: left, RightOperand: right}, {})

    return make


def unary(template: type[Any], x: Array, *policies: Any) -> Make:
    def make(extra: tuple[Any, ...]) -> Built:
        in_map = LayerInMap({LayerInput: typ(x.ndim)})
        layer = make_train_layer(template, in_map, *policies, *extra)("op")
        return Built(layer, {LayerInput: t64(x)}, {})

    return make


def dot(a: Array, b: Array, k: int) -> Make:
    def make(policies: tuple[Any, ...]) -> Built:
        in_map = LayerInMap({LeftOperand: typ(a.ndim), RightOperand: typ(b.ndim)})
        layer = make_train_layer(DotLayer, in_map, PModifyDimNumIs(k), *policies)("dot")
        return Built(layer, {LeftOperand: t64(a), RightOperand: t64(b)}, {})

    return make


def nll(policies: tuple[Any, ...]) -> Built:
    logits = rand(4, 3, seed=20)
    pred = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    truth = np.eye(3)[[0, 2, 1, 2]]
    in_map = LayerInMap({LayerInput: typ(2), LossLayerWeight: typ(2)})
    layer = make_train_layer(NLLLossLayer, in_map, *policies)("loss")
    inputs: dict[type, object] = {LayerInput: t64(pred), LossLayerWeight: t64(truth)}
    return Built(layer, inputs, {}, no_grad=(LossLayerWeight,))


def interpolate(w1: Array, w2: Array, lam: Array) -> Make:
    def make(policies: tuple[Any, ...]) -> Built:
        lam_type = typ(lam.ndim)
        in_map = LayerInMap(
            {
                InterpolateLayerWeight1: typ(w1.ndim),
                InterpolateLayerWeight2: typ(w2.ndim),
                InterpolateLayerLambda: lam_type,
            }
        )
        layer = make_train_layer(InterpolateLayer, in_map, *policies)("mix")
        lam_value = t64(lam)
        inputs: dict[type, object] = {
            InterpolateLayerWeight1: t64(w1),
            InterpolateLayerWeight2: t64(w2),
            InterpolateLayerLambda: lam_value,
        }
        return Built(layer, inputs, {})

    return make


def permute(template: type[Any], x: Array, *policies: Any) -> Make:
    return unary(template, x, *policies)


def m(seed: int, *shape: int) -> Tensor64:
    return t64(rand(*shape, seed=seed))


ELEMENTARY: dict[str, Make] = {
    "add-matrix-matrix": binary(AddLayer, m(1, 4, 3), m(2, 4, 3)),
    "add-matrix-vector": binary(AddLayer, m(1, 4, 3), m(2, 3)),
    "add-vector-tensor3": binary(AddLayer, m(1, 3), m(2, 2, 4, 3)),
    "add-matrix-number": binary(AddLayer, m(1, 4, 3), 2.5),
    "subtract-matrix-matrix": binary(SubtractLayer, m(1, 4, 3), m(2, 4, 3)),
    "subtract-matrix-vector": binary(SubtractLayer, m(1, 4, 3), m(2, 3)),
    "subtract-number-matrix": binary(SubtractLayer, 2.5, m(2, 4, 3)),
    "multiply-matrix-matrix": binary(MultiplyLayer, m(1, 4, 3), m(2, 4, 3)),
    "multiply-matrix-vector": binary(MultiplyLayer, m(1, 4, 3), m(2, 3)),
    "multiply-matrix-number": binary(MultiplyLayer, m(1, 4, 3), -1.5),
    "dot-matrix-matrix": dot(rand(4, 3, seed=3), rand(3, 5, seed=4), 1),
    "dot-matrix-vector": dot(rand(4, 3, seed=3), rand(3, seed=4), 1),
    "dot-tensor3-matrix": dot(rand(2, 4, 3, seed=3), rand(3, 5, seed=4), 1),
    "dot-k2-tensor3-tensor3": dot(rand(2, 4, 3, seed=3), rand(4, 3, 5, seed=4), 2),
    "abs": unary(AbsLayer, away_from_zero(4, 3, seed=5)),
    "sin": unary(SinLayer, rand(4, 3, seed=5)),
    "cos": unary(CosLayer, rand(4, 3, seed=5)),
    "tan": unary(TanLayer, rand(4, 3, seed=5, low=-1.2, high=1.2)),
    "asin": unary(AsinLayer, rand(4, 3, seed=5, low=-0.9, high=0.9)),
    "acos": unary(AcosLayer, rand(4, 3, seed=5, low=-0.9, high=0.9)),
    "asinh": unary(AsinhLayer, rand(4, 3, seed=5)),
    "acosh": unary(AcoshLayer, rand(4, 3, seed=5, low=1.1, high=3.0)),
    "square": unary(SquareLayer, rand(4, 3, seed=5)),
    "exp": unary(ExpLayer, rand(4, 3, seed=5)),
    "log": unary(LogLayer, rand(4, 3, seed=5, low=0.2, high=3.0)),
    "sigmoid": unary(SigmoidLayer, rand(4, 3, seed=5)),
    "tanh": unary(TanhLayer, rand(4, 3, seed=5)),
    "relu": unary(ReLULayer, away_from_zero(4, 3, seed=5)),
    "softmax-k1": unary(SoftmaxLayer, rand(4, 3, seed=5)),
    "softmax-k2-tensor3": unary(SoftmaxLayer, rand(2, 4, 3, seed=5), PModifyDimNumIs(2)),
    "nll-loss": nll,
    "interpolate-matrices": interpolate(
        rand(4, 3, seed=6), rand(4, 3, seed=7), rand(4, 3, seed=8, low=0, high=1)
    ),
    "interpolate-vector-lambda": interpolate(
        rand(4, 3, seed=6), rand(4, 3, seed=7), rand(3, seed=8, low=0, high=1)
    ),
    "interpolate-scalar-lambda": interpolate(
        rand(4, 3, seed=6), rand(4, 3, seed=7), rand(seed=8, low=0, high=1)
    ),
    "permute-201": permute(PermuteLayer, rand(2, 4, 3, seed=9), PDimArrayIs(2, 0, 1)),
    "transpose": permute(TransposeLayer, rand(4, 3, seed=9)),
}


@pytest.mark.parametrize("case", list(ELEMENTARY), ids=list(ELEMENTARY))
def test_elementary_backward_is_the_vjp(case: str) -> None:
    check_against_vjp(ELEMENTARY[case]((PFeedbackOutput,)), expect="vjp")


@pytest.mark.parametrize("case", list(ELEMENTARY), ids=list(ELEMENTARY))
def test_elementary_without_feedback_returns_nothing(case: str) -> None:
    check_against_vjp(ELEMENTARY[case](()))


def param_source(shape: tuple[int, ...], *policies: Any) -> Built:
    layer = make_train_layer(
        ParamSourceLayer, LayerInMap({}), PParamTypeIs(tn.TensorLike), PElemIs(F64), *policies
    )
    instance = layer("w", *shape)
    buffer = init_params(instance, {"w": rand(*shape, seed=10)})
    data = buffer.try_get("w")
    assert data is not None
    return Built(instance, {}, {"w": data})


@pytest.mark.parametrize("update", [True, False], ids=["update", "no-update"])
def test_param_source_collects_the_vjp_of_its_parameter(update: bool) -> None:
    check_against_vjp(param_source((3, 2), PUpdate if update else PNoUpdate))


def test_value_source_feeds_nothing_back() -> None:
    layer = make_train_layer(ValueSourceLayer, LayerInMap({}), PFeedbackOutput)("v", 2.0)
    out = layer.feed_forward(layer.input_cont()).get(LayerOutput)
    assert out == 2.0
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(np.ones(()))))
    assert back.set_keys() == ()
    layer.neutral_invariant()


# --- composites and recurrent layers ----------------------------------------------------------

POLICIES: dict[str, tuple[Any, ...]] = {
    "update+feedback": (PUpdate, PFeedbackOutput),
    "update": (PUpdate,),
    "feedback": (PFeedbackOutput,),
}


MakeComposite = Callable[[tuple[Any, ...]], Built]
"""policies -> a layer."""


def composite(
    template: type[Any], ctor: tuple[int, ...], x: Array, params: dict[str, Array], *extra: Any
) -> MakeComposite:
    def make(policies: tuple[Any, ...]) -> Built:
        in_map = LayerInMap({LayerInput: typ(x.ndim)})
        cls = make_train_layer(template, in_map, PElemIs(F64), *extra, *policies)
        layer = cls("c", *ctor)
        buffer = init_params(layer, params)
        tensors = {n: buffer.try_get(n) for n in params}
        found = {n: t for n, t in tensors.items() if t is not None}
        return Built(layer, {LayerInput: t64(x)}, found)

    return make


def gru(fan_in: int, fan_out: int, batch: int, seed: int) -> MakeComposite:
    def make(policies: tuple[Any, ...]) -> Built:
        in_map = LayerInMap({LayerInput: typ(2), H: typ(2)})
        layer = make_train_layer(GruStep, in_map, PElemIs(F64), *policies)("g", fan_in, fan_out)
        params = gru_params("g", fan_in, fan_out, seed)
        buffer = init_params(layer, params)
        tensors = {n: buffer.try_get(n) for n in params}
        inputs: dict[type, object] = {
            LayerInput: t64(rand(batch, fan_in, seed=seed + 1)),
            H: t64(rand(batch, fan_out, seed=seed + 2)),
        }
        return Built(layer, inputs, {n: t for n, t in tensors.items() if t is not None})

    return make


def gru_params(prefix: str, fan_in: int, fan_out: int, seed: int) -> dict[str, Array]:
    return {
        f"{prefix}/{w}/param": 0.5
        * rand(fan_in if w[0] == "W" else fan_out, fan_out, seed=seed + i)
        for i, w in enumerate(("W", "Wz", "Wr", "U", "Uz", "Ur"))
    }


def mlp(widths: list[int], acts: list[Any], batch: int) -> MakeComposite:
    def make(policies: tuple[Any, ...]) -> Built:
        net = MLP.build("net", widths, acts, *policies, elem=F64)
        params: dict[str, Array] = {}
        for i in range(1, len(widths)):
            params[f"net/fc{i}/weight"] = rand(widths[i - 1], widths[i], seed=30 + i) * 0.3
            params[f"net/fc{i}/bias"] = rand(widths[i], seed=40 + i)
        buffer = init_params(net, params)
        tensors = {n: buffer.try_get(n) for n in params}
        inputs: dict[type, object] = {LayerInput: t64(rand(batch, widths[0], seed=50))}
        return Built(net, inputs, {n: t for n, t in tensors.items() if t is not None})

    return make


X = rand(5, 3, seed=11)
W32, B2 = rand(3, 2, seed=12), rand(2, seed=13)
COMPOSITES: dict[str, MakeComposite] = {
    "bias": composite(BiasLayer, (3,), X, {"c/param": rand(3, seed=13)}),
    "weight": composite(WeightLayer, (3, 2), X, {"c/param": W32}),
    "linear": composite(LinearLayer, (3, 2), X, {"c/weight": W32, "c/bias": B2}),
    "slp-sigmoid": composite(
        SingleLayerPerceptron,
        (3, 2),
        X,
        {"c/weight": W32, "c/bias": B2},
        PActFuncIs(SigmoidLayer),
    ),
    "slp-tanh-no-bias": composite(
        SingleLayerPerceptron,
        (3, 2),
        X,
        {"c/weight": W32},
        PActFuncIs(TanhLayer),
        PBiasNotInvolved,
    ),
    "slp-relu": composite(
        SingleLayerPerceptron,
        (3, 2),
        X,
        {"c/weight": W32, "c/bias": B2},
        PActFuncIs(ReLULayer),
    ),
    "slp-softmax": composite(
        SingleLayerPerceptron,
        (3, 4),
        X,
        {"c/weight": rand(3, 4, seed=14), "c/bias": rand(4, seed=15)},
        PActFuncIs(SoftmaxLayer),
    ),
    "gru-step": gru(3, 4, 5, seed=60),
    "mlp-relu-sigmoid-linear": mlp([4, 6, 5, 3], [ReLULayer, SigmoidLayer, None], 7),
    "mlp-digits-64-128-10-batch-32": mlp([64, 128, 10], [ReLULayer, None], 32),
}


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("case", list(COMPOSITES))
def test_composite_backward_is_the_vjp(case: str, policy: str) -> None:
    policies = POLICIES[policy]
    if case.startswith("mlp"):  # MLP.build sets PFeedbackNoOutput + PUpdate unless told
        policies = {
            "update+feedback": (PFeedbackOutput,),
            "update": (),
            "feedback": (PFeedbackOutput, PNoUpdate),
        }[policy]
    check_against_vjp(COMPOSITES[case](policies), expect="vjp")


def test_frozen_sublayer_parameter() -> None:
    """``SubPolicyContainer("weight", PNoUpdate)``: only the bias is collected."""
    frozen = SubPolicyContainer("weight", PNoUpdate)
    built = COMPOSITES["linear"]((PUpdate, PFeedbackOutput, frozen))
    check_against_vjp(built, expect="vjp")
    forward(built)
    built.layer.feed_backward(built.layer.output_cont().set(LayerOutput, t64(np.ones((5, 2)))))
    assert sorted(collect(built.layer)) == ["c/bias"]


def test_sublayers_record_nothing_of_their_own() -> None:
    """A sublayer's forward runs within its parent's recorded one, whose vjp covers it: it
    records nothing, so feeding the sublayer backward itself breaks the LIFO discipline."""
    built = COMPOSITES["linear"]((PUpdate, PFeedbackOutput))
    forward(built)
    dot = built.layer.sublayers["dot"]
    assert recorded(built.layer) == "vjp"
    assert not dot._record._items
    built.layer.feed_backward(built.layer.output_cont())
    built.layer.neutral_invariant()
    forward(built)
    with pytest.raises(tn.LayerError, match=r"Cannot feed back in layer 'c/dot': its forward "):
        dot.feed_backward(dot.output_cont().set(LayerOutput, t64(np.ones((5, 2)))))


class Bias(PortKey):
    """A non-sequence input of ``AddBiasStep``."""


class AddBiasStep(ComposeKernel[Any, LayerOutput]):
    """``h' = sigmoid(x + b) * h``: a kernel with a non-sequence input ``Bias``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, Bias, H)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("add", AddLayer),
        Sublayer("act", SigmoidLayer),
        Sublayer("mul", MultiplyLayer),
        InConnect(LayerInput, "add", LeftOperand),
        InConnect(Bias, "add", RightOperand),
        InternalConnect("add", LayerOutput, "act", LayerInput),
        InternalConnect("act", LayerOutput, "mul", LeftOperand),
        InConnect(H, "mul", RightOperand),
        OutConnect("mul", LayerOutput, LayerOutput),
    )


def rnn_gru(steps: int, dim: int, *extra: Any) -> Callable[[tuple[Any, ...]], Built]:
    fan_in, fan_out, batch = 3, 4, 2

    def make(policies: tuple[Any, ...]) -> Built:
        in_map = LayerInMap({LayerInput: typ(3), H: typ(2)})
        cls = make_train_layer(
            RecurrentLayer,
            in_map,
            PActFuncIs(GruStep),
            PSeqIDsAre(SeqID(LayerInput, dim)),
            PElemIs(F64),
            *extra,
            *policies,
        )
        layer = cls("r", fan_in, fan_out)
        params = gru_params("r/kernel", fan_in, fan_out, seed=70)
        buffer = init_params(layer, params)
        shape = [batch, fan_in]
        shape.insert(dim, steps)
        inputs: dict[type, object] = {
            LayerInput: t64(rand(*shape, seed=71)),
            H: t64(rand(batch, fan_out, seed=72)),
        }
        tensors = {n: buffer.try_get(n) for n in params}
        return Built(layer, inputs, {n: t for n, t in tensors.items() if t is not None})

    return make


def rnn_bias(policies: tuple[Any, ...]) -> Built:
    in_map = LayerInMap({LayerInput: typ(2), Bias: typ(1), H: typ(1)})
    cls = make_train_layer(
        RecurrentLayer, in_map, PActFuncIs(AddBiasStep), PSeqIDsAre(SeqID(LayerInput, 0)), *policies
    )
    inputs: dict[type, object] = {
        LayerInput: t64(rand(6, 3, seed=80)),
        Bias: t64(rand(3, seed=81)),
        H: t64(rand(3, seed=82)),
    }
    return Built(cls("r"), inputs, {})


RECURRENT: dict[str, Callable[[tuple[Any, ...]], Built]] = {
    "gru-6-steps-time-dim-0": rnn_gru(6, 0),
    "gru-6-steps-time-dim-1": rnn_gru(6, 1),
    "non-sequence-input-summed-over-time": rnn_bias,
}
RECURRENT_CASES = [
    (case, policy)
    for case in RECURRENT
    for policy in POLICIES
    if policy == "feedback" or case.startswith("gru")  # the bias kernel has no parameters
]


@pytest.mark.parametrize(
    ("case", "policy"), RECURRENT_CASES, ids=[f"{c}-{p}" for c, p in RECURRENT_CASES]
)
def test_recurrent_bptt_is_the_vjp(case: str, policy: str) -> None:
    """Several steps forward, then the whole backward through time."""
    check_against_vjp(RECURRENT[case](POLICIES[policy]), expect="vjp")


def test_recurrent_lifo_over_two_sequences() -> None:
    """Two forwards, two backwards in reverse order."""
    make = RECURRENT["gru-6-steps-time-dim-0"]
    first = make((PUpdate, PFeedbackOutput))
    layer = first.layer
    out1 = forward(first)
    second = Built(
        layer, {LayerInput: t64(rand(4, 2, 3, seed=90)), H: t64(rand(2, 4, seed=91))}, first.params
    )
    out2 = forward(second)
    assert recorded(layer) == "vjp"
    g1, g2 = t64(rand(*out1.shape, seed=92)), t64(rand(*out2.shape, seed=93))
    names = sorted(first.params)
    wrt2 = [second.inputs[LayerInput], second.inputs[H], *(first.params[n] for n in names)]
    wrt1 = [first.inputs[LayerInput], first.inputs[H], *(first.params[n] for n in names)]
    want2 = [w.numpy() for w in tn.vjp(out2, wrt2, g2)]
    want1 = [w.numpy() for w in tn.vjp(out1, wrt1, g1)]
    back2 = layer.feed_backward(layer.output_cont().set(LayerOutput, g2))
    back1 = layer.feed_backward(layer.output_cont().set(LayerOutput, g1))
    for back, want in ((back2, want2), (back1, want1)):
        close(back.get(LayerInput).numpy(), want[0])
        close(back.get(H).numpy(), want[1])
    collected = collect(layer)
    for i, name in enumerate(names):
        close(collected[name], want1[2 + i] + want2[2 + i])
    layer.neutral_invariant()


def test_recurrent_without_bptt_is_the_per_step_vjp() -> None:
    """PDisableBptt truncates: each step's gradient stops at that step. The forward cuts the
    state with ``ops.stop_gradient`` after the first step (DESIGN §7), so the layer's backward
    is the vjp of its forward, and it equals the sum over steps of one step's vjp at the
    states the forward reached."""
    built = rnn_gru(5, 0, PDisableBptt)((PUpdate, PFeedbackOutput))
    layer = built.layer
    out = forward(built)
    g = rand(*out.shape, seed=94)
    full = tn.vjp(out, built.params["r/kernel/W/param"], t64(g)).numpy()
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    collected = collect(layer)
    in_map = LayerInMap({LayerInput: typ(2), H: typ(2)})
    step = make_train_layer(GruStep, in_map, PElemIs(F64), PUpdate, PFeedbackOutput)("g", 3, 4)
    init_params(step, {n.replace("r/kernel", "g"): t.numpy() for n, t in built.params.items()})
    states = np.concatenate([arr(built.inputs[H])[None], out.numpy()])  # h before each step
    xs = arr(built.inputs[LayerInput])
    names = sorted(built.params)
    total = {n: np.zeros_like(built.params[n].numpy()) for n in names}
    dx = np.zeros_like(xs)
    for t in range(xs.shape[0]):
        x_t, h_t = t64(xs[t]), t64(states[t])
        y = forward(Built(step, {LayerInput: x_t, H: h_t}, {}))
        step.feed_backward(step.output_cont())
        wrt = [x_t, *(step_param(step, n) for n in names)]
        pulled = tn.vjp(y, wrt, t64(g[t]))
        dx[t] = pulled[0].numpy()
        for n, p in zip(names, pulled[1:], strict=True):
            total[n] += p.numpy()
    close(back.get(LayerInput).numpy(), dx)
    for n in names:
        close(collected[n], total[n], n)
    close(collected["r/kernel/W/param"], full)  # the forward's vjp is the truncated gradient
    bptt = rnn_gru(5, 0)((PUpdate, PFeedbackOutput))
    whole = tn.vjp(forward(bptt), bptt.params["r/kernel/W/param"], t64(g)).numpy()
    assert not np.allclose(full, whole)  # and it is truncated indeed
    layer.neutral_invariant()


def step_param(step: Any, name: str) -> Tensor64:
    """The tensor of parameter ``r/kernel/<w>/param`` in the lone kernel ``g``."""
    sub = name.split("/")[2]
    data = step.sublayers[sub].sublayers["param"].data
    assert isinstance(data, tn.Tensor)
    return data


# --- partial derivatives, and templates that bring their own backward ---------------------------


def test_inputs_that_are_nodes_get_the_vjp_with_respect_to_the_node() -> None:
    """A node input (here ``x * 2``) may depend on anything: the forward runs on a cut of it
    (``ops.stop_gradient``), and the backward gives the vjp with respect to that node."""
    built = COMPOSITES["gru-step"]((PUpdate, PFeedbackOutput))
    built.inputs = {p: t64(arr(v)) * 2.0 for p, v in built.inputs.items()}
    check_against_vjp(built, expect="vjp")


def test_a_weight_shared_with_an_upstream_layer_gets_each_layers_gradient_once() -> None:
    """``(x·W)·W`` by two WeightLayers sharing ``W`` (one name): the second layer's backward
    gives W only its own use (the input is cut), so the collected sum is tn.grad's total."""
    in_map = LayerInMap({LayerInput: typ(2)})
    cls = make_train_layer(WeightLayer, in_map, PElemIs(F64), PUpdate, PFeedbackOutput)
    first, second = cls("a", 3, 3), cls("b", 3, 3)
    w = rand(3, 3, seed=105)
    buffer = init_params(first, {"a/param": w})
    shared = buffer.try_get("a/param")
    assert shared is not None
    source = second.sublayers["param"]
    assert isinstance(source, ParamSourceLayer)
    source.data = shared  # what LoadBuffer sharing by name does
    x = m(106, 4, 3)
    h = forward(Built(first, {LayerInput: x}, {}))
    y = forward(Built(second, {LayerInput: h}, {}))
    g = rand(4, 3, seed=107)
    back = second.feed_backward(second.output_cont().set(LayerOutput, t64(g)))
    first.feed_backward(first.output_cont().set(LayerOutput, back.get(LayerInput)))
    total = collect(first)["a/param"] + collect(second)["b/param"]
    close(total, tn.vjp(y, shared, t64(g)).numpy())
    close(total, x.numpy().T @ g @ w.T + (x.numpy() @ w).T @ g)
    first.neutral_invariant()
    second.neutral_invariant()


def test_one_tensor_on_two_ports_gets_partial_derivatives() -> None:
    """The same tensor as x and h of a GRU step: each port gets its partial derivative (what
    tn.vjp gives for two distinct tensors of those values), not the total."""
    built = gru(4, 4, 3, seed=61)((PUpdate, PFeedbackOutput))
    x = built.inputs[LayerInput]
    twin = Built(built.layer, {LayerInput: x, H: x}, built.params)
    out = forward(twin)
    assert recorded(built.layer) == "vjp"
    g = t64(rand(*out.shape, seed=95))
    back = built.layer.feed_backward(built.layer.output_cont().set(LayerOutput, g))
    copy = t64(arr(x))
    reference = forward(Built(built.layer, {LayerInput: x, H: copy}, {}))
    want_x, want_h = tn.vjp(reference, [x, copy], g)
    built.layer.feed_backward(built.layer.output_cont())
    close(back.get(LayerInput).numpy(), want_x.numpy())
    close(back.get(H).numpy(), want_h.numpy())
    collect(built.layer)
    built.layer.neutral_invariant()


class NLLOfSoftmax(ComposeKernel[Any, LayerOutput]):
    """``nll(t, softmax(x))``: the truth gets no gradient (stopped in NLLLossLayer's forward)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, LossLayerWeight)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("softmax", SoftmaxLayer),
        Sublayer("loss", NLLLossLayer),
        InConnect(LayerInput, "softmax", LayerInput),
        InConnect(LossLayerWeight, "loss", LossLayerWeight),
        InternalConnect("softmax", LayerOutput, "loss", LayerInput),
        OutConnect("loss", LayerOutput, LayerOutput),
    )


def test_a_composite_keeps_its_sublayers_stopped_gradients() -> None:
    in_map = LayerInMap({LayerInput: typ(2), LossLayerWeight: typ(2)})
    layer = make_train_layer(NLLOfSoftmax, in_map, PFeedbackOutput)("n")
    truth = t64(np.eye(3)[[0, 2, 1, 1]])
    check_against_vjp(
        Built(
            layer, {LayerInput: m(96, 4, 3), LossLayerWeight: truth}, {}, no_grad=(LossLayerWeight,)
        ),
        expect="vjp",
    )


class Softplus(Layer[LayerInput, LayerOutput]):
    """``log(1 + e^x)``, with a forward only: its backward is derived."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)

    def forward(self, inputs: dict[type, Any]) -> dict[type, Any]:
        return {LayerOutput: ops.log(ops.exp(inputs[LayerInput]) + 1.0)}

    def feed_forward(self, inputs: VarValues[LayerInput, Any]) -> VarValues[LayerOutput, Any]:
        return self._feed_forward(inputs)

    def feed_backward(self, grads: VarValues[LayerOutput, Any]) -> VarValues[LayerInput, Any]:
        return self._feed_backward(grads)


class Product(Layer[LeftOperand | RightOperand, LayerOutput]):
    """``a * b``, with a forward only."""

    input_ports: ClassVar[tuple[type, ...]] = (LeftOperand, RightOperand)

    def forward(self, inputs: dict[type, Any]) -> dict[type, Any]:
        return {LayerOutput: inputs[LeftOperand] * inputs[RightOperand]}

    def feed_forward(self, inputs: VarValues[Any, Any]) -> VarValues[LayerOutput, Any]:
        return self._feed_forward(inputs)

    def feed_backward(self, grads: VarValues[LayerOutput, Any]) -> VarValues[Any, Any]:
        return self._feed_backward(grads)


def test_forward_only_layer_derives_its_backward() -> None:
    cls = make_train_layer(Softplus, LayerInMap({LayerInput: typ(2)}), PFeedbackOutput)
    x = rand(4, 3, seed=97)
    built = Built(cls("sp"), {LayerInput: t64(x)}, {})
    check_against_vjp(built, expect="vjp")
    out = forward(built)
    g = rand(4, 3, seed=98)
    back = built.layer.feed_backward(built.layer.output_cont().set(LayerOutput, t64(g)))
    close(back.get(LayerInput).numpy(), g / (1 + np.exp(-x)))
    assert out.shape == (4, 3)
    built.layer.neutral_invariant()
    check_against_vjp(
        Built(
            make_train_layer(Softplus, LayerInMap({LayerInput: typ(2)}))("sp"),
            {LayerInput: t64(x)},
            {},
        )
    )


def test_forward_only_layer_on_dependent_inputs_differentiates_cut_copies() -> None:
    """``a * a`` through two ports: each gets ``g * a`` (its partial), not ``2 g a``; an
    input that is a node gets the partial with respect to that node."""
    in_map = LayerInMap({LeftOperand: typ(2), RightOperand: typ(2)})
    layer = make_train_layer(Product, in_map, PFeedbackOutput)("p")
    a = rand(3, 2, seed=99)
    ta = t64(a)
    out = forward(Built(layer, {LeftOperand: ta, RightOperand: ta}, {}))
    g = rand(3, 2, seed=100)
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    close(back.get(LeftOperand).numpy(), g * a)
    close(back.get(RightOperand).numpy(), g * a)
    close(out.numpy(), a * a)
    b = ta * 3.0
    out = forward(Built(layer, {LeftOperand: ta, RightOperand: b}, {}))
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    close(back.get(LeftOperand).numpy(), g * 3 * a)
    close(back.get(RightOperand).numpy(), g * a)
    layer.neutral_invariant()


class SoftplusLinear(ComposeKernel[LayerInput, LayerOutput]):
    """``softplus(x·W + b)``: a composite with a forward-only sublayer."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("fc", LinearLayer),
        Sublayer("act", Softplus),
        InConnect(LayerInput, "fc", LayerInput),
        InternalConnect("fc", LayerOutput, "act", LayerInput),
        OutConnect("act", LayerOutput, LayerOutput),
    )

    def __init__(self, name: str) -> None:
        super().__init__(name, self.create_sublayers().set("fc", 3, 2))


def test_composite_of_a_user_layer() -> None:
    in_map = LayerInMap({LayerInput: typ(2)})
    cls = make_train_layer(SoftplusLinear, in_map, PElemIs(F64), PUpdate, PFeedbackOutput)
    layer = cls("s")
    buffer = init_params(layer, {"s/fc/weight": W32, "s/fc/bias": B2})
    params = {n: buffer.try_get(n) for n in ("s/fc/weight", "s/fc/bias")}
    found = {n: t for n, t in params.items() if t is not None}
    check_against_vjp(Built(layer, {LayerInput: t64(X)}, found), expect="vjp")


def test_grad_through_an_unrolled_forward_reaches_a_tensor_input() -> None:
    """Steps read a principal sequence tensor through slice nodes: tn.grad of a loss of the
    recurrent output with respect to that tensor is not zero."""
    built = rnn_gru(4, 0)((PUpdate, PFeedbackOutput))
    out = forward(built)
    built.layer.feed_backward(built.layer.output_cont())
    x = built.inputs[LayerInput]
    assert isinstance(x, tn.Tensor)
    dx = tn.grad(ops.reduce_sum(out * out), x).numpy()
    assert np.abs(dx).min() > 0


class StraightThroughSign(UnaryLayer):
    """``sign(x)`` whose gradient passes ``g`` through (a straight-through estimator), said
    in the forward: ``x + stop_gradient(sign(x) - x)``."""

    def op(self, x: Any, /) -> Any:
        return x + ops.stop_gradient(ops.sign(x) - x)


class SignThenSigmoid(ComposeKernel[LayerInput, LayerOutput]):
    """``sigmoid(sign_st(x))``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("sign", StraightThroughSign),
        Sublayer("act", SigmoidLayer),
        InConnect(LayerInput, "sign", LayerInput),
        InternalConnect("sign", LayerOutput, "act", LayerInput),
        OutConnect("act", LayerOutput, LayerOutput),
    )


def test_a_layer_with_its_own_gradient_says_it_in_its_forward() -> None:
    """A gradient that is not the plain derivative is ``ops.stop_gradient`` in the forward,
    alone and inside a composite."""
    in_map = LayerInMap({LayerInput: typ(2)})
    x = away_from_zero(3, 2, seed=101)
    g = rand(3, 2, seed=102)
    sign = make_train_layer(StraightThroughSign, in_map, PFeedbackOutput)("st")
    out = forward(Built(sign, {LayerInput: t64(x)}, {}))
    close(out.numpy(), np.sign(x))
    back = sign.feed_backward(sign.output_cont().set(LayerOutput, t64(g)))
    close(back.get(LayerInput).numpy(), g)
    layer = make_train_layer(SignThenSigmoid, in_map, PFeedbackOutput)("s")
    out = forward(Built(layer, {LayerInput: t64(x)}, {}))
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    y = out.numpy()
    close(back.get(LayerInput).numpy(), g * y * (1 - y))  # passed through sign
    layer.neutral_invariant()


class HandSign(UnaryLayer):
    """MetaNN style: an op and a gradient op of its own (refused)."""

    op = staticmethod(ops.sign)

    def grad_op(self, g: Any, kept: Any, /) -> Any:
        return g


class HandScale(Layer[LayerInput, LayerOutput]):
    """MetaNN style: a forward and a backward of its own (refused)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)

    def forward(self, inputs: dict[type, Any]) -> dict[type, Any]:
        return {LayerOutput: inputs[LayerInput] * 2.0}

    def backward(self, grad: Any) -> dict[type, Any]:
        return {LayerInput: grad * 2.0}


@pytest.mark.parametrize(("template", "name"), [(HandSign, "grad_op"), (HandScale, "backward")])
def test_a_template_with_a_backward_of_its_own_is_refused(template: type[Any], name: str) -> None:
    in_map = LayerInMap({LayerInput: typ(2)})
    with pytest.raises(
        tn.LayerError,
        match=rf"cannot configure {template.__name__}: it defines {name}\(\), and a layer's "
        r"backward is the vjp of its forward\.(.|\n)*x \+ ops\.stop_gradient",
    ):
        make_train_layer(template, in_map, PFeedbackOutput)


def test_a_derived_backward_checks_the_gradient_like_tn_vjp() -> None:
    layer = make_train_layer(Softplus, LayerInMap({LayerInput: typ(2)}), PFeedbackOutput)("sp")
    forward(Built(layer, {LayerInput: m(103, 4, 3)}, {}))
    with pytest.raises(tn.ShapeError, match=r"cannot build tn.vjp: cotangent has shape \(3, 4\)"):
        layer.feed_backward(layer.output_cont().set(LayerOutput, m(104, 3, 4)))
    layer.neutral_invariant()  # the record was popped all the same
