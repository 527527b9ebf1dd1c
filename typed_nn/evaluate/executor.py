"""Run a set of registered values through the optimised evaluator.

Per evaluation: collect the graph (hash-consed: shared sub-trees get one slot), look its
structure up in this thread's plan cache, and on a miss *analyse* it — rewrites, batching,
fused regions, where ``out=`` can be written directly — into a compiled schedule. Then run
the schedule over this evaluation's arrays, wrap the results and cache them on their nodes.

While ``hooks.node_checks`` is non-empty (debug mode) every node runs on its own through
the reference evaluator so each value is checked; a failing compiled step also re-runs there,
so the error names the exact node and the line that built it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.tensor import Tensor
from ..data.tensor_like import AnyTensor
from ..errors import TypedNNError
from ..ops.declare import registry_version
from . import hooks, reference
from .batch import batch
from .cache import epoch, invalidate_caches, store
from .codegen import Program, generate
from .collect import Collected, collect
from .fuse import find_regions
from .graph import build_graph
from .options import options, stats
from .pool import buffer_pool
from .rewrite import rewrite

__all__ = ["clear_plan_cache", "copy_into", "execute", "invalidate_caches", "last_program"]

AnyResult = Tensor[Any, Any, Any]
Target = tuple[int, int, int, int]
"""(root index, root slot, env index of the out array, aliased leaf slot / -1 none / -2)."""

_local = threading.local()
MAX_PLANS = 512
"""Analysed plans kept per thread (each may hold a few scratch blocks)."""


def _plans() -> dict[Any, Program]:
    plans: dict[Any, Program] | None = getattr(_local, "plans", None)
    if plans is None:
        plans = _local.plans = {}
    return plans


def clear_plan_cache() -> None:
    """Forget this thread's analysed plans."""
    _plans().clear()


def last_program() -> Program | None:
    """The schedule this thread ran last (for tests and curiosity: ``.source``, ``.fired``)."""
    program: Program | None = getattr(_local, "last", None)
    return program


def copy_into(src: AnyTensor, dst: AnyResult) -> None:
    """Copy an evaluated tensor's values into ``dst``'s memory."""
    assert isinstance(src, Tensor)
    dst.array[...] = src.array


def _alias(col: Collected, out: AnyResult) -> int:
    """Which leaf ``out``'s memory is (its slot), -1 for none, -2 for a partial overlap."""
    found = -1
    ident = out._identity()
    array = out.array
    if type(array) is not np.ndarray:
        return -2  # no overlap test for device arrays: compute aside, then copy
    for s, arr in enumerate(col.env):
        if arr is None:
            continue
        if arr is array or (found == -1 and col.objs[s]._identity() == ident):
            found = s
        elif type(arr) is not np.ndarray or np.may_share_memory(arr, array):
            return -2
    return found


def _analyse(col: Collected, targets: list[Target]) -> Program:
    g = build_graph(col)
    fired = rewrite(g) if options.rewrite else []
    for name in fired:
        stats.rewrites[name] += 1
    if options.batch:
        stats.batched += batch(g)
    alive = g.live()
    uses = g.uses(alive)
    regions = find_regions(g, alive, uses, options.fuse)
    # Only CPU regions are generated here (numpy blocks, the CPU pool). GPU regions would be
    # one generated cupy kernel each (backends/cupy/region.py), which this code generator
    # does not call yet: their nodes run one by one with their plain kernels.
    regions = {r: m for r, m in regions.items() if g.nodes[r].device.name == "CPU"}
    stats.fused_regions += sum(len(m) > 1 for m in regions.values())
    direct: dict[int, int] = {}
    copies: dict[int, int] = {}
    for _, r, e, alias in targets:
        n = g.nodes[r]
        ok = n.op not in ("leaf", "alias") and r not in direct and alias != -2
        if ok and alias >= 0:
            members = regions.get(r, [])
            reads = sum(g.nodes[m].args.count(alias) for m in members)
            root_reads = g.nodes[r].args.count(alias)
            safe_root = root_reads == 0 or (regions.get(r) and _alias_safe(n))
            ok = reads == uses[alias] and g.nodes[alias].shape == n.shape and bool(safe_root)
        if ok and r not in regions:
            ok = alias == -1 and _has_out_form(n)
        (direct if ok else copies)[r] = e
    return generate(g, alive, regions, direct, copies, fired)


def _alias_safe(n: Any) -> bool:
    from .fuse import fusable

    impl = fusable(n)
    return impl is not None and impl.alias_safe


def _has_out_form(n: Any) -> bool:
    from ..ops.declare import out_implementation

    return n.device.name == "CPU" and out_implementation(n.op, n.device) is not None


def execute(
    roots: Sequence[AnyTensor], targets: dict[int, AnyResult] | None = None
) -> list[AnyResult]:
    """Evaluate ``roots``; returns their principal tensors in order.

    ``targets`` maps a root's index to a tensor its value should be written into; the
    returned tensor for that root is the target when it was written there directly (the
    caller copies otherwise).
    """
    if hooks.node_checks:
        return reference.execute(roots, targets)
    col = collect(roots, options.cse, epoch())
    env = col.env
    tlist: list[Target] = []
    if targets:
        for j, t in targets.items():
            tlist.append((j, col.roots[j], len(env) + len(tlist), _alias(col, t)))
    key = (tuple(col.sig), tuple(col.roots), options.key(), tuple(tlist), registry_version())
    plans = _plans()
    program = plans.get(key) if options.plan_cache else None
    if program is None:
        stats.analyses += 1
        program = _analyse(col, tlist)
        if len(plans) >= MAX_PLANS:  # forget the oldest structure (dicts keep insertion order)
            del plans[next(iter(plans))]
        plans[key] = program
    else:
        stats.plan_hits += 1
    _local.last = program
    if tlist:
        assert targets is not None
        env.extend(targets[j].array for j, *_ in tlist)
    alloc = buffer_pool().empty if options.pool else np.empty
    try:
        with np.errstate(all="ignore"):
            program.fn(env, alloc)
    except TypedNNError:
        raise
    except Exception:
        stats.fallbacks += 1
        return reference.execute(roots, targets)
    if stats.counting:
        stats.kernel_calls.update(program.calls)
    return _results(col, program, targets)


def _results(
    col: Collected, program: Program, targets: dict[int, AnyResult] | None
) -> list[AnyResult]:
    env, objs = col.env, col.objs
    by_slot: dict[int, AnyResult] = {}
    for s in program.results:
        obj = objs[s]
        t = Tensor._wrap(env[s], obj.elem, obj.device)
        store(obj, t)
        by_slot[s] = t
    for s, x in col.merged:
        t2 = by_slot.get(s)
        if t2 is not None:
            store(x, t2)
    out: list[AnyResult] = []
    for j, r in enumerate(col.roots):
        target = targets.get(j) if targets else None
        if target is not None and env[r] is target.array:
            out.append(target)
        else:
            res = by_slot.get(r)
            out.append(res if res is not None else objs[r])
    return out
