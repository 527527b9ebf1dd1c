"""Stand-ins for cupy, so the GPU backend's logic is tested on machines without a GPU."""

from __future__ import annotations

import types
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from cupy_emulator import RAW_PRELUDE


class FakeGpuArray:
    """A host array that typed_nn takes for a cupy one (its class lives in module 'cupy')."""

    __module__ = "cupy"

    def __init__(self, data: npt.ArrayLike, dtype: Any = None) -> None:
        self.host = np.array(data, dtype=dtype)

    shape = property(lambda self: self.host.shape)
    dtype = property(lambda self: self.host.dtype)
    ndim = property(lambda self: self.host.ndim)
    size = property(lambda self: self.host.size)
    strides = property(lambda self: self.host.strides)
    data = property(lambda self: types.SimpleNamespace(ptr=self.host.ctypes.data))

    def get(self) -> npt.NDArray[Any]:
        return self.host.copy()


class RecordingKernel:
    """Stands for ``cupy.ElementwiseKernel``: records its source, computes nothing."""

    made: ClassVar[list[RecordingKernel]] = []

    def __init__(self, in_params: str, out_params: str, operation: str, name: str) -> None:
        self.source = (in_params, out_params, operation, name)
        RecordingKernel.made.append(self)


# --- Running generated kernel bodies on the host --------------------------------------------
# The loop body of a generated ElementwiseKernel is plain C (cupy's CUDA math names are the C
# library's), so a C++ compiler runs it here: a check of the expressions' *values*, per op and
# dtype, on machines without a GPU. ``Raw`` mimics cupy's raw-array interface (``a[k]``,
# ``a.size()``); ``i`` is the element index, as in the kernel.

_PRELUDE = RAW_PRELUDE + "#include <stdio.h>\nint main() {\n"


def have_compiler() -> bool:
    """Whether a C++ compiler is on PATH (the host-run tests skip without one)."""
    import shutil

    return shutil.which("g++") is not None


def _literal(value: Any, dtype: str) -> str:
    if dtype.startswith("float"):
        return float(value).hex() + ("f" if dtype == "float32" else "")
    return f"{int(value)}LL" if dtype == "int64" else str(int(value))


def _block(k: int, source: Any, inputs: list[tuple[str, str, Any]], size: int) -> str:
    """C++ computing kernel ``k`` over ``size`` elements; inputs are (kind, dtype, value)."""
    from typed_nn.backends.cupy.kernel_source import c_type

    lines = ["{"]
    reads = []
    for j, (kind, dtype, value) in enumerate(inputs):
        ct = c_type(dtype)
        if kind == "number":
            reads.append(f"const {ct} in{j} = {_literal(value, dtype)};")
            continue
        flat = np.asarray(value).ravel()
        data = ", ".join(_literal(v, dtype) for v in flat)
        lines.append(f"static const {ct} d{k}_{j}[] = {{{data}}};")
        if kind == "broadcast":
            lines.append(f"Raw<{ct}> in{j}{{d{k}_{j}, {flat.size}}};")
        else:
            index = "0" if flat.size == 1 else "i"
            reads.append(f"const {ct} in{j} = d{k}_{j}[{index}];")
    out_type = c_type(source.out_params.split()[0])
    lines.append(f"for (long long i = 0; i < {size}; ++i) {{")
    lines.extend(reads)
    lines.append(f"{out_type} out0;")
    lines.append("{\n" + source.operation + "\n}")
    lines.append(f'printf("{k} %.17g\\n", (double)out0);')
    lines.append("}}")
    return "\n".join(lines)


def run_on_host(
    kernels: list[tuple[Any, list[tuple[str, str, Any]], int]], workdir: Any
) -> list[npt.NDArray[np.float64]]:
    """Run each (KernelSource, inputs, size) on the host; the outputs in float64."""
    import subprocess

    body = "\n".join(_block(k, src, inputs, size) for k, (src, inputs, size) in enumerate(kernels))
    path = workdir / "kernels.cpp"
    path.write_text(_PRELUDE + body + "\nreturn 0;\n}\n")
    exe = workdir / "kernels"
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(exe), str(path), "-lm"], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    values: list[list[float]] = [[] for _ in kernels]
    for line in out.splitlines():
        k, v = line.split()
        values[int(k)].append(float(v))
    return [np.array(v) for v in values]
