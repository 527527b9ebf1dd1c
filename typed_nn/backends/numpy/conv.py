"""numpy implementations of conv2d, max_pool2d and their gradients, via im2col.

``sliding_window_view`` gives every window of the (padded) input as a strided view of shape
(N, C, H', W', KH, KW) without copying. im2col copies that view once into a contiguous
(C*KH*KW, N*H'*W') matrix, ordered so that the copy's inner loop runs along W' (a fast copy;
copying in window order, with KW innermost, was measured 10x slower), and the convolution
and both gradients are then single matrix products. Scattering back into the input
(``col2im``) and pooling loop over the KH * KW kernel offsets, never over pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...devices import module_of
from ...ops.declare import implement
from ...tags import CPU

Array = Any
Pair = tuple[int, int]


def _pad(x: Array, padding: Pair) -> Array:
    """``x`` with ``padding`` zeros around H and W (a zeroed array and one copy: ``np.pad``'s
    generic path costs more than the copy on small images)."""
    ph, pw = padding
    if not (ph or pw):
        return x
    n, c, h, w = x.shape
    out = module_of(x).zeros((n, c, h + 2 * ph, w + 2 * pw), x.dtype)
    out[:, :, ph : ph + h, pw : pw + w] = x
    return out


def _im2col(x: Array, kernel: Pair, stride: Pair, padding: Pair) -> Array:
    """(C, KH, KW, N, H', W') contiguous copy of every window of ``x`` padded with zeros."""
    xp = module_of(x)
    windows = sliding_window_view if xp is np else xp.lib.stride_tricks.sliding_window_view
    view = windows(_pad(x, padding), kernel, axis=(2, 3))
    view = view[:, :, :: stride[0], :: stride[1]]  # (N, C, H', W', KH, KW)
    return xp.ascontiguousarray(view.transpose(1, 4, 5, 0, 2, 3))


def _col2im(
    cols: Array, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair
) -> Array:
    """Add (C, KH, KW, N, H', W') window values back at their input positions (N, C, H, W)."""
    n, c, h, w = shape
    (ph, pw), (sh, sw) = padding, stride
    oh, ow = cols.shape[4], cols.shape[5]
    xp = module_of(cols)
    out = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), cols.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            out[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += cols[:, i, j].transpose(
                1, 0, 2, 3
            )
    return xp.ascontiguousarray(out[:, :, ph : ph + h, pw : pw + w])


def _by_channel(g: Array) -> Array:
    """(N, O, H', W') -> contiguous (O, N*H'*W')."""
    return module_of(g).ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(g.shape[1], -1)


@implement("conv2d", CPU)
def conv2d(x: Array, w: Array, stride: Pair, padding: Pair) -> Array:
    cols = _im2col(x, (w.shape[2], w.shape[3]), stride, padding)
    n, oh, ow = cols.shape[3:]
    k = cols.shape[0] * cols.shape[1] * cols.shape[2]  # not -1: an empty batch has n = 0
    out = w.reshape(w.shape[0], -1) @ cols.reshape(k, n * oh * ow)  # (O, N*H'*W')
    return module_of(x).ascontiguousarray(out.reshape(w.shape[0], n, oh, ow).transpose(1, 0, 2, 3))


@implement("conv2d_grad_weight", CPU)
def conv2d_grad_weight(
    g: Array, x: Array, weight_shape: tuple[int, ...], stride: Pair, padding: Pair
) -> Array:
    cols = _im2col(x, (weight_shape[2], weight_shape[3]), stride, padding)
    k = cols.shape[0] * cols.shape[1] * cols.shape[2]
    return (_by_channel(g) @ cols.reshape(k, -1).T).reshape(weight_shape)


@implement("conv2d_grad_input", CPU)
def conv2d_grad_input(
    g: Array, w: Array, input_shape: tuple[int, ...], stride: Pair, padding: Pair
) -> Array:
    o, c, kh, kw = w.shape
    n, _, oh, ow = g.shape
    cols = (w.reshape(o, -1).T @ _by_channel(g)).reshape(c, kh, kw, n, oh, ow)
    return _col2im(cols, input_shape, (kh, kw), stride, padding)


def _offsets(x: Array, size: Pair, stride: Pair) -> list[tuple[int, int, Array]]:
    """(i, j, view of x at kernel offset (i, j) for every window), for each kernel offset."""
    (sh, sw), (_, _, h, w) = stride, x.shape
    oh, ow = (h - size[0]) // sh + 1, (w - size[1]) // sw + 1
    return [
        (i, j, x[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw])
        for i in range(size[0])
        for j in range(size[1])
    ]


def _window_max(views: list[tuple[int, int, Array]]) -> Array:
    out = views[0][2].copy()
    for _, _, view in views[1:]:
        np.maximum(out, view, out=out)
    return out


@implement("max_pool2d", CPU)
def max_pool2d(x: Array, size: Pair, stride: Pair) -> Array:
    return _window_max(_offsets(x, size, stride))


def _first_maxima(x: Array, size: Pair, stride: Pair) -> list[tuple[int, int, Array]]:
    """(i, j, mask of the windows whose first maximum sits at kernel offset (i, j))."""
    views = _offsets(x, size, stride)
    top = _window_max(views)
    claimed = module_of(x).zeros(top.shape, bool)  # windows whose first maximum was found
    masks = []
    for i, j, view in views:  # offsets in row-major order: the first maximum wins ties
        hit = np.equal(view, top)
        np.greater(hit, claimed, out=hit)  # hit and not yet claimed
        claimed |= hit
        masks.append((i, j, hit))
    return masks


@implement("max_pool2d_grad", CPU)
def max_pool2d_grad(g: Array, x: Array, size: Pair, stride: Pair) -> Array:
    dx = module_of(x).zeros(x.shape, g.dtype)
    (sh, sw), oh, ow = stride, g.shape[2], g.shape[3]
    for i, j, hit in _first_maxima(x, size, stride):
        dx[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += g * hit
    return dx


@implement("max_pool2d_select", CPU)
def max_pool2d_select(c: Array, x: Array, size: Pair, stride: Pair) -> Array:
    masks = _first_maxima(x, size, stride)
    out = module_of(x).zeros(masks[0][2].shape, c.dtype)
    (sh, sw), (oh, ow) = stride, out.shape[2:]
    for i, j, hit in masks:
        out += c[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] * hit
    return out


@implement("avg_pool2d", CPU)
def avg_pool2d(x: Array, size: Pair, stride: Pair) -> Array:
    # A sum of strided views: ``x.reshape(..., kh, ..., kw).mean(axis=(3, 5))`` for tiling
    # windows was measured 7x slower (numpy reduces over two small axes element by element).
    views = _offsets(x, size, stride)
    out = views[0][2].copy()
    for _, _, view in views[1:]:
        out += view
    out *= out.dtype.type(1.0 / (size[0] * size[1]))
    return out


@implement("avg_pool2d_grad", CPU)
def avg_pool2d_grad(g: Array, input_shape: tuple[int, ...], size: Pair, stride: Pair) -> Array:
    share = g * g.dtype.type(1.0 / (size[0] * size[1]))
    dx = module_of(g).zeros(input_shape, g.dtype)
    (sh, sw), oh, ow = stride, g.shape[2], g.shape[3]
    for i in range(size[0]):
        for j in range(size[1]):
            dx[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += share
    return dx
