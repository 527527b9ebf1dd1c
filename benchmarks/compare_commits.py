"""Two commits side by side in one run: is a change (a refactoring) slower? Every benchmark.

Run: ``python benchmarks/compare_commits.py BASE [HEAD] [--rounds 3] [--only chain,lstm]``
(HEAD by default; ``.`` names the working tree, uncommitted changes included). Each commit is
checked out into a temporary git worktree, and every benchmark script of ``benchmarks/`` runs
from that commit's own worktree (its own copy of the script) in a child process
(``PYTHONPATH`` = that worktree, one BLAS / OpenMP thread), BASE and HEAD one after the other,
for ``--rounds`` rounds (the order BASE, HEAD swapped every round, so a drift in the machine's
load hits both). What each script prints is parsed:

* timings: ``_common.race``'s ``label  12.34 us`` lines, and the tables of ``cnn.py``,
  ``digits_mlp.py``, ``large_mlp.py`` (CPU time per epoch), ``layer_backward.py`` and
  ``debug_overhead.py``;
* ratios: ``_common.ratio``'s ``ratio label 1.23x`` lines and ``typed_nn / torch: 1.23x``.

Per measurement, the best of the rounds is compared: the minimum of a time and of a ratio
``typed_nn / anchor``, the maximum of a ratio ``anchor / typed_nn`` (marked "higher =
faster"). Ratios against an anchor timed in the same process (numpy, torch) cancel most of the
machine's load: read them first; typed_nn's own times follow them. One table: benchmark,
measurement, BASE, HEAD, HEAD/BASE, and ``SLOWER`` where HEAD is more than ``--threshold``
(5 %) slower. A measurement one side did not print (a script or a measurement that an older
commit lacks, a failed run) is "—"; failures are listed under the table. ``--anchors`` also
lists the anchors' own times and the ratios between anchors, never flagged: a gauge of the
machine's noise (on a shared machine, a same-commit run ``BASE BASE`` shows it too). A ratio
between two typed_nn variants (``layer_backward``'s vjp/hand, ``debug_overhead``'s
checked/plain, ``programs``' per-sample / hand-batched) also rises when its denominator gets
faster: read the times listed below it.

The entries (``--only`` takes their names), with the wall time of one run of one commit on the
2-vCPU reference VM, measured with other jobs running (the "wall time per run" table at the end
of each report gives today's); one round of all is twice their sum, about 2.5 minutes, and the
default three rounds about 8:

=================  ================================================================  =======
expr_train         this file's own: a 20-node 4x4 expression, uncompiled and           3-4 s
                   compiled, per call (numpy eager as the anchor); ``typed-nn train
                   digits --epochs 8`` as a whole process (import included)
tiny_overhead      the 20-node expression: build, evaluate                               2 s
chain              the element-wise chain at 1e7; torch.compile compiles every run   11-14 s
                   (27 s the first time, with no inductor cache)
mshadow_update     the MShadow update at 1e3, 1e5, 1e7                                 5-6 s
mlp_per_sample     a per-sample loop batched by the evaluator                            1 s
programs           questions 1-5, each its own process, full sizes                      14 s
attention          multi-head attention forward + backward, compiled                   2.5 s
transformer_block  a pre-LN transformer block's training step, compiled                3.5 s
lstm               LSTM training step, compiled                                        4.5 s
layer_backward     hand-written vs vjp-derived layer backwards                           2 s
cnn                digits CNN trained by ``fit`` (CPU time per epoch)                  5-6 s
digits_mlp         digits MLP trained by ``fit``, batch 32 and 128 (the same)          7-8 s
large_mlp          MLP 784-512-256-10 trained by ``fit`` (the same)                    6-7 s
debug_overhead     debug mode's checked calls                                            3 s
=================  ================================================================  =======

Each script runs with its default options: all are short enough, and the quick options that
some have (``programs.py --quick``: tiny sizes) would no longer measure the real thing. A script
added to ``benchmarks/`` later is run too, with no options, its ``race`` and ``ratio`` lines
compared. Not run: ``gpu.py`` (needs an NVIDIA GPU and cupy) and ``distributed.py`` (needs MPI
and two ranks); ``run_all.py`` runs other scripts and measures nothing itself.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from _common import setup_threads

setup_threads()

ROOT = Path(__file__).resolve().parent.parent
WORKTREE = "."
"""The revision name that means the working tree as it is (uncommitted changes included)."""
NOT_RUN = {
    "gpu": "needs an NVIDIA GPU and cupy",
    "distributed": "needs MPI and two ranks",
    "run_all": "runs the other scripts",
    "compare_commits": "this script",
}
ANCHORS = ("numpy", "torch", "pytorch", "jax", "numba")
"""A timing label or ratio operand starting with one of these is an anchor, not typed_nn."""
MISSING = "—"

CHILD = """
import subprocess, sys, tempfile, time
import numpy as np

