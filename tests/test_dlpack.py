"""DLPack: typed_nn tensors exported to numpy (and PyTorch where installed) and other libraries'
arrays wrapped as tensors, both without copying; tags checked on the way in."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import ops


def test_numpy_reads_a_tensor_without_copying() -> None:
    t = tn.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), tn.Float32, tn.CPU, tn.Dim2)
    a = np.from_dlpack(t)
    assert a.dtype == np.float32
    assert a.shape == (2, 2)
    a[0, 0] = 10.0  # the same memory: the tensor sees the write
    assert t.numpy()[0, 0] == 10.0
    assert t.__dlpack_device__() == (1, 0)


def test_an_evaluated_result_is_exported_as_a_copy() -> None:
    """A result's memory is its node's cached value, and consumers such as PyTorch ignore
    DLPack's read-only flag: what they get is a copy (#32: a torch write changed later
    evaluations)."""
    x = tn.tensor(np.array([1.0, 2.0]), tn.Float64, tn.CPU, tn.Dim1)
    e = x * 2.0
    a = np.from_dlpack(tn.evaluate(e))
    np.testing.assert_array_equal(a, [2.0, 4.0])
    a[0] = 5.0  # the consumer's own copy
    np.testing.assert_array_equal(tn.evaluate(e * 2.0).numpy(), [4.0, 8.0])
    with pytest.raises(tn.ReadOnlyError, match="cannot export a read-only tensor through DLPack"):
        tn.evaluate(e).__dlpack__(copy=False)
    with pytest.raises(BufferError, match="without a copy"):  # what DLPack consumers catch
        tn.evaluate(e).__dlpack__(copy=False)


def test_a_lazy_expression_is_evaluated_then_exported_as_a_copy() -> None:
    """``torch.from_dlpack(x * 2.0)``, as ``np.asarray(x * 2.0)``: the value, evaluated (it
    had been torch's "invalid capsule" error), in memory the consumer owns."""
    x = tn.tensor(np.array([1.0, 2.0]), tn.Float64, tn.CPU, tn.Dim1)
    e = x * 2.0
    assert e.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(e)
    np.testing.assert_array_equal(a, [2.0, 4.0])
    a[0] = 5.0
    np.testing.assert_array_equal(tn.evaluate(e).numpy(), [2.0, 4.0])
    with pytest.raises(BufferError, match="without a copy"):
        e.__dlpack__(copy=False)


def test_an_own_tensor_is_exported_without_a_copy() -> None:
    x = tn.tensor(np.array([1.0, 2.0]), tn.Float64, tn.CPU, tn.Dim1)
    np.from_dlpack(x)[0] = 7.0
    assert x.numpy()[0] == 7.0


@pytest.mark.parametrize(
    ("args", "wrong"),
    [
        ((np.float64, tn.CPU, tn.Dim1), "elem must be an element tag, got float64"),
        ((tn.Float64, "cpu", tn.Dim1), "device must be a device tag, got str 'cpu'"),
        ((tn.Float64, tn.CPU, 1), "dim must be a rank tag, got int 1"),
    ],
)
def test_from_dlpack_checks_its_tag_arguments(args: tuple[Any, ...], wrong: str) -> None:
    with pytest.raises(tn.TagError, match=f"from_dlpack: {wrong}"):
        tn.from_dlpack(np.arange(3.0), *args)


def test_from_dlpack_wraps_a_numpy_array_without_copying() -> None:
    a = np.arange(6.0).reshape(2, 3)
    t = tn.from_dlpack(a, tn.Float64, tn.CPU, tn.Dim2)
    assert isinstance(t, tn.Tensor)
    assert t.shape == (2, 3)
    t.assign(t * 2.0 + 1.0)  # written in place: the numpy array sees it
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3) * 2.0 + 1.0)
    np.testing.assert_array_equal(ops.reduce_sum(t).numpy(), a.sum())


def test_from_dlpack_checks_element_rank_and_device() -> None:
    a = np.zeros((2, 3), np.float64)
    with pytest.raises(tn.ElemTypeError, match=r"(?s)Float32.*float64"):
        tn.from_dlpack(a, tn.Float32, tn.CPU, tn.Dim2)
    with pytest.raises(tn.RankError, match=r"(?s)rank 2.*declared : rank 1"):
        tn.from_dlpack(a, tn.Float64, tn.CPU, tn.Dim1)
    on_gpu: Any = _OnCuda()
    with pytest.raises(tn.DeviceError, match=r"(?s)on GPU as a CPU tensor.*never moves it"):
        tn.from_dlpack(on_gpu, tn.Float32, tn.CPU, tn.Dim1)
    with pytest.raises(tn.OperandError, match=r"(?s)needs a DLPack producer, got list.*tn\.tensor"):
        tn.from_dlpack([1.0, 2.0], tn.Float64, tn.CPU, tn.Dim1)


