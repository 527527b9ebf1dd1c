"""The null device: a device whose kernels compute nothing (tinygrad's idea).

Every kernel returns a :class:`NullArray` — a placeholder of the node's shape and dtype with no
memory and no arithmetic — so the evaluator's graph work (collection, rewrites, batching,
fused regions, the buffer plan, ``tn.compile``'s trace and Step replay) runs on any graph at
no arithmetic cost, and tests can count what it scheduled (:data:`kernel_calls`,
:data:`region_calls`). numpy refuses a placeholder (``__array_ufunc__ = None``, no
``__array__``), so anything that tries to compute on it fails loudly.

Not imported by ``import typed_nn``: a test imports it and calls :func:`register`. Its kernels
know a result's shape only from the compiled plan's site (``options.specialise``, on by
default); a by-node program (debug mode, ``executor.by_node``), generated unspecialised,
cannot run on it.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any, NamedTuple, NoReturn

import numpy as np

from ..devices import Device, register_device
from ..errors import DeviceError, message
from ..ops.declare import (
    Impl,
    OpDecl,
    Site,
    Specialised,
    declarations,
    implement,
    out_implementation,
    specialise,
)
from ..tags import CPU, DeviceTag

__all__ = [
    "NullArray",
    "NullDevice",
    "asarray",
    "empty",
    "kernel_calls",
    "ones",
    "region_calls",
    "register",
    "zeros",
]


class NullDevice(DeviceTag):
    """A device that computes nothing: for graph and scheduling tests."""

    name = "Null"


class _Memory(NamedTuple):
    ptr: int


class NullArray:
    """A placeholder array: a shape and a dtype, no values (a 0-d one made from a number
    keeps it: scalars are told apart by value, like the CPU's)."""

    __array_ufunc__ = None  # numpy ufuncs raise TypeError instead of computing

    def __init__(self, shape: tuple[int, ...], dtype: Any, number: Any = None) -> None:
        self.number = number
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.strides = (0,) * len(self.shape)
        self.data = _Memory(id(self))  # the identity of its (absent) memory

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return NotImplemented  # numpy's array functions raise TypeError

    def __getitem__(self, index: Any) -> NullArray:
        """``a[i, ...]`` (the evaluator's batch_item): the placeholder of one item."""
        if isinstance(index, tuple) and len(index) == 2 and index[1] is Ellipsis:
            return NullArray(self.shape[1:], self.dtype)
        raise DeviceError(message(f"a null array cannot be indexed by {index!r}."))

    def copy(self) -> NullArray:
        return NullArray(self.shape, self.dtype, self.number)

    def item(self) -> Any:
        """The number a 0-d placeholder was made from, else a value of its own."""
        return ("null", id(self)) if self.number is None else self.number

    def get(self) -> NoReturn:
        _no_values()

    def __repr__(self) -> str:
        return f"NullArray({self.shape}, {self.dtype})"


def _no_values() -> NoReturn:
    raise DeviceError(
        message(
            "the null device holds no values.",
            hint="read shapes and the evaluator's counters; compute on CPU or GPU for numbers.",
        )
    )


# The device's array module (``array_module(NullDevice)`` is this module).
def empty(shape: tuple[int, ...], dtype: Any) -> NullArray:
    return NullArray(shape, dtype)


def zeros(shape: tuple[int, ...], dtype: Any) -> NullArray:
    return NullArray(shape, dtype)


def ones(shape: tuple[int, ...], dtype: Any) -> NullArray:
    return NullArray(shape, dtype)


def asarray(value: Any, dtype: Any = None) -> NullArray:
    """The placeholder of a host array (its values are dropped)."""
    host = np.asarray(value, dtype=dtype)
    return NullArray(host.shape, host.dtype, host.item() if host.ndim == 0 else None)


kernel_calls: Counter[str] = Counter()
"""Op name -> null kernels run (a node computed on its own, or a member of a fused region)."""
region_calls: list[int] = [0]
"""``[n]``: fused regions run, each one kernel call."""


def _plain(op: str) -> Impl:
    def null_kernel(*args: Any, out: Any = None) -> NoReturn:
        raise DeviceError(
            message(
                f"the null device ran {op} without a compiled plan's site.",
                hint="keep options.specialise on, and debug mode off, on the null device.",
            )
        )

    return null_kernel


def _specialiser(op: str) -> Any:
    def make(site: Site) -> Specialised:
        shape, dtype = site.shape, site.dtype

        def null_kernel(*operands: Any) -> NullArray:
            kernel_calls[op] += 1
            return NullArray(shape, dtype)

        return Specialised(null_kernel, writes=False)

    return make


def compile_region(g: Any, members: list[int]) -> tuple[Any, list[Any]]:
    """A fused region as one null kernel over its operands from outside the region."""
    inside = set(members)
    refs: list[Any] = []
    for m in members:
        for a in g.nodes[m].args:
            if a not in inside and a not in refs:
                refs.append(a)
    ops = [g.nodes[m].op for m in members]

    def null_region(*operands: Any, out: Any) -> Any:
        region_calls[0] += 1
        kernel_calls.update(ops)
        return out

    return null_region, refs


def _ops() -> list[OpDecl]:
    """Every declared op, the evaluator's internal ones (rewrites, batching) included."""
    return declarations()


def _refuse_to_host(array: Any) -> NoReturn:
    _no_values()


_done: list[bool] = []


def register() -> None:
    """Register the null device and a null kernel for every op (a write-into form where the
    CPU has one, so the same fused regions form); later calls do nothing."""
    if _done:
        return
    _done.append(True)
    for decl in _ops():
        # writing into ``out`` where the CPU kernel does, so the same fused regions form
        writes_into = out_implementation(decl.name, CPU) is not None
        implement(decl.name, NullDevice, writes_into=writes_into)(_plain(decl.name))
        specialise(decl.name, NullDevice)(_specialiser(decl.name))
    register_device(
        Device(
            NullDevice,
            lambda: sys.modules[__name__],
            host_pool=False,
            host_regions=False,
            array_type=NullArray,
            numbers_as_arrays=False,
            copy=lambda dst, src: None,
            may_share=lambda a, b: a is b,
            to_host=_refuse_to_host,
            compile_region=compile_region,
        )
    )