import typed_nn as tn
from typed_nn import ops

rng = np.random.default_rng(0)
a, b = (rng.normal(size=(4, 4)).astype(np.float32) for _ in range(2))
x0, y0 = (tn.tensor(v, tn.Float32, tn.CPU, tn.Dim2) for v in (a, b))

def expr(x, y):
    for _ in range(4):  # 5 nodes a round
        x = ops.tanh(x * y + 0.5) - y * 0.25
    return x

def numpy_expr(x, y):
    for _ in range(4):
        x = np.tanh(x * y + 0.5) - y * 0.25
    return x

fns = {  # label: (callable, calls per timing)
    "numpy eager, 20 ufunc calls": (lambda: numpy_expr(a, b), 1000),
    "20-node 4x4 expression, uncompiled, per call": (lambda: expr(x0, y0).numpy(), 100),
}
if hasattr(tn, "compile"):  # an older commit may lack it: the others are still measured
    compiled_expr = tn.compile(expr)
    fns["the same, compiled, per call"] = (lambda: compiled_expr(x0, y0), 1000)
best = dict.fromkeys(fns, float("inf"))
for fn, _ in fns.values():
    fn()
for _ in range(30):  # round-robin, as _common.race
    for label, (fn, n) in fns.items():
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best[label] = min(best[label], (time.perf_counter() - start) / n)
for label, t in best.items():
    print(f"  {label:<52} {t * 1e6:10.2f} us")
t_np, *typed = best.values()
for label, t in zip(("uncompiled", "compiled"), typed):
    print(f"  ratio {label + ' / numpy eager':<46} {t / t_np:8.2f}x")
with tempfile.TemporaryDirectory() as out:  # the training run's output folder
    train = [sys.executable, "-c", "import sys; from typed_nn.cli import main; "
             "sys.exit(main(['train', 'digits', '--epochs', '8', '--no-progress', '--out', "
             "sys.argv[1]]))", out]
    start = time.perf_counter()
    done = subprocess.run(train, capture_output=True, text=True)
    seconds = time.perf_counter() - start
if done.returncode != 0:
    sys.exit(f"typed-nn train digits failed: {done.stderr.strip()[-500:]}")
label = "typed-nn train digits --epochs 8, whole process"
print(f"  {label:<52} {seconds * 1e3:10.3f} ms")
"""


# --- measurements and the parsers of the scripts' output ----------------------------------


@dataclass(frozen=True)
class Measure:
    """One number a script printed."""

    label: str
    kind: Literal["ratio", "time"]
    value: float
    """Seconds for a time, the factor for a ratio."""
    higher_is_better: bool = False
    """A ratio ``anchor / typed_nn``."""
    anchor: bool = False
    """An anchor's time, or a ratio between anchors: listed with ``--anchors`` only."""

    def better(self, other: Measure) -> bool:
        if self.higher_is_better:
            return self.value > other.value
        return self.value < other.value


