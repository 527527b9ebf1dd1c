"""Model facilities misused: mypy and pyright must flag each marked line."""

import typed_nn as tn
from typed_nn import CPU, Float32, Float64
from typed_nn.model import SGD, GradCollector, LoadBuffer, XavierFiller

w = tn.zeros((4, 3), Float32, CPU)
w64 = tn.zeros((4, 3), Float64, CPU)
buf = LoadBuffer(Float32, CPU)
buf.set("w", w64)  # E: Argument 2 to "set" of "LoadBuffer" has incompatible type
col = GradCollector(Float32, CPU)
col.collect("w", w, w64)  # E: Argument 3 to "collect" of "GradCollector" has incompatible type
m: tn.Tensor[Float32, CPU, tn.Dim1] | None = buf.try_get("w", tn.Dim2)  # E: Argument 2 to "try_get" of "LoadBuffer"
buf[0]  # E: Invalid index type "int" for "LoadBuffer[Float32, CPU]"
f64: tn.Tensor[Float64, CPU, tn.Dim2] = buf["w"]  # E: Incompatible types in assignment
buf["w"] = w  # E: Unsupported target for indexed assignment
SGD("0.1")  # E: Argument 1 to "SGD" has incompatible type "str"
XavierFiller(seed="0")  # E: Argument "seed" to "XavierFiller" has incompatible type "str"
