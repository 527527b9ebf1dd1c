"""Issue 38 on a GPU machine: compiled steps replayed as CUDA graphs, beside the plain replay
and PyTorch CUDA eager, in one run of about 4 minutes at most (``bash scripts/gpu_speed.sh``).

Prints, and writes to ``$OUT/gpu_speed.json`` (``--json`` elsewhere):

* the compiled MLP step (784-512-256-10, ReLU, softmax + NLL, SGD; ``fit``'s step without its
  gather) at batch 128 and 1024: plain vs graph-replayed vs PyTorch eager, ratios (target:
  graph <= 0.5x PyTorch at batch 128), and host time per replayed step (target <= 20 us);
* the pre-LN transformer block's training step (``benchmarks/transformer_block.py``, Adam):
  plain vs replayed vs PyTorch (target <= 0.8x);
* the MLP at batch 128 written with ``typed_nn.nn`` modules and ``optim`` (the step a user
  writes now: host time per replayed step, target <= 20 us), in Float32 beside PyTorch;
* the MLP (batch 128) and the block written with ``typed_nn.nn`` modules computing in Float16
  (``PMixedFloat16``: Float32 weights and optimizer) beside PyTorch eager under
  ``torch.autocast`` (float16), no loss scaling on either side (target <= 1.0x);
* correctness: the largest difference between replayed and plain results (each step's output
  and the weights) over 5 steps from the same weights (bit for bit expected: 0);
* each step's graph status (and each fallback's reason).

Step times are host times of a step with the device idle before and after; the variants are
timed in interleaved rounds and the minimum of each is kept. Host time per replayed step is
the host's time to issue 50 steps back to back, before waiting for the device. Without a GPU
it says so and exits 0; ``--emulate`` runs it all on the cupy emulator
(``tests/cupy_emulator.py``): a rehearsal, not a measurement.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

Result = dict[str, Any]
Untyped = Any
WIDTHS = [784, 512, 256, 10]


def interleaved(
    fns: dict[str, Callable[[], object]], sync: dict[str, Callable[[], object]], rounds: int
) -> dict[str, float]:
    """Seconds per call of each function (device idle before and after), the minimum over
    ``rounds`` interleaved rounds, after two warm-up calls each."""
    for name, fn in fns.items():
        fn()
        fn()
        sync[name]()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            sync[name]()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def issue_time(fn: Callable[[], object], sync: Callable[[], object], calls: int = 50) -> float:
    """Host seconds per call to issue ``calls`` calls back to back (the device catches up after)."""
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    issued = time.perf_counter() - start
    sync()
    return issued / calls


def mlp_step(batch: int, graph: bool) -> tuple[Callable[[], Any], Any]:
    """``fit``'s compiled step (without its gather) of a fresh 784-512-256-10 MLP (seed 0) on
    one fixed batch, replayed as a graph or plainly: the step and its Compiled function."""
    import typed_nn as tn
    from typed_nn.model import SGD
    from typed_nn.train.classifier import build_mlp
    from typed_nn.train.step import TrainStep
    from typed_nn.train.trainee import LayerTrainee

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, WIDTHS[0]), dtype=np.float32)
    ys = rng.integers(0, WIDTHS[-1], batch)  # integer labels, as fit gathers them
    net, params = build_mlp(WIDTHS, seed=0, device=tn.GPU)
    opt = SGD(0.01)
    train = TrainStep(LayerTrainee(net, opt, device=tn.GPU), WIDTHS[0], WIDTHS[-1])
    compiled = tn.compile(train._traced, cuda_graph=graph)
    x = tn.tensor(xs, tn.Float32, tn.GPU, tn.Dim2)
    y = tn.tensor(ys, tn.Int64, tn.GPU, tn.Dim1)

    def step() -> Any:
        out = compiled(x, y, opt.numbers())
        opt.step_count += 1
        return out

    step.params = params  # type: ignore[attr-defined]
    return step, compiled


def adam_update(graph: bool) -> tuple[Callable[[], Any], Any]:
    """An optimizer step alone: Adam over the 784-512-256-10 MLP's six parameters, the
    gradients given (no matrix product: what cupy lets a CUDA graph capture)."""
    import typed_nn as tn
    from typed_nn.model import Adam
    from typed_nn.tags import dim_of_rank

    rng = np.random.default_rng(0)
    shapes = [s for a, b in itertools.pairwise(WIDTHS) for s in ((a, b), (b,))]

    def made() -> list[Any]:
        return [tn.tensor(rng.standard_normal(s).astype(np.float32), tn.Float32, tn.GPU, dim_of_rank(len(s))) for s in shapes]  # fmt: skip

    params, grads = made(), made()
    rule = Adam(1e-3)

    def body(g1: Any, g2: Any, g3: Any, g4: Any, g5: Any, g6: Any, numbers: Any) -> Any:
        rule.apply(list(zip(params, (g1, g2, g3, g4, g5, g6), strict=True)), numbers)
        return params[-1] * 1.0

    compiled: Any = tn.compile(body, cuda_graph=graph)

    def step() -> Any:
        out = compiled(*grads, rule.numbers())
        rule.step_count += 1
        return out

    step.params = dict(enumerate(params))  # type: ignore[attr-defined]
    return step, compiled


def torch_adam(torch: Any) -> Callable[[], object]:
    """``torch.optim.Adam`` (its default CUDA implementation) over the same six shapes."""
    shapes = [s for a, b in itertools.pairwise(WIDTHS) for s in ((a, b), (b,))]
    params = [torch.randn(s, device="cuda", requires_grad=True) for s in shapes]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.Adam(params, lr=1e-3)
    return lambda: opt.step()


def block_step(graph: bool) -> tuple[Callable[[], Any], Any]:
    """The transformer block's compiled training step, replayed as a graph or plainly."""
    import transformer_block as tb

    import typed_nn as tn
    from typed_nn.evaluate import options

    w = tb.weights()
    xs, ts = tb.batch()
    x, target = (tn.tensor(a, tb.F32, tn.GPU, tn.Dim3) for a in (xs, ts))
    ours = tb.TypedBlock(w, tn.GPU)
    with options.using(cuda_graphs=graph):  # read when the step is traced: its first call
        ours.step(x, target)

    def step() -> Any:
        return ours.step(x, target)

    step.params = ours.params  # type: ignore[attr-defined]
    return step, ours._step