Parser = Callable[[str], list[Measure]]
NUM = r"\d+(?:\.\d+)?"
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
RACE = re.compile(rf"^\s+(?P<label>[^\s:][^:]*?)\s+(?P<value>{NUM}) (?P<unit>us|ms)$")
RATIO = re.compile(rf"^\s+ratio\s+(?P<label>\S.*?)\s+(?P<value>{NUM})x(?:\s+target\b.*)?$")
TYPED_OVER = re.compile(rf"^\s*(?:(?P<batch>\d+) )?typed_nn / (?P<other>.+?): (?P<value>{NUM})x$")
CNN_ROW = re.compile(rf"^\s+(?P<impl>\S+)\s+(?P<value>{NUM}) ms/epoch\b")
DIGITS_ROW = re.compile(rf"^\s*(?P<batch>\d+) (?P<impl>\S.*?)\s+(?P<value>{NUM})\s+{NUM}$")
LARGE_ROW = re.compile(rf"^(?P<impl>\S.*?)\s+(?P<value>{NUM})\s+-?{NUM}$")
LAYER_ROW = re.compile(
    r"^\s+(?P<case>\S.*?)\s+(?P<step>forward|backward build\+eval|backward build)"
    rf"\s+(?P<hand>{NUM}) (?P<hand_unit>us|ms)\s+(?P<vjp>{NUM}) (?P<vjp_unit>us|ms)"
    rf"\s+(?P<ratio>{NUM})x$"
)
DEBUG_ROW = re.compile(
    rf"^\s*(?P<call>\S.*?)\s+(?P<plain>\d+)\s+(?P<checked>\d+)\s+-?\d+\s+(?P<ratio>{NUM})$"
)


def is_anchor(label: str) -> bool:
    return label.strip().lower().startswith(ANCHORS)


def ratio_measure(label: str, value: float) -> Measure:
    """A ratio ``left / right``: ``typed_nn / anchor`` (lower = faster), ``anchor / typed_nn``
    (higher = faster), or between anchors."""
    left, _, right = label.partition(" / ")
    if is_anchor(left):
        if "typed_nn" in right:
            return Measure(label, "ratio", value, higher_is_better=True)
        return Measure(label, "ratio", value, anchor=True)
    return Measure(label, "ratio", value)


def time_measure(label: str, value: float, unit: str, anchor: bool | None = None) -> Measure:
    return Measure(
        label, "time", value * UNITS[unit], anchor=is_anchor(label) if anchor is None else anchor
    )


def common_lines(line: str) -> list[Measure]:
    """``_common.race`` and ``_common.ratio`` lines (and ``programs.target``'s)."""
    if m := RATIO.match(line):
        return [ratio_measure(m["label"], float(m["value"]))]
    if m := RACE.match(line):
        return [time_measure(m["label"].strip(), float(m["value"]), m["unit"])]
    return []


def epoch_tables(line: str) -> list[Measure]:
    """cnn.py, digits_mlp.py, large_mlp.py: the best epoch's CPU time per implementation and
    ``[batch] typed_nn / other: 1.23x``."""
    if m := TYPED_OVER.match(line):
        batch = f"batch {m['batch']}: " if m["batch"] else ""
        return [ratio_measure(f"{batch}typed_nn / {m['other']}", float(m["value"]))]
    if m := CNN_ROW.match(line):
        return [time_measure(f"{m['impl']}, per epoch", float(m["value"]), "ms")]
    if m := DIGITS_ROW.match(line):
        label = f"batch {m['batch']}: {m['impl']}, per epoch"
        return [time_measure(label, float(m["value"]), "ms", is_anchor(m["impl"]))]
    return []


def large_mlp_table(line: str) -> list[Measure]:
    if m := LARGE_ROW.match(line):
        return [time_measure(f"{m['impl']}, per epoch", float(m["value"]), "ms")]
    return []


def layer_table(line: str) -> list[Measure]:
    """layer_backward.py: per layer and step, the hand-written backward's time, the derived
    one's, and their ratio (typed_nn against typed_nn: no anchor)."""
    m = LAYER_ROW.match(line)
    if m is None:
        return []
    name = f"{m['case']}: {m['step']}"
    return [
        Measure(f"{name}, vjp/hand", "ratio", float(m["ratio"])),
        time_measure(f"{name}, hand", float(m["hand"]), m["hand_unit"], False),
        time_measure(f"{name}, vjp", float(m["vjp"]), m["vjp_unit"], False),
    ]


