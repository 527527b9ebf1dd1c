"""Build-time checks shared by op declarations: operands, elements, devices, broadcasting.

Each check raises the typed_nn error a user can act on, naming the op, the operands as
``Tensor[Float32, CPU, Dim2](4, 3)``, declared vs received, the line that built the node
and one fix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from ..data.dlpack import dlpack_device_of
from ..data.tensor import AnyTensor, Tensor, TensorLike
from ..errors import (
    DeviceError,
    ElemTypeError,
    OperandError,
    ShapeError,
    TypedNNError,
    message,
    received,
)
from ..shape import broadcast_shapes, format_shape
from ..tags import (
    CPU,
    FLOAT_NAMES,
    BFloat16,
    DeviceTag,
    ElemTag,
    Float32,
    FloatTag,
    IntTag,
    elem_of_dtype,
)
from ..tracing import RunTimeNumber
from .declare import OpDecl, Operand
from .node import NumpyNumber, Operation, format_site, user_site

_Tag = TypeVar("_Tag", bound=type)

__all__ = [
    "broadcast_shape",
    "check_numbers",
    "common_device",
    "common_elem",
    "describe",
    "require_float",
    "require_rank",
    "tensor_operands",
]

_LABELS = ("lhs", "rhs", "third", "fourth")
_V = TypeVar("_V")

_NUMBERS = (int, float, np.integer, np.floating)
"""What may stand for an operand where an op takes numbers (not bools: ``bool`` is an ``int``
and is excluded explicitly; ``np.bool_`` is neither ``np.integer`` nor ``np.floating``)."""


def python_ints(values: object) -> tuple[int, ...] | None:
    """``values`` (a sequence of Python or numpy ints, no bools) as a tuple of Python ints,
    else None: op parameters take numpy's ints, as numpy does."""
    if type(values) is tuple and all(type(v) is int for v in values):  # the common case
        return values
    if not isinstance(values, Sequence) or not all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values
    ):
        return None
    return tuple(map(int, values))


def python_int(value: _V) -> _V:
    """A numpy int as Python's, anything else as it is (the check that follows judges it):
    op parameters take numpy's ints, as numpy does. (Typed as what it was given: where a
    parameter is annotated ``int``, a numpy int is what a caller without a type checker
    passed.)"""
    return int(value) if isinstance(value, np.integer) else value  # type: ignore[return-value]


def number_operand(x: object) -> bool:
    """A Python or numpy number (ml_dtypes' bfloat16 scalar too), not a bool."""
    if isinstance(x, _NUMBERS):
        return not isinstance(x, bool)
    return isinstance(x, np.generic) and x.dtype.name == "bfloat16"


def describe(x: Operand) -> str:
    """How an operand is shown in messages (another library's array by its type, shape and
    dtype, not its values)."""
    if isinstance(x, TensorLike):
        return x.describe()
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        return f"{type(x).__module__.split('.')[0]}.{type(x).__name__} {tuple(shape)} of {dtype}"
    return received(x, 80)


def wrap_hint(x: object, elem: type[ElemTag] | None = None) -> str:
    """How to make typed_nn data of ``x``: another library's array wrapped with its tags
    (``elem``: the element the data should have, else the array's own; the device DLPack
    says it lives on)."""
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if not (isinstance(shape, tuple) and dtype is not None):
        return "wrap arrays with tn.tensor(array, elem, device, dim)."
    try:  # numpy's dtype, or another library's named as numpy names it (torch.float32)
        own = elem_of_dtype(np.dtype(str(dtype).rsplit(".", 1)[-1]))
    except TypeError:
        own = None
    want = elem or own or Float32
    where = dlpack_device_of(x) or CPU
    tags = f"tn.{want.__name__}, tn.{where.__name__}, tn.Dim{len(shape)}"
    if own is None or (own is BFloat16 and not isinstance(x, np.ndarray)):
        # a dtype numpy cannot read (torch's bfloat16, with or without ml_dtypes): via float32
        return f"convert it to a numpy float32 array first, then tn.tensor(array, {tags})."
    if want is not own or (where is not CPU and not isinstance(x, np.ndarray)):
        if where is not CPU:  # DLPack shares memory as it is: convert in its own library
            return f"convert it to {want.dtype} in its library, then tn.from_dlpack(x, {tags})."
        source = "x" if isinstance(x, np.ndarray) else "np.asarray(x)"
        return f"copy it into {want.__name__}: tn.tensor({source}, {tags})."
    if isinstance(x, np.ndarray):
        return f"wrap it: tn.tensor(x, {tags}) (a copy), or tn.from_dlpack(x, {tags}) (shared)."
    return f"share its memory: tn.from_dlpack(x, {tags})."


