"""``scripts/gpu_check.py``, the one run on a GPU machine: its parts are skipped without a GPU,
a part past its time limit is interrupted and still reported, and what it reads from pytest
and from the training runs is read right. (The whole run on the cupy emulator:
``bash scripts/gpu_check.sh --emulate``, about 30 s.)"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu_check.py"


@pytest.fixture(scope="module")
def check() -> Iterator[Any]:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules["gpu_check"]


def _run(check: Any, tmp_path: Path) -> Any:
    return check.Run(tmp_path / "out", tmp_path, emulate=False, budget=60)


def _job(check: Any, tmp_path: Path, name: str, log: str, rc: int = 0) -> Any:
    path = tmp_path / f"{name.replace(' ', '-')}.log"
    path.write_text(log)
    job = check.Job(name, ["true"], path, limit=10)
    job.rc, job.seconds = rc, 1.0
    return job


def test_without_a_gpu_the_gpu_parts_are_skipped_and_the_run_passes(
    check: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_gpu(run: Any) -> bool:
        run.env = {"no_gpu": "no CUDA device"}
        run.report("env", None, "pass", "no GPU")
        return False

    monkeypatch.setattr(check, "check_env", no_gpu)
    monkeypatch.setenv("OUT", str(tmp_path))
    assert check.main([]) == 0
    out = capsys.readouterr().out
    table = out[out.index("== gpu_check summary") :].splitlines()  # printed last
    assert [line.split()[:2] for line in table[2:7]] == [
        ["env", "pass"],
        *([part, "skipped"] for part in ("tests", "alias", "train", "bench")),
    ]
    assert table[7] == "result: pass"
    assert table[-1].startswith("run: ")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["parts"]["bench"]["details"] == "no GPU (no CUDA device)"


def test_a_part_past_its_limit_is_interrupted_and_reported_as_a_timeout(
    check: Any, tmp_path: Path
) -> None:
    job = check.Job(
        "slow", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "l", 1
    )
    start = time.monotonic()
    job.start({})
    check.wait_all([job])
    assert time.monotonic() - start < 10  # SIGINT ends it at once
    assert job.timed_out
    assert not job.ok
    assert "KeyboardInterrupt" in "\n".join(job.tail())


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0"
failures="1" skipped="1" tests="3"><testcase classname="tests.test_gpu_ops" name="test_a[device]"/>
<testcase classname="tests.test_gpu_ops" name="test_b[device]"><failure message="AssertionError:
wrong numbers">...</failure></testcase><testcase classname="tests.test_gpu_ops" name="test_c">
<skipped/></testcase></testsuite></testsuites>"""


def test_pytest_outcomes_are_read_from_junit_or_from_its_progress_marks(
    check: Any, tmp_path: Path
) -> None:
    run = _run(check, tmp_path)
    run.out.mkdir()
    (run.out / "tests.xml").write_text(JUNIT)
    log = ".Fs\nGPU-NOTE t::a[device]: 1 evaluation(s) ran node by node\n"
    log += "GPU-NOTE t::b[device]: fused kernel CompileException: nvrtc: error\n"
    check.report_pytest(run, _job(check, tmp_path, "tests", log + "== 1 failed, 1 passed ==\n", 1))
    part = run.parts["tests"]
    assert part["status"] == "FAIL"
    assert part["counts"] == {"tests": 3, "failures": 1, "errors": 0, "skipped": 1}
    assert part["details"] == (
        "1 failed, 1 passed; failed: test_gpu_ops::test_b[device] (AssertionError: wrong numbers)"
        "; GPU notes: 1 node-by-node fallbacks, 1 fused-kernel errors"
        "; t::b[device]: fused kernel CompileException: nvrtc: error"
    )
    stopped = _job(check, tmp_path, "alias", "$ pytest\n..F.s [ 40%]\n..\n", 2)
    stopped.timed_out = True
    check.report_pytest(run, stopped)
    assert run.parts["alias"]["status"] == "TIMEOUT"
    assert run.parts["alias"]["details"] == "stopped early: 5 passed, 1 failed, 1 skipped"


@pytest.mark.parametrize(("gpu", "status"), [("0.975", "pass"), ("0.960", "FAIL")])
def test_training_accuracies_must_agree_within_0_01(
    check: Any, tmp_path: Path, gpu: str, status: str
) -> None:
    run = _run(check, tmp_path)
    run.out.mkdir()
    accuracy = {"mlp gpu": gpu, "mlp cpu": "0.978", "cnn gpu": "0.983", "cnn cpu": "0.983"}
    jobs = [_job(check, tmp_path, n, f"test accuracy: {a}\n") for n, a in accuracy.items()]
    check.report_train(run, jobs)
    assert run.parts["train"]["status"] == status
    assert run.parts["train"]["details"].startswith(f"mlp gpu {float(gpu)} cpu 0.978 |d| 0.0")
    assert "== mlp gpu (rc 0, 1s)" in (run.out / "train.log").read_text()
