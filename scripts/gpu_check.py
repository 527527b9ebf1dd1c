"""Issue 37's checks on a machine with an NVIDIA GPU, from source, in one run of about 7 minutes
at most (``bash scripts/gpu_check.sh``; the GPU machines here reach no package registry).

Parts, each under its own time limit, each reported even where another fails or runs out of
time:

* env: the GPU, the driver, the versions; ``import typed_nn`` on this numpy, warnings as errors;
* tests: ``pytest -m gpu`` on the real cupy (the ``[device]`` cases: every op and region
  against numpy, compiled steps, batching, failure atomicity, training), JUnit XML;
* alias: ``tests/test_gpu_alias.py`` on the real cupy (targets read through views of
  themselves), JUnit XML;
* train: ``typed-nn train digits`` (the MLP, and ``--model cnn``) on the GPU and on the CPU:
  the test accuracies must agree within 0.01;
* bench: ``benchmarks/gpu.py`` beside PyTorch CUDA eager (targets met or missed, host
  synchronisations per step, overlapping copies).

tests, alias and train run at the same time (nothing is timed there; each cupy compiles its
kernels, NVRTC, once per machine into a shared cache); the benchmark runs alone after them.
Logs and ``summary.json`` go to ``$OUT`` (a temporary folder where it is unset); the last
lines printed are the summary table. The exit status is 1 when a part failed or ran out of
time (a missed performance target is reported, not a failure), 0 otherwise; without a GPU
the GPU parts are skipped. ``--emulate`` runs every part small on the cupy emulator
(``tests/cupy_emulator.py``; the tests' ``[device]`` cases through ``tests/emulated_device.py``,
as on a GPU): a rehearsal of the run on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LIMITS = {"env": 45, "tests": 220, "alias": 150, "train": 150, "bench": 140}
"""Seconds per part (a part's own limit; the run's budget may leave it less)."""
ACCURACY_GAP = 0.01
EMULATED = (
    "import runpy, sys; sys.path.insert(0, 'tests'); import cupy_emulator; "
    "sys.modules['cupy'] = cupy_emulator.install(); "
)
"""Put before a child's code under --emulate: the emulator is the cupy it imports."""
NEEDS_DEV_TOOLS = {
    "tests/test_static_typing.py": "mypy",
    "tests/test_policies_plugin.py": "mypy",
    "tests/test_debug_checks.py": "beartype",
    "tests/test_public_api.py": "beartype",
    "tests/test_docs_typing.py": "mypy",
    "tests/test_debug_generic.py": "beartype",
}
"""Test modules that import a development tool at collection and have no GPU cases: left out
where the tool is missing (the GPU machines have no mypy, beartype or jaxtyping)."""
CLI = "import sys; from typed_nn.cli import main; sys.exit(main(sys.argv[1:]))"
Result = dict[str, Any]


@dataclass
class Job:
    """A child process with a log and a time limit."""

    name: str
    argv: list[str]
    log: Path
    limit: float
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    seconds: float = 0.0
    rc: int | None = None
    timed_out: bool = False
    _sent: signal.Signals | None = None

    def start(self, env: dict[str, str]) -> None:
        self.started = time.monotonic()
        with self.log.open("ab") as log:
            log.write(f"$ {' '.join(self.argv)}\n".encode())
            self.proc = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a timeout ends all of it
            )

    def poll(self) -> bool:
        """Whether it has ended; past its limit, end its process group: SIGINT first (pytest
        stops as on Ctrl-C and still writes its summary and JUnit), SIGKILL 15 s later."""
        assert self.proc is not None
        if self.rc is None:
            self.rc = self.proc.poll()
            self.seconds = time.monotonic() - self.started
        if self.rc is not None:
            return True
        over = self.seconds - self.limit
        signals = [(0.0, signal.SIGINT), (15.0, signal.SIGKILL)]
        due = [sig for after, sig in signals if over >= after]
        if due and due[-1] != self._sent:
            self.timed_out, self._sent = True, due[-1]
            with contextlib.suppress(ProcessLookupError):  # it has just ended
                os.killpg(self.proc.pid, due[-1])
        return False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    def tail(self, lines: int = 15) -> list[str]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text.splitlines()[-lines:]


