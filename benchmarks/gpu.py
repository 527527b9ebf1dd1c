"""typed_nn on the GPU beside PyTorch CUDA eager (issues 10 and 37's targets).

Run: ``python benchmarks/gpu.py [--json PATH]`` on a machine with an NVIDIA GPU, cupy
(``pip install -e '.[gpu]'``) and, for the anchor, a CUDA build of torch. Without cupy or a
GPU it says so and exits 0. Sections (each runs even where another failed):

* device: its name and the peak bandwidth, measured as a large device-to-device copy
  (bytes read + written over CUDA-event time), beside the theoretical figure;
* elementwise: the MShadow update ``w = -eta * (g + lam * w)`` and the chain
  ``tanh(a*x + b) * sigmoid(c*x) + 0.5*x`` at 1e7 and 1e8 float32: event time, GB/s against
  the copy peak (target >= 70%), kernels launched per evaluation (target: one, the fused
  region; counted by CUPTI where torch is there, else the plan's fused kernels);
* overhead: host time per ``evaluate`` of an n-node chain on tiny tensors, built afresh each
  time, fitted as ``a + b * n`` (target a <= 25 us, b <= 0.2 us);
* mlp: one training step of a 784-512-256-10 ReLU MLP with biases (softmax + NLL, SGD) at
  batch 1024 as ``fit`` runs it (target <= 1.0x PyTorch eager);
* transformer: a pre-LN transformer block's training step (``transformer_block.py``: ops,
  ``tn.grad``, ``tn.compile``, Adam) at batch 16, seq 64, d 64 (target <= 1.0x);
* syncs: host synchronisations per compiled training step (cupy's own declarations, by the
  line that asked; CUPTI's waits; whether the step waits for the device at all);
* overlap: whether cupy's copies go wrong where source and destination overlap.

Step times are host times with the device idle before and after (medians of repeats); kernel
times are CUDA-event times. ``--json`` writes every number and each target's met/missed,
after each section. ``--quick`` runs every section at tiny sizes without the torch anchor: a
check that the script works (the test suite runs it on the cupy emulator), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _gpu_probes import (
    SyncCounter,
    cupy_time,
    launches,
    overlap_hazard,
    torch_time,
    waits_for_device,
    wall_time,
)

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import clear_plan_cache, stats
from typed_nn.model import SGD
from typed_nn.train.classifier import build_mlp
from typed_nn.train.step import TrainStep
from typed_nn.train.trainee import LayerTrainee

Untyped = Any
Result = dict[str, Any]


def gpu_reason() -> str | None:
    """Why this machine cannot run the benchmark, or None."""
    try:
        import cupy
    except ImportError:
        return "cupy is not installed (pip install -e '.[gpu]' or '.[gpu-cuda13]')"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:  # the CUDA driver's own error types
        return f"no usable CUDA device ({type(exc).__name__}: {exc})"
    return None


def torch_cuda() -> Any:
    """torch when it is installed with a usable CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