def half_block_step(graph: bool) -> tuple[Callable[[], Any], Any]:
    """The block written with modules, computing in Float16 (``PMixedFloat16``: Float32
    weights, Adam in Float32), its compiled step replayed as a graph or plainly."""
    import transformer_block as tb

    import typed_nn as tn
    from typed_nn import nn
    from typed_nn.evaluate import options
    from typed_nn.policies import PMixedFloat16

    xs, ts = tb.batch()
    x, target = (tn.tensor(a, tb.F32, tn.GPU, tn.Dim3) for a in (xs, ts))
    block = tb.ModuleBlock(tb.weights(), tn.GPU, precision=PMixedFloat16)
    compiled = tb.module_step(block)
    with options.using(cuda_graphs=graph):  # read when the step is traced: its first call
        compiled(x, target)

    def step() -> Any:
        return compiled(x, target)

    step.params = dict(nn.named_parameters(block))  # type: ignore[attr-defined]
    return step, compiled


def torch_half_block(torch: Any) -> Callable[[], object]:
    """PyTorch's block with its forward under ``torch.autocast`` (float16)."""
    import transformer_block as tb

    xs, ts = tb.batch()
    tx, tt = (torch.from_numpy(a).cuda() for a in (xs, ts))
    theirs = tb.torch_block(torch, tb.weights(), "cuda", autocast=True)
    return lambda: theirs(tx, tt)


