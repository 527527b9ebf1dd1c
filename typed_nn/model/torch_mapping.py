"""Which PyTorch state-dict key holds which typed_nn parameter, and in what layout.

A :class:`TorchMapping` is a tuple of :class:`TorchParam` entries (a PyTorch key, the typed_nn
parameter name, whether the layout is transposed) and :class:`TorchBuffer` entries (PyTorch-only
state such as BatchNorm's ``num_batches_tracked``: written as 0, ignored on load). One helper per
layer kind returns the entries of one layer, and mappings add up with ``+``::

    mapping = torch_mapping.linear("net/fc1", "0") + torch_mapping.linear("net/fc2", "2")

The helpers take the typed_nn layer name (its parameters are ``<layer>/<param>``) and the PyTorch
module's path in the state dict (``"0"`` in a ``Sequential``, ``"encoder.attn"``, or ``""`` for a
bare module). Layouts follow the agreed conventions: dense weights are ``x @ W`` in typed_nn,
``(out, in)`` in PyTorch, so they are transposed; conv, embedding and norm tensors are the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import ParamError, bad_argument, flag, listed, message

__all__ = [
    "TorchBuffer",
    "TorchMapping",
    "TorchParam",
    "batch_norm",
    "conv2d",
    "digits_cnn",
    "embedding",
    "gru",
    "layer_norm",
    "linear",
    "lstm",
    "mlp",
    "multi_head_attention",
]


@dataclass(frozen=True)
class TorchParam:
    """The PyTorch ``key`` holds typed_nn parameter ``param``, transposed when ``transpose``
    (a rank-2 tensor: PyTorch's ``(out, in)`` against typed_nn's ``(in, out)``)."""

    key: str
    param: str
    transpose: bool = False


@dataclass(frozen=True)
class TorchBuffer:
    """A PyTorch-only Int64 scalar ``key`` (``num_batches_tracked``): exported as 0, and
    accepted but ignored on load (typed_nn keeps no such count)."""

    key: str


@dataclass(frozen=True)
class TorchMapping:
    """The entries of a model, in PyTorch's state-dict order; ``a + b`` joins two mappings.

    Every PyTorch key and every typed_nn parameter appears at most once (a ``ParamError``
    names the duplicate otherwise).
    """

    params: tuple[TorchParam, ...] = ()
    buffers: tuple[TorchBuffer, ...] = ()

    def __post_init__(self) -> None:
        keys = [e.key for e in self.params] + [b.key for b in self.buffers]
        names = [e.param for e in self.params]
        for what, values in (("PyTorch key", keys), ("typed_nn parameter", names)):
            twice = sorted({v for v in values if values.count(v) > 1})
            if twice:
                raise ParamError(
                    message(
                        f"a TorchMapping names a {what} twice.",
                        [("repeated", listed(twice))],
                        hint="give each layer its own typed_nn name and PyTorch module path.",
                    )
                )

    def __add__(self, other: TorchMapping) -> TorchMapping:
        return TorchMapping(self.params + other.params, self.buffers + other.buffers)

    def __iter__(self) -> Iterator[TorchParam]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every PyTorch key of the mapping: parameters, then PyTorch-only buffers."""
        return tuple(e.key for e in self.params) + tuple(b.key for b in self.buffers)


def _key(module: str, name: str) -> str:
    _check_names(module=module)
    return f"{module}.{name}" if module else name


def _entries(layer: str, module: str, pairs: Sequence[tuple[str, str, bool]]) -> TorchMapping:
    _check_names(layer=layer)
    return TorchMapping(tuple(TorchParam(_key(module, k), f"{layer}/{p}", t) for k, p, t in pairs))


def _check_names(**names: object) -> None:
    """A mapping's layer and module names are strings (a ``ParamError`` naming the first
    that is not: formatted into keys, it would make keys no model has)."""
    for what, name in names.items():
        if not isinstance(name, str):
            hint = "pass the typed_nn layer's name and the PyTorch module's attribute path."
            raise bad_argument(ParamError, "torch_mapping", what, "a name (a str)", name, hint)


def linear(layer: str, module: str) -> TorchMapping:
    """``LinearLayer`` ↔ ``nn.Linear``: ``weight`` transposed, ``bias``."""
    return _entries(layer, module, [("weight", "weight", True), ("bias", "bias", False)])


def conv2d(layer: str, module: str, *, bias: bool = True) -> TorchMapping:
    """``Conv2dLayer`` ↔ ``nn.Conv2d``: ``weight`` (OIHW in both), ``bias`` unless
    ``bias=False``."""
    with_bias = flag("torch_mapping.conv2d", "bias", bias)
    pairs = [("weight", "weight", False)] + ([("bias", "bias", False)] if with_bias else [])
    return _entries(layer, module, pairs)


