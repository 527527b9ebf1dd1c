"""``benchmarks/gpu.py`` runs end to end (``--quick``: tiny sizes, no torch anchor), and each
of its element-wise expressions is one fused kernel."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu.py"


@pytest.mark.optimiser
@pytest.mark.gpu
def test_the_gpu_benchmark_runs(cupy_module: Any, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    bench: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"typed_nn (update|chain) .* fused kernels/eval: (\d+)", out) == [
        ("update", "1"),
        ("chain", "1"),
    ]
    assert "-node chain" in out
    assert "typed_nn MLP step (batch 8)" in out