class _OnCuda:
    """A DLPack producer whose memory is on a CUDA device (nothing to export)."""

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise AssertionError("not reached: the device is checked first")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


def test_pytorch_shares_memory_both_ways() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional anchor)")
    t = tn.tensor(np.array([1.0, 2.0, 3.0], np.float32), tn.Float32, tn.CPU, tn.Dim1)
    pt = torch.from_dlpack(t)
    pt[1] = 20.0
    assert t.numpy()[1] == 20.0
    back = tn.from_dlpack(torch.arange(4, dtype=torch.float64), tn.Float64, tn.CPU, tn.Dim1)
    np.testing.assert_array_equal(back.numpy(), [0.0, 1.0, 2.0, 3.0])


@pytest.mark.gpu
def test_gpu_tensors_and_other_gpu_arrays_share_memory_through_dlpack(cupy_module: Any) -> None:
    """cupy and, where it has CUDA, PyTorch: both ways, no copy, writes seen across."""
    if getattr(cupy_module, "emulated", False):
        pytest.skip("the emulator has no device memory to share")
    a = cupy_module.arange(6, dtype=np.float32).reshape(2, 3)
    t = tn.from_dlpack(a, tn.Float32, tn.GPU, tn.Dim2)
    assert t.__dlpack_device__()[0] == 2  # kDLCUDA
    t.assign(t * 2.0 + 1.0)  # computed aside, copied into the shared memory
    np.testing.assert_array_equal(a.get(), np.arange(6.0).reshape(2, 3) * 2.0 + 1.0)
    back = cupy_module.from_dlpack(t)
    assert back.data.ptr == a.data.ptr
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    shared = torch.from_dlpack(t)  # torch passes its stream: cupy orders the exchange on it
    shared.mul_(10.0)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.numpy(), (np.arange(6.0).reshape(2, 3) * 2.0 + 1.0) * 10.0)
    from_torch = tn.from_dlpack(torch.ones(4, device="cuda"), tn.Float32, tn.GPU, tn.Dim1)
    np.testing.assert_array_equal(ops.reduce_sum(from_torch).numpy(), 4.0)


def _expanded(base: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    """A writable view whose elements may share places (as torch's ``expand`` exports)."""
    return np.lib.stride_tricks.as_strided(base, shape, strides, writeable=True)


def test_memory_whose_elements_share_places_is_not_written() -> None:
    """A write through an expanded view keeps one of the values each place receives: PyTorch
    refuses it, and so does typed_nn (outside tester 5, r6)."""
    base = np.zeros(3)
    t = tn.from_dlpack(_expanded(base, (4, 3), (0, 8)), tn.Float64, tn.CPU, tn.Dim2)
    with pytest.raises(
        tn.ReadOnlyError,
        match=r"(?s)cannot assign: the tensor's memory is read-only.*several of its elements "
        r"are one place in memory .*strides \(0, 8\)",
    ):
        t.assign(t + 1.0)

    def double(x: tn.Tensor[tn.Float64, tn.CPU, tn.Dim2]) -> None:
        x.assign(x * 2.0)

    step = tn.compile(double)
    step(tn.zeros((4, 3), tn.Float64, tn.CPU))
    with pytest.raises(tn.ReadOnlyError, match="several of its elements are one place"):
        step(t)
    np.testing.assert_array_equal(base, np.zeros(3))
    tn.evaluate(t * 2.0)  # reading it is fine


@pytest.mark.parametrize(
    ("shape", "strides", "overlaps"),
    [
        ((3, 4), (32, 8), False),  # contiguous
        ((4, 3), (8, 32), False),  # transposed
        ((4, 3), (0, 8), True),  # broadcast rows
        ((5, 4), (8, 8), True),  # sliding windows
        ((2, 3), (8, 16), False),  # interleaved, apart
        ((2, 3), (16, 8), True),  # rows overlapping by one element
        ((3, 1), (0, 8), True),
        ((1, 5), (0, 16), False),  # a zero stride over one element
    ],
)
def test_overlapping_places_are_counted_exactly(
    shape: tuple[int, ...], strides: tuple[int, ...], overlaps: bool
) -> None:
    from typed_nn.data.tensor import overlaps_itself

    view = _expanded(np.zeros(64), shape, strides)
    places = {sum(i * s for i, s in zip(ix, strides, strict=True)) for ix in np.ndindex(shape)}
    assert (len(places) < view.size) is overlaps
    assert overlaps_itself(view) is overlaps
