"""CUDA source for one fused element-wise region (pure Python: no cupy needed).

A region is described by a :class:`RegionSpec`: its inputs (kind and dtype) and its steps in
order, each an op applied to inputs or earlier steps. :func:`kernel_source` turns it into
the four strings of a ``cupy.ElementwiseKernel``: one loop body where every step is one C
expression held in a register, so the region reads each input once and writes its result
once. MetaNN broadcasting: an input of lower rank (≥ 1) than the result is passed ``raw``
and read at ``i % count``, ``i`` being the result's row-major element index; rank-0 inputs
and Python numbers are plain scalars. (A region with an input whose size-1 dims expand,
numpy's rule, gets no kernel: ``region.region_spec`` declines it and it runs op by op.)

>>> spec = RegionSpec(
...     (Input("array", "float32"),), (Step("sigmoid", (Ref("in", 0),), "float32"),)
... )
>>> kernel_source(spec).operation
'const float t0 = 1.0f / (1.0f + expf(-in0));\\nout0 = t0;'
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal, NamedTuple

from ...ops.declare import declaration

__all__ = [
    "Input",
    "KernelSource",
    "Ref",
    "RegionSpec",
    "Step",
    "c_type",
    "expression",
    "kernel_source",
    "supports",
]

InputKind = Literal["array", "broadcast", "number"]


class Ref(NamedTuple):
    """A step argument: ``("in", k)`` is input ``k``, ``("step", j)`` the value of step ``j``."""

    kind: Literal["in", "step"]
    pos: int


@dataclass(frozen=True, slots=True)
class Input:
    """A region input: an ``array`` shaped like the result (or rank 0), a lower-rank
    ``broadcast`` array, or a Python ``number``; ``dtype`` is a numpy dtype name."""

    kind: InputKind
    dtype: str


@dataclass(frozen=True, slots=True)
class Step:
    """``op`` applied to ``args``, giving a value of numpy dtype ``dtype``."""

    op: str
    args: tuple[Ref, ...]
    dtype: str


@dataclass(frozen=True, slots=True)
class RegionSpec:
    """A region's structure and dtypes: the kernel cache key (values and shapes are not in
    it, so a training step that changes numbers or batch sizes reuses the kernel)."""

    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class KernelSource:
    """The arguments of ``cupy.ElementwiseKernel(in_params, out_params, operation, name)``."""

    in_params: str
    out_params: str
    operation: str
    name: str


_C_TYPES = {
    "float32": "float",
    "float64": "double",
    "int32": "int",
    "int64": "long long",
    "bool": "bool",
}


def c_type(dtype: str) -> str:
    """The C type of a numpy dtype name (``float32`` -> ``float``)."""
    return _C_TYPES[dtype]


_MATH = (
    *("exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "asinh", "acosh", "tanh", "erf"),
)


def _words(dtype: str) -> dict[str, str]:
    """Per-dtype spellings: float functions take an ``f`` suffix and so do their literals."""
    if dtype == "float32":
        words = {f: f + "f" for f in _MATH}
        words.update(abs="fabsf", zero="0.0f", one="1.0f", two="2.0f")
    elif dtype == "float64":
        words = {f: f for f in _MATH}
        words.update(abs="fabs", zero="0.0", one="1.0", two="2.0")
    else:  # integers: only the ops that accept them use these
        words = {f: f for f in _MATH}
        words.update(abs="llabs" if dtype == "int64" else "abs", zero="0", one="1", two="2")
    return words


def expression(op: str) -> str | None:
    """The C expression of one element of ``op`` (its declaration's ``cuda``; ``{0}``,
    ``{1}``, ``{2}`` are the operands, always plain names, the other fields the dtype's
    spellings), or None where it has none. Each mirrors the numpy backend's formula, so float
    results agree to rounding."""
    decl = declaration(op)
    return None if decl is None else decl.cuda


def supports(op: str, dtypes: tuple[str, ...]) -> bool:
    """Whether a kernel can compute ``op`` with operand/result dtypes ``dtypes``."""
    return expression(op) is not None and all(d in _C_TYPES for d in dtypes)


def _operand(spec: RegionSpec, ref: Ref) -> str:
    if ref.kind == "step":
        return f"t{ref.pos}"
    return f"bc{ref.pos}" if spec.inputs[ref.pos].kind == "broadcast" else f"in{ref.pos}"


def kernel_source(spec: RegionSpec) -> KernelSource:
    """The ElementwiseKernel strings computing ``spec``'s last step into ``out0``."""
    params = []
    lines = []
    for k, inp in enumerate(spec.inputs):
        if inp.kind == "broadcast":
            params.append(f"raw {inp.dtype} in{k}")
            lines.append(f"const {c_type(inp.dtype)} bc{k} = in{k}[i % in{k}.size()];")
        else:
            params.append(f"{inp.dtype} in{k}")
    for j, step in enumerate(spec.steps):
        args = [_operand(spec, a) for a in step.args]
        expr = expression(step.op)
        assert expr is not None, f"{step.op} has no kernel expression"
        expr = expr.format(*args, **_words(step.dtype))
        lines.append(f"const {c_type(step.dtype)} t{j} = {expr};")
    last = len(spec.steps) - 1
    lines.append(f"out0 = t{last};")
    return KernelSource(
        in_params=", ".join(params),
        out_params=f"{spec.steps[last].dtype} out0",
        operation="\n".join(lines),
        name=_name(spec),
    )


def _name(spec: RegionSpec) -> str:
    """``typed_nn_<first ops>_<hash>``: readable in a profiler, unique per structure."""
    digest = hashlib.sha1(repr(spec).encode()).hexdigest()[:10]
    ops = "_".join(s.op for s in spec.steps[:4])
    return f"typed_nn_{ops}_{digest}"
