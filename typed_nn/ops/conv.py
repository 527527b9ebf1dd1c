"""2-D convolution and max pooling over NCHW images, with their gradient ops.

Layouts: images ``x`` are ``(N, C, H, W)`` (batch, channels, height, width); weights ``w``
are ``(O, C, KH, KW)`` (output channels, input channels, kernel height, kernel width).
``stride`` and ``padding`` are an int or an ``(along H, along W)`` pair; padding adds zeros
on both sides. Output sizes: ``H' = (H + 2 * padding - KH) // stride + 1`` (same for W).

* ``conv2d(x, w)`` -> ``(N, O, H', W')``: ``out[n, o] = sum_c correlate(x[n, c], w[o, c])``
  (cross-correlation, as in PyTorch and Caffe).
* ``conv2d_grad_input(g, w, input_shape)`` and ``conv2d_grad_weight(g, x, weight_shape)``:
  the gradients of a loss with respect to ``x`` and ``w`` given ``g``, its gradient with
  respect to ``conv2d``'s output. The shape of what they differentiate is passed explicitly
  because it cannot be recovered from ``g`` (``H`` is ambiguous when ``stride > 1``), and
  passing it lets the backward pass not depend on the other operand's values.
* ``max_pool2d(x, size, stride)`` -> ``(N, C, H', W')`` (no padding; stride defaults to
  ``size``), and ``max_pool2d_grad(g, x, size, stride)``: ``g`` routed to the position of each
  window's maximum (the first one on ties; overlapping windows add up), shaped like ``x``.
* ``avg_pool2d(x, size, stride)`` -> ``(N, C, H', W')``: the mean of each window (no padding;
  stride defaults to ``size``), and ``avg_pool2d_grad(g, input_shape, size, stride)``: each
  window's ``g / (KH * KW)`` spread over the window (overlapping windows add up).
"""

from __future__ import annotations

import numpy as np

from ..data.tensor import AnyTensor, TensorLike
from ..errors import ShapeError, message
from ..shape import format_shape
from ..tags import FE, DeviceTag, Dim4, Dv, ElemTag
from .declare import OpDecl, Operand, Params
from .node import AnyOp, Cotangents, build
from .rules import common_device, common_elem, require_float, require_rank, site, tensor_operands

__all__ = [
    "AVG_POOL2D",
    "AVG_POOL2D_GRAD",
    "CONV2D",
    "CONV2D_GRAD_INPUT",
    "CONV2D_GRAD_WEIGHT",
    "MAX_POOL2D",
    "MAX_POOL2D_GRAD",
    "MAX_POOL2D_SELECT",
    "avg_pool2d",
    "avg_pool2d_grad",
    "conv2d",
    "conv2d_grad_input",
    "conv2d_grad_weight",
    "max_pool2d",
    "max_pool2d_grad",
    "out_size",
]

Inferred = tuple[tuple[int, ...], type[ElemTag], type[DeviceTag]]
Pair = int | tuple[int, int]
Shape4 = tuple[int, int, int, int]


def as_pair(
    name: str, value: object, minimum: int, cannot: str, built_at: str | None
) -> tuple[int, int]:
    """``value`` (an int, or an (H, W) pair) as an (H, W) pair of ints >= ``minimum``; else a
    ``ShapeError`` that begins with ``cannot`` (what could not be made) and names ``name``."""
    pair = (value, value) if isinstance(value, int | np.integer) else value
    if (
        not isinstance(pair, tuple)
        or len(pair) != 2
        or not all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= minimum
            for v in pair
        )
    ):
        raise ShapeError(
            message(
                f"{cannot}: {name} must be an int >= {minimum} or a pair of them, got {value!r}.",
                built_at=built_at,
                hint=f"e.g. {name}=2 or {name}=(2, 3) for (along H, along W).",
            )
        )
    return int(pair[0]), int(pair[1])  # numpy integers too (docs/layers.md: sizes)


def _pair(op: str, name: str, value: object, minimum: int) -> tuple[int, int]:
    return as_pair(name, value, minimum, f"cannot build {op}", site())


def _conv_params(
    op: str, stride: object, padding: object
) -> tuple[tuple[int, int], tuple[int, int]]:
    """A convolution's checked (stride, padding), for its builder and its node's checks."""
    return _pair(op, "stride", stride, 1), _pair(op, "padding", padding, 0)


def _pool_params(op: str, size: object, stride: object) -> tuple[tuple[int, int], tuple[int, int]]:
    """A pooling op's checked (size, stride); a stride of None is the size."""
    return _pair(op, "size", size, 1), _pair(op, "stride", size if stride is None else stride, 1)


