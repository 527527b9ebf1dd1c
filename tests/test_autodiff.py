"""tn.grad and tn.vjp: structures in and out, laziness, unreached inputs, data kinds, and every
error a user can get (the gradients' numbers are checked op by op in test_autodiff_ops.py and
on random graphs in test_autodiff_random.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import t32, t64

import typed_nn as tn
from typed_nn import ops
from typed_nn.ops.node import Operation
from typed_nn.ops.special import ZEROS
from typed_nn.tags import D, Dv, E

RNG = np.random.default_rng(0)


def params() -> tuple[tn.Tensor[Any, Any, Any], tn.Tensor[Any, Any, Any]]:
    return t64(RNG.normal(size=(3, 4))), t64(RNG.normal(size=(4,)))


def test_grad_returns_the_structure_of_wrt() -> None:
    w, b = params()
    x = t64(RNG.normal(size=(5, 3)))
    loss = ops.reduce_sum(ops.tanh(x @ w + b))
    single = tn.grad(loss, w)
    pair = tn.grad(loss, (w, b))
    listed = tn.grad(loss, [w, b])
    named = tn.grad(loss, {"w": w, "b": b})
    assert isinstance(single, tn.TensorLike)
    assert isinstance(pair, tuple)
    assert len(pair) == 2
    assert isinstance(listed, list)
    assert isinstance(named, dict)
    assert list(named) == ["w", "b"]
    for g in (pair[0], listed[0], named["w"]):
        np.testing.assert_allclose(g.numpy(), single.numpy())
    assert pair[1].shape == (4,)
    assert named["b"].elem is tn.Float64


def test_grad_builds_lazy_nodes_and_evaluates_nothing() -> None:
    w, b = params()
    x = t64(RNG.normal(size=(5, 3)))
    hidden = ops.sigmoid(x @ w + b)
    loss = ops.reduce_sum(hidden)
    g_w = tn.grad(loss, w)
    assert isinstance(g_w, Operation)
    assert not isinstance(hidden, tn.Tensor)
    assert hidden._result is None  # type: ignore[attr-defined]  # nothing was computed


def test_gradients_can_be_evaluated_together_in_one_plan() -> None:
    w, b = params()
    x = t64(RNG.normal(size=(5, 3)))
    loss = ops.reduce_sum(ops.square(ops.relu(x @ w + b)))
    g_w, g_b = tn.grad(loss, (w, b))
    handles = [g_w.eval_register(), g_b.eval_register(), loss.eval_register()]
    tn.EvalPlan.eval()
    values = [h.data().numpy() for h in handles]
    h = x.numpy() @ w.numpy() + b.numpy()
    d = 2 * np.maximum(h, 0) * (h > 0)
    np.testing.assert_allclose(values[0], x.numpy().T @ d)
    np.testing.assert_allclose(values[1], d.sum(axis=0))
    np.testing.assert_allclose(values[2], (np.maximum(h, 0) ** 2).sum())


def test_an_unreached_input_gets_a_zero_tensor_of_its_shape() -> None:
    w, b = params()
    loss = ops.reduce_sum(w * 2.0)
    g_w, g_b = tn.grad(loss, (w, b))
    assert isinstance(g_b, Operation)
    assert g_b.op is ZEROS
    assert g_b.shape == (4,)
    np.testing.assert_array_equal(g_b.numpy(), np.zeros(4))
    np.testing.assert_array_equal(g_w.numpy(), np.full((3, 4), 2.0))


def test_grad_of_the_input_itself_is_one() -> None:
    s = t64(2.5)
    np.testing.assert_array_equal(tn.grad(s, s).numpy(), 1.0)


def test_fan_out_gradients_are_summed() -> None:
    x = t64([1.0, 2.0, 3.0])
    y = x * x + ops.exp(x) * x  # x used four times
    g = tn.grad(ops.reduce_sum(y), x).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(g, 2 * xv + np.exp(xv) * (xv + 1))


def test_broadcast_operands_get_gradients_of_their_own_shape() -> None:
    m, v, s = t64(RNG.normal(size=(2, 3, 4))), t64(RNG.normal(size=(4,))), t64(1.5)
    loss = ops.reduce_sum(m * v + s)
    g_m, g_v, g_s = tn.grad(loss, (m, v, s))
    assert (g_m.shape, g_v.shape, g_s.shape) == ((2, 3, 4), (4,), ())
    np.testing.assert_allclose(g_v.numpy(), m.numpy().sum(axis=(0, 1)))
    np.testing.assert_allclose(g_s.numpy(), 24.0)


def test_paths_through_non_differentiable_ops_contribute_zero() -> None:
    x = t64([[0.5, -2.0], [3.0, 1.0]])
    picked = ops.astype(ops.argmax(x, axis=1), tn.Float64)  # no gradient through argmax
    loss = ops.reduce_sum(picked * 3.0 + ops.sign(x) * x)
    np.testing.assert_array_equal(tn.grad(loss, x).numpy(), np.sign(x.numpy()))
    # the gradient OF such an op's output with respect to its input is zero, not an error
    np.testing.assert_array_equal(tn.grad(ops.reduce_sum(ops.sign(x)), x).numpy(), np.zeros((2, 2)))


def test_where_differentiates_its_branches_not_its_condition() -> None:
    cond = tn.tensor(np.array([1, 0, 1], np.int32), tn.Int32, tn.CPU, tn.Dim1)
    a, b = t64([1.0, 2.0, 3.0]), t64([4.0, 5.0, 6.0])
    g_a, g_b = tn.grad(ops.reduce_sum(ops.where(cond, a * a, b)), (a, b))
    np.testing.assert_array_equal(g_a.numpy(), [2.0, 0.0, 6.0])
    np.testing.assert_array_equal(g_b.numpy(), [0.0, 1.0, 0.0])


def test_grad_with_respect_to_an_intermediate_node() -> None:
    x = t64([1.0, 2.0])
    h = x * 3.0
    loss = ops.reduce_sum(ops.square(h))
    np.testing.assert_allclose(tn.grad(loss, h).numpy(), 2 * 3.0 * x.numpy())


def test_vjp_of_a_tuple_of_outputs() -> None:
    x = t64([1.0, 2.0, 3.0])
    y1, y2 = ops.exp(x), x * x
    c1, c2 = t64([1.0, 0.0, 2.0]), t64([0.5, 0.5, 0.5])
    g = tn.vjp((y1, y2), x, (c1, c2)).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(g, np.exp(xv) * c1.numpy() + 2 * xv * c2.numpy())


def test_grad_equals_vjp_with_a_seed_of_one() -> None:
    x = t64([0.3, -0.7])
    y = ops.reduce_sum(ops.sin(x) * x)
    np.testing.assert_allclose(tn.grad(y, x).numpy(), tn.vjp(y, x, t64(1.0)).numpy())


def test_second_order_hessian_vector_product() -> None:
    x, v = t64([0.3, -0.7, 1.1]), t64([1.0, 2.0, -1.0])
    f = ops.reduce_sum(ops.exp(x) * ops.sin(x))
    hvp = tn.grad(ops.reduce_sum(tn.grad(f, x) * v), x).numpy()
    xv = x.numpy()
    second = np.exp(xv) * (np.sin(xv) + 2 * np.cos(xv) - np.sin(xv))  # (e^x sin x)''
    np.testing.assert_allclose(hvp, second * v.numpy())


class Doubled(tn.TensorLike[E, Dv, D]):
    """A user data kind: twice its base, expressed through ``lower()``."""

    __slots__ = ("_base",)

    def __init__(self, base: tn.TensorLike[E, Dv, D]) -> None:
        self._base = base

    @property
    def shape(self) -> tuple[int, ...]:
        return self._base.shape

    @property
    def elem(self) -> type[E]:
        return self._base.elem

    @property
    def device(self) -> type[Dv]:
        return self._base.device

    def lower(self) -> tn.TensorLike[E, Dv, D]:
        return self._base + self._base

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Doubled) and other._base == self._base

    def __hash__(self) -> int:
        return hash((Doubled, self._base))


def test_user_data_kinds_are_differentiated_through_lower() -> None:
    x = t64([1.0, -1.0])
    d = Doubled(x)
    loss = ops.reduce_sum(ops.square(d) + d)
    np.testing.assert_allclose(tn.grad(loss, x).numpy(), 8 * x.numpy() + 2)


def test_dynamic_data_is_differentiated_like_its_content() -> None:
    x = t64([1.0, 2.0])
    loss = ops.reduce_sum(tn.make_dynamic(x * x))
    np.testing.assert_allclose(tn.grad(loss, x).numpy(), [2.0, 4.0])


def test_float32_gradients_stay_float32() -> None:
    w = t32(RNG.normal(size=(3, 2)))
    g = tn.grad(ops.reduce_mean(w * w), w)
    assert g.elem is tn.Float32
    assert g.numpy().dtype == np.float32


# --- bad input: each error names what was wrong, declared vs received, the line, a fix ---


def test_grad_of_a_non_scalar_output_says_to_reduce_or_use_vjp() -> None:
    w, _ = params()
    y: Any = w * 2.0
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)non-scalar output.*Dim2\]\(3, 4\).*built at : test_autodiff\.py:\d+.*tn\.vjp",
    ):
        tn.grad(y, w)


def test_grad_of_an_integer_output_is_an_element_error() -> None:
    n: Any = tn.tensor(np.array(3, np.int32), tn.Int32, tn.CPU, tn.Dim0)
    y: Any = n * 2
    with pytest.raises(tn.ElemTypeError, match=r"(?s)integer output.*Int32.*Float32 or Float64"):
        tn.grad(y, n)


def test_grad_with_respect_to_an_integer_tensor_is_an_element_error() -> None:
    x = t64([1.0, 2.0])
    n: Any = tn.tensor(np.array([1, 2], np.int32), tn.Int32, tn.CPU, tn.Dim1)
    loss = ops.reduce_sum(x * ops.astype(n, tn.Float64))
    both: Any = (x, n)
    with pytest.raises(tn.ElemTypeError, match=r"(?s)integer tensor \(wrt\[1\]\).*Int32.*drop it"):
        tn.grad(loss, both)


def test_wrt_that_is_not_data_is_an_operand_error() -> None:
    x = t64([1.0, 2.0])
    loss = ops.reduce_sum(x)
    bad: Any = np.ones(2)
    with pytest.raises(
        tn.OperandError, match=r"(?s)with respect to ndarray.*accepted.*tn\.grad\(loss, \(w, b\)\)"
    ):
        tn.grad(loss, bad)
    mixed: Any = {"x": x, "lr": 0.1}
    with pytest.raises(
        tn.OperandError, match=r"(?s)wrt\['lr'\]: it is not typed_nn data.*0\.1 \(float\)"
    ):
        tn.grad(loss, mixed)


def test_y_that_is_not_data_is_an_operand_error() -> None:
    x = t64([1.0])
    y: Any = 3.0
    with pytest.raises(tn.OperandError, match=r"(?s)y is not typed_nn data.*3\.0 \(float\)"):
        tn.grad(y, x)


def test_vjp_cotangent_of_another_shape_element_or_device() -> None:
    x = t64([[1.0, 2.0]])
    y: Any = x * 2.0
    with pytest.raises(
        tn.ShapeError,
        match=r"(?s)cotangent has shape \(2,\), the output \(1, 2\).*exactly its output's shape",
    ):
        tn.vjp(y, x, t64([1.0, 1.0]))
    with pytest.raises(
        tn.ElemTypeError, match=r"(?s)Float32 elements, the output Float64.*ops\.astype"
    ):
        tn.vjp(y, x, t32([[1.0, 1.0]]))
    not_data: Any = np.ones((1, 2))
    with pytest.raises(tn.OperandError, match=r"(?s)cotangent is not typed_nn data"):
        tn.vjp(y, x, not_data)


def test_vjp_cotangent_on_another_device_is_a_device_error() -> None:
    x = t64([1.0, 2.0])
    on_gpu: Any = ops.to_device(t64([1.0, 1.0]), tn.GPU)  # a node: no GPU needed to build it
    with pytest.raises(
        tn.DeviceError, match=r"(?s)lives on GPU, the output on CPU.*ops\.to_device"
    ):
        tn.vjp(x * 2.0, x, on_gpu)


def test_vjp_outputs_and_cotangents_must_pair_up() -> None:
    x = t64([1.0, 2.0])
    outs: Any = (x * 2.0, x * 3.0)
    with pytest.raises(tn.OperandError, match=r"(?s)one to one.*tuple of 2.*tuple of 1"):
        tn.vjp(outs, x, (t64([1.0, 1.0]),))
    with pytest.raises(tn.OperandError, match=r"(?s)one to one.*tuple of 2"):
        tn.vjp(outs, x, t64([1.0, 1.0]))
