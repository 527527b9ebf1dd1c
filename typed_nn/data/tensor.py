"""The principal data type: ``Tensor[E, Dv, D]`` owns an array of exactly ``D.rank`` dims.

Every other data kind evaluates to a ``Tensor``. Equality is MetaNN's: identity of the memory
(a view of the same memory with the same shape is equal; two tensors with equal values are
not), except rank 0, whose equality is by value.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .. import backends, tracing
from ..errors import CompileError, ElemTypeError, RankError, ReadOnlyError, ShapeError, message
from ..tags import D, DeviceTag, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, DimTag, Dv, E, ElemTag
from .tensor_like import TensorLike

__all__ = [
    "Matrix",
    "Scalar",
    "Tensor",
    "Tensor3",
    "Tensor4",
    "Tensor5",
    "Tensor6",
    "Vector",
    "check_writable",
]


class Tensor(TensorLike[E, Dv, D]):
    """A concrete array of element ``E`` on device ``Dv`` with ``D.rank`` dims.

    Build one with :func:`typed_nn.tensor`, :func:`typed_nn.zeros` or :func:`typed_nn.scalar`;
    ``x[i]`` is a view of row ``i`` (shares memory), ``x.assign(expr)`` evaluates ``expr``
    into this tensor's memory.
    """

    __slots__ = ("_array", "_device", "_elem", "_key", "_view_of")

    def __init__(self, array: Any, elem: type[E], device: type[Dv], dim: type[D]) -> None:
        expected = dim.rank
        if getattr(array, "ndim", None) != expected:
            raise RankError(
                message(
                    f"cannot make a Tensor[{elem.__name__}, {device.__name__}, {dim.__name__}] "
                    f"from an array of rank {getattr(array, 'ndim', '?')}.",
                    [("declared", f"rank {expected}"), ("received", f"shape {_shape_of(array)}")],
                    hint=f"pass Dim{getattr(array, 'ndim', '?')} or reshape the data.",
                )
            )
        if array.dtype != elem.dtype:
            raise ElemTypeError(
                message(
                    f"cannot make a Tensor[{elem.__name__}, ...] from {array.dtype} data.",
                    [
                        ("declared", f"{elem.__name__} ({elem.dtype})"),
                        ("received", str(array.dtype)),
                    ],
                    hint="convert with tn.tensor(data, elem, device, dim) or ops.astype.",
                )
            )
        backends.check_array_device(array, device)
        self._array = array
        self._elem = elem
        self._device = device
        self._key: object = None
        self._view_of: tuple[Tensor[Any, Any, Any], int] | None = None

    @classmethod
    def _wrap(
        cls, array: Any, elem: type[ElemTag], device: type[DeviceTag]
    ) -> Tensor[Any, Any, Any]:
        """Wrap a backend array whose dtype and device are already right (evaluator fast path)."""
        if isinstance(array, np.generic):
            # numpy ufuncs and reductions return numpy scalars for 0-d results; a tensor always
            # holds an array (numpy(), assign and views need one).
            array = np.asarray(array)
        t: Tensor[Any, Any, Any] = cls.__new__(cls)
        t._array = array
        t._elem = elem
        t._device = device
        t._key = None
        t._view_of = None
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        shape: tuple[int, ...] = self._array.shape  # already a tuple (numpy and cupy)
        return shape

    @property
    def elem(self) -> type[E]:
        return self._elem

    @property
    def device(self) -> type[Dv]:
        return self._device

    @property
    def rank(self) -> int:
        return int(self._array.ndim)

    @property
    def array(self) -> Any:
        """The backing array (numpy on CPU, cupy on GPU); writes go to this tensor."""
        return self._array

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """The DLPack capsule of this tensor's memory (no copy): ``np.from_dlpack(t)``,
        ``torch.from_dlpack(t)``, ``cupy.from_dlpack(t)`` share it."""
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        return self._array.__dlpack__(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        """(DLPack device type, device id) of this tensor's memory: (1, 0) on the CPU."""
        device: tuple[int, int] = self._array.__dlpack_device__()
        return device

    def numpy(self) -> npt.NDArray[Any]:
        """The values as a host numpy array (no copy on CPU: writes show in the tensor)."""
        if tracing.state.trace is not None:
            raise CompileError(
                message(
                    "cannot read a tensor's values inside a function tn.compile traces: they "
                    "would be frozen into the compiled step.",
                    [("tensor", self.describe())],
                    hint="compute with ops on the tensor, or read it outside the compiled "
                    "function (pass what you need as an argument).",
                )
            )
        return backends.to_host(self._array)

    def value(self) -> float | int:
        """The value of a scalar (rank 0) tensor (MetaNN ``Scalar::Value()``)."""
        if self.rank != 0:
            raise RankError(
                message(
                    f"value() needs a scalar, got {self.describe()}.",
                    hint="index it down to rank 0 first, or use numpy().",
                )
            )
        v = self.numpy().item()
        assert isinstance(v, float | int)
        return v

    def assign(self, expr: TensorLike[E, Dv, D]) -> Tensor[E, Dv, D]:
        """Evaluate ``expr`` into this tensor's memory (no temporaries on the fused path)."""
        from ..evaluate.plan import evaluate

        check_writable(self, "assign")
        evaluate(expr, out=self)
        return self

    def _slice(self, index: int) -> Tensor[Any, Any, Any]:
        if isinstance(index, bool | np.bool_) or not isinstance(index, int | np.integer):
            # numpy would read True as a new axis and 1.0 as an IndexError.
            raise ShapeError(
                message(
                    f"cannot index {self.describe()} with {type(index).__name__} {index!r}.",
                    hint="use an int; slicing ranges is ops.reshape / ops.tile territory.",
                )
            )
        index = int(index)
        if self.rank == 0:
            raise RankError(message("cannot index a scalar tensor.", [("data", self.describe())]))
        n = self._array.shape[0]
        if not -n <= index < n:
            raise ShapeError(
                message(
                    "ID out of bound.",
                    [
                        ("data", self.describe()),
                        ("index", str(index)),
                        ("valid", f"{-n} .. {n - 1}"),
                    ],
                    hint="index dim 0 within its size.",
                )
            )
        # ``[index, ...]``: a view at every rank (``[index]`` of a vector is a detached scalar)
        view = Tensor._wrap(self._array[index, ...], self._elem, self._device)
        view._view_of = (self, index)  # tn.grad reads it as a slice of this tensor
        return view

    def _identity(self) -> object:
        if self._array.ndim == 0:
            # By value, read each time: assign() or a write through a view changes the value.
            # (The device too: a CPU and a GPU scalar are never one value of a graph.)
            return ("value", self._elem, self._device, self._array.item())
        key = self._key
        if key is None:
            a = self._array
            pointer = backends.data_pointer(a)
            key = ("memory", self._device, pointer, a.shape, a.strides, self._elem)
            self._key = key
        return key

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return isinstance(other, Tensor) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __copy__(self) -> Tensor[E, Dv, D]:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Tensor[E, Dv, D]:
        return Tensor._wrap(self._array.copy(), self._elem, self._device)

    # fmt: off
    # --- BEGIN GENERATED GETITEM (scripts/gen_operators.py) ---
    @overload
    def __getitem__(self: Tensor[E, Dv, Dim1], index: int) -> Tensor[E, Dv, Dim0]: ...
    @overload
    def __getitem__(self: Tensor[E, Dv, Dim2], index: int) -> Tensor[E, Dv, Dim1]: ...
    @overload
    def __getitem__(self: Tensor[E, Dv, Dim3], index: int) -> Tensor[E, Dv, Dim2]: ...
    @overload
    def __getitem__(self: Tensor[E, Dv, Dim4], index: int) -> Tensor[E, Dv, Dim3]: ...
    @overload
    def __getitem__(self: Tensor[E, Dv, Dim5], index: int) -> Tensor[E, Dv, Dim4]: ...
    @overload
    def __getitem__(self: Tensor[E, Dv, Dim6], index: int) -> Tensor[E, Dv, Dim5]: ...
    def __getitem__(self, index: int) -> Tensor[Any, Any, Any]:
        return self._slice(index)
    # --- END GENERATED GETITEM ---
    # fmt: on