class Report:
    """The results by section, and the targets met or missed; written to ``path`` (JSON)
    after each section, so a run stopped midway keeps what it measured."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.sections: dict[str, Result] = {}
        self.targets: list[Result] = []
        self.errors: dict[str, str] = {}
        self.reruns: dict[str, int] = {}
        """Evaluations whose program failed and ran again node by node, by section."""

    def target(self, name: str, value: float | None, goal: str, met: bool | None) -> None:
        """Record a target: ``met`` None where it could not be measured here."""
        self.targets.append({"name": name, "value": value, "goal": goal, "met": met})

    def save(self) -> None:
        if self.path is not None:
            data = {"sections": self.sections, "targets": self.targets, "errors": self.errors}
            data["reruns"] = self.reruns
            self.path.write_text(json.dumps(data, indent=1, default=str))

    def print_targets(self) -> None:
        print("\n== targets")
        for t in self.targets:
            state = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
            value = "-" if t["value"] is None else f"{t['value']:.3g}"
            print(f"  {t['name']:<44} {value:>9}  {t['goal']:<14} {state}")
        for name, error in self.errors.items():
            print(f"  section {name} failed: {error}")


class Bench:
    """The sections, sharing the device, the anchor and the report."""

    def __init__(self, cupy: Any, torch: Any, quick: bool, report: Report) -> None:
        self.cupy, self.torch, self.quick, self.report = cupy, torch, quick, report
        self.sync = cupy.cuda.Device().synchronize
        self.peak = 0.0

    def launched(self, fn: Callable[[], object]) -> Result | None:
        """Kernels and copies of one call, by CUPTI (None without torch)."""
        if self.torch is None:
            return None
        found = launches(self.torch, fn, self.sync)
        if found is None:
            return None
        return {
            "kernels": len(found.kernels),
            "names": sorted(set(found.kernels)),
            "copies": found.copies,
            "kernel_ms": found.kernel_seconds * 1e3,
            "waits": found.waits,
        }

    def device(self) -> Result:
        cupy = self.cupy
        a = cupy.empty(1 << 12 if self.quick else 1 << 28, np.float32)  # 1 GiB: no cache
        b = cupy.empty_like(a)
        t = cupy_time(cupy, lambda: cupy.copyto(b, a), repeats=10)
        self.peak = 2 * a.nbytes / t.best / 1e9  # first: the other sections need it
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        # CUDA 13 dropped memoryClockRate from cudaDeviceProp: a cupy may not report it
        clock, width = props.get("memoryClockRate"), props.get("memoryBusWidth")
        theory = 2 * clock * 1e3 * width / 8 / 1e9 if clock and width else 0.0
        print(f"device: {name}; bandwidth {theory:.0f} GB/s theoretical, {self.peak:.0f} copy")
        print(f"torch: {self.torch.__version__ if self.torch is not None else 'no CUDA build'}")
        return {"name": name, "theory_gbs": theory, "copy_peak_gbs": self.peak}

    def elementwise(self) -> Result:
        out: Result = {}
        for n in (10**3,) if self.quick else (10**7, 10**8):
            out.update(self._elementwise_at(n))
        return out

    def _elementwise_at(self, n: int) -> Result:
        rng = np.random.default_rng(0)
        host = rng.random(n, dtype=np.float32)
        w: Untyped = tn.tensor(host, tn.Float32, tn.GPU, tn.Dim1)
        g: Untyped = tn.tensor(host[::-1].copy(), tn.Float32, tn.GPU, tn.Dim1)
        x, b = g, tn.tensor(rng.random(n, dtype=np.float32), tn.Float32, tn.GPU, tn.Dim1)
        out: Untyped = tn.zeros((n,), tn.Float32, tn.GPU)

        def update() -> None:
            w.assign(-0.01 * (g + 0.001 * w))

        def chain() -> None:
            out.assign(ops.tanh(0.7 * x + b) * ops.sigmoid(1.3 * x) + 0.5 * x)

        results: Result = {}
        torch_fns = self._torch_elementwise(host, n)
        for label, fn in (("update", update), ("chain", chain)):
            key = f"{label} {n:.0e}"
            fused = _fused_kernels(fn)
            t = cupy_time(self.cupy, fn)
            moved = 3 * 4 * n  # two arrays read, one written
            gbs = moved / t.best / 1e9  # the best run, as the copy peak
            seen = self.launched(fn)
            # passes over the data: kernels and device-to-device copies (a memcpy is no kernel)
            passes = seen["kernels"] + seen["copies"].get("DtoD", 0) if seen else fused
            r: Result = {"ms": t.median * 1e3, "best_ms": t.best * 1e3, "gbs": gbs, "fused": fused}
            r.update(pct_peak=100 * gbs / self.peak, launched=seen)
            if seen is not None:  # the kernels' own time: what the host's gaps leave out
                r["kernel_gbs"] = moved / (seen["kernel_ms"] / 1e3) / 1e9
            print(
                f"  typed_nn {key}: {t.best * 1e3:8.3f} ms (median {t.median * 1e3:.3f})  "
                f"{gbs:7.1f} GB/s ({r['pct_peak']:5.1f}% of copy peak; kernels alone "
                f"{r.get('kernel_gbs', 0):.0f} GB/s)  fused kernels/eval: {fused}\n"
                f"    launched: {_names(seen)}"
            )
            if label in torch_fns:
                tt = torch_time(self.torch, torch_fns[label])
                r["torch_ms"] = tt.best * 1e3
                print(f"  torch    {key}: {tt.best * 1e3:8.3f} ms (median {tt.median * 1e3:.3f})")
            self.report.target(
                f"{key}: % of copy peak", r["pct_peak"], ">= 70", r["pct_peak"] >= 70
            )
            self.report.target(f"{key}: device passes per eval", passes, "== 1", passes == 1)
            results[key] = r
        return results

    def _torch_elementwise(self, host: Any, n: int) -> dict[str, Callable[[], object]]:
        torch = self.torch
        if torch is None:
            return {}
        tw, tg = torch.from_numpy(host).cuda(), torch.from_numpy(host[::-1].copy()).cuda()
        tb = torch.rand(n, device="cuda")
        return {
            "update": lambda: tw.copy_(-0.01 * (tg + 0.001 * tw)),
            "chain": lambda: torch.tanh(0.7 * tg + tb) * torch.sigmoid(1.3 * tg) + 0.5 * tg,
        }

    def overhead(self) -> Result:
        x: Untyped = tn.tensor(np.ones((4, 4), np.float32), tn.Float32, tn.GPU, tn.Dim2)
        loops = 2 if self.quick else 200
        sizes = (1, 10, 40)
        per_eval = []
        for n in sizes:

            def run(n: int = n) -> None:
                for _ in range(loops):  # built afresh: a node caches its value once evaluated
                    expr: Untyped = x
                    for i in range(n):
                        expr = ops.tanh(expr) if i % 2 else expr * 0.5
                    tn.evaluate(expr)

            per_eval.append(wall_time(run, self.sync, repeats=5).median / loops)
            print(f"  build + evaluate, {n:3d}-node chain: {per_eval[-1] * 1e6:8.2f} us")
        slope, intercept = (float(v) for v in np.polyfit(sizes, per_eval, 1))
        print(f"  fit: {intercept * 1e6:.2f} us + {slope * 1e6:.3f} us/node (target 25 + 0.2)")
        self.report.target(
            "overhead a (us per evaluate)", intercept * 1e6, "<= 25", intercept <= 25e-6
        )
        self.report.target("overhead b (us per node)", slope * 1e6, "<= 0.2", slope <= 0.2e-6)
        return {"per_eval_us": dict(zip(sizes, (t * 1e6 for t in per_eval), strict=True))}

    def mlp(self) -> Result:
        step, torch_step = self._mlp_steps(batch=8 if self.quick else 1024)
        return self._versus("MLP step (batch 8)" if self.quick else "MLP step", step, torch_step)

    def _mlp_steps(self, batch: int) -> tuple[Callable[[], object], Callable[[], object] | None]:
        """fit's step of a 784-512-256-10 ReLU MLP (SGD), and the same in PyTorch eager."""
        rng = np.random.default_rng(0)
        widths = [784, 512, 256, 10]
        xs = rng.standard_normal((batch, widths[0]), dtype=np.float32)
        labels = rng.integers(0, widths[-1], batch)
        net, params = build_mlp(widths, seed=0, device=tn.GPU)
        graph = TrainStep(LayerTrainee(net, SGD(0.01), device=tn.GPU), widths[0], widths[-1])
        features = self.cupy.asarray(xs)
        targets = self.cupy.asarray(labels)  # integer labels, as fit gathers them
        rows = self.cupy.arange(batch)

        def step() -> None:
            graph.run_rows(features, targets, rows)

        torch = self.torch
        if torch is None:
            return step, None
        named = dict(params.items())
        tp = [
            torch.tensor(named[f"mlp/fc{i}/{kind}"].numpy(), device="cuda", requires_grad=True)
            for i in (1, 2, 3)
            for kind in ("weight", "bias")
        ]
        tx, ty = torch.tensor(xs, device="cuda"), torch.tensor(labels, device="cuda")

        def torch_step() -> None:
            w1, b1, w2, b2, w3, b3 = tp
            h = torch.relu(torch.relu(tx @ w1 + b1) @ w2 + b2)
            loss = torch.nn.functional.cross_entropy(h @ w3 + b3, ty)
            for p in tp:
                p.grad = None
            loss.backward()
            with torch.no_grad():
                for p in tp:
                    p -= 0.01 * p.grad

        return step, torch_step

    def transformer(self) -> Result:
        step, torch_step, agree = self._block_steps()
        result = self._versus("transformer step", step, torch_step)
        result["loss_agreement"] = agree
        met = None if agree is None else agree < 1e-4
        self.report.target("transformer loss vs PyTorch (relative)", agree, "< 1e-4", met)
        return result

    def _block_steps(
        self,
    ) -> tuple[Callable[[], object], Callable[[], object] | None, float | None]:
        """The pre-LN block's step on the GPU, PyTorch's, and how closely their losses agree
        over three steps (relative; None without torch)."""
        import transformer_block as tb

        w = tb.weights()
        xs, ts = tb.batch()
        x, target = (tn.tensor(a, tb.F32, tn.GPU, tn.Dim3) for a in (xs, ts))
        ours = tb.TypedBlock(w, tn.GPU)
        if self.torch is None:
            return lambda: ours.step(x, target), None, None
        tx, tt = (self.torch.from_numpy(a).cuda() for a in (xs, ts))
        theirs = tb.torch_block(self.torch, w, "cuda")
        agree = tb.loss_gap(ours, theirs, x, tx, target, tt)
        print(f"  typed_nn and PyTorch losses agree to {agree:.1e} over three steps")
        return lambda: ours.step(x, target), lambda: theirs(tx, tt), agree

    def _versus(
        self, label: str, step: Callable[[], object], torch_step: Callable[[], object] | None
    ) -> Result:
        repeats = 3 if self.quick else 30
        t = wall_time(step, self.sync, repeats)
        seen = self.launched(step)
        result: Result = {"ms": t.median * 1e3, "best_ms": t.best * 1e3, "launched": seen}
        print(f"  typed_nn {label}: {t.median * 1e3:8.3f} ms (best {t.best * 1e3:.3f})")
        print(f"    launched: {_names(seen, limit=8)}")
        ratio = None
        if torch_step is not None:
            tt = wall_time(torch_step, self.torch.cuda.synchronize, repeats)
            torch_seen = self.launched(torch_step)
            ratio = t.median / tt.median
            result.update(torch_ms=tt.median * 1e3, ratio=ratio, torch_launched=torch_seen)
            print(f"  torch    {label}: {tt.median * 1e3:8.3f} ms (best {tt.best * 1e3:.3f})")
            print(f"    launched: {_names(torch_seen, limit=8)}")
            print(f"  ratio typed_nn / torch: {ratio:.2f}x (target <= 1.0)")
        self.report.target(
            f"{label}: x PyTorch eager", ratio, "<= 1.0", None if ratio is None else ratio <= 1.0
        )
        return result

    def syncs(self) -> Result:
        """Host synchronisations per step of three compiled training steps and an eager one."""
        mlp_step, _ = self._mlp_steps(batch=8 if self.quick else 1024)
        block_step, _, _ = self._block_steps()
        steps = {
            "mlp (fit's step)": mlp_step,
            "nll + SGD": self._nll_step(),
            "transformer": block_step,
            "eager SGD.step": self._eager_step(),
        }
        results: Result = {}
        runs = 2 if self.quick else 5
        for label, step in steps.items():
            step()  # compiled and warm
            self.sync()
            with SyncCounter(self.cupy) as counter:
                for _ in range(runs):
                    step()
            per_step = sum(counter.syncs.values()) / runs
            waits = waits_for_device(self.cupy, step)
            seen = self.launched(step)
            results[label] = {
                "syncs_per_step": per_step,
                "where": dict(counter.syncs),
                "to_device_per_step": sum(counter.to_device.values()) / runs,
                "to_device_where": dict(counter.to_device),
                "waits_for_device": waits,
                "cupti_waits": None if seen is None else seen["waits"],
                "cupti_copies": None if seen is None else seen["copies"],
            }
            where = ", ".join(f"{k} x{v / runs:g}" for k, v in counter.syncs.items()) or "-"
            print(
                f"  {label}: {per_step:g} host syncs/step ({where}); waits for the device: "
                f"{_yes(waits)}; CUPTI: waits {_or_dash(seen, 'waits')}, copies "
                f"{_or_dash(seen, 'copies')}; host->device copies/step "
                f"{results[label]['to_device_per_step']:g}"
            )
        return results

    def _nll_step(self) -> Callable[[], object]:
        """A compiled step on ``ops.nll_loss`` itself (fit's step feeds its gradient
        directly): softmax, NLL, ``tn.grad``, SGD as assigns."""
        rng = np.random.default_rng(0)
        w: Untyped = tn.tensor(
            rng.normal(size=(64, 10)).astype(np.float32), tn.Float32, tn.GPU, tn.Dim2
        )
        x: Untyped = tn.tensor(
            rng.normal(size=(256, 64)).astype(np.float32), tn.Float32, tn.GPU, tn.Dim2
        )
        onehot = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
        y: Untyped = tn.tensor(onehot, tn.Float32, tn.GPU, tn.Dim2)

        @tn.compile
        def step(x: Untyped, y: Untyped, lr: float) -> Untyped:
            loss = ops.nll_loss(y, ops.softmax(x @ w))
            w.assign(w - lr * tn.grad(loss, w))
            return loss

        return lambda: step(x, y, 0.1)

    def _eager_step(self) -> Callable[[], object]:
        """An optimizer step outside ``tn.compile`` (``SGD.step``: its learning rate a rank-0
        GPU tensor, a leaf of the update it evaluates)."""
        w: Untyped = tn.zeros((256, 256), tn.Float32, tn.GPU)
        g: Untyped = tn.tensor(np.ones((256, 256), np.float32), tn.Float32, tn.GPU, tn.Dim2)
        sgd = SGD(0.01)
        return lambda: sgd.step([(w, g)])

    def overlap(self) -> Result:
        if getattr(self.cupy, "emulated", False):
            print("  the emulator refuses overlapping copies (OverlapError): nothing to measure")
            return {}
        wrong = overlap_hazard(self.cupy, 64 if self.quick else 2048)
        for what, count in wrong.items():
            print(f"  cupy {what}: {count} elements wrong (numpy's result as reference)")
        return wrong


