"""``LstmStep`` and ``TorchGruStep``: PyTorch-formulated steps for ``RecurrentLayer``.

Row-vector convention (``x`` (batch, fan_in), states (batch, hidden)); parameters named
``name/w_ih`` (fan_in, G·H), ``name/w_hh`` (H, G·H), ``name/b_ih`` and ``name/b_hh`` (G·H,),
gate column blocks in PyTorch's order, so ``nn.LSTM`` / ``nn.GRU`` (one layer) weights load
transposed (``weight_ih_l0`` (G·H, in) is ``w_ih``ᵀ; biases as they are)::

    LSTM (G = 4, blocks i, f, g, o):          GRU (G = 3, blocks r, z, n):
    a  = x·W_ih + b_ih + h·W_hh + b_hh         a = x·W_ih + b_ih,  b = h·W_hh + b_hh
    i, f, o = sigmoid(a_i), sigmoid(a_f), ...   r, z = sigmoid(a_r + b_r), sigmoid(a_z + b_z)
    g  = tanh(a_g)                              n  = tanh(a_n + r ⊙ b_n)
    c' = f ⊙ c + i ⊙ g                          h' = z ⊙ h + (1 - z) ⊙ n
    h' = o ⊙ tanh(c')

Ports: ``LayerInput`` (x) and ``Previous(LayerOutput)`` (h), plus ``Previous(CellState)`` (c)
for the LSTM → ``LayerOutput`` (h') and, for the LSTM, ``CellState`` (c'). Each is defined by
its forward (a forward-only cell: the backward is ``tn.vjp`` of it). The parameters are
``tn.Matrix`` / ``tn.Vector`` of ``PElemIs`` / ``PDeviceIs`` (default Float32, CPU), filled by
``PInitializerIs(key)``'s filler unless loaded or preset (PyTorch draws them from
U(-1/√H, 1/√H): ``UniformFiller(-k, k)``). Inside ``RecurrentLayer`` the step is named
``name/kernel``, so its parameters are ``name/kernel/w_ih``, ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from .. import ops
from ..data.tensor import AnyTensor, Matrix, Vector
from ..errors import ShapeError, message
from ..ops.node import format_site, user_site
from ..policies import AnyPolicyObject, PParamTypeIs
from ..tags import Dim2
from .compose import KIn, KOut
from .declared import Decl
from .keys import LayerInput, LayerOutput, PortKey, Previous, PreviousKey
from .param_cells import Cell, ParamComposite, check_features, check_rank
from .source_layers import ParamSourceLayer, check_sizes
from .topology import (
    ComposeTopology,
    param_op_topology,
)
from .var_type_dict import key_name

__all__ = ["CellState", "LstmStep", "TorchGruStep", "gru_cell", "lstm_cell"]


class CellState(PortKey):
    """An LSTM's cell state c (its hidden state h is ``LayerOutput``)."""


class WeightIH(PortKey):
    """The input-to-hidden weight of a step cell."""


class WeightHH(PortKey):
    """The hidden-to-hidden weight of a step cell."""


class BiasIH(PortKey):
    """The input-to-hidden bias of a step cell."""


class BiasHH(PortKey):
    """The hidden-to-hidden bias of a step cell."""


H = Previous(LayerOutput)
C = Previous(CellState)
LstmPorts = LayerInput | PreviousKey[LayerOutput] | PreviousKey[CellState]
GruPorts = LayerInput | PreviousKey[LayerOutput]

_MATRIX: AnyPolicyObject = PParamTypeIs(Matrix)
_VECTOR: AnyPolicyObject = PParamTypeIs(Vector)
_FORCED: Mapping[str, tuple[AnyPolicyObject, ...]] = {
    "w_ih": (_MATRIX,),
    "w_hh": (_MATRIX,),
    "b_ih": (_VECTOR,),
    "b_hh": (_VECTOR,),
}


class _GatedCell(Cell):
    """A step cell with ``gates`` column blocks of width H in its weights and biases."""

    gates: ClassVar[int]

    @classmethod
    def probe_shape(cls, port: type, rank: int) -> tuple[int, ...]:
        if port in (WeightIH, WeightHH):
            return (1, cls.gates)
        if port in (BiasIH, BiasHH):
            return (cls.gates,)
        return (1,) * rank

    def check(self, inputs: dict[type, Any], states: tuple[type, ...]) -> None:
        """Rank 2 data (the step takes one time step of a batch)."""
        for port in (LayerInput, *states):
            check_rank(self.name, port, inputs[port], (2,), "(batch, features)")


