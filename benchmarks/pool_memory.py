"""Memory after a stream of ever-changing shapes (#33): the evaluator's buffer pool follows
the working set.

4,000 evaluations over vectors of 4,000 distinct lengths (sequence lengths that keep
changing), then a steady step repeated 10,000 times over one shape. Printed: the process's
resident memory (RSS, from /proc/self/statm) and the bytes the pool holds, at the start,
after the stream, and after the steady loop; and the steady step's time per call, so a
regression of the pool's bookkeeping shows. Target: RSS after the steady loop within a few
MB of the steady working set (not the stream's peak).

Run: ``python benchmarks/pool_memory.py`` (Linux).
"""

# ruff: noqa: E402  (thread counts must be set before numpy is imported)
from __future__ import annotations

from _common import header, setup_threads

setup_threads()

import os
import time

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import buffer_pool


def rss_mb() -> float:
    """Resident memory of this process, MB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def step(n: int) -> None:
    x = tn.zeros((n,), tn.Float32, tn.CPU)
    tn.evaluate(ops.exp(x * 0.5) + ops.tanh(x))


def main() -> None:
    header("pool memory: 4,000 distinct shapes, then a steady step")
    pool = buffer_pool()
    step(20_000)
    print(
        f"  start                         RSS {rss_mb():8.1f} MB   pool {pool.held() / 2**20:7.1f} MB"
    )
    for n in range(20_000, 24_000):
        step(n)
    print(
        f"  after 4,000 distinct shapes   RSS {rss_mb():8.1f} MB   pool {pool.held() / 2**20:7.1f} MB"
    )
    start = time.perf_counter()
    for _ in range(10_000):
        step(30_000)
    took = (time.perf_counter() - start) / 10_000
    print(
        f"  after 10,000 steady steps     RSS {rss_mb():8.1f} MB   pool {pool.held() / 2**20:7.1f} MB"
    )
    print(f"  steady step                   {took * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
