"""Every op's vector-Jacobian product against central finite differences (float64).

* Declarations: every catalogue op declares a vjp (or ``NOT_DIFFERENTIABLE``), and every op
  has an entry in :data:`SPECS` below, so an op declared without a gradient check fails here.
* First order: for each case, ``tn.vjp(y, leaves, c)`` for a random cotangent ``c`` equals the
  central differences of ``sum(c * y(leaves))`` with respect to every float leaf, element by
  element; integer operands (a ``where`` condition, an ``astype`` source) get none. The
  gradient ops (``exp_grad`` ... ``tile_grad``) are checked like any other op: second-order
  gradients run through their vjps.
* Second order: for ``f = sum(w * sin(op(leaves)))``, the Hessian-vector product
  ``tn.grad(sum_i sum(tn.grad(f, x_i) * v_i), leaves)`` equals central differences of the
  gradient along ``v``.
* Ops with no derivative (sign, argmax) contribute zero to the paths through them.

Inputs stay away from kinks (relu, abs, maximum and max ties, pooling ties) and from the edges
of the domains (log, sqrt, asin, acos, acosh), where the differences are meaningless.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from helpers import Array, numerical_gradient, t64, tagged

import typed_nn as tn
from typed_nn import ops
from typed_nn.data.tensor import AnyTensor
from typed_nn.ops.conv import MAX_POOL2D_SELECT, out_size
from typed_nn.ops.declare import NOT_DIFFERENTIABLE, catalogue
from typed_nn.ops.layout import TILE_GRAD
from typed_nn.ops.node import Operation, build
from typed_nn.ops.rows import BiasVector
from typed_nn.ops.rows import slice as slice_op
from typed_nn.ops.special import ConstantTensor, ZeroTensor

U: Any = ops
"""The ops without static types: the cases pick ranks and parameters in tables."""

_rng = np.random.default_rng(20240611)


# --- inputs -------------------------------------------------------------------------------


def normal(*shape: int, scale: float = 1.0) -> Array:
    return np.asarray(_rng.standard_normal(shape) * scale, dtype=np.float64)


def uniform(lo: float, hi: float, *shape: int) -> Array:
    return np.asarray(_rng.uniform(lo, hi, shape), dtype=np.float64)


def away(*shape: int, lo: float = 0.2, hi: float = 2.0) -> Array:
    """Magnitudes in [lo, hi] with random signs: no element near 0 (relu, abs, sign kinks)."""
    signs = np.asarray(_rng.choice([-1.0, 1.0], shape), dtype=np.float64)
    return uniform(lo, hi, *shape) * signs


def distinct(*shape: int) -> Array:
    """Values at least 0.08 apart (no ties for max, reduce_max and pooling)."""
    size = int(np.prod(shape, dtype=np.int64))
    values = _rng.permutation(size) * 0.1 + _rng.uniform(0.0, 0.02, size) - size * 0.05
    return np.asarray(values.reshape(shape), dtype=np.float64)


def apart_from(b: Array, *shape: int) -> Array:
    """An array of ``shape`` (broadcasting ``b``) at least 0.2 from ``b`` everywhere."""
    return np.asarray(np.broadcast_to(b, shape) + away(*shape), dtype=np.float64)


def ints(*shape: int) -> Array:
    """A 0/1 Int64 condition with both values."""
    cond = _rng.integers(0, 2, shape).astype(np.int64)
    cond.flat[0], cond.flat[-1] = 0, 1
    return cond


def weights(*shape: int) -> Array:
    """Non-negative truth weights with some zeros (nll_loss)."""
    t = uniform(0.2, 1.0, *shape)
    t.flat[::3] = 0.0
    return t


# --- the table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One gradient check: ``make(*leaves)`` builds the op's node from tensors of ``inputs``
    (float arrays become Float64 leaves, integer arrays Int64 ones)."""

    name: str
    make: Callable[..., Any]
    inputs: tuple[Array, ...]
    eps: float = 1e-6
    tol: float = 1e-6


def C(
    name: str, make: Callable[..., Any], *inputs: Array, eps: float = 1e-6, tol: float = 1e-6
) -> Case:
    return Case(name, make, tuple(np.asarray(a) for a in inputs), eps, tol)


@dataclass(frozen=True)
class Dedicated:
    """An op checked by its own tests (named here; the coverage test finds them)."""

    tests: tuple[str, ...]


def unary_cases(
    fn: Callable[[Any], Any], lo: float | None = None, hi: float | None = None
) -> tuple[Case, ...]:
    """A unary element-wise op on a Matrix, a Tensor3 and a Scalar, inside (lo, hi)."""

    def draw(*shape: int) -> Array:
        return normal(*shape) if lo is None or hi is None else uniform(lo, hi, *shape)

    return (
        C("matrix", fn, draw(3, 4)),
        C("tensor3", fn, draw(2, 3, 2)),
        C("scalar", fn, draw()),
    )


def away_unary_cases(fn: Callable[[Any], Any]) -> tuple[Case, ...]:
    return (C("matrix", fn, away(3, 4)), C("tensor3", fn, away(2, 3, 2)), C("scalar", fn, away()))


