"""Debug mode's NaN / Inf check, run by the executor after each node it computes.

The first node whose result holds a NaN or an infinity that none of its operands held (the
node *introduced* it) stops the evaluation with a
:class:`~typed_nn.NumericError` that names the op, the user line that built the node and the
range (min, max) of each operand, so the culprit is the node that *produced* the bad value,
not the loss that shows it three layers later.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.tensor import Tensor, TensorLike
from ..errors import NumericError, message
from ..ops.node import Operation
from ..tags import is_float_dtype

__all__ = ["check_finite", "operand_ranges", "value_range"]

_HINTS = {
    "log": "log is NaN below 0 and -inf at 0: clip its input, e.g. ops.log(ops.maximum(x, 1e-12)).",
    "sqrt": "sqrt is NaN below 0: clip its input or square-root its absolute value.",
    "div": "a division by zero gives inf (0 / 0 gives NaN): add an epsilon to the divisor.",
    "exp": "exp overflows above ~88 in Float32: subtract the maximum first (log_softmax does).",
    "asin": "asin is NaN outside [-1, 1].",
    "acos": "acos is NaN outside [-1, 1].",
    "acosh": "acosh is NaN below 1.",
}


def check_finite(node: Operation[Any, Any, Any], result: Tensor[Any, Any, Any]) -> None:
    """Raise NumericError when ``node`` introduced a NaN or an Inf into ``result``.

    A value that is already in an operand (an Inf the user put in a tensor on purpose) only
    flows through; the error is raised where it first appears.
    """
    array = result.array
    if not is_float_dtype(array.dtype) or array.size == 0 or not hasattr(array, "__abs__"):
        return  # integers cannot hold NaN; an array type without arithmetic is a test fake
    if bool(abs(array).max() < float("inf")):
        return  # the max of |x| is finite only when no element is NaN or Inf (cupy: one sync)
    nans, infs = _count(array)
    inherited = [_count(v) for v in map(_values, node.operands) if v is not None]
    introduced_nan = nans and not any(n for n, _ in inherited)
    introduced_inf = infs and not any(i for _, i in inherited)
    if not (introduced_nan or introduced_inf):
        return
    found = " and ".join(f"{n} {what}" for n, what in ((nans, "NaN"), (infs, "Inf")) if n)
    items = [("node", node.describe()), ("produced", f"{found} of {array.size} elements")]
    items += operand_ranges(node)
    raise NumericError(
        message(
            f"{node.op.name} produced {found} (debug mode checks every node).",
            items,
            built_at=node.built_at,
            hint=_HINTS.get(
                node.op.name, "check the operands' ranges above; the line above built the node."
            ),
        )
    )


def _count(array: Any) -> tuple[int, int]:
    """(number of NaNs, number of Infs) in a float array; (0, 0) for other dtypes."""
    if getattr(array, "dtype", None) is None or not is_float_dtype(array.dtype):
        return 0, 0
    return int((array != array).sum()), int((abs(array) == float("inf")).sum())


def operand_ranges(node: Operation[Any, Any, Any]) -> list[tuple[str, str]]:
    """Each operand of ``node`` with the range of its values, for a debug-mode message."""
    return [
        (f"operand {i + 1}", f"{_describe(x)}   range {value_range(x)}")
        for i, x in enumerate(node.operands)
    ]


def _describe(x: object) -> str:
    return x.describe() if isinstance(x, TensorLike) else f"{type(x).__name__} {x!r}"


def value_range(x: object) -> str:
    """``[min, max]`` of an operand's values; a number is its own range."""
    if isinstance(x, int | float):
        return f"[{x!r}, {x!r}]"
    array = _values(x)
    if array is None:
        return "not computed"
    if array.size == 0:
        return "empty"
    if array.dtype.kind in "iu":  # exactly: an overflow report needs the last digits
        return f"[{int(array.min())}, {int(array.max())}]"
    return f"[{float(array.min()):.6g}, {float(array.max()):.6g}]"


def _values(x: object) -> Any:
    """The values of an operand (an array), None for an int or when they cannot be had.

    Only reached on the error path. Operands were computed before the node, so evaluating
    them again through the public API reads cached results (or recomputes, checked).
    """
    if isinstance(x, float):
        return np.asarray(x)
    if isinstance(x, Tensor):
        return x.array
    if isinstance(x, TensorLike):
        try:
            return x.numpy()
        except Exception:  # the range is a courtesy; never hide the NumericError behind it
            return None
    return None
