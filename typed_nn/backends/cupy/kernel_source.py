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

__all__ = [
    "EXPRESSIONS",
    "Input",
    "KernelSource",
    "Ref",
    "RegionSpec",
    "Step",
    "c_type",
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


_MATH = ("exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "asinh", "acosh", "tanh")


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


_SIGN = "({0} > {zero} ? {one} : ({0} < {zero} ? -{one} : {0}))"  # NaN and 0 map to themselves
_SIGN_OF_1 = _SIGN.replace("{0}", "{1}")

EXPRESSIONS: dict[str, str] = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "negative": "-{0}",
    "abs": "{abs}({0})",
    "sign": _SIGN,
    "exp": "{exp}({0})",
    "log": "{log}({0})",
    "sqrt": "{sqrt}({0})",
    "square": "{0} * {0}",
    "sin": "{sin}({0})",
    "cos": "{cos}({0})",
    "tan": "{tan}({0})",
    "asin": "{asin}({0})",
    "acos": "{acos}({0})",
    "asinh": "{asinh}({0})",
    "acosh": "{acosh}({0})",
    "sigmoid": "{one} / ({one} + {exp}(-{0}))",
    "tanh": "{tanh}({0})",
    "relu": "({0} < {zero} ? {zero} : {0})",  # NaN stays NaN, as np.maximum(x, 0)
    "maximum": "(({0} > {1} || {0} != {0}) ? {0} : {1})",  # NaN wins, as np.maximum
    "where": "({0} != 0 ? {1} : {2})",
    "interpolate": "{1} * ({one} - {2}) + {0} * {2}",  # MetaNN's order: lam = 1 gives a
    "sigmoid_grad": "({one} - {1}) * {1} * {0}",
    "tanh_grad": "({one} - {1} * {1}) * {0}",
    "relu_grad": "({1} > {zero} ? {0} : {zero})",  # a select: inf * 0 is not NaN here
    "abs_grad": "{0} * " + _SIGN_OF_1,
    "exp_grad": "{0} * {exp}({1})",
    "log_grad": "{0} * ({one} / {1})",
    "sqrt_grad": "{0} * ({one} / ({sqrt}({1}) * {two}))",
    "square_grad": "{0} * ({1} * {two})",
    "sin_grad": "{0} * {cos}({1})",
    "cos_grad": "{0} * -{sin}({1})",
    "tan_grad": "{0} * ({one} / ({cos}({1}) * {cos}({1})))",
    "asin_grad": "{0} * ({one} / {sqrt}({one} - {1} * {1}))",
    "acos_grad": "{0} * -({one} / {sqrt}({one} - {1} * {1}))",
    "asinh_grad": "{0} * ({one} / {sqrt}({1} * {1} + {one}))",
    "acosh_grad": "{0} * ({one} / {sqrt}({1} * {1} - {one}))",
}
"""One C expression per element-wise op; ``{0}``, ``{1}``, ``{2}`` are the operands (always
plain names), the other fields the dtype's spellings. Each mirrors the numpy backend's
formula, so float results agree to rounding."""


def supports(op: str, dtypes: tuple[str, ...]) -> bool:
    """Whether a kernel can compute ``op`` with operand/result dtypes ``dtypes``."""
    return op in EXPRESSIONS and all(d in _C_TYPES for d in dtypes)


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
        expr = EXPRESSIONS[step.op].format(*args, **_words(step.dtype))
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
