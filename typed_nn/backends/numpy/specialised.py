"""Kernels specialised per node when a plan is compiled (see ``ops.declare.specialise``),
only for the ops whose plain kernel's per-call work (axes, branches, checks, a Python frame)
costs as much as its arithmetic on a training step's small tensors (measured: 0.8-2.3 us a
call on the digits MLP's). Each computes exactly the plain kernel's numbers
(``tests/test_specialised.py``)."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
from numpy._core.multiarray import c_einsum

from ...evaluate.pool import MIN_BYTES
from ...ops.declare import Site, Specialised, inline_kernel, specialise
from ...tags import CPU
from . import activation as _activation
from . import join as _join  # noqa: F401
from . import layout as _layout  # noqa: F401 - the plain forms must be registered
from . import nn as _nn
from . import reduce as _reduce
from . import structure as _structure

Array = Any
_sum = _reduce.add_reduce
_max = np.maximum.reduce
_einsum = c_einsum
"""What ``np.einsum`` calls (``optimize=False``), without its dispatch wrapper: 0.5 us of the
1.2 us a (32, 10) softmax's sums take."""


_DOT = """if {{carray}}:
    {{dot}}({0}, out={{out}})
else:
    {{matmul}}({0}, out={{out}})"""
"""A product of matrices or vectors as ``structure.product`` takes it (its operands filled
in by ``format``): ``np.dot`` into a C array (contiguous, aligned) buffer."""


def _trailing(site: Site, k: int) -> tuple[int, ...]:
    rank = len(site.shape)
    return tuple(range(rank - k, rank))


@specialise("dot", CPU)
def dot(site: Site) -> Specialised | None:
    """The plain kernel's one BLAS call into the buffer: ``np.matmul`` for matrix and vector
    products; tensordot's GEMM for the rest (a stack of rows times a matrix, every
    projection; a weight gradient's contraction over batch and sequence), without its copy."""
    a, b = site.operands
    if a is None or b is None or not site.shape:
        return None
    (k,) = site.params
    assert isinstance(k, int)
    if _structure.is_matmul(len(a[0]), len(b[0]), k):
        if a[1] == b[1] and _structure.by_dot(len(a[0]), len(b[0]), a[1]):
            return inline_kernel(_DOT.format("{0}, {1}"), writes=True, dot=np.dot, matmul=np.matmul)
        return Specialised(np.matmul, writes=True)

    def contract_into(a: Array, b: Array, *, out: Array) -> Array:
        return _structure.contract_into(a, b, k, out=out)

    return Specialised(contract_into, writes=True)


@specialise("narrow", CPU)
def narrow(site: Site) -> Specialised:
    """The same view, its index tuple built once."""
    axis, start, length = site.params
    assert all(isinstance(p, int) for p in site.params)
    index = (slice(None),) * axis + (slice(start, start + length),)
    return inline_kernel("{0}[{index}]", writes=False, index=index)


@specialise("slice", CPU)
def slice_(site: Site) -> Specialised:
    """The same view, ``x[index]`` written into the plan (no call, no result check)."""
    (index,) = site.params
    assert isinstance(index, int)
    return inline_kernel("{0}[{index}]", writes=False, index=index)


@specialise("permute", CPU)
def permute(site: Site) -> Specialised:
    """A view, as the plain kernel: ``.T`` for a reversed order, else ``.transpose``."""
    (order,) = site.params
    assert isinstance(order, tuple)
    if order == tuple(reversed(range(len(order)))):
        return inline_kernel("{0}.T", writes=False)
    return inline_kernel("{0}.transpose({order})", writes=False, order=order)


@specialise("reduce_sum", CPU)
def reduce_sum(site: Site) -> Specialised | None:
    """The plain kernel's sum into the buffer (a 0-d result keeps the plain path): a float
    sum over the leading dims into a vector is BLAS's ``ones·x`` written in place, its vector
    of ones made here (``reduce.sum_into``'s product, the same numbers, without its checks:
    on a (32, 64) bias gradient they cost more than the product); other sums are
    ``np.add.reduce``."""
    x = site.operands[0]
    if x is None or not site.shape:
        return None
    (shape, dtype), (dims, keep) = x, site.params
    blas = _reduce.column_sums_by_blas(shape, dims, dtype)
    if blas and not keep and len(site.shape) == 1:
        rows = math.prod(shape[: len(dims)])
        table = "{0}" if len(shape) == 2 else "{0}.reshape({table})"
        return inline_kernel(
            _DOT.format("{ones}, " + table),
            writes=True,
            dot=np.dot,
            matmul=np.matmul,
            ones=np.ones(rows, dtype),
            table=(rows, site.shape[0]),
        )
    add_reduce: Any = _reduce.sum_into if blas else _sum
    return inline_kernel(
        "{add_reduce}({0}, {dims}, {dtype}, {out}, {keep})",  # (axis, dtype, out, keepdims)
        writes=True,
        add_reduce=add_reduce,
        dims=dims,
        dtype=dtype,
        keep=keep,
    )


