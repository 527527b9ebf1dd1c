"""numpy implementations of conv2d, max_pool2d and their gradients, via im2col.

``sliding_window_view`` gives every window of the (padded) input as a strided view of shape
(N, C, H', W', KH, KW) without copying; ``tensordot`` then contracts it with the weights in
one BLAS call (numpy copies the view into the im2col matrix there). The gradients that
scatter back into the input loop over the KH * KW kernel offsets, never over pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...ops.declare import implement
from ...tags import CPU

Array = Any
Pair = tuple[int, int]


def _windows(x: Array, kernel: Pair, stride: Pair, padding: Pair) -> Array:
    """(N, C, H', W', KH, KW) view of every window of ``x`` padded with zeros."""
    ph, pw = padding
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    view = sliding_window_view(x, kernel, axis=(2, 3))
    return view[:, :, :: stride[0], :: stride[1]]


@implement("conv2d", CPU)
def conv2d(x: Array, w: Array, stride: Pair, padding: Pair) -> Array:
    cols = _windows(x, (w.shape[2], w.shape[3]), stride, padding)
    out = np.tensordot(cols, w, axes=([1, 4, 5], [1, 2, 3]))  # (N, H', W', O)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


@implement("conv2d_grad_weight", CPU)
def conv2d_grad_weight(
    g: Array, x: Array, weight_shape: tuple[int, ...], stride: Pair, padding: Pair
) -> Array:
    cols = _windows(x, (weight_shape[2], weight_shape[3]), stride, padding)
    return np.tensordot(g, cols, axes=([0, 2, 3], [0, 2, 3]))  # (O, C, KH, KW)


def _scatter(
    cols: Array, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair
) -> Array:
    """Add window values (N, C, H', W', KH, KW) back to their input positions (N, C, H, W)."""
    n, c, h, w = shape
    ph, pw = padding
    (sh, sw), (oh, ow) = stride, cols.shape[2:4]
    out = np.zeros((n, c, h + 2 * ph, w + 2 * pw), cols.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            out[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += cols[..., i, j]
    return out[:, :, ph : ph + h, pw : pw + w]


@implement("conv2d_grad_input", CPU)
def conv2d_grad_input(
    g: Array, w: Array, input_shape: tuple[int, ...], stride: Pair, padding: Pair
) -> Array:
    cols = np.tensordot(g, w, axes=([1], [0]))  # (N, H', W', C, KH, KW)
    cols = cols.transpose(0, 3, 1, 2, 4, 5)
    kernel = (w.shape[2], w.shape[3])
    return np.ascontiguousarray(_scatter(cols, input_shape, kernel, stride, padding))


@implement("max_pool2d", CPU)
def max_pool2d(x: Array, size: Pair, stride: Pair) -> Array:
    return _windows(x, size, stride, (0, 0)).max(axis=(4, 5))


@implement("max_pool2d_grad", CPU)
def max_pool2d_grad(g: Array, x: Array, size: Pair, stride: Pair) -> Array:
    windows = _windows(x, size, stride, (0, 0))
    flat = windows.reshape(*windows.shape[:4], size[0] * size[1])
    first_max = flat.argmax(axis=4)  # the first maximum of each window gets the gradient
    routed = np.zeros(flat.shape, g.dtype)
    np.put_along_axis(routed, first_max[..., None], g[..., None], axis=4)
    cols = routed.reshape(windows.shape)
    return np.ascontiguousarray(_scatter(cols, x.shape, size, stride, (0, 0)))