def out_size(
    hw: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int]
) -> tuple[int, int]:
    """``(H', W')`` of a window of ``kernel`` sliding over ``hw`` padded by ``padding``."""
    h = (hw[0] + 2 * padding[0] - kernel[0]) // stride[0] + 1
    w = (hw[1] + 2 * padding[1] - kernel[1]) // stride[1] + 1
    return h, w


def _operands(
    decl: OpDecl, operands: tuple[Operand, ...], names: tuple[str, ...]
) -> list[AnyTensor]:
    """Rank-4 float data on one device with one element type."""
    tensors = tensor_operands(decl, operands)
    common_device(decl, tensors)
    common_elem(decl, tensors)
    for t, name in zip(tensors, names, strict=True):
        require_float(decl, t)
        require_rank(decl, t, at_least=4, at_most=4, what=name)
    return tensors


def _windows(
    decl: OpDecl,
    input_desc: str,
    hw: tuple[int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
) -> tuple[int, int]:
    """The output (H', W'), or an error when the window exceeds the padded input."""
    h, w = hw[0] + 2 * padding[0], hw[1] + 2 * padding[1]
    if kernel[0] > h or kernel[1] > w:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: the {kernel[0]}x{kernel[1]} window is larger than "
                f"the padded {h}x{w} input.",
                [
                    ("input", input_desc),
                    ("window", format_shape(kernel)),
                    ("padding", str(padding)),
                ],
                built_at=site(),
                hint="use a smaller kernel, or more padding.",
            )
        )
    return out_size(hw, kernel, stride, padding)


def _hw(x: AnyTensor) -> tuple[int, int]:
    return x.shape[2], x.shape[3]


def _shape4(decl: OpDecl, name: str, value: object) -> Shape4:
    if (
        not isinstance(value, tuple)
        or len(value) != 4
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        raise ShapeError(
            message(
                f"cannot build {decl.name}: {name} must be a tuple of 4 sizes, got {value!r}.",
                built_at=site(),
                hint=f"pass the forward operand's shape, e.g. {name}=x.shape.",
            )
        )
    return value[0], value[1], value[2], value[3]


def _channels(decl: OpDecl, items: list[tuple[str, str]], have: int, want: int, what: str) -> None:
    if have != want:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: {what} differ ({have} vs {want}).",
                items,
                built_at=site(),
                hint="the input's channels (dim 1) must equal the weight's dim 1; "
                "the batch and output-channel dims must agree between the gradient and its pair.",
            )
        )


def _grad_shape(decl: OpDecl, g: AnyTensor, want: tuple[int, ...], forward: str) -> None:
    if g.shape != want:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: the gradient is not shaped like the forward output.",
                [
                    ("grad", g.describe()),
                    ("expected", f"{format_shape(want)} (the {forward} output)"),
                ],
                built_at=site(),
                hint="pass the gradient of the forward op's output, with the same stride/padding.",
            )
        )


