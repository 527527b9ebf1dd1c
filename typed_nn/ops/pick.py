"""Integer labels picking along the last dim: ``label_pick`` and its gradient.

* ``label_pick(x, labels)``: ``x`` float of rank r + 1 (its last dim holds one value per
  class), ``labels`` integer of rank r with ``x``'s leading shape -> ``labels.shape``, the value
  ``x[..., labels]`` at each position (``numpy.take_along_axis``). Cross-entropy on integer
  labels picks the log-probability of each label this way, with no one-hot matrix.
* ``label_pick_grad(g, labels, classes)``: its gradient with respect to ``x``: a zero array of
  shape ``labels.shape + (classes,)`` with ``g`` written at each label.

A label outside ``0 .. classes - 1`` is an ``IndexRangeError`` naming the value and its
position when the CPU kernel reads the labels; the GPU kernel checks without waiting for the
device and gives NaN where a label is out of range (see ``backends/cupy/nn.py``).
Labels get no gradient (they are integers).
"""

from __future__ import annotations

from typing import Any

from ..data.tensor import AnyTensor, TensorLike
from ..errors import ElemTypeError, RankError, ShapeError, message
from ..shape import format_shape
from ..tags import FE, DeviceTag, Dv, ElemTag, IntTag
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, build
from .rules import common_device, python_int, require_float, site, tensor_operands

__all__ = [
    "LABEL_PICK",
    "LABEL_PICK_GRAD",
    "check_integer",
    "check_labels",
    "label_pick",
    "label_pick_grad",
]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]


def check_integer(name: str, labels: AnyTensor) -> None:
    """``labels`` hold integers (class numbers)."""
    if not issubclass(labels.elem, IntTag):
        raise ElemTypeError(
            message(
                f"cannot build {name}: the labels are not an integer tensor.",
                [("labels", labels.describe()), ("accepted", "Int64 (or Int32) class numbers")],
                built_at=site(),
                hint="pass class numbers, e.g. tn.tensor(ids, tn.Int64, tn.CPU, tn.Dim1); "
                "ops.astype(labels, tn.Int64) converts float labels holding whole numbers.",
            )
        )


def check_labels(name: str, x: AnyTensor, labels: AnyTensor, what: str = "values") -> None:
    """``labels`` are integers shaped like ``x`` without its last (class) dim."""
    check_integer(name, labels)
    if x.rank < 1 or labels.shape != x.shape[:-1]:
        raise (ShapeError if x.rank == labels.rank + 1 else RankError)(
            message(
                f"cannot build {name}: the labels' shape is not the {what}' shape without "
                "the last (class) dim.",
                [
                    (what, x.describe()),
                    ("labels", labels.describe()),
                    ("expected", f"labels of shape {format_shape(x.shape[:-1])}"),
                ],
                built_at=site(),
                hint=f"give one label per row of the {what}: (N, C) {what} take (N,) labels, "
                f"(N, T, C) {what} take (N, T) labels.",
            )
        )


def _infer_pick(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    x, labels = tensor_operands(decl, operands)
    device = common_device(decl, (x, labels))
    require_float(decl, x)
    check_labels(decl.name, x, labels)
    return labels.shape, x.elem, device


def _infer_pick_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    g, labels = tensor_operands(decl, operands)
    device = common_device(decl, (g, labels))
    require_float(decl, g)
    (classes,) = params
    if not isinstance(classes, int) or isinstance(classes, bool) or classes < 1:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: classes must be an int >= 1, got {classes!r}.",
                built_at=site(),
                hint="pass the size of the picked operand's last dim.",
            )
        )
    check_integer(decl.name, labels)
    if g.shape != labels.shape:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: the gradient is not shaped like the labels.",
                [("grad", g.describe()), ("labels", labels.describe())],
                built_at=site(),
                hint="pass the gradient of label_pick(x, labels)'s output.",
            )
        )
    return (*labels.shape, classes), g.elem, device


def _pick_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    x, labels = n.operands
    return build(LABEL_PICK_GRAD, (g, labels), (x.shape[-1],)), None


def _pick_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return build(LABEL_PICK, (c, n.operands[1]), ()), None  # linear in g: the adjoint pick


LABEL_PICK = OpDecl("label_pick", 2, _infer_pick, vjp=_pick_vjp)
LABEL_PICK_GRAD = OpDecl(
    "label_pick_grad", 2, _infer_pick_grad, params=("classes",), vjp=_pick_grad_vjp
)


def label_pick(x: TensorLike[FE, Dv, Any], labels: TensorLike[Any, Dv, Any]) -> AnyTensor:
    """``x[..., labels]``: for each position of the integer ``labels`` (``x``'s shape without
    its last dim), the value of ``x`` at that label; shaped like ``labels``.

    >>> x = tn.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], tn.Float32, tn.CPU, tn.Dim2)
    >>> ops.label_pick(x, tn.tensor([1, 0], tn.Int64, tn.CPU, tn.Dim1)).numpy()
    array([0.7, 0.5], dtype=float32)
    """
    return build(LABEL_PICK, (x, labels), ())


def label_pick_grad(
    g: TensorLike[FE, Dv, Any], labels: TensorLike[Any, Dv, Any], classes: int
) -> AnyTensor:
    """The gradient of ``label_pick`` with respect to ``x``: ``labels.shape + (classes,)``,
    zero but for ``g``'s values at the labels."""
    return build(LABEL_PICK_GRAD, (g, labels), (python_int(classes),))
