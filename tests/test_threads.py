"""CPU threads (``typed_nn/threads.py``, ``typed_nn/blas.py``, ``evaluate/split.py``): the
thread count reaches numpy's BLAS, and fused element-wise regions split across threads give
the same bits as one thread, and numpy's numbers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzz_programs import make_program, run_program
from graphs import Graph, check_graph, graph_settings, random_graphs
from helpers import split_on_threads, threads_restored
from hypothesis import given

import typed_nn as tn
import typed_nn.debug
from typed_nn import blas, ops, threads
from typed_nn.evaluate.cache import invalidate_caches

F32 = tn.Float32


@pytest.fixture(autouse=True)
def restore_threads() -> Iterator[None]:
    with threads_restored():
        yield


def test_thread_count_round_trips_and_reaches_the_blas() -> None:
    for n in (1, 2, 3, 1):
        tn.set_num_threads(n)
        assert tn.get_num_threads() == n
        assert blas.blas_threads() == n


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_bad_thread_count_is_refused(bad: Any) -> None:
    before = tn.get_num_threads()
    with pytest.raises(tn.OptionError) as caught:
        tn.set_num_threads(bad)
    assert str(caught.value) == (
        "cannot set typed_nn's thread count: n must be an int >= 1.\n"
        "  declared : an int >= 1\n"
        f"  received : {bad!r}\n"
        f"hint: tn.set_num_threads({os.cpu_count() or 1}) uses every core; "
        "tn.set_num_threads(1) is often fastest on a shared or loaded machine."
    )
    assert tn.get_num_threads() == before


def test_an_uncontrollable_blas_says_what_was_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    before = tn.get_num_threads()
    monkeypatch.setattr(blas, "library_files", lambda: [])
    blas._blas.cache_clear()
    try:
        with pytest.raises(
            tn.BackendUnavailableError,
            match=r"(?s)cannot control numpy's BLAS threads.*numpy\.libs/.*"
            r"no \*openblas\* library.*scipy_openblas_set_num_threads64_.*OPENBLAS_NUM_THREADS",
        ):
            tn.set_num_threads(1)
        assert tn.get_num_threads() == before  # nothing changed
    finally:
        monkeypatch.undo()
        blas._blas.cache_clear()


def test_an_openblas_this_process_has_not_loaded_is_never_loaded(tmp_path: Path) -> None:
    """A copy of numpy's OpenBLAS elsewhere (another numpy's, a system one) is not numpy's: it is
    not loaded to be controlled."""
    ours = blas.find_blas().path
    copy = tmp_path / Path(ours).name
    shutil.copy(ours, copy)
    assert blas._open(str(copy)) is None
    assert blas._open(ours) is not None


def test_the_default_count_is_the_blas_one_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threads, "_count", [])
    assert tn.get_num_threads() == blas.blas_threads()
    monkeypatch.setattr(threads, "_count", [])
    monkeypatch.setattr(threads, "blas_threads", lambda: None)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert tn.get_num_threads() == 3


def test_import_leaves_the_blas_and_threads_alone() -> None:
    code = (
        "import threading, typed_nn\n"
        "from typed_nn import threads, blas\n"
        "print(threads._count, threads.split_count, blas._blas.cache_info().currsize,"
        " [t.name for t in threading.enumerate() if t.name.startswith('typed_nn')])\n"
    )
    env = {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "[] 1 0 []", out.stderr


def _chain(x: Any, row: Any, col: Any) -> Any:
    return ops.tanh(0.5 * x + row) * ops.sigmoid(col * x) + 0.5 * x


def test_a_large_region_splits_and_gives_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(1100, 1000)).astype(np.float32)  # over SPLIT_MIN
    rows, cols = (
        rng.normal(size=1000).astype(np.float32),
        rng.normal(size=(1100, 1)).astype(np.float32),
    )
    x, row = tn.tensor(xs, F32, tn.CPU, tn.Dim2), tn.tensor(rows, F32, tn.CPU, tn.Dim1)
    col = tn.tensor(cols, F32, tn.CPU, tn.Dim2)
    split: list[int] = []
    run_parts = threads.run_parts

    def counted(body: Any, parts: list[Any]) -> None:
        split.append(len(parts))
        run_parts(body, parts)

    monkeypatch.setattr(threads, "run_parts", counted)
    got = {}
    for n in (1, 2, 3):
        tn.set_num_threads(n)
        got[n] = tn.evaluate(_chain(x, row, col)).numpy().copy()
    assert split == ([] if typed_nn.debug.is_enabled() else [2, 3])  # debug: node by node
    np.testing.assert_array_equal(got[1], got[2])
    np.testing.assert_array_equal(got[1], got[3])
    want = np.tanh(0.5 * xs + rows) * (1 / (1 + np.exp(-cols * xs))) + 0.5 * xs
    np.testing.assert_allclose(got[2], want, rtol=2e-6, atol=2e-6)


def _updates(ws: np.ndarray, gs: np.ndarray) -> list[np.ndarray]:
    """In-place updates of two tensors made of ``ws`` and ``gs``: their final values and a
    compiled step's two results."""
    w, g = (tn.tensor(a.copy(), F32, tn.CPU, tn.Dim2) for a in (ws, gs))
    w.assign(w - 0.1 * (g + 0.01 * w))
    tn.evaluate(ops.tanh(g) * w + g, out=g)

    @tn.compile
    def step(x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Matrix[tn.Float32, tn.CPU]:
        w.assign(w * 0.9 + ops.sigmoid(x))
        g.assign(g - w * x)
        return ops.square(w) + x

    outs = [step(w).numpy().copy() for _ in range(2)]
    return [w.numpy().copy(), g.numpy().copy(), *outs]


def test_split_in_place_updates_and_aliases_match_one_thread() -> None:
    """Targets written in place while they are read (``w.assign(w - lr * g)``, ``out=`` an
    operand), and a compiled step whose argument is the tensor it updates."""
    rng = np.random.default_rng(1)
    ws, gs = (rng.normal(size=(1200, 900)).astype(np.float32) for _ in range(2))
    results = []
    for n in (1, 2):
        tn.set_num_threads(n)
        results.append(_updates(ws, gs))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    w_: Any = ws - np.float32(0.1) * (gs + np.float32(0.01) * ws)
    g_: Any = np.tanh(gs) * w_ + gs
    outs = []
    for _ in range(2):  # x is w: each read after an assign sees the new value, as in numpy
        w_ = w_ * np.float32(0.9) + 1 / (1 + np.exp(-w_))
        g_ = g_ - w_ * w_
        outs.append(np.square(w_) + w_)
    for got, want in zip(results[1], [w_, g_, *outs], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


SETTINGS = graph_settings(30)


@SETTINGS
@given(random_graphs())
def test_random_graphs_split_in_tiny_blocks_match_numpy(g: Graph) -> None:
    """Blocks of 3 elements, every region split across 2 threads: partial last blocks,
    operands broadcast into blocks, numbers, several regions in one plan."""
    with split_on_threads(2, block=3):
        invalidate_caches()
        handles = [root.expr.eval_register() for root in g.roots]
        tn.EvalPlan.eval()
        check_graph(g, [h.data().numpy() for h in handles])


def test_random_programs_split_across_threads_match_numpy() -> None:
    for k in range(1000, 1040):  # other seeds than test_evaluate_fuzz's
        run_program(make_program(k), sanitize=k % 4 == 0, threads=2)


def test_a_worker_error_reaches_the_caller_in_its_error_state() -> None:
    """A part that fails on a worker raises in the caller, after every part finished; the
    workers compute in the caller's numpy error state (a context variable)."""
    seen: list[int] = []

    def body(part: int) -> None:
        seen.append(part)
        if part == 1:
            np.divide(np.ones(4), np.zeros(4))

    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        threads.run_parts(body, [0, 1, 2])
    assert sorted(seen) == [0, 1, 2]


def test_two_callers_share_the_pool() -> None:
    """Two user threads evaluating split regions at once (one runs its parts itself while the
    other holds the pool): both right."""
    tn.set_num_threads(2)
    xs = np.random.default_rng(2).normal(size=(1 << 21,)).astype(np.float32)
    want = np.tanh(xs) * xs + 1
    bad: list[str] = []

    def evaluate() -> None:
        x = tn.tensor(xs, F32, tn.CPU, tn.Dim1)
        for _ in range(5):
            got = tn.evaluate(ops.tanh(x) * x + 1.0).numpy()
            if not np.allclose(got, want, rtol=1e-6, atol=1e-6):
                bad.append("differs")

    callers = [threading.Thread(target=evaluate) for _ in range(2)]
    for c in callers:
        c.start()
    for c in callers:
        c.join()
    assert bad == []
