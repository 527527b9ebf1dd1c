"""RecurrentLayer: sequence dims, Previous ports, BPTT on and off, non-sequence inputs summed
over time, MetaNN's errors, and a GRU unrolled against a numpy loop."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
from composite_helpers import collect, fd_param, gru_backward, gru_forward, init_params
from helpers import Array, layer_feed, t64

import typed_nn as tn
from typed_nn.layers import (
    AddLayer,
    ComposeKernel,
    ComposeTopology,
    GruStep,
    InConnect,
    InternalConnect,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LeftOperand,
    OutConnect,
    PortKey,
    Previous,
    RecurrentLayer,
    RightOperand,
    SigmoidLayer,
    Sublayer,
    make_infer_layer,
    make_train_layer,
    tensor_type,
)
from typed_nn.layers.recurrent import time_first
from typed_nn.policies import (
    PActFuncIs,
    PDisableBptt,
    PElemIs,
    PFeedbackOutput,
    PSeqIDsAre,
    PUpdate,
    SeqID,
)

H = Previous(LayerOutput)
rng = np.random.default_rng(3)


def t(rank: int) -> object:
    """The declared type ``TensorLike[Float64, CPU, Dim<rank>]``."""
    return tensor_type(tn.Float64, tn.CPU, rank)


class Bias(PortKey):
    """A non-sequence input of the test kernel."""


class Second(PortKey):
    """A second sequence input of the test kernel."""


class AddWrap(ComposeKernel[Any, LayerOutput]):
    """``x + h`` (MetaNN's AddWrapLayer test kernel)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, H)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("add", AddLayer),
        InConnect(LayerInput, "add", LeftOperand),
        InConnect(H, "add", RightOperand),
        OutConnect("add", LayerOutput, LayerOutput),
    )


