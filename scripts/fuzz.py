"""The evaluator's differential fuzzer (#32): random programs, eager and compiled, against numpy.

Usage::

    python scripts/fuzz.py --seconds 40          # CI: a fixed budget, a fresh seed, printed
    python scripts/fuzz.py --programs 20000 --seed 7 --sanitize
    python scripts/fuzz.py --seed 7 --program 1234   # one program again, its source printed

Program ``k`` of a run seeded ``s`` is ``make_program(s * 1_000_000 + k)``
(``tests/fuzz_programs.py``); a failure prints the program, its seed and the difference. Runs
every program plain and, from ``--sanitize-every`` on, also under the sanitizer; every
``--threads-every``-th with its fused regions split across 2 threads.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_programs import make_program, run_program


def _threads(count: int, args: argparse.Namespace) -> int:
    """Program ``count``'s threads: 2 for every ``--threads-every``-th, else 1."""
    every: int = args.threads_every
    return 2 if every > 0 and count % every == 1 % every else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    parser.add_argument("--seconds", type=float, default=None, help="stop after this long")
    parser.add_argument("--programs", type=int, default=None, help="stop after this many")
    parser.add_argument("--program", type=int, default=None, help="run only this program")
    parser.add_argument(
        "--sanitize-every", type=int, default=4, help="also sanitize every k-th (0: none)"
    )
    parser.add_argument("--sanitize", action="store_true", help="sanitize every program")
    parser.add_argument(
        "--threads-every",
        type=int,
        default=3,
        help="run every k-th with its fused regions split across 2 threads (0: none)",
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "big")
    every = 1 if args.sanitize else args.sanitize_every
    print(f"fuzz: seed {seed}", flush=True)
    if args.program is not None:
        program = make_program(seed * 1_000_000 + args.program)
        print(program)
        run_program(program, sanitize=args.sanitize, threads=_threads(args.program, args))
        print("fuzz: the program matches numpy")
        return 0
    start, count, sanitized, split = time.perf_counter(), 0, 0, 0
    while True:
        if args.programs is not None and count >= args.programs:
            break
        if args.seconds is not None and time.perf_counter() - start >= args.seconds:
            break
        if args.programs is None and args.seconds is None and count >= 1000:
            break
        program = make_program(seed * 1_000_000 + count)
        sanitize = every > 0 and count % every == 0
        threads = _threads(count, args)
        try:
            run_program(program, sanitize=sanitize, threads=threads)
        except Exception as exc:
            print(f"fuzz: program {count} of seed {seed} failed ({sanitize=}, {threads=}):")
            print(f"{type(exc).__name__}: {exc}")
            again = f"python scripts/fuzz.py --seed {seed} --program {count}"
            print(f"again: {again}{' --sanitize' if sanitize else ''}")
            return 1
        count += 1
        sanitized += sanitize
        split += threads > 1
    took = time.perf_counter() - start
    print(
        f"fuzz: {count} programs ({sanitized} sanitized, {split} split across threads) match "
        f"numpy, seed {seed}, {took:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
