"""The GPU backend's registration, checked on any machine with a fake cupy module."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest
from gpu_fakes import FakeGpuArray
from helpers import t32

import typed_nn as tn
from typed_nn import devices, ops
from typed_nn.backends.cupy import registration
from typed_nn.backends.cupy.kernel_source import expression
from typed_nn.ops.declare import _IMPLS, implementation, implemented_devices, out_implementation


def _cpu_ops() -> set[str]:
    """The catalogue: ops the numpy backend implements (not ones that tests register)."""
    return {
        op
        for op, per_device in _IMPLS.items()
        if any(_from_numpy_backend(k.fn) for k in per_device.get("CPU", []))
    }


def _from_numpy_backend(fn: object) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return isinstance(fn, np.ufunc) or module.startswith("typed_nn.backends.numpy")


def test_import_typed_nn_registers_no_gpu_implementation() -> None:
    code = (
        "import sys, typed_nn, typed_nn.ops\n"
        "from typed_nn.ops.declare import _IMPLS\n"
        "gpu = sorted(op for op, d in _IMPLS.items() if any(k.priority >= 0 for k in d.get('GPU', [])))\n"
        "print(gpu, 'typed_nn.backends.cupy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] False"


def test_first_request_for_cupy_registers_every_cpu_op_for_the_gpu(
    fake_cupy: types.ModuleType,
) -> None:
    assert not registration.registered()
    assert devices.array_module(tn.GPU) is fake_cupy
    assert registration.registered()
    missing = sorted(op for op in _cpu_ops() if "GPU" not in implemented_devices(op))
    assert missing == []


def test_shared_and_own_lists_cover_the_cpu_catalogue_exactly() -> None:
    listed = set(registration.shared()) | set(registration.GPU_OWN)
    assert not set(registration.shared()) & set(registration.GPU_OWN)
    assert listed == _cpu_ops()


def test_shared_ops_use_the_numpy_function_and_own_ops_replace_it(
    fake_cupy: types.ModuleType,
) -> None:
    registration.register()
    for op in registration.shared():
        assert implementation(op, tn.GPU) is implementation(op, tn.CPU), op
    for op, fn in registration.GPU_OWN.items():
        assert implementation(op, tn.GPU) is fn, op


def test_gpu_write_into_forms_are_the_element_wise_ones(fake_cupy: types.ModuleType) -> None:
    """They tell the region finder what joins a fused kernel: each op with a kernel expression
    has one exactly where the CPU does; other GPU nodes run their plain implementation."""
    registration.register()
    for op in _cpu_ops():
        cpu = out_implementation(op, tn.CPU)
        gpu = out_implementation(op, tn.GPU)
        if expression(op) is None:
            assert gpu is None, op
            continue
        assert (cpu is None) == (gpu is None), op


def test_register_twice_registers_once(fake_cupy: types.ModuleType) -> None:
    registration.register()
    before = len(_gpu_impls("add"))
    registration.register()
    assert len(_gpu_impls("add")) == before == 1


def _gpu_impls(op: str) -> list[object]:
    from typed_nn.ops import declare

    return list(declare._IMPLS[op]["GPU"])


def test_module_of_tells_host_values_from_gpu_arrays(fake_cupy: types.ModuleType) -> None:
    assert devices.module_of(np.ones(2), 1.5, 2, np.float32(1)) is np
    assert devices.module_of(np.ones(2), FakeGpuArray([1.0])) is fake_cupy


def test_asarray_like_keeps_the_library_of_its_reference() -> None:
    r = devices.asarray_like(np.float32(2.0), np.ones(2, np.float32))
    assert isinstance(r, np.ndarray)
    assert r.shape == ()


def test_mixing_cpu_and_gpu_operands_is_a_device_error_at_build() -> None:
    gpu = tn.Tensor(FakeGpuArray(np.ones((2, 3), np.float32)), tn.Float32, tn.GPU, tn.Dim2)
    cpu = t32(np.ones((2, 3)))
    with pytest.raises(tn.DeviceError, match=r"cannot build add: operands live on different"):
        cpu + gpu
    with pytest.raises(
        tn.DeviceError,
        match=r"(?s)different devices.*move one: ops.to_device\(x, tn.CPU\) on operand 2, or "
        r"ops.to_device\(x, tn.GPU\) on the others",
    ):
        ops.maximum(cpu, gpu)
