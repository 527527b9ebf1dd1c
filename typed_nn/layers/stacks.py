"""What a layer keeps between its forwards and backwards (MetaNN ``LayerTraits``).

* :class:`LayerStack`: a LIFO of values stored by ``feed_forward`` and popped by
  ``feed_backward``, so nine forwards followed by nine backwards pair up in reverse order.
  A stack of an inference layer stores nothing (MetaNN's ``NullParameter`` buffer), nor does
  any stack within ``tn.inference()`` (:mod:`typed_nn.inference_mode`, per thread).
* :func:`collapse`: a gradient summed back to the declared rank of the input it belongs to
  (the leading dims broadcasting added), MetaNN's ``Collapse``.
"""

from __future__ import annotations

from ..data.tensor import AnyTensor, TensorLike
from ..errors import LayerError, OperandError, ShapeError, message
from ..inference_mode import state as inference_state
from ..ops.reduce import reduce_sum
from .in_map import PortType
from .var_type_dict import key_name

__all__ = ["LayerStack", "collapse", "require_trailing"]


class LayerStack:
    """A named LIFO buffer of one layer; inactive (stores nothing) in inference layers."""

    __slots__ = ("_active", "_items", "_layer", "_what")

    def __init__(self, layer: str, what: str, *, active: bool) -> None:
        self._layer = layer
        self._what = what
        self._active = active
        self._items: list[object] = []

    @property
    def active(self) -> bool:
        """Whether a forward stores values now (a training layer, outside ``tn.inference()``)."""
        return self._active and not inference_state.depth

    def push(self, value: object) -> None:
        """Store ``value`` (nothing happens in an inference layer or within ``tn.inference()``)."""
        if self._active and not inference_state.depth:
            self._items.append(value)

    def pop(self) -> object:
        """The most recently stored value, removed; LayerError if there is none."""
        if not self._items:
            raise LayerError(
                message(
                    f"Cannot feed back in layer '{self._layer}': its {self._what} stack is empty.",
                    [("layer", self._layer), ("stack", self._what)],
                    hint="call feed_backward once per feed_forward, after it.",
                )
            )
        return self._items.pop()

    def discard(self) -> None:
        """Pop and drop the last value if this stack stores values (empty-gradient backwards)."""
        if self._active:
            self.pop()

    def __len__(self) -> int:
        return len(self._items)

    def check_empty(self) -> None:
        """LayerError "Stack is not empty." if values are left (MetaNN ``CheckStackEmpty``)."""
        if self._items:
            raise LayerError(
                message(
                    f"Stack is not empty: layer '{self._layer}' still holds "
                    f"{len(self._items)} value(s) in its {self._what} stack.",
                    [("layer", self._layer), ("stack", self._what), ("held", str(len(self)))],
                    hint="feed backward once for every feed forward (or collect the gradients) "
                    "before checking the neutral invariant.",
                )
            )


def collapse(grad: AnyTensor, declared: PortType) -> AnyTensor | None:
    """``grad`` summed over the leading dims broadcasting added, or None for a number port.

    A gradient of rank ``r`` for an input declared with rank ``d < r`` is summed over its
    first ``r - d`` dims; equal ranks pass unchanged.
    """
    given: tuple[object, object] = (grad, declared)  # callers may pass anything
    if not (isinstance(given[0], TensorLike) and isinstance(given[1], PortType)):
        raise OperandError(
            message(
                "collapse needs a gradient (typed_nn data) and a declared port type.",
                [("grad", type(grad).__name__), ("declared", type(declared).__name__)],
                hint="pass a layer's port type: layer.declared(port), or in_map.port_type(t).",
            )
        )
    if declared.is_number:
        return None
    assert declared.rank is not None
    extra = grad.rank - declared.rank
    if extra <= 0:
        return grad
    summed: AnyTensor = reduce_sum(grad, first=extra)
    return summed


def require_trailing(layer: str, operands: dict[type, object], result: AnyTensor) -> None:
    """Reject operands that broadcast by expanding size-1 dims (numpy's rule) in a layer that
    broadcasts as MetaNN's does, by rank only (its gradients are summed to the declared rank,
    MetaNN Collapse): each operand must be a number, a scalar, or the trailing dims of
    ``result``."""
    for port, x in operands.items():
        if isinstance(x, TensorLike) and x.shape != result.shape[result.rank - x.rank :]:
            raise ShapeError(
                message(
                    f"cannot feed layer '{layer}' forward: {key_name(port)} {x.describe()} "
                    f"broadcasts to {result.shape} by expanding size-1 dims.",
                    [("operand", x.describe()), ("result shape", str(result.shape))],
                    hint="this layer broadcasts as MetaNN does (an operand equals the trailing "
                    "dims of the other); repeat the operand with ops.tile first, or write a "
                    "layer whose forward broadcasts as numpy does (its backward, the vjp, sums "
                    "over the expanded dims).",
                )
            )
