"""Compiled training steps on the GPU: a step that fails midway writes no target.

On the GPU every target is computed aside and copied in at the end of the step, so a kernel
that fails before the copies leaves the weights and the optimizer state as they were; the
evaluator then reruns the step (its reference path), and the run ends where a clean run ends.
The failure is injected into the step's last matrix product (a cuBLAS call) and into its
last fused kernel (an update, written after everything it reads).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import train_with_assigns

import typed_nn as tn
from typed_nn.ops import declare
from typed_nn.ops.declare import implement, implementation

KINDS = ["sgd", "momentum", "adam"]


class _Flaky:
    """Wraps a callable; once armed, its ``fail_at``-th call raises (then it is disarmed).
    With ``fail_at`` 0 it only counts the calls while armed."""

    def __init__(self, fn: Any, fail_at: int = 0) -> None:
        self.fn, self.fail_at = fn, fail_at
        self.armed, self.calls, self.fired = False, 0, False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.armed:
            self.calls += 1
            if self.calls == self.fail_at:
                self.armed, self.fired = False, True
                raise FloatingPointError("injected")
        return self.fn(*args, **kwargs)

    @contextlib.contextmanager
    def armed_once(self) -> Iterator[None]:
        self.armed, self.calls = True, 0
        yield
        self.armed = False


def _fail_last_call(kind: str, flaky: _Flaky) -> list[Any]:
    """The run whose second step fails at ``flaky``'s last call in a step (counted in a
    clean run first)."""
    train_with_assigns(kind, 3, flaky.armed_once, device=tn.GPU)
    flaky.fail_at = flaky.calls
    got = train_with_assigns(kind, 3, flaky.armed_once, device=tn.GPU)
    assert flaky.fired, "the injected failure did not happen"
    return got


def _check_same(got: list[Any], clean: list[Any]) -> None:
    # A partial update would be off by a whole step; the rerun may round differently (fused
    # kernels contract multiply-adds, the reference path does not).
    for a, b in zip(got, clean, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
def test_a_matrix_product_failing_late_in_a_gpu_step_changes_no_target(
    cupy_module: Any, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typed_nn.evaluate import hooks

    monkeypatch.setattr(hooks, "node_checks", [])  # the compiled program, also in debug mode
    tn.devices.array_module(tn.GPU)  # registers the GPU implementations first
    clean = train_with_assigns(kind, 3, device=tn.GPU)
    flaky = _Flaky(implementation("dot", tn.GPU))
    # on the real cupy the registry is the process's own: restored after the test
    monkeypatch.setitem(declare._IMPLS["dot"], "GPU", list(declare._IMPLS["dot"]["GPU"]))
    implement("dot", tn.GPU, priority=50)(flaky)
    _check_same(_fail_last_call(kind, flaky), clean)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
def test_a_fused_kernel_failing_last_in_a_gpu_step_changes_no_target(
    cupy_module: Any, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typed_nn.backends.cupy.region import FusedKernel
    from typed_nn.evaluate import hooks

    monkeypatch.setattr(hooks, "node_checks", [])
    clean = train_with_assigns(kind, 3, device=tn.GPU)
    flaky = _Flaky(FusedKernel.__call__)
    monkeypatch.setattr(FusedKernel, "__call__", lambda k, *a, **kw: flaky(k, *a, **kw))
    _check_same(_fail_last_call(kind, flaky), clean)


def _bump_then_read(t: Any, u: Any) -> Any:
    t.assign(t + 1.0)
    return u * 10.0  # u over t's memory reads the new value, as eagerly


@pytest.mark.gpu
def test_two_device_arrays_over_one_memory_are_one_memory_for_the_guard(
    cupy_module: Any,
) -> None:
    """A cupy import of a buffer has no ``base``: two imports of one buffer looked like two
    memories, so a program traced for separate memories served them (review)."""
    tn.devices.array_module(tn.GPU)
    step = tn.compile(_bump_then_read)
    separate = [tn.zeros((1, 3), tn.Float64, tn.GPU) for _ in range(2)]
    np.testing.assert_array_equal(step(*separate).numpy(), np.zeros((1, 3)))
    one = cupy_module.zeros((1, 3))
    second = (
        cupy_module.from_dlpack(one)
        if hasattr(cupy_module, "from_dlpack")
        else type(one)._of(one._a)  # the emulator: another array object over one memory
    )
    t, u = (tn.Tensor(a, tn.Float64, tn.GPU, tn.Dim2) for a in (one, second))
    np.testing.assert_array_equal(step(t, u).numpy(), np.full((1, 3), 10.0))
    assert step.traces == 2
