"""Compile an evaluator region (a fused tree of element-wise nodes) into one GPU kernel.

The evaluator (``evaluate/fuse.py``) finds the maximal element-wise regions of a graph; on
the CPU it runs each as a blocked numpy pass. On the GPU a region is one
``ElementwiseKernel`` launch: :func:`region_spec` reads the region's members from the
evaluator's graph into a :class:`RegionSpec`, and :func:`compile_region` returns a callable
``fn(*operands, out=array)`` with the operand refs to pass, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...devices import array_module
from ...evaluate.graph import Graph, Ref, is_number
from ...tags import GPU
from .kernel_cache import KernelCache
from .kernel_source import Input, InputKind, RegionSpec, Step, supports
from .kernel_source import Ref as Arg

__all__ = ["FusedKernel", "compile_region", "kernel_cache", "region_spec"]


def region_spec(g: Graph, members: Sequence[int]) -> tuple[RegionSpec, list[Ref]] | None:
    """The structure of region ``members`` (root last) and the graph refs of its inputs, or
    None when some member has no kernel expression (the caller runs it op by op)."""
    shape = g.nodes[members[-1]].shape
    inputs: list[Input] = []
    refs: list[Ref] = []
    input_of: dict[int, int] = {}
    step_of: dict[int, int] = {}
    steps: list[Step] = []
    for m in members:
        n = g.nodes[m]
        dtypes = [n.dtype.name]
        args: list[Arg] = []
        for a in n.args:
            if is_number(a):  # each number its own scalar input, typed like its user
                inputs.append(Input("number", n.dtype.name))
                refs.append(a)
                args.append(Arg("in", len(inputs) - 1))
            elif a in step_of:
                args.append(Arg("step", step_of[a]))
            else:
                k = input_of.get(a)
                if k is None:
                    node = g.nodes[a]
                    if shape[len(shape) - len(node.shape) :] != node.shape:
                        return None  # a size-1 dim expands: ``i % count`` cannot read it

                    kind: InputKind = "broadcast" if 0 < len(node.shape) < len(shape) else "array"
                    k = input_of[a] = len(inputs)
                    inputs.append(Input(kind, node.dtype.name))
                    refs.append(a)
                dtypes.append(inputs[k].dtype)
                args.append(Arg("in", k))
        if n.params or not supports(n.op, tuple(dtypes)):
            return None
        step_of[m] = len(steps)
        steps.append(Step(n.op, tuple(args), n.dtype.name))
    return RegionSpec(tuple(inputs), tuple(steps)), refs


class FusedKernel:
    """One region's kernel as an evaluator step: ``fn(*operands, out=array) -> out``."""

    __slots__ = ("kernel", "spec")

    def __init__(self, kernel: Any, spec: RegionSpec) -> None:
        self.kernel = kernel
        self.spec = spec

    def __call__(self, *operands: Any, out: Any) -> Any:
        self.kernel(*operands, out)
        return out


_caches: list[KernelCache] = []


def kernel_cache() -> KernelCache:
    """The process's fused-kernel cache (built on ``cupy.ElementwiseKernel``)."""
    if not _caches:
        _caches.append(KernelCache(array_module(GPU).ElementwiseKernel))
    return _caches[0]


def compile_region(
    g: Graph, members: Sequence[int], cache: KernelCache | None = None
) -> tuple[FusedKernel, list[Ref]] | None:
    """The kernel of region ``members`` and the refs of its operands, or None (see
    :func:`region_spec`)."""
    found = region_spec(g, members)
    if found is None:
        return None
    spec, refs = found
    return FusedKernel((cache or kernel_cache()).get(spec), spec), refs
