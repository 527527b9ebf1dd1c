"""A ``@tn.compile`` decorated method is checked like the method: every checker must reject
each marked line."""

import typed_nn as tn
from typed_nn import CPU, Float32, nn, ops

M32 = tn.Matrix[Float32, CPU]
S32 = tn.Scalar[Float32, CPU]


class Trainer:
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 1)

    @tn.compile
    def step(self, x: M32, y: M32) -> S32:
        return ops.reduce_mean(ops.square(self.fc(x) - y))


tr = Trainer()
x = tn.zeros((3, 4), Float32, CPU)
x64 = tn.zeros((3, 4), tn.Float64, CPU)
v = tn.zeros((3,), Float32, CPU)
wrong_elem = tr.step(x64, x)  # E: Argument 1 has incompatible type "Tensor[Float64, CPU, Dim2]"
wrong_rank = tr.step(x, v)  # E: Argument 2 has incompatible type "Tensor[Float32, CPU, Dim1]"
not_tensor = tr.step(x, "y")  # E: Argument 2 has incompatible type "str"
too_many = tr.step(x, x, x)  # E: Too many arguments
as_str: str = tr.step(x, x)  # E: Incompatible types in assignment
as_matrix: M32 = tr.step(x, x)  # E: Incompatible types in assignment
through_class = Trainer.step(tr, x64, x)  # E: Argument 2 to "__call__" of "Compiled" has incompatible type
self_missing = Trainer.step(x, x)  # E: "__call__" of "Compiled"
