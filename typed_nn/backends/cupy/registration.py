"""Register the GPU implementation of every op (run once, when cupy is first needed).

Most ops share the numpy backend's function: it runs on cupy arrays through numpy's
``__array_ufunc__`` / ``__array_function__`` dispatch, and takes its allocations from its
inputs' library (``backends/xp.py``), so reductions, softmax, ``dot`` (cuBLAS), layout,
joins and convolution run as cupy calls. The few that need a GPU form of their own
(the losses, ``to_device``) live beside this file. Element-wise regions are compiled into
one kernel each (``region.py``); the write-into forms registered here let the evaluator
find those regions.
"""

from __future__ import annotations

from ...devices import set_region_compiler
from ...ops.declare import Impl, implement, implementation
from ...tags import CPU, GPU
from .. import numpy as _numpy  # noqa: F401 - the shared CPU implementations must be registered
from . import convert, fused, nn, region

__all__ = ["GPU_OWN", "SHARED", "register", "registered"]

SHARED: tuple[str, ...] = (
    # element-wise (backends/numpy/elementwise.py, activation.py, select.py)
    *("add", "sub", "mul", "div", "negative", "abs", "sign", "exp", "log", "sqrt", "square"),
    *("sin", "cos", "tan", "asin", "acos", "asinh", "acosh", "sigmoid", "tanh", "relu"),
    *("abs_grad", "exp_grad", "log_grad", "sqrt_grad", "square_grad", "sin_grad", "cos_grad"),
    *("tan_grad", "asin_grad", "acos_grad", "asinh_grad", "acosh_grad"),
    *("sigmoid_grad", "tanh_grad", "relu_grad", "maximum", "where", "interpolate"),
    # structure, layout, joins, conversions
    *("dot", "matmul", "slice", "zeros", "fill", "one_hot", "stack", "concat"),
    *("permute", "reshape", "tile", "tile_grad", "narrow", "astype"),
    # reductions and normalisation
    *("reduce_sum", "reduce_mean", "reduce_max", "argmax"),
    *("softmax", "log_softmax", "softmax_grad", "log_softmax_grad"),
    # convolution and pooling
    *("conv2d", "conv2d_grad_weight", "conv2d_grad_input", "max_pool2d", "max_pool2d_grad"),
    *("max_pool2d_select", "avg_pool2d", "avg_pool2d_grad"),
    # embedding and dropout (backends/numpy/embedding.py; the mask is drawn on the host)
    *("embedding", "embedding_grad", "dropout_mask"),
    # nodes made by the evaluator's rewrites and batching
    *("pick_row", "pick_col", "softmax_nll_grad"),
    *("batch_stack", "batch_item", "batch_sum", "batch_matmul", "batch_dot_shared_left"),
    *("batch_dot_sum", "batch_softmax_nll_grad"),
)
"""Ops whose numpy implementation is registered unchanged for the GPU."""

GPU_OWN: dict[str, Impl] = {
    "nll_loss": nn.nll_loss,
    "nll_loss_grad": nn.nll_loss_grad,
    "batch_nll_loss": nn.batch_nll_loss,
    "to_device": convert.to_device,
}
"""Ops with a GPU implementation of their own."""

_done: list[bool] = []


def registered() -> bool:
    """Whether :func:`register` has run in this process."""
    return bool(_done)


def register() -> None:
    """Register every GPU implementation and write-into form; later calls do nothing.

    Nothing here touches cupy: the implementations look the module up when they run.
    """
    if _done:
        return
    _done.append(True)
    for name in SHARED:
        implement(name, GPU)(implementation(name, CPU))
    for name, fn in GPU_OWN.items():
        implement(name, GPU)(fn)
    fused.register_out_forms()
    set_region_compiler(GPU, region.compile_region)  # fused regions: one generated kernel each
