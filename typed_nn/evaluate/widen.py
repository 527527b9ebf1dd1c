"""16-bit accumulation: a node of an op that ``accumulates`` computes in float32.

An op's declaration says whether it sums many values (``OpDecl.accumulates``: reductions,
products, softmax, losses). On Float16 or BFloat16 operands such a node is replaced, in the
working graph, by ``astype(op(astype(x, Float32), ...), half)``: its 16-bit operands are
widened, the op runs on float32 (numpy's BLAS, the backends' float32 kernels and their
specialisations alike), and one rounding brings the result back to the node's element
type. Done once, when the graph is built, before rewrites, batching and fusion, so the
compiled path and the node-by-node one (debug mode) compute the same numbers, and no backend
carries a 16-bit special case. (PyTorch's autocast computes these ops in float32 likewise.)
"""

from __future__ import annotations

import numpy as np

from ..ops.convert import ASTYPE
from ..tags import Float32, accumulation_dtype, elem_of_dtype
from .graph import Graph, INode, is_number

__all__ = ["widen_accumulations"]

_FLOAT32 = np.dtype(np.float32)


def widen_accumulations(g: Graph) -> int:
    """Widen every 16-bit node of an accumulating op (see the module); returns how many."""
    widened = 0
    wide: dict[int, int] = {}
    for s in range(len(g.nodes)):
        n = g.nodes[s]
        if n.decl is None or not n.decl.accumulates or accumulation_dtype(n.dtype) == n.dtype:
            continue
        args = [a if is_number(a) else _as_float32(g, a, wide) for a in n.args]
        inner = g.append(INode(n.op, n.decl, n.params, args, n.shape, _FLOAT32, n.device))
        back = elem_of_dtype(n.dtype)
        g.nodes[s] = INode("astype", ASTYPE, (back,), [inner], n.shape, n.dtype, n.device, n.obj)
        widened += 1
    if widened:
        g.reorder()
    return widened


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
