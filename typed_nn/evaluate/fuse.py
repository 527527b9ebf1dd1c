"""Element-wise regions (docs/evaluation.md, *Fusion*) and their cache-sized blocks.

Blocks split the result along one axis: the smallest ``k`` with the trailing dims after it
holding at most ``BLOCK`` elements; each block is ``idx = (i0, ..., i_{k-1}, lo:hi)``. An
operand that broadcasts takes the part of ``idx`` that covers its dims (``0`` / ``:`` where a
size-1 dim expands), or is read whole when it lies inside the block's inner dims.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..ops.declare import Impl, out_implementation
from .graph import Graph, INode
from .pool import kept

__all__ = ["BLOCK", "Blocks", "alias_safe", "find_regions", "fusable", "plan_blocks"]

BLOCK = 1 << 16
"""Elements per block: a few float32 blocks stay in this machine's 512 KiB L2 per core."""


def fusable(n: INode) -> Impl | None:
    """An element-wise node's implementation where it writes into ``out=``, or None if the
    node cannot join a region."""
    if n.decl is None or n.decl.kind != "elementwise":
        return None
    return out_implementation(n.op, n.device)


def alias_safe(n: INode) -> bool:
    """Whether a fusable node's ``out`` may be the very array of an operand of its shape."""
    return n.decl is not None and n.decl.alias_safe and fusable(n) is not None


def find_regions(g: Graph, alive: list[bool], uses: list[int], fuse: bool) -> dict[int, list[int]]:
    """Region root slot -> member slots in order (root last), for every live fusable node
    that is not interior to another region (without ``fuse``: one member each). A node is
    interior when all its readers are members of one region of its shape and dtype, and it
    is not registered itself."""
    readers = g.readers(alive)
    outs: dict[int, Impl | None] = {s: fusable(g.nodes[s]) for s in g.order if alive[s]}
    region_of: dict[int, int] = {}
    for s in reversed(g.order):
        if outs.get(s) is None:
            continue
        region_of[s] = s
        cs = readers.get(s, [])
        if not fuse or not cs or uses[s] != len(cs):
            continue
        r = region_of.get(cs[0])
        n = g.nodes[s]
        if r is not None and all(
            region_of.get(c) == r and g.nodes[c].shape == n.shape and g.nodes[c].dtype == n.dtype
            for c in cs
        ):
            region_of[s] = r
    regions: dict[int, list[int]] = {}
    for s in g.order:  # topological, so each region's members come in order
        if s in region_of:
            regions.setdefault(region_of[s], []).append(s)
    return regions


class Blocks:
    """The block decomposition of one shape: ``k`` (the split axis), ``width`` and the
    list of index tuples."""

    def __init__(self, shape: tuple[int, ...], block: int | None = None) -> None:
        block = BLOCK if block is None else block
        rank = len(shape)
        k, inner = rank - 1, 1
        while k > 0 and inner * shape[k] <= block:
            inner *= shape[k]
            k -= 1
        self.k = k
        self.width = max(1, block // inner)
        self.inner = shape[k + 1 :]
        n = shape[k] if rank else 1
        self.index: list[tuple[Any, ...]] = [
            (*prefix, slice(lo, min(lo + self.width, n)))
            for prefix in itertools.product(*(range(d) for d in shape[:k]))
            for lo in range(0, n, self.width)
        ]

    def operand_index(
        self, idx: tuple[Any, ...], shape: tuple[int, ...], operand: tuple[int, ...]
    ) -> Any:
        """The part of block ``idx`` of a result ``shape`` that an operand of shape
        ``operand`` reads (None: all of it)."""
        offset = len(shape) - len(operand)
        if offset > self.k:
            return None
        part = idx[offset:]
        if all(operand[i] != 1 or shape[offset + i] == 1 for i in range(len(part))):
            return part
        return tuple(
            (0 if isinstance(p, int) else slice(None))
            if operand[i] == 1 and shape[offset + i] != 1
            else p
            for i, p in enumerate(part)
        )


def plan_blocks(
    blocks: Blocks,
    shape: tuple[int, ...],
    operands: list[tuple[int, ...]],
    registers: int,
    dtype: Any,
) -> list[tuple[Any, ...]]:
    """Per block: (out index, index per operand shape in ``operands``, scratch views...)."""
    regs = [kept((blocks.width, *blocks.inner), dtype) for _ in range(registers)]
    plan: list[tuple[Any, ...]] = []
    for idx in blocks.index:
        width = idx[-1].stop - idx[-1].start
        views = [r if width == blocks.width else r[:width] for r in regs]
        plan.append((idx, *(blocks.operand_index(idx, shape, o) for o in operands), *views))
    return plan
