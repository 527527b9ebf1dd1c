"""``stop_gradient(x)``: ``x`` itself for evaluation, a constant for ``tn.grad``.

Its forward value is its operand's (a view kind op: the kernel returns a view of the operand,
and the evaluator's rewrite ``stop_gradient(x) -> x`` makes it no step at all), and no
gradient flows through it: a path to a ``wrt`` through it adds zero. MetaNN's gradients that
are not the plain vjp (no gradient to the NLL truth, truncated backpropagation through time)
are written with it in the forward (DESIGN §7).
"""

from __future__ import annotations

from ..data.tensor import TensorLike
from ..tags import D, DeviceTag, Dv, E, ElemTag
from .declare import NOT_DIFFERENTIABLE, OpDecl, Operand, Params
from .node import build
from .rules import tensor_operands

__all__ = ["STOP_GRADIENT", "stop_gradient"]


def _infer(
    decl: OpDecl, operands: tuple[Operand, ...], params: Params
) -> tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]:
    (x,) = tensor_operands(decl, operands)
    return x.shape, x.elem, x.device


STOP_GRADIENT = OpDecl(
    "stop_gradient", 1, _infer, kind="view", vjp=NOT_DIFFERENTIABLE, onnx="Identity"
)


def stop_gradient(x: TensorLike[E, Dv, D]) -> TensorLike[E, Dv, D]:
    """``x``'s value, through which ``tn.grad`` passes no gradient (``jax.lax.stop_gradient``,
    PyTorch's ``x.detach()``); no copy is made.

    >>> x = tn.tensor([1.0, 2.0], tn.Float64, tn.CPU, tn.Dim1)
    >>> loss = ops.reduce_sum(x * ops.stop_gradient(x))  # d/dx is x, not 2x
    >>> tn.grad(loss, x).numpy()
    array([1., 2.])
    """
    return build(STOP_GRADIENT, (x,))
