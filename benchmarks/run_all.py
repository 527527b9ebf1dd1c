"""Run every benchmark, one process each (one library per process, single-threaded BLAS).

Usage: ``python benchmarks/run_all.py`` from the repository root (or anywhere).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

SCRIPTS = ["mshadow_update.py", "chain.py", "tiny_overhead.py", "mlp_per_sample.py"]


def machine() -> str:
    """CPU model and core count (``lscpu`` where available)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        return f"{fields.get('Model name', '?').strip()}, {fields.get('CPU(s)', '?').strip()} CPUs"
    except (OSError, subprocess.CalledProcessError):
        return f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"


def main() -> int:
    here = Path(__file__).resolve().parent
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    print(f"machine: {machine()}; python {platform.python_version()}")
    failed = 0
    for script in sys.argv[1:] or SCRIPTS:
        done = subprocess.run([sys.executable, str(here / script)], cwd=here, env=env, check=False)
        failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