def grad_cases(grad_op: Callable[[Any, Any], Any], x: Callable[..., Array]) -> tuple[Case, ...]:
    """A gradient op ``grad_op(g, x)``: g like x, g a Vector broadcast over a Matrix, g a
    Matrix broadcast over a Tensor3, g a Scalar."""
    return (
        C("same-shape", grad_op, normal(3, 4), x(3, 4)),
        C("vector-g-matrix-x", grad_op, normal(4), x(3, 4)),
        C("matrix-g-tensor3-x", grad_op, normal(3, 2), x(2, 3, 2)),
        C("scalar-g", grad_op, normal(), x(2, 3)),
    )


def in_range(lo: float, hi: float) -> Callable[..., Array]:
    return lambda *shape: uniform(lo, hi, *shape)


def arithmetic_cases(fn: Callable[[Any, Any], Any], b: Callable[..., Array]) -> tuple[Case, ...]:
    """``fn(a, b)`` with equal shapes, MetaNN broadcasting either way, and Python numbers on
    either side (``b`` draws the right operand, e.g. away from 0 for a divisor)."""
    return (
        C("matrix-matrix", fn, normal(3, 4), b(3, 4)),
        C("matrix-vector", fn, normal(3, 4), b(4)),
        C("vector-matrix", fn, normal(4), b(3, 4)),
        C("tensor3-scalar", fn, normal(2, 3, 4), b()),
        C("scalar-tensor3", fn, normal(), b(2, 3, 4)),
        C("tensor3-matrix", fn, normal(2, 3, 4), b(3, 4)),
        C("tensor-number", lambda a: fn(a, 2.5), normal(3, 4)),
        C("number-tensor", lambda x: fn(-1.5, x), b(3, 4)),
    )


def _extremum_cases(fn: Callable[..., Any]) -> tuple[Case, ...]:
    """maximum's and minimum's cases: operands kept apart so no tie sits at a kink."""
    v, s, m = normal(4), normal(), normal(3, 4)
    return (
        C("matrix-matrix", fn, apart_from(m, 3, 4), m),
        C("matrix-vector", fn, apart_from(v, 3, 4), v),
        C("vector-matrix", fn, v, apart_from(v, 3, 4)),
        C("tensor3-scalar", fn, apart_from(s, 2, 3, 4), s),
        C("scalar-tensor3", fn, s, apart_from(s, 2, 3, 4)),
        C("tensor-number", lambda a: fn(a, 0.3), 0.3 + away(3, 4)),
        C("number-tensor", lambda b: fn(0.3, b), 0.3 + away(3, 4)),
        C("int-number", lambda a: fn(a, 1), 1.0 + away(3, 4)),
    )


def _dot_cases() -> tuple[Case, ...]:
    return (
        C("matrix-matrix-k1", U.dot, normal(3, 4), normal(4, 2)),
        C("matrix-vector-k1", U.dot, normal(3, 4), normal(4)),
        C("vector-matrix-k1", U.dot, normal(3), normal(3, 4)),
        C("vector-vector-k1", U.dot, normal(4), normal(4)),
        C("tensor3-matrix-k1", U.dot, normal(2, 3, 4), normal(4, 2)),
        C("matrix-tensor3-k1", U.dot, normal(2, 3), normal(3, 2, 2)),
        C("matmul-operator", lambda a, b: a @ b, normal(2, 3), normal(3, 2)),
        C("matrix-matrix-k2", lambda a, b: U.dot(a, b, 2), normal(3, 4), normal(3, 4)),
        C("matrix-tensor3-k2", lambda a, b: U.dot(a, b, 2), normal(3, 4), normal(3, 4, 2)),
        C("tensor3-matrix-k2", lambda a, b: U.dot(a, b, 2), normal(2, 3, 4), normal(3, 4)),
        C("tensor3-tensor3-k2", lambda a, b: U.dot(a, b, 2), normal(2, 3, 2), normal(3, 2, 2)),
    )


def _matmul_cases() -> tuple[Case, ...]:
    """numpy's matmul: batched (broadcast, size-1 batch dims expanded), vectors promoted."""
    return (
        C("batched", lambda a, b: a @ b, normal(2, 3, 4), normal(2, 4, 5)),
        C("vector-tensor3", lambda a, b: a @ b, normal(3), normal(2, 3, 4)),
        C("matrix-tensor3-shared", U.matmul, normal(2, 3), normal(4, 3, 2)),
        C("broadcast-size-1", U.matmul, normal(1, 2, 3), normal(4, 3, 2)),
        C("broadcast-rank", U.matmul, normal(3, 1, 2, 3), normal(2, 3, 2)),
        C("tensor4-tensor4", U.matmul, normal(2, 2, 3, 4), normal(2, 2, 4, 3)),
    )


def reduce_cases(fn: Callable[..., Any], draw: Callable[..., Array]) -> tuple[Case, ...]:
    """A reduction over every dim, named dims (int, tuple, negative), ``first=`` and
    ``keep_dim``."""
    return (
        C("all", fn, draw(2, 3, 4)),
        C("dims=1", lambda x: fn(x, 1), draw(2, 3, 4)),
        C("dims=(0,2)", lambda x: fn(x, (0, 2)), draw(2, 3, 4)),
        C("dims=-1-keep_dim", lambda x: fn(x, -1, keep_dim=True), draw(2, 3, 4)),
        C("dims=(0,1)-keep_dim", lambda x: fn(x, (0, 1), keep_dim=True), draw(2, 3, 4)),
        C("first=2", lambda x: fn(x, first=2), draw(2, 3, 4)),
        C("first=1-keep_dim", lambda x: fn(x, first=1, keep_dim=True), draw(2, 3, 4)),
        C("vector", fn, draw(5)),
        C("matrix-dims=0", lambda x: fn(x, 0), draw(3, 4)),
        C("all-keep_dim", lambda x: fn(x, keep_dim=True), draw(3, 4)),
    )


