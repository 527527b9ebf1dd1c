"""``benchmarks/gpu.py`` runs end to end (``--quick``: tiny sizes, no torch anchor): each of its
element-wise expressions is one fused kernel, every section reports, and no compiled training
step synchronises with the host. Its transformer block trains as PyTorch's does."""

from __future__ import annotations

import importlib
import json
import os
import re
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def benchmarks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``benchmarks/`` importable, as when its scripts run (their thread settings undone)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, os.environ.get(name, "1"))


@pytest.mark.optimiser
@pytest.mark.gpu
@pytest.mark.usefixtures("benchmarks")
def test_the_gpu_benchmark_runs(
    cupy_module: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bench: Any = importlib.import_module("gpu")
    assert bench.main(["--quick", "--json", str(tmp_path / "gpu.json")]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"typed_nn (update|chain) .* fused kernels/eval: (\d+)", out) == [
        ("update", "1"),
        ("chain", "1"),
    ]
    assert "-node chain" in out
    assert "typed_nn MLP step (batch 8)" in out
    assert "typed_nn transformer step" in out
    results = json.loads((tmp_path / "gpu.json").read_text())
    assert results["errors"] == {}
    assert results["reruns"] == {}  # every evaluation ran its fused program
    assert sorted(results["sections"]) == sorted(bench.SECTIONS)
    syncs = results["sections"]["syncs"]
    compiled = ["mlp (fit's step)", "nll + SGD", "transformer"]
    assert sorted(syncs) == sorted([*compiled, "eager SGD.step"])
    assert [syncs[step]["syncs_per_step"] for step in compiled] == [0, 0, 0]
    names = [t["name"] for t in results["targets"]]
    assert "transformer step: x PyTorch eager" in names
    assert all(t["met"] in (True, False, None) for t in results["targets"])


@pytest.mark.usefixtures("benchmarks")
def test_the_transformer_block_trains_as_pytorchs_does() -> None:
    torch = pytest.importorskip("torch")
    block: Any = importlib.import_module("transformer_block")
    w = block.weights()
    xs, ts = block.batch()
    x, target = (tn.tensor(a, tn.Float32, tn.CPU, tn.Dim3) for a in (xs, ts))
    ours = block.TypedBlock(w, tn.CPU)
    theirs = block.torch_block(torch, w, "cpu")
    assert (
        block.loss_gap(ours, theirs, x, torch.from_numpy(xs), target, torch.from_numpy(ts)) < 1e-4
    )
    assert len(list(ours.params.items())) == 12
    assert all(np.isfinite(p.numpy()).all() for _, p in ours.params.items())


TRACE = [
    {"cat": "kernel", "name": "typed_nn_mul_add_0123", "ts": 2.0, "dur": 3.0},
    {"cat": "kernel", "name": "cupy_copy__float32", "ts": 1.0, "dur": 1.0},
    {"cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 6.0, "dur": 1.0},
    {"cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": 7.0, "dur": 1.0},
    {"cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 7.0, "dur": 1.0},
    {"cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 9.0, "dur": 1.0},
    {"cat": "cuda_driver", "name": "cuLaunchKernel", "ts": 1.0, "dur": 1.0},
    {"cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 6.0, "dur": 1.0},
    {"cat": "cuda_driver", "name": "cuMemcpyDtoH_v2", "ts": 7.0, "dur": 1.0},
]


class _Profile:
    """torch.profiler.profile's part the probe uses: a trace written as Chrome JSON."""

    def __init__(self, activities: list[str]) -> None:
        assert activities == ["CUDA"]

    def __enter__(self) -> _Profile:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def export_chrome_trace(self, path: str) -> None:
        Path(path).write_text(json.dumps({"traceEvents": TRACE}))


@pytest.mark.usefixtures("benchmarks")
def test_launches_are_read_from_the_profilers_trace() -> None:
    probes: Any = importlib.import_module("_gpu_probes")
    profiler = types.SimpleNamespace(
        profile=_Profile, ProfilerActivity=types.SimpleNamespace(CUDA="CUDA")
    )
    calls: list[str] = []
    found = probes.launches(
        types.SimpleNamespace(profiler=profiler), lambda: calls.append("fn"), lambda: None
    )
    assert calls == ["fn", "fn"]  # a warm-up, then the profiled call
    assert found.kernels == ["cupy_copy__float32", "typed_nn_mul_add_0123"]  # in time order
    assert found.copies == {"DtoD": 1, "DtoH": 1}
    assert found.kernel_seconds == pytest.approx(4e-6)
    assert found.waits == 2  # a stream sync, a synchronous copy; not the probe's device sync
