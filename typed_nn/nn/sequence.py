"""Sequence modules: ``LSTM``, ``GRU`` (one layer, PyTorch's formulation and parameter
names) and ``MultiHeadAttention`` (self-attention of (batch, seq, d) data); computed by the
step functions MetaNN's layers use (one computation each)."""

from __future__ import annotations

import math
from typing import Any, Generic, cast, overload

from .. import ops
from ..data.factories import zeros
from ..data.tensor import AnyTensor, TensorLike
from ..errors import ShapeError, message, received
from ..layers.attention import attention_mask, check_attention_input, multi_head_attention
from ..layers.rnn_steps import gru_cell, lstm_cell
from ..ops.layout import permute_any
from ..ops.node import format_site, user_site
from ..ops.special import ZeroTensor
from ..policies.precision import ComputeIn
from ..tags import CPU, FE, DeviceTag, Dim1, Dim2, Dim3, Dv, Float32, FloatTag
from . import checks, init
from .layers import Gen, Linear, _tags
from .precision import CE, PC, Mixed

__all__ = ["GRU", "LSTM", "MultiHeadAttention"]


class _Recurrent(Mixed, Generic[FE, Dv, CE]):
    """One recurrent layer: ``weight_ih_l0`` (G·H, in), ``weight_hh_l0`` (G·H, H),
    ``bias_ih_l0`` and ``bias_hh_l0`` (G·H,), all drawn from U(-1/sqrt(H), 1/sqrt(H)) as
    PyTorch draws them; input (seq, batch, in), or (batch, seq, in) with ``batch_first``."""

    gates: int = 1
    weight_ih_l0: TensorLike[FE, Dv, Dim2]
    weight_hh_l0: TensorLike[FE, Dv, Dim2]
    bias_ih_l0: TensorLike[FE, Dv, Dim1]
    bias_hh_l0: TensorLike[FE, Dv, Dim1]

    def _build(
        self,
        input_size: int,
        hidden_size: int,
        batch_first: bool,
        elem: type[FloatTag] | None,
        device: type[DeviceTag] | None,
        precision: ComputeIn[Any] | None,
        gen: Gen,
    ) -> None:
        e, dv = _tags(elem, device)
        self._set_precision(precision, e)
        name = type(self).__name__
        input_size = checks.size(name, "input_size", input_size)
        hidden_size = checks.size(name, "hidden_size", hidden_size)
        self.input_size, self.hidden_size, self.batch_first = input_size, hidden_size, batch_first
        g = self.gates * hidden_size
        shapes = (("weight_ih_l0", (g, input_size)), ("weight_hh_l0", (g, hidden_size)))
        for name, shape in (*shapes, ("bias_ih_l0", (g,)), ("bias_hh_l0", (g,))):
            setattr(self, name, init.fan_in_uniform(shape, hidden_size, e, dv, gen))

    def _steps(self, x: Any) -> list[Any]:
        """The time steps of ``x``, each (batch, in)."""
        if x.rank != 3 or x.shape[2] != self.input_size:
            layout = "(batch, seq, input_size)" if self.batch_first else "(seq, batch, input_size)"
            raise ShapeError(
                message(
                    f"cannot apply {type(self).__name__}: it takes {layout} data with "
                    f"input_size {self.input_size}.",
                    [("received", x.describe())],
                    built_at=format_site(user_site()),
                    hint="feed rank-3 data in that layout (batch_first=True: batch first).",
                )
            )
        self._input(x)
        time_major = permute_any(x, (1, 0, 2)) if self.batch_first else x
        return [time_major[t] for t in range(time_major.shape[0])]

    def _state(self, given: Any, batch: int, name: str) -> AnyTensor:
        """A given initial state ``name`` (1, batch, H) as (batch, H), checked: the data's
        batch, the hidden size, the element the layer computes in and the data's device."""
        want = (1, batch, self.hidden_size)
        w = self.weight_hh_l0
        elem = self.compute_elem or w.elem
        ok = isinstance(given, TensorLike) and given.shape == want
        if not ok or given.elem is not elem or given.device is not w.device:
            raise ShapeError(
                message(
                    f"cannot apply {type(self).__name__}: its initial state {name} must be "
                    f"(1, batch, hidden_size) = {want} of {elem.__name__} on "
                    f"{w.device.__name__}.",
                    [
                        (
                            "received",
                            given.describe() if isinstance(given, TensorLike) else repr(given),
                        )
                    ],
                    built_at=format_site(user_site()),
                    hint="give the state of the same batch (PyTorch's layout: one layer first), "
                    "or leave it out to start from zeros.",
                )
            )
        first: AnyTensor = given[0]
        return first

    def _weights(self) -> tuple[AnyTensor, AnyTensor, AnyTensor, AnyTensor]:
        w_ih = ops.transpose(self._param(self.weight_ih_l0))
        w_hh = ops.transpose(self._param(self.weight_hh_l0))
        return w_ih, w_hh, self._param(self.bias_ih_l0), self._param(self.bias_hh_l0)

    def _stacked(self, hs: list[AnyTensor]) -> Any:
        out: AnyTensor = ops.stack(hs)  # (seq, batch, H)
        return permute_any(out, (1, 0, 2)) if self.batch_first else out


