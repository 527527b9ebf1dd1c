"""Optimizers against numpy reference steps (several steps, weight decay, schedules), the
in-place contract, and every error message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import Array, tagged, tolerance

import typed_nn as tn
from typed_nn import nn, optim
from typed_nn.model import SGD, Adam, GradCollector, Momentum, Optimizer
from typed_nn.model.checkpoint_format import optimizer_info

SHAPES = [(4, 3), (3,)]
STEPS = 5


def grads_for(step: int) -> list[Array]:
    rng = np.random.default_rng(100 + step)
    return [rng.normal(size=s) for s in SHAPES]


def run(
    opt: Optimizer, reference: Callable[[list[Array], list[Array], int], None], elem: Any
) -> None:
    """STEPS steps of ``opt`` on two parameters vs ``reference(weights, grads, t)`` in numpy."""
    rng = np.random.default_rng(0)
    start = [rng.normal(size=s) for s in SHAPES]
    weights = [tagged(a, elem) for a in start]
    arrays = [w.array for w in weights]
    expected = [a.copy() for a in start]
    for t in range(STEPS):
        grads = grads_for(t)
        opt.step([(w, tagged(g, elem) * 1.0) for w, g in zip(weights, grads, strict=True)])
        reference(expected, grads, t)
        tol = tolerance(elem)
        for w, e in zip(weights, expected, strict=True):
            np.testing.assert_allclose(w.numpy(), e, rtol=tol["rtol"], atol=tol["atol"])
    assert [w.array for w in weights] == arrays  # updated in place, same memory
    assert opt.step_count == STEPS


ELEMS = [tn.Float64, tn.Float32]


@pytest.mark.parametrize("elem", ELEMS)
def test_sgd(elem: Any) -> None:
    lr, wd = 0.1, 0.01

    def ref(ws: list[Array], gs: list[Array], t: int) -> None:
        for w, g in zip(ws, gs, strict=True):
            w -= lr * (g + wd * w)

    run(SGD(lr, weight_decay=wd), ref, elem)


@pytest.mark.parametrize("elem", ELEMS)
@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(elem: Any, nesterov: bool) -> None:
    lr, mu, wd = 0.05, 0.9, 0.01
    velocity = [np.zeros(s) for s in SHAPES]

    def ref(ws: list[Array], gs: list[Array], t: int) -> None:
        for w, g, v in zip(ws, gs, velocity, strict=True):
            g = g + wd * w
            v *= mu
            v += g
            w -= lr * (g + mu * v if nesterov else v)

    run(Momentum(lr, mu, weight_decay=wd, nesterov=nesterov), ref, elem)


@pytest.mark.parametrize("elem", ELEMS)
@pytest.mark.parametrize("decoupled", [True, False])
def test_adam(elem: Any, decoupled: bool) -> None:
    lr, (b1, b2), eps, wd = 0.01, (0.8, 0.95), 1e-8, 0.1
    m = [np.zeros(s) for s in SHAPES]
    v = [np.zeros(s) for s in SHAPES]

    def ref(ws: list[Array], gs: list[Array], t: int) -> None:
        for w, g, mi, vi in zip(ws, gs, m, v, strict=True):
            if decoupled:
                w *= 1 - lr * wd
            else:
                g = g + wd * w
            mi[...] = b1 * mi + (1 - b1) * g
            vi[...] = b2 * vi + (1 - b2) * g * g
            m_hat, v_hat = mi / (1 - b1 ** (t + 1)), vi / (1 - b2 ** (t + 1))
            w -= lr * m_hat / (np.sqrt(v_hat) + eps)

    opt = Adam(lr, (b1, b2), eps, weight_decay=wd, decoupled_weight_decay=decoupled)
    run(opt, ref, elem)


def test_learning_rate_schedule() -> None:
    schedule: Callable[[int], float] = lambda t: 0.1 / (1 + t)  # noqa: E731
    opt = SGD(schedule)
    w = tagged(np.zeros(3), tn.Float64)
    assert opt.current_lr() == 0.1
    for _ in range(3):
        opt.step([(w, tagged(np.ones(3), tn.Float64))])
    np.testing.assert_allclose(w.numpy(), -(0.1 + 0.05 + 0.1 / 3) * np.ones(3))
    assert opt.current_lr() == 0.025


def test_all_gradients_are_read_before_any_weight_changes() -> None:
    # Each gradient reads the *other* weight: updating one weight before evaluating the other
    # gradient would be wrong (a layer's gradient reads the weights of the layers after it).
    w1, w2 = tagged(np.array([1.0, 2.0]), tn.Float64), tagged(np.array([10.0, 20.0]), tn.Float64)
    SGD(0.1).step([(w1, w2 * 1.0), (w2, w1 * 1.0)])
    np.testing.assert_allclose(w1.numpy(), [0.0, 0.0])
    np.testing.assert_allclose(w2.numpy(), [9.9, 19.8])
    # The same with principal tensors as gradients (they alias the weights).
    a, b = tagged(np.array([1.0]), tn.Float64), tagged(np.array([10.0]), tn.Float64)
    SGD(0.1).step([(a, b), (b, a)])
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [0.0, 9.9])
    a, b = tagged(np.array([0.2]), tn.Float64), tagged(np.array([10.0]), tn.Float64)
    Adam(0.5).step([(a, b), (b, a)])  # the first step of Adam moves by lr * sign(grad)
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [-0.3, 9.5])


def test_grad_collector_input_sums_shared_gradients() -> None:
    w = tagged(np.ones((2, 2)), tn.Float32)
    col = GradCollector(tn.Float32, tn.CPU)
    col.collect("w", w, w * 0.0 + 1.0)
    col.collect("w", w, w * 0.0 + 2.0)
    SGD(0.5).step(col)
    np.testing.assert_allclose(w.numpy(), np.full((2, 2), 1 - 0.5 * 3))
    v = tagged(np.ones(2), tn.Float32)  # a weight given twice as pairs is summed the same way
    SGD(0.5).step([(v, tagged(np.ones(2), tn.Float32)), (v, tagged(np.ones(2), tn.Float32))])
    np.testing.assert_allclose(v.numpy(), [0.0, 0.0])


def test_state_tensors() -> None:
    w = tagged(np.zeros(2), tn.Float64)
    opt = Adam(0.1, (0.5, 0.5))
    assert opt.state(w) == {}
    opt.step([(w, tagged(np.array([2.0, 4.0]), tn.Float64))])
    state = opt.state(w)
    np.testing.assert_allclose(state["m"].numpy(), [1.0, 2.0])
    np.testing.assert_allclose(state["v"].numpy(), [2.0, 8.0])
    Momentum(0.1).step([(w, w * 0.0)])  # an empty step list and zero grads are fine
    SGD(0.1).step([])


def test_setting_errors() -> None:
    with pytest.raises(tn.ParamError, match="SGD: lr must be a finite number >= 0"):
        SGD(-0.1)
    with pytest.raises(tn.ParamError, match="SGD: weight_decay must be a finite number >= 0"):
        SGD(0.1, weight_decay=float("inf"))
    with pytest.raises(tn.ParamError, match="Momentum: momentum must be a finite number >= 0"):
        Momentum(0.1, -0.5)
    with pytest.raises(tn.ParamError, match="Momentum: nesterov needs momentum > 0"):
        Momentum(0.1, 0.0, nesterov=True)
    with pytest.raises(tn.ParamError, match=r"Adam: betas\[1\] must be in \[0, 1\)"):
        Adam(1e-3, (0.9, 1.0))
    with pytest.raises(tn.ParamError, match="Adam: eps must be a finite number > 0"):
        Adam(1e-3, eps=0.0)
    opt = SGD(lambda t: 0.1 - t)
    w = tagged(np.zeros(2), tn.Float64)
    opt.step([(w, w * 1.0)])
    with pytest.raises(tn.ParamError, match=r"SGD: lr \(at step 1\) must be a finite number >= 0"):
        opt.step([(w, w * 1.0)])


def test_step_errors() -> None:
    ints = tagged(np.zeros(2, dtype=np.int32), tn.Int32)
    with pytest.raises(tn.ElemTypeError, match="SGD cannot update integer parameters"):
        SGD(0.1).step([(ints, ints)])
    w = tagged(np.zeros(2), tn.Float64)
    with pytest.raises(tn.OperandError, match=r"Adam\.step needs \(weight, grad\) pairs"):
        Adam().step([(w * 1.0, w)])  # type: ignore[list-item]
    with pytest.raises(tn.OperandError, match=r"Adam\.step needs \(weight, grad\) pairs"):
        Adam().step([(w, np.zeros(2))])  # type: ignore[list-item]


def test_step_given_a_dict_says_it_needs_pairs() -> None:
    """A dict was iterated as its keys: ``ValueError: not enough values to unpack``."""
    w = tagged(np.zeros(2), tn.Float64)
    match = (
        r"^SGD\.step needs \(weight, grad\) pairs or a GradCollector\.\n"
        r"  declared : GradCollector, or an iterable of \(weight, grad\)\n"
        r"  received : dict with keys 'w'\n"
        r"hint: pass \[\(w, g\), \.\.\.\] \(e\.g\. list\(zip\(weights, grads\)\)\)"
    )
    with pytest.raises(tn.OperandError, match=match):
        SGD(0.1).step({"w": w})  # type: ignore[dict-item]
    with pytest.raises(tn.OperandError, match=r"  received : Tensor\n"):
        SGD(0.1).step(w)  # type: ignore[arg-type]
    with pytest.raises(tn.OperandError, match=r"  received : int\n"):
        Adam().step(3)  # type: ignore[arg-type]
    assert w.numpy().tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("item", "shown"),
    [("w", r"Tensor"), ("triple", r"tuple of 3"), ("name", r"str 'w'")],
)
def test_step_items_must_be_pairs(item: str, shown: str) -> None:
    w = tagged(np.zeros(2), tn.Float64)
    items: dict[str, object] = {"w": w, "triple": (w, w * 1.0, 0.1), "name": "w"}
    match = (
        r"^Momentum\.step needs \(weight, grad\) pairs: item 1 is not a pair\.\n"
        rf"  declared : \(weight, grad\)\n  received : {shown}\n"
        r"hint: give each parameter as a tuple \(w, g\)"
    )
    with pytest.raises(tn.OperandError, match=match):
        Momentum(0.1).step([(w, w * 1.0), items[item]])  # type: ignore[list-item]


def _quadratic_pairs(
    ws: list[tn.Tensor[Any, Any, Any]],
) -> list[tuple[tn.Tensor[Any, Any, Any], tn.TensorLike[Any, Any, Any]]]:
    loss = tn.ops.reduce_sum(tn.ops.square(ws[0] - 1.0)) + tn.ops.reduce_sum(ws[1] * 3.0)
    return list(zip(ws, tn.grad(loss, ws), strict=True))


def test_step_inside_compile_counts_in_the_program_like_eager_steps() -> None:
    # The compiled form of the built-in rule: no numbers to pass, no step_count to advance
    # by hand (forgetting it froze Adam's bias correction at step 1).
    start = [np.arange(6.0).reshape(2, 3), np.array([1.0, -2.0])]
    eager_ws = [tagged(a, tn.Float64) for a in start]
    compiled_ws = [tagged(a, tn.Float64) for a in start]
    eager, compiled = Adam(0.1), Adam(0.1)
    step = tn.compile(lambda: compiled.step(_quadratic_pairs(compiled_ws)))
    for _ in range(4):
        eager.step(_quadratic_pairs(eager_ws))
        step()
    assert step.traces == 1
    assert compiled.step_count == eager.step_count == 4
    for a, b in zip(compiled_ws, eager_ws, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_a_schedule_inside_compile_needs_prepare_step() -> None:
    ws = [tagged(np.ones((2, 3)), tn.Float64), tagged(np.ones(2), tn.Float64)]
    opt = SGD(lambda t: 0.1 / (t + 1))
    step = tn.compile(lambda: opt.step(_quadratic_pairs(ws)))
    with pytest.raises(
        tn.CompileError, match=r"SGD\.step inside tn\.compile cannot run a learning"
    ):
        step()
    for k in range(3):
        opt.prepare_step(k)  # the schedule's rate at step k: a run-time number of the program
        step()
    np.testing.assert_allclose(ws[1].numpy(), 1.0 - 3.0 * (0.1 + 0.05 + 0.1 / 3))
    assert opt.step_count == 3


def test_a_module_optimizer_keeps_no_bookkeeping_of_its_own() -> None:
    # typed_nn.optim's optimizers are thin over these rules: the rate set on the front-end
    # is the rule's (what a checkpoint records), and so is the step count.
    model = nn.Linear(3, 2)
    opt = optim.Adam(model, lr=0.1)
    opt.lr = 0.05
    assert opt.rule.lr == 0.05
    assert optimizer_info(opt.rule, opt.step_count)["lr"] == 0.05
    x = tn.tensor(np.ones((4, 3)), tn.Float32, tn.CPU, tn.Dim2)
    opt.step(tn.grad(tn.ops.reduce_sum(model(x)), model))
    assert opt.rule.step_count == opt.step_count == 1
    opt.step_count = 7
    assert opt.rule.step_count == 7