@dataclass
class Run:
    """One gpu_check run: where it writes, its clock and budget, and what it found."""

    out: Path
    work: Path
    emulate: bool
    budget: float
    begun: float = field(default_factory=time.monotonic)
    parts: dict[str, Result] = field(default_factory=dict)
    env: Result = field(default_factory=dict)

    def python(self, code_or_script: list[str], gpu: bool = True) -> list[str]:
        """A command running Python (``-c CODE ...`` or ``SCRIPT ...``), on the emulator
        under --emulate when it touches the GPU."""
        if not (self.emulate and gpu):
            return [sys.executable, *code_or_script]
        if code_or_script[0] == "-c":
            return [sys.executable, "-c", EMULATED + code_or_script[1], *code_or_script[2:]]
        script = f"sys.path.insert(0, {str(Path(code_or_script[0]).parent)!r}); "
        runner = (
            EMULATED
            + script
            + "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
        )
        return [sys.executable, "-c", runner, *code_or_script]

    def limit(self, part: str, reserve: float = 0.0) -> float:
        """The part's own limit, or what the budget leaves after ``reserve`` seconds."""
        left = self.budget - (time.monotonic() - self.begun) - reserve
        return max(10.0, min(LIMITS[part], left))

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        env.update(MKL_NUM_THREADS="1", MPLBACKEND="Agg", MPLCONFIGDIR=str(self.work / "mpl"))
        env.setdefault("CUPY_CACHE_DIR", str(self.work / "cupy_cache"))  # counted at the end
        return env

    def report(self, part: str, job: Job | None, status: str, details: str, **extra: Any) -> None:
        seconds = round(job.seconds) if job is not None else 0
        limit = round(job.limit) if job is not None else 0
        rc = job.rc if job is not None else None
        self.parts[part] = {"status": status, "seconds": seconds, "limit": limit, "rc": rc}
        self.parts[part].update(details=details, **extra)
        self.say(f"{part}: {status} ({seconds}s) {details}")

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.begun:5.0f}s] {text}", flush=True)


# --- env --------------------------------------------------------------------------------------

PROBE = r"""
import importlib, json, shutil, subprocess, sys, warnings
found = {"python": sys.version.split()[0]}
for name in ("numpy", "cupy", "torch", "pytest", "pytest_timeout", "hypothesis", "sklearn",
             "mypy", "beartype", "jaxtyping"):
    try:
        found[name] = getattr(importlib.import_module(name), "__version__", "?")
    except Exception as exc:
        found[name] = f"missing ({type(exc).__name__}: {exc})"[:120]
try:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import typed_nn, typed_nn.ops, typed_nn.train, typed_nn.backends.cupy
    found["typed_nn"] = "imports with warnings as errors"
except Exception as exc:
    found["typed_nn"] = f"{type(exc).__name__}: {exc}"[:300]
try:
    import cupy
    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(0)
    found["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    found["cuda_runtime"], found["cuda_driver"] = rt.runtimeGetVersion(), rt.driverGetVersion()
    found["gpu_memory_gib"] = round(props["totalGlobalMem"] / 2**30, 1)
except Exception as exc:
    found["no_gpu"] = f"{type(exc).__name__}: {exc}"[:200]
try:
    import torch
    found["torch_cuda"] = bool(torch.cuda.is_available())
except Exception:
    found["torch_cuda"] = False
if shutil.which("nvidia-smi"):
    query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
    found["nvidia_smi"] = subprocess.run(query, capture_output=True, text=True).stdout.strip()
print("PROBE " + json.dumps(found))
"""


def wait_all(jobs: list[Job]) -> None:
    """Wait until every job has ended (or been ended at its limit)."""
    while not all([job.poll() for job in jobs]):
        time.sleep(0.2)


def check_env(run: Run) -> bool:
    """Run the env part; True where the GPU parts can run."""
    job = Job("env", run.python(["-c", PROBE]), run.work / "env.log", run.limit("env"))
    job.start(run.child_env())
    wait_all([job])
    lines = [line for line in job.tail(50) if line.startswith("PROBE ")]
    run.env = json.loads(lines[-1][6:]) if lines else {}
    gpu = run.env.get("gpu") if run.env else None
    imported = str(run.env.get("typed_nn", "not run"))
    details = f"{gpu or 'no GPU: ' + str(run.env.get('no_gpu', '?'))}; typed_nn: {imported}"
    status = "pass" if job.ok and imported.startswith("imports") else "FAIL"
    run.report("env", job, status, details, found=run.env)
    return gpu is not None