def debug_table(line: str) -> list[Measure]:
    """debug_overhead.py: plain and checked ns per call and their ratio (beartype's own wrapper
    and a plain Python function's call are anchors)."""
    m = DEBUG_ROW.match(line)
    if m is None:
        return []
    call = m["call"].strip()
    beartype = "beartype" in call
    return [
        Measure(f"{call}: checked/plain", "ratio", float(m["ratio"]), anchor=beartype),
        time_measure(
            f"{call}: plain", float(m["plain"]), "ns", beartype or call.startswith("user")
        ),
        time_measure(f"{call}: checked", float(m["checked"]), "ns", beartype),
    ]


def short_section(title: str) -> str:
    """``1. a 20-node ...`` -> ``Q1``; ``... n = 1e+07`` -> ``n=1e+07``."""
    if m := re.match(r"(\d+[a-z]?)\.\s", title):
        return f"Q{m[1]}"
    if m := re.search(r"\bn = (\S+)", title):
        return f"n={m[1]}"
    return title


@dataclass(frozen=True)
class Bench:
    """One entry: a script of benchmarks/ (or this file's own child) and how to read it."""

    name: str
    parsers: tuple[Parser, ...] = ()
    """Beside ``common_lines``."""
    sections: bool = False
    """Its ``== title`` sections repeat the same labels: prefix them with the section."""

    def parse(self, output: str) -> dict[str, Measure]:
        found: dict[str, Measure] = {}
        section = ""
        for line in output.splitlines():
            if line.startswith("== "):
                section = short_section(line[3:].strip())
                continue
            for parse in (common_lines, *self.parsers):  # the first that reads the line
                got = parse(line)
                for m in got:
                    label = f"{section}: {m.label}" if self.sections and section else m.label
                    found.setdefault(label, replace(m, label=label))
                if got:
                    break
        return found


EXPR = "expr_train"
BENCHES = [
    Bench(EXPR),
    Bench("tiny_overhead"),
    Bench("chain"),
    Bench("mshadow_update", sections=True),
    Bench("mlp_per_sample"),
    Bench("programs", sections=True),
    Bench("attention"),
    Bench("transformer_block"),
    Bench("lstm"),
    Bench("layer_backward", (layer_table,)),
    Bench("cnn", (epoch_tables,)),
    Bench("digits_mlp", (epoch_tables,)),
    Bench("large_mlp", (epoch_tables, large_mlp_table)),
    Bench("debug_overhead", (debug_table,)),
]


# --- running ------------------------------------------------------------------------------


@dataclass
class Run:
    """One run of one entry on one side."""

    measures: dict[str, Measure]
    seconds: float
    error: str = ""


@dataclass
class Side:
    """BASE or HEAD: a revision, its tree and what its runs gave."""

    role: str
    rev: str
    tree: Path
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def best(self, bench: str) -> dict[str, Measure]:
        best: dict[str, Measure] = {}
        for run in self.runs.get(bench, []):
            for label, m in run.measures.items():
                if label not in best or m.better(best[label]):
                    best[label] = m
        return best


def child_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}  # one BLAS thread: set by setup_threads


def text(out: str | bytes | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""


def run_bench(bench: Bench, tree: Path, timeout: float) -> Run:
    if bench.name == EXPR:
        command = [sys.executable, "-c", CHILD]
    else:
        script = tree / "benchmarks" / f"{bench.name}.py"
        if not script.is_file():
            return Run({}, 0.0, "no such script at this commit")
        command = [sys.executable, str(script)]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            cwd=tree / "benchmarks",
            env=child_env(tree),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        out, err, rc = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        out, err, rc = text(exc.stdout), f"timed out after {timeout:.0f} s", -1
    seconds = time.perf_counter() - start
    error = ""
    if rc != 0:
        last = [line for line in err.strip().splitlines() if line.strip()][-1:]
        error = f"exit {rc}: {last[0].strip() if last else '?'}"[:300]
    return Run(bench.parse(out), seconds, error)


def git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True)
    return done.stdout.decode().strip()