def label(decl: OpDecl, i: int) -> str:
    return (
        _LABELS[i]
        if decl.arity > 1 and i < len(_LABELS)
        else ("operand" if decl.arity == 1 else f"#{i}")
    )


def site() -> str:
    return format_site(user_site())


def require_data(fn: str, what: str, x: object) -> AnyTensor:
    """``x`` itself when it is typed_nn data; an OperandError naming ``fn``'s argument
    ``what`` otherwise (for composite ops, which build several nodes from it)."""
    if not isinstance(x, TensorLike):
        raise OperandError(
            message(
                f"cannot build {fn}: {what} is not typed_nn data.",
                [(what, describe(x)), ("accepted", "typed_nn data")],
                built_at=site(),
                hint=wrap_hint(x),
            )
        )
    return x


def tensor_operands(decl: OpDecl, operands: Sequence[Operand]) -> list[AnyTensor]:
    """The data operands; rejects anything that is neither data nor (where allowed) a number."""
    tensors: list[AnyTensor] = []
    for i, x in enumerate(operands):
        t = type(x)
        if t is Tensor or t is Operation or isinstance(x, TensorLike):  # exact types first
            tensors.append(x)
        elif decl.numbers and number_operand(x):
            if isinstance(x, np.generic):
                raise NumpyNumber  # build() converts it to a Python number and checks again
            continue
        else:
            accepted = (
                "typed_nn data or a number (Python or numpy)" if decl.numbers else "typed_nn data"
            )
            raise OperandError(
                message(
                    f"cannot build {decl.name}: operand {i + 1} is not typed_nn data.",
                    [(label(decl, i), describe(x)), ("accepted", accepted)],
                    built_at=site(),
                    hint=wrap_hint(x),
                )
            )
    if not tensors:
        raise OperandError(
            message(
                f"cannot build {decl.name} from numbers alone.",
                [("operands", ", ".join(describe(x) for x in operands))],
                built_at=site(),
                hint="compute plain numbers in Python; give at least one tensor.",
            )
        )
    return tensors


def common_device(decl: OpDecl, tensors: Sequence[AnyTensor]) -> type[DeviceTag]:
    """The one device of all data operands."""
    hint = "move one: ops.to_device(x, tn.{first}) on operand {j}, or ops.to_device(x, tn.{other}) on the others."
    return _common_tag(
        decl, tensors, lambda x: x.device, DeviceError, "live on different devices", hint
    )


def common_elem(decl: OpDecl, tensors: Sequence[AnyTensor]) -> type[ElemTag]:
    """The one element type of all data operands."""
    hint = "convert one: ops.astype(x, tn.{first}) on operand {j}, or ops.astype(x, tn.{other}) on the others."
    return _common_tag(
        decl, tensors, lambda x: x.elem, ElemTypeError, "have different element types", hint
    )


def _common_tag(
    decl: OpDecl,
    tensors: Sequence[AnyTensor],
    tag_of: Callable[[AnyTensor], _Tag],
    error: type[TypedNNError],
    differ: str,
    hint: str,
) -> _Tag:
    """The first operand's tag (device or element) when every operand has it; else ``error``,
    with every operand listed and ``hint`` naming both ways to agree: the first differing
    operand ``j`` to the first's tag, or the others to ``j``'s."""
    tag = tag_of(tensors[0])
    for j, x in enumerate(tensors[1:], 2):
        other = tag_of(x)
        if other is not tag:
            raise error(
                message(
                    f"cannot build {decl.name}: operands {differ}.",
                    [(f"operand {i + 1}", t.describe()) for i, t in enumerate(tensors)],
                    built_at=site(),
                    hint=hint.format(first=tag.__name__, other=other.__name__, j=j),
                )
            )
    return tag


def _has_float_value(x: int) -> bool:
    try:
        float(x)
    except OverflowError:
        return False
    return True


