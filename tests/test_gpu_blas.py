"""The GPU's matrix products (``backends/cupy/blas.py``: cuBLAS through a handle of typed_nn's
own, so CUDA graphs capture them) equal numpy's ``matmul`` for every layout they read in
place or copy: transposed and strided operands, batches with broadcast and strided batch
dims, vectors, empty and zero-length contractions, float16/32/64. On the emulator the model
of libcublas (``cublas_model.py``) reads raw memory column-major as cuBLAS does and refuses a
leading dimension cuBLAS would refuse; on a GPU the real one runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import tagged

import typed_nn as tn
from typed_nn import ops

Case = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]]


def _n(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape)


CASES: dict[str, Case] = {
    "matrices": lambda r: (_n(r, 5, 7), _n(r, 7, 3)),
    "a transposed": lambda r: (_n(r, 7, 5).T, _n(r, 7, 3)),
    "b transposed": lambda r: (_n(r, 5, 7), _n(r, 3, 7).T),
    "both transposed": lambda r: (_n(r, 7, 5).T, _n(r, 3, 7).T),
    "row slices": lambda r: (_n(r, 5, 10)[:, 2:9], _n(r, 9, 3)[1:8]),
    "every other column": lambda r: (_n(r, 5, 14)[:, ::2], _n(r, 7, 3)),
    "reversed rows": lambda r: (_n(r, 5, 7)[::-1], _n(r, 7, 3)),
    "matrix @ vector": lambda r: (_n(r, 5, 7), _n(r, 7)),
    "vector @ matrix": lambda r: (_n(r, 7), _n(r, 7, 3)),
    "vector @ vector": lambda r: (_n(r, 7), _n(r, 7)),
    "strided vector": lambda r: (_n(r, 5, 7), _n(r, 14)[::2]),
    "one row": lambda r: (_n(r, 1, 7), _n(r, 7, 3)),
    "one column": lambda r: (_n(r, 5, 1), _n(r, 1, 3)),
    "a column of a matrix as rows": lambda r: (_n(r, 7, 5)[:, 1:2].T, _n(r, 7, 3)),
    "batched": lambda r: (_n(r, 4, 5, 7), _n(r, 4, 7, 3)),
    "batched @ matrix": lambda r: (_n(r, 4, 5, 7), _n(r, 7, 3)),
    "matrix @ batched": lambda r: (_n(r, 5, 7), _n(r, 4, 7, 3)),
    "broadcast batch dims": lambda r: (_n(r, 2, 1, 5, 7), _n(r, 1, 3, 7, 3)),
    "rank 4 batches": lambda r: (_n(r, 2, 3, 5, 7), _n(r, 2, 3, 7, 3)),
    "heads transposed": lambda r: (_n(r, 2, 5, 3, 7).transpose(0, 2, 1, 3), _n(r, 2, 3, 7, 4)),
    "batch of transposes": lambda r: (_n(r, 4, 7, 5).transpose(0, 2, 1), _n(r, 4, 7, 3)),
    "strided batch": lambda r: (_n(r, 8, 5, 7)[::2], _n(r, 4, 7, 3)),
    "batched @ vector": lambda r: (_n(r, 4, 5, 7), _n(r, 7)),
    "empty rows": lambda r: (_n(r, 0, 7), _n(r, 7, 3)),
    "empty contraction": lambda r: (_n(r, 5, 0), _n(r, 0, 3)),
}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("case", list(CASES))
def test_a_product_equals_numpys_matmul(cupy_module: Any, case: str, dtype: Any) -> None:
    from typed_nn.backends.cupy import blas

    a, b = (v.astype(dtype) for v in CASES[case](np.random.default_rng(0)))
    # cupy.asarray keeps no strides: the same views, taken of device arrays
    a_dev, b_dev = _device_views(cupy_module, case, dtype)
    model = getattr(cupy_module, "cublas_model", None)  # the emulator's libcublas
    before = model.products if model else 0
    got = blas.matmul(a_dev, b_dev)
    if model and got.size and a.shape[-1]:
        assert model.products == before + 1  # cuBLAS computed it, not cupy's matmul
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == want.shape
    assert got.dtype == dtype
    tol = {np.float64: 1e-12, np.float32: 1e-5, np.float16: 1e-2}[dtype]
    np.testing.assert_allclose(got.get().astype(np.float64), want, rtol=tol, atol=tol * 4)


def _device_views(cp: Any, case: str, dtype: Any) -> tuple[Any, Any]:
    """The case's operands as views of device arrays, with the case's strides."""

    class Device:
        """``np.random.Generator``'s ``standard_normal`` making device arrays."""

        def __init__(self) -> None:
            self.rng = np.random.default_rng(0)

        def standard_normal(self, shape: tuple[int, ...]) -> Any:
            return cp.asarray(self.rng.standard_normal(shape).astype(dtype))

    a, b = CASES[case](Device())  # type: ignore[arg-type]
    return a, b


@pytest.mark.gpu
def test_products_of_other_dtypes_are_cupys(cupy_module: Any) -> None:
    from typed_nn.backends.cupy import blas

    x = np.arange(6).reshape(2, 3)
    a = cupy_module.asarray(x)
    np.testing.assert_array_equal(blas.matmul(a, a.T).get(), x @ x.T)


@pytest.mark.gpu
def test_dot_contracts_leading_dims_as_tensordot(cupy_module: Any) -> None:
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 3, 5)), rng.standard_normal((3, 5, 2))
    a, b = tagged(x, tn.Float64, tn.GPU), tagged(w, tn.Float64, tn.GPU)
    u: Any = ops
    got = tn.evaluate(u.dot(a, b, 2)).numpy()
    np.testing.assert_allclose(got, np.tensordot(x, w, axes=2), rtol=1e-12)


@pytest.mark.gpu
def test_a_status_other_than_success_raises(cupy_module: Any) -> None:
    from typed_nn.backends.cupy import blas

    a = cupy_module.asarray(np.ones((4, 4), np.float32))
    lib = blas._open(a)
    assert lib is not None
    bad = (a.data.ptr, blas.OP_N, 0, 0)  # a leading dimension cuBLAS refuses
    with pytest.raises(blas.CublasError, match="cublasGemmEx failed with status 7"):
        lib.gemm(bad, bad, cupy_module.empty((4, 4), np.float32), 1, (4, 4, 4))