def group_cases(fn: Callable[..., Any]) -> tuple[Case, ...]:
    """softmax / log_softmax over the last k dims."""
    return (
        C("vector-k1", fn, normal(5)),
        C("matrix-k1", fn, normal(3, 4)),
        C("tensor3-k1", fn, normal(2, 3, 4)),
        C("tensor3-k2", lambda x: fn(x, 2), normal(2, 3, 4)),
        C("matrix-k2", lambda x: fn(x, 2), normal(3, 4)),
    )


def group_grad_cases(fn: Callable[..., Any], y: Callable[..., Array]) -> tuple[Case, ...]:
    """softmax_grad / log_softmax_grad(g, y, k); ``y`` draws the forward output."""
    return (
        C("vector-k1", fn, normal(5), y(5)),
        C("matrix-k1", fn, normal(3, 4), y(3, 4)),
        C("tensor3-k1", fn, normal(2, 3, 4), y(2, 3, 4)),
        C("tensor3-k2", lambda g, x: fn(g, x, 2), normal(2, 3, 4), y(2, 3, 4)),
    )


# conv2d configurations: (name, input shape, weight shape, stride, padding)
ConvConfig = tuple[str, tuple[int, int, int, int], tuple[int, int, int, int], Any, Any]
CONVS: tuple[ConvConfig, ...] = (
    ("3x3", (1, 2, 5, 5), (3, 2, 3, 3), 1, 0),
    ("stride2-pad1", (1, 2, 5, 5), (2, 2, 3, 3), 2, 1),
    ("stride(1,2)-pad(1,0)", (2, 1, 4, 5), (2, 1, 2, 3), (1, 2), (1, 0)),
    ("1x1", (2, 3, 3, 3), (2, 3, 1, 1), 1, 0),
)


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (v[0], v[1])


def conv_out(x: tuple[int, ...], w: tuple[int, ...], stride: Any, padding: Any) -> tuple[int, ...]:
    h, wd = out_size((x[2], x[3]), (w[2], w[3]), _pair(stride), _pair(padding))
    return (x[0], w[0], h, wd)


def _conv_cases() -> tuple[Case, ...]:
    return tuple(
        C(name, lambda x, w, s=s, p=p: U.conv2d(x, w, s, p), normal(*xs), normal(*ws))
        for name, xs, ws, s, p in CONVS
    )


def _conv_grad_input_cases() -> tuple[Case, ...]:
    return tuple(
        C(
            name,
            lambda g, w, xs=xs, s=s, p=p: U.conv2d_grad_input(g, w, xs, s, p),
            normal(*conv_out(xs, ws, s, p)),
            normal(*ws),
        )
        for name, xs, ws, s, p in CONVS
    )


def _conv_grad_weight_cases() -> tuple[Case, ...]:
    return tuple(
        C(
            name,
            lambda g, x, ws=ws, s=s, p=p: U.conv2d_grad_weight(g, x, ws, s, p),
            normal(*conv_out(xs, ws, s, p)),
            normal(*xs),
        )
        for name, xs, ws, s, p in CONVS
    )


# max_pool2d configurations: (name, input shape, size, stride); ties are avoided by distinct()
PoolConfig = tuple[str, tuple[int, int, int, int], Any, Any]
POOLS: tuple[PoolConfig, ...] = (
    ("2x2", (1, 2, 4, 4), 2, None),
    ("3x3-stride1-overlapping", (1, 1, 5, 5), 3, 1),
    ("(2,3)-stride(1,2)-overlapping", (2, 1, 4, 5), (2, 3), (1, 2)),
    ("2x2-stride3-gaps", (1, 1, 5, 5), 2, 3),
)


def pool_out(xs: tuple[int, ...], size: Any, stride: Any) -> tuple[int, ...]:
    h, w = out_size((xs[2], xs[3]), _pair(size), _pair(size if stride is None else stride), (0, 0))
    return (xs[0], xs[1], h, w)


def _pool_cases() -> tuple[Case, ...]:
    return tuple(
        C(name, lambda x, k=k, s=s: U.max_pool2d(x, k, s), distinct(*xs))
        for name, xs, k, s in POOLS
    )


def _pool_grad_cases() -> tuple[Case, ...]:
    return tuple(
        C(
            name,
            lambda g, x, k=k, s=s: U.max_pool2d_grad(g, x, k, s),
            normal(*pool_out(xs, k, s)),
            distinct(*xs),
        )
        for name, xs, k, s in POOLS
    )


def _pool_select_cases() -> tuple[Case, ...]:
    return tuple(
        C(
            name,
            lambda c, x, k=k, s=s: build(
                MAX_POOL2D_SELECT, (c, x), (_pair(k), _pair(k if s is None else s))
            ),
            normal(*xs),
            distinct(*xs),
        )
        for name, xs, k, s in POOLS
    )


def _avg_pool_cases() -> tuple[Case, ...]:
    return tuple(
        C(name, lambda x, k=k, s=s: U.avg_pool2d(x, k, s), normal(*xs)) for name, xs, k, s in POOLS
    )


