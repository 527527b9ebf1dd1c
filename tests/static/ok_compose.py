"""Composite layers as mypy and pyright see them: typed outputs from tagged inputs."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32, TensorLike
from typed_nn.layers import (
    MLP,
    ComposeTopology,
    Declared,
    GruStep,
    InConnect,
    InternalConnect,
    LayerInMap,
    LayerInput,
    LayerOutput,
    LinearLayer,
    OutConnect,
    ParamSourceLayer,
    Previous,
    ReLULayer,
    SigmoidLayer,
    SingleLayerPerceptron,
    Sublayer,
    make_train_layer,
)
from typed_nn.policies import PActFuncIs, PUpdate

M32 = tn.Matrix[Float32, CPU]
x = tn.zeros((4, 3), Float32, CPU)
h = tn.zeros((4, 2), Float32, CPU)

# pyright reads the declared element and device from the type argument; mypy's plugin
# writes it from the map (ok_plugin_declared.py).
Linear = make_train_layer(LinearLayer[Declared[Float32, CPU]], LayerInMap({LayerInput: M32}), PUpdate)
assert_type(Linear, type[LinearLayer[Declared[Float32, CPU]]])
fc = Linear("fc", 3, 2)
y = fc.feed_forward(fc.input_cont().set(LayerInput, x)).get(LayerOutput)
assert_type(y, TensorLike[Float32, CPU, Dim2])
assert_type(fc.feed_backward(fc.output_cont().set(LayerOutput, y)).get(LayerInput), TensorLike[Float32, CPU, Dim2])

slp = make_train_layer(SingleLayerPerceptron, LayerInMap({LayerInput: M32}), PActFuncIs(SigmoidLayer))("s", 3, 2)
assert_type(slp.feed_forward(slp.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])

gru = make_train_layer(GruStep, LayerInMap({LayerInput: M32, Previous(LayerOutput): M32}))("gru", 3, 2)
step = gru.feed_forward(gru.input_cont().set(LayerInput, x).set(Previous(LayerOutput), h))
assert_type(step.get(LayerOutput), TensorLike[Float32, CPU, Dim2])

net = MLP.build("net", [3, 8, 2], [ReLULayer, None])
assert_type(net, MLP[Float32, CPU])
assert_type(net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])

topology = ComposeTopology(
    Sublayer("w", ParamSourceLayer),
    Sublayer("act", SigmoidLayer),
    InConnect(LayerInput, "act", LayerInput),
    InternalConnect("w", LayerOutput, "act", LayerInput),
    OutConnect("act", LayerOutput, LayerOutput),
)
assert_type(topology.order, tuple[str, ...])
