"""Debug mode's integer overflow check, run by the executor after each node it computes.

Int32 and Int64 arithmetic wraps around, as numpy's does: ``2**31 - 1 + 1`` is ``-2**31`` in
Int32, silently. In debug mode, each Int32 ``add``, ``sub``, ``mul``, ``negative``, ``abs``,
``reduce_sum`` and ``dot`` is computed again in int64 (where these results of Int32 operands
cannot wrap) and compared; the first node whose result differs stops the evaluation with a
:class:`~typed_nn.NumericError` naming the op, the first wrapped element, the user line that
built the node and its operands' ranges. (Int64 results are not checked: nothing wider is
exact and fast.) A cast to an integer type (``astype``) of a value the type cannot hold (NaN,
an infinity, out of range: numpy gives INT_MIN or wraps) is reported the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import devices
from ..data.tensor import Tensor, TensorLike
from ..errors import NumericError, message
from ..evaluate.cache import cached
from ..ops.declare import implementation
from ..ops.node import Operation
from ..tags import CPU, Int32, IntTag
from .numeric import operand_ranges

__all__ = ["check_int_cast", "check_int_overflow"]


def check_int_overflow(node: Operation[Any, Any, Any], result: Tensor[Any, Any, Any]) -> None:
    """Raise NumericError when ``node``'s Int32 result wrapped around (for the ops whose
    declaration says integer results may wrap: ``OpDecl.int_overflow``)."""
    if node.elem is not Int32 or not node.op.int_overflow or result.size == 0:
        return
    operands = [_wide(x) for x in node.operands]
    if any(x is None for x in operands):
        return  # an operand's values cannot be had (a test fake): nothing to compare
    exact = np.asarray(implementation(node.op.name, CPU)(*operands, *node.params))
    computed = np.asarray(devices.to_host(result.array)).astype(np.int64)
    wrapped = exact != computed
    if not wrapped.any():
        return
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(wrapped)), wrapped.shape))
    items = [
        ("node", node.describe()),
        ("wrapped", f"{int(wrapped.sum())} of {wrapped.size} elements"),
        ("first", f"{int(computed[index])} instead of {int(exact[index])}{_at(index)}"),
    ]
    items += operand_ranges(node)
    raise NumericError(
        message(
            f"{node.op.name} overflowed Int32 (debug mode checks integer arithmetic).",
            items,
            built_at=node.built_at,
            hint=f"Int32 wraps around outside {Int32.min} .. {Int32.max}: compute in Int64, "
            "ops.astype(x, tn.Int64) first.",
        )
    )


def _wide(x: object) -> Any:
    """An operand as int64 values (a number as itself); None when its values cannot be had."""
    if isinstance(x, int):
        return x
    values = _values(x)
    return None if values is None else values.astype(np.int64)


def _values(x: object) -> Any:
    """An operand's values on the host, as they are; None when they cannot be had."""
    if isinstance(x, Operation) and cached(x) is not None:
        x = cached(x)  # computed before this node
    if isinstance(x, Tensor):
        array = x.array
    elif isinstance(x, TensorLike):
        try:
            array = x.numpy()  # a data kind: its lowered form was computed before this node
        except Exception:  # the check is a courtesy; never fail an evaluation because of it
            return None
    else:
        return None
    if not hasattr(array, "dtype"):
        return None
    return np.asarray(devices.to_host(array))


def _at(index: tuple[int, ...]) -> str:
    return f" at index {list(index)}" if index else ""


def check_int_cast(node: Operation[Any, Any, Any], result: Tensor[Any, Any, Any]) -> None:
    """Raise NumericError when ``astype`` to an integer type met a value it cannot hold (a
    NaN, an inf, or a number out of its range: numpy gives INT_MIN or a wrapped value)."""
    elem = node.elem
    if node.op.name != "astype" or not issubclass(elem, IntTag) or result.size == 0:
        return
    source = _values(node.operands[0])
    if source is None:
        return
    if source.dtype.kind == "f":
        bad = ~np.isfinite(source) | (source < elem.min) | (source >= float(elem.max) + 1.0)
    else:
        bad = (source < elem.min) | (source > elem.max)
    if not bad.any():
        return
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
    raise NumericError(
        message(
            f"astype to {elem.__name__} met values it cannot hold (debug mode checks casts).",
            [
                ("node", node.describe()),
                ("out of range", f"{int(bad.sum())} of {bad.size} elements"),
                (
                    "first",
                    f"{source[index].item()!r}{_at(index)}, {elem.__name__} is {elem.min} .. "
                    f"{elem.max}",
                ),
                *operand_ranges(node),
            ],
            built_at=node.built_at,
            hint="keep the values in range first (ops.maximum, ops.minimum; ops.where for NaN), "
            "or cast to a wider integer type.",
        )
    )