class AddThree(ComposeKernel[Any, LayerOutput]):
    """``x + b + h``: ``Bias`` is not a sequence, or ``(x + s) + h`` with ``Second`` one."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, Bias, H)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("a", AddLayer),
        Sublayer("b", AddLayer),
        InConnect(LayerInput, "a", LeftOperand),
        InConnect(Bias, "a", RightOperand),
        InternalConnect("a", LayerOutput, "b", LeftOperand),
        InConnect(H, "b", RightOperand),
        OutConnect("b", LayerOutput, LayerOutput),
    )


def rnn(kernel: Any, ports: dict[type, int], *policies: Any, seq: Any = ()) -> Any:
    return make_train_layer(
        RecurrentLayer,
        LayerInMap({p: t(r) for p, r in ports.items()}),
        PActFuncIs(kernel),
        PSeqIDsAre(*seq),
        *policies,
    )


def test_time_first_is_metann_idswap() -> None:
    assert time_first(3, 0) == (0, 1, 2)
    assert time_first(3, 1) == (1, 0, 2)
    assert time_first(3, 2) == (2, 0, 1)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_sequence_dim_forward_and_bptt(dim: int) -> None:
    layer = rnn(AddWrap, {LayerInput: 3, H: 2}, PFeedbackOutput, seq=[SeqID(LayerInput, dim)])("r")
    shape = [2, 3]
    shape.insert(dim, 4)  # time (4 steps) at ``dim``; the other dims keep their order
    x = rng.standard_normal(shape)
    h0 = rng.standard_normal((2, 3))
    steps = np.moveaxis(x, dim, 0)
    out = layer_feed(layer, {LayerInput: x, H: h0}).get(LayerOutput)
    assert out.shape == (4, 2, 3)
    np.testing.assert_allclose(out.numpy(), h0 + np.cumsum(steps, axis=0))
    g = rng.standard_normal((4, 2, 3))
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    later = np.cumsum(g[::-1], axis=0)[::-1]  # step t gets the grads of steps t..T-1
    np.testing.assert_allclose(back.get(LayerInput).numpy(), np.moveaxis(later, 0, dim))
    np.testing.assert_allclose(back.get(H).numpy(), g.sum(axis=0))
    layer.neutral_invariant()


def test_without_bptt_each_step_keeps_its_own_gradient() -> None:
    layer = rnn(
        AddWrap, {LayerInput: 2, H: 1}, PFeedbackOutput, PDisableBptt, seq=[SeqID(LayerInput, 0)]
    )("r")
    x, h0, g = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((3, 2))
    layer_feed(layer, {LayerInput: x, H: h0})
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_allclose(back.get(LayerInput).numpy(), g)
    np.testing.assert_allclose(back.get(H).numpy(), g[0])


def test_non_sequence_input_gradient_is_summed_over_time() -> None:
    layer = rnn(
        AddThree, {LayerInput: 2, Bias: 1, H: 1}, PFeedbackOutput, seq=[SeqID(LayerInput, 0)]
    )("r")
    x, b, h0 = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal(2)
    out = layer_feed(layer, {LayerInput: x, Bias: b, H: h0}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, h0 + np.cumsum(x + b, axis=0))
    g = rng.standard_normal((3, 2))
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    later = np.cumsum(g[::-1], axis=0)[::-1]
    np.testing.assert_allclose(back.get(Bias).numpy(), later.sum(axis=0))


def test_two_sequence_inputs_with_different_dims() -> None:
    layer = rnn(
        AddThree,
        {LayerInput: 2, Bias: 2, H: 1},
        PFeedbackOutput,
        seq=[SeqID(LayerInput, 0), SeqID(Bias, 1)],
    )("r")
    x, s, h0 = rng.standard_normal((3, 2)), rng.standard_normal((2, 3)), rng.standard_normal(2)
    out = layer_feed(layer, {LayerInput: x, Bias: s, H: h0}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, h0 + np.cumsum(x + s.T, axis=0))
    g = rng.standard_normal((3, 2))
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    later = np.cumsum(g[::-1], axis=0)[::-1]
    np.testing.assert_allclose(back.get(Bias).numpy(), later.T)


def test_lifo_over_several_sequences() -> None:
    layer = rnn(AddWrap, {LayerInput: 2, H: 1}, PFeedbackOutput, seq=[SeqID(LayerInput, 0)])("r")
    lengths = [2, 5, 3]
    for n in lengths:
        layer_feed(layer, {LayerInput: rng.standard_normal((n, 2)), H: np.zeros(2)})
    for n in reversed(lengths):
        g = rng.standard_normal((n, 2))
        back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
        assert back.get(LayerInput).shape == (n, 2)
    layer.neutral_invariant()


def numpy_gru_rnn(p: dict[str, Array], xs: Array, h0: Array, g: Array) -> dict[str, Array]:
    """Outputs and BPTT gradients of a GRU over ``xs`` (time first), from gru_forward/backward."""
    states = [h0]
    for x in xs:
        states.append(gru_forward(p, x, states[-1])["out"])
    grads = {n: np.zeros_like(v) for n, v in p.items()}
    dxs = np.zeros_like(xs)
    carry = np.zeros_like(h0)
    for step in reversed(range(len(xs))):
        back = gru_backward(p, xs[step], states[step], g[step] + carry)
        for n in p:
            grads[n] += back[n]
        dxs[step], carry = back["x"], back["h"]
    return {"out": np.stack(states[1:]), "x": dxs, "h": carry, **grads}


def test_gru_rnn_matches_a_numpy_loop_with_bptt() -> None:
    layer = rnn(
        GruStep,
        {LayerInput: 3, H: 2},
        PUpdate,
        PFeedbackOutput,
        PElemIs(tn.Float64),
        seq=[SeqID(LayerInput, 1)],
    )("rnn", 3, 2)
    p = {
        n: rng.standard_normal((3 if n.startswith("W") else 2, 2)) * 0.6
        for n in ("W", "Wz", "Wr", "U", "Uz", "Ur")
    }
    buffer = init_params(layer, {f"rnn/kernel/{n}/param": v for n, v in p.items()})
    x = rng.standard_normal((2, 4, 3))  # (batch, time, fan_in): SeqID dim 1
    h0, g = rng.standard_normal((2, 2)), rng.standard_normal((4, 2, 2))
    expected = numpy_gru_rnn(p, np.moveaxis(x, 1, 0), h0, g)
    out = layer_feed(layer, {LayerInput: x, H: h0}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, expected["out"])
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g)))
    np.testing.assert_allclose(back.get(LayerInput).numpy(), np.moveaxis(expected["x"], 0, 1))
    np.testing.assert_allclose(back.get(H).numpy(), expected["h"])
    grads = collect(layer)
    for n in p:
        np.testing.assert_allclose(grads[f"rnn/kernel/{n}/param"], expected[n], err_msg=n)
    numeric = fd_param(layer, buffer, "rnn/kernel/Uz/param", {LayerInput: x, H: h0}, g)
    np.testing.assert_allclose(grads["rnn/kernel/Uz/param"], numeric, rtol=1e-6, atol=1e-9)
    layer.neutral_invariant()


def test_gru_rnn_update_without_feedback_forces_the_kernel_to_feed_back() -> None:
    cls = rnn(
        GruStep, {LayerInput: 3, H: 2}, PUpdate, PElemIs(tn.Float64), seq=[SeqID(LayerInput, 0)]
    )
    assert cls.kernel_class.is_feedback_output
    assert cls.is_update
    assert not cls.is_feedback_output
    layer = cls("rnn", 3, 2)
    p = {
        n: rng.standard_normal((3 if n.startswith("W") else 2, 2))
        for n in ("W", "Wz", "Wr", "U", "Uz", "Ur")
    }
    init_params(layer, {f"rnn/kernel/{n}/param": v for n, v in p.items()})
    x, h0, g = rng.standard_normal((3, 1, 3)), np.zeros((1, 2)), rng.standard_normal((3, 1, 2))
    layer_feed(layer, {LayerInput: x, H: h0})
    assert layer.feed_backward(layer.output_cont().set(LayerOutput, t64(g))).set_keys() == ()
    np.testing.assert_allclose(
        collect(layer)["rnn/kernel/W/param"], numpy_gru_rnn(p, x, h0, g)["W"]
    )


@pytest.mark.parametrize("batch", [1, 2])
def test_gru_rnn_inference(batch: int) -> None:
    layer = make_infer_layer(
        RecurrentLayer, PActFuncIs(GruStep), PSeqIDsAre(SeqID(LayerInput)), PElemIs(tn.Float64)
    )("rnn", 2, 3)
    p = {
        n: rng.standard_normal((2 if n.startswith("W") else 3, 3))
        for n in ("W", "Wz", "Wr", "U", "Uz", "Ur")
    }
    init_params(layer, {f"rnn/kernel/{n}/param": v for n, v in p.items()})
    x, h0 = rng.standard_normal((5, batch, 2)), rng.standard_normal((batch, 3))
    out = layer_feed(layer, {LayerInput: x, H: h0}).get(LayerOutput).numpy()
    np.testing.assert_allclose(out, numpy_gru_rnn(p, x, h0, np.zeros((5, batch, 3)))["out"])
    layer.neutral_invariant()


def test_sequence_errors() -> None:
    layer = rnn(
        AddThree,
        {LayerInput: 2, Bias: 2, H: 1},
        PFeedbackOutput,
        seq=[SeqID(LayerInput, 0), SeqID(Bias, 0)],
    )("r")
    with pytest.raises(tn.ShapeError, match=r"Empty sequence as input: layer 'r', port LayerInput"):
        layer_feed(layer, {LayerInput: np.zeros((0, 2)), Bias: np.zeros((0, 2)), H: np.zeros(2)})
    with pytest.raises(
        tn.ShapeError,
        match=r"Sequence number mismatch: layer 'r', port Bias has "
        r"3 steps, another input 2",
    ):
        layer_feed(layer, {LayerInput: np.zeros((2, 2)), Bias: np.zeros((3, 2)), H: np.zeros(2)})
    layer_feed(layer, {LayerInput: np.zeros((2, 2)), Bias: np.zeros((2, 2)), H: np.zeros(2)})
    with pytest.raises(
        tn.LayerError,
        match=r"\[RecurrentLayer\] NeutralInvariant fails: "
        r"ShapeStack is not empty",
    ):
        layer.neutral_invariant()
    with pytest.raises(
        tn.ShapeError,
        match=r"Sequence number mismatch: layer 'r' ran 2 steps, "
        r"the gradient has 4",
    ):
        layer.feed_backward(layer.output_cont().set(LayerOutput, t64(np.zeros((4, 2)))))


def test_configuration_errors() -> None:
    ports: dict[type, int] = {LayerInput: 2, H: 1}
    with pytest.raises(tn.LayerError, match=r"Use PActFuncIs\(\.\.\.\) to set kernel sublayer"):
        make_train_layer(RecurrentLayer, LayerInMap({p: t(r) for p, r in ports.items()}))
    with pytest.raises(tn.LayerError, match=r"Trivial recurrent layer is not allowed"):
        rnn(AddWrap, ports)
    with pytest.raises(
        tn.LayerError,
        match=r"Previous port should not correspond to sequence "
        r"tensor",
    ):
        rnn(AddWrap, ports, seq=[SeqID(H, 0)])
    with pytest.raises(
        tn.LayerError,
        match=r"Some sequence id does not correspond to any RNN "
        r"port: Bias is not an input port",
    ):
        rnn(AddWrap, ports, seq=[SeqID(Bias, 0)])
    with pytest.raises(
        tn.LayerError,
        match=r"No Previous port in the input port set of "
        r"SigmoidLayer",
    ):
        rnn(SigmoidLayer, {LayerInput: 2}, seq=[SeqID(LayerInput, 0)])
    with pytest.raises(tn.LayerError, match=r"sequence dim 2 of LayerInput is out of range"):
        rnn(AddWrap, ports, seq=[SeqID(LayerInput, 2)])


class WrongState(ComposeKernel[Any, LayerOutput]):
    """A kernel whose Previous port is not the previous value of its output."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, Previous(Bias))
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    topology = ComposeTopology(
        Sublayer("add", AddLayer),
        InConnect(LayerInput, "add", LeftOperand),
        InConnect(Previous(Bias), "add", RightOperand),
        OutConnect("add", LayerOutput, LayerOutput),
    )


def test_previous_ports_must_match_the_outputs() -> None:
    with pytest.raises(tn.LayerError, match=r"Invalid input port set of WrongState"):
        rnn(WrongState, {LayerInput: 2, Previous(Bias): 1}, seq=[SeqID(LayerInput, 0)])