def check_writable(tensor: Tensor[Any, Any, Any], action: str) -> None:
    """Raise ReadOnlyError before ``action`` writes into ``tensor`` when its memory is
    read-only (numpy would raise a bare ``ValueError`` from deep inside the write)."""
    array = tensor.array
    if type(array) is not np.ndarray or array.flags.writeable:
        return  # cupy arrays have no read-only flag
    raise ReadOnlyError(
        message(
            f"cannot {action}: the tensor's memory is read-only.",
            [
                ("tensor", tensor.describe()),
                (
                    "why",
                    "results of tn.evaluate are read-only (they are cached values), as is a "
                    "read-only numpy array shared with tn.tensor(..., copy=False)",
                ),
            ],
            hint="write into a tensor you allocated (tn.zeros(shape, elem, device)), or into "
            "a copy: tn.tensor(t.numpy(), elem, device, dim).",
        )
    )


def _shape_of(array: Any) -> str:
    shape = getattr(array, "shape", None)
    return str(tuple(shape)) if shape is not None else type(array).__name__


Scalar = TensorLike[E, Dv, Dim0]
"""Rank-0 data of element ``E`` on ``Dv`` (any data kind, lazy or not)."""
Vector = TensorLike[E, Dv, Dim1]
"""Rank-1 data."""
Matrix = TensorLike[E, Dv, Dim2]
"""Rank-2 data."""
Tensor3 = TensorLike[E, Dv, Dim3]
"""Rank-3 data."""
Tensor4 = TensorLike[E, Dv, Dim4]
"""Rank-4 data."""
Tensor5 = TensorLike[E, Dv, Dim5]
"""Rank-5 data."""
Tensor6 = TensorLike[E, Dv, Dim6]
"""Rank-6 data."""

_ = (DimTag, np, overload)