def describe(rev: str) -> str:
    if rev == WORKTREE:
        return "the working tree"
    short = git("rev-parse", "--short", rev)
    return rev if short == rev else f"{rev} ({short})"


def prepare(tree: Path) -> None:
    """Check that a child imports typed_nn from ``tree`` (PYTHONPATH first), and compile the
    tree's modules once so that no side pays for it in a whole-process timing."""
    where = subprocess.run(
        [sys.executable, "-c", "import typed_nn; print(typed_nn.__file__)"],
        cwd=tree / "benchmarks",
        env=child_env(tree),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"a child with PYTHONPATH={tree} imports typed_nn from {where}")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "typed_nn", "benchmarks"],
        cwd=tree,
        check=False,
        capture_output=True,
    )


def entries(trees: Iterable[Path]) -> list[Bench]:
    """The table's entries, then any other script of benchmarks/ at either commit."""
    known = {b.name for b in BENCHES}
    found = {
        p.stem
        for tree in trees
        for p in (tree / "benchmarks").glob("*.py")
        if not p.stem.startswith("_") and p.stem not in NOT_RUN and p.stem not in known
    }
    return [*BENCHES, *(Bench(name) for name in sorted(found))]


# --- the report ---------------------------------------------------------------------------


def fmt(m: Measure | None) -> str:
    if m is None:
        return MISSING
    if m.kind == "ratio":
        return f"{m.value:.3f}x"
    v = m.value
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if v < scale * 1e3:
            return f"{v / scale:.2f} {unit}" if unit != "ns" else f"{v / scale:.0f} ns"
    return f"{v:.3f} s"


def compare(base: Measure | None, head: Measure | None, threshold: float) -> tuple[str, str]:
    """(HEAD/BASE, flag): the flag reads the direction (a higher ``anchor / typed_nn`` is
    faster)."""
    if base is None or head is None or base.value <= 0 or head.value <= 0:
        return MISSING, ""
    change = head.value / base.value
    if base.anchor:  # not typed_nn's: shown as a gauge of the machine's noise
        return f"{change:.3f}", ""
    slower = 1 / change if base.higher_is_better else change
    if slower > 1 + threshold:
        flag = f"SLOWER +{(slower - 1) * 100:.1f}%"
    elif slower < 1 - threshold:
        flag = f"faster {(slower - 1) * 100:.1f}%"
    else:
        flag = ""
    return f"{change:.3f}", flag