# --- tests and alias ------------------------------------------------------------------------


def pytest_job(run: Run, part: str, selection: list[str]) -> Job:
    """``pytest -m gpu`` over ``selection`` on the real cupy (on the emulator: its cases)."""
    limit = run.limit(part, reserve=LIMITS["bench"])
    argv = ["-m", "pytest", "-m", "gpu", "-k", "not emulated", "-p", "no:cacheprovider"]
    argv += ["-p", "tests.emulated_device"] if run.emulate else []  # the [device] cases, emulated
    argv += ["-q", "-rfEX", "--durations=10"]
    argv += [f"--junitxml={run.out / f'{part}.xml'}", *selection]
    for module, tool in NEEDS_DEV_TOOLS.items():
        if str(run.env.get(tool, "missing")).startswith("missing"):
            argv.append(f"--ignore={module}")
    # numpy 2.5 and cupy may deprecate what typed_nn calls: shown, not errors, on this run
    for kind in ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning"):
        argv += ["-W", f"default::{kind}"]
    version = str(run.env.get("pytest_timeout", "missing"))
    if not version.startswith("missing"):
        argv.append("--timeout=120")  # one hung test does not take the part's time
        if tuple(int(v) for v in re.findall(r"\d+", version)[:2]) >= (2, 3):
            argv.append(f"--session-timeout={int(limit - 20)}")  # ends in time, JUnit written
    return Job(part, run.python(argv, gpu=False), run.out / f"{part}.log", limit)


def report_pytest(run: Run, job: Job) -> None:
    xml = run.out / f"{job.name}.xml"
    counts: Result = {}
    failed: list[str] = []
    if xml.exists():
        root = ET.parse(xml).getroot()
        suite = root.find("testsuite") if root.tag == "testsuites" else root
        assert suite is not None  # pytest writes one testsuite
        counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
        for case in suite.iter("testcase"):
            bad = case.find("failure")
            bad = bad if bad is not None else case.find("error")
            if bad is not None:
                message = (bad.get("message") or "").splitlines()
                name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
                failed.append(f"{name} ({message[0][:100] if message else '?'})")
    final = [line for line in job.tail(40) if re.search(r"\d+ (passed|failed|error)", line)]
    details = final[-1].strip("= ") if final else f"stopped early: {_progress(job)}"
    if failed:
        details += "; failed: " + "; ".join(failed[:6]) + (" ..." if len(failed) > 6 else "")
    notes = [line for line in job.tail(400) if line.startswith("GPU-NOTE ")]
    errors = [n[9:] for n in notes if ": fused kernel " in n]
    if notes:  # see tests/conftest.py: what passing tests hide
        details += f"; GPU notes: {len(notes) - len(errors)} node-by-node fallbacks"
        details += f", {len(errors)} fused-kernel errors" + "".join(f"; {e}" for e in errors[:3])
    ok = job.ok and bool(counts) and counts["failures"] == counts["errors"] == 0
    status = "TIMEOUT" if job.timed_out else "pass" if ok else "FAIL"
    run.report(job.name, job, status, details, counts=counts, failed=failed)


def _progress(job: Job) -> str:
    """The outcomes pytest -q printed so far (one character per test), counted."""
    text = job.log.read_text(errors="replace") if job.log.exists() else ""
    marks = "".join(
        re.sub(r"\s*\[\s*\d+%\]$", "", line)
        for line in text.splitlines()
        if re.fullmatch(r"[.sFExX]+(\s*\[\s*\d+%\])?", line.strip())
    )
    names = {".": "passed", "F": "failed", "E": "errors", "s": "skipped", "x": "xfailed"}
    return ", ".join(f"{marks.count(c)} {n}" for c, n in names.items() if c in marks) or "none"


# --- train ------------------------------------------------------------------------------------


