"""Memoised programs: the same registered objects evaluated again skip collection and lookup.

A training step builds its graph once and evaluates it every step; only the leaves' *values*
change (placeholders and weights are written in place). The second time the same root
objects are evaluated, the collected graph, the compiled program and the leaf arrays are
remembered on the first root (a :class:`Memo` in its ``_plan`` slot). A later evaluation of
exactly those roots (and ``out`` targets) reuses them when nothing it depends on can have
changed:

* nodes are immutable, so the graph below the roots is the same;
* no node result was cached in the current cache epoch (the memo's own run cached its
  nodes' results in an earlier one), so every node is computed again, as a fresh
  collection would;
* every leaf tensor still holds the same array object (so the same memory, shape, strides
  and dtype), and 0-d leaves merged by value still hold equal values;
* the only data kinds lowered were :class:`DynamicData` (its wrapped value never changes);
* the evaluating thread is the one that made the memo (a program's scratch blocks are not
  shared between threads).

Leaf arrays are read from the tensors at each run (the program never bakes them in); a memo
is made only on a second evaluation, so graphs evaluated once never hold one (a memo and
its root refer to each other, which only the cycle collector frees).
"""

from __future__ import annotations

from collections.abc import Sequence
from threading import get_ident
from typing import Any

from ..data.dynamic import DynamicData
from .cache import nothing_cached
from .codegen import Program
from .collect import Collected

__all__ = ["SEEN", "Memo", "make_memo"]

SEEN = 1
"""The ``_plan`` mark of a root evaluated once (a memo is made the next time)."""


class Memo:
    """One remembered evaluation (see the module doc)."""

    __slots__ = (
        "env",
        "interior",
        "key",
        "leaves",
        "merged",
        "merged_hits",
        "objs",
        "program",
        "root_nodes",
        "root_slots",
        "roots",
        "scalars",
        "targets",
        "thread",
    )

    def __init__(
        self,
        col: Collected,
        roots: Sequence[Any],
        targets: tuple[tuple[int, Any, Any], ...],
        env: list[Any],
        program: Program,
        key: Any,
    ) -> None:
        self.roots = tuple(roots)
        self.targets = targets
        self.key = key
        self.objs = col.objs
        self.merged = col.merged
        self.root_slots = col.roots
        self.env = env
        self.program = program
        self.leaves = [(x, x._array) for x, _ in col.leaves]
        self.scalars = [
            (x, col.objs[s]) for x, s in col.leaves if x is not col.objs[s] and x._array.ndim == 0
        ]
        wanted = set(col.roots)
        results = set(program.results)
        self.root_nodes = [(col.objs[s], s) for s in program.results if s in wanted]
        """Computed roots (cached wrapped), then interior nodes (cached as bare arrays) and
        merged duplicates of a computed node: ``executor._results`` precomputed."""
        self.interior = [(col.objs[s], s) for s in program.results if s not in wanted]
        self.merged_hits = [(x, s) for s, x in col.merged if s in results]
        self.thread = get_ident()
        """Programs hold scratch blocks and plans are per thread: only this thread reuses it."""

    def env_for(
        self,
        roots: Sequence[Any],
        targets: dict[int, Any] | None,
        key: Any,
    ) -> list[Any] | None:
        """A fresh env for this evaluation, or None when the memo does not apply."""
        if not self.fresh(key) or not self.matches(roots, targets):
            return None
        return self.env.copy()

    def fresh(self, key: Any) -> bool:
        """Whether a run now would compute what a fresh collection would: same options and
        registry (``key``), nothing cached this epoch, this thread, same leaf arrays and
        merged 0-d leaves still equal."""
        if key != self.key or not nothing_cached() or get_ident() != self.thread:
            return False
        for x, arr in self.leaves:
            if x._array is not arr:
                return False
        if not self.scalars:  # the common case, without a generator
            return True
        return all(x._identity() == first._identity() for x, first in self.scalars)

    def matches(self, roots: Sequence[Any], targets: dict[int, Any] | None) -> bool:
        """Whether ``roots`` and ``targets`` are exactly the ones this memo evaluated."""
        mine = self.roots
        if len(roots) != len(mine):
            return False
        for a, b in zip(roots, mine, strict=True):
            if a is not b:
                return False
        if not self.targets:
            return not targets
        if targets is None or len(targets) != len(self.targets):
            return False
        for j, t, arr in self.targets:
            if t._array is not arr or targets.get(j) is not t:
                return False
        return True


def make_memo(
    col: Collected,
    roots: Sequence[Any],
    targets: dict[int, Any] | None,
    env: list[Any],
    program: Program,
    key: Any,
) -> Memo | None:
    """A memo of this evaluation, or None when it could not be checked cheaply later."""
    if col.cached or any(type(x) is not DynamicData for x in col.keep):
        return None
    tg = tuple((j, t, t._array) for j, t in targets.items()) if targets else ()
    return Memo(col, roots, tg, env.copy(), program, key)
