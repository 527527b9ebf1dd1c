"""``import typed_nn`` stays light: no cupy, beartype or jaxtyping unless asked for."""

from __future__ import annotations

import subprocess
import sys


def test_import_does_not_pull_optional_dependencies() -> None:
    code = (
        "import sys, typed_nn, typed_nn.policies, typed_nn.onnx, typed_nn.distributed\n"
        "heavy = [m for m in ('cupy', 'beartype', 'jaxtyping', 'onnx', 'onnxruntime', 'mpi4py',"
        " 'ml_dtypes')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    env_free = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env_free
    )
    assert out.stdout.strip() == ""
