"""The norm layers and steps reject, statically, data their forward cannot take."""

import typed_nn as tn
from typed_nn import CPU, Float32, Int32
from typed_nn.layers import (
    BatchNormLayer,
    CellState,
    LayerInput,
    LayerOutput,
    LstmStep,
    Previous,
    make_infer_layer,
)

ints = tn.zeros((2, 3), Int32, CPU)
bn = make_infer_layer(BatchNormLayer)("bn", 3)
int_batch = bn.feed_forward(bn.input_cont().set(LayerInput, ints))  # E: Value of type variable "FE" of "feed_forward" of "SameTypeFeeds2or4" cannot be "Int32"

H, C = Previous(LayerOutput), Previous(CellState)
seq = tn.zeros((4, 2, 3), Float32, CPU)
h = tn.zeros((2, 5), Float32, CPU)
lstm = make_infer_layer(LstmStep)("lstm", 3, 5)
whole_sequence = lstm.feed_forward(lstm.input_cont().set(LayerInput, seq).set(H, h).set(C, h))  # E: Argument 1 to "feed_forward" of "ComposeKernel" has incompatible type