def _avg_pool_grad_cases() -> tuple[Case, ...]:
    return tuple(
        C(
            name,
            lambda g, xs=xs, k=k, s=s: U.avg_pool2d_grad(g, xs, k, s),
            normal(*pool_out(xs, k, s)),
        )
        for name, xs, k, s in POOLS
    )


EMBEDDING_IDS = np.array([[1, 4, 1], [0, 4, 4]])
"""Indices into a 5-row table, with repeats (their gradients accumulate)."""
LABELS = np.array([[3, 0, 3], [1, 2, 0]])
"""Class numbers into a last dim of 4, with repeats."""


def tile_grad(shape: tuple[int, ...], new_dims: tuple[int, ...]) -> Callable[[Any], Any]:
    return lambda g: build(TILE_GRAD, (g,), (shape, new_dims))


FLOAT64_TO_FLOAT32 = {"eps": 1e-2, "tol": 1e-4}
"""astype through Float32: differences of float32 values need a wide step and tolerance."""


SPECS: dict[str, tuple[Case, ...] | Dedicated] = {
    # arithmetic
    "add": arithmetic_cases(lambda a, b: a + b, normal),
    "sub": arithmetic_cases(lambda a, b: a - b, normal),
    "mul": arithmetic_cases(lambda a, b: a * b, normal),
    "div": arithmetic_cases(lambda a, b: a / b, lambda *s: away(*s, lo=0.5)),
    "negative": unary_cases(lambda x: -x),
    "abs": away_unary_cases(U.abs),
    "sign": Dedicated(("test_sign_paths_contribute_zero",)),
    # math
    "exp": unary_cases(U.exp),
    "log": unary_cases(U.log, 0.3, 3.0),
    "sqrt": unary_cases(U.sqrt, 0.3, 3.0),
    "square": unary_cases(U.square),
    "sin": unary_cases(U.sin),
    "cos": unary_cases(U.cos),
    "tan": unary_cases(U.tan, -1.2, 1.2),
    "asin": unary_cases(U.asin, -0.8, 0.8),
    "acos": unary_cases(U.acos, -0.8, 0.8),
    "asinh": unary_cases(U.asinh, -3.0, 3.0),
    "acosh": unary_cases(U.acosh, 1.2, 3.0),
    "abs_grad": grad_cases(U.abs_grad, away),
    "exp_grad": grad_cases(U.exp_grad, normal),
    "log_grad": grad_cases(U.log_grad, in_range(0.3, 3.0)),
    "sqrt_grad": grad_cases(U.sqrt_grad, in_range(0.3, 3.0)),
    "square_grad": grad_cases(U.square_grad, normal),
    "sin_grad": grad_cases(U.sin_grad, normal),
    "cos_grad": grad_cases(U.cos_grad, normal),
    "tan_grad": grad_cases(U.tan_grad, in_range(-1.2, 1.2)),
    "asin_grad": grad_cases(U.asin_grad, in_range(-0.8, 0.8)),
    "acos_grad": grad_cases(U.acos_grad, in_range(-0.8, 0.8)),
    "asinh_grad": grad_cases(U.asinh_grad, in_range(-3.0, 3.0)),
    "acosh_grad": grad_cases(U.acosh_grad, in_range(1.2, 3.0)),
    # activations (sigmoid_grad / tanh_grad take the forward output)
    "sigmoid": unary_cases(U.sigmoid, -3.0, 3.0),
    "tanh": unary_cases(U.tanh, -2.0, 2.0),
    "softplus": unary_cases(U.softplus, -3.0, 3.0),
    "erf": unary_cases(U.erf, -2.5, 2.5),
    "relu": away_unary_cases(U.relu),
    "sigmoid_grad": grad_cases(U.sigmoid_grad, in_range(0.05, 0.95)),
    "tanh_grad": grad_cases(U.tanh_grad, in_range(-0.95, 0.95)),
    "relu_grad": grad_cases(U.relu_grad, away),
    # selection
    "maximum": _extremum_cases(U.maximum),
    "minimum": _extremum_cases(U.minimum),
    "where": (
        C("int-cond", U.where, ints(3, 4), normal(3, 4), normal(3, 4)),
        C("int-cond-vector-scalar", U.where, ints(3, 4), normal(4), normal()),
        C("vector-int-cond", U.where, ints(4), normal(3, 4), normal(2, 3, 4)),
        C("float-cond", U.where, away(3, 4), normal(3, 4), normal(4)),
        C("scalar-int-cond", U.where, ints(), normal(3, 4), normal(3, 4)),
    ),
    "interpolate": (
        C("same-shape", U.interpolate, normal(3, 4), normal(3, 4), uniform(0, 1, 3, 4)),
        C("scalar-lam", U.interpolate, normal(3, 4), normal(3, 4), uniform(0, 1)),
        C("vector-lam", U.interpolate, normal(3, 4), normal(3, 4), uniform(0, 1, 4)),
        C("vector-a-scalar-b", U.interpolate, normal(4), normal(), uniform(0, 1, 2, 3, 4)),
    ),
    # reductions
    "reduce_sum": reduce_cases(U.reduce_sum, normal),
    "reduce_mean": reduce_cases(U.reduce_mean, normal),
    "reduce_max": reduce_cases(U.reduce_max, distinct),
    "argmax": Dedicated(("test_argmax_paths_contribute_zero",)),
    # softmax and the loss
    "softmax": group_cases(U.softmax),
    "log_softmax": group_cases(U.log_softmax),
    "softmax_grad": group_grad_cases(U.softmax_grad, in_range(0.05, 0.9)),
    "log_softmax_grad": group_grad_cases(U.log_softmax_grad, in_range(-3.0, -0.1)),
    "nll_loss": (
        C("matrix-one-hot", U.nll_loss, np.eye(4)[[0, 2, 3]], uniform(0.1, 1.0, 3, 4)),
        C("matrix-weights", U.nll_loss, weights(3, 4), uniform(0.1, 1.0, 3, 4)),
        C("vector", U.nll_loss, weights(5), uniform(0.1, 1.0, 5)),
        C("tensor3", U.nll_loss, weights(2, 3, 2), uniform(0.1, 1.0, 2, 3, 2)),
        C("of-softmax", lambda t, x: U.nll_loss(t, U.softmax(x)), weights(3, 4), normal(3, 4)),
    ),
    "nll_loss_grad": (
        C("matrix", U.nll_loss_grad, normal(), weights(3, 4), uniform(0.1, 1.0, 3, 4)),
        C("one-hot", U.nll_loss_grad, normal(), np.eye(3)[[1, 0]], uniform(0.1, 1.0, 2, 3)),
        C("vector", U.nll_loss_grad, normal(), weights(5), uniform(0.1, 1.0, 5)),
    ),
    # contraction, conv, pooling
    "dot": _dot_cases(),
    "matmul": _matmul_cases(),
    "conv2d": _conv_cases(),
    "conv2d_grad_input": _conv_grad_input_cases(),
    "conv2d_grad_weight": _conv_grad_weight_cases(),
    "max_pool2d": _pool_cases(),
    "max_pool2d_grad": _pool_grad_cases(),
    "max_pool2d_select": _pool_select_cases(),
    "avg_pool2d": _avg_pool_cases(),
    "avg_pool2d_grad": _avg_pool_grad_cases(),
    # embedding and dropout
    "embedding": (
        C("matrix-ids", U.embedding, normal(5, 3), EMBEDDING_IDS),
        C("vector-ids", U.embedding, normal(5, 2), EMBEDDING_IDS[0]),
    ),
    "embedding_grad": (
        C("matrix-ids", lambda g, i: U.embedding_grad(g, i, 5), normal(2, 3, 3), EMBEDDING_IDS),
    ),
    "dropout_mask": Dedicated(("test_dropout_mask_is_a_function_of_its_state",)),
    "random": Dedicated(("test_a_draw_differentiates_through_its_parameters_only",)),
    # integer labels and gradient cuts
    "label_pick": (
        C("matrix-labels", U.label_pick, normal(2, 3, 4), LABELS),
        C("vector-labels", U.label_pick, normal(3, 4), LABELS[0]),
    ),
    "label_pick_grad": (
        C("matrix-labels", lambda g, i: U.label_pick_grad(g, i, 4), normal(2, 3), LABELS),
    ),
    "stop_gradient": Dedicated(("test_stop_gradient_paths_contribute_zero",)),
    # layout
    "permute": (
        C("tensor3-(2,0,1)", lambda x: U.permute(x, (2, 0, 1)), normal(2, 3, 4)),
        C("tensor3-(1,0,2)", lambda x: U.permute(x, (1, 0, 2)), normal(2, 3, 4)),
        C("transpose", U.transpose, normal(3, 4)),
        C("4d-(3,1,0,2)", lambda x: U.permute(x, (3, 1, 0, 2)), normal(2, 3, 1, 2)),
    ),
    "reshape": (
        C("tensor3-to-matrix", lambda x: U.reshape(x, (6, 4)), normal(2, 3, 4)),
        C("matrix-to-vector", lambda x: U.reshape(x, (-1,)), normal(3, 4)),
        C("vector-to-tensor3", lambda x: U.reshape(x, (2, 1, 3)), normal(6)),
        C("to-scalar", lambda x: U.reshape(x, ()), normal(1, 1)),
    ),
    "tile": (
        C("vector-to-matrix", lambda x: U.tile(x, (2, 3)), normal(3)),
        C("vector-down-rows", lambda x: U.tile(x, (3, 2), new_dims=(1,)), normal(3)),
        C("matrix-repeats", lambda x: U.tile(x, (4, 6)), normal(2, 3)),
        C("scalar-to-vector", lambda x: U.tile(x, (3,)), normal()),
        C("matrix-new-middle", lambda x: U.tile(x, (2, 4, 3), new_dims=(1,)), normal(2, 3)),
        C("matrix-new-and-repeats", lambda x: U.tile(x, (3, 4, 9)), normal(2, 3)),
    ),
    "tile_grad": (
        C("rows-to-vector", tile_grad((3,), (0,)), normal(2, 3)),
        C("columns-to-vector", tile_grad((3,), (1,)), normal(3, 2)),
        C("repeats-to-matrix", tile_grad((2, 3), ()), normal(4, 6)),
        C("vector-to-scalar", tile_grad((), (0,)), normal(3)),
        C("new-and-repeats", tile_grad((2, 3), (0,)), normal(3, 4, 9)),
    ),
    "narrow": (
        C("middle-axis1", lambda x: U.narrow(x, 1, 1, 3), normal(3, 5)),
        C("head-axis0", lambda x: U.narrow(x, 0, 0, 2), normal(3, 5)),
        C("tail-axis-1", lambda x: U.narrow(x, -1, 3, 2), normal(3, 5)),
        C("tensor3-axis1", lambda x: U.narrow(x, 1, 1, 1), normal(2, 3, 4)),
        C("all-of-an-empty-axis", lambda x: U.narrow(x, 1, 0, 0), normal(2, 0)),
        C("whole", lambda x: U.narrow(x, 0, 0, 3), normal(3, 2)),
    ),
    "concat": (
        C("axis0", lambda a, b: U.concat([a, b], 0), normal(2, 3), normal(1, 3)),
        C(
            "axis1-three",
            lambda a, b, c: U.concat([a, b, c], 1),
            normal(2, 3),
            normal(2, 1),
            normal(2, 2),
        ),
        C("vectors", lambda a, b: U.concat([a, b]), normal(2), normal(3)),
        C("tensor3-axis2", lambda a, b: U.concat([a, b], 2), normal(2, 2, 1), normal(2, 2, 3)),
        C("same-twice", lambda a: U.concat([a, a], 0), normal(2, 3)),
    ),
    "stack": (
        C("vectors-axis0", lambda a, b: U.stack([a, b]), normal(3), normal(3)),
        C("vectors-axis1", lambda a, b, c: U.stack([a, b, c], 1), normal(3), normal(3), normal(3)),
        C("matrices-axis2", lambda a, b: U.stack([a, b], 2), normal(2, 3), normal(2, 3)),
        C("scalars", lambda a, b, c: U.stack([a, b, c]), normal(), normal(), normal()),
    ),
    "slice": (
        C("first-row", lambda x: slice_op(x, 0), normal(3, 4)),
        C("middle-row", lambda x: slice_op(x, 1), normal(3, 4)),
        C("last-of-tensor3", lambda x: slice_op(x, -1), normal(2, 3, 4)),
        C("vector-element", lambda x: slice_op(x, 2), normal(4)),
        C("of-an-expression", lambda x: (x * 2.0)[1], normal(3, 4)),
    ),
    # conversions
    "astype": (
        C(
            "float64-to-float32",
            lambda x: U.astype(x, tn.Float32),
            normal(3, 4),
            **FLOAT64_TO_FLOAT32,
        ),
        C("int-source", lambda i: U.astype(i, tn.Float64), ints(3, 4)),
    ),
    "to_device": Dedicated(
        ("test_to_device_vjp_moves_the_cotangent_back", "test_to_device_matches_finite_differences")
    ),
    # data kinds declared as ops
    "zeros": Dedicated(("test_zeros_source_gets_a_cotangent_and_passes_none_on",)),
    "fill": (
        C("matrix", lambda s: ConstantTensor(s, (3, 4)), normal()),
        C("scalar", lambda s: ConstantTensor(s, ()), normal()),
    ),
    "one_hot": (
        C("pos1", lambda s: BiasVector(4, 1, s), normal()),
        C("pos0", lambda s: BiasVector(3, 0, s), normal()),
    ),
}

