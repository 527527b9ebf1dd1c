"""The evaluator's working graph: one :class:`INode` per slot, built when a plan is analysed.

Rewrites replace nodes in place (an ``alias`` node forwards to another value), batching and
fusion read it, and code generation turns it into a schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import EvaluationError
from ..ops.declare import OpDecl, implemented_devices
from .collect import Collected

__all__ = ["Graph", "INode", "Ref", "build_graph", "is_number", "like", "number_operand", "runs_on"]

Ref = Any
"""A slot (int) or a number operand ``(type, value)``."""


def is_number(ref: Ref) -> bool:
    """Whether ``ref`` is a Python number operand rather than a slot."""
    return type(ref) is tuple


def number_operand(n: INode, value: Any) -> Any:
    """A Python number operand of ``n`` as its kernel receives it: the number itself (NEP 50
    casts it to the array's dtype), except for a bfloat16 node, whose numbers are 0-d
    bfloat16 arrays — ml_dtypes' bfloat16 takes no part in NEP 50 (``x * 2.0`` would be
    float32)."""
    if n.dtype.name == "bfloat16" and type(value) in (float, int):
        return np.asarray(value, n.dtype)
    return value


@dataclass(slots=True, eq=False)
class INode:
    """One value of the graph: a leaf, an op applied to refs, or an alias of another ref."""

    op: str
    decl: OpDecl | None
    params: tuple[Any, ...]
    args: list[Ref]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    device: Any
    obj: Any = None
    """The Operation this node came from (None for nodes a rewrite or batching made)."""


def runs_on(device: Any, *ops: OpDecl | None) -> bool:
    """Whether each of ``ops`` has a kernel on ``device`` (None, no op: no), so a node that a
    rewrite or batching would make of them can run where the node it replaces runs."""
    return all(op is not None and device.name in implemented_devices(op.name) for op in ops)


def like(
    n: INode,
    decl: OpDecl,
    params: tuple[Any, ...],
    args: list[Ref],
    shape: tuple[int, ...] | None = None,
    obj: Any = None,
) -> INode:
    """A node of ``decl`` with ``n``'s dtype and device, and shape unless given (what a
    rewrite makes)."""
    return INode(
        decl.name, decl, params, args, n.shape if shape is None else shape, n.dtype, n.device, obj
    )


class Graph:
    """Slots in topological order (operands before users) and the registered roots."""

    def __init__(self, nodes: list[INode], roots: list[int]) -> None:
        self.nodes = nodes
        self.roots = roots
        self.order = list(range(len(nodes)))
        """Slots in a topological order (slot order until batching appends nodes)."""
        self.stacks: dict[tuple[Ref, ...], int] = {}
        """Gathered stacks batching made, by the refs they stack."""

    def append(self, node: INode) -> int:
        """Add ``node``; returns its slot (``reorder`` places it once the rewrite is done)."""
        self.nodes.append(node)
        return len(self.nodes) - 1

    def depths(self) -> list[int]:
        """Each slot's depth: 0 for a leaf, else one more than its deepest operand's. A
        rewrite that made a cycle is the evaluator's bug: raised, rather than looped on (in a
        DAG each node's operands are pushed once)."""
        depth = [-1] * len(self.nodes)
        expanded = [False] * len(self.nodes)
        for start in range(len(self.nodes)):
            stack = [start]
            while stack:
                s = stack[-1]
                if depth[s] >= 0:
                    stack.pop()
                    continue
                todo = [a for a in self.nodes[s].args if not is_number(a) and depth[a] < 0]
                if todo:
                    if expanded[s]:
                        raise EvaluationError(
                            f"the evaluator's graph has a cycle through node {s} "
                            f"({self.nodes[s].op}): a rewrite is wrong; evaluate with "
                            "options.rewrite = False to work around it"
                        )
                    expanded[s] = True
                    stack.extend(todo)
                    continue
                stack.pop()
                depth[s] = 1 + max(
                    (depth[a] for a in self.nodes[s].args if not is_number(a)), default=-1
                )
        return depth

    def reorder(self) -> None:
        """Recompute ``order`` after nodes were appended: by depth, then slot."""
        depth = self.depths()
        self.order = sorted(range(len(self.nodes)), key=lambda s: (depth[s], s))

    def structure(self) -> Graph:
        """A copy that keeps the structure only: each node's ``obj`` (the Operation, holding
        the evaluation's operands and cached values) becomes ``True`` where it was set. What
        a cached plan keeps to make its lean variant later: never the user's data."""
        g = Graph([replace(n, obj=n.obj is not None or None) for n in self.nodes], self.roots)
        g.order, g.stacks = self.order, self.stacks
        return g

    def node(self, ref: Ref) -> INode | None:
        """The node a ref names, or None for a number."""
        return None if is_number(ref) else self.nodes[ref]

    def op(self, ref: Ref) -> str:
        """The op name of the node a ref names ("" for a number)."""
        return "" if is_number(ref) else self.nodes[ref].op

    def transposed(self, ref: Ref) -> Ref | None:
        """The matrix ``ref`` transposes where it is ``transpose(m)`` (a 2-D permute)."""
        n = self.node(ref)
        return n.args[0] if n is not None and n.op == "permute" and n.params == ((1, 0),) else None

    def resolve(self, ref: Ref) -> Ref:
        """Follow aliases to the ref that holds the value."""
        while not is_number(ref) and self.nodes[ref].op == "alias":
            ref = self.nodes[ref].args[0]
        return ref

    def live(self) -> list[bool]:
        """Which slots the roots need (after rewrites some are dead)."""
        alive = [False] * len(self.nodes)
        for r in self.roots:
            alive[r] = True
        for s in reversed(self.order):
            if alive[s]:
                for a in self.nodes[s].args:
                    if not is_number(a):
                        alive[a] = True
        return alive

    def uses(self, alive: list[bool]) -> list[int]:
        """How many times each slot is read by live nodes, plus once per root."""
        readers = self.readers(alive)
        count = [len(readers.get(s, ())) for s in range(len(self.nodes))]
        for r in self.roots:
            count[r] += 1
        return count

    def readers(self, alive: list[bool]) -> dict[int, list[int]]:
        """Each slot's live readers, in schedule order (a node reading a slot twice is
        listed twice)."""
        found: dict[int, list[int]] = {}
        for s in self.order:
            if alive[s]:
                for a in self.nodes[s].args:
                    if not is_number(a):
                        found.setdefault(a, []).append(s)
        return found


def build_graph(col: Collected) -> Graph:
    """The working graph of a collected evaluation."""
    nodes: list[INode] = []
    for s, obj in enumerate(col.objs):
        arr = col.env[s]
        if arr is not None:
            nodes.append(INode("leaf", None, (), [], arr.shape, arr.dtype, obj.device, obj))
            continue
        decl: OpDecl = col.sig[s][0]
        params, args = col.sig[s][1], list(col.sig[s][2:])
        dtype = np.dtype(obj.elem.dtype)
        nodes.append(INode(decl.name, decl, params, args, obj.shape, dtype, obj.device, obj))
    return Graph(nodes, list(col.roots))
