"""Data-parallel MLP 784-512-256-10: 2 ranks (``mpiexec -n 2``) against 1 process at the same
global batch — samples per second, and the all-reduce's time per step.

Run: ``python benchmarks/distributed.py [--samples 8192] [--batches 128 512] [--repeats 3]``
(needs ``pip install -e '.[distributed]'``). It starts itself once per run: alone, and under
the ``mpiexec`` next to this Python with 2 ranks, the two interleaved, and prints the best
(shortest) epoch of each. Random data (uniform features, labels from a random linear
teacher), ReLU, SGD lr 0.01, single-threaded BLAS in every rank. Times are wall-clock (the
ranks run at once); the all-reduce time is measured around the MPI call inside the compiled
step, on rank 0 (it includes waiting for the slower rank), and once more after the run with
both ranks ready (a barrier first): the transfer alone.
"""

# ruff: noqa: E402  (BLAS thread counts must be set before numpy is imported)
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from typed_nn.distributed import World, world
from typed_nn.model import SGD
from typed_nn.train import Dataset, History, LambdaCallback, fit
from typed_nn.train.classifier import build_mlp

WIDTHS = [784, 512, 256, 10]
HERE = Path(__file__).resolve()


def random_data(samples: int) -> Dataset:
    rng = np.random.default_rng(0)
    x = rng.random((samples, WIDTHS[0]), dtype=np.float32)
    teacher = rng.normal(size=(WIDTHS[0], WIDTHS[-1])).astype(np.float32)
    return Dataset(x, (x @ teacher).argmax(axis=1).astype(np.int64), WIDTHS[-1])


def worker(samples: int, batch: int, epochs: int) -> None:
    """One run (alone or as one rank); rank 0 prints a JSON line of its timings."""
    w = world()
    spent = [0.0, 0]
    reduce_arrays = World.all_reduce_arrays

    def timed(self: World, send: Any, out: Any) -> None:
        start = time.perf_counter()
        reduce_arrays(self, send, out)
        spent[0] += time.perf_counter() - start
        spent[1] += 1

    World.all_reduce_arrays = timed  # type: ignore[method-assign]
    data = random_data(samples)
    net, params = build_mlp(WIDTHS, "relu", seed=0)
    epoch_times: list[float] = []
    reduce_times: list[float] = []
    started = [time.perf_counter()]

    def on_epoch(epoch: int, history: History) -> None:
        now = time.perf_counter()
        epoch_times.append(now - started[0])
        reduce_times.append(spent[0] / max(spent[1], 1))
        spent[0], spent[1] = 0.0, 0
        started[0] = now

    fit(
        net,
        data,
        SGD(0.01),
        epochs=epochs,
        batch_size=batch,
        callbacks=[LambdaCallback(on_epoch_end=on_epoch)],
    )
    alone = 0.0  # the bucket's all-reduce with both ranks ready (after a barrier)
    if w.size > 1:
        bucket = np.ones(sum(int(np.prod(p.shape)) for _, p in params.items()), np.float32)
        out = np.empty_like(bucket)
        times = []
        for _ in range(20):
            w.barrier()
            start = time.perf_counter()
            reduce_arrays(w, bucket, out)
            times.append(time.perf_counter() - start)
        alone = min(times)
    if w.is_root:
        best = min(range(epochs), key=lambda e: epoch_times[e])
        steps = -(-samples // batch)
        result = {
            "ranks": w.size,
            "epoch_s": epoch_times[best],
            "samples_per_s": samples / epoch_times[best],
            "step_ms": epoch_times[best] / steps * 1e3,
            "all_reduce_ms": reduce_times[best] * 1e3,
            "all_reduce_ready_ms": alone * 1e3,
        }
        print(json.dumps(result), flush=True)


def launch(ranks: int, samples: int, batch: int, epochs: int) -> dict[str, float]:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    command = [sys.executable, str(HERE), "--worker"]
    if ranks > 1:
        command = [
            str(mpiexec if mpiexec.exists() else shutil.which("mpiexec")),
            "-n",
            "2",
            *command,
        ]
    command += ["--samples", str(samples), "--batches", str(batch), "--epochs", str(epochs)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent.parent), env.get("PYTHONPATH", "")])
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("{"))
    result: dict[str, float] = json.loads(line)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--batches", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.samples, args.batches[0], args.epochs)
        return
    print(
        f"MLP {'-'.join(map(str, WIDTHS))}, {args.samples} samples, best epoch of "
        f"{args.epochs} x {args.repeats} runs (runs interleaved), wall-clock"
    )
    for batch in args.batches:
        best: dict[int, dict[str, float]] = {}
        for _ in range(args.repeats):
            for ranks in (1, 2):
                r = launch(ranks, args.samples, batch, args.epochs)
                if ranks not in best or r["epoch_s"] < best[ranks]["epoch_s"]:
                    best[ranks] = r
        one, two = best[1], best[2]
        print(f"\n== global batch {batch}")
        for ranks, r in sorted(best.items()):
            print(
                f"  {ranks} rank(s): {r['samples_per_s']:9.0f} samples/s   step "
                f"{r['step_ms']:7.2f} ms   all-reduce {r['all_reduce_ms']:6.2f} ms/step in the "
                f"step, {r['all_reduce_ready_ms']:5.2f} ms with both ranks ready"
            )
        print(f"  speed-up 2 ranks / 1 rank: {two['samples_per_s'] / one['samples_per_s']:.2f}x")


if __name__ == "__main__":
    main()