def _fused_kernels(fn: Callable[[], object]) -> int:
    """Fused kernels in ``fn``'s evaluation plan: analysed afresh, the plan looks each of its
    regions' kernels up once."""
    from typed_nn.backends.cupy.region import kernel_cache

    cache = kernel_cache()
    clear_plan_cache()
    before = cache.hits + cache.misses
    fn()
    return cache.hits + cache.misses - before


def _names(seen: Result | None, limit: int = 4) -> str:
    if seen is None:
        return "not measured (no CUPTI)"
    names = [n[:40] for n in seen["names"][:limit]]
    more = " ..." if len(seen["names"]) > limit else ""
    return f"{seen['kernels']} kernels, copies {seen['copies'] or '-'}: {', '.join(names)}{more}"


def _yes(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "not measured"}[value]


def _or_dash(seen: Result | None, key: str) -> str:
    return "-" if seen is None else str(seen[key] or 0)


SECTIONS = ("device", "elementwise", "overhead", "mlp", "transformer", "syncs", "overlap")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes: checks that the script runs"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated")
    args = parser.parse_args(argv)
    report = Report(args.json)
    reason = gpu_reason()
    if reason is not None:
        print(f"benchmarks/gpu.py: nothing to measure here: {reason}.")
        report.errors["skipped"] = reason
        report.save()
        return 0
    bench = Bench(
        tn.devices.array_module(tn.GPU), None if args.quick else torch_cuda(), args.quick, report
    )
    wanted = args.sections.split(",")
    for name in ("device", *(s for s in SECTIONS if s != "device" and s in wanted)):
        print(f"\n== {name}")
        before = stats.fallbacks
        try:
            report.sections[name] = getattr(bench, name)()
        except Exception as exc:  # every section runs; the failure is reported
            traceback.print_exc()
            report.errors[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        if stats.fallbacks > before:  # a program failed (a kernel?): numbers of the rerun
            report.reruns[name] = stats.fallbacks - before
            print(f"  evaluations rerun node by node: {report.reruns[name]}")
        report.save()
    report.print_targets()
    return 1 if report.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
