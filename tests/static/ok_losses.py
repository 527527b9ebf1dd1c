"""Result types of the losses on logits, stop_gradient and the composed activations."""

from typing import assert_type

import typed_nn as tn
from typed_nn import CPU, Dim0, Dim1, Dim2, Dim3, Float32, Float64, Int32, Int64, TensorLike, ops

logits = tn.zeros((8, 5), Float32, CPU)
labels = tn.zeros((8,), Int64, CPU)
seq = tn.zeros((2, 4, 5), Float64, CPU)
steps = tn.zeros((2, 4), Int32, CPU)
targets = tn.zeros((8, 5), Float32, CPU)

assert_type(ops.cross_entropy(logits, labels), TensorLike[Float32, CPU, Dim0])
assert_type(ops.cross_entropy(logits, labels, reduction="sum"), TensorLike[Float32, CPU, Dim0])
assert_type(ops.cross_entropy(logits, labels, reduction="none"), TensorLike[Float32, CPU, Dim1])
assert_type(
    ops.cross_entropy(seq, steps, label_smoothing=0.1, ignore_index=-100),
    TensorLike[Float64, CPU, Dim0],
)
assert_type(ops.cross_entropy(seq, steps, reduction="none"), TensorLike[Float64, CPU, Dim2])
assert_type(ops.binary_cross_entropy_with_logits(logits, targets), TensorLike[Float32, CPU, Dim0])
assert_type(
    ops.binary_cross_entropy_with_logits(logits, targets, reduction="none"),
    TensorLike[Float32, CPU, Dim2],
)
assert_type(ops.stop_gradient(seq), TensorLike[Float64, CPU, Dim3])
assert_type(ops.stop_gradient(labels), TensorLike[Int64, CPU, Dim1])
assert_type(ops.gelu(seq, approximate="tanh"), TensorLike[Float64, CPU, Dim3])
assert_type(ops.silu(logits), TensorLike[Float32, CPU, Dim2])
assert_type(ops.erf(logits), TensorLike[Float32, CPU, Dim2])