class LstmCell(_GatedCell):
    """The LSTM step's forward (module docstring)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, H, C, WeightIH, WeightHH, BiasIH, BiasHH)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput, CellState)
    gates: ClassVar[int] = 4

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        self.check(inputs, (H, C))
        weights = (inputs[WeightIH], inputs[WeightHH], inputs[BiasIH], inputs[BiasHH])
        h, c = lstm_cell(inputs[LayerInput], inputs[H], inputs[C], *weights)
        return {LayerOutput: h, CellState: c}


def lstm_cell(
    x: AnyTensor,
    h: AnyTensor,
    c: AnyTensor,
    w_ih: AnyTensor,
    w_hh: AnyTensor,
    b_ih: AnyTensor,
    b_hh: AnyTensor,
) -> tuple[AnyTensor, AnyTensor]:
    """One LSTM step, PyTorch's formulation: (h', c') from (batch, in) ``x``, (batch, H)
    ``h`` and ``c``, weights (in, 4H) and (H, 4H) with the gates i, f, g, o in column blocks.
    The one computation of ``LstmStep`` and ``nn.LSTM``."""
    # the bias sum is one node per step, the same each step: computed once per sequence;
    # the input's part (x·W_ih + biases) does not depend on h: over a sequence the
    # evaluator's batching runs it as one GEMM and one add for every step at once
    a = x @ w_ih + (b_ih + b_hh) + h @ w_hh
    hidden = h.shape[1]
    # i and f are adjacent: one sigmoid for both (one kernel call less per step each way)
    i_f = ops.sigmoid(ops.narrow(a, 1, 0, 2 * hidden))
    i, f = ops.narrow(i_f, 1, 0, hidden), ops.narrow(i_f, 1, hidden, hidden)
    a_g, a_o = ops.narrow(a, 1, 2 * hidden, hidden), ops.narrow(a, 1, 3 * hidden, hidden)
    c_next = f * c + i * ops.tanh(a_g)
    return ops.sigmoid(a_o) * ops.tanh(c_next), c_next


class TorchGruCell(_GatedCell):
    """The PyTorch GRU step's forward (module docstring)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, H, WeightIH, WeightHH, BiasIH, BiasHH)
    gates: ClassVar[int] = 3

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        self.check(inputs, (H,))
        weights = (inputs[WeightIH], inputs[WeightHH], inputs[BiasIH], inputs[BiasHH])
        return {LayerOutput: gru_cell(inputs[LayerInput], inputs[H], *weights)}


def gru_cell(
    x: AnyTensor, h: AnyTensor, w_ih: AnyTensor, w_hh: AnyTensor, b_ih: AnyTensor, b_hh: AnyTensor
) -> AnyTensor:
    """One GRU step, PyTorch's formulation (the reset gate scales ``h·W_hn + b_hn``): h' from
    (batch, in) ``x`` and (batch, H) ``h``, weights (in, 3H) and (H, 3H) with the gates r, z,
    n in column blocks. The one computation of ``TorchGruStep`` and ``nn.GRU``."""
    hidden = h.shape[1]
    a = x @ w_ih + b_ih
    b = h @ w_hh + b_hh
    a_r, a_z, a_n = (ops.narrow(a, 1, k * hidden, hidden) for k in range(3))
    b_r, b_z, b_n = (ops.narrow(b, 1, k * hidden, hidden) for k in range(3))
    r, z = ops.sigmoid(a_r + b_r), ops.sigmoid(a_z + b_z)
    n = ops.tanh(a_n + r * b_n)
    return ops.interpolate(h, n, z)  # z ⊙ h + (1 - z) ⊙ n


_PARAMS = (("w_ih", WeightIH), ("w_hh", WeightHH), ("b_ih", BiasIH), ("b_hh", BiasHH))


def _topology(cell: type[Cell], states: tuple[type, ...]) -> ComposeTopology:
    return param_op_topology(
        "cell",
        cell,
        [(name, ParamSourceLayer, port) for name, port in _PARAMS],
        [(LayerInput, LayerInput), *((Previous(s), Previous(s)) for s in states)],
        [(s, s) for s in states],
    )


class _GatedStep(ParamComposite[KIn, KOut, Dim2, Dim2, Decl]):
    """The composite of a gated step: four parameters and its cell; (batch, features) data
    in, (batch, hidden) out, on every port."""

    forced_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = _FORCED
    gates: ClassVar[int]

    def __init__(self, name: str, fan_in: int, hidden: int) -> None:
        example = f"{type(self).__name__}(name, fan_in, hidden), e.g. (name, 32, 64)."
        fan_in, hidden = check_sizes(name, {"fan_in": fan_in, "hidden": hidden}, example)
        width = type(self).gates * hidden
        args = self.create_sublayers().set("w_ih", fan_in, width).set("w_hh", hidden, width)
        super().__init__(name, args.set("b_ih", width).set("b_hh", width))
        self.fan_in, self.hidden = fan_in, hidden

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x: AnyTensor = inputs[LayerInput]
        states = [p for p in self.input_ports if p is not LayerInput]
        for port in (LayerInput, *states):
            check_rank(self.name, port, inputs[port], (2,), "(batch, features)")
        check_features(
            self.name,
            LayerInput,
            x,
            1,
            self.fan_in,
            "features",
            f"feed (batch, {self.fan_in}) data, or build the step for {x.shape[1]}.",
        )
        for port in states:
            state: AnyTensor = inputs[port]
            check_features(
                self.name,
                port,
                state,
                1,
                self.hidden,
                "units",
                f"feed a (batch, {self.hidden}) state.",
            )
            if state.shape[0] != x.shape[0]:
                raise ShapeError(
                    message(
                        f"cannot feed layer '{self.name}': port {key_name(port)} has batch "
                        f"{state.shape[0]}, the data {x.shape[0]}.",
                        [("data", x.describe()), ("state", state.describe())],
                        built_at=format_site(user_site()),
                        hint="give one state row per data row.",
                    )
                )
        return super().forward(inputs)


class LstmStep(_GatedStep[LstmPorts, LayerOutput | CellState, Decl]):
    """One LSTM step, PyTorch's ``nn.LSTM`` cell. ``LstmStep(name, fan_in, hidden)``:
    ``LayerOutput`` = h' and ``CellState`` = c', each (batch, hidden)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, H, C)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput, CellState)
    gates: ClassVar[int] = 4
    topology = _topology(LstmCell, (LayerOutput, CellState))


class TorchGruStep(_GatedStep[GruPorts, LayerOutput, Decl]):
    """One GRU step, PyTorch's ``nn.GRU`` cell (biases; the reset gate scales
    ``h·W_hn + b_hn``). ``TorchGruStep(name, fan_in, hidden)``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, H)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    gates: ClassVar[int] = 3
    topology = _topology(TorchGruCell, (LayerOutput,))
