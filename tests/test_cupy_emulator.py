"""The cupy emulator holds the GPU backend to cupy's rules: if it were lenient, the GPU tests
run on it would pass code that fails on a real GPU."""

from __future__ import annotations

from typing import Any

import cupy_emulator
import numpy as np
import pytest
from gpu_fakes import have_compiler

cp: Any = cupy_emulator.install()


def test_no_implicit_transfer_to_the_host() -> None:
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(cp.zeros(3, np.float32))


@pytest.mark.parametrize(
    "call",
    [
        lambda a, h: a + h,
        lambda a, h: h * a,
        lambda a, h: np.exp(h, out=a),
        lambda a, h: cp.maximum(a, h),
        lambda a, h: np.stack([a, h]),
        lambda a, h: np.tensordot(a, h, axes=1),
    ],
)
def test_host_arrays_are_refused_by_device_operations(call: Any) -> None:
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy\.ndarray'>"):
        call(cp.ones(3, np.float32), np.ones(3, np.float32))


def test_numpy_calls_reach_cupy_and_results_stay_on_the_device() -> None:
    a = cp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = cp.empty((2,), np.float32)
    assert np.add.reduce(a, 1, out=out) is out
    assert out.get().tolist() == [3.0, 12.0]
    total = np.sum(a)
    assert isinstance(total, cp.ndarray)
    assert total.shape == ()  # 0-d, never a numpy scalar
    assert isinstance(np.tensordot(a, a.T, axes=1), cp.ndarray)
    assert isinstance(np.exp(a) * 2.0, cp.ndarray)


def test_what_cupy_lacks_is_missing() -> None:
    a = cp.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="keyword arguments not supported by cupy: \\['where'\\]"):
        np.exp(a, out=a, where=a > 0)
    with pytest.raises(TypeError, match="keyword arguments not supported by cupy: \\['mode'\\]"):
        cp.take(a, cp.asarray(np.array([1, 0])), axis=0, mode="clip")
    with pytest.raises(TypeError, match=r"no implementation found for 'numpy\.median'"):
        np.median(a)
    with pytest.raises(NotImplementedError, match="reduction for maximum is not supported"):
        np.maximum.reduce(a, axis=1)
    with pytest.raises(AttributeError):
        a.ctypes  # noqa: B018 - device memory has no host address


@pytest.mark.skipif(not have_compiler(), reason="the emulator's kernels need g++")
def test_elementwise_kernels_run_their_source_with_cupys_argument_rules() -> None:
    kernel = cp.ElementwiseKernel(
        "float32 x, raw float32 b, float32 s", "float32 y", "y = x * s + b[i % b.size()];", "k"
    )
    x = cp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = cp.asarray(np.array([10, 20, 30], np.float32))
    y = cp.empty((2, 3), np.float32)
    assert kernel(x, b, 2.0, y) is y
    assert y.get().tolist() == [[10, 22, 34], [16, 28, 40]]
    with pytest.raises(TypeError, match=r"Type is mismatched\. x float16 float32"):
        kernel(cp.zeros((2, 3), np.float16), b, 2.0, y)  # even a safe cast is refused
    with pytest.raises(TypeError, match=r"Type is mismatched\. y float64 float32"):
        kernel(x, b, 2.0, cp.zeros((2, 3), np.float64))
    with pytest.raises(TypeError, match="Unsupported type"):
        kernel(np.zeros((2, 3), np.float32), b, 2.0, y)


@pytest.mark.parametrize(
    "write",
    [
        lambda a: np.copyto(a, a.T),
        lambda a: np.add(a, a.T, out=a),
        lambda a: a[1:].__setitem__(Ellipsis, a[:-1]),
        lambda a: np.multiply(a[:, :2], 2.0, out=a[:, 1:]),
    ],
)
def test_a_write_overlapping_what_it_reads_is_refused(write: Any) -> None:
    """cupy copies nothing aside: on a GPU these are undefined."""
    a = cp.asarray(np.arange(9, dtype=np.float32).reshape(3, 3))
    with pytest.raises(cupy_emulator.OverlapError, match="cupy copies nothing aside"):
        write(a)


def test_a_write_into_its_own_operand_element_for_element_is_allowed() -> None:
    a = cp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    a *= 2.0
    np.add(a, a, out=a)
    np.copyto(a[0], a[0])
    assert a.get().tolist() == [[0, 4, 8], [12, 16, 20]]


def test_host_synchronisations_are_declared_where_cupy_declares_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(cp._core.syncdetect, "_declare_synchronize", lambda: seen.append(True))
    a = cp.asarray(np.ones(3, np.float32))
    b = a * 2.0
    assert seen == []  # device work and host-to-device copies do not wait
    a.get(), float(b[0]), bool(b[1]), b.sum().item(), b.tolist()
    cp.cuda.Device().synchronize()
    assert len(seen) == 6


def _capturing_stream() -> tuple[Any, Any]:
    return cp.cuda.Stream(non_blocking=True), cp.cuda.MemoryPool()


def test_a_capture_runs_nothing_and_a_launch_replays_it_on_the_same_memory() -> None:
    a = cp.ones(3, np.float32)
    stream, pool = _capturing_stream()
    with cp.cuda.using_allocator(pool.malloc), stream:
        stream.begin_capture()
        assert stream.is_capturing()
        np.multiply(a, 2, out=a)
        b = a + 1
        graph = stream.end_capture()
    np.testing.assert_array_equal(a.get(), [1, 1, 1])  # nothing ran
    assert np.isnan(b.get()).all()  # what the capture allocated holds no result yet
    graph.launch()
    np.testing.assert_array_equal(b.get(), [3, 3, 3])
    graph.launch()
    np.testing.assert_array_equal(a.get(), [4, 4, 4])
    np.testing.assert_array_equal(b.get(), [5, 5, 5])


@pytest.mark.parametrize(
    ("work", "error"),
    [
        (lambda a: float(a.sum()), "operation not permitted when stream is capturing"),
        (lambda a: a + cp.asarray(np.ones(3, np.float32)), r"host-to-device copy"),
        (lambda a: cp.cuda.Device().synchronize(), "host synchronisation"),
    ],
    ids=["host value", "host-to-device copy", "synchronize"],
)
def test_what_a_capture_cannot_hold_raises_and_invalidates_it(work: Any, error: str) -> None:
    a = cp.ones(3, np.float32)
    stream, pool = _capturing_stream()
    with cp.cuda.using_allocator(pool.malloc), stream:
        stream.begin_capture()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match=error):
            work(a)
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="Invalidated"):
            stream.end_capture()
    assert not stream.is_capturing()


def test_a_capture_allocates_from_a_private_pool_on_its_own_stream() -> None:
    a = cp.ones(3, np.float32)
    stream, pool = _capturing_stream()
    with stream:
        stream.begin_capture()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="default memory pool"):
            a + 1
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
            stream.end_capture()
    with cp.cuda.using_allocator(pool.malloc):
        stream.begin_capture()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="outside the graph"):
            a + 1  # the current stream is not the capturing one
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
            stream.end_capture()
    with pytest.raises(RuntimeError, match="cannot capture on the default"):
        cp.cuda.Stream.null.begin_capture()
