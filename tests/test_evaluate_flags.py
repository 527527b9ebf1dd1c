"""The differential test of issue 3 under every combination of the evaluator's switches.

Each random graph is evaluated 128 times (cse, rewrite, fuse, pool, batch, plan_cache,
specialise each on and off), with node caches dropped in between, and every run must match the numpy mirror; no
run may fall back to the reference evaluator.
"""

from __future__ import annotations

import itertools

from graphs import Graph, check_graph, graph_settings, random_graphs
from hypothesis import given

import typed_nn as tn
from typed_nn.evaluate import clear_plan_cache, fuse, options, stats
from typed_nn.evaluate.cache import invalidate_caches

FLAGS = ("cse", "rewrite", "fuse", "pool", "batch", "plan_cache", "specialise")
COMBOS = [
    dict(zip(FLAGS, bits, strict=True))
    for bits in itertools.product((False, True), repeat=len(FLAGS))
]

SETTINGS = graph_settings(40)


def test_combinations_cover_every_flag() -> None:
    assert len(COMBOS) == 2 ** len(FLAGS)
    # sanitize checks rather than optimises: the sanitizer's own tests run these graphs with it;
    # cuda_graphs replays compiled GPU steps: tests/test_gpu_graph.py compares it on and off
    assert set(FLAGS) | {"sanitize", "cuda_graphs"} == set(options.flags)


@SETTINGS
@given(random_graphs())
def test_registered_roots_match_numpy_under_every_combination(g: Graph) -> None:
    fallbacks = stats.fallbacks
    for flags in COMBOS:
        invalidate_caches()
        with options.using(**flags):
            handles = [root.expr.eval_register() for root in g.roots]
            tn.EvalPlan.eval()
            check_graph(g, [h.data().numpy() for h in handles])
    assert stats.fallbacks == fallbacks


@SETTINGS
@given(random_graphs(max_ops=6))
def test_evaluate_each_root_matches_numpy_under_every_combination(g: Graph) -> None:
    for flags in COMBOS[::5]:
        invalidate_caches()
        with options.using(**flags):
            check_graph(g, [tn.evaluate(root.expr).numpy() for root in g.roots])


@SETTINGS
@given(random_graphs())
def test_tiny_blocks_match_numpy(g: Graph) -> None:
    """Blocks of 3 elements: every fused region of these small graphs runs the blocked loop
    (partial last blocks, operands broadcast into blocks, scalars)."""
    saved = fuse.BLOCK
    fuse.BLOCK = 3
    clear_plan_cache()
    try:
        for flags in ({}, {"cse": False, "rewrite": False}, {"pool": False, "batch": False}):
            invalidate_caches()
            with options.using(**flags):
                handles = [root.expr.eval_register() for root in g.roots]
                tn.EvalPlan.eval()
                check_graph(g, [h.data().numpy() for h in handles])
    finally:
        fuse.BLOCK = saved
        clear_plan_cache()


@SETTINGS
@given(random_graphs())
def test_lean_programs_match_numpy(g: Graph) -> None:
    """Compiled Steps (lean programs: interior values in kept buffers, nothing cached), run
    three times so the kept buffers are reused."""
    roots = [root.expr for root in g.roots]
    for flags in COMBOS[::9]:
        with options.using(**flags):
            f = tn.compile(lambda: roots)
            for _ in range(3):
                check_graph(g, [t.numpy() for t in f()])