def module_mlp_step(graph: bool, half: bool = False) -> tuple[Callable[[], Any], Any]:
    """A 784-512-256-10 ReLU MLP of ``nn.Linear`` (computing in Float16 with ``half``:
    ``PMixedFloat16``), cross-entropy on integer labels and ``optim.SGD``, at batch 128: its
    compiled step, as a user writes it with modules (the step count in the program)."""
    import typed_nn as tn
    from typed_nn import nn, ops, optim
    from typed_nn.evaluate import options
    from typed_nn.policies import PMixedFloat16

    class MLP(nn.Module):
        def __init__(self) -> None:
            on: dict[str, Any] = {"elem": tn.Float32, "device": tn.GPU}
            on["precision"] = PMixedFloat16 if half else None
            self.fc1 = nn.Linear(WIDTHS[0], WIDTHS[1], **on)
            self.fc2 = nn.Linear(WIDTHS[1], WIDTHS[2], **on)
            self.fc3 = nn.Linear(WIDTHS[2], WIDTHS[3], **on)

        def __call__(self, x: Any) -> Any:
            u: Any = ops
            h = u.relu(self.fc2(u.relu(self.fc1(u.astype(x, tn.Float16) if half else x))))
            return u.astype(self.fc3(h), tn.Float32) if half else self.fc3(h)

    tn.manual_seed(0)
    model = MLP()
    sgd = optim.SGD(model, lr=0.01)
    rng = np.random.default_rng(0)
    x = tn.tensor(
        rng.standard_normal((128, WIDTHS[0]), dtype=np.float32), tn.Float32, tn.GPU, tn.Dim2
    )
    y = tn.tensor(rng.integers(0, WIDTHS[-1], 128), tn.Int64, tn.GPU, tn.Dim1)

    @tn.compile
    def compiled(x: Any, y: Any) -> Any:
        loss = ops.cross_entropy(model(x), y)
        sgd.step(tn.grad(loss, model))
        return loss

    with options.using(cuda_graphs=graph):
        compiled(x, y)

    def step() -> Any:
        return compiled(x, y)

    step.params = dict(nn.named_parameters(model))  # type: ignore[attr-defined]
    return step, compiled


def torch_module_mlp(torch: Any, half: bool = False) -> Callable[[], object]:
    """The same MLP step in PyTorch eager (its forward under ``torch.autocast`` in float16
    with ``half``)."""
    layers = [torch.nn.Linear(a, b) for a, b in itertools.pairwise(WIDTHS)]
    model = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(), layers[2])
    model.cuda()
    sgd = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, WIDTHS[0], device="cuda")
    y = torch.randint(0, WIDTHS[-1], (128,), device="cuda")

    def step() -> None:
        sgd.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=half):
            logits = model(x)
        torch.nn.functional.cross_entropy(logits.float(), y).backward()
        sgd.step()

    return step


def max_difference(make: Callable[[bool], tuple[Callable[[], Any], Any]], steps: int = 5) -> float:
    """The largest |replayed - plain| over ``steps`` steps' outputs and the weights after."""
    plain, _ = make(False)
    replayed, _ = make(True)
    worst = 0.0
    for _ in range(steps):
        a, b = plain().numpy(), replayed().numpy()
        worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))))
    pairs = zip(plain.params.items(), replayed.params.items(), strict=True)  # type: ignore[attr-defined]
    for (_, p), (_, q) in pairs:
        worst = max(worst, float(np.max(np.abs(p.numpy().astype(np.float64) - q.numpy()))))
    return worst


def compare(
    label: str,
    make: Callable[[bool], tuple[Callable[[], Any], Any]],
    torch_step: Callable[[], object] | None,
    env: Result,
) -> Result:
    """Plain vs replayed vs PyTorch for one step; its graph status and host issue time."""
    plain, plain_fn = make(False)
    graph, graph_fn = make(True)
    fns: dict[str, Callable[[], object]] = {"plain": plain, "graph": graph}
    syncs = {"plain": env["sync"], "graph": env["sync"]}
    if torch_step is not None:
        fns["torch"], syncs["torch"] = torch_step, env["torch"].cuda.synchronize
    best = interleaved(fns, syncs, env["rounds"])
    result: Result = {k + "_ms": v * 1e3 for k, v in best.items()}
    result["graph_status"] = graph_fn.graph_status
    result["plain_status"] = plain_fn.graph_status
    result["graph_issue_us"] = issue_time(graph, env["sync"]) * 1e6
    result["plain_issue_us"] = issue_time(plain, env["sync"]) * 1e6
    result["graph_vs_plain"] = best["graph"] / best["plain"]
    if "torch" in best:
        result["graph_vs_torch"] = best["graph"] / best["torch"]
        result["plain_vs_torch"] = best["plain"] / best["torch"]
    result["max_abs_diff_5_steps"] = max_difference(make)
    shown = "  ".join(f"{k} {v * 1e3:.3f} ms" for k, v in best.items())
    print(f"{label}: {shown}")
    ratios = {k: f"{v:.2f}x" for k, v in result.items() if k.endswith(("_vs_torch", "_vs_plain"))}
    print(f"  ratios {ratios}; host per replayed step {result['graph_issue_us']:.1f} us")
    print(f"  graph status: {result['graph_status']}")
    print(f"  replayed vs plain, max |diff| over 5 steps: {result['max_abs_diff_5_steps']:.3g}")
    return result


