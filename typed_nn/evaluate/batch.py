"""Batching of registrations (docs/evaluation.md, *Batching*): independent nodes of the same
op at the same depth, with the same params, reading at each operand position one shared value
or one item each of an earlier group (or of a gathered stack of same-shaped leaves), become
one node over stacked values (``(n, *item_shape)``) and each member an ``item`` view of it.
The slices ``x[0] … x[n-1]`` of one tensor are already the items of ``x``. A chain of adds
summing every member of a group is one reduction over the stack. How each op batches, its
declaration says (``OpDecl.batching``, ``ops/batching.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..ops.batching import DOT_SUM, ITEM, MATMUL, STACK, SUM
from ..ops.declare import OpDecl, Params
from ..ops.rows import SLICE
from .graph import Graph, INode, Ref, is_number, like, runs_on
from .sums import add_tree

__all__ = ["batch"]


def batch(g: Graph, min_size: int = 2) -> int:
    """Group batchable nodes of ``g`` in place; returns how many groups were made."""
    alive = g.live()
    depth = g.depths()
    member: dict[int, tuple[int, int]] = {}  # slot -> (group slot, index)
    sizes: dict[int, int] = {}
    views: dict[int, list[tuple[int, INode]]] = {}  # group of views -> its members as they were
    _slices_are_items(g, alive, member, sizes)
    by_depth: dict[int, list[int]] = {}
    for s in g.order:
        n = g.nodes[s]
        if alive[s] and n.decl is not None and n.op not in ("leaf", "alias"):
            by_depth.setdefault(depth[s], []).append(s)
    made = 0
    for d in sorted(by_depth):
        buckets: dict[Any, list[tuple[int, int]]] = {}
        for s in by_depth[d]:
            key, index = _pattern(g, s, member)
            if key is not None:
                buckets.setdefault(key, []).append((index, s))
        for entries in buckets.values():
            if len(entries) >= min_size and _make_group(g, entries, member, sizes, views):
                made += 1
    made -= _ungroup_unread_views(g, views, member)
    if made:
        _sum_chains(g, member, sizes)
        g.reorder()
    return made


def _slices_are_items(
    g: Graph, alive: list[bool], member: dict[int, tuple[int, int]], sizes: dict[int, int]
) -> None:
    """Register the slices ``x[i]`` of a tensor ``x`` taken at every index as the items of
    the group ``x`` (its rows are the stack: ops over them batch without a copy)."""
    rows: dict[int, dict[int, int]] = {}
    for s in g.order:
        n = g.nodes[s]
        if alive[s] and n.decl is SLICE and not is_number(n.args[0]):
            rows.setdefault(n.args[0], {}).setdefault(n.params[0], s)
    for x, at in rows.items():
        count = g.nodes[x].shape[0]
        if count >= 2 and sorted(at) == list(range(count)):
            sizes[x] = count
            for i, s in at.items():
                member[s] = (x, i)


def _pattern(g: Graph, s: int, member: dict[int, tuple[int, int]]) -> tuple[Any, int]:
    """The bucket key of node ``s`` and its index in the operand groups it reads (or 0)."""
    n = g.nodes[s]
    parts: list[Any] = [n.decl, _fixed_params(n), n.shape, n.dtype, n.device]
    index = -1
    for a in n.args:
        if is_number(a):
            parts.append(a)
        elif a in member:
            grp, i = member[a]
            if index not in (-1, i):
                return None, 0
            index = i
            parts.append(("group", grp))
        elif g.nodes[a].op == "leaf":
            parts.append(("leaf", g.nodes[a].shape, g.nodes[a].dtype))  # shared or gathered
        else:
            parts.append(("shared", a))
    return tuple(parts), index


def _varying(decl: OpDecl | None) -> int:
    """The index of the param ``decl`` lets differ between a group's members (-1: none)."""
    varies = None if decl is None else decl.batch_varies
    return -1 if decl is None or varies is None else decl.params.index(varies)


def _fixed_params(n: INode) -> Params:
    """The params every member of ``n``'s group must share (its own, less the varying one)."""
    v = _varying(n.decl)
    return n.params if v < 0 else (*n.params[:v], None, *n.params[v + 1 :])


def _as_group_sees_it(g: Graph, members: list[int]) -> INode:
    """The first member, as the batching rule sees the group: with every member's value of
    the param they may differ in (in member order) in its place."""
    first = g.nodes[members[0]]
    v = _varying(first.decl)
    if v < 0:
        return first
    varied = tuple(g.nodes[m].params[v] for m in members)
    return replace(first, params=(*first.params[:v], varied, *first.params[v + 1 :]))


