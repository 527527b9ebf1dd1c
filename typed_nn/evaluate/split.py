"""A large fused region's blocks, run by the calling thread or split across threads.

The blocked loop of a region (``codegen._blocked_region``) is one function of a list of blocks,
``body(blocks)``; the program calls ``SplitBlocks(body)``. With one thread (the default until
``tn.set_num_threads``) or a region under :data:`typed_nn.threads.SPLIT_MIN` elements, that is
``body(all blocks)``: the loop as it always ran. With ``n`` threads the blocks are cut into ``n`` contiguous runs, each with its own scratch
registers, and run by :func:`typed_nn.threads.run_parts`. Blocks are disjoint parts of the
result and every block reads only its own part of each operand (a target written in place is
read only at the same elements: ``executor._analyse``), so the order of blocks does not matter
and each element is computed by the same calls: the numbers are bit-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import threads

__all__ = ["SplitBlocks"]

Block = tuple[Any, ...]


class SplitBlocks:
    """The blocks of one region (``plan_blocks``'s list) and, per thread count, their runs."""

    def __init__(self, blocks: list[Block], size: int, plan: Callable[[], list[Block]]) -> None:
        """``blocks``: the region's blocks on its own registers; ``size``: its elements;
        ``plan()``: the same blocks on fresh registers (for each further thread)."""
        self.blocks = blocks
        self.size = size
        self._plan = plan
        self._runs: dict[int, list[list[Block]]] = {}

    def __call__(self, body: Callable[[list[Block]], object]) -> None:
        n = threads.split_count
        if n < 2 or self.size < threads.SPLIT_MIN:
            body(self.blocks)
            return
        threads.run_parts(body, self.runs(n))

    def runs(self, n: int) -> list[list[Block]]:
        """The blocks in ``min(n, blocks)`` contiguous runs, run ``t`` on register set ``t``."""
        runs = self._runs.get(n)
        if runs is None:
            k = min(n, len(self.blocks))
            sets = [self.blocks] + [self._plan() for _ in range(k - 1)]
            cut = [len(self.blocks) * t // k for t in range(k + 1)]
            runs = self._runs[n] = [sets[t][cut[t] : cut[t + 1]] for t in range(k)]
        return runs
