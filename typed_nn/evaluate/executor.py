"""Evaluate registered values: collect the graph, look its structure up in this thread's plan
cache, on a miss *analyse* it into a program (``_analyse``), run it, cache the results.

Debug mode (``hooks.node_checks``) and a failing program run ``by_node``, so an error names
the exact node and the line that built it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.tensor import AnyTensor, Tensor
from ..devices import device_of
from ..errors import EvaluationError, IndexRangeError, TypedNNError, message
from ..fp_errors import ignore_fp_errors, restore_fp_errors
from ..ops.declare import registry_version
from . import hooks, sanitize
from .batch import batch
from .cache import epoch, invalidate_caches, result_tensor
from .codegen import Program, generate
from .collect import Collected, collect
from .fuse import alias_safe, find_regions
from .graph import build_graph
from .memory import views, writes
from .options import options, stats
from .pool import buffer_pool
from .rewrite import after_batching, rewrite
from .widen import widen_accumulations

__all__ = [
    "by_node",
    "clear_plan_cache",
    "copy_into",
    "execute",
    "invalidate_caches",
    "last_program",
]

AnyResult = Tensor[Any, Any, Any]
Target = tuple[int, int, int, int]
"""(root index, root slot, env index of the out array, aliased leaf slot / -1 none / -2)."""

_local = threading.local()
MAX_PLANS = 512
"""Analysed plans kept per thread (each may hold a few scratch blocks)."""
IDLE_EVALUATIONS = 4096
"""A plan no evaluation of the thread used in this many is forgotten, at the next multiple
of it (a stream of ever new shapes, then a steady loop: the old shapes' plans and their
buffers go)."""


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
    """Copy an evaluated tensor's values into ``dst``'s memory (through a temporary where they
    overlap: the device's ``copy``; cupy's own copy does not guard an overlap)."""
    assert isinstance(src, Tensor)
    device_of(dst.device).copy(dst.array, src.array)


def _alias(col: Collected, out: AnyResult) -> int:
    """Which leaf ``out``'s memory is (its slot), -1 for none, -2 for a partial overlap or
    for two leaves over it (arrays of ``out``'s type only, by the device's ``may_share``)."""
    found = -1
    array = out._array
    kind = type(array)
    may_share = np.may_share_memory if kind is np.ndarray else device_of(out._device).may_share
    ident = out._identity()
    objs = col.objs
    for s, arr in enumerate(col.env):
        if type(arr) is not kind:
            continue  # a node's slot (None) or a leaf on another device
        if found == -1 and (arr is array or objs[s]._identity() == ident):
            found = s
        elif may_share(arr, array):
            return -2  # part of it, or a second leaf over it (tn.compile's are by object)
    return found


def _analyse(
    col: Collected,
    targets: list[Target],
    lean: tuple[dict[int, Any], int] | None = None,
    by_node: bool = False,
) -> Program:
    """The program of a collected graph (``lean``: a compiled step's, ``by_node``: the
    unfused, unbatched one of ``by_node``; see ``generate``)."""
    g = build_graph(col)
    widen_accumulations(g)
    for device in {n.device for n in g.nodes}:  # its library loaded: its kernels registered
        device_of(device).module()
    fired = rewrite(g) if options.rewrite else []
    if options.batch and not by_node:
        stats.batched += batch(g)
    if options.rewrite and not by_node:  # after batching: a sum made one contraction stays
        fired += after_batching(g)
        for name in fired:
            stats.rewrites[name] += 1
    alive = g.live()
    uses = g.uses(alive)
    regions = find_regions(g, alive, uses, options.fuse and not by_node)
    kernels = _compile_device_regions(g, regions)
    stats.fused_regions += sum(len(m) > 1 for m in regions.values())
    direct: dict[int, int] = {}
    copies: dict[int, list[int]] = {}  # a value may be assigned to several targets
    for _, r, e, alias in targets:
        n = g.nodes[r]
        ok = n.op not in ("leaf", "alias") and r not in direct and alias != -2
        if ok and alias >= 0:
            members = regions.get(r, [])
            reads = sum(g.nodes[m].args.count(alias) for m in members)
            root_reads = g.nodes[r].args.count(alias)
            safe_root = root_reads == 0 or (regions.get(r) and alias_safe(n))
            done = reads == uses[alias] or _reads_done_before(g, alive, regions, alias, r)
            ok = done and g.nodes[alias].shape == n.shape and bool(safe_root)
        if ok and r not in regions:
            ok = alias == -1 and writes(g, r, regions, options.specialise)
        if ok and not device_of(n.device).host_pool:
            # On a device, one target written in place per program, by its last kernel (its
            # value read by no other step): kernels compile at their first call and may fail
            # there, and a failure must find no target written. The others are computed
            # aside and copied once every kernel has run.
            ok = uses[r] == g.roots.count(r) and not any(
                not device_of(g.nodes[d].device).host_pool for d in direct
            )
        if ok:
            direct[r] = e
        else:
            copies.setdefault(r, []).append(e)
    if direct:
        g.order = _writes_last(g, alive, direct)
    return generate(g, alive, regions, direct, copies, fired, kernels, lean=lean, by_node=by_node)


def _writes_last(g: Any, alive: list[bool], direct: dict[int, int]) -> list[int]:
    """``g.order`` with the steps that write a target in place, and all their readers, moved
    after all the others (order kept, so topological): a failure before them leaves every
    target as it was."""
    readers = g.readers(alive)
    moved: set[int] = set()
    stack = list(direct)
    while stack:
        s = stack.pop()
        if s not in moved:
            moved.add(s)
            stack.extend(readers.get(s, ()))
    return [s for s in g.order if s not in moved] + [s for s in g.order if s in moved]


def _compile_device_regions(
    g: Any, regions: dict[int, list[int]]
) -> dict[int, tuple[Any, list[Any]]]:
    """Region root -> (kernel, operand refs) from its device's region compiler, for devices
    whose regions are not host passes (cupy); a region with no kernel form is dropped from
    ``regions`` (its nodes run one by one)."""
    kernels: dict[int, tuple[Any, list[Any]]] = {}
    for r, members in list(regions.items()):
        device = device_of(g.nodes[r].device)
        if device.host_regions:
            continue
        compiled = None
        if len(members) > 1 and device.compile_region is not None:
            compiled = device.compile_region(g, members)
        if compiled is None:
            del regions[r]
        else:
            kernels[r] = compiled
    return kernels


def _reads_done_before(
    g: Any, alive: list[bool], regions: dict[int, list[int]], alias: int, r: int
) -> bool:
    """Whether every read of leaf ``alias`` outside region ``r`` happens before ``r``'s step,
    so ``r`` may overwrite its memory (``w - lr * g`` into ``w``). A view of the leaf counts
    with its readers, must not be returned nor read by ``r``'s region (``w.assign(w.T * 2)``)."""
    if alias in g.roots:
        return False
    step_of = {m: root for root, members in regions.items() for m in members}
    position = {s: i for i, s in enumerate(g.order)}
    inside = set(regions.get(r, ()))
    users = g.readers(alive)
    limit = position[r]
    stack, seen = [alias], {alias}
    while stack:
        x = stack.pop()
        for u in users.get(x, ()):
            if u in inside:
                if x != alias:  # r's region reads the leaf's memory through a view
                    return False
                continue
            if u in seen:
                continue
            seen.add(u)
            if position[step_of.get(u, u)] >= limit:
                return False
            if u not in step_of and views(g, u):
                if u in g.roots:
                    return False
                stack.append(u)
    return True


