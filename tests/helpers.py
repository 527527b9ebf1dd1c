"""Shared test helpers: tensor factories from numpy data, tolerances, finite differences."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np
import numpy.typing as npt

import typed_nn as tn
from typed_nn import ops
from typed_nn.tags import DeviceTag, ElemTag, dim_of_rank

Array = npt.NDArray[Any]


def t32(array: npt.ArrayLike) -> tn.Tensor[Any, Any, Any]:
    """A Float32 CPU tensor of ``array`` (rank taken from the data)."""
    return tagged(array, tn.Float32)


def t64(array: npt.ArrayLike) -> tn.Tensor[Any, Any, Any]:
    """A Float64 CPU tensor of ``array`` (rank taken from the data)."""
    return tagged(array, tn.Float64)


def tagged(
    array: npt.ArrayLike, elem: type[ElemTag], device: type[DeviceTag] = tn.CPU
) -> tn.Tensor[Any, Any, Any]:
    """A tensor of ``array`` with the given element and device, rank taken from the data."""
    data = np.asarray(array)
    result: tn.Tensor[Any, Any, Any] = tn.tensor(data, elem, device, dim_of_rank(data.ndim))
    return result


def tolerance(elem: type[ElemTag]) -> dict[str, float]:
    """``rtol``/``atol`` for comparing results of ``elem`` computed in different orders."""
    if elem is tn.Float32:
        return {"rtol": 2e-4, "atol": 1e-5}
    return {"rtol": 1e-9, "atol": 1e-12}


def assign_rules(
    kind: str, params: list[Any], state: list[Any], products: bool = True
) -> Callable[..., Any]:
    """A training step of a two-layer tanh net with SGD, Momentum or Adam written with assigns
    (``products=False``: element-wise "layers" ``tanh(x * w1) * w2`` and an L1 loss: no
    matrix product, and no sum of squares, which the evaluator computes as a dot product)."""

    def step(x: Any, y: Any, lr: float) -> Any:
        w1, w2 = params
        if products:
            loss = ops.reduce_mean(ops.square(ops.tanh(x @ w1) @ w2 - y))
        else:
            loss = ops.reduce_mean(ops.abs(ops.tanh(x * w1) * w2 - y))
        grads = tn.grad(loss, (w1, w2))
        # the last layer first: its update can run before the first layer's gradient
        for i, (w, g) in reversed(list(enumerate(zip(params, grads, strict=True)))):
            if kind == "sgd":
                w.assign(w - lr * g)
            elif kind == "momentum":
                v = state[i][0]
                v.assign(v * 0.9 + g)
                w.assign(w - lr * v)
            else:
                m, v = state[i]
                m.assign(m * 0.9 + g * 0.1)
                v.assign(v * 0.999 + ops.square(g) * 0.001)
                w.assign(w - lr * m / (ops.sqrt(v) + 1e-8))
        return loss

    return step


def train_with_assigns(
    kind: str,
    steps: int,
    fail: Callable[[], AbstractContextManager[Any]] | None = None,
    device: type[DeviceTag] = tn.CPU,
) -> list[Array]:
    """The Float64 weights and optimizer state (host copies) after ``steps`` compiled steps of
    :func:`assign_rules`, the second one run inside ``fail()`` (which makes it fail midway)."""
    rng = np.random.default_rng(7)

    def t64(a: Array) -> tn.Tensor[Any, Any, Any]:
        return tagged(a, tn.Float64, device)

    # big enough that the program takes buffers from the pool (64 KiB and more)
    params = [t64(rng.normal(size=(64, 128)) * 0.1), t64(rng.normal(size=(128, 2)) * 0.1)]
    state = [[t64(np.zeros(p.shape)) for _ in range(2)] for p in params]
    step = tn.compile(assign_rules(kind, params, state))
    xs = [t64(rng.normal(size=(256, 64))) for _ in range(steps)]
    ys = [t64(rng.normal(size=(256, 2))) for _ in range(steps)]
    for i in range(steps):
        with fail() if fail is not None and i == 1 else nullcontext():
            step(xs[i], ys[i], 0.05)
    return [p.numpy().copy() for p in params] + [s.numpy().copy() for st in state for s in st]


def finite_difference(f: Callable[[Array], Array], x: Array, eps: float = 1e-6) -> Array:
    """The derivative of an element-wise ``f`` at each element of ``x`` by central differences:
    ``(f(x + eps) - f(x - eps)) / (2 eps)``, computed in float64.
    """
    x = np.asarray(x, dtype=np.float64)
    result: Array = (f(x + eps) - f(x - eps)) / (2 * eps)
    return result


def numerical_gradient(f: Callable[[Array], float], x: Array, eps: float = 1e-6) -> Array:
    """Gradient of a scalar function ``f`` at ``x`` by central differences, element by element."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        saved = x[i]
        x[i] = saved + eps
        up = f(x)
        x[i] = saved - eps
        down = f(x)
        x[i] = saved
        grad[i] = (up - down) / (2 * eps)
    return grad