SECOND_ORDER = (
    *("add", "sub", "mul", "div", "negative", "abs", "maximum", "minimum"),
    *("where", "interpolate"),
    *("exp", "log", "sqrt", "square", "sin", "cos", "tan", "asin", "acos", "asinh", "acosh"),
    *("sigmoid", "tanh", "relu", "softplus", "erf"),
    *("dot", "matmul", "reduce_sum", "reduce_mean", "reduce_max", "softmax", "log_softmax"),
    "nll_loss",
    *("conv2d", "max_pool2d", "tile", "narrow", "concat", "avg_pool2d", "embedding"),
    "label_pick",
)
"""Ops whose Hessian-vector products are checked (through their gradient ops' vjps)."""


def _params(ops_: tuple[str, ...] | None = None) -> list[Any]:
    return [
        pytest.param(op, case, id=f"{op}-{case.name}")
        for op, spec in SPECS.items()
        if isinstance(spec, tuple) and (ops_ is None or op in ops_)
        for case in spec
    ]


# --- the harness --------------------------------------------------------------------------


def leaf(a: Array) -> AnyTensor:
    """A Float64 leaf of a float array, an Int64 leaf of an integer one."""
    return t64(a) if a.dtype.kind == "f" else tagged(a.astype(np.int64), tn.Int64)


