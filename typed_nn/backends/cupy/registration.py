"""Register the GPU implementation of every op (run once, when cupy is first needed).

Most ops share the numpy backend's function: it runs on cupy arrays through numpy's
``__array_ufunc__`` / ``__array_function__`` dispatch, and takes its allocations from its
inputs' library (``typed_nn.devices.module_of``), so reductions, softmax, layout,
joins and convolution run as cupy calls. The few that need a GPU form of their own
(the losses, ``label_pick`` without a host sync, ``to_device``, the matrix products through
a cuBLAS handle that CUDA graphs can capture: ``blas.py``) live beside this file. Element-wise regions are compiled into
one kernel each (``region.py``); the write-into forms registered here let the evaluator
find those regions. Targets are written through ``convert.copy``, which copies a source
that overlaps its target aside first (cupy's ``copyto`` does not).
"""

from __future__ import annotations

from dataclasses import replace

from ...devices import device_of, register_device
from ...ops.declare import Impl, declaration, implement, implementation
from ...tags import CPU, GPU
from .. import numpy as _numpy  # the shared CPU implementations
from . import blas, convert, graph, nn, region

__all__ = ["GPU_OWN", "register", "registered", "shared"]

GPU_OWN: dict[str, Impl] = {
    "nll_loss": nn.nll_loss,
    "nll_loss_grad": nn.nll_loss_grad,
    "batch_nll_loss": nn.batch_nll_loss,
    "label_pick": nn.label_pick,
    "label_pick_grad": nn.label_pick_grad,
    "log_softmax_pick_grad": nn.log_softmax_pick_grad,
    "to_device": convert.to_device,
    "embedding": nn.embedding,
    "embedding_grad": nn.embedding_grad,
    "dot": blas.dot,  # products through typed_nn's cuBLAS handle: captured into CUDA graphs
    "matmul": blas.matmul,
    "sum_of_products": blas.sum_of_products,
}
"""Ops with a GPU implementation of their own."""


def shared() -> list[str]:
    """Ops whose numpy implementation is registered unchanged for the GPU: every op the
    numpy backend registered (``backends/numpy``), but those in :data:`GPU_OWN`."""
    return sorted(op for op in _numpy.REGISTERED if op not in GPU_OWN)


_done: list[bool] = []


def registered() -> bool:
    """Whether :func:`register` has run in this process."""
    return bool(_done)


def register() -> None:
    """Register every GPU implementation; later calls do nothing. An element-wise one is
    registered ``writes_into``, which tells the evaluator's region finder it joins a fused
    region (compiled into one kernel: ``region.py``); single GPU nodes run without ``out``.

    Nothing here touches cupy: the implementations look the module up when they run.
    """
    if _done:
        return
    _done.append(True)
    for name in shared():
        implement(name, GPU, writes_into=_elementwise(name))(implementation(name, CPU))
    for name, fn in GPU_OWN.items():
        implement(name, GPU, writes_into=_elementwise(name))(fn)
    register_device(
        replace(
            device_of(GPU),
            compile_region=region.compile_region,  # fused regions: one generated kernel each
            copy=convert.copy,  # a target written from a view of itself: copied aside first
            may_share=convert.may_share,
            step_graph=graph.StepGraph,  # a compiled step replayed as one CUDA graph
        )
    )


def _elementwise(op: str) -> bool:
    decl = declaration(op)
    return decl is not None and decl.kind == "elementwise"
