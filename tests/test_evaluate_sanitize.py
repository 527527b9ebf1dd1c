"""The sanitizer (``options.sanitize``, ``TYPED_NN_SANITIZE=1``): each of its checks stops a
program that breaks the memory model, shown by breaking it on purpose (a kernel that writes
half its buffer, one that writes into its operand, the copy of returned views switched off,
a cached value written from outside), and it has nothing to say about correct programs."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import t32

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import codegen, memory, options
from typed_nn.evaluate.collect import collect
from typed_nn.evaluate.graph import build_graph
from typed_nn.evaluate.sanitize import Sanitizer, poison
from typed_nn.ops import declare


@pytest.fixture
def sanitizing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The sanitizer on, the op registries restored afterwards."""
    monkeypatch.setattr(declare, "_IMPLS", copy.deepcopy(declare._IMPLS))
    with options.using(sanitize=True):
        yield


def x44() -> tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]:
    return t32(np.arange(16, dtype=np.float32).reshape(4, 4) / 16)


def test_a_correct_program_runs_under_the_sanitizer(sanitizing: None) -> None:
    x, w = x44(), x44()
    loss = ops.reduce_mean(ops.square(ops.tanh(x @ w) - 0.5))
    (g,) = tn.grad(loss, (w,))
    step = tn.compile(lambda: (w.assign(w - 0.1 * g), loss)[1])
    for _ in range(3):
        step()
    rows = ops.concat([ops.sin(x), ops.stack([x[i] * 2.0 for i in range(4)])])
    want = np.concatenate([np.sin(x.numpy()), x.numpy() * 2.0])
    np.testing.assert_allclose(tn.evaluate(rows).numpy(), want, rtol=1e-6)


def test_a_step_that_leaves_part_of_its_value_unwritten_is_stopped(sanitizing: None) -> None:
    def half(x: Any, out: Any = None) -> Any:
        out = np.empty_like(x) if out is None else out
        out[:2] = np.exp(x[:2])
        return out

    declare.implement("exp", tn.CPU, priority=1, writes_into=True)(half)
    with (
        options.using(fuse=False),
        pytest.raises(
            tn.SanitizerError,
            match=r"node \d+ \(exp\): its value has elements the step did not write",
        ),
    ):
        tn.evaluate(ops.exp(x44()) + 1.0)


def test_a_step_that_writes_into_a_live_value_is_stopped(sanitizing: None) -> None:
    def scribbles(x: Any) -> Any:
        out = np.exp(x)
        x[0, 0] = 7.0  # writes into its operand, which is read again below
        return out

    declare.implement("exp", tn.CPU, priority=10)(scribbles)
    x = x44()
    with pytest.raises(tn.SanitizerError, match=r"it changed the live value of node \d+ \(leaf\)"):
        tn.evaluate(ops.exp(x) + x)


def test_a_by_node_program_stops_a_step_that_writes_into_what_it_reads(
    sanitizing: None,
) -> None:
    """A by-node program (debug mode, a failed program's re-run) checks after each step only
    the values the step read and the memory they view: it shares no buffer, so nothing else
    can change. Its operand, or the tensor its operand is a view of, changed: stopped."""
    from typed_nn.evaluate.executor import by_node

    def scribbles(x: Any) -> Any:
        out = np.exp(x)
        x[...] = 7.0  # writes into its operand, which is read again below
        return out

    declare.implement("exp", tn.CPU, priority=10)(scribbles)
    for view in (False, True):  # the leaf itself; a view of it
        x = x44()  # fresh values: the kernel's write must change them
        operand = ops.transpose(x) if view else x
        with pytest.raises(tn.SanitizerError, match=r"it changed the live value of node \d+"):
            by_node([ops.exp(operand) + x])


def test_a_kernel_returning_its_operand_is_stopped(sanitizing: None) -> None:
    """Only a layout op may return a view of an operand: the memory plan counts on it."""

    def in_place(x: Any) -> Any:
        return np.exp(x, out=x)

    declare.implement("exp", tn.CPU, priority=10)(in_place)
    with pytest.raises(
        tn.SanitizerError, match=r"\(exp\): its kernel returned a view of operand 1 \(node \d+\)"
    ):
        tn.evaluate(ops.exp(x44() * 1.5) + 1.0)


def test_a_returned_view_of_an_input_is_stopped(
    sanitizing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "_copied", lambda *args: [])  # the copy switched off
    with pytest.raises(
        tn.SanitizerError,
        match=r"the value it hands out \(returns, or caches on its node\) shares memory with an "
        "input or a kept buffer",
    ):
        tn.evaluate(ops.transpose(x44()))


def test_a_cached_view_of_an_input_is_stopped(
    sanitizing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view of an input computed inside a larger graph, if cached, would be what a later
    evaluation of its node hands out (it changed with the input's next assign)."""
    plan = memory.plan_memory

    def caching_every_view(*args: Any, **kwargs: Any) -> Any:
        planned = plan(*args, **kwargs)
        planned.uncached = set()
        return planned

    monkeypatch.setattr(codegen, "plan_memory", caching_every_view)
    view = ops.reshape(x44(), (16,))
    with pytest.raises(tn.SanitizerError, match=r"\(reshape\): the value it hands out"):
        tn.evaluate(view * 2.0)


def test_a_cached_value_written_from_outside_is_stopped(sanitizing: None) -> None:
    e = x44() * 2.0
    memory = tn.evaluate(e).numpy().base  # a read-only view's writable base
    assert memory is not None
    memory[0, 0] = 5.0  # what a consumer ignoring the read-only flag does
    with pytest.raises(tn.SanitizerError, match="found a cached result changed after it was"):
        tn.evaluate(e * 2.0)


def test_a_read_of_memory_not_written_or_dead_is_stopped() -> None:
    """The check before each step: an operand holding the sentinel (what the sanitizer fills
    fresh buffers and dead values' memory with) is memory the step must not read."""
    graph = build_graph(collect([ops.exp(x44())], True, -1))
    san = Sanitizer(graph, [0, 1], {}, {1}, {1}, {1}, list)
    san.start()
    with pytest.raises(tn.SanitizerError, match=r"node 1 \(exp\): operand 1 holds memory not"):
        san.before(1, poison(np.empty((4, 4), np.float32)))


def test_a_generated_program_checks_each_steps_operands(sanitizing: None) -> None:
    """The program hands each step's operands to the check before it (an input holding the
    sentinel stands for memory not written): the step (exp and mul fused) is stopped before
    it runs."""
    x = tn.tensor(poison(np.empty((4, 4), np.float32)), tn.Float32, tn.CPU, tn.Dim2)
    with pytest.raises(tn.SanitizerError, match=r"\(mul\): operand 1 holds memory not written"):
        tn.evaluate(ops.exp(x) * 2.0)


def test_a_value_handed_out_in_a_targets_memory_is_stopped() -> None:
    """What the evaluator checks after a run that wrote targets (its handles and caches hand
    out copies of what went straight into a target)."""
    from typed_nn.evaluate import sanitize

    node = x44() * 2.0
    target = np.zeros((4, 4), np.float32)
    with pytest.raises(
        tn.SanitizerError,
        match=r"(?s)the sanitizer found a value handed out in a target's memory\..*node +: mul",
    ):
        sanitize.apart_from_targets([node], {0: target[1:]}, [target])
    sanitize.apart_from_targets([node], {0: target.copy()}, [target])  # a copy: no error