def is_float(a: Array) -> bool:
    return a.dtype.kind == "f"


def evaluate(case: Case, arrays: list[Array]) -> Array:
    out: Array = case.make(*[leaf(a) for a in arrays]).numpy()
    return out


def check_first_order(op: str, case: Case) -> None:
    """``tn.vjp`` of the case's node equals central differences for every float leaf; every
    integer leaf that is an operand of the node gets no cotangent from the op's rule."""
    leaves = [leaf(a) for a in case.inputs]
    y = case.make(*leaves)
    assert isinstance(y, Operation), f"{op}: the case built {type(y).__name__}, not a node"
    assert y.op.name == op, f"the case for {op} built a {y.op.name} node"
    rng = np.random.default_rng(7)
    c = np.asarray(rng.standard_normal(y.shape)).astype(y.elem.dtype)
    cotangent = tagged(c, y.elem, y.device)
    floats = [i for i, a in enumerate(case.inputs) if is_float(a)]
    got = tn.vjp(y, tuple(leaves[i] for i in floats), cotangent)
    for i, g in zip(floats, got, strict=True):

        def f(v: Array, i: int = i) -> float:
            arrays = list(case.inputs)
            arrays[i] = v
            out = evaluate(case, arrays).astype(np.float64)
            return float(np.sum(c.astype(np.float64) * out))

        expected = numerical_gradient(f, case.inputs[i], case.eps)
        actual = g.numpy()
        assert actual.shape == expected.shape, (i, actual.shape, expected.shape)
        assert actual.dtype == np.float64, (i, actual.dtype)
        np.testing.assert_allclose(
            actual, expected, rtol=case.tol, atol=case.tol, err_msg=f"{op}: operand {i}"
        )
    rule = y.op.vjp
    assert callable(rule), f"{op} has no vjp rule"
    shares = rule(y, cotangent)
    assert len(shares) == len(y.operands), f"{op}: one cotangent per operand"
    for i, a in enumerate(case.inputs):
        if not is_float(a):
            for pos, operand in enumerate(y.operands):
                if operand is leaves[i]:
                    assert shares[pos] is None, f"{op}: integer operand {pos} got a cotangent"


