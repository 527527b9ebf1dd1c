"""Write-into (``out=``) forms of the numpy implementations, for fused passes and ``out=``.

Element-wise ops run block by block inside a fused region: the evaluator calls
``fn(*operand_blocks, out=scratch_block)``. Each form here is the *same* function as the
plain implementation (a numpy ufunc, or a gradient kernel that already takes ``out``), so a
fused pass gives bit-identical numbers to evaluating node by node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.declare import (
    declarations,
    implement_out,
    implement_passes,
    implementation,
    implemented_devices,
)
from ...tags import CPU, DeviceTag
from . import activation as _activation
from . import elementwise as _elementwise  # noqa: F401
from . import select as _select  # noqa: F401
from .structure import contract_into, is_matmul

Array = Any


def register_elementwise_out_forms(device: type[DeviceTag]) -> None:
    """Every element-wise op's write-into form on ``device``: the plain implementation
    itself (ufuncs and kernels that take ``out``), alias-safe where the declaration says so."""
    for decl in declarations():
        if decl.kind == "elementwise" and device.name in implemented_devices(decl.name):
            of = implementation(decl.name, device)
            implement_out(decl, device, alias_safe=decl.alias_safe, of=of)(of)


register_elementwise_out_forms(CPU)

# sigmoid's kernel pass for pass: inside a fused region the negation can merge into a scale
# before it and the reciprocal into a product after it (evaluate/lower.py).
implement_passes("sigmoid", CPU, _activation.SIGMOID_PASSES)


@implement_out("matmul", CPU)
def matmul_out(a: Array, b: Array, *, out: Array) -> Array:
    """``matmul`` into a preallocated result."""
    return np.matmul(a, b, out=out)


@implement_out("dot", CPU)
def dot_out(a: Array, b: Array, k: int, *, out: Array) -> Array:
    """``dot`` into a preallocated result: the plain kernel's one BLAS call, written into it."""
    if is_matmul(a.ndim, b.ndim, k) and out.ndim > 0:
        return np.matmul(a, b, out=out)
    return contract_into(a, b, k, out=out)