def _prepare(
    roots: Sequence[AnyTensor], targets: dict[int, AnyResult] | None
) -> tuple[Program, Collected]:
    """The program for ``roots`` and this evaluation's collected graph: collected, looked up
    in the plan cache by structure, analysed on a miss."""
    col = collect(roots, options.cse, epoch())
    env = col.env
    tlist: list[Target] = []
    if targets:
        for j, t in targets.items():
            tlist.append((j, col.roots[j], len(env) + len(tlist), _alias(col, t)))
    key = (tuple(col.sig), tuple(col.roots), options.key(), tuple(tlist), registry_version())
    program = _cached(key)
    if program is None:
        stats.analyses += 1
        program = _keep(key, _analyse(col, tlist))
    else:
        stats.plan_hits += 1
    if tlist:
        assert targets is not None
        env.extend(targets[j].array for j, *_ in tlist)
    return program, col


def _cached(key: Any) -> Program | None:
    """The plan cache's program for ``key``, marked used now; None on a miss (or with the
    cache off). A hit costs one lookup; every IDLE_EVALUATIONS-th evaluation forgets the
    plans idle that long."""
    clock = _local.clock = getattr(_local, "clock", 0) + 1
    plans = _plans()
    if clock % IDLE_EVALUATIONS == 0:
        for k in [k for k, p in plans.items() if clock - p.used >= IDLE_EVALUATIONS]:
            del plans[k]  # its buffers go with it
    program = plans.get(key) if options.plan_cache else None
    if program is not None:
        program.used = clock
    return program


def _keep(key: Any, program: Program) -> Program:
    """Cache ``program`` (analysed on a miss); past the bound forget the least recently
    used."""
    plans = _plans()
    plans[key] = program
    program.used = _local.clock
    if len(plans) > MAX_PLANS:
        del plans[min(plans, key=lambda k: plans[k].used)]
    return program


FAILED = object()
"""What :func:`_run` returns when the program failed (the caller re-runs node by node)."""


