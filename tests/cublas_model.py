"""libcublas's functions that typed_nn calls (``typed_nn/backends/cupy/blas.py``), modelled on
the cupy emulator's host memory: the cupy emulator's ``cupy.cublas_model``.

It reads and writes raw addresses column-major, as cuBLAS does, so the layouts typed_nn
derives from numpy strides (``op``, leading dimensions, batch strides) are checked against
cuBLAS's own meaning of them, and it refuses what cuBLAS refuses (``CUBLAS_STATUS_INVALID_VALUE``
for a leading dimension too small). Stricter than cuBLAS where a captured step would go wrong
silently: a product while a stream captures must be bound to the capturing stream and have a
workspace of the caller's own (else cuBLAS may allocate during the capture). While capturing,
a product is recorded and what it wrote is given back at the end of the capture, as every
emulated operation.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

import cupy_capture as capture
import numpy as np

SUCCESS, INVALID_VALUE, NOT_INITIALIZED = 0, 7, 1
DTYPES: dict[int, np.dtype[Any]] = {
    0: np.dtype(np.float32),
    1: np.dtype(np.float64),
    2: np.dtype(np.float16),
}
"""cudaDataType -> dtype."""
COMPUTE = {68: "32F", 70: "64F"}
OP_N, OP_T = 0, 1


def _matrices(
    ptr: int, dtype: np.dtype[Any], rows: int, cols: int, ld: int, count: int, stride: int
) -> np.ndarray:
    """The ``count`` column-major ``rows x cols`` matrices at ``ptr`` (leading dim ``ld``,
    ``stride`` elements apart), as a writable view of that memory."""
    size = dtype.itemsize
    span = ((count - 1) * stride + (cols - 1) * ld + rows) * size
    memory: Any = (ctypes.c_char * span).from_address(ptr)
    flat = np.frombuffer(memory, dtype)
    return np.lib.stride_tricks.as_strided(
        flat, (count, rows, cols), (stride * size, size, ld * size)
    )


class CublasModel:
    """The handles, their streams and workspaces, and the products (see the module)."""

    def __init__(self) -> None:
        self._ids = itertools.count(0x7000)
        self.handles: dict[int, dict[str, int | None]] = {}
        self.products = 0
        """Products computed (each launch of a captured one counts again)."""

    def cublasCreate_v2(self, ref: Any) -> int:
        handle = next(self._ids)
        self.handles[handle] = {"stream": 0, "workspace": None}
        ref._obj.value = handle
        return SUCCESS

    def cublasSetStream_v2(self, handle: int, stream: int) -> int:
        if handle not in self.handles:
            return NOT_INITIALIZED
        # as cuBLAS: binding a stream gives the handle back its default workspace
        self.handles[handle] = {"stream": stream, "workspace": None}
        return SUCCESS

    def cublasSetWorkspace_v2(self, handle: int, ptr: int, size: int) -> int:
        if handle not in self.handles or not ptr or size <= 0:
            return INVALID_VALUE
        self.handles[handle]["workspace"] = ptr
        return SUCCESS

    def cublasGemmEx(
        self, handle: int, ta: int, tb: int, m: int, n: int, k: int, alpha: int,
        a: int, at: int, lda: int, b: int, bt: int, ldb: int, beta: int,
        c: int, ct: int, ldc: int, compute: int, algo: int,
    ) -> int:  # fmt: skip
        return self.cublasGemmStridedBatchedEx(
            handle, ta, tb, m, n, k, alpha, a, at, lda, 0, b, bt, ldb, 0, beta, c, ct, ldc,
            0, 1, compute, algo,
        )  # fmt: skip

    def cublasGemmStridedBatchedEx(
        self, handle: int, ta: int, tb: int, m: int, n: int, k: int, alpha: int,
        a: int, at: int, lda: int, sa: int, b: int, bt: int, ldb: int, sb: int, beta: int,
        c: int, ct: int, ldc: int, sc: int, count: int, compute: int, algo: int,
    ) -> int:  # fmt: skip
        """``C_i = alpha op(A_i) op(B_i) + beta C_i``, column-major, for i < count."""
        if handle not in self.handles:
            return NOT_INITIALIZED
        dtype = DTYPES.get(ct)
        if dtype is None or at != ct or bt != ct or ta not in (0, 1) or tb not in (0, 1):
            return INVALID_VALUE
        if COMPUTE.get(compute) != ("64F" if dtype == np.float64 else "32F"):
            return INVALID_VALUE
        a_rows, b_rows = (m if ta == OP_N else k), (k if tb == OP_N else n)
        if min(m, n, k, count) < 0 or lda < max(1, a_rows) or ldb < max(1, b_rows):
            return INVALID_VALUE
        if ldc < max(1, m):
            return INVALID_VALUE
        self._check_capture(handle)
        scalar = ctypes.c_double if compute == 70 else ctypes.c_float
        al, be = scalar.from_address(alpha).value, scalar.from_address(beta).value
        x = _matrices(a, dtype, a_rows, k if ta == OP_N else m, lda, count, sa)
        y = _matrices(b, dtype, b_rows, n if tb == OP_N else k, ldb, count, sb)
        out = _matrices(c, dtype, m, n, ldc, count, sc)
        opa = x if ta == OP_N else x.transpose(0, 2, 1)
        opb = y if tb == OP_N else y.transpose(0, 2, 1)

        def run() -> None:
            self.products += 1
            wide = np.dtype(np.float32) if dtype == np.float16 else dtype  # cuBLAS's 32F sums
            r = np.matmul(opa.astype(wide), opb.astype(wide))
            r = r * al if al != 1 else r
            out[...] = r if be == 0 else r + be * out.astype(wide)  # beta 0: C is not read

        if capture.capturing() is not None:
            capture.writing_raw(out, "cublasGemmEx")
            capture.record("cublasGemmEx", run)
        run()
        return SUCCESS

    def _check_capture(self, handle: int) -> None:
        """While a stream captures: the product must go on it, with a workspace of its own."""
        cap = capture.capturing()
        if cap is None:
            return
        if cap.invalid is not None:
            raise capture.CUDARuntimeError(
                f"cudaErrorStreamCaptureInvalidated: a cuBLAS product after {cap.invalid}"
            )
        bound = self.handles[handle]
        if bound["stream"] != cap.stream.ptr:
            cap.invalid = "a cuBLAS product on another stream"
            raise capture.CUDARuntimeError(
                f"emulated cuBLAS: a product on stream {bound['stream']:#x} while stream "
                f"{cap.stream.ptr:#x} captures: it would run now, outside the graph"
            )
        if bound["workspace"] is None:
            cap.invalid = "a cuBLAS product without a workspace of its own"
            raise capture.CUDARuntimeError(
                "emulated cuBLAS: a product while capturing, on cuBLAS's default workspace "
                "(it may allocate during the capture): cublasSetWorkspace after cublasSetStream"
            )
