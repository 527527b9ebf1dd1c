"""A CPU emulation of the part of cupy that typed_nn uses, strict where cupy is strict.

The GPU tests run against it on every machine (and against the real cupy where there is a
GPU), so the GPU backend's code paths — numpy's dispatch into cupy, allocation by the operands'
library, fused ``ElementwiseKernel`` regions — are exercised, and their results compared with
the CPU backend, without a GPU. What it holds cupy to, from cupy's own source
(``cupy/_core/core.pyx``, ``cupy/_core/_kernel.pyx``):

* no implicit device <-> host conversion: ``np.asarray(gpu_array)`` raises ``TypeError``
  (``ndarray.__array__``), and a numpy array given to a cupy function, ufunc or kernel raises
  ``TypeError`` (``Unsupported type``); moving data is ``cupy.asarray`` / ``.get()``;
* numpy's dispatch: a numpy ufunc reaches cupy's ufunc of the same name through
  ``__array_ufunc__`` and a numpy function reaches cupy's function of the same module path and
  name through ``__array_function__``; a name cupy lacks is numpy's ``TypeError``;
* only the functions, keyword arguments and ufunc methods listed below exist (cupy's subset
  of numpy's); ufuncs take no ``where=``; ``ufunc.reduce`` exists for ``add`` and
  ``multiply`` only; reductions return 0-d arrays, never numpy scalars;
* ``ElementwiseKernel``: array arguments of a typed parameter must have exactly its dtype
  (Python numbers are converted to it), non-raw arguments broadcast to the output, ``raw`` ones are read by flat
  index with ``.size()``. Its loop body is compiled with the host's C++ compiler, so fused
  regions compute real values;
* no overlap between what a call writes and what it reads: cupy's kernels and copies
  (``copyto``, ``out=``, ``a[...] = b``, ``ElementwiseKernel``) never copy an overlapping
  operand aside, as numpy does, so on a GPU the result is undefined (threads read elements
  others already wrote). Only an operand that *is* the output element for element (same
  memory, shape and strides: ``a *= 2``) is safe; any other overlap is an ``OverlapError``;
* host synchronisation is declared where cupy declares it (``ndarray.get``, every
  conversion to a host value, ``Device.synchronize``: ``cupy._core.syncdetect``), so a
  counter patched in there counts the same calls on both;
* stream capture and CUDA graphs (``Stream.begin_capture`` / ``end_capture``,
  ``Graph.launch``, ``MemoryPool``, ``using_allocator``): ``cupy_capture.py`` records every
  device operation while a stream captures and replays it on launch, and says what it holds
  captured code to.

Values are computed by numpy on the host; only the *interface* is cupy's.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import numbers
import re
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cupy_capture as capture
import numpy as np
import numpy.typing as npt
from cublas_model import CublasModel

Untyped = Any


def _unsupported(value: object) -> TypeError:
    return TypeError(f"Unsupported type {type(value)}")


def _unwrap(value: Any) -> Any:
    """The host array behind an emulated one; numpy arrays are refused, as cupy does."""
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, np.ndarray):
        raise _unsupported(value)
    if isinstance(value, list | tuple):
        return type(value)(_unwrap(v) for v in value)
    return value


def _wrap(value: Any) -> Any:
    """numpy results as emulated arrays (numpy scalars become 0-d arrays, as in cupy)."""
    if isinstance(value, np.ndarray):
        return ndarray._of(value)
    if isinstance(value, np.generic):
        return ndarray._of(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class OverlapError(ValueError):
    """A call writes memory it also reads through another view (undefined on a GPU)."""


def _check_no_overlap(what: str, written: Any, operands: Any) -> None:
    """Raise OverlapError where an operand overlaps ``written`` without being it element for
    element (``written``: a host array, ``operands``: anything)."""
    for v in operands if isinstance(operands, list | tuple) else (operands,):
        if isinstance(v, list | tuple):
            _check_no_overlap(what, written, v)
            continue
        a = v._a if isinstance(v, ndarray) else None
        if a is None or not np.shares_memory(a, written):
            continue
        same = (a.shape, a.strides) == (written.shape, written.strides) and _address(a) == _address(
            written
        )
        if not same:
            raise OverlapError(
                f"emulated cupy: {what} writes {written.shape} memory that an operand "
                f"{a.shape} (strides {a.strides}) overlaps: cupy copies nothing aside, so on "
                "a GPU the result is undefined"
            )


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


# Distinct kernels the calls so far would have compiled on a GPU (an estimate of cupy's
# per-process NVRTC compiles: one per operation, dtypes and rank, the rank of contiguous
# same-shape operands collapsed to 1 as cupy does; views and cuBLAS products compile none).
kernels: set[tuple[Any, ...]] = set()
_NO_KERNEL = {"transpose", "reshape", "ravel", "squeeze", "expand_dims", "broadcast_to"}
_NO_KERNEL |= {"moveaxis", "swapaxes", "as_strided", "sliding_window_view", "result_type"}
_NO_KERNEL |= {"shares_memory", "may_share_memory", "tensordot", "matmul", "dot"}
_CUBLAS = {"tensordot", "matmul", "dot"}
"""cupy's cuBLAS calls: refused while a stream captures (cupy 14: ``cublas.setStream``)."""


