"""Loss calls mypy and pyright must reject: float labels, label ranks that do not match the
logits, a reduced loss assigned as per-position terms, another element or device."""

import typed_nn as tn
from typed_nn import CPU, GPU, Float32, Float64, Int64, ops

logits = tn.zeros((8, 5), Float32, CPU)
labels = tn.zeros((8,), Int64, CPU)
seq = tn.zeros((2, 4, 5), Float32, CPU)
float_labels = tn.zeros((8,), Float32, CPU)
gpu_labels = tn.zeros((8,), Int64, GPU)

ce_float = ops.cross_entropy(logits, float_labels)  # E: cross_entropy
ce_rank = ops.cross_entropy(seq, labels)  # E: cross_entropy
ce_device = ops.cross_entropy(logits, gpu_labels)  # E: cross_entropy
ce_int = ops.cross_entropy(labels, labels)  # E: cross_entropy
per_row: tn.Vector[Float32, CPU] = ops.cross_entropy(logits, labels)  # E: Incompatible types in assignment
mean: tn.Scalar[Float32, CPU] = ops.cross_entropy(logits, labels, reduction="none")  # E: Incompatible types in assignment
ce_reduction = ops.cross_entropy(logits, labels, reduction="avg")  # E: cross_entropy
bce_elems = ops.binary_cross_entropy_with_logits(logits, tn.zeros((8, 5), Float64, CPU))  # E: binary_cross_entropy_with_logits
gelu_mode = ops.gelu(logits, approximate="fast")  # E: "gelu"
