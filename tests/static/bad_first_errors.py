"""Misuse whose first error must name the real mismatch (issue 18, items 2 and 6).

Each marked line is an error in mypy and pyright, and the marker is a substring of both
checkers' messages for it.
"""

from typing import TypeVar

import typed_nn as tn
from typed_nn import CPU, Float32, Float64, Int32, TensorLike, ops
from typed_nn.model import LoadBuffer
from typed_nn.tags import D, Dv, E

IE = TypeVar("IE", bound=tn.IntTag)

buf = LoadBuffer(Float32, CPU)
# mypy infers a factory nested as an argument in the parameter's context: the element, not
# the shape, must be what it names first.
buf.set("w", tn.zeros((4, 3), Float64, CPU))  # E: Float64
buf.set("w", tn.ones((4, 3), Float64, CPU))  # E: Float64
buf.set("w", tn.ZeroTensor((4, 3), Float64, CPU))  # E: Float64

# An @ of mixed elements, nested in a call: the @ is the error.
t3 = tn.zeros((2, 2, 2), Float32, CPU)
t3_64 = tn.zeros((2, 2, 2), Float64, CPU)
ops.permute(t3 @ t3_64, (0, 1, 2))  # E: "Tensor[Float32, CPU, Dim3]" and "Tensor[Float64, CPU, Dim3]"

# Float-only operators: integer data (any subclass of TensorLike) and code generic over every
# element stay errors while code generic over the float elements type-checks.
i32 = tn.zeros((3,), Int32, CPU)
i32 * 0.5  # E: "float"
0.5 * i32  # E: "float"
i32 / 2.0  # E: Int32
2.0 / i32  # E: "float"
tn.ZeroTensor((3,), Int32, CPU) / 2.0  # E: Int32
tn.make_dynamic(i32) * 0.5  # E: "float"


def any_element(x: TensorLike[E, Dv, D], n: TensorLike[IE, Dv, D]) -> None:
    x * 0.5  # E: "float"
    x / x  # E: TensorLike[E
    n / n  # E: TensorLike[IE


# dot contracts at most as many dims as the operands have.
images4 = tn.zeros((8, 3, 16, 16), Float32, CPU)
ops.dot(images4, images4, k=5)  # E: "dot"
