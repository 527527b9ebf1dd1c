"""The memory plan: where each step of a schedule writes its value, decided once per plan.

docs/evaluation.md, "Memory", states the model; the sanitizer checks it at run time. Each
written value's ``Memory.storage`` is ``("target", e)`` (the ``out=`` array ``env[e]``),
``("rows", (c, index))`` (its rows of gather ``c``), ``("buffer", b)`` (a buffer shared over
time; small ones kept by the program, larger ones pooled per run) or ``("fresh", None)``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

from ..devices import device_of
from ..ops.batching import ITEM
from ..ops.declare import Site, implementation, out_implementation, specialisation
from ..ops.join import CONCAT, STACK
from .fuse import alias_safe
from .graph import Graph, INode, is_number
from .pool import MIN_BYTES

__all__ = ["Memory", "form", "plan_memory", "small", "views", "writes"]

NEVER = 1 << 62
"""The life's end of a value handed out."""


def form(g: Graph, n: INode, specialise: bool) -> tuple[str, Any]:
    """How a node outside a fused region is computed: "special" (Specialised) and "out" (its
    implementation, given ``out=``) write into a buffer; "view" (Specialised) and "plain"
    return their own array, perhaps a view of an operand."""
    special = specialisation(n.op, n.device, _site(g, n)) if specialise else None
    if special is not None:
        return ("special" if special.writes else "view", special)
    # Buffers come from the host pool (numpy); other devices' kernels allocate their own.
    impl = out_implementation(n.op, n.device) if device_of(n.device).host_pool else None
    if impl is not None:
        return "out", impl
    return "plain", implementation(n.op, n.device)


def _site(g: Graph, n: INode) -> Site:
    operands = tuple(None if is_number(a) else (g.nodes[a].shape, g.nodes[a].dtype) for a in n.args)
    return Site(operands, n.params, n.shape, n.dtype)


def views(g: Graph, s: int) -> bool:
    """Whether step ``s``'s value may be a view of its operands (an alias, a layout op, a row:
    an op of kind ``"view"``); any other step's value is memory of its own."""
    n = g.nodes[s]
    return n.op == "alias" or (n.decl is not None and n.decl.kind == "view")


def writes(g: Graph, s: int, regions: dict[int, list[int]], specialise: bool) -> bool:
    """Whether step ``s`` fills memory it is given (else it may return a view of an operand)."""
    n = g.nodes[s]
    if s in regions:  # a region, of one member too
        return True
    if n.op in ("leaf", "alias") or n.decl is ITEM:
        return False
    return form(g, n, specialise)[0] in ("special", "out")


@dataclass
class Memory:
    """The plan: ``storage`` of each ``written`` step (see the module doc), ``buffers`` (shape,
    dtype, kept) by number, the gathers whose operands fill them (no step of their own), the
    roots copied when handed out, and the values copied aside before the copies into targets."""

    storage: dict[int, tuple[str, Any]] = field(default_factory=dict)
    written: set[int] = field(default_factory=set)
    buffers: list[tuple[tuple[int, ...], Any, bool]] = field(default_factory=list)
    gathered: set[int] = field(default_factory=set)
    copied: list[int] = field(default_factory=list)
    uncached: set[int] = field(default_factory=set)
    """Values left off the nodes' caches: views of given memory computed inside a larger
    graph (a later evaluation of the node would hand out the input's memory; computed again,
    it is copied as any root that views an input)."""
    aside: list[int] = field(default_factory=list)