def _note_kernel(name: str, arrays: list[np.ndarray]) -> None:
    if name in _NO_KERNEL or not arrays:
        return
    flat = all(a.flags.c_contiguous and a.shape == arrays[0].shape for a in arrays)
    rank = 1 if flat else max(a.ndim for a in arrays)
    kernels.add((name, tuple(a.dtype.name for a in arrays), rank))


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    out = kwargs.get("out")
    written = out if fn is not np.copyto else args[0]
    if isinstance(written, ndarray):
        _check_no_overlap(fn.__name__, written._a, args[1:] if fn is np.copyto else args)
    owner = getattr(fn, "__self__", None)  # np.add.reduce: a method of its ufunc
    name = f"{owner.__name__}.{fn.__name__}" if isinstance(owner, np.ufunc) else fn.__name__
    if name in _CUBLAS or (name == "einsum" and sum(isinstance(a, ndarray) for a in args) > 1):
        capture.cublas(name)  # cupy's einsum contracts two operands with its matmul
    _note_kernel(name, [v._a for v in (*args, *kwargs.values()) if isinstance(v, ndarray)])
    hosts, host_kwargs = _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()}
    if isinstance(written, ndarray):
        capture.writing(written._a, name)
    result = fn(*hosts, **host_kwargs)
    if isinstance(result, np.generic):
        result = np.asarray(result)  # a 0-d array, as cupy returns (new memory)
    if capture.capturing() is not None:
        _record_call(name, fn, hosts, host_kwargs, result, isinstance(written, ndarray))
    if isinstance(out, ndarray) and result is out._a:
        return out  # numpy returns ``out`` itself; so does cupy
    return _wrap(result)


def _record_call(
    name: str, fn: Any, hosts: Any, kwargs: dict[str, Any], result: Any, writes: bool
) -> None:
    """A call while capturing: it writes its ``out`` (or ``copyto``'s target) again at every
    launch, or computes its new arrays again into their memory."""
    if writes:
        capture.record(name, lambda: fn(*hosts, **kwargs))
        return
    if isinstance(result, np.ndarray | tuple | list):
        operands = [*_flat(hosts), *_flat(list(kwargs.values()))]
        capture.record_result(name, lambda: fn(*hosts, **kwargs), result, operands)


def _flat(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, list | tuple) else [v])
    return out


# --- ufuncs ------------------------------------------------------------------------------------

