"""Compiled and uncompiled evaluation agree on every layer's forward and backward: each case
of test_layers_vjp.py (elementary layers, composites, recurrent layers with BPTT) run as a
function — forward, backward with a fixed gradient, the collected parameter gradients —
evaluated eagerly, then compiled, traced once and replayed (also after a parameter changed
in place)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import test_layers_vjp as lv
from helpers import t64

import typed_nn as tn
from typed_nn.layers import LayerOutput, layer_grad_collect
from typed_nn.model import GradCollector
from typed_nn.policies import PFeedbackOutput


def forward_and_backward(built: lv.Built, g: Any) -> list[Any]:
    """The layer's output, its input gradients and its parameters' gradients (lazy)."""
    layer = built.layer
    out = lv.forward(built)
    back = layer.feed_backward(layer.output_cont().set(LayerOutput, g))
    collected: GradCollector[Any, Any] = GradCollector(tn.Float64, tn.CPU)
    layer_grad_collect(layer, collected)
    grads = [back.get(port) for port in back.set_keys()]
    values = [out, *grads, *(grad for _, _, grad in collected)]
    return [v for v in values if isinstance(v, tn.TensorLike)]


def agree(built: lv.Built) -> None:
    out = lv.forward(built)  # its shape, for the gradient
    built.layer.feed_backward(built.layer.output_cont())  # pop what that forward pushed
    g = t64(lv.rand(*out.shape, seed=7))
    eager = [tn.evaluate(v).numpy().copy() for v in forward_and_backward(built, g)]
    step = tn.compile(lambda: forward_and_backward(built, g))
    for _ in range(2):  # traced, then replayed
        got = [t.numpy() for t in step()]
        assert len(got) == len(eager)
        for a, b in zip(got, eager, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert step.traces == 1
    if built.params:  # a parameter changed in place is read live by the replay
        name = sorted(built.params)[0]
        p = built.params[name]
        p.assign(p * 0.5)
        again = [tn.evaluate(v).numpy().copy() for v in forward_and_backward(built, g)]
        for a, b in zip((t.numpy() for t in step()), again, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        assert step.traces == 1


@pytest.mark.parametrize("case", list(lv.ELEMENTARY), ids=list(lv.ELEMENTARY))
def test_elementary_layers_compiled_agree(case: str) -> None:
    agree(lv.ELEMENTARY[case]((PFeedbackOutput,)))


@pytest.mark.parametrize("case", list(lv.COMPOSITES))
def test_composite_layers_compiled_agree(case: str) -> None:
    policies = (PFeedbackOutput,) if case.startswith("mlp") else lv.POLICIES["update+feedback"]
    agree(lv.COMPOSITES[case](policies))


@pytest.mark.parametrize("case", list(lv.RECURRENT))
def test_recurrent_layers_compiled_agree(case: str) -> None:
    policy = "update+feedback" if case.startswith("gru") else "feedback"
    agree(lv.RECURRENT[case](lv.POLICIES[policy]))