def targets(results: Result) -> list[Result]:
    def ratio(section: str, key: str) -> float | None:
        value = results.get(section, {}).get(key)
        return None if value is None else float(value)

    wanted = [
        ("MLP b128: graph x PyTorch", ratio("mlp_128", "graph_vs_torch"), 0.5),
        ("MLP b128 modules: host us per replay", ratio("mlp_modules", "graph_issue_us"), 20.0),
        ("MLP b128 fit's step: host us per replay", ratio("mlp_128", "graph_issue_us"), 20.0),
        ("transformer: graph x PyTorch", ratio("transformer", "graph_vs_torch"), 0.8),
        ("MLP b128 Float16: graph x autocast", ratio("mlp_half", "graph_vs_torch"), 1.0),
        ("transformer Float16: graph x autocast", ratio("transformer_half", "graph_vs_torch"), 1.0),
        ("MLP b128: replayed - plain (max abs)", ratio("mlp_128", "max_abs_diff_5_steps"), 0.0),
        ("transformer: replayed - plain", ratio("transformer", "max_abs_diff_5_steps"), 0.0),
    ]
    return [
        {"name": n, "value": v, "goal": f"<= {g:g}", "met": None if v is None else v <= g}
        for n, v, g in wanted
    ]


def run(emulate: bool) -> Result:
    from gpu import Bench, Report, torch_cuda

    import typed_nn as tn

    cp = tn.devices.array_module(tn.GPU)
    torch = None if emulate else torch_cuda()
    env: Result = {"sync": cp.cuda.Device().synchronize, "torch": torch}
    env["rounds"] = 3 if emulate else 30
    bench = Bench(cp, torch, emulate, Report(None))
    results: Result = {"device": bench.device(), "torch": getattr(torch, "__version__", None)}
    for batch in (128, 1024):
        torch_step = bench._mlp_steps(batch)[1] if torch is not None else None
        make = lambda graph, batch=batch: mlp_step(batch, graph)  # noqa: E731
        results[f"mlp_{batch}"] = compare(f"MLP step, batch {batch}", make, torch_step, env)
    adam_anchor = torch_adam(torch) if torch is not None else None
    results["adam"] = compare("Adam update alone (6 tensors)", adam_update, adam_anchor, env)
    torch_block = bench._block_steps()[1] if torch is not None else None
    results["transformer"] = compare("transformer block step", block_step, torch_block, env)
    anchor = torch_module_mlp(torch) if torch is not None else None
    results["mlp_modules"] = compare("MLP step b128, modules", module_mlp_step, anchor, env)
    anchor = torch_module_mlp(torch, half=True) if torch is not None else None
    half = lambda graph: module_mlp_step(graph, half=True)  # noqa: E731
    results["mlp_half"] = compare("MLP step b128, modules, Float16 compute", half, anchor, env)
    anchor = torch_half_block(torch) if torch is not None else None
    label = "transformer block step, Float16 compute"
    results["transformer_half"] = compare(label, half_block_step, anchor, env)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--emulate", action="store_true", help="run on the cupy emulator")
    parser.add_argument("--json", type=Path, default=None, help="where to write the summary")
    args = parser.parse_args(argv)
    out = args.json or Path(os.environ.get("OUT") or tempfile.mkdtemp()) / "gpu_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.emulate:
        sys.path.insert(0, str(ROOT / "tests"))
        import cupy_emulator

        sys.modules["cupy"] = cupy_emulator.install()
    from gpu import gpu_reason

    reason = gpu_reason()
    summary: Result = {"emulated": args.emulate}
    if reason is not None:
        print(f"scripts/gpu_speed.py: nothing to measure here: {reason}.")
        summary["skipped"] = reason
    else:
        begun = time.monotonic()
        summary["results"] = run(args.emulate)
        summary["targets"] = targets(summary["results"])
        summary["seconds"] = round(time.monotonic() - begun)
        print("\n== targets" + (" (EMULATED: not a measurement)" if args.emulate else ""))
        for t in summary["targets"]:
            state = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
            value = "-" if t["value"] is None else f"{t['value']:.3g}"
            print(f"  {t['name']:<40} {value:>9}  {t['goal']:<8} {state}")
    out.write_text(json.dumps(summary, indent=1, default=str))
    print(f"summary: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
