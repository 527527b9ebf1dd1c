"""Inference mode: forwards that will never be followed by a backward keep nothing on the stacks
(``tn.inference()``, inference layers sharing a trained model's weights)."""

from __future__ import annotations

import threading
import tracemalloc
from typing import Any

import numpy as np
import pytest
from composite_helpers import init_params
from helpers import layer_feed

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32
from typed_nn.layers import (
    MLP,
    GruStep,
    LayerInMap,
    LayerInput,
    LayerOutput,
    Previous,
    RecurrentLayer,
    ReLULayer,
    layer_init,
    make_train_layer,
    tensor_type,
)
from typed_nn.model import LoadBuffer, ParamInitializer
from typed_nn.policies import PActFuncIs, PElemIs, PFeedbackOutput, PSeqIDsAre, PUpdate, SeqID
from typed_nn.train import fit, load_digits
from typed_nn.train.classifier import build_mlp, make_optimizer


def _forward(
    net: MLP[Float32, CPU], x: tn.Tensor[Float32, CPU, Dim2]
) -> tn.TensorLike[Float32, CPU, Dim2]:
    return net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)


def _held(net: MLP[Float32, CPU]) -> int:
    """Values on every stack of the model (neutral_invariant says where, when there are any)."""
    try:
        net.neutral_invariant()
    except tn.LayerError as err:
        return int(str(err).split("still holds ")[1].split(" ")[0])
    return 0


@pytest.fixture(scope="module")
def trained() -> tuple[MLP[Float32, CPU], LoadBuffer[Float32, CPU], tn.Tensor[Float32, CPU, Dim2]]:
    split = load_digits(seed=0)
    net, params = build_mlp([64, 32, 10], "relu", seed=0)
    fit(net, split.train, make_optimizer("adam"), epochs=1, batch_size=64)
    return net, params, tn.tensor(split.test.features[:16], Float32, CPU, Dim2)


def test_ten_thousand_inference_forwards_keep_nothing(
    trained: tuple[MLP[Float32, CPU], LoadBuffer[Float32, CPU], tn.Tensor[Float32, CPU, Dim2]],
) -> None:
    net, _, x = trained
    expected = _forward(net, x).numpy()
    net.feed_backward(net.output_cont())  # pop that training forward
    with tn.inference():
        for _ in range(50):  # warm the plan caches before measuring
            np.testing.assert_array_equal(_forward(net, x).numpy(), expected)
        tracemalloc.start()
        try:
            for i in range(10_000):
                out = _forward(net, x)
                if i % 100 == 0:  # evaluating some shows the plans are reused, not piled up
                    np.testing.assert_array_equal(out.numpy(), expected)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert _held(net) == 0
    assert peak < 512 * 1024, f"inference forwards held {peak:,} bytes"
    # The control: outside the block, every training forward keeps what its backward needs.
    for _ in range(3):
        _forward(net, x)
    assert _held(net) > 0
    for _ in range(3):
        net.feed_backward(net.output_cont())
    assert _held(net) == 0


def test_backward_inside_inference_is_an_error(
    trained: tuple[MLP[Float32, CPU], LoadBuffer[Float32, CPU], tn.Tensor[Float32, CPU, Dim2]],
) -> None:
    net, _, x = trained
    with tn.inference():
        _forward(net, x)
        with pytest.raises(
            tn.LayerError,
            match=r"cannot feed layer 'mlp' backward inside tn\.inference\(\): forwards there "
            r"keep nothing for a backward\.\n(.|\n)*hint: run training forwards and backwards "
            r"outside",
        ):
            net.feed_backward(net.output_cont())
    assert _held(net) == 0


def test_blocks_nest_and_training_resumes_after(
    trained: tuple[MLP[Float32, CPU], LoadBuffer[Float32, CPU], tn.Tensor[Float32, CPU, Dim2]],
) -> None:
    net, _, x = trained
    with tn.inference():
        with tn.inference():
            _forward(net, x)
        _forward(net, x)  # still inside the outer block
    assert _held(net) == 0
    _forward(net, x)
    assert _held(net) > 0
    net.feed_backward(net.output_cont())
    assert _held(net) == 0
    with pytest.raises(RuntimeError), tn.inference():  # left on an exception too
        raise RuntimeError
    _forward(net, x)
    assert _held(net) > 0
    net.feed_backward(net.output_cont())


def test_inference_is_per_thread(
    trained: tuple[MLP[Float32, CPU], LoadBuffer[Float32, CPU], tn.Tensor[Float32, CPU, Dim2]],
) -> None:
    net, _, x = trained
    inside, done = threading.Event(), threading.Event()

    def hold_block() -> None:
        with tn.inference():
            inside.set()
            done.wait(10)

    other = threading.Thread(target=hold_block)
    other.start()
    try:
        assert inside.wait(10)
        _forward(net, x)  # this thread is not in the block: the forward keeps its values
        assert _held(net) > 0
        net.feed_backward(net.output_cont())
    finally:
        done.set()
        other.join()
    assert _held(net) == 0


def test_an_inference_layer_shares_the_trained_weights(
    trained: tuple[MLP[Float32, CPU], LoadBuffer[Float32, CPU], tn.Tensor[Float32, CPU, Dim2]],
) -> None:
    net, params, x = trained
    view = MLP.build("mlp", [64, 32, 10], [ReLULayer, None], train=False)
    shared = LoadBuffer(Float32, CPU)
    for name, tensor in params.items():
        shared.set(name, tensor)  # the trained tensors themselves
    layer_init(view, ParamInitializer(), shared)  # every parameter found: no filler runs
    assert all(shared[name] is params[name] for name in params)
    want = _forward(net, x).numpy()
    net.feed_backward(net.output_cont())
    for _ in range(100):
        np.testing.assert_array_equal(_forward(view, x).numpy(), want)
    assert _held(view) == 0
    params["mlp/fc2/bias"].assign(params["mlp/fc2/bias"] + 1.0)  # a weight update shows in the view
    np.testing.assert_allclose(_forward(view, x).numpy(), want + 1.0, atol=1e-6)
    params["mlp/fc2/bias"].assign(params["mlp/fc2/bias"] - 1.0)


def test_a_recurrent_layer_keeps_nothing_in_inference() -> None:
    h = Previous(LayerOutput)
    layer = make_train_layer(
        RecurrentLayer,
        LayerInMap(
            {LayerInput: tensor_type(tn.Float64, CPU, 3), h: tensor_type(tn.Float64, CPU, 2)}
        ),
        PActFuncIs(GruStep),
        PSeqIDsAre(SeqID(LayerInput, 1)),
        PUpdate,
        PFeedbackOutput,
        PElemIs(tn.Float64),
    )("rnn", 3, 2)
    rng = np.random.default_rng(0)
    names = ("W", "Wz", "Wr", "U", "Uz", "Ur")
    init_params(
        layer,
        {f"rnn/kernel/{n}/param": rng.standard_normal((3 if n[0] == "W" else 2, 2)) for n in names},
    )
    feeds: dict[type, Any] = {
        LayerInput: rng.standard_normal((2, 4, 3)),
        h: rng.standard_normal((2, 2)),
    }
    want = layer_feed(layer, feeds).get(LayerOutput).numpy()
    layer.feed_backward(layer.output_cont())
    with tn.inference():
        for _ in range(20):
            np.testing.assert_array_equal(layer_feed(layer, feeds).get(LayerOutput).numpy(), want)
    layer.neutral_invariant()
