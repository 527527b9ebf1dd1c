"""Shared fixtures: the real GPU (or a clear skip) and a fake cupy for CPU-only tests."""

from __future__ import annotations

import dataclasses
import sys
import types
from typing import Any

import cupy_emulator
import pytest
from gpu_fakes import FakeGpuArray, RecordingKernel, have_compiler

import typed_nn as tn
from typed_nn.ops import declare


def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here (None when cupy and a CUDA device are present)."""
    try:
        import cupy
    except ImportError as exc:
        return f"cupy is not installed ({exc}); pip install -e '.[gpu]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # the CUDA driver raises its own error types
        return f"cupy found no usable CUDA device: {type(exc).__name__}: {exc}"
    return None if count > 0 else "cupy found no CUDA device"


@pytest.fixture(params=["emulated", "device"])
def cupy_module(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """cupy for the GPU tests, twice: the CPU emulation of cupy's interface
    (``cupy_emulator.py``, on every machine with a C++ compiler) and the real cupy (skipped,
    saying why, without cupy or a GPU)."""
    if request.param == "emulated":
        if not have_compiler():
            pytest.skip("the cupy emulator compiles fused kernels with g++, which is not on PATH")
        module = cupy_emulator.install()
        _isolate_gpu_backend(monkeypatch, module)
        return module
    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    import cupy

    _watch_the_device(request, monkeypatch)
    return cupy


GPU_NOTES: list[str] = []
"""What real-GPU tests did that passing hides, printed at the end of the session."""


def _watch_the_device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Note each exception a fused kernel raises (an NVRTC compile error among them) and each
    evaluation that fell back to the node-by-node path: the evaluator reruns a failed program
    node by node, with plain implementations, so a test passes whether or not its kernels ran."""
    from typed_nn.backends.cupy.region import FusedKernel
    from typed_nn.evaluate import stats

    call, before, test = FusedKernel.__call__, stats.fallbacks, request.node.nodeid

    def watched(kernel: FusedKernel, *operands: Any, out: Any) -> Any:
        try:
            return call(kernel, *operands, out=out)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
            GPU_NOTES.append(f"{test}: fused kernel {type(exc).__name__}: {first}")
            raise

    def fallbacks() -> None:
        if stats.fallbacks > before:
            GPU_NOTES.append(f"{test}: {stats.fallbacks - before} evaluation(s) ran node by node")

    monkeypatch.setattr(FusedKernel, "__call__", watched)
    request.addfinalizer(fallbacks)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if GPU_NOTES:
        terminalreporter.section("real GPU: fused-kernel errors and node-by-node fallbacks")
        for note in GPU_NOTES:
            terminalreporter.write_line(f"GPU-NOTE {note}")


def _copy_registry(reg: Any) -> Any:
    """A copy of an op -> device -> implementation(s) registry (lists copied too)."""
    return type(reg)(
        {
            op: type(per_device)(
                {dev: list(v) if isinstance(v, list) else v for dev, v in per_device.items()}
            )
            for op, per_device in reg.items()
        }
    )


@pytest.fixture
def fake_cupy(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A fake ``cupy`` in ``sys.modules`` (``asarray`` makes FakeGpuArrays, kernels are
    recorded) with the op registry and the GPU backend's state restored afterwards."""
    fake = types.ModuleType("cupy")
    fake.asarray = FakeGpuArray  # type: ignore[attr-defined]
    fake.ElementwiseKernel = RecordingKernel  # type: ignore[attr-defined]
    _isolate_gpu_backend(monkeypatch, fake)
    monkeypatch.setattr(RecordingKernel, "made", [])
    return fake


def _isolate_gpu_backend(monkeypatch: pytest.MonkeyPatch, module: types.ModuleType) -> None:
    """``module`` as ``cupy``, with the op registries and the GPU backend's state (registration,
    kernel cache) restored after the test."""
    from typed_nn import devices
    from typed_nn.backends.cupy import blas, region, registration

    monkeypatch.setitem(sys.modules, "cupy", module)
    monkeypatch.setattr(blas, "_opened", {})
    monkeypatch.setattr(declare, "_IMPLS", _copy_registry(declare._IMPLS))
    monkeypatch.setattr(registration, "_done", [])
    monkeypatch.setattr(region, "_caches", [])
    gpu = devices.device_of(tn.GPU)
    monkeypatch.setitem(devices._DEVICES, tn.GPU, dataclasses.replace(gpu, compile_region=None))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In debug mode the evaluator runs node by node, so that every value is checked for NaN and
    Inf: its optimisations (sharing, rewrites, fusion, pool, batching, plan reuse) are off by
    design. Their tests measure exactly those optimisations; they run in the normal pass, as do
    the type checkers' tests (``static``: debug mode changes nothing they read)."""
    import typed_nn.debug

    if not typed_nn.debug.is_enabled():
        return
    skip = pytest.mark.skip(reason="debug mode evaluates node by node: optimisations are off")
    static = pytest.mark.skip(reason="the type checkers read source: the normal pass runs them")
    for item in items:
        if item.get_closest_marker("static") is not None:
            item.add_marker(static)
            continue
        name = item.path.name
        measures_optimiser = (
            name.startswith("test_evaluate_")
            or (name == "test_readme.py" and "evaluation.md" in item.nodeid)
            or item.get_closest_marker("optimiser") is not None
        )
        if measures_optimiser:
            item.add_marker(skip)