def plan_memory(
    g: Graph,
    alive: list[bool],
    regions: dict[int, list[int]],
    direct: dict[int, int],
    kernels: dict[int, Any],
    copies: dict[int, list[int]],
    lean: bool,
    specialise: bool,
) -> Memory:
    """Where each written step of the schedule writes (the module doc). ``lean``: the program
    caches nothing (only the roots are handed out), so values may share buffers."""
    interior = {m for members in regions.values() for m in members[:-1]}
    steps = [s for s in g.order if alive[s] and s not in interior]
    written = {s for s in steps if s in kernels or writes(g, s, regions, specialise)}
    handed = set(g.roots) | (set() if lean else {s for s in steps if g.nodes[s].obj is not None})
    position, last = _lives(g, steps, regions, written, handed)
    memory = Memory(written=written)
    for s in direct:
        memory.storage[s] = ("target", direct[s])
    if specialise:  # without: gathers that copy, the reference (tests/test_evaluate_gather.py)
        _gathers(g, steps, kernels, direct, written, memory)
    if lean:
        _buffers(g, steps, regions, written, position, last, memory)
    for s in written:
        memory.storage.setdefault(s, ("fresh", None))
    memory.copied = _copied(g, written, direct, copies)
    memory.aside = _aside(g, written, direct, copies)
    if not lean:
        roots = set(g.roots)
        memory.uncached = {
            s
            for s in steps
            if s not in roots and views(g, s) and _views_given(g, written, direct, s)
        }
    return memory


def _lives(
    g: Graph, steps: list[int], regions: dict[int, list[int]], written: set[int], handed: set[int]
) -> tuple[dict[int, int], dict[int, int]]:
    """Each value's step and the last step that reads it or a view of it."""
    position = {s: i for i, s in enumerate(steps)}
    for root, members in regions.items():
        for m in members:
            position[m] = position.get(root, -1)
    last = {s: (NEVER if s in handed else position[s]) for s in steps}
    for s in steps:
        for m in regions.get(s, (s,)):
            for a in g.nodes[m].args:
                if not is_number(a) and a in last:
                    last[a] = max(last[a], position[s])
    for s in reversed(steps):  # a view keeps its operands' memory alive as long as itself
        if s not in written and views(g, s):
            for a in g.nodes[s].args:
                if not is_number(a) and a in last:
                    last[a] = max(last[a], last[s])
    return position, last


def _gathers(
    g: Graph,
    steps: list[int],
    kernels: dict[int, Any],
    direct: dict[int, int],
    written: set[int],
    memory: Memory,
) -> None:
    """Concats and stacks along dim 0 whose operands are each written by a host step of
    their own (not a root, of the gather's dtype, not placed yet): each is written into its
    rows of the gather, which copies nothing (BPTT's gate gradients, a sequence's outputs)."""
    storage = memory.storage
    for c in steps:
        n = g.nodes[c]
        if n.decl not in (CONCAT, STACK) or n.params != (0,) or c in direct or c in kernels:
            continue
        if not device_of(n.device).host_pool or len(set(n.args)) != len(n.args):
            continue
        if not all(
            not is_number(a)
            and a in written
            and a not in storage
            and a not in kernels
            and a not in g.roots
            and g.nodes[a].dtype == n.dtype
            for a in n.args
        ):
            continue
        start = 0
        for i, a in enumerate(n.args):
            rows = g.nodes[a].shape[0] if n.decl is CONCAT else 1
            # a stack's item i: [i] (an int indexes fastest), [i, ...] where that is a number
            # (a vector's [i] is a copy, not its place)
            item = i if g.nodes[a].shape else (i, ...)
            storage[a] = ("rows", (c, slice(start, start + rows) if n.decl is CONCAT else item))
            start += rows
        memory.gathered.add(c)


def _buffers(
    g: Graph,
    steps: list[int],
    regions: dict[int, list[int]],
    written: set[int],
    position: dict[int, int],
    last: dict[int, int],
    memory: Memory,
) -> None:
    """Buffers shared over time by the written host values not handed out (the module doc).
    A gather written in rows takes its buffer at its first operand's step, for as long as it
    or any of its rows lives."""
    busy: list[tuple[int, int]] = []  # (the last step its values are read at, buffer)
    until: dict[int, int] = {}
    free: dict[tuple[tuple[int, ...], Any, bool], list[int]] = {}
    holder: dict[int, int] = {}  # value (written, or a view of one) -> its buffer
    owner: dict[int, int] = {}  # buffer -> the value written into it last
    storage = memory.storage
    for step in steps:
        here, s = position[step], step
        if step not in written and views(g, step):  # a view lives in its operand's buffer
            held = [holder[a] for a in g.nodes[step].args if not is_number(a) and a in holder]
            if held:
                holder[step] = held[0]
            continue
        kind, where = storage.get(s, ("", None))
        while kind == "rows" and where[0] not in storage:  # the outermost gather, not placed
            s, (kind, where) = where[0], storage.get(where[0], ("", None))
        n = g.nodes[s]
        end = _gathered_life(g, s, last, memory) if s in memory.gathered else last[s]
        if s not in written or s in storage or end == NEVER:
            continue
        if not device_of(n.device).host_pool:
            continue
        while busy and busy[0][0] < here:
            stop, released = heapq.heappop(busy)
            if until.get(released) == stop:
                free.setdefault(memory.buffers[released], []).append(released)
        b = None
        if s not in memory.gathered:  # a gather takes a buffer of its own
            b = _donor(g, s, regions, holder, owner, until, here, memory)
        if b is None:
            pool = free.get((n.shape, n.dtype, small(n)))
            b = pool.pop() if pool else None
        if b is None:
            b = len(memory.buffers)
            memory.buffers.append((n.shape, n.dtype, small(n)))
        holder[s] = b
        owner[b] = s
        until[b] = end
        heapq.heappush(busy, (end, b))
        storage[s] = ("buffer", b)