@pytest.mark.parametrize(("op", "case"), _params())
def test_vjp_matches_finite_differences(op: str, case: Case) -> None:
    check_first_order(op, case)


@pytest.mark.parametrize(("op", "case"), _params(SECOND_ORDER))
def test_hessian_vector_product_matches_finite_differences(op: str, case: Case) -> None:
    """For ``f = sum(w * sin(op(leaves)))``: the gradient of ``sum_i sum(grad_i f * v_i)``
    equals central differences of ``grad f`` along ``v``."""
    floats = [i for i, a in enumerate(case.inputs) if is_float(a)]
    rng = np.random.default_rng(11)
    w = np.asarray(rng.standard_normal(case.make(*[leaf(a) for a in case.inputs]).shape))
    vs = [rng.standard_normal(case.inputs[i].shape) for i in floats]

    def gradient(arrays: list[Array]) -> tuple[list[AnyTensor], tuple[Any, ...]]:
        leaves = [leaf(a) for a in arrays]
        f = U.reduce_sum(t64(w) * U.sin(case.make(*leaves)))
        wrt = tuple(leaves[i] for i in floats)
        return leaves, tn.grad(f, wrt)

    leaves, grads = gradient(list(case.inputs))
    directional = U.reduce_sum(grads[0] * t64(vs[0]))
    for g, v in zip(grads[1:], vs[1:], strict=True):
        directional = directional + U.reduce_sum(g * t64(v))
    hvp = tn.grad(directional, tuple(leaves[i] for i in floats))

    eps = 1e-5

    def shifted(sign: float) -> list[Array]:
        arrays = list(case.inputs)
        for i, v in zip(floats, vs, strict=True):
            arrays[i] = arrays[i] + sign * eps * v
        return [g.numpy() for g in gradient(arrays)[1]]

    up, down = shifted(1.0), shifted(-1.0)
    for k, (i, h) in enumerate(zip(floats, hvp, strict=True)):
        expected = (up[k] - down[k]) / (2 * eps)
        actual = h.numpy()
        assert actual.shape == expected.shape, (i, actual.shape, expected.shape)
        np.testing.assert_allclose(
            actual, expected, rtol=1e-6, atol=1e-6, err_msg=f"{op}: operand {i}"
        )


# --- declarations and coverage ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(catalogue()))
def test_every_op_declares_a_vjp(name: str) -> None:
    rule = catalogue()[name].vjp
    assert rule is NOT_DIFFERENTIABLE or callable(rule), (
        f"op {name!r} declares no vjp: give its OpDecl vjp= (or vjp=NOT_DIFFERENTIABLE)"
    )


def test_every_op_has_a_gradient_check() -> None:
    ops_ = catalogue()
    missing = sorted(set(ops_) - set(SPECS))
    assert not missing, f"ops without a gradient check in tests/test_autodiff_ops.py: {missing}"
    stale = sorted(set(SPECS) - set(ops_))
    assert not stale, f"gradient checks of ops not in the catalogue: {stale}"
    for name, spec in SPECS.items():
        if isinstance(spec, Dedicated):
            for test in spec.tests:
                assert callable(globals().get(test)), f"{name}: no test named {test}"
        else:
            assert spec, f"{name}: no cases"
            assert ops_[name].vjp is not NOT_DIFFERENTIABLE, f"{name} is not differentiable"
    not_differentiable = {n for n, d in ops_.items() if d.vjp is NOT_DIFFERENTIABLE}
    assert not_differentiable == {"sign", "argmax", "dropout_mask", "random", "stop_gradient"}, (
        not_differentiable
    )
    grads = {n for n in ops_ if n.endswith("_grad")} | {"max_pool2d_select"}
    assert all(isinstance(SPECS[n], tuple) for n in grads), "every gradient op gets FD cases"
    assert set(SECOND_ORDER) <= {n for n, s in SPECS.items() if isinstance(s, tuple)}


# --- ops with dedicated checks ------------------------------------------------------------


def test_sign_paths_contribute_zero() -> None:
    a = away(3, 4)
    x = t64(a)
    np.testing.assert_array_equal(tn.grad(U.reduce_sum(U.sign(x) * x), x).numpy(), np.sign(a))
    np.testing.assert_array_equal(tn.grad(U.reduce_sum(U.sign(x)), x).numpy(), np.zeros((3, 4)))