def check_numbers(decl: OpDecl, operands: Sequence[Operand], elem: type[ElemTag]) -> None:
    """A number operand must be representable in the tensor's element type."""
    if not issubclass(elem, IntTag):
        for x in operands:  # an int past every float (numpy's OverflowError, at evaluation)
            if type(x) is int and x.bit_length() > 1023 and not _has_float_value(x):
                raise ElemTypeError(
                    message(
                        f"cannot build {decl.name}: an int of {x.bit_length()} bits has no "
                        f"{elem.__name__} value.",
                        [("tensor element", elem.__name__), ("largest Python float", "1.8e308")],
                        built_at=site(),
                        hint="use a float: float('inf') if an infinite value is meant.",
                    )
                )
        return
    for x in operands:
        if isinstance(x, RunTimeNumber):
            raise ElemTypeError(
                message(
                    f"cannot build {decl.name}: a float argument of a compiled function is "
                    f"not an {elem.__name__} value.",
                    [("tensor element", elem.__name__), ("number", "a float argument")],
                    built_at=site(),
                    hint="a float argument may be any float at the next call: pass an int (a "
                    "static value, one trace per value), or ops.astype(x, Float32) first.",
                )
            )
        if isinstance(x, int | float) and x == x and not elem.min <= x <= elem.max:
            raise ElemTypeError(
                message(
                    f"cannot build {decl.name}: {x!r} does not fit in {elem.__name__}.",
                    [
                        ("tensor element", elem.__name__),
                        ("number", repr(x)),
                        ("range", f"{elem.min} .. {elem.max}"),
                    ],
                    built_at=site(),
                    hint="use a smaller number, or ops.astype(x, Int64) first.",
                )
            )
        if isinstance(x, float) and not x.is_integer():
            raise ElemTypeError(
                message(
                    f"cannot build {decl.name}: {x!r} is not an {elem.__name__} value.",
                    [("tensor element", elem.__name__), ("number", repr(x))],
                    built_at=site(),
                    hint="use an integer, or ops.astype(x, Float32) first.",
                )
            )


def require_float(decl: OpDecl, x: AnyTensor) -> None:
    """Ops with real-valued results (exp, log, sigmoid, /, ...) take float elements only."""
    if not issubclass(x.elem, FloatTag):
        raise ElemTypeError(
            message(
                f"cannot build {decl.name}: it needs float elements.",
                [("operand", x.describe()), ("accepted", FLOAT_NAMES)],
                built_at=site(),
                hint="convert first: ops.astype(x, tn.Float32).",
            )
        )


def require_rank(
    decl: OpDecl, x: AnyTensor, *, at_least: int = 0, at_most: int = 4, what: str = "operand"
) -> None:
    """Reject data whose rank is outside ``at_least .. at_most``."""
    if not at_least <= x.rank <= at_most:
        accepted = f"rank {at_least}" if at_least == at_most else f"rank {at_least} to {at_most}"
        raise ShapeError(
            message(
                f"cannot build {decl.name}: {what} has rank {x.rank}.",
                [(what, x.describe()), ("accepted", accepted)],
                built_at=site(),
                hint="reshape the operand to the rank the op needs.",
            )
        )


def broadcast_shape(decl: OpDecl, tensors: Sequence[AnyTensor]) -> tuple[int, ...]:
    """numpy's broadcasting: shapes aligned on their trailing dims, each pair of sizes equal
    or one of them 1 (which expands); the result has the highest rank. MetaNN's rule (a
    lower-rank operand equals the trailing dims of the higher) is the case without 1s."""
    result = broadcast_shapes(*(t.shape for t in tensors))
    if result is not None:
        return result
    rank = max(t.rank for t in tensors)
    shapes = " and ".join(format_shape(t.shape) for t in tensors)
    mismatch = []
    for d in range(rank):
        sizes = {t.shape[d - rank + t.rank] for t in tensors if d - rank + t.rank >= 0} - {1}
        if len(sizes) > 1:
            mismatch.append(f"dim {d}: " + " vs ".join(str(n) for n in sorted(sizes)))
    raise ShapeError(
        message(
            f"cannot build {decl.name}: operands could not be broadcast together with shapes "
            f"{shapes}.",
            [(f"operand {i + 1}", u.describe()) for i, u in enumerate(tensors)]
            + [("rule", "trailing dims aligned; each pair equal, or one of them 1")]
            + [("mismatch", "; ".join(mismatch))],
            built_at=site(),
            hint="reshape an operand to put a 1 where it should repeat (ops.reshape), or "
            "repeat it explicitly with ops.tile.",
        )
    )
