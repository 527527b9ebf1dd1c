"""Model facilities as mypy and pyright see them: typed lookups, and the classes satisfy the
protocols the layers are written against."""

from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from typing import Any, assert_type

import typed_nn as tn
from typed_nn import CPU, Dim2, Float32
from typed_nn.layers.model_protocols import (
    FillerLike,
    GradCollectorLike,
    InitializerLike,
    LoadBufferLike,
)
from typed_nn.model import (
    SGD,
    Adam,
    ConstantFiller,
    GradCollector,
    LoadBuffer,
    MSRAFiller,
    ParamInitializer,
    XavierFiller,
)

w = tn.zeros((4, 3), Float32, CPU)
buf = LoadBuffer(Float32, CPU)
assert_type(buf, LoadBuffer[Float32, CPU])
buf.set("w", w)
assert_type(buf.try_get("w", Dim2), tn.Tensor[Float32, CPU, Dim2] | None)
assert_type(buf.try_get("w"), tn.Tensor[Float32, CPU, Any] | None)
# A LoadBuffer is a Mapping[str, Tensor[E, Dv, Any]] with precise value types.
assert_type(buf["w"], tn.Tensor[Float32, CPU, Any])
assert_type(buf.get("w"), tn.Tensor[Float32, CPU, Any] | None)
assert_type(len(buf), int)
assert_type("w" in buf, bool)
assert_type(buf.keys(), KeysView[str])
assert_type(buf.values(), ValuesView[tn.Tensor[Float32, CPU, Any]])
assert_type(buf.items(), ItemsView[str, tn.Tensor[Float32, CPU, Any]])
for _key, _tensor in buf.items():
    assert_type(_key, str)
    assert_type(_tensor, tn.Tensor[Float32, CPU, Any])
as_mapping: Mapping[str, tn.Tensor[Float32, CPU, Any]] = buf
any_params: Mapping[str, tn.Tensor[Any, Any, Any]] = buf

col = GradCollector(Float32, CPU)
col.collect("w", w, w * 2.0)
for _name, weight, grad in col:
    assert_type(weight, tn.Tensor[Float32, CPU, Any])
    assert_type(grad, tn.TensorLike[Float32, CPU, Any])

SGD(0.1).step(col)
Adam(lambda step: 1e-3 * 0.9**step).step([(w, w * 0.5)])

filler: FillerLike = XavierFiller(seed=0)
filler = MSRAFiller()
filler = ConstantFiller(0.0)
init: InitializerLike = ParamInitializer({"w": XavierFiller()})
loads: LoadBufferLike = buf
collects: GradCollectorLike = col
