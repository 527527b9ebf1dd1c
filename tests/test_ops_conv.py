"""conv2d, max_pool2d and their gradients: values vs direct loops, gradients vs central
finite differences (float64), and every build-time error."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import numerical_gradient, t32, t64

import typed_nn as tn
from typed_nn import ops

Array = np.ndarray[Any, Any]
CASES = [  # (x shape, w shape, stride, padding)
    ((2, 3, 6, 5), (4, 3, 3, 3), 1, 0),
    ((1, 2, 7, 7), (3, 2, 3, 2), 2, 1),
    ((2, 1, 5, 8), (2, 1, 2, 3), (1, 2), (2, 0)),
    ((1, 2, 6, 6), (2, 2, 3, 3), 2, 0),  # (6 - 3) // 2: the last input row is never read
]


def pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else v


def naive_conv(x: Array, w: Array, stride: Any, padding: Any) -> Array:
    """Direct definition: out[n, o, i, j] = sum over c, a, b of xpad[n, c, i*s+a, j*s+b] w[o, c, a, b]."""
    (sh, sw), (ph, pw) = pair(stride), pair(padding)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, _, h, wd = xp.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, (h - kh) // sh + 1, (wd - kw) // sw + 1))
    for idx in np.ndindex(out.shape):
        b, oc, i, j = idx
        out[idx] = np.sum(xp[b, :, i * sh : i * sh + kh, j * sw : j * sw + kw] * w[oc])
    return out


def naive_pool(x: Array, size: Any, stride: Any) -> Array:
    (kh, kw), (sh, sw) = pair(size), pair(stride)
    n, c, h, w = x.shape
    out = np.zeros((n, c, (h - kh) // sh + 1, (w - kw) // sw + 1))
    for b, ch, i, j in np.ndindex(out.shape):
        out[b, ch, i, j] = x[b, ch, i * sh : i * sh + kh, j * sw : j * sw + kw].max()
    return out


@pytest.mark.parametrize(("xs", "ws", "stride", "padding"), CASES)
def test_conv2d_matches_the_direct_definition(xs: Any, ws: Any, stride: Any, padding: Any) -> None:
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    out = ops.conv2d(t64(x), t64(w), stride, padding)
    expected = naive_conv(x, w, stride, padding)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_conv2d_float32_and_output_size_formula() -> None:
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3, 9, 9)), rng.standard_normal((5, 3, 4, 4))
    out = ops.conv2d(t32(x), t32(w), stride=2, padding=1)
    assert out.shape == (2, 5, (9 + 2 - 4) // 2 + 1, (9 + 2 - 4) // 2 + 1)
    result = out.numpy()
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, naive_conv(x, w, 2, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("xs", "ws", "stride", "padding"), CASES)
def test_conv2d_gradients_match_finite_differences(
    xs: Any, ws: Any, stride: Any, padding: Any
) -> None:
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    g = rng.standard_normal(naive_conv(x, w, stride, padding).shape)

    def loss_of_x(xv: Array) -> float:
        return float(np.sum(ops.conv2d(t64(xv), t64(w), stride, padding).numpy() * g))

    def loss_of_w(wv: Array) -> float:
        return float(np.sum(ops.conv2d(t64(x), t64(wv), stride, padding).numpy() * g))

    dx = ops.conv2d_grad_input(t64(g), t64(w), xs, stride, padding)
    dw = ops.conv2d_grad_weight(t64(g), t64(x), ws, stride, padding)
    assert dx.shape == xs
    assert dw.shape == ws
    np.testing.assert_allclose(dx.numpy(), numerical_gradient(loss_of_x, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dw.numpy(), numerical_gradient(loss_of_w, w), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("size", "stride"), [(2, None), (3, 2), (2, 1), ((2, 3), (1, 2))])
def test_max_pool2d_matches_the_direct_definition(size: Any, stride: Any) -> None:
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 8))
    out = ops.max_pool2d(t64(x), size, stride)
    np.testing.assert_array_equal(
        out.numpy(), naive_pool(x, size, size if stride is None else stride)
    )


@pytest.mark.parametrize(("size", "stride"), [(2, None), (3, 2), (2, 1), ((2, 3), (1, 2))])
def test_max_pool2d_grad_matches_finite_differences(size: Any, stride: Any) -> None:
    rng = np.random.default_rng(5)
    x = rng.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) / 10.0  # distinct: no ties
    g = rng.standard_normal(ops.max_pool2d(t64(x), size, stride).shape)

    def loss(xv: Array) -> float:
        return float(np.sum(ops.max_pool2d(t64(xv), size, stride).numpy() * g))

    dx = ops.max_pool2d_grad(t64(g), t64(x), size, stride)
    assert dx.shape == x.shape
    np.testing.assert_allclose(dx.numpy(), numerical_gradient(loss, x, eps=1e-4), atol=1e-7)


def test_max_pool2d_grad_gives_ties_to_the_first_maximum() -> None:
    x = np.ones((1, 1, 2, 2))
    dx = ops.max_pool2d_grad(t64(np.full((1, 1, 1, 1), 3.0)), t64(x), 2).numpy()
    np.testing.assert_array_equal(dx, [[[[3.0, 0.0], [0.0, 0.0]]]])


def test_conv2d_rejects_a_channel_mismatch() -> None:
    x, w = t32(np.ones((1, 3, 5, 5))), t32(np.ones((2, 4, 3, 3)))
    with pytest.raises(
        tn.ShapeError, match=r"cannot build conv2d: input channels differ \(3 vs 4\)"
    ):
        ops.conv2d(x, w)


def test_conv2d_rejects_a_kernel_larger_than_the_padded_input() -> None:
    x, w = t32(np.ones((1, 1, 4, 4))), t32(np.ones((1, 1, 7, 3)))
    with pytest.raises(tn.ShapeError, match=r"the 7x3 window is larger than the padded 6x6 input"):
        ops.conv2d(x, w, padding=1)


def test_conv2d_rejects_other_ranks_ints_and_bad_params() -> None:
    w = t32(np.ones((1, 1, 2, 2)))
    with pytest.raises(tn.ShapeError, match=r"cannot build conv2d: input has rank 3"):
        ops.conv2d(t32(np.ones((1, 4, 4))), w)
    ints = tn.tensor(np.ones((1, 1, 4, 4), np.int32), tn.Int32, tn.CPU, tn.Dim4)
    with pytest.raises(tn.ElemTypeError, match=r"cannot build conv2d: it needs float elements"):
        ops.conv2d(ints, ints)  # type: ignore[tag-mismatch]
    with pytest.raises(tn.ShapeError, match=r"stride must be an int >= 1 or a pair"):
        ops.conv2d(t32(np.ones((1, 1, 4, 4))), w, stride=0)
    with pytest.raises(tn.ShapeError, match=r"padding must be an int >= 0 or a pair"):
        ops.conv2d(t32(np.ones((1, 1, 4, 4))), w, padding=(1, -1))


def test_conv2d_grads_reject_inconsistent_shapes() -> None:
    g, w, x = t64(np.ones((2, 3, 4, 4))), t64(np.ones((3, 2, 3, 3))), t64(np.ones((2, 2, 6, 6)))
    with pytest.raises(tn.ShapeError, match=r"the gradient is not shaped like the forward output"):
        ops.conv2d_grad_input(g, w, (2, 2, 7, 7))
    with pytest.raises(tn.ShapeError, match=r"conv2d_grad_input: input channels differ \(5 vs 2\)"):
        ops.conv2d_grad_input(g, w, (2, 5, 6, 6))
    with pytest.raises(
        tn.ShapeError, match=r"conv2d_grad_weight: output channels differ \(3 vs 4\)"
    ):
        ops.conv2d_grad_weight(g, x, (4, 2, 3, 3))
    with pytest.raises(tn.ShapeError, match=r"input_shape must be a tuple of 4 sizes"):
        ops.conv2d_grad_input(g, w, (2, 2, 6))


def test_max_pool2d_rejects_a_window_larger_than_the_input() -> None:
    with pytest.raises(tn.ShapeError, match=r"cannot build max_pool2d: the 5x5 window is larger"):
        ops.max_pool2d(t32(np.ones((1, 1, 4, 4))), 5)


def test_max_pool2d_grad_rejects_a_wrong_gradient() -> None:
    x = t32(np.ones((1, 1, 4, 4)))
    with pytest.raises(
        tn.ShapeError, match=r"expected(.|\n)*\(1, 1, 2, 2\) \(the max_pool2d output\)"
    ):
        ops.max_pool2d_grad(t32(np.ones((1, 1, 3, 3))), x, 2)


def test_float32_results_match_float64() -> None:
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2))
    g = rng.standard_normal((2, 4, 4, 4))
    gp = rng.standard_normal((2, 3, 3, 3))

    def both(build: Any) -> None:
        r32, r64 = build(t32).numpy(), build(t64).numpy()
        assert r32.dtype == np.float32
        np.testing.assert_allclose(r32, r64, rtol=1e-4, atol=1e-4)

    both(lambda t: ops.conv2d(t(x), t(w), 2, 1))
    both(lambda t: ops.conv2d_grad_input(t(g), t(w), x.shape, 2, 1))
    both(lambda t: ops.conv2d_grad_weight(t(g), t(x), w.shape, 2, 1))
    both(lambda t: ops.max_pool2d(t(x), 2))
    both(lambda t: ops.max_pool2d_grad(t(gp), t(x), 2))
