"""A gradient taken inside ``tn.compile`` with respect to a tensor the function assigned
earlier is the gradient at the tensor's new value, as eagerly: a read after the assign is of
the tensor (by object), and no gradient goes into the assigned expression."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import t64

import typed_nn as tn
from typed_nn import nn, ops, optim

rng = np.random.default_rng(41)
W0 = rng.standard_normal((5, 5))
X = rng.standard_normal((3, 5))


def _tanh_grad(w: np.ndarray) -> np.ndarray:
    """d sum(tanh(X @ w)) / d w."""
    grad: np.ndarray = X.T @ (1.0 - np.tanh(X @ w) ** 2)
    return grad


Update = Callable[[tn.Tensor[Any, Any, Any]], object]
UPDATES: list[tuple[str, Update, np.ndarray]] = [
    ("scaled", lambda w: w.assign(w * 0.5), W0 * 0.5),
    ("transposed", lambda w: w.assign(ops.transpose(w)), W0.T),
    ("a constant", lambda w: w.assign(w * 0.0 + 1.0), np.ones((5, 5))),
    ("a row", lambda w: w[1].assign(w[1] * 3.0), np.vstack([W0[:1], W0[1:2] * 3.0, W0[2:]])),
]


@pytest.mark.parametrize(("name", "update", "new"), UPDATES, ids=[u[0] for u in UPDATES])
@pytest.mark.parametrize("compiled", [False, True])
def test_grad_after_an_assign_is_at_the_new_value(
    name: str, update: Update, new: np.ndarray, compiled: bool
) -> None:
    w = t64(W0.copy())

    def f(x: tn.Matrix[tn.Float64, tn.CPU]) -> Any:
        update(w)
        return tn.grad(ops.reduce_sum(ops.tanh(x @ w)), w)

    got = tn.compile(f)(t64(X)) if compiled else tn.evaluate(f(t64(X)))
    np.testing.assert_allclose(got.numpy(), _tanh_grad(new), rtol=1e-12, atol=1e-12)


def test_vjp_after_an_assign_is_at_the_new_value() -> None:
    w = t64(W0.copy())

    def f(x: tn.Matrix[tn.Float64, tn.CPU]) -> Any:
        w.assign(w * 0.5)
        return tn.vjp(ops.tanh(x @ w), w, ops.tanh(x @ w) * 0.0 + 1.0)

    got = tn.compile(f)(t64(X))
    np.testing.assert_allclose(got.numpy(), _tanh_grad(W0 * 0.5), rtol=1e-12, atol=1e-12)


def test_no_gradient_goes_into_what_was_assigned() -> None:
    """``w.assign(w * 0.5 + v)``, then a loss reading ``w``: ``v`` does not reach it."""
    w, v, x = (t64(rng.standard_normal(3)) for _ in range(3))

    def f() -> Any:
        w.assign(w * 0.5 + v)
        return tn.grad(ops.reduce_sum(ops.tanh(w * x)), v)

    np.testing.assert_array_equal(tn.compile(f)().numpy(), np.zeros(3))


def test_per_sample_sgd_in_one_compiled_call_matches_numpy() -> None:
    xs, ys = rng.standard_normal((4, 3)), rng.standard_normal(4)
    w0 = rng.standard_normal(3)
    w = t64(w0.copy())

    def epoch(xb: tn.Matrix[tn.Float64, tn.CPU], yb: tn.Vector[tn.Float64, tn.CPU]) -> None:
        for i in range(4):
            loss = ops.square(ops.reduce_sum(xb[i] * w, 0) - yb[i])
            w.assign(w - 0.1 * tn.grad(loss, w))

    tn.compile(epoch)(t64(xs), t64(ys))
    want = w0.copy()
    for xi, yi in zip(xs, ys, strict=True):
        want = want - 0.1 * 2.0 * (xi @ want - yi) * xi
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-12, atol=1e-12)


class _Net(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 2, elem=tn.Float64)

    def __call__(self, x: tn.Matrix[tn.Float64, tn.CPU]) -> tn.Matrix[tn.Float64, tn.CPU]:
        return self.fc(x)


def _two_steps(net: _Net, opt: optim.SGD[_Net]) -> Callable[..., Any]:
    def two_steps(x: tn.Matrix[tn.Float64, tn.CPU], y: tn.Matrix[tn.Float64, tn.CPU]) -> None:
        for _ in range(2):
            opt.step(tn.grad(ops.mse_loss(net(x), y), net))

    return two_steps


def test_two_optimizer_steps_in_one_compiled_call_train_as_uncompiled() -> None:
    x, y = t64(rng.standard_normal((8, 4))), t64(rng.standard_normal((8, 2)))
    weights = []
    for compiled in (False, True):
        tn.manual_seed(3)
        net = _Net()
        step = _two_steps(net, optim.SGD(net, 0.1))
        (tn.compile(step) if compiled else step)(x, y)
        weights.append(nn.state_dict(net)["fc.weight"])
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("order", ["row after", "row before", "row assigned"])
def test_grad_with_respect_to_a_row_of_an_assigned_tensor(order: str) -> None:
    """The row read after the assign is the row ``r`` to autodiff (it was zero)."""
    x = t64(rng.standard_normal(5))
    got = []
    for compiled in (False, True):
        w = t64(W0.copy())

        def f(x: tn.Vector[tn.Float64, tn.CPU]) -> Any:
            if order == "row after":
                w.assign(w * 2.0)  # noqa: B023 (run at once)
                r = w[1]  # noqa: B023
            elif order == "row before":
                r = w[1]  # noqa: B023
                w.assign(w * 2.0)  # noqa: B023
            else:
                w[1].assign(w[1] * 3.0)  # noqa: B023
                r = w[1]  # noqa: B023
            return tn.grad(ops.reduce_sum(ops.tanh(r * x)), r)

        got.append((tn.compile(f)(x) if compiled else tn.evaluate(f(x))).numpy())
    scale = 3.0 if order == "row assigned" else 2.0
    want = (1.0 - np.tanh(W0[1] * scale * x.numpy()) ** 2) * x.numpy()
    for value in got:
        np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-12)
