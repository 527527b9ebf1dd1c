"""Several optimizer steps in one compiled call train as they do uncompiled: a learning rate
set between them is the one the next step reads, and a schedule gives each step its own rate
(both were the call's one rate for every step)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from helpers import t64

import typed_nn as tn
from typed_nn import nn, ops, optim


class _One(nn.Module):
    """One weight whose gradient is always 1: a step moves it by -lr."""

    def __init__(self) -> None:
        self.w = t64([0.0])

    def __call__(self) -> tn.Scalar[tn.Float64, tn.CPU]:
        return ops.reduce_sum(self.w)


def _run(step: Callable[[], object], compiled: bool, calls: int) -> None:
    f = tn.compile(step) if compiled else step
    for _ in range(calls):
        f()


@pytest.mark.parametrize("compiled", [False, True])
def test_a_rate_set_between_two_steps_is_the_next_steps(compiled: bool) -> None:
    m = _One()
    opt = optim.SGD(m, lr=0.0)

    def two() -> None:
        opt.lr = 1.0
        opt.step(tn.grad(m(), m))
        opt.lr = 10.0
        opt.step(tn.grad(m(), m))

    _run(two, compiled, 1)
    np.testing.assert_array_equal(m.w.numpy(), [-11.0])
    opt.lr = 0.5  # between calls: the function sets its own rates again
    _run(two, compiled, 1)
    np.testing.assert_array_equal(m.w.numpy(), [-22.0])


def test_a_rate_from_a_float_argument_is_checked_at_every_call() -> None:
    m = _One()
    opt = optim.SGD(m, lr=0.0)

    @tn.compile
    def two(a: float, b: float) -> None:
        opt.lr = a
        opt.step(tn.grad(m(), m))
        opt.lr = b
        opt.step(tn.grad(m(), m))

    two(1.0, 10.0)
    two(2.0, 20.0)
    np.testing.assert_array_equal(m.w.numpy(), [-33.0])
    with pytest.raises(tn.ParamError, match=r"SGD: lr must be a finite number >= 0"):
        two(-1.0, 1.0)
    np.testing.assert_array_equal(m.w.numpy(), [-33.0])  # refused before the run
    assert two.traces == 1


def test_opt_lr_reads_the_rate_a_compiled_call_set_last() -> None:
    """``opt.lr = lr`` of a float argument runs in the program at every call: ``opt.lr``
    after the calls is the last call's (it read the trace's, and a checkpoint saved it),
    as in eager code and debug mode."""
    m = _One()
    opt = optim.SGD(m, lr=0.05)

    @tn.compile
    def step(lr: float) -> None:
        opt.lr = lr
        opt.step(tn.grad(m(), m))

    for lr in (0.05, 0.01, 0.02):
        step(lr)
    assert opt.lr == 0.02
    opt.lr = 0.3  # set between calls, then a call sets its own
    assert opt.lr == 0.3
    step(0.07)
    assert opt.lr == 0.07
    np.testing.assert_allclose(m.w.numpy(), [-0.15])


@pytest.mark.parametrize("compiled", [False, True])
def test_a_schedule_gives_each_step_of_a_call_its_rate(compiled: bool) -> None:
    m = _One()
    opt = optim.SGD(m, lr=lambda s: [1.0, 10.0, 100.0, 1000.0, 1e4, 1e5][s])

    def two() -> None:
        opt.step(tn.grad(m(), m))
        opt.step(tn.grad(m(), m))

    f = tn.compile(two) if compiled else two
    for _ in range(3):
        opt.prepare_step(opt.step_count)
        f()
    np.testing.assert_array_equal(m.w.numpy(), [-111111.0])
    assert opt.step_count == 6


def test_opt_lr_is_the_number_set_whatever_the_weights_element_types() -> None:
    """A rate set eagerly reads back as set (no Float16 rounding), and one a compiled call
    set from a float argument reads from the widest rate tensor (Float32 here: 0.1)."""

    class Mixed(nn.Module):
        def __init__(self) -> None:
            self.half = tn.tensor(np.zeros(1, np.float16), tn.Float16, tn.CPU, tn.Dim1)
            self.single = tn.tensor(np.zeros(1, np.float32), tn.Float32, tn.CPU, tn.Dim1)

    m = Mixed()
    opt = optim.SGD(m, lr=0.1)

    def loss() -> tn.TensorLike[tn.Float32, tn.CPU, tn.Dim0]:
        return ops.reduce_sum(ops.astype(m.half, tn.Float32)) + ops.reduce_sum(m.single)

    opt.step(tn.grad(loss(), m))
    opt.lr = 1 / 3
    assert opt.lr == 1 / 3

    @tn.compile
    def step(lr: float) -> None:
        opt.lr = lr
        opt.step(tn.grad(loss(), m))

    step(0.1)
    assert opt.lr == 0.1
    np.testing.assert_allclose(m.single.numpy(), [-0.2], rtol=1e-6)