def test_dropout_mask_is_a_function_of_its_state() -> None:
    """The mask's values follow its state [seed, counter] (same state, same mask; a new
    counter, a new mask); it passes no gradient back (the state is an integer)."""
    state = tn.tensor(np.array([5, 1]), tn.Int64, tn.CPU, tn.Dim1)
    a = U.dropout_mask(state, (40, 50), 0.75, tn.Float64).numpy()
    again = U.dropout_mask(state, (40, 50), 0.75, tn.Float64).numpy()
    np.testing.assert_array_equal(a, again)
    assert set(np.unique(a)) == {0.0, 1 / 0.75}
    assert abs((a != 0).mean() - 0.75) < 0.03
    later = tn.tensor(np.array([5, 2]), tn.Int64, tn.CPU, tn.Dim1)
    assert not np.array_equal(U.dropout_mask(later, (40, 50), 0.75, tn.Float64).numpy(), a)
    x = t64(normal(40, 50))
    mask = U.dropout_mask(state, (40, 50), 0.75, tn.Float64)
    np.testing.assert_array_equal(tn.grad(U.reduce_sum(x * mask), x).numpy(), a)


def test_a_draw_differentiates_through_its_parameters_only() -> None:
    """The reparameterisation trick: ``(mu + sigma * eps)²`` with ``eps`` a normal draw has
    the gradients ``2y`` and ``2y·eps`` with respect to ``mu`` and ``sigma`` (the draw is a
    constant; its integer state gets no gradient: tn.grad refuses integer wrt)."""
    mu, sigma = t64(normal(3, 4)), t64(uniform(0.5, 2.0, 3, 4))
    gen = tn.Generator(3)
    eps = U.normal(gen, (3, 4), tn.Float64)
    g_mu, g_sigma = tn.grad(U.reduce_sum(U.square(mu + sigma * eps)), (mu, sigma))
    z = eps.numpy()
    y = mu.numpy() + sigma.numpy() * z
    np.testing.assert_allclose(g_mu.numpy(), 2 * y, rtol=1e-12)
    np.testing.assert_allclose(g_sigma.numpy(), 2 * y * z, rtol=1e-12)


def test_stop_gradient_paths_contribute_zero() -> None:
    """Its value is its operand's; tn.grad treats it as a constant: d/dx of x * sg(x) is x,
    and a wrt reached only through it gets zeros."""
    a = normal(3, 4)
    x = t64(a)
    held = U.stop_gradient(x)
    np.testing.assert_array_equal(held.numpy(), a)
    np.testing.assert_array_equal(tn.grad(U.reduce_sum(x * held), x).numpy(), a)
    np.testing.assert_array_equal(tn.grad(U.reduce_sum(U.exp(held)), x).numpy(), np.zeros((3, 4)))


def test_argmax_paths_contribute_zero() -> None:
    a = distinct(3, 4)
    x = t64(a)
    index = U.astype(U.argmax(x, 0), tn.Float64)  # a Vector(4): the row of each column's max
    got = tn.grad(U.reduce_sum(x * index), x).numpy()
    np.testing.assert_array_equal(got, np.broadcast_to(np.argmax(a, 0), (3, 4)).astype(float))


def test_integer_operands_get_no_cotangent() -> None:
    cond, a, b = leaf(ints(3, 4)), t64(normal(3, 4)), t64(normal(3, 4))
    y = U.where(cond, a, b)
    g = t64(normal(3, 4))
    assert y.op.vjp(y, g)[0] is None
    source = U.astype(leaf(ints(3, 4)), tn.Float64)
    assert source.op.vjp(source, g) == (None,)
    # tn.vjp reaches a only: the integer condition is no path
    np.testing.assert_array_equal(tn.vjp(y, a, g).numpy(), np.where(cond.numpy(), g.numpy(), 0))


def test_zeros_source_gets_a_cotangent_and_passes_none_on() -> None:
    x, c = normal(3, 4), normal(3, 4)
    z: Any = ZeroTensor((3, 4), tn.Float64, tn.CPU)
    y = t64(x) * z + z
    assert z.op.vjp(z, t64(c)) == ()
    gz = tn.vjp(y, z, t64(c))
    np.testing.assert_allclose(gz.numpy(), c * x + c, rtol=1e-12, atol=0)


def test_to_device_vjp_moves_the_cotangent_back() -> None:
    x = t64(normal(3, 4))
    y: Any = U.to_device(x, tn.GPU)  # built without a GPU library; never evaluated here
    g = U.to_device(t64(normal(3, 4)), tn.GPU)  # a lazy GPU cotangent (no cupy needed)
    (share,) = y.op.vjp(y, g)
    assert isinstance(share, Operation)
    assert share.op.name == "to_device"
    assert share.device is tn.CPU
    assert share.operands == (g,)


@pytest.mark.gpu
def test_to_device_matches_finite_differences(cupy_module: Any) -> None:
    case = C(
        "round-trip", lambda x: U.to_device(U.to_device(x, tn.GPU) * 2.0, tn.CPU), normal(3, 4)
    )
    check_first_order("to_device", case)


def test_reduce_max_ties_share_the_gradient() -> None:
    x = t64(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
    got = tn.grad(U.reduce_sum(U.reduce_max(x, 1) * t64(np.array([1.0, 3.0]))), x).numpy()
    np.testing.assert_allclose(got, [[0.0, 0.5, 0.5], [1.0, 1.0, 1.0]], rtol=1e-12)
