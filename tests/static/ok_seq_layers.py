"""The norm layers and the PyTorch-formulated steps as mypy and pyright see them: outputs
typed from the inputs (element, device, rank)."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim2, Dim3, Dim4, Float32, TensorLike
from typed_nn.layers import (
    BatchNormLayer,
    CellState,
    LayerInMap,
    LayerInput,
    LayerNormLayer,
    LayerOutput,
    LstmStep,
    Previous,
    TorchGruStep,
    make_infer_layer,
    make_train_layer,
)
from typed_nn.policies import PFeedbackOutput

M32 = tn.Matrix[Float32, CPU]
T4 = tn.Tensor[Float32, CPU, Dim4]
images = tn.zeros((2, 3, 4, 4), Float32, CPU)
bn = make_train_layer(BatchNormLayer, LayerInMap({LayerInput: T4}), PFeedbackOutput)("bn", 3)
normed = bn.feed_forward(bn.input_cont().set(LayerInput, images)).get(LayerOutput)
assert_type(normed, TensorLike[Float32, CPU, Dim4])
back = bn.feed_backward(bn.output_cont().set(LayerOutput, normed)).get(LayerInput)
assert_type(back, TensorLike[Float32, CPU, Dim4])

x = tn.zeros((2, 5), Float32, CPU)
ln = make_infer_layer(LayerNormLayer)("ln", 5)
assert_type(ln.feed_forward(ln.input_cont().set(LayerInput, x)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])
tokens = tn.zeros((2, 4, 5), Float32, CPU)  # the same layer keeps a sequence's rank
assert_type(ln.feed_forward(ln.input_cont().set(LayerInput, tokens)).get(LayerOutput), TensorLike[Float32, CPU, Dim3])

H, C = Previous(LayerOutput), Previous(CellState)
h = tn.zeros((2, 4), Float32, CPU)
lstm = make_infer_layer(LstmStep)("lstm", 5, 4)
outs = lstm.feed_forward(lstm.input_cont().set(LayerInput, x).set(H, h).set(C, h))
assert_type(outs.get(LayerOutput), TensorLike[Float32, CPU, Dim2])
assert_type(outs.get(CellState), TensorLike[Float32, CPU, Dim2])
gru = make_infer_layer(TorchGruStep)("gru", 5, 4)
assert_type(gru.feed_forward(gru.input_cont().set(LayerInput, x).set(H, h)).get(LayerOutput), TensorLike[Float32, CPU, Dim2])
h_grad = gru.feed_backward(gru.output_cont().set(LayerOutput, h)).get(H)
assert_type(h_grad, TensorLike[Float32, CPU, Dim2])