def train_jobs(run: Run) -> list[Job]:
    """The digits job per model and device (two epochs on the emulator)."""
    jobs = []
    for model in ("mlp", "cnn"):
        for device in ("gpu", "cpu"):
            argv = ["train", "digits", "--model", model, "--device", device, "--no-progress"]
            argv += ["--out", str(run.work / f"{model}-{device}")]
            argv += ["--epochs", "2"] if run.emulate else []
            cmd = run.python(["-c", CLI, *argv], gpu=device == "gpu")
            log = run.work / f"train-{model}-{device}.log"
            jobs.append(Job(f"{model} {device}", cmd, log, run.limit("train", LIMITS["bench"])))
    return jobs


def report_train(run: Run, jobs: list[Job]) -> None:
    with (run.out / "train.log").open("w") as log:
        for job in jobs:
            log.write(f"== {job.name} (rc {job.rc}, {job.seconds:.0f}s)\n")
            log.write(job.log.read_text(errors="replace") if job.log.exists() else "")
    accuracy: dict[str, float | None] = {}
    for job in jobs:
        found = re.findall(r"test accuracy: (\d\.\d+)", "\n".join(job.tail(5)))
        accuracy[job.name] = float(found[-1]) if found and job.ok else None
    parts, within = [], True
    for model in ("mlp", "cnn"):
        gpu, cpu = accuracy[f"{model} gpu"], accuracy[f"{model} cpu"]
        gap = None if gpu is None or cpu is None else abs(gpu - cpu)
        within = within and gap is not None and gap <= ACCURACY_GAP
        shown = "-" if gap is None else f"{gap:.3f}"
        parts.append(f"{model} gpu {gpu} cpu {cpu} |d| {shown}")
    met = "met" if within else "MISSED"
    details = "; ".join(parts) + f" (<= {ACCURACY_GAP} {met})"
    slowest = max(jobs, key=lambda j: j.seconds)
    status = "TIMEOUT" if any(j.timed_out for j in jobs) else "pass" if within else "FAIL"
    run.report("train", slowest, status, details, accuracy=accuracy)


# --- bench ------------------------------------------------------------------------------------


def bench_job(run: Run) -> Job:
    argv = ["benchmarks/gpu.py", "--json", str(run.work / "bench.json")]
    argv += ["--quick"] if run.emulate else []
    return Job("bench", run.python(argv), run.out / "bench.log", run.limit("bench", reserve=10))


def report_bench(run: Run, job: Job) -> None:
    path = run.work / "bench.json"
    results: Result = json.loads(path.read_text()) if path.exists() else {}
    targets = results.get("targets", [])
    met = [t for t in targets if t["met"] is True]
    missed = [t for t in targets if t["met"] is False]
    errors = results.get("errors", {})
    details = f"targets: {len(met)} met, {len(missed)} missed, "
    details += f"{len(targets) - len(met) - len(missed)} not measured"
    details += f"; failed sections: {', '.join(errors) or '-'}"
    reruns = results.get("reruns", {})
    if reruns:  # a failed program reruns node by node: those numbers are not the fused path's
        details += "; node-by-node reruns: " + ", ".join(f"{k} {v}" for k, v in reruns.items())
    status = "TIMEOUT" if job.timed_out else "pass" if job.ok else "FAIL"
    run.report("bench", job, status, details, results=results)


# --- the summary ------------------------------------------------------------------------------


def summary_lines(run: Run) -> list[str]:
    env = run.env
    head = (
        f"== gpu_check summary: {env.get('gpu', 'no GPU')} | {env.get('nvidia_smi', '-')} | "
        f"cupy {env.get('cupy')} numpy {env.get('numpy')} torch {env.get('torch')} | "
        f"python {env.get('python')}{' | EMULATED' if run.emulate else ''}"
    )
    lines = [head, f"{'part':<6} {'status':<8} {'secs':>9}  details"]
    for name, part in run.parts.items():
        secs = f"{part['seconds']}/{part['limit']}"
        lines.append(f"{name:<6} {part['status']:<8} {secs:>9}  {part['details']}")
    bench = run.parts.get("bench", {}).get("results", {})
    for t in bench.get("targets", []):
        value = "-" if t["value"] is None else f"{t['value']:.3g}"
        state = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
        lines.append(f"  target {t['name']:<40} {value:>8} {t['goal']:<7} {state}")
    for step, s in bench.get("sections", {}).get("syncs", {}).items():
        where = ", ".join(s["where"]) or "-"
        waits = {True: "yes", False: "no", None: "?"}[s["waits_for_device"]]
        lines.append(
            f"  syncs  {step}: {s['syncs_per_step']:g}/step (waits for device: {waits}; "
            f"CUPTI waits {s['cupti_waits']}, copies {s['cupti_copies']}; from {where})"
        )
    overlap = bench.get("sections", {}).get("overlap", {})
    if overlap:
        wrong = ", ".join(f"{k}: {v} wrong" for k, v in overlap.items())
        lines.append(f"  cupy overlapping copies: {wrong}")
    failed = [n for n, p in run.parts.items() if p["status"] in ("FAIL", "TIMEOUT")]
    files = " ".join(sorted(p.name for p in run.out.iterdir()))
    lines.append(f"result: {'FAIL (' + ', '.join(failed) + ')' if failed else 'pass'}")
    lines.append(f"files in {run.out}: {files}")
    return lines


