"""astype and to_device: values, no-op conversions, errors, and the lazy GPU path."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest
from helpers import t32, t64

import typed_nn as tn
from typed_nn import ops


@pytest.mark.parametrize("elem", [tn.Float32, tn.Float64, tn.Int32, tn.Int64])
def test_astype_matches_numpy(elem: type[tn.ElemTag]) -> None:
    data = np.array([[1.7, -1.7, 0.0], [2.5, -3.5, 100.25]])
    x = t64(data)
    out = ops.astype(x, elem)
    assert out.elem is elem
    result = out.numpy()
    assert result.dtype == elem.dtype
    np.testing.assert_array_equal(result, data.astype(elem.dtype))


def test_astype_to_the_same_element_returns_the_operand() -> None:
    x = t32(np.ones(3))
    assert ops.astype(x, tn.Float32) is x


def test_astype_composes_with_float_ops() -> None:
    ints = tn.tensor([1, 4, 9], tn.Int32, tn.CPU, tn.Dim1)
    np.testing.assert_allclose(ops.sqrt(ops.astype(ints, tn.Float32)).numpy(), [1.0, 2.0, 3.0])


def test_astype_rejects_a_non_tag() -> None:
    with pytest.raises(
        tn.ElemTypeError, match=r"cannot build astype: <class 'int'> is not an element tag"
    ):
        ops.astype(t32(np.ones(3)), int)  # type: ignore[type-var]
    with pytest.raises(tn.ElemTypeError, match=r"is not an element tag"):
        ops.astype(t32(np.ones(3)), tn.FloatTag)


def test_to_device_on_the_same_device_returns_the_operand() -> None:
    x = t32(np.ones(3))
    assert ops.to_device(x, tn.CPU) is x


def test_to_device_rejects_a_non_device() -> None:
    with pytest.raises(
        tn.DeviceError, match=r"cannot build to_device: .*Float32.* is not a device tag"
    ):
        ops.to_device(t32(np.ones(3)), tn.Float32)  # type: ignore[type-var]


def test_to_device_gpu_builds_without_cupy_and_names_it_when_evaluated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # cupy "not installed", on any machine
    node = ops.to_device(t32(np.ones((2, 3))), tn.GPU)
    assert node.device is tn.GPU
    assert node.shape == (2, 3)
    assert node.elem is tn.Float32
    with pytest.raises(
        tn.MissingBackendError,
        match=r"^GPU data needs cupy, which is not installed\.\n  import error : .*\n"
        r"hint: install the gpu extra: pip install 'typed_nn\[gpu\]' \(CUDA 12\) or "
        r"'typed_nn\[gpu-cuda13\]' \(CUDA 13\)$",
    ) as caught:
        tn.evaluate(node)
    # A missing dependency naming its extra, and (as before) an unavailable backend.
    assert isinstance(caught.value, tn.MissingDependencyError)
    assert isinstance(caught.value, tn.BackendUnavailableError)


def test_building_a_move_to_gpu_does_not_import_cupy() -> None:
    code = (
        "import sys, numpy as np, typed_nn as tn\n"
        "from typed_nn import ops\n"
        "x = tn.tensor(np.ones(3), tn.Float32, tn.CPU, tn.Dim1)\n"
        "node = ops.to_device(ops.astype(x, tn.Float64), tn.GPU)\n"
        "print(node.describe(), 'cupy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "to_device[Float64, GPU, Dim1](3) False"


def test_to_device_gpu_without_the_cupy_backend_says_so(
    monkeypatch: pytest.MonkeyPatch, fake_cupy: types.ModuleType
) -> None:
    import typed_nn.backends.cupy as gpu_backend

    monkeypatch.setattr(gpu_backend, "register", lambda: None)  # cupy there, backend not
    node = ops.to_device(t32(np.ones(3)), tn.GPU)
    with pytest.raises(tn.NoImplementationError, match=r"the cupy backend is not loaded"):
        tn.evaluate(node)


def test_to_device_gpu_registers_the_cupy_backend_and_moves_the_data(
    fake_cupy: types.ModuleType,
) -> None:
    node = ops.to_device(t32(np.arange(3.0)), tn.GPU)
    result = tn.evaluate(node)  # the guard imports cupy, which registers the backend
    assert type(result.array).__module__ == "cupy"
    np.testing.assert_array_equal(result.numpy(), np.arange(3.0, dtype=np.float32))
    back = tn.evaluate(ops.to_device(result, tn.CPU))
    assert isinstance(back.array, np.ndarray)
    np.testing.assert_array_equal(back.array, np.arange(3.0, dtype=np.float32))