def report(benches: list[Bench], base: Side, head: Side, args: argparse.Namespace) -> None:
    rows: list[tuple[str, ...]] = []
    flagged: list[str] = []
    for bench in benches:
        old, new = base.best(bench.name), head.best(bench.name)
        labels = list(dict.fromkeys([*new, *old]))  # HEAD's script's order
        measures = [old.get(label) or new[label] for label in labels]
        shown = [
            (label, m)
            for label, m in zip(labels, measures, strict=True)
            if args.anchors or not m.anchor
        ]
        shown.sort(key=lambda lm: lm[1].kind != "ratio")  # ratios first (stable)
        if not shown:
            rows.append((bench.name, "(nothing measured)", MISSING, MISSING, MISSING, ""))
        for label, m in shown:
            change, flag = compare(old.get(label), new.get(label), args.threshold)
            name = f"{label} (higher = faster)" if m.higher_is_better else label
            name += " [anchor]" if m.anchor else ""
            rows.append((bench.name, name, fmt(old.get(label)), fmt(new.get(label)), change, flag))
            if flag.startswith("SLOWER"):
                flagged.append(f"  {bench.name}: {name}: {flag}")
    head_row = ("benchmark", "measurement", "BASE", "HEAD", "HEAD/BASE", "")
    widths = [max(len(r[i]) for r in [head_row, *rows]) for i in range(5)]
    print(
        f"\n== {describe(base.rev)} -> {describe(head.rev)}: best of {args.rounds} alternated "
        f"round(s); ratios against the anchors timed in the same process first"
    )
    for r in [head_row, *rows]:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(r[2:5], widths[2:5], strict=True)]
        print("  " + "  ".join(cells) + (f"  {r[5]}" if r[5] else ""))
    print(f"\n== {len(flagged)} measurement(s) more than {args.threshold:.0%} slower at HEAD")
    print("\n".join(flagged) if flagged else "  none")
    failures = [
        f"  {bench.name}: {side.role} round {i + 1}: {run.error}"
        for bench in benches
        for side in (base, head)
        for i, run in enumerate(side.runs.get(bench.name, []))
        if run.error
    ]
    if failures:
        print("\n== runs that failed or did not run (measurements printed before a failure count)")
        print("\n".join(failures))
    print("\n== wall time per run (mean over rounds, s)")
    total = [0.0, 0.0]
    for bench in benches:
        means = []
        for i, side in enumerate((base, head)):
            runs = side.runs.get(bench.name, [])
            mean = sum(r.seconds for r in runs) / len(runs) if runs else 0.0
            total[i] += mean
            means.append(mean)
        print(f"  {bench.name:<20} BASE {means[0]:6.1f}   HEAD {means[1]:6.1f}")
    print(f"  {'one round':<20} BASE {total[0]:6.1f} + HEAD {total[1]:6.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog=f"entries: {', '.join(b.name for b in BENCHES)}",
    )
    parser.add_argument("base", help="the commit before the change")
    parser.add_argument(
        "head",
        nargs="?",
        default="HEAD",
        help=f"the commit after it ('{WORKTREE}': the working tree)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="BASE/HEAD alternations (3)")
    parser.add_argument("--only", default="", help="comma-separated entries (default: all)")
    parser.add_argument("--threshold", type=float, default=0.05, help="flag above (0.05)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run (900)")
    parser.add_argument("--anchors", action="store_true", help="also list the anchors' times")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    only = [n.strip().removesuffix(".py") for n in args.only.split(",") if n.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        sides: list[Side] = []
        added: list[Path] = []
        try:
            for role, rev in (("BASE", args.base), ("HEAD", args.head)):
                tree = ROOT
                if rev != WORKTREE:
                    tree = Path(tmp) / role.lower()
                    git("worktree", "add", "--detach", "-q", str(tree), rev)
                    added.append(tree)
                prepare(tree)
                sides.append(Side(role, rev, tree))
            benches = entries(side.tree for side in sides)
            if only:
                names = {b.name for b in benches}
                unknown = [n for n in only if n not in names]
                if unknown:
                    parser.error(f"unknown entries {unknown}; known: {', '.join(sorted(names))}")
                benches = [b for b in benches if b.name in only]
            measure(benches, sides, args)
        finally:
            for tree in added:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                )
    report(benches, sides[0], sides[1], args)


def measure(benches: list[Bench], sides: list[Side], args: argparse.Namespace) -> None:
    """Run every entry on both sides, ``args.rounds`` times; Ctrl-C stops early (the report
    then shows what was measured)."""
    load = os.getloadavg()[0]
    print(f"load average at the start: {load:.2f} on {os.cpu_count()} CPUs", file=sys.stderr)
    try:
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for bench in benches:
                for side in order:
                    run = run_bench(bench, side.tree, args.timeout)
                    side.runs.setdefault(bench.name, []).append(run)
                    note = f"  {run.error}" if run.error else ""
                    print(
                        f"[round {r + 1}/{args.rounds}] {bench.name:<18} {side.role} "
                        f"{run.seconds:6.1f} s, {len(run.measures)} measures{note}",
                        file=sys.stderr,
                        flush=True,
                    )
    except KeyboardInterrupt:
        print("interrupted: reporting the runs done so far", file=sys.stderr)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
