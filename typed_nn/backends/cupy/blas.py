"""Matrix products on the GPU through a cuBLAS handle of typed_nn's own.

cupy's products refuse to run while a stream captures (cupy 14's cuBLAS wrapper raises in
``setStream``), so no compiled step with a matrix product could be replayed as a CUDA graph.
cuBLAS itself captures, given a workspace of the caller's own (NVIDIA's cuBLAS guide, "CUDA
Graphs Support"): here one handle per device with a 32 MiB workspace made once, and
``cublasGemmEx`` / ``cublasGemmStridedBatchedEx`` called through ctypes on the current
stream. The same call runs whether or not a stream captures (one path for every product of
float16/32/64 matrices, and lighter on the host than cupy's dispatch); other dtypes, and a
machine where libcublas cannot be opened, take cupy's ``matmul``.

The products are numpy's ``matmul`` (batch dims broadcast, vectors promoted), accumulated in
float32 for float16 and float32 (``CUBLAS_COMPUTE_32F``: no TF32, as cupy and PyTorch
default; float16 runs on tensor cores) and in float64 for float64. Operands are read where
they lie when their matrices are row- or column-major with one stride per batch (transposed
weights and activations included); others are copied contiguous first.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import math
from pathlib import Path
from typing import Any

import numpy as np

from ...devices import array_module
from ...tags import GPU
from ..numpy.structure import is_matmul

__all__ = ["dot", "matmul", "product", "sum_of_products"]

Array = Any

WORKSPACE = 32 << 20
"""Bytes of cuBLAS workspace per device (NVIDIA's recommendation for Hopper)."""
COMPUTE_32F, COMPUTE_64F = 68, 70
"""``cublasComputeType_t``."""
DATA_TYPES = {"e": 2, "f": 0, "d": 1}
"""numpy dtype char -> ``cudaDataType`` (CUDA_R_16F, CUDA_R_32F, CUDA_R_64F)."""
GEMM_DEFAULT = -1
OP_N, OP_T = 0, 1
INT_MAX = 2**31 - 1


class CublasError(RuntimeError):
    """A cuBLAS call returned a status other than CUBLAS_STATUS_SUCCESS."""


class Blas:
    """libcublas, a handle per device, and the scalars the products pass by address."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.handles: dict[int, tuple[int, Array]] = {}
        """Per device id: its handle, and the workspace it was given."""
        self.streams: dict[int, int] = {}
        """Per handle: the stream it was last bound to."""
        self.one32, self.zero32 = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self.one64, self.zero64 = ctypes.c_double(1.0), ctypes.c_double(0.0)

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise CublasError(f"cuBLAS {what} failed with status {status}")

    def handle(self, cp: Any) -> int:
        """The current device's handle, bound to the current stream with its workspace
        (``cublasSetStream`` gives a handle back the default workspace, so both are set)."""
        device = cp.cuda.Device().id
        if device not in self.handles:
            h = ctypes.c_void_p()
            self.check(self.lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
            self.handles[device] = (h.value or 0, cp.empty(WORKSPACE, np.uint8))
        handle, workspace = self.handles[device]
        stream = cp.cuda.get_current_stream().ptr
        if self.streams.get(handle) != stream:
            self.check(self.lib.cublasSetStream_v2(handle, stream), "cublasSetStream")
            status = self.lib.cublasSetWorkspace_v2(handle, workspace.data.ptr, WORKSPACE)
            self.check(status, "cublasSetWorkspace")
            self.streams[handle] = stream
        return handle

    def gemm(self, cp: Any, a: Layout, b: Layout, c: Array, m: int, n: int, k: int) -> None:
        """``c = a @ b`` (``c`` contiguous, of shape ``(count, m, n)``). Row-major ``c`` is
        column-major ``c^T = b^T a^T``: cuBLAS computes that, with ``b`` first."""
        char = c.dtype.char
        t = DATA_TYPES[char]
        wide = char == "d"
        compute = COMPUTE_64F if wide else COMPUTE_32F
        alpha = ctypes.addressof(self.one64 if wide else self.one32)
        beta = ctypes.addressof(self.zero64 if wide else self.zero32)
        handle, count = self.handle(cp), c.shape[0]
        if count == 1:
            status = self.lib.cublasGemmEx(
                handle, b.op, a.op, n, m, k, alpha, b.ptr, t, b.ld, a.ptr, t, a.ld,
                beta, c.data.ptr, t, n, compute, GEMM_DEFAULT,
            )  # fmt: skip
            self.check(status, "cublasGemmEx")
            return
        status = self.lib.cublasGemmStridedBatchedEx(
            handle, b.op, a.op, n, m, k, alpha, b.ptr, t, b.ld, b.stride, a.ptr, t, a.ld,
            a.stride, beta, c.data.ptr, t, n, m * n, count, compute, GEMM_DEFAULT,
        )  # fmt: skip
        self.check(status, "cublasGemmStridedBatchedEx")


class Layout:
    """An operand's matrices as cuBLAS reads them: the address of the first, ``op`` (N for
    row-major, which is its transpose column-major; T for column-major), the leading
    dimension, and the elements from one matrix of the batch to the next."""

    __slots__ = ("ld", "op", "ptr", "stride")

    def __init__(self, ptr: int, op: int, ld: int, stride: int) -> None:
        self.ptr, self.op, self.ld, self.stride = ptr, op, ld, stride


def _layout(x: Array, batch: tuple[int, ...]) -> Layout | None:
    """How cuBLAS reads ``x`` (of shape ``batch + (rows, cols)`` after broadcasting) where it
    lies, or None where its memory is not one such layout (then it is copied contiguous)."""
    size = x.itemsize
    if any(s % size for s in x.strides):
        return None
    *lead, s0, s1 = (s // size for s in x.strides)
    rows, cols = x.shape[-2:]
    stride = _batch_stride(batch, lead)
    if stride is None:
        return None
    if (cols == 1 or s1 == 1) and (rows == 1 or s0 >= cols):
        op, ld = OP_N, s0 if rows > 1 else cols
    elif (rows == 1 or s0 == 1) and (cols == 1 or s1 >= rows):
        op, ld = OP_T, s1 if cols > 1 else rows
    else:
        return None
    if not 0 < ld <= INT_MAX:
        return None
    return Layout(x.data.ptr, op, ld, stride)


def _batch_stride(batch: tuple[int, ...], strides: list[int]) -> int | None:
    """One stride that steps through the batch dims in order (0 where broadcast), or None."""
    stride: int | None = None
    step = 1
    for n, s in zip(reversed(batch), reversed(strides), strict=True):
        if n == 1:
            continue
        if stride is None:
            stride = s
        elif s != stride * step:
            return None
        step *= n
    return 0 if stride is None else stride


_opened: dict[Any, Blas | None] = {}
"""Per cupy module (the tests' emulator is one, a new one per test, beside the real cupy)."""


def _open(cp: Any) -> Blas | None:
    """libcublas as cupy loaded it (None where it cannot be opened). The cupy emulator of the
    tests brings its own model of it (``cupy.cublas_model``)."""
    if cp not in _opened:
        lib = getattr(cp, "cublas_model", None) or _dlopen()
        _opened[cp] = None if lib is None else Blas(lib)
    return _opened[cp]


def _dlopen() -> Any:
    with contextlib.suppress(ImportError):
        importlib.import_module("cupy_backends.cuda.libs.cublas")  # loads cupy's libcublas
    names = [p for p in _mapped() if Path(p).name.startswith("libcublas.so")]
    for name in [*names, "libcublas.so.13", "libcublas.so.12", "libcublas.so"]:
        with contextlib.suppress(OSError, AttributeError):
            lib = ctypes.CDLL(name)
            _declare(lib)
            return lib
    return None


def _mapped() -> list[str]:
    """The files mapped into this process (Linux), in order."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    return list(dict.fromkeys(line.split()[-1] for line in lines if "/" in line))


def _declare(lib: Any) -> None:
    """The argument types of the functions used (ctypes converts Python ints once each)."""
    p, i, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    gemm = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
    batched = [p, i, i, i, i, i, p, p, i, i, i64, p, i, i, i64, p, p, i, i, i64, i, i, i]
    for name, types in (
        ("cublasCreate_v2", [p]),
        ("cublasSetStream_v2", [p, p]),
        ("cublasSetWorkspace_v2", [p, p, ctypes.c_size_t]),
        ("cublasGemmEx", gemm),
        ("cublasGemmStridedBatchedEx", batched),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = types, ctypes.c_int


def matmul(a: Array, b: Array) -> Array:
    """numpy's ``matmul`` of two cupy arrays (see the module's docstring)."""
    cp = array_module(GPU)
    blas = _open(cp)
    if (
        blas is None
        or a.dtype != b.dtype
        or a.dtype.char not in DATA_TYPES
        or min(a.ndim, b.ndim) == 0
        or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]
    ):
        return cp.matmul(a, b)  # its own result, or its own error
    x = a[None, :] if a.ndim == 1 else a
    y = b[:, None] if b.ndim == 1 else b
    (m, k), n = x.shape[-2:], y.shape[-1]
    batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    out = product(cp, blas, x, y, batch, (m, n, k))
    if b.ndim == 1:
        out = out[..., 0]
    if a.ndim == 1:
        out = out[..., 0, :] if b.ndim > 1 else out[..., 0]
    return out


def product(
    cp: Any, blas: Blas, x: Array, y: Array, batch: tuple[int, ...], mnk: tuple[int, int, int]
) -> Array:
    """``x @ y`` into a new contiguous array of shape ``batch + (m, n)``."""
    m, n, k = mnk
    out = cp.empty((*batch, m, n), x.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    operands = []
    for v in (x, y):
        v = cp.broadcast_to(v, (*batch, *v.shape[-2:]))
        layout = _layout(v, batch)
        if layout is None:
            v = cp.ascontiguousarray(v)
            layout = _layout(v, batch)
        operands.append((v, layout))  # the array is kept alive until the call is made
    (_, la), (_, lb) = operands
    assert la is not None  # a contiguous array always has a layout
    assert lb is not None
    blas.gemm(cp, la, lb, out.reshape(math.prod(batch), m, n), m, n, k)
    return out


# -- the ops whose GPU form is a product here (their numpy forms: backends/numpy) ----------


def dot(a: Array, b: Array, k: int) -> Array:
    """``dot(a, b, k)``: numpy's ``a @ b`` where the numpy backend takes it, else
    ``np.tensordot``'s one product of ``a`` as a matrix and ``b`` as one."""
    if is_matmul(a.ndim, b.ndim, k):
        return matmul(a, b)
    lead, tail = a.shape[: a.ndim - k], b.shape[k:]
    rows = a.reshape(math.prod(lead), math.prod(a.shape[a.ndim - k :]))
    return matmul(rows, b.reshape(rows.shape[1], math.prod(tail))).reshape(*lead, *tail)


def sum_of_products(a: Array, b: Array, count: int) -> Array:
    """``reduce_sum(a * b) / count``: one product of ``a`` as a row and ``b`` as a column."""
    total = matmul(a.reshape(1, -1), b.reshape(-1, 1)).reshape(())
    return total / count if count != 1 else total
