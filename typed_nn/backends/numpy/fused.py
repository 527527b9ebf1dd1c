"""Write-into (``out=``) forms of the numpy implementations, for fused passes and ``out=``.

Element-wise ops run block by block inside a fused region: the evaluator calls
``fn(*operand_blocks, out=scratch_block)``. Each form here is the *same* function as the
plain implementation (a numpy ufunc, or a gradient kernel that already takes ``out``), so a
fused pass gives bit-identical numbers to evaluating node by node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.declare import implement_out, implementation
from ...tags import CPU
from . import activation as _activation  # noqa: F401 - the plain forms must be registered
from . import elementwise as _elementwise  # noqa: F401
from .structure import rows_dot_into

Array = Any

# Ufuncs (and sigmoid, whose steps run in place on out) write element i of out from
# elements i of their inputs only: out may be an input.
ALIAS_SAFE = [
    "sigmoid",
    "tanh",
    "relu",
    "add",
    "sub",
    "mul",
    "div",
    "negative",
    "abs",
    "sign",
    "exp",
    "log",
    "sqrt",
    "square",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "asinh",
    "acosh",
]
# Gradient kernels write a partial result into out before reading every operand: out
# must not be an operand.
GRADS = [
    "sigmoid_grad",
    "tanh_grad",
    "relu_grad",
    "abs_grad",
    "exp_grad",
    "log_grad",
    "sqrt_grad",
    "square_grad",
    "sin_grad",
    "cos_grad",
    "tan_grad",
    "asin_grad",
    "acos_grad",
    "asinh_grad",
    "acosh_grad",
]

for _name in ALIAS_SAFE:
    implement_out(_name, CPU, alias_safe=True)(implementation(_name, CPU))
for _name in GRADS:
    implement_out(_name, CPU)(implementation(_name, CPU))


@implement_out("matmul", CPU)
def matmul_out(a: Array, b: Array, *, out: Array) -> Array:
    """``matmul`` into a preallocated result."""
    return np.matmul(a, b, out=out)


@implement_out("dot", CPU)
def dot_out(a: Array, b: Array, k: int, *, out: Array) -> Array:
    """``dot`` into a preallocated result (one BLAS call for the matrix/vector cases)."""
    if k == 1 and a.ndim <= 2 and b.ndim <= 2 and out.ndim > 0:
        return np.matmul(a, b, out=out)
    if k == 1 and b.ndim <= 2 and a.ndim > 2:
        return rows_dot_into(a, b, out=out)
    out[...] = np.tensordot(a, b, axes=k)
    return out
