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

__all__ = ["dot", "matmul", "sum_of_products"]

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
    """libcublas, a handle per device, and what each dtype's products pass to it."""

    def __init__(self, lib: Any, cp: Any) -> None:
        self.lib, self.cp = lib, cp
        self.handles: dict[int, tuple[int, Array]] = {}
        """Per device id: its handle, and the workspace it was given."""
        self.streams: dict[int, int] = {}
        """Per handle: the stream it was last bound to."""
        self._scalars = (ctypes.c_float(1.0), ctypes.c_float(0.0))
        self._doubles = (ctypes.c_double(1.0), ctypes.c_double(0.0))
        one32, zero32 = (ctypes.addressof(v) for v in self._scalars)
        one64, zero64 = (ctypes.addressof(v) for v in self._doubles)
        self.kinds = {
            char: (t, COMPUTE_64F, one64, zero64)
            if char == "d"
            else (t, COMPUTE_32F, one32, zero32)
            for char, t in DATA_TYPES.items()
        }
        """Per dtype char: its cudaDataType, compute type, and the addresses of 1 and 0."""

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise CublasError(f"cuBLAS {what} failed with status {status}")

    def handle(self) -> int:
        """The current device's handle, bound to the current stream with its workspace
        (``cublasSetStream`` gives a handle back the default workspace, so both are set)."""
        cp = self.cp
        device = cp.cuda.runtime.getDevice()
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

    def gemm(self, a: Layout, b: Layout, c: Array, count: int, mnk: tuple[int, int, int]) -> None:
        """``c = a @ b`` (``c`` new and contiguous, ``count`` products of ``m x n``). Row-major
        ``c`` is column-major ``c^T = b^T a^T``: cuBLAS computes that, with ``b`` first."""
        m, n, k = mnk
        t, compute, alpha, beta = self.kinds[c.dtype.char]
        (pa, opa, lda, sa), (pb, opb, ldb, sb) = a, b
        if count == 1:
            status = self.lib.cublasGemmEx(
                self.handle(), opb, opa, n, m, k, alpha, pb, t, ldb, pa, t, lda,
                beta, c.data.ptr, t, n, compute, GEMM_DEFAULT,
            )  # fmt: skip
            self.check(status, "cublasGemmEx")
            return
        status = self.lib.cublasGemmStridedBatchedEx(
            self.handle(), opb, opa, n, m, k, alpha, pb, t, ldb, sb, pa, t, lda, sa,
            beta, c.data.ptr, t, n, m * n, count, compute, GEMM_DEFAULT,
        )  # fmt: skip
        self.check(status, "cublasGemmStridedBatchedEx")


Layout = tuple[int, int, int, int]
"""An operand's matrices as cuBLAS reads them: the address of the first, ``op`` (N for
row-major, which is its transpose column-major; T for column-major), the leading dimension,
and the elements from one matrix of the batch to the next."""


def _layout(x: Array, batch: tuple[int, ...]) -> Layout | None:
    """How cuBLAS reads ``x`` (of shape ``batch + (rows, cols)`` after broadcasting) where it
    lies, or None where its memory is not one such layout (then it is copied contiguous)."""
    size, strides = x.itemsize, x.strides
    if len(strides) == 2:
        (s0, s1), stride = strides, 0
    else:
        *lead, s0, s1 = strides
        found = _batch_stride(batch, lead)
        if found is None or found % size:
            return None
        stride = found // size
    if s0 % size or s1 % size:
        return None
    s0, s1 = s0 // size, s1 // size
    rows, cols = x.shape[-2:]
    if (cols == 1 or s1 == 1) and (rows == 1 or s0 >= cols):
        op, ld = OP_N, s0 if rows > 1 else cols
    elif (rows == 1 or s0 == 1) and (cols == 1 or s1 >= rows):
        op, ld = OP_T, s1 if cols > 1 else rows
    else:
        return None
    if not 0 < ld <= INT_MAX:
        return None
    return x.data.ptr, op, ld, stride


def _batch_stride(batch: tuple[int, ...], strides: list[int]) -> int | None:
    """One stride (bytes) that steps through the batch dims in order (0 where broadcast), or
    None."""
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


_opened: dict[type, Blas | None] = {}
"""Per cupy array type (the tests' emulator has its own, a new one per test, beside cupy's)."""


def _open(array: Array) -> Blas | None:
    """libcublas as the cupy of ``array`` loaded it (None where it cannot be opened). The
    cupy emulator of the tests brings its own model of it (``cupy.cublas_model``)."""
    kind = type(array)
    if kind not in _opened:
        cp = array_module(GPU)
        lib = getattr(cp, "cublas_model", None) or _dlopen()
        _opened[kind] = None if lib is None else Blas(lib, cp)
    return _opened[kind]


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
    blas = _open(a)
    if (
        blas is None
        or a.dtype != b.dtype
        or a.dtype.char not in DATA_TYPES
        or min(a.ndim, b.ndim) == 0
        or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]
    ):
        return array_module(GPU).matmul(a, b)  # its own result, or its own error
    x = a[None, :] if a.ndim == 1 else a
    y = b[:, None] if b.ndim == 1 else b
    batch = () if x.ndim == y.ndim == 2 else _broadcast(x.shape[:-2], y.shape[:-2])
    if batch is None:
        return array_module(GPU).matmul(a, b)  # its own error
    out = product(blas, x, y, batch)
    if b.ndim == 1:
        out = out[..., 0]
    if a.ndim == 1:
        out = out[..., 0, :] if b.ndim > 1 else out[..., 0]
    return out


def _broadcast(s: tuple[int, ...], t: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy's broadcast of two batch shapes (None where they do not broadcast), without
    ``np.broadcast_shapes``'s arrays (10 us on a call's path)."""
    n = max(len(s), len(t))
    s, t = (1,) * (n - len(s)) + s, (1,) * (n - len(t)) + t
    if any(p != q and p != 1 and q != 1 for p, q in zip(s, t, strict=True)):
        return None
    return tuple(q if p == 1 else p for p, q in zip(s, t, strict=True))


def product(blas: Blas, x: Array, y: Array, batch: tuple[int, ...]) -> Array:
    """``x @ y`` into a new contiguous array of shape ``batch + (m, n)``."""
    cp = blas.cp
    (m, k), n = x.shape[-2:], y.shape[-1]
    out = cp.empty((*batch, m, n), x.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    operands = []
    for v in (x, y):
        if v.shape[:-2] != batch:
            v = cp.broadcast_to(v, (*batch, *v.shape[-2:]))
        layout = _layout(v, batch)
        if layout is None:
            v = cp.ascontiguousarray(v)
            layout = _layout(v, batch)
        operands.append((v, layout))  # the array is kept alive until the call is made
    (_, la), (_, lb) = operands
    assert la is not None  # a contiguous array always has a layout
    assert lb is not None
    blas.gemm(la, lb, out, math.prod(batch), (m, n, k))
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