def embedding(layer: str, module: str) -> TorchMapping:
    """``EmbeddingLayer`` ↔ ``nn.Embedding``: ``weight`` (num, dim) in both."""
    return _entries(layer, module, [("weight", "weight", False)])


def batch_norm(layer: str, module: str) -> TorchMapping:
    """``BatchNormLayer`` ↔ ``nn.BatchNorm1d`` / ``nn.BatchNorm2d``: ``weight``, ``bias``,
    ``running_mean``, ``running_var``; PyTorch's ``num_batches_tracked`` is a buffer."""
    names = ("weight", "bias", "running_mean", "running_var")
    mapping = _entries(layer, module, [(n, n, False) for n in names])
    return mapping + TorchMapping(buffers=(TorchBuffer(_key(module, "num_batches_tracked")),))


def layer_norm(layer: str, module: str) -> TorchMapping:
    """``LayerNormLayer`` ↔ ``nn.LayerNorm``: ``weight``, ``bias``."""
    return _entries(layer, module, [("weight", "weight", False), ("bias", "bias", False)])


def _recurrent(layer: str, module: str) -> TorchMapping:
    return _entries(
        layer,
        module,
        [
            ("weight_ih_l0", "w_ih", True),
            ("weight_hh_l0", "w_hh", True),
            ("bias_ih_l0", "b_ih", False),
            ("bias_hh_l0", "b_hh", False),
        ],
    )


def lstm(layer: str, module: str) -> TorchMapping:
    """``LstmStep`` ↔ one-layer ``nn.LSTM``: ``weight_ih_l0`` / ``weight_hh_l0`` transposed
    (gate blocks i, f, g, o in both), ``bias_ih_l0``, ``bias_hh_l0``."""
    return _recurrent(layer, module)


def gru(layer: str, module: str) -> TorchMapping:
    """``TorchGruStep`` ↔ one-layer ``nn.GRU``: as :func:`lstm`, gate blocks r, z, n."""
    return _recurrent(layer, module)


def multi_head_attention(layer: str, module: str) -> TorchMapping:
    """``MultiHeadAttentionLayer`` ↔ ``nn.MultiheadAttention(batch_first=True)``:
    ``in_proj_weight`` = ``w_qkv`` transposed (blocks q, k, v), ``in_proj_bias`` = ``b_qkv``,
    ``out_proj.weight`` = ``w_out`` transposed, ``out_proj.bias`` = ``b_out``."""
    return _entries(
        layer,
        module,
        [
            ("in_proj_weight", "w_qkv", True),
            ("in_proj_bias", "b_qkv", False),
            ("out_proj.weight", "w_out", True),
            ("out_proj.bias", "b_out", False),
        ],
    )


def mlp(name: str, layers: int, *, module: str = "", stride: int = 2) -> TorchMapping:
    """An ``MLP`` named ``name`` (``build_mlp``: ``name/fc1`` … ``name/fc<layers>``) ↔ a
    ``torch.nn.Sequential`` of ``nn.Linear`` modules with one activation module between two
    of them (``Linear, ReLU, Linear, ReLU, Linear``: indices 0, 2, 4; ``stride=1`` when there
    are none), under ``module`` when the Sequential is a submodule."""
    _check_names(name=name, module=module)
    counts: tuple[object, object] = (layers, stride)  # callers may pass anything
    if (
        not all(isinstance(c, int) and not isinstance(c, bool) for c in counts)
        or min(layers, stride) < 1
    ):
        raise ParamError(
            message(
                "torch_mapping.mlp needs at least one layer and a stride of at least 1.",
                [("layers", repr(layers)[:80]), ("stride", repr(stride)[:80])],
                hint="mlp('mlp', 2) maps build_mlp([64, 32, 10])'s two linear layers.",
            )
        )
    total = TorchMapping()
    for i in range(layers):
        total = total + linear(f"{name}/fc{i + 1}", _key(module, str(i * stride)))
    return total


def digits_cnn(name: str = "cnn", *, module: str = "") -> TorchMapping:
    """A ``DigitsCNN`` named ``name`` (``build_cnn``: ``name/conv``, ``name/fc``) ↔
    ``nn.Sequential(nn.Conv2d(1, C, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
    nn.Linear(C·H/2·W/2, classes))``: keys ``0.*`` and ``4.*``, under ``module`` when the
    Sequential is a submodule. Both flatten (C, H, W) in that order, so the linear weight maps
    as it is (transposed)."""
    _check_names(name=name, module=module)
    return conv2d(f"{name}/conv", _key(module, "0")) + linear(f"{name}/fc", _key(module, "4"))
