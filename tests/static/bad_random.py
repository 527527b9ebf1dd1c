"""Random draws mypy and pyright must reject."""

import typed_nn as tn
from typed_nn import CPU, GPU, Float32, Float64, Int64, ops

gen = tn.Generator(0)
normal_int = ops.normal(gen, (4, 3), Int64)  # E: Argument 3 to "normal" has incompatible type "type[Int64]"
uniform_int = ops.uniform(gen, (4,), Int64)  # E: Argument 3 to "uniform" has incompatible type "type[Int64]"
randint_float = ops.randint(gen, (4,), 0, 5, Float32)  # E: Argument 5 to "randint" has incompatible type "type[Float32]"
on_gpu = ops.normal(gen, (4, 3), Float32, GPU)  # E: Cannot infer value of type parameter "Dv"
rank: tn.Vector[Float64, CPU] = ops.normal(gen, (4, 3), Float64)  # E: Incompatible types in assignment
not_a_generator = ops.normal(tn.zeros((2,), Int64, CPU), (3,))  # E: No overload variant of "normal" matches
