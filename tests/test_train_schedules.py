"""Learning-rate schedules (values, composition, bad arguments) and gradient clipping by
global norm (eager and compiled)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from helpers import t64

import typed_nn as tn
import typed_nn.debug
from typed_nn import nn, ops, optim
from typed_nn.model import SGD, clip_by_global_norm, global_norm
from typed_nn.train import constant, cosine, exponential, step_decay, warmup


def test_schedule_values() -> None:
    assert [constant(0.1)(s) for s in (0, 5)] == [0.1, 0.1]
    assert [step_decay(1.0, every=3, factor=0.5)(s) for s in (0, 2, 3, 6, 7)] == [
        1.0,
        1.0,
        0.5,
        0.25,
        0.25,
    ]
    assert exponential(2.0, 0.5)(3) == 0.25
    c = cosine(1.0, total_steps=4, final=0.2)
    assert [round(c(s), 12) for s in (0, 2, 4, 9)] == [1.0, 0.6, 0.2, 0.2]
    assert c(1) == pytest.approx(0.2 + 0.8 * 0.5 * (1 + math.cos(math.pi / 4)))


def test_warmup_then_cosine() -> None:
    schedule = warmup(cosine(0.1, total_steps=10), steps=4)
    assert [schedule(s) for s in range(4)] == pytest.approx([0.0, 0.025, 0.05, 0.075])
    assert schedule(4) == pytest.approx(0.1)  # the cosine starts after the warm-up
    assert schedule(9) == pytest.approx(cosine(0.1, 10)(5))
    assert schedule(100) == pytest.approx(0.0)


def test_an_optimizer_takes_a_schedule() -> None:
    opt = SGD(step_decay(0.5, every=2))
    lrs = []
    for _ in range(5):
        lrs.append(opt.current_lr())
        opt.step_count += 1
    assert lrs == [0.5, 0.5, 0.05, 0.05, pytest.approx(0.005)]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: constant(-1.0), r"constant: lr must be a finite number >= 0\.0"),
        (lambda: step_decay(0.1, every=0), r"step_decay: every must be an int >= 1"),
        (lambda: step_decay(0.1, every=2.5), r"step_decay: every must be an int"),  # type: ignore[arg-type]
        (lambda: exponential(0.1, rate=1.5), r"exponential: rate must be a finite number in"),
        (lambda: cosine(0.1, total_steps=0), r"cosine: total_steps must be an int >= 1"),
        (lambda: cosine(math.inf, total_steps=3), r"cosine: lr must be a finite number"),
        (lambda: warmup(0.1, steps=3), r"warmup needs the schedule to follow it"),  # type: ignore[arg-type]
    ],
)
def test_bad_schedule_arguments(make: Any, match: str) -> None:
    with pytest.raises(tn.ParamError, match=match):
        make()


def test_clipping_scales_every_gradient_to_the_global_norm() -> None:
    a, b = t64([3.0, 0.0]), t64([[0.0, 4.0]])  # global norm 5
    np.testing.assert_allclose(global_norm([a, b]).numpy(), 5.0)
    ca, cb = clip_by_global_norm([a, b], max_norm=1.0)
    np.testing.assert_allclose(ca.numpy(), [0.6, 0.0])
    np.testing.assert_allclose(cb.numpy(), [[0.0, 0.8]])
    same = clip_by_global_norm([a, b], max_norm=10.0)  # below the bound: unchanged
    np.testing.assert_allclose(same[0].numpy(), a.numpy())


def test_clipping_inside_a_compiled_step_takes_max_norm_at_run_time() -> None:
    w = t64([3.0, 4.0])

    @tn.compile
    def clipped(max_norm: float) -> Any:
        (g,) = clip_by_global_norm([tn.grad(ops.reduce_sum(ops.square(w)) * 0.5, w)], max_norm)
        return g

    np.testing.assert_allclose(clipped(1.0).numpy(), [0.6, 0.8])
    np.testing.assert_allclose(clipped(2.5).numpy(), [1.5, 2.0])
    np.testing.assert_allclose(clipped(math.inf).numpy(), [3.0, 4.0])  # no clipping
    # checked at every call, before the run, as eagerly (a negative bound would ascend)
    for bad in (-1.0, 0.0, math.nan):
        with pytest.raises(tn.ParamError, match=r"max_norm must be a number > 0"):
            clipped(bad)
    assert clipped.traces == 1


def test_clipping_with_an_infinite_bound_changes_nothing() -> None:
    """PyTorch's ``clip_grad_norm_(params, inf)``, the way to read the norm without clipping
    (the scale was inf / inf, NaN)."""
    a, b = t64([3.0, 0.0]), t64([[0.0, 4.0]])
    ca, cb = clip_by_global_norm([a, b], max_norm=math.inf)
    np.testing.assert_array_equal(ca.numpy(), a.numpy())
    np.testing.assert_array_equal(cb.numpy(), b.numpy())


def test_clipping_errors() -> None:
    a = t64([1.0])
    for bad in (0.0, -1.0, math.nan, True, "1"):
        with pytest.raises(tn.ParamError, match=r"max_norm must be a number > 0"):
            clip_by_global_norm([a], max_norm=bad)  # type: ignore[arg-type]
    half: Any = np.float32(0.5)  # numpy's too, as compiled (and in debug mode)
    (clipped,) = clip_by_global_norm([a], max_norm=half)
    np.testing.assert_allclose(clipped.numpy(), [0.5])
    with pytest.raises(tn.ParamError, match=r"non-empty sequence of gradients"):
        clip_by_global_norm([], max_norm=1.0)
    f32: Any = tn.tensor(np.array([1.0], np.float32), tn.Float32, tn.CPU, tn.Dim1)
    with pytest.raises(tn.ElemTypeError, match=r"(?s)one element type.*Float32"):
        clip_by_global_norm([a, f32], max_norm=1.0)


class _Net(nn.Module):
    """Two Linear layers and a parameter used twice (a tied weight counts once in the norm)."""

    def __init__(self) -> None:
        self.fc1 = nn.Linear(3, 4, elem=tn.Float64)
        self.fc2 = nn.Linear(4, 2, elem=tn.Float64)
        self.scale = t64([1.5, -0.5])
        self.same_scale = self.scale

    def __call__(self, x: tn.Matrix[tn.Float64, tn.CPU]) -> tn.Matrix[tn.Float64, tn.CPU]:
        return self.fc2(ops.tanh(self.fc1(x))) * self.scale * self.same_scale


def _net_and_loss(seed: int) -> tuple[_Net, Any]:
    tn.manual_seed(seed)
    net = _Net()
    x = t64(np.random.default_rng(seed).normal(size=(5, 3)))
    return net, ops.reduce_sum(ops.square(net(x) - 3.0))


@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clipping_a_module_tree_matches_torch_clip_grad_norm(max_norm: float) -> None:
    torch = pytest.importorskip("torch")
    net, loss = _net_and_loss(0)
    grads = tn.grad(loss, net)
    clipped = clip_by_global_norm(grads, max_norm)
    assert type(clipped) is _Net
    names = [name for name, _ in nn.named_parameters(grads)]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]  # as PyTorch
    params = [torch.zeros(g.shape, dtype=torch.float64) for g in nn.parameters(grads)]
    for p, g in zip(params, nn.parameters(grads), strict=True):
        p.grad = torch.from_numpy(g.numpy().copy())
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    np.testing.assert_allclose(global_norm(grads).numpy(), total.item(), rtol=1e-12)
    for p, c in zip(params, nn.parameters(clipped), strict=True):
        np.testing.assert_allclose(c.numpy(), p.grad.numpy(), rtol=1e-6)
    assert clipped.same_scale is clipped.scale


def test_clipped_compiled_steps_equal_eager_steps_and_numpy() -> None:
    eager, _ = _net_and_loss(1)
    compiled, _ = _net_and_loss(1)
    x = t64(np.random.default_rng(2).normal(size=(5, 3)))
    want = [p.numpy().copy() for p in nn.parameters(eager)]
    opt_eager, opt_compiled = optim.SGD(eager, lr=0.1), optim.SGD(compiled, lr=0.1)

    @tn.compile
    def step(xb: tn.Matrix[tn.Float64, tn.CPU]) -> tn.Scalar[tn.Float64, tn.CPU]:
        loss = ops.reduce_sum(ops.square(compiled(xb) - 3.0))
        opt_compiled.step(clip_by_global_norm(tn.grad(loss, compiled), 1.0))
        return loss

    for _ in range(3):
        grads = tn.grad(ops.reduce_sum(ops.square(eager(x) - 3.0)), eager)
        g = [v.numpy() for v in nn.parameters(grads)]
        norm = math.sqrt(sum(float((v**2).sum()) for v in g))
        assert norm > 1.0  # the bound is active at every step
        want = [w - 0.1 * v / norm for w, v in zip(want, g, strict=True)]
        opt_eager.step(clip_by_global_norm(grads, 1.0))
        step(x)
    for w, a, b in zip(want, nn.parameters(eager), nn.parameters(compiled), strict=True):
        np.testing.assert_allclose(a.numpy(), w, rtol=1e-10)
        np.testing.assert_allclose(b.numpy(), w, rtol=1e-10)
    assert step.traces == 1


def test_clipping_errors_say_what_was_received() -> None:
    a = t64([1.0])
    with pytest.raises(tn.ParamError, match=r"received : list of 2; item 1: str 'g'\n"):
        clip_by_global_norm([a, "g"], max_norm=1.0)  # type: ignore[arg-type]
    with pytest.raises(tn.ParamError, match=r"received : Tensor\[Float64.*<- one tensor: wrap it"):
        clip_by_global_norm(a, max_norm=1.0)  # type: ignore[call-overload]
    with pytest.raises(tn.ParamError, match=r"hint: pass what tn.grad returned: clip_by_global_"):
        global_norm({"w": a})  # type: ignore[call-overload]
    with pytest.raises(tn.ParamError, match=r"the module has no parameters"):
        clip_by_global_norm(nn.Flatten(), max_norm=1.0)