def _infer_conv2d(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    x, w = _operands(decl, operands, ("input", "weight"))
    stride, padding = _conv_params(decl.name, params[0], params[1])
    items = [("input", x.describe()), ("weight", w.describe())]
    _channels(decl, items, x.shape[1], w.shape[1], "input channels")
    h, wd = _windows(decl, x.describe(), _hw(x), (w.shape[2], w.shape[3]), stride, padding)
    return (x.shape[0], w.shape[0], h, wd), x.elem, x.device


def _infer_grad_input(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    g, w = _operands(decl, operands, ("grad", "weight"))
    shape = _shape4(decl, "input_shape", params[0])
    stride, padding = _conv_params(decl.name, params[1], params[2])
    items = [("grad", g.describe()), ("weight", w.describe()), ("input_shape", format_shape(shape))]
    _channels(decl, items, shape[1], w.shape[1], "input channels")
    _channels(decl, items, g.shape[1], w.shape[0], "output channels")
    kernel = (w.shape[2], w.shape[3])
    h, wd = _windows(decl, format_shape(shape), (shape[2], shape[3]), kernel, stride, padding)
    _grad_shape(decl, g, (shape[0], w.shape[0], h, wd), "conv2d")
    return shape, g.elem, g.device


def _infer_grad_weight(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    g, x = _operands(decl, operands, ("grad", "input"))
    shape = _shape4(decl, "weight_shape", params[0])
    stride, padding = _conv_params(decl.name, params[1], params[2])
    items = [("grad", g.describe()), ("input", x.describe()), ("weight_shape", format_shape(shape))]
    _channels(decl, items, x.shape[1], shape[1], "input channels")
    _channels(decl, items, g.shape[1], shape[0], "output channels")
    h, wd = _windows(decl, x.describe(), _hw(x), (shape[2], shape[3]), stride, padding)
    _grad_shape(decl, g, (x.shape[0], shape[0], h, wd), "conv2d")
    return shape, g.elem, g.device


def _conv2d_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    x, w = n.operands
    return (
        build(CONV2D_GRAD_INPUT, (g, w), (x.shape, *n.params)),
        build(CONV2D_GRAD_WEIGHT, (g, x), (w.shape, *n.params)),
    )


# Both gradients are bilinear in (g, the other operand): <c, grad_input(g, w)> is
# <g, conv2d(c, w)>, and <c, grad_weight(g, x)> is <g, conv2d(x, c)>.
def _grad_input_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    g, w = n.operands
    conv = n.params[1:]
    return build(CONV2D, (c, w), conv), build(CONV2D_GRAD_WEIGHT, (g, c), (w.shape, *conv))


def _grad_weight_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    g, x = n.operands
    conv = n.params[1:]
    return build(CONV2D, (x, c), conv), build(CONV2D_GRAD_INPUT, (g, c), (x.shape, *conv))


CONV2D = OpDecl(
    "conv2d",
    2,
    _infer_conv2d,
    params=("stride", "padding"),
    kind="contraction",
    vjp=_conv2d_vjp,
    accumulates=True,
)
CONV2D_GRAD_INPUT = OpDecl(
    "conv2d_grad_input",
    2,
    _infer_grad_input,
    params=("input_shape", "stride", "padding"),
    vjp=_grad_input_vjp,
    accumulates=True,
)
CONV2D_GRAD_WEIGHT = OpDecl(
    "conv2d_grad_weight",
    2,
    _infer_grad_weight,
    params=("weight_shape", "stride", "padding"),
    vjp=_grad_weight_vjp,
    accumulates=True,
)


def _infer_pool(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (x,) = _operands(decl, operands, ("input",))
    size, stride = _pool_params(decl.name, params[0], params[1])
    h, w = _windows(decl, x.describe(), _hw(x), size, stride, (0, 0))
    return (*x.shape[:2], h, w), x.elem, x.device


def _infer_pool_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    g, x = _operands(decl, operands, ("grad", "input"))
    size, stride = _pool_params(decl.name, params[0], params[1])
    h, w = _windows(decl, x.describe(), _hw(x), size, stride, (0, 0))
    _grad_shape(decl, g, (*x.shape[:2], h, w), "max_pool2d")
    return x.shape, x.elem, x.device


# max_pool2d_grad routes each window's gradient to the window's first maximum; its adjoint,
# max_pool2d_select, reads the cotangent back from there. Both are linear in their first
# operand and piecewise constant in x.
def _pool_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (build(MAX_POOL2D_GRAD, (g, n.operands[0]), n.params),)


def _pool_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return build(MAX_POOL2D_SELECT, (c, n.operands[1]), n.params), None


def _pool_select_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return build(MAX_POOL2D_GRAD, (c, n.operands[1]), n.params), None


def _infer_pool_select(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    c, x = _operands(decl, operands, ("cotangent", "input"))
    if c.shape != x.shape:
        raise ShapeError(
            message(
                f"cannot build {decl.name}: the cotangent and the input differ in shape.",
                [("cotangent", c.describe()), ("input", x.describe())],
                built_at=site(),
                hint="give a cotangent shaped like max_pool2d's input.",
            )
        )
    return _infer_pool(decl, (x,), params)


MAX_POOL2D = OpDecl("max_pool2d", 1, _infer_pool, params=("size", "stride"), vjp=_pool_vjp)
MAX_POOL2D_GRAD = OpDecl(
    "max_pool2d_grad", 2, _infer_pool_grad, params=("size", "stride"), vjp=_pool_grad_vjp
)
MAX_POOL2D_SELECT = OpDecl(
    "max_pool2d_select", 2, _infer_pool_select, params=("size", "stride"), vjp=_pool_select_vjp
)
"""``max_pool2d_select(c, x)``: for each window of ``x``, ``c`` at the window's first maximum
(the adjoint of ``max_pool2d_grad``; second-order gradients through pooling use it)."""


def _infer_avg_pool_grad(decl: OpDecl, operands: tuple[Operand, ...], params: Params) -> Inferred:
    (g,) = _operands(decl, operands, ("grad",))
    shape = _shape4(decl, "input_shape", params[0])
    size, stride = _pool_params(decl.name, params[1], params[2])
    h, w = _windows(decl, format_shape(shape), (shape[2], shape[3]), size, stride, (0, 0))
    _grad_shape(decl, g, (*shape[:2], h, w), "avg_pool2d")
    return shape, g.elem, g.device


# Both are linear and each other's adjoint.
def _avg_pool_vjp(n: AnyOp, g: AnyTensor) -> Cotangents:
    return (build(AVG_POOL2D_GRAD, (g,), (n.operands[0].shape, *n.params)),)


def _avg_pool_grad_vjp(n: AnyOp, c: AnyTensor) -> Cotangents:
    return (build(AVG_POOL2D, (c,), n.params[1:]),)


AVG_POOL2D = OpDecl(
    "avg_pool2d", 1, _infer_pool, params=("size", "stride"), vjp=_avg_pool_vjp, accumulates=True
)
AVG_POOL2D_GRAD = OpDecl(
    "avg_pool2d_grad",
    1,
    _infer_avg_pool_grad,
    params=("input_shape", "size", "stride"),
    vjp=_avg_pool_grad_vjp,
    accumulates=True,
)


def conv2d(
    x: TensorLike[FE, Dv, Dim4], w: TensorLike[FE, Dv, Dim4], stride: Pair = 1, padding: Pair = 0
) -> TensorLike[FE, Dv, Dim4]:
    """Convolve NCHW images ``x`` (N, C, H, W) with weights ``w`` (O, C, KH, KW).

    Returns (N, O, H', W') with ``H' = (H + 2 * padding - KH) // stride + 1``. Raises
    ShapeError when the channels differ or the kernel exceeds the padded input.

    >>> x, w = zeros((8, 3, 32, 32), Float32, CPU), zeros((16, 3, 5, 5), Float32, CPU)
    >>> conv2d(x, w, padding=2).shape
    (8, 16, 32, 32)
    """
    return build(
        CONV2D,
        (x, w),
        _conv_params(CONV2D.name, stride, padding),
    )


# The two conv2d gradients stay separate public functions: each has its own typed signature.
def conv2d_grad_input(
    g: TensorLike[FE, Dv, Dim4],
    w: TensorLike[FE, Dv, Dim4],
    input_shape: tuple[int, ...],
    stride: Pair = 1,
    padding: Pair = 0,
) -> TensorLike[FE, Dv, Dim4]:
    """The gradient with respect to conv2d's input ``x`` (shape ``input_shape``, NCHW).

    ``input_shape`` is ``x.shape`` (4 sizes; checked when the node is built).
    ``g`` (N, O, H', W') is the gradient with respect to ``conv2d(x, w, stride, padding)``.
    """
    d = CONV2D_GRAD_INPUT
    return build(d, (g, w), (input_shape, *_conv_params(d.name, stride, padding)))


def conv2d_grad_weight(
    g: TensorLike[FE, Dv, Dim4],
    x: TensorLike[FE, Dv, Dim4],
    weight_shape: tuple[int, ...],
    stride: Pair = 1,
    padding: Pair = 0,
) -> TensorLike[FE, Dv, Dim4]:
    """The gradient with respect to conv2d's weight ``w`` (shape ``weight_shape``, OCHW).

    ``weight_shape`` is ``w.shape`` (4 sizes; checked when the node is built).
    ``g`` (N, O, H', W') is the gradient with respect to ``conv2d(x, w, stride, padding)``.
    """
    d = CONV2D_GRAD_WEIGHT
    return build(d, (g, x), (weight_shape, *_conv_params(d.name, stride, padding)))


def max_pool2d(
    x: TensorLike[FE, Dv, Dim4], size: Pair, stride: Pair | None = None
) -> TensorLike[FE, Dv, Dim4]:
    """The maximum of each ``size`` window of NCHW images, moved by ``stride`` (default: size).

    Returns (N, C, H', W') with ``H' = (H - size) // stride + 1``.
    """
    return build(MAX_POOL2D, (x,), _pool_params(MAX_POOL2D.name, size, stride))


def max_pool2d_grad(
    g: TensorLike[FE, Dv, Dim4], x: TensorLike[FE, Dv, Dim4], size: Pair, stride: Pair | None = None
) -> TensorLike[FE, Dv, Dim4]:
    """The gradient with respect to max_pool2d's input ``x``, given ``g`` for its output."""
    return build(MAX_POOL2D_GRAD, (g, x), _pool_params(MAX_POOL2D_GRAD.name, size, stride))


def avg_pool2d(
    x: TensorLike[FE, Dv, Dim4], size: Pair, stride: Pair | None = None
) -> TensorLike[FE, Dv, Dim4]:
    """The mean of each ``size`` window of NCHW images, moved by ``stride`` (default: size).

    Returns (N, C, H', W') with ``H' = (H - size) // stride + 1``.
    """
    return build(AVG_POOL2D, (x,), _pool_params(AVG_POOL2D.name, size, stride))


def avg_pool2d_grad(
    g: TensorLike[FE, Dv, Dim4],
    input_shape: tuple[int, ...],
    size: Pair,
    stride: Pair | None = None,
) -> TensorLike[FE, Dv, Dim4]:
    """The gradient with respect to avg_pool2d's input (shape ``input_shape``), given ``g``
    for its output: each window's ``g / (KH * KW)`` added over the window."""
    d = AVG_POOL2D_GRAD
    return build(d, (g,), (input_shape, *_pool_params(d.name, size, stride)))
