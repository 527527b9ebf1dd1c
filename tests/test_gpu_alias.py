"""Targets the program reads through a view of themselves are written right on the GPU.

numpy copies an operand aside where a write overlaps it; cupy does not (its copy and
element-wise kernels, and ``cudaMemcpy``, read elements other threads already wrote), so every
such write must go through a temporary. On the emulator an unguarded overlapping write is an
``OverlapError``; on a GPU it is wrong numbers, more of them at sizes spanning many thread
blocks (hence sizes up to 1024 x 1024). Each result is compared with the CPU backend's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import tolerance

import typed_nn as tn
from typed_nn import ops

Untyped = Any
Expr = Callable[[Untyped], Untyped]
TOL = tolerance(tn.Float32)

# Read through the target's transpose (a view of it, or a value computed from one).
OF_ITS_TRANSPOSE: dict[str, Expr] = {
    "(w + w.T) / 2": lambda w: 0.5 * (w + ops.transpose(w)),
    "w.T": lambda w: ops.transpose(w),
    "2 w.T": lambda w: ops.transpose(w) * 2.0,
    "relu(w.T) - w": lambda w: ops.relu(ops.transpose(w)) - w,
    "reshape(w.T)": lambda w: ops.reshape(ops.transpose(w), w.shape),
    "w @ w.T": lambda w: w @ ops.transpose(w),
    "softmax(w.T)": lambda w: ops.softmax(ops.transpose(w)),
    "MShadow update": lambda w: -0.1 * (ops.transpose(w) + 0.01 * w),
}
VIEWS = {"w.T", "reshape(w.T)"}
"""Whose value is a view of the target itself."""


def _square(device: type[tn.DeviceTag], n: int) -> Untyped:
    values = np.random.default_rng(n).standard_normal((n, n)) / np.sqrt(n)  # products O(1)
    return tn.tensor(values.astype(np.float32), tn.Float32, device, tn.Dim2)


def _assign(w: Untyped, expr: Expr, compiled: bool) -> None:
    """``w.assign(expr(w))``, eagerly or as a compiled step run twice (the second replays)."""
    if not compiled:
        w.assign(expr(w))
        return

    def step() -> None:
        w.assign(expr(w))

    program = tn.compile(step)
    program()
    program()


@pytest.mark.gpu
@pytest.mark.parametrize("compiled", [False, True], ids=["assign", "compiled"])
@pytest.mark.parametrize("n", [3, 257, 1024])
@pytest.mark.parametrize("name", OF_ITS_TRANSPOSE)
def test_a_target_read_through_its_transpose_is_written_right(
    cupy_module: Any, name: str, n: int, compiled: bool
) -> None:
    on_cpu, on_gpu = _square(tn.CPU, n), _square(tn.GPU, n)
    for w in (on_cpu, on_gpu):
        _assign(w, OF_ITS_TRANSPOSE[name], compiled)
    np.testing.assert_allclose(on_gpu.numpy(), on_cpu.numpy(), rtol=TOL["rtol"], atol=TOL["atol"])


# Read through an overlapping block of the memory the target is a block of.
OF_ITS_NEIGHBOUR: list[Any] = [
    pytest.param(lambda b: b, id="b"),
    pytest.param(lambda b: b * 2.0, id="2 b"),
    pytest.param(lambda b: ops.exp(b) - b, id="exp(b) - b"),
    pytest.param(lambda b: ops.softmax(b), id="softmax(b)"),
]


@pytest.mark.gpu
@pytest.mark.parametrize("shift", [1, 1000])
@pytest.mark.parametrize("expr", OF_ITS_NEIGHBOUR)
def test_a_target_read_through_an_overlapping_block_is_written_right(
    cupy_module: Any, expr: Expr, shift: int
) -> None:
    """``a = m[:n]`` written from ``b = m[shift:shift + n]``: the same memory, shifted."""
    n = 1 << 20
    values = np.random.default_rng(shift).standard_normal(n + shift).astype(np.float32)
    got = []
    for device in (tn.CPU, tn.GPU):
        memory = tn.devices.array_module(device).asarray(values.copy())
        a: Untyped = tn.Tensor(memory[:n], tn.Float32, device, tn.Dim1)
        b: Untyped = tn.Tensor(memory[shift:], tn.Float32, device, tn.Dim1)
        a.assign(expr(b))
        got.append(a.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=TOL["rtol"], atol=TOL["atol"])


@pytest.mark.gpu
def test_a_transposed_view_as_the_target_is_written_right(cupy_module: Any) -> None:
    """The target is the transpose of the tensor its value is computed from."""
    got = []
    for device in (tn.CPU, tn.GPU):
        w = _square(device, 257)
        target: Untyped = tn.Tensor(w.array.T, tn.Float32, device, tn.Dim2)
        target.assign(ops.tanh(w) + 1.0)
        got.append(w.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=TOL["rtol"], atol=TOL["atol"])


@pytest.mark.optimiser  # debug mode runs node by node: no fused kernel writes in place
@pytest.mark.gpu
@pytest.mark.parametrize("reads_itself", [True, False], ids=["w = f(w, g)", "out = f(g)"])
def test_an_element_wise_assign_writes_its_target_in_one_pass(
    cupy_module: Any, reads_itself: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``w.assign(-0.01 * (g + 0.001 * w))``: one fused kernel writing into ``w`` itself, no
    buffer computed aside and copied (a second pass over the data)."""
    tn.devices.array_module(tn.GPU)  # the GPU backend registered first
    copies: list[object] = []
    real_copy = tn.devices.device_of(tn.GPU).copy
    monkeypatch.setattr(tn.devices, "_DEVICES", {**tn.devices._DEVICES})  # restored after

    def counted(dst: Any, src: Any) -> None:
        copies.append(dst)
        real_copy(dst, src)

    tn.devices.register_device(dataclasses.replace(tn.devices.device_of(tn.GPU), copy=counted))
    got = []
    for device in (tn.CPU, tn.GPU):
        values = np.linspace(-1.0, 1.0, 4096, dtype=np.float32)
        w: Untyped = tn.tensor(values, tn.Float32, device, tn.Dim1)
        g: Untyped = tn.tensor(values[::-1].copy(), tn.Float32, device, tn.Dim1)
        memory = w.array
        for _ in range(2):  # the second from the plan cache
            if reads_itself:
                w.assign(-0.01 * (g + 0.001 * w))
            else:
                w.assign(ops.tanh(0.7 * g) * ops.sigmoid(1.3 * g) + 0.5 * g)
        assert w.array is memory
        got.append(w.numpy())
    assert copies == []
    np.testing.assert_allclose(got[1], got[0], rtol=TOL["rtol"], atol=TOL["atol"])