# cupy's ufunc.reduce exists for these ufuncs only (cupy/_core/_kernel.pyx, ufunc.reduce);
# others raise NotImplementedError.
_REDUCIBLE = {"add", "multiply"}
_SCATTERABLE = {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"}
"""cupy's ufunc.at exists for these only (the ufuncs made with a ``scatter_op``)."""
_UFUNC_CALL_KWARGS = {"out", "dtype", "casting"}
_UFUNC_REDUCE_KWARGS = {"axis", "dtype", "out", "keepdims"}


class ufunc:  # noqa: N801 - cupy's name
    """A cupy ufunc: numpy's computation behind cupy's argument rules."""

    def __init__(self, np_ufunc: np.ufunc) -> None:
        self._np = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin = np_ufunc.nin
        self.nout = np_ufunc.nout

    def __repr__(self) -> str:
        return f"<ufunc 'cupy_{self.__name__}'>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _check_kwargs(self.__name__, kwargs, _UFUNC_CALL_KWARGS)
        return _call(self._np, args, kwargs)

    def at(self, a: Any, indices: Any, b: Any = None) -> None:
        """In place, as cupy's scatter kernels (``add``, ``subtract``, ``maximum``,
        ``minimum``, the bitwise ones); recorded while capturing, as a write of ``a``."""
        if self.__name__ not in _SCATTERABLE:
            raise NotImplementedError(f"`{self.__name__}.at` is not supported yet")
        if not isinstance(a, ndarray):
            raise TypeError(f"{self.__name__}.at: the operand is not a cupy array")
        hosts = _unwrap((a, indices, b))
        capture.writing(a._a, f"{self.__name__}.at")
        self._np.at(*hosts)
        if capture.capturing() is not None:
            capture.record(f"{self.__name__}.at", lambda: self._np.at(*hosts))

    def reduce(self, array: Any, axis: Any = 0, **kwargs: Any) -> Any:
        if self.__name__ not in _REDUCIBLE:
            raise NotImplementedError(f"reduction for {self.__name__} is not supported")
        _check_kwargs(f"{self.__name__}.reduce", kwargs, _UFUNC_REDUCE_KWARGS)
        return _call(self._np.reduce, (array,), {"axis": axis, **kwargs})


def _check_kwargs(where: str, kwargs: dict[str, Any], allowed: set[str]) -> None:
    extra = set(kwargs) - allowed
    if extra:
        raise TypeError(f"{where}: keyword arguments not supported by cupy: {sorted(extra)}")


_UFUNCS = (
    *("add", "subtract", "multiply", "divide", "true_divide", "negative", "absolute", "sign"),
    *("exp", "log", "sqrt", "square", "sin", "cos", "tan", "arcsin", "arccos", "arcsinh"),
    *("arccosh", "tanh", "maximum", "minimum", "greater", "greater_equal", "less"),
    *("less_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_not"),
    *("reciprocal", "power", "isfinite", "isnan", "isinf", "exp2", "log1p", "expm1", "fabs"),
    *("floor", "ceil", "rint", "sinh", "cosh", "arctan", "arctanh", "positive", "invert"),
    *("bitwise_and", "bitwise_or", "bitwise_xor", "fmax", "fmin", "copysign", "signbit"),
    *("logaddexp", "logaddexp2"),  # cupy has both (softplus's kernel uses the first)
)


# --- functions ---------------------------------------------------------------------------------

# Name -> the keyword arguments cupy's function takes (None: those of numpy's). Only these
# exist in the emulated module; numpy functions outside it are numpy's "no implementation
# found" TypeError when called on emulated arrays.
_FUNCTIONS: dict[str, set[str] | None] = {
    "tensordot": {"axes"},
    "matmul": {"out", "dtype", "casting"},
    "dot": {"out"},
    "einsum": {"out", "dtype", "optimize", "casting"},
    "stack": {"axis", "out", "dtype", "casting"},
    "concatenate": {"axis", "out", "dtype", "casting"},
    "transpose": {"axes"},
    "reshape": {"order"},
    "ravel": {"order"},
    "squeeze": {"axis"},
    "expand_dims": {"axis"},
    "broadcast_to": None,
    "moveaxis": None,
    "swapaxes": None,
    "tile": None,
    "repeat": {"axis"},
    "pad": {"mode", "constant_values"},
    "where": None,
    "take": {"axis", "out"},
    "take_along_axis": {"axis"},
    "put_along_axis": {"axis"},
    "argmax": {"axis", "out", "keepdims", "dtype"},
    "argmin": {"axis", "out", "keepdims", "dtype"},
    "sum": {"axis", "dtype", "out", "keepdims"},
    "mean": {"axis", "dtype", "out", "keepdims"},
    "amax": {"axis", "out", "keepdims"},
    "max": {"axis", "out", "keepdims"},
    "amin": {"axis", "out", "keepdims"},
    "min": {"axis", "out", "keepdims"},
    "prod": {"axis", "dtype", "out", "keepdims"},
    "clip": {"out"},
    "copyto": {"casting", "where"},
    "copy": {"order"},
    "ascontiguousarray": {"dtype"},
    "zeros_like": {"dtype", "order", "shape"},
    "ones_like": {"dtype", "order", "shape"},
    "empty_like": {"dtype", "order", "shape"},
    "full_like": {"dtype", "order", "shape"},
    "shares_memory": {"max_work"},
    "may_share_memory": {"max_work"},
    "result_type": None,
    "isfinite": None,
    "all": {"axis", "out", "keepdims"},
    "any": {"axis", "out", "keepdims"},
    "array_equal": None,
    "allclose": None,
    "count_nonzero": {"axis"},
    "nonzero": None,
    "flip": {"axis"},
    "diagonal": None,
    "outer": None,
    "cumsum": {"axis", "dtype", "out"},
    "arange": None,
    "eye": None,
    "linspace": None,
}
_STRIDE_TRICKS = {"as_strided": None, "sliding_window_view": {"axis", "subok", "writeable"}}


def _run(
    name: str, np_fn: Callable[..., Any], allowed: set[str] | None, args: Any, kwargs: Any
) -> Any:
    """numpy's ``np_fn`` as cupy's function ``name``, which takes only ``allowed`` keywords."""
    if allowed is not None:
        _check_kwargs(name, kwargs, allowed)
    return _call(np_fn, args, kwargs)


def _function(name: str, np_fn: Callable[..., Any], allowed: set[str] | None) -> Any:
    @functools.wraps(np_fn)
    def fn(*args: Any, **kwargs: Any) -> Any:
        return _run(name, np_fn, allowed, args, kwargs)

    fn.__module__ = "cupy"
    return fn


def _from_host(obj: Any, dtype: npt.DTypeLike | None = None, copy: bool = True) -> ndarray:
    if isinstance(obj, ndarray):
        same = dtype is None or np.dtype(dtype) == obj.dtype
        if same and not copy:
            return obj
        source, kind = obj._a, dtype if dtype is not None else obj.dtype
        return _made("astype", lambda: source.astype(kind, copy=True), [source])
    capture.unsupported("a host-to-device copy")
    return ndarray._of(np.array(_unwrap_host(obj), dtype=dtype, copy=True))


def _made(what: str, compute: Callable[[], np.ndarray], operands: list[np.ndarray]) -> ndarray:
    """The result of a device operation that may make new memory (recorded while capturing)."""
    result = compute()
    capture.record_result(what, compute, result, operands)
    return ndarray._of(result)


def _unwrap_host(obj: Any) -> Any:
    """Host data for a transfer: numpy arrays allowed, emulated arrays' values taken."""
    if isinstance(obj, ndarray):
        return obj._a
    if isinstance(obj, list | tuple):
        return type(obj)(_unwrap_host(v) for v in obj)
    return obj


def asarray(a: Any, dtype: npt.DTypeLike | None = None, order: str | None = None) -> ndarray:
    return _from_host(a, dtype, copy=False)


def array(obj: Any, dtype: npt.DTypeLike | None = None, copy: bool = True) -> ndarray:
    return _from_host(obj, dtype, copy=copy)


def asnumpy(a: Any) -> npt.NDArray[Any]:
    return a.get() if isinstance(a, ndarray) else np.asarray(a)


def _creation(np_fn: Callable[..., np.ndarray]) -> Callable[..., ndarray]:
    def fn(shape: Any, *args: Any, **kwargs: Any) -> ndarray:
        if np_fn is np.empty:
            host = np_fn(shape, *args, **kwargs)
            capture.allocated(host, "empty")
            return ndarray._of(host)
        return _made(np_fn.__name__, lambda: np_fn(shape, *args, **kwargs), [])

    return fn


empty = _creation(np.empty)
zeros = _creation(np.zeros)
ones = _creation(np.ones)


def full(shape: Any, fill_value: Any, dtype: npt.DTypeLike | None = None) -> ndarray:
    """cupy's ``full``: ``copyto`` from a number or a device array (0-d broadcasts)."""
    if dtype is None:
        dtype = fill_value.dtype if isinstance(fill_value, ndarray) else np.array(fill_value).dtype
    out = empty(shape, dtype)
    out.fill(fill_value)
    return out


def get_array_module(*args: Any) -> types.ModuleType:
    return sys.modules[__name__] if any(isinstance(a, ndarray) for a in args) else np


# --- the array ---------------------------------------------------------------------------------


class _Pointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class ndarray:  # noqa: N801 - cupy's name
    """A device array: a host numpy array behind cupy's interface."""

    __slots__ = ("_a",)
    __array_priority__ = 100
    _a: Any  # the host array (typed loosely: cupy's signatures are passed straight on)

    def __init__(self, shape: Any, dtype: npt.DTypeLike = float) -> None:
        self._a = np.empty(shape, dtype)
        capture.allocated(self._a, "ndarray")

    @classmethod
    def _of(cls, a: np.ndarray) -> ndarray:
        out = cls.__new__(cls)
        out._a = a
        return out

    # -- what cupy's ndarray has
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray._of(self._a.T))
    data = property(lambda self: _Pointer(self._a.__array_interface__["data"][0]))

    def get(self) -> np.ndarray:
        _core.syncdetect._declare_synchronize()  # looked up per call, as cupy does
        host: np.ndarray = self._a.copy()
        return host

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly."
        )

    def __repr__(self) -> str:
        return f"emulated cupy {self._a!r}"

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Iterator[Any]:
        return (_wrap(v) for v in self._a)

    # every conversion to a host value copies to the host, as cupy's do (through get)
    def __bool__(self) -> bool:
        return bool(self.get())

    def __float__(self) -> float:
        return float(self.get())

    def __int__(self) -> int:
        return int(self.get())

    def item(self) -> Any:
        return self.get().item()

    def tolist(self) -> Any:
        return self.get().tolist()

    def __getitem__(self, key: Any) -> Any:
        a, host_key = self._a, _unwrap_host(key)
        result = a[host_key]
        if isinstance(result, np.generic):
            result = np.asarray(result)
        # an integer-array index gathers into new memory (a kernel), a slice is a view
        capture.record_result("a[index]", lambda: a[host_key], result, [a])
        return _wrap(result)

    def __setitem__(self, key: Any, value: Any) -> None:
        # cupy copies host values in (a transfer), unlike its kernels
        key = _unwrap_host(key)
        _check_no_overlap("a[...] = b", self._a[key], value)
        if not isinstance(value, ndarray | numbers.Number | np.generic):
            capture.unsupported("a host-to-device copy")
        target, source = self._a, _unwrap_host(value)
        capture.writing(target, "a[...] = b")
        target[key] = source
        capture.record("a[...] = b", lambda: target.__setitem__(key, source))

    # -- methods (cupy's keyword arguments)
    def copy(self, order: str = "C") -> ndarray:
        a = self._a
        return _made("copy", lambda: a.copy(order), [a])

    def astype(self, dtype: npt.DTypeLike, order: str = "K", copy: bool = True) -> ndarray:
        a = self._a
        result = a.astype(dtype, order=order, copy=copy)
        if result is a:
            return self
        capture.record_result("astype", lambda: a.astype(dtype, order=order), result, [a])
        return ndarray._of(result)

    def view(self, dtype: npt.DTypeLike | None = None) -> ndarray:
        return ndarray._of(self._a.view() if dtype is None else self._a.view(dtype))

    def reshape(self, *shape: Any, order: str = "C") -> ndarray:
        a = self._a
        return _made("reshape", lambda: a.reshape(*shape, order=order), [a])  # a copy, or a view

    def transpose(self, *axes: Any) -> ndarray:
        return ndarray._of(self._a.transpose(*axes))

    def ravel(self, order: str = "C") -> ndarray:
        a = self._a
        return _made("ravel", lambda: a.ravel(order), [a])  # a copy, or a view

    def squeeze(self, axis: Any = None) -> ndarray:
        return ndarray._of(self._a.squeeze(axis))

    def swapaxes(self, a: int, b: int) -> ndarray:
        return ndarray._of(self._a.swapaxes(a, b))

    def fill(self, value: Any) -> None:
        if isinstance(value, ndarray) and value.shape != ():
            raise ValueError("non-scalar cupy.ndarray cannot be used for fill")
        target, source = self._a, _unwrap(value)
        capture.writing(target, "fill")
        target[...] = source
        capture.record("fill", lambda: target.__setitem__(Ellipsis, source))

    def sum(
        self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
    ) -> Any:
        return _call(
            np.sum, (self,), {"axis": axis, "dtype": dtype, "out": out, "keepdims": keepdims}
        )

    def mean(
        self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
    ) -> Any:
        return _call(
            np.mean, (self,), {"axis": axis, "dtype": dtype, "out": out, "keepdims": keepdims}
        )

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return _call(np.max, (self,), {"axis": axis, "out": out, "keepdims": keepdims})

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return _call(np.min, (self,), {"axis": axis, "out": out, "keepdims": keepdims})

    def argmax(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        return _call(np.argmax, (self,), {"axis": axis, "out": out, "keepdims": keepdims})

    def dot(self, b: Any, out: Any = None) -> Any:
        return _call(np.dot, (self, b), {"out": out})

    # -- numpy's protocols, as cupy implements them
    def __array_ufunc__(self, np_ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            kwargs["out"] = out[0]
        for x in (*inputs, *((kwargs["out"],) if out is not None else ())):
            if not isinstance(x, ndarray | np.ndarray | numbers.Number | np.generic):
                return NotImplemented
        cp_ufunc = _MODULE_UFUNCS.get(np_ufunc.__name__)
        if cp_ufunc is None:
            return NotImplemented
        if method == "__call__":
            return cp_ufunc(*inputs, **kwargs)
        if method == "reduce":
            return cp_ufunc.reduce(*inputs, **kwargs)
        return NotImplemented

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        path = func.__module__.split(".")[1:]
        table = _STRIDE_TRICKS if path[-1:] == ["stride_tricks"] else _FUNCTIONS
        if func.__name__ not in table:
            return NotImplemented
        return _run(func.__name__, func, table[func.__name__], args, kwargs)

    # -- operators: cupy's ufuncs
    def _binary(name: str, reflected: bool = False) -> Any:  # type: ignore[misc]  # noqa: N805
        def op(self: ndarray, other: Any) -> Any:
            f = _MODULE_UFUNCS[name]
            return f(other, self) if reflected else f(self, other)

        return op

    def _inplace(name: str) -> Any:  # type: ignore[misc]  # noqa: N805
        def op(self: ndarray, other: Any) -> Any:
            _MODULE_UFUNCS[name](self, other, out=self)
            return self

        return op

    __add__, __radd__, __iadd__ = _binary("add"), _binary("add", True), _inplace("add")
    __sub__, __rsub__, __isub__ = (
        _binary("subtract"),
        _binary("subtract", True),
        _inplace("subtract"),
    )
    __mul__, __rmul__, __imul__ = (
        _binary("multiply"),
        _binary("multiply", True),
        _inplace("multiply"),
    )
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __itruediv__ = _inplace("true_divide")
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __lt__, __le__, __gt__, __ge__ = (
        _binary("less"),
        _binary("less_equal"),
        _binary("greater"),
        _binary("greater_equal"),
    )
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __and__, __or__ = _binary("bitwise_and"), _binary("bitwise_or")
    __hash__ = None  # type: ignore[assignment]

    def __neg__(self) -> Any:
        return _MODULE_UFUNCS["negative"](self)

    def __abs__(self) -> Any:
        return _MODULE_UFUNCS["absolute"](self)

    def __invert__(self) -> Any:
        return _MODULE_UFUNCS["invert"](self)


_MODULE_UFUNCS: dict[str, Any] = {name: ufunc(getattr(np, name)) for name in _UFUNCS}
_MODULE_UFUNCS["matmul"] = _function("matmul", np.matmul, _FUNCTIONS["matmul"])


# --- ElementwiseKernel: the loop body compiled on the host -----------------------------------

_C_TYPES = {
    "float32": "float",
    "float64": "double",
    "int8": "signed char",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "bool": "bool",
}
_PARAM = re.compile(r"^(raw\s+)?(\w+)\s+(\w+)$")
# cupy's raw-array interface for host C++ (``a[k]``, ``a.size()``); tests/gpu_fakes.py uses it too.
RAW_PRELUDE = """#include <math.h>
#include <stdlib.h>
template <class T> struct Raw {
  const T* p; long long n;
  T operator[](long long k) const { return p[k]; }
  long long size() const { return n; }
};
"""
_build_dir: list[Path] = []
_compiled: dict[str, Any] = {}


def _params(text: str) -> list[tuple[bool, np.dtype[Any], str]]:
    params = []
    for part in text.split(","):
        m = _PARAM.match(part.strip())
        if m is None or m.group(2) not in _C_TYPES:
            raise ValueError(f"emulated ElementwiseKernel: cannot read parameter {part!r}")
        params.append((m.group(1) is not None, np.dtype(m.group(2)), m.group(3)))
    return params


def _library(source: str) -> Any:
    key = hashlib.sha1(source.encode()).hexdigest()
    lib = _compiled.get(key)
    if lib is None:
        if not _build_dir:
            _build_dir.append(Path(tempfile.mkdtemp(prefix="cupy_emulator_")))
        src = _build_dir[0] / f"{key}.cpp"
        so = _build_dir[0] / f"{key}.so"
        src.write_text(source)
        subprocess.run(
            ["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-o", str(so), str(src)],
            check=True,
            capture_output=True,
        )
        lib = _compiled[key] = ctypes.CDLL(str(so))
        lib.run.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(ctypes.c_longlong),
            ctypes.c_longlong,
        ]
    return lib


class ElementwiseKernel:
    """cupy's ElementwiseKernel with one output; the operation runs as compiled C++."""

    def __init__(
        self, in_params: str, out_params: str, operation: str, name: str = "kernel", **_: Any
    ) -> None:
        self.ins = _params(in_params)
        self.outs = _params(out_params)
        if len(self.outs) != 1 or self.outs[0][0]:
            raise ValueError("emulated ElementwiseKernel: exactly one non-raw output")
        self.name = name
        lines = [
            RAW_PRELUDE,
            'extern "C" void run(void** a, const long long* sizes, long long n) {',
        ]
        lines.append("for (long long i = 0; i < n; ++i) {")
        for k, (raw, dtype, pname) in enumerate(self.ins):
            ct = _C_TYPES[dtype.name]
            if raw:
                lines.append(f"const Raw<{ct}> {pname}{{(const {ct}*)a[{k}], sizes[{k}]}};")
            else:
                lines.append(f"const {ct} {pname} = ((const {ct}*)a[{k}])[i];")
        out_ct = _C_TYPES[self.outs[0][1].name]
        lines.append(f"{out_ct} {self.outs[0][2]};")
        lines.append("{\n" + operation + "\n}")
        lines.append(f"(({out_ct}*)a[{len(self.ins)}])[i] = {self.outs[0][2]};")
        lines.append("}}")
        self.source = "\n".join(lines)

    def __call__(self, *args: Any, size: int | None = None) -> ndarray:
        n_in = len(self.ins)
        if len(args) not in (n_in, n_in + 1):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        given = args[n_in] if len(args) > n_in else None
        hosts: list[np.ndarray] = []
        for (raw, dtype, pname), value in zip(self.ins, args[:n_in], strict=True):
            if isinstance(value, ndarray):
                if value.dtype != dtype:  # a typed parameter takes exactly its dtype
                    raise TypeError(f"Type is mismatched. {pname} {value.dtype} {dtype}")
                hosts.append(value._a)
            elif isinstance(value, numbers.Number | np.generic) and not raw:
                hosts.append(np.asarray(value, dtype))
            else:
                raise _unsupported(value)
        shape = np.broadcast_shapes(
            *(h.shape for (raw, _, _), h in zip(self.ins, hosts, strict=True) if not raw)
        )
        _, out_dtype, out_name = self.outs[0]
        if given is None:
            out = empty(shape, out_dtype)
        elif not isinstance(given, ndarray):
            raise TypeError("Output arguments must be cupy.ndarray")
        elif given.dtype != out_dtype:
            raise TypeError(f"Type is mismatched. {out_name} {given.dtype} {out_dtype}")
        else:
            np.broadcast_shapes(shape, given.shape)  # cupy broadcasts outputs with inputs
            _check_no_overlap(self.name, given._a, args[:n_in])
            capture.writing(given._a, self.name)
            out = given
        _note_kernel(self.source, [*hosts, out._a])
        flat = [
            np.ascontiguousarray(h.ravel() if raw else np.broadcast_to(h, out.shape))
            for (raw, _, _), h in zip(self.ins, hosts, strict=True)
        ]
        result = np.empty(out.shape, out_dtype)
        pointers = (ctypes.c_void_p * (n_in + 1))(
            *(f.ctypes.data for f in flat), result.ctypes.data
        )
        sizes = (ctypes.c_longlong * n_in)(*(f.size for f in flat))
        _library(self.source).run(pointers, sizes, result.size)
        out._a[...] = result  # a strided output is written once, at the end
        capture.record(self.name, functools.partial(self, *args[:n_in], out))
        return out


# --- cupy.cuda ----------------------------------------------------------------------------------


class _Device:
    def __init__(self, device: int | None = None) -> None:
        self.id = device or 0

    def synchronize(self) -> None:
        _core.syncdetect._declare_synchronize()


class _Event:
    """A CUDA event: the host clock when it was recorded (the emulator runs synchronously)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.at = 0.0

    def record(self, stream: Any = None) -> None:
        self.at = time.perf_counter()
        capture.record("event record", lambda: None)

    def synchronize(self) -> None:
        capture.unsupported("an event synchronisation")

    @property
    def done(self) -> bool:
        return True  # everything ran when it was asked for


def get_elapsed_time(start: _Event, end: _Event) -> float:
    """Milliseconds between two recorded events, as ``cupy.cuda.get_elapsed_time``."""
    return (end.at - start.at) * 1e3


def _declare_synchronize() -> None:
    """Where cupy declares a host synchronisation (a counter may be patched in); while a
    stream captures, a host synchronisation is an error (and ends the capture's validity)."""
    capture.unsupported("a host synchronisation")


_core = types.SimpleNamespace(
    syncdetect=types.SimpleNamespace(_declare_synchronize=_declare_synchronize)
)


class _Runtime:
    @staticmethod
    def getDeviceCount() -> int:
        return 1

    @staticmethod
    def getDeviceProperties(device: int) -> dict[str, Any]:
        return {
            "name": b"cupy emulator (host)",
            "memoryClockRate": 1,
            "memoryBusWidth": 8,
            "totalGlobalMem": 0,
        }

    @staticmethod
    def getDevice() -> int:
        return 0

    @staticmethod
    def runtimeGetVersion() -> int:
        return 0

    @staticmethod
    def driverGetVersion() -> int:
        return 0

    # cupy's names
    CUDARuntimeError = capture.CUDARuntimeError
    memcpyAsync = staticmethod(capture.memcpy_async)  # noqa: N815
    memcpyHostToDevice = 1  # noqa: N815
    memcpyDeviceToHost = 2  # noqa: N815
    memcpyDeviceToDevice = 3  # noqa: N815
    streamCaptureModeRelaxed = 2  # noqa: N815


def install() -> types.ModuleType:
    """A fresh ``cupy`` module object backed by this emulator (put it in ``sys.modules``)."""
    module = types.ModuleType("cupy", __doc__)
    this = sys.modules[__name__]
    for name in ("ndarray", "ufunc", "asarray", "array", "asnumpy", "empty", "zeros", "ones"):
        setattr(module, name, getattr(this, name))
    for name in ("full", "get_array_module", "ElementwiseKernel"):
        setattr(module, name, getattr(this, name))
    for name, fn in _MODULE_UFUNCS.items():
        setattr(module, name, fn)
    for name, allowed in _FUNCTIONS.items():
        if not hasattr(module, name):
            setattr(module, name, _function(name, getattr(np, name), allowed))
    module.float32, module.float64 = np.float32, np.float64  # type: ignore[attr-defined]
    module.int32, module.int64, module.bool_ = np.int32, np.int64, np.bool_  # type: ignore[attr-defined]
    module.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        Device=_Device,
        Event=_Event,
        get_elapsed_time=get_elapsed_time,
        runtime=_Runtime,
        Stream=capture.Stream,
        get_current_stream=capture.get_current_stream,
        Graph=capture.Graph,
        MemoryPool=capture.MemoryPool,
        using_allocator=capture.using_allocator,
        alloc_pinned_memory=capture.alloc_pinned_memory,
    )
    module._core = _core  # type: ignore[attr-defined]
    lib = types.SimpleNamespace(
        stride_tricks=types.SimpleNamespace(
            **{
                n: _function(n, getattr(np.lib.stride_tricks, n), a)
                for n, a in _STRIDE_TRICKS.items()
            }
        )
    )
    module.lib = lib  # type: ignore[attr-defined]
    module.emulated = True  # type: ignore[attr-defined]
    module.cublas_model = CublasModel()  # type: ignore[attr-defined]
    return module