class LSTM(_Recurrent[FE, Dv, CE]):
    """PyTorch's ``nn.LSTM`` (one layer): ``lstm(x)`` is ``(output, (h_n, c_n))``, output
    (seq, batch, H) or (batch, seq, H) with ``batch_first``, ``h_n`` and ``c_n`` (1, batch, H);
    ``lstm(x, (h0, c0))`` starts from given (1, batch, H) states (zeros otherwise)."""

    gates = 4

    @overload
    def __init__(self: LSTM[Float32, CPU], input_size: int, hidden_size: int, *, batch_first: bool = False, gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: LSTM[FE, Dv, FE], input_size: int, hidden_size: int, *, batch_first: bool = False, elem: type[FE], device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: LSTM[Float32, CPU, PC], input_size: int, hidden_size: int, *, batch_first: bool = False, precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: LSTM[FE, Dv, PC], input_size: int, hidden_size: int, *, batch_first: bool = False, elem: type[FE], device: type[Dv], precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        batch_first: bool = False,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
        gen: Gen = None,
    ) -> None:
        self._build(input_size, hidden_size, batch_first, elem, device, precision, gen)

    def __call__(
        self,
        x: TensorLike[CE, Dv, Dim3],
        state: tuple[TensorLike[CE, Dv, Dim3], TensorLike[CE, Dv, Dim3]] | None = None,
    ) -> tuple[TensorLike[CE, Dv, Dim3], tuple[TensorLike[CE, Dv, Dim3], TensorLike[CE, Dv, Dim3]]]:
        steps = self._steps(x)
        batch = steps[0].shape[0] if steps else 0
        if state is not None:
            given: object = state  # callers without a type checker may pass one tensor
            if not isinstance(given, tuple | list) or len(given) != 2:
                raise ShapeError(
                    message(
                        "cannot apply LSTM: its initial state is a pair (h0, c0), each "
                        "(1, batch, hidden_size).",
                        [("received", received(given))],
                        built_at=format_site(user_site()),
                        hint="lstm(x, (h0, c0)), as PyTorch's; a GRU takes one state h0.",
                    )
                )
            h, c = self._state(state[0], batch, "h0"), self._state(state[1], batch, "c0")
        else:
            h, c = _zeros(self, batch), _zeros(self, batch)
        hs = []
        for xt in steps:
            h, c = lstm_cell(xt, h, c, *self._weights())
            hs.append(h)
        out: Any = (self._stacked(hs), (_layer(h), _layer(c)))
        return cast(
            tuple[
                TensorLike[CE, Dv, Dim3], tuple[TensorLike[CE, Dv, Dim3], TensorLike[CE, Dv, Dim3]]
            ],
            out,
        )


class GRU(_Recurrent[FE, Dv, CE]):
    """PyTorch's ``nn.GRU`` (one layer): ``gru(x)`` is ``(output, h_n)``, shapes as
    :class:`LSTM`'s; ``gru(x, h0)`` starts from a given (1, batch, H) state."""

    gates = 3

    @overload
    def __init__(self: GRU[Float32, CPU], input_size: int, hidden_size: int, *, batch_first: bool = False, gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: GRU[FE, Dv, FE], input_size: int, hidden_size: int, *, batch_first: bool = False, elem: type[FE], device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: GRU[Float32, CPU, PC], input_size: int, hidden_size: int, *, batch_first: bool = False, precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: GRU[FE, Dv, PC], input_size: int, hidden_size: int, *, batch_first: bool = False, elem: type[FE], device: type[Dv], precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        batch_first: bool = False,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
        gen: Gen = None,
    ) -> None:
        self._build(input_size, hidden_size, batch_first, elem, device, precision, gen)

    def __call__(
        self, x: TensorLike[CE, Dv, Dim3], state: TensorLike[CE, Dv, Dim3] | None = None
    ) -> tuple[TensorLike[CE, Dv, Dim3], TensorLike[CE, Dv, Dim3]]:
        steps = self._steps(x)
        batch = steps[0].shape[0] if steps else 0
        h = self._state(state, batch, "h0") if state is not None else _zeros(self, batch)
        hs = []
        for xt in steps:
            h = gru_cell(xt, h, *self._weights())
            hs.append(h)
        out: Any = (self._stacked(hs), _layer(h))
        return cast(tuple[TensorLike[CE, Dv, Dim3], TensorLike[CE, Dv, Dim3]], out)