def _guarded(run: Run, part: str, read: Callable[[], None]) -> None:
    """``read`` a part's results; where that fails, the part fails, and the run goes on."""
    try:
        read()
    except Exception as exc:  # a result this script did not expect: report it, keep going
        run.report(part, None, "FAIL", f"gpu_check could not read its results: {exc!r}"[:300])


def finish(run: Run, jobs: dict[str, list[Job]]) -> int:
    """Write summary.json and print the summary table (after the end of each failed part's
    logs); the exit status."""
    for name, part_jobs in jobs.items():
        if run.parts[name]["status"] not in ("FAIL", "TIMEOUT"):
            continue
        for job in part_jobs:
            if name != "train" or not job.ok:
                print(f"---- end of {job.log.name} ({job.name}: {run.parts[name]['status']})")
                print("\n".join(f"  | {line[:200]}" for line in job.tail()))
    cache = Path(run.child_env()["CUPY_CACHE_DIR"])
    kernels = len(list(cache.glob("*.cubin"))) if cache.is_dir() else 0
    summary = {"env": run.env, "parts": run.parts, "emulated": run.emulate}
    summary["nvrtc_kernels_cached"] = kernels
    summary["seconds"] = round(time.monotonic() - run.begun)
    (run.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print("\n".join(summary_lines(run)))
    print(f"run: {summary['seconds']}s; kernels compiled by NVRTC (cupy's cache): {kernels}")
    return 1 if any(p["status"] in ("FAIL", "TIMEOUT") for p in run.parts.values()) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--emulate", action="store_true", help="run on the cupy emulator")
    parser.add_argument("--budget", type=float, default=420, help="seconds for the whole run")
    args = parser.parse_args(argv)
    given = os.environ.get("OUT")
    out = Path(given) if given else Path(tempfile.mkdtemp(prefix="gpu_check_"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu_check_work_"))
    run = Run(out, work, args.emulate, args.budget)
    try:
        return _run_parts(run)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_parts(run: Run) -> int:
    """env, then tests, alias and train together, then bench alone; the exit status."""
    run.say(f"gpu_check: output in {run.out}, budget {run.budget:.0f}s")
    if not check_env(run) and not run.emulate:
        for part in ("tests", "alias", "train", "bench"):
            run.report(part, None, "skipped", f"no GPU ({run.env.get('no_gpu', '?')})")
        return finish(run, {})
    tests = pytest_job(run, "tests", ["tests/", "--ignore=tests/test_gpu_alias.py"])
    alias = pytest_job(run, "alias", ["tests/test_gpu_alias.py"])
    trains = train_jobs(run)
    together = [tests, alias, *trains]
    for job in together:
        job.start(run.child_env())
    run.say(f"started {', '.join(j.name for j in together)} (together)")
    wait_all(together)
    _guarded(run, "tests", lambda: report_pytest(run, tests))
    _guarded(run, "alias", lambda: report_pytest(run, alias))
    _guarded(run, "train", lambda: report_train(run, trains))
    bench = bench_job(run)
    bench.start(run.child_env())
    wait_all([bench])
    _guarded(run, "bench", lambda: report_bench(run, bench))
    return finish(run, {"tests": [tests], "alias": [alias], "train": trains, "bench": [bench]})


if __name__ == "__main__":
    raise SystemExit(main())