def _make_group(
    g: Graph,
    entries: list[tuple[int, int]],
    member: dict[int, tuple[int, int]],
    sizes: dict[int, int],
    views: dict[int, list[tuple[int, INode]]],
) -> bool:
    """Replace the nodes of one bucket by a group node and item views; False if it cannot.
    A group of views (``narrow``s) records its members as they were in ``views``."""
    grouped = any(i >= 0 for i, _ in entries)
    if grouped:
        entries = sorted(entries)
    members = [s for _, s in entries]
    n = len(members)
    first = _as_group_sees_it(g, members)
    kinds = ""
    args: list[Ref] = []
    ranks: list[int] = []
    for p, a0 in enumerate(first.args):
        if is_number(a0):
            kinds, ranks = kinds + "s", [*ranks, -1]
            args.append(a0)
            continue
        refs: list[Ref] = [g.nodes[m].args[p] for m in members]
        ranks.append(len(g.nodes[a0].shape))
        if a0 in member:
            grp = member[a0][0]
            if sizes[grp] != n or [member[r] for r in refs] != [(grp, i) for i in range(n)]:
                return False
            kinds += "v" if grp in views else "g"
            args.append(grp)
        elif all(r == a0 for r in refs):
            kinds += "s"
            args.append(a0)
        else:
            kinds += "b"
            args.append(_stack(g, refs))
    # "g": an earlier group's stack, "v": a group of views' (gathered slices), "b": a
    # gathered stack, "s": shared. Element-wise ops batch only when they read a group of
    # computed values: stacking leaves or slices just to add them copies as much memory as
    # the op itself touches.
    how = _how(first, kinds, tuple(ranks))
    if how is None or not runs_on(first.device, how[0] or first.decl, STACK, ITEM):
        return False
    decl, params = how
    if params and isinstance(params[0], tuple) and params[0][:1] == ("batch",):
        params = ((n, *params[0][1:]), *params[1:])
    name = decl.name if decl is not None else first.op
    node = INode(name, decl, params, args, (n, *first.shape), first.dtype, first.device)
    gs = g.append(node)
    sizes[gs] = n
    if first.decl is not None and first.decl.kind == "view":
        views[gs] = [(m, g.nodes[m]) for m in members]
    for i, m in enumerate(members):
        old = g.nodes[m]
        g.nodes[m] = like(old, ITEM, (i,), [gs], obj=old.obj)
        member[m] = (gs, i)
    return True


def _ungroup_unread_views(
    g: Graph, views: dict[int, list[tuple[int, INode]]], member: dict[int, tuple[int, int]]
) -> int:
    """Put back the members of each group of views that no later group reads: gathering
    views pays only when their users run as one call too (an LSTM's gate blocks, each read
    by its own op, stay plain views). Returns how many groups were undone."""
    read = {a for n in g.nodes if n.decl is not ITEM for a in n.args if not is_number(a)}
    undone = 0
    for gs, members in views.items():
        if gs not in read:
            for m, original in members:
                g.nodes[m] = original
                del member[m]
            undone += 1
    return undone


def _how(first: INode, kinds: str, ranks: tuple[int, ...]) -> tuple[OpDecl | None, Params] | None:
    reads_group = "g" in kinds
    kinds = kinds.replace("g", "b").replace("v", "b")
    batcher = first.decl.batching if first.decl is not None else None
    if batcher is not None:
        return batcher(first, kinds, ranks)
    if first.decl is None or first.decl.kind != "elementwise" or not reads_group:
        return None
    # Stacked operands must be item-shaped: a lower-rank one would broadcast against the
    # batch dim instead of the item's trailing dims.
    if any(k == "b" and r != len(first.shape) for k, r in zip(kinds, ranks, strict=True)):
        return None
    return first.decl, first.params


def _stack(g: Graph, refs: list[Ref]) -> int:
    """The slot of the gathered stack of ``refs`` (made once per graph: the same samples
    feed several groups, e.g. ``x_i @ W`` and ``transpose(x_i)``)."""
    key = tuple(refs)
    slot: int | None = g.stacks.get(key)
    if slot is None:
        item = g.nodes[refs[0]]
        slot = g.stacks[key] = g.append(like(item, STACK, (), list(refs), (len(refs), *item.shape)))
    return slot


def _sum_chains(g: Graph, member: dict[int, tuple[int, int]], sizes: dict[int, int]) -> None:
    """Turn each add-tree that sums every item of a group once into one reduction of the
    stack (for a group of products, one contraction)."""
    g.reorder()
    alive = g.live()
    uses = g.uses(alive)
    for s in reversed(g.order):
        tree = add_tree(g, s, uses) if alive[s] else None
        if tree is None or not all(t in member and g.nodes[t].decl is ITEM for t in tree[0]):
            continue
        grp = member[tree[0][0]][0]
        items = {member[t] for t in tree[0]}
        whole = {(grp, i) for i in range(sizes[grp])}
        if items != whole or len(tree[0]) != len(whole):
            continue
        n, stack = g.nodes[s], g.nodes[grp]
        decl, args = (DOT_SUM, list(stack.args)) if stack.decl is MATMUL else (SUM, [grp])
        if runs_on(n.device, DOT_SUM, SUM, STACK, ITEM):
            g.nodes[s] = like(n, decl, (), args, obj=n.obj)