def _layer(h: AnyTensor) -> AnyTensor:
    """(batch, H) as PyTorch's (num_layers = 1, batch, H)."""
    return ops.reshape(h, (1, *h.shape))


def _zeros(layer: _Recurrent[Any, Any, Any], batch: int) -> AnyTensor:
    """The zero initial state (batch, H), in the type the layer computes in."""
    w = layer.weight_hh_l0
    elem = layer.compute_elem or w.elem
    zero: AnyTensor = ZeroTensor((batch, layer.hidden_size), elem, w.device)
    return zero


class MultiHeadAttention(Mixed, Generic[FE, Dv, CE]):
    """Multi-head self-attention of (batch, seq, d_model) data, PyTorch's
    ``nn.MultiheadAttention(d_model, n_heads, batch_first=True)`` applied as ``mha(x, x, x)``:
    ``in_proj_weight`` (3d, d) and ``in_proj_bias`` (3d,) for q, k, v, then ``out_proj`` (a
    ``Linear(d, d)``). ``causal=True`` masks the future; ``mha(x, mask)`` adds an additive
    (seq, seq) or (batch, seq, seq) mask (``-inf`` or a large negative number to hide)."""

    in_proj_weight: TensorLike[FE, Dv, Dim2]
    in_proj_bias: TensorLike[FE, Dv, Dim1]
    out_proj: Linear[FE, Dv, CE]

    @overload
    def __init__(self: MultiHeadAttention[Float32, CPU], d_model: int, n_heads: int, *, causal: bool = False, gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: MultiHeadAttention[FE, Dv, FE], d_model: int, n_heads: int, *, causal: bool = False, elem: type[FE], device: type[Dv], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: MultiHeadAttention[Float32, CPU, PC], d_model: int, n_heads: int, *, causal: bool = False, precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    @overload
    def __init__(self: MultiHeadAttention[FE, Dv, PC], d_model: int, n_heads: int, *, causal: bool = False, elem: type[FE], device: type[Dv], precision: ComputeIn[PC], gen: Gen = None) -> None: ...  # fmt: skip
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        causal: bool = False,
        elem: type[FloatTag] | None = None,
        device: type[DeviceTag] | None = None,
        precision: ComputeIn[Any] | None = None,
        gen: Gen = None,
    ) -> None:
        if n_heads < 1 or d_model % n_heads:
            raise ShapeError(
                message(
                    "cannot create MultiHeadAttention: d_model must split evenly into n_heads.",
                    [("d_model", str(d_model)), ("n_heads", str(n_heads))],
                    hint="choose n_heads dividing d_model (e.g. 64 and 4).",
                )
            )
        e, dv = _tags(elem, device)
        self._set_precision(precision, e)
        self.d_model, self.n_heads, self.causal = d_model, n_heads, causal
        bound = math.sqrt(6.0 / (4 * d_model))  # xavier_uniform over (3d, d), as PyTorch
        self.in_proj_weight = init.uniform((3 * d_model, d_model), bound, e, dv, gen)
        self.in_proj_bias = zeros((3 * d_model,), e, dv)  # PyTorch starts both biases at zero
        out_proj = Linear(d_model, d_model, elem=e, device=dv, gen=gen)
        out_proj._set_precision(precision, e)
        self.out_proj = cast(Linear[FE, Dv, CE], out_proj)
        self.out_proj.bias = zeros((d_model,), e, dv)
        self._tn_masks: dict[tuple[int, type, type], AnyTensor] = {}

    def __call__(
        self, x: TensorLike[CE, Dv, Dim3], mask: TensorLike[CE, Dv, Any] | None = None
    ) -> TensorLike[CE, Dv, Dim3]:
        xa: Any = x
        check_attention_input("MultiHeadAttention", type(self), xa, self.d_model)
        self._input(x)
        full = attention_mask(
            "MultiHeadAttention", xa, mask, self.causal, self.n_heads, self._tn_masks
        )
        b_out = self.out_proj.bias
        assert b_out is not None  # made with a bias
        w_out = ops.transpose(self._param(self.out_proj.weight))
        w_qkv = ops.transpose(self._param(self.in_proj_weight))
        b_qkv, b_out = self._param(self.in_proj_bias), self._param(b_out)
        y = multi_head_attention(xa, w_qkv, b_qkv, w_out, b_out, self.n_heads, full)
        return cast(TensorLike[CE, Dv, Dim3], y)
