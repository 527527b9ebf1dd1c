"""16-bit accumulation (docs/evaluation.md): a Float16 or BFloat16 node of an op that
``accumulates`` becomes ``astype(op(astype(x, Float32), ...), half)`` once, before rewrites,
so every path computes the same numbers and no backend carries a 16-bit special case.
"""

from __future__ import annotations

import numpy as np

from ..ops.convert import ASTYPE
from ..tags import Float32, accumulation_dtype, elem_of_dtype
from .graph import Graph, INode, is_number, like

__all__ = ["widen_accumulations"]

_FLOAT32 = np.dtype(np.float32)


def widen_accumulations(g: Graph) -> None:
    """Widen every 16-bit node of an accumulating op (see the module)."""
    size = len(g.nodes)
    wide: dict[int, int] = {}
    for s in range(size):
        n = g.nodes[s]
        if n.decl is None or not n.decl.accumulates or accumulation_dtype(n.dtype) == n.dtype:
            continue
        args = [a if is_number(a) else _as_float32(g, a, wide) for a in n.args]
        inner = g.append(INode(n.op, n.decl, n.params, args, n.shape, _FLOAT32, n.device))
        g.nodes[s] = like(n, ASTYPE, (elem_of_dtype(n.dtype),), [inner], obj=n.obj)
    if len(g.nodes) > size:
        g.reorder()


def _as_float32(g: Graph, ref: int, wide: dict[int, int]) -> int:
    """``ref`` itself where it is not 16-bit, else the node converting it to float32 (one
    per ref: ``x @ w`` and ``reduce_sum(x)`` widen ``x`` once)."""
    n = g.nodes[ref]
    if accumulation_dtype(n.dtype) == n.dtype:
        return ref
    if ref not in wide:
        node = INode("astype", ASTYPE, (Float32,), [ref], n.shape, _FLOAT32, n.device)
        wide[ref] = g.append(node)
    return wide[ref]