def assert_close(actual: npt.ArrayLike, desired: npt.ArrayLike, elem: type[ElemTag]) -> None:
    """``actual`` equals ``desired`` within ``tolerance(elem)`` (shapes must match too)."""
    tol = tolerance(elem)
    np.testing.assert_allclose(
        np.asarray(actual), np.asarray(desired), rtol=tol["rtol"], atol=tol["atol"], strict=False
    )
    assert np.shape(actual) == np.shape(desired), (np.shape(actual), np.shape(desired))


untyped: Any = tn
"""typed_nn seen without static types: for tests that pass shapes chosen at run time, or wrong
arguments on purpose to check the run-time errors (``untyped.zeros(shape, ...)``)."""


def layer_feed(layer: Any, values: dict[type, Any]) -> Any:
    """``layer.feed_forward`` of ``values`` (numpy arrays become Float64 tensors)."""
    cont = layer.input_cont()
    for port, value in values.items():
        cont = cont.set(port, t64(value) if isinstance(value, np.ndarray) else value)
    return layer.feed_forward(cont)


def check_layer_gradients(
    layer: Any,
    values: dict[type, Any],
    *,
    output: type | None = None,
    no_grad: tuple[type, ...] = (),
) -> None:
    """The backward of ``layer`` (a Float64 train layer with feedback) equals central
    differences of ``sum(G * forward)`` for a random output gradient ``G``, for every
    array-valued port but those in ``no_grad`` (which, like number ports, must get none); the
    layer's stacks end empty (the forwards for the differences pop with empty-grad backwards)."""
    from typed_nn.layers import LayerOutput

    port_out = output if output is not None else LayerOutput

    def forward(vals: dict[type, Any]) -> Array:
        out: Array = layer_feed(layer, vals).get(port_out).numpy()
        layer.feed_backward(layer.output_cont())
        return out

    g = np.random.default_rng(3).standard_normal(forward(values).shape)
    layer_feed(layer, values)
    grads = layer.feed_backward(layer.output_cont().set(port_out, t64(g)))
    for port, x in values.items():
        if not isinstance(x, np.ndarray) or port in no_grad:
            assert not grads.is_set(port), f"port {port.__name__} got a gradient"
            continue

        def f(v: Array, port: type = port) -> float:
            return float(np.sum(g * forward({**values, port: v})))

        expected = numerical_gradient(f, x)
        got = grads.get(port).numpy()
        assert got.shape == x.shape, (port.__name__, got.shape, x.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=port.__name__)
    layer.neutral_invariant()


@contextmanager
def threads_restored() -> Iterator[None]:
    """Whatever a test does to typed_nn's thread count (and numpy's BLAS threads, and whether
    element-wise passes split) is undone after it."""
    from typed_nn import blas, threads

    saved = (list(threads._count), threads.split_count, blas.blas_threads())
    try:
        yield
    finally:
        threads._count[:], threads.split_count = saved[0], saved[1]
        if saved[2] is not None:
            blas.set_blas_threads(saved[2])


@contextmanager
def split_on_threads(n: int = 2, block: int | None = None) -> Iterator[None]:
    """Every fused region split across ``n`` threads, in blocks of ``block`` elements where
    given (small arrays then run the blocked, split loop); the thread count, block size and
    plans are restored after."""
    from typed_nn import threads
    from typed_nn.evaluate import clear_plan_cache, fuse

    saved = (threads.SPLIT_MIN, fuse.BLOCK)
    threads.SPLIT_MIN = 0
    fuse.BLOCK = fuse.BLOCK if block is None else block
    clear_plan_cache()
    try:
        with threads_restored():
            tn.set_num_threads(n)
            yield
    finally:
        threads.SPLIT_MIN, fuse.BLOCK = saved
        clear_plan_cache()