def _gathered_life(g: Graph, c: int, last: dict[int, int], memory: Memory) -> int:
    """The last step that reads gather ``c`` or any of its rows, at every depth."""
    end, todo = last[c], [c]
    while todo:
        t = todo.pop()
        end = max(end, last[t])
        if t in memory.gathered:
            todo.extend(a for a in g.nodes[t].args if not is_number(a))
    return end


def _donor(
    g: Graph,
    s: int,
    regions: dict[int, list[int]],
    holder: dict[int, int],
    owner: dict[int, int],
    until: dict[int, int],
    here: int,
    memory: Memory,
) -> int | None:
    """The buffer of an operand of ``s`` that dies at ``s``'s step, when ``s`` is one alias-safe
    element-wise op writing element by element over it (same shape and dtype) and reads it
    through no other operand (a row of it broadcast would be overwritten as it is read)."""
    n = g.nodes[s]
    if not alias_safe(n) or len(regions.get(s, ())) != 1:
        return None
    for a in n.args:
        b = holder.get(a) if not is_number(a) else None
        if b is None or owner.get(b) != a or until[b] != here:
            continue  # not a value written into a buffer (a view of one: a transpose...)
        if memory.buffers[b][:2] != (n.shape, n.dtype):
            continue
        if all(x == a or is_number(x) or holder.get(x) != b for x in n.args):
            return b
    return None


def small(n: INode) -> bool:
    """Whether a node's value is below the pool's threshold (plain ``np.empty`` memory)."""
    return math.prod(n.shape) * n.dtype.itemsize < MIN_BYTES


def _copied(
    g: Graph, written: set[int], direct: dict[int, int], copies: dict[int, list[int]]
) -> list[int]:
    """The roots handed out as they are whose value may view an input's memory or a target's
    (a layout op of a leaf, a row of one): copied when handed out."""
    return [
        r
        for r in dict.fromkeys(g.roots)
        if r not in copies
        and r not in direct
        and g.nodes[r].op not in ("leaf", "alias")
        and _views_given(g, written, direct, r)
    ]


def _aside(
    g: Graph, written: set[int], direct: dict[int, int], copies: dict[int, list[int]]
) -> list[int]:
    """The values copied into targets that may view memory given to the program (a tensor
    assigned as it is, a view of one): with more than one copy, one may write the memory
    another reads (``S0.assign(b); b.assign(b * 2.0); S0.assign(S0)`` copies ``b`` last), so
    these are copied aside before any."""
    if sum(len(into) for into in copies.values()) < 2:
        return []
    return [s for s in copies if _views_given(g, written, direct, s)]


def _views_given(g: Graph, written: set[int], direct: dict[int, int], r: int) -> bool:
    """Whether ``r``'s value may view memory given to the program: a leaf's, or a target's
    that another value is written into."""
    todo, seen = [r], set()
    while todo:
        s = todo.pop()
        if g.nodes[s].op == "leaf" or (s in direct and s != r):
            return True
        if s not in written and s not in seen and views(g, s):
            seen.add(s)
            todo.extend(a for a in g.nodes[s].args if not is_number(a))
    return False