@specialise("relu_grad", CPU)
def relu_grad(site: Site) -> Specialised | None:
    """The plain kernel's product of bit patterns, its dtype checks done once."""
    g, x = site.operands
    bits = _activation.BITS.get(site.dtype)
    if g is None or x is None or bits is None or g[1] != site.dtype:
        return None
    # ``x > 0`` goes into memory the kernel keeps.
    names: dict[str, Any] = {
        "bits": bits,
        "multiply": np.multiply,
        "greater": np.greater,
        "mask": np.empty(x[0], bool),
        "zero": np.zeros((), x[1]),  # numpy converts a Python 0 at every call
    }
    if math.prod(site.shape) * site.dtype.itemsize >= MIN_BYTES:
        # A pooled buffer is free only while the pool holds its one reference: views of it
        # are made per call (their 0.5 us is nothing at this size), never kept.
        return inline_kernel(
            "{multiply}({0}.view({bits}), {greater}({1}, {zero}, out={mask}), "
            "out={out}.view({bits}))",
            writes=True,
            **names,
        )
    # The integer views of the last g and out, kept with them: a plan passes the same small
    # buffers (its own) at every call (a view costs 0.5 us). Holding the arrays keeps their
    # identity theirs.
    return inline_kernel(
        "if {0} is not {last}[0]:\n"
        "    {last}[0], {last}[1] = {0}, {0}.view({bits})\n"
        "if {out} is not {last}[2]:\n"
        "    {last}[2], {last}[3] = {out}, {out}.view({bits})\n"
        "{multiply}({last}[1], {greater}({1}, {zero}, out={mask}), out={last}[3])",
        writes=True,
        last=[None, None, None, None],
        **names,
    )


SHORT_ROW = 16
"""Rows up to this long have their maximum taken over a transposed copy (``_row_max``)."""

MANY_ROWS = 128
"""Rows from which longer rows have their maximum taken on their bit patterns."""


def _max_of_columns(rows: Array) -> Array:
    """The maximum of each row of a 2-D array, reduced over a transposed (contiguous) copy:
    numpy reduces the rows' elements as whole columns, element-wise (32 rows of 10: 1.4 vs
    2.2 us; 2048 rows of 10: 10 vs 104 us)."""
    return _max(np.ascontiguousarray(rows.T), axis=0)


def _max_of_bits(rows: Array) -> Array:
    """The maximum of each row of a 2-D float array, reduced on its bit patterns as signed
    integers: numpy's float ``maximum.reduce`` takes short rows element by element, its
    integer one vectorised (2048 rows of 64: 54 vs 170 us).

    Non-negative floats order as their bit patterns, and every negative one (sign bit set)
    is below them; among negatives the order reverses. So a row whose largest pattern is
    non-negative has found its maximum, and a row of negatives only (a causal mask's
    ``-inf`` too) takes its smallest pattern. A NaN may be passed over for a finite value,
    but the row's softmax is NaN all the same (its sum is NaN)."""
    bits = rows.view(np.dtype(f"i{rows.itemsize}"))
    top = np.maximum.reduce(bits, axis=1)
    negative = top < 0
    if negative.any():
        top[negative] = np.minimum.reduce(bits[negative], axis=1)
    return top.view(rows.dtype)


def _row_max(shape: tuple[int, ...], dtype: Any) -> Any:
    """A function giving ``np.maximum.reduce(x, axis=-1, keepdims=True)`` for ``x`` of
    ``shape`` (the same values: a maximum is exact), the fastest way measured for it."""
    rows, width = math.prod(shape[:-1]), shape[-1]
    if rows >= 2 and 1 < width <= SHORT_ROW:
        by = _max_of_columns
    elif rows >= MANY_ROWS and np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize <= 8:
        by = _max_of_bits
    else:
        return partial(_max, axis=-1, keepdims=True)
    matrix, kept = (rows, width), (*shape[:-1], 1)

    def row_max(x: Array) -> Array:
        return by(x.reshape(matrix)).reshape(kept)

    return row_max


@specialise("softmax", CPU)
def softmax(site: Site) -> Specialised | None:
    """The plain kernel's passes written into the buffer, the row maximum taken the fastest
    way for the shape (``_row_max``), the sums as the plain kernel's (``nn.group_sums``);
    an empty one keeps the plain kernel."""
    (k,) = site.params
    assert isinstance(k, int)
    if 0 in site.shape:
        return None
    axes = _trailing(site, k)
    if k == 1 and site.shape:
        peak_of = _row_max(site.shape, site.dtype)
    else:
        peak_of = partial(_max, axis=axes, keepdims=True)
    # the sums: the plain kernel's einsum on the same rows, else its group sums
    by_rows = "if {carray}:\n    {out} /= {einsum}({sums}, {out})[..., None]\nelse:\n    "
    return inline_kernel(
        "{subtract}({0}, {peak_of}({0}), out={out})\n"
        "{exp}({out}, out={out})\n"
        + (by_rows if k == 1 else "")
        + "{out} /= {group_sums}({out}, {k})",
        writes=True,
        subtract=np.subtract,
        peak_of=peak_of,
        exp=np.exp,
        einsum=_einsum,
        sums=_nn.SUMS,
        group_sums=_nn.group_sums,
        k=k,
    )
