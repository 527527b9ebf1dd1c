"""Helpers for the composite-layer tests: parameters set by name, and numpy references.

The numpy functions are written from the equations (METANN.md §3.3, §3.4), independently of
typed_nn, in float64, with the row-vector convention ``x·W``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from helpers import Array, layer_feed, numerical_gradient

import typed_nn as tn
from typed_nn.layers import LayerOutput
from typed_nn.model import GradCollector, LoadBuffer, ParamInitializer

__all__ = [
    "collect",
    "fd_input",
    "fd_param",
    "gru_backward",
    "gru_forward",
    "init_params",
    "loss_of",
    "sigmoid",
]


def init_params(layer: Any, params: dict[str, Array]) -> LoadBuffer[Any, Any]:
    """``layer.init`` from an initializer holding exactly ``params`` (copied by name)."""
    init = ParamInitializer()
    for name, value in params.items():
        init.set_param(name, value)
    buffer: LoadBuffer[Any, Any] = LoadBuffer(tn.Float64, tn.CPU)
    layer.init(init, buffer)
    assert sorted(buffer) == sorted(params), (sorted(buffer), sorted(params))
    return buffer


def collect(layer: Any) -> dict[str, Array]:
    """The parameter gradients ``layer.grad_collect`` hands over, evaluated, by name."""
    col: GradCollector[Any, Any] = GradCollector(tn.Float64, tn.CPU)
    layer.grad_collect(col)
    return {name: grad.numpy() for name, _, grad in col}


def sigmoid(v: Array) -> Array:
    """The logistic function."""
    out: Array = 1.0 / (1.0 + np.exp(-v))
    return out


def gru_forward(p: dict[str, Array], x: Array, h: Array) -> dict[str, Array]:
    """One GRU step; returns the intermediates and ``out`` (h')."""
    z = sigmoid(x @ p["Wz"] + h @ p["Uz"])
    r = sigmoid(x @ p["Wr"] + h @ p["Ur"])
    hh = np.tanh((h * r) @ p["U"] + x @ p["W"])
    return {"z": z, "r": r, "hh": hh, "out": z * hh + (1 - z) * h}


def gru_backward(p: dict[str, Array], x: Array, h: Array, g: Array) -> dict[str, Array]:
    """Gradients of ``sum(g * h')`` for x, h and the six weights, by the chain rule."""
    f = gru_forward(p, x, h)
    z, r, hh = f["z"], f["r"], f["hh"]
    dz = g * (hh - h) * z * (1 - z)
    da = g * z * (1 - hh**2)
    dhr = da @ p["U"].T
    dr = dhr * h * r * (1 - r)
    dx = dz @ p["Wz"].T + dr @ p["Wr"].T + da @ p["W"].T
    dh = g * (1 - z) + dhr * r + dz @ p["Uz"].T + dr @ p["Ur"].T
    return {
        "x": dx,
        "h": dh,
        "Wz": x.T @ dz,
        "Uz": h.T @ dz,
        "Wr": x.T @ dr,
        "Ur": h.T @ dr,
        "W": x.T @ da,
        "U": (h * r).T @ da,
    }


def loss_of(layer: Any, inputs: dict[Any, Any], g: Array, output: type | None = None) -> float:
    """``sum(g * forward(inputs))``, evaluated; the forward's stacks are popped again."""
    out = layer_feed(layer, inputs).get(output or LayerOutput).numpy()
    layer.feed_backward(layer.output_cont())
    return float(np.sum(g * out))


def fd_input(layer: Any, inputs: dict[Any, Any], port: type, g: Array) -> Array:
    """Central differences of ``loss_of`` with respect to one input."""
    return numerical_gradient(lambda v: loss_of(layer, {**inputs, port: v}, g), inputs[port])


def fd_param(
    layer: Any, buffer: LoadBuffer[Any, Any], name: str, inputs: dict[Any, Any], g: Array
) -> Array:
    """Central differences of ``loss_of`` with respect to the parameter ``name`` (its tensor
    in ``buffer`` is changed in place, then restored)."""
    tensor = buffer.try_get(name)
    assert tensor is not None
    array = tensor.array
    saved = array.copy()

    def f(v: Array) -> float:
        array[...] = v
        return loss_of(layer, inputs, g)

    result = numerical_gradient(f, saved)
    array[...] = saved
    return result