def _run(program: Program, *inputs: Any) -> Any:
    """Run ``program`` on ``inputs`` (``env``, or a compiled step's arrays and numbers); its
    result, or FAILED when it raised other than a typed_nn error (the caller runs by node)."""
    _local.last = program
    alloc = buffer_pool().empty if options.pool and program.pooled else np.empty
    writing = program.writing
    writing[0] = False
    token = ignore_fp_errors()
    try:
        result = program.fn(*inputs, alloc)
    except IndexRangeError:  # bad indices: the re-run by node names the node and its line
        if writing[0]:
            raise
        stats.fallbacks += 1
        return FAILED
    except TypedNNError:
        raise
    except Exception as exc:
        if writing[0]:
            raise _failed_while_writing(program, exc) from exc
        stats.fallbacks += 1
        return FAILED
    finally:
        restore_fp_errors(token)
    if stats.counting:
        stats.kernel_calls.update(program.calls)
    return result


def _failed_while_writing(program: Program, exc: Exception) -> EvaluationError:
    """A step failed after it began writing targets in place (a re-run would read them)."""
    return EvaluationError(
        message(
            f"evaluation failed while writing its targets in place: {type(exc).__name__}: {exc}",
            [("written", "some targets may hold their new values, others their old ones")],
            hint="every step that can fail before the writes runs before them; run in debug "
            "mode (TYPED_NN_DEBUG=1) to find the failing node.",
        )
    )


def execute(
    roots: Sequence[AnyTensor], targets: dict[int, AnyResult] | None = None
) -> list[AnyResult]:
    """Evaluate ``roots``; returns their principal tensors in order.

    ``targets`` maps a root's index to a tensor its value should be written into; the
    returned tensor for that root is the target when it was written there directly (the
    caller copies otherwise). Every computed node caches its value.
    """
    if hooks.node_checks:
        return by_node(roots)
    program, col = _prepare(roots, targets)
    if _run(program, col.env) is FAILED:
        return by_node(roots)
    return _results(col.env, col.objs, col.merged, col.roots, program, targets)


def by_node(roots: Sequence[AnyTensor]) -> list[AnyResult]:
    """Evaluate ``roots`` as a by-node program (``reference.py``): the same collection and
    per-op rewrites (none after batching), every node one unfused, unspecialised step, its
    value checked; an error names the node and the line that built it. Debug mode, and the re-run of a program that failed (the
    caller copies into targets)."""
    col = collect(roots, options.cse, epoch())
    key = (tuple(col.sig), tuple(col.roots), options.key(), None, registry_version())
    program = _cached(key) or _keep(key, _analyse(col, [], by_node=True))  # not counted
    checks = program.checks
    assert checks is not None
    checks.objs = col.objs
    token = ignore_fp_errors()
    try:
        program.fn(col.env, buffer_pool().empty if options.pool else np.empty)
    except IndexRangeError as exc:  # a kernel's check of the values: which node, built where
        raise checks.located(exc) from exc
    except TypedNNError:
        raise
    except Exception as exc:
        raise checks.failed(exc) from exc
    finally:
        restore_fp_errors(token)
        checks.objs, checks.values = [], {}  # a cached plan keeps no data of its evaluation
    return _results(col.env, col.objs, col.merged, col.roots, program, None)


def _results(
    env: list[Any],
    objs: list[Any],
    merged: list[tuple[int, Any]],
    root_slots: list[int],
    program: Program,
    targets: dict[int, AnyResult] | None,
) -> list[AnyResult]:
    """The roots' tensors; every computed node caches its value (interior ones as bare arrays,
    wrapped when read: ``cache.cached``)."""
    now = epoch()
    wanted = set(root_slots)  # a plan may have many roots (an EvalPlan of many handles)
    computed: dict[int, Any] = {}
    # A value written straight into a target is the target's memory: another handle of the
    # same value gets a copy (the node's cache goes stale with the write: no copy for it).
    aimed, handles = None, set()
    if targets and len(root_slots) > len(targets):  # handles beside the targets' roots
        handles = {r for j, r in enumerate(root_slots) if j not in targets}
        aimed = {id(t.array) for t in targets.values()}
    for s in program.results:  # cache.store, inlined: this loop runs for every node
        obj = objs[s]
        value = env[s]
        if aimed is not None and s in handles and id(value) in aimed:
            value = value.copy()
        if s in wanted:
            value = result_tensor(value, obj._elem, obj._device)
        obj._result = computed[s] = value
        obj._epoch = now
    for s, x in merged:
        if s in computed:
            x._result = computed[s]
            x._epoch = now
    if options.sanitize:
        if handles:
            assert targets is not None
            handed = {s: v for s, v in computed.items() if s in handles}
            sanitize.apart_from_targets(objs, handed, [t.array for t in targets.values()])
        for s, value in computed.items():
            sanitize.remember(objs[s], value, now)
        for s, x in merged:
            if s in computed:
                sanitize.remember(x, computed[s], now)
    out: list[AnyResult] = []
    for j, r in enumerate(root_slots):
        target = targets.get(j) if targets else None
        if target is not None and env[r] is target.array:
            out.append(target)
        else:
            out.append(computed.get(r, objs[r]))
    return out
