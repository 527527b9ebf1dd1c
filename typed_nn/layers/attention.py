"""``MultiHeadAttentionLayer``: scaled dot-product multi-head self-attention (as PyTorch's
``nn.MultiheadAttention(d, h, batch_first=True)`` with query = key = value = the input).

For an input ``x`` of shape (batch, seq, d) and ``h`` heads of width ``dh = d / h``::

    q, k, v = split(x @ w_qkv + b_qkv)                 # (batch, h, seq, dh) each
    a = softmax(q @ kᵀ / sqrt(dh) + mask)             # (batch, h, seq, seq), batched matmul
    y = merge_heads(a @ v) @ w_out + b_out             # (batch, seq, d)

``mask`` is additive: 0 keeps a position, a large negative number drops it (PyTorch's float
``attn_mask``). ``causal=True`` drops every key after its query; ``MaskedMultiHeadAttentionLayer``
takes an explicit mask too, at the port ``AttentionMask``: (seq, seq), or (batch, seq, seq)
for one per sample (both added to the causal mask when there is one).

Parameters (with the layer named ``L``): ``L/w_qkv`` (d, 3d), its column blocks q, k, v;
``L/b_qkv`` (3d,); ``L/w_out`` (d, d); ``L/b_out`` (d,). PyTorch's ``in_proj_weight`` and
``out_proj.weight`` are the transposes. The attention itself is a sublayer (``L/attn``) that
defines its forward only: its backward, and so the composite's, is ``tn.vjp`` of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from .. import ops
from ..data.factories import tensor
from ..data.tensor import AnyTensor, Matrix, TensorLike, Vector
from ..errors import LayerError, ShapeError, message
from ..ops.node import format_site, user_site
from ..policies import AnyPolicyObject, PParamTypeIs
from ..shape import format_shape
from ..tags import FE, Dim2, Dim3, Dim4, Dv
from .compose import ComposeKernel, SublayerArgs
from .declared import Decl
from .keys import LayerInput, LayerOutput, PortKey
from .param_cells import Cell, check_features
from .protocol import Layer
from .source_layers import ParamSourceLayer, check_sizes
from .topology import (
    ComposeTopology,
    param_op_topology,
)
from .var_type_dict import VarValues

__all__ = [
    "AttentionMask",
    "attention_mask",
    "check_attention_input",
    "multi_head_attention",
    "MaskedMultiHeadAttentionLayer",
    "MultiHeadAttentionLayer",
    "QkvBias",
    "QkvWeight",
    "OutBias",
    "OutWeight",
]

MASKED = -1e9
"""What the causal mask adds to a dropped score: finite (no inf in debug mode's checks), and
far enough below any score that its softmax weight is exactly 0 in Float32 and Float64."""


class AttentionMask(PortKey):
    """An additive attention mask: (seq, seq) or (batch, seq, seq)."""


class QkvWeight(PortKey):
    """The attention core's input projection weight (d, 3d)."""


class QkvBias(PortKey):
    """The attention core's input projection bias (3d,)."""


class OutWeight(PortKey):
    """The attention core's output projection weight (d, d)."""


class OutBias(PortKey):
    """The attention core's output projection bias (d,)."""


def _causal_mask(x: AnyTensor, seq: int) -> AnyTensor:
    """(seq, seq): 0 on and below the diagonal, MASKED above, as a tensor of ``x``'s kind.
    Made on ``x``'s device directly: no evaluation, which a ``tn.compile`` trace refuses."""
    dtype = x.elem.dtype
    # Float16 cannot hold -1e9: its lowest finite value hides a score as well (exp underflows)
    fill = max(MASKED, float(np.finfo(np.float16).min)) if dtype == np.float16 else MASKED
    values = np.triu(np.full((seq, seq), fill, dtype=dtype), 1)
    mask: AnyTensor = tensor(values, x.elem, x.device, Dim2)
    return mask


_PROBE_SHAPES: dict[type, tuple[int, ...]] = {
    LayerInput: (1, 1, 1),
    QkvWeight: (1, 3),
    QkvBias: (3,),
    OutWeight: (1, 1),
    OutBias: (1,),
    AttentionMask: (1, 1),
}


MASKS_KEPT = 8
"""Causal masks a layer keeps, one per sequence length (and element type, device)."""


def check_attention_input(owner: str, port: type, x: AnyTensor, d_model: int) -> None:
    """Typed errors naming ``owner`` unless ``x`` is (batch, seq, ``d_model``) data: the
    checks of ``MultiHeadAttentionLayer`` and ``nn.MultiHeadAttention``."""
    if x.rank != 3:
        raise ShapeError(
            message(
                f"cannot feed layer '{owner}' forward: attention takes (batch, seq, d).",
                [("input", x.describe()), ("accepted", "rank 3: (batch, seq, d)")],
                built_at=format_site(user_site()),
                hint="reshape a single sequence to (1, seq, d).",
            )
        )
    hint = f"feed (batch, seq, {d_model}) data, or build the layer with d_model={x.shape[2]}."
    check_features(owner, port, x, 2, d_model, "features", hint)


def multi_head_attention(
    x: Any,
    w_qkv: AnyTensor,
    b_qkv: AnyTensor,
    w_out: AnyTensor,
    b_out: AnyTensor,
    n_heads: int,
    mask: AnyTensor | None,
) -> AnyTensor:
    """Multi-head self-attention of (batch, seq, d) ``x``: projections ``x @ w_qkv + b_qkv``
    (d, 3d) for q, k, v in column blocks, softmax((q k^T) / sqrt(d/h) + mask) v per head, then
    ``@ w_out + b_out`` (d, d). The one computation of ``MultiHeadAttentionLayer`` and
    ``nn.MultiHeadAttention``."""
    batch, seq, d = x.shape
    h = n_heads
    dh = d // h
    qkv = x @ w_qkv + b_qkv  # one GEMM for the three projections

    def project(i: int, order: tuple[int, int, int, int]) -> Any:
        # block i of the projection (a view), split into heads: (batch, seq, h, dh)
        # permuted. The three blocks' cotangents are zero-padded blocks of qkv's, summed
        # as one concat (autodiff merges them), so the backward is one GEMM each way too.
        cols = ops.narrow(qkv, 2, i * d, d)
        heads: TensorLike[Any, Any, Dim4] = ops.reshape(cols, (batch, seq, h, dh))
        return ops.permute(heads, order)

    q = project(0, (0, 2, 1, 3))  # (batch, h, seq, dh)
    k_t = project(1, (0, 2, 3, 1))  # (batch, h, dh, seq)
    v = project(2, (0, 2, 1, 3))
    scores = (q * (1.0 / math.sqrt(dh))) @ k_t  # scaled on q: 1/seq of the scores' size
    if mask is not None:
        scores = scores + mask
    attn: Any = ops.softmax(scores)  # (batch, h, seq, seq)
    context: TensorLike[Any, Any, Dim4] = attn @ v  # (batch, h, seq, dh)
    merged = ops.reshape(ops.permute(context, (0, 2, 1, 3)), (batch, seq, d))
    out: AnyTensor = merged @ w_out + b_out
    return out


class ScaledDotProductAttention(Cell):
    """The attention of ``MultiHeadAttentionLayer``, parameters as inputs; forward only."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, QkvWeight, QkvBias, OutWeight, OutBias)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    # Defaults for the probe instance of Cell.output_types, which skips __init__.
    n_heads: int = 1
    causal: bool = False

    def __init__(self, name: str, n_heads: int = 1, causal: bool = False) -> None:
        super().__init__(name)
        self.n_heads = n_heads
        self.causal = causal
        self._masks: dict[tuple[int, type, type], AnyTensor] = {}

    @classmethod
    def probe_shape(cls, port: type, rank: int) -> tuple[int, ...]:
        """Probe shapes that fit together (one head of width 1) where the declared rank is the
        expected one; another rank probes as ones and fails in forward with its error."""
        shape = _PROBE_SHAPES[port]
        return shape if len(shape) == rank else (1,) * rank

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        x: Any = inputs[LayerInput]  # rank 3, checked below (the ops' overloads cannot know)
        w = inputs[QkvWeight]
        check_attention_input(self.name.rsplit("/", 1)[0], LayerInput, x, w.shape[0])
        mask = self._mask(x, inputs.get(AttentionMask))
        out = (w, inputs[QkvBias], inputs[OutWeight], inputs[OutBias])
        return {LayerOutput: multi_head_attention(x, *out, self.n_heads, mask)}

    def feed_forward(self, inputs: VarValues[Any, Any]) -> VarValues[LayerOutput, Any]:
        return self._feed_forward(inputs)

    def feed_backward(self, grads: VarValues[LayerOutput, Any]) -> VarValues[Any, Any]:
        return self._feed_backward(grads)

    def _mask(self, x: AnyTensor, given: AnyTensor | None) -> AnyTensor | None:
        masks = self.__dict__.setdefault("_masks", {})  # the probe instance skips __init__
        return attention_mask(self.name, x, given, self.causal, self.n_heads, masks)


def attention_mask(
    name: str,
    x: AnyTensor,
    given: AnyTensor | None,
    causal: bool,
    n_heads: int,
    masks: dict[tuple[int, type, type], AnyTensor],
) -> AnyTensor | None:
    """The additive mask, broadcastable to the scores (batch, h, seq, seq), or None: the
    causal one (kept in ``masks`` per length) plus ``given``, (seq, seq) or (batch, seq, seq)."""
    batch, seq, _ = x.shape
    causal_mask = None
    if causal:
        key = (seq, x.elem, x.device)
        causal_mask = masks.pop(key, None)
        if causal_mask is None:
            causal_mask = _causal_mask(x, seq)
            if len(masks) >= MASKS_KEPT:  # variable lengths: the least recent goes
                del masks[next(iter(masks))]
        masks[key] = causal_mask  # the most recently used last
    if given is None:
        return causal_mask
    if given.shape not in ((seq, seq), (batch, seq, seq)):
        raise ShapeError(
            message(
                f"cannot feed layer '{name}' forward: the attention mask has shape "
                f"{format_shape(given.shape)}.",
                [
                    ("input", x.describe()),
                    ("mask", given.describe()),
                    (
                        "accepted",
                        f"{format_shape((seq, seq))} or {format_shape((batch, seq, seq))}",
                    ),
                ],
                built_at=format_site(user_site()),
                hint="give one additive mask (seq, seq) for every sample, or one per sample.",
            )
        )
    if given.rank == 3:  # one per sample: repeated over the heads
        given = ops.tile(given, (batch, n_heads, seq, seq), new_dims=(1,))
    return given if causal_mask is None else given + causal_mask


class MaskedScaledDotProductAttention(ScaledDotProductAttention):
    """``ScaledDotProductAttention`` with an explicit mask input."""

    input_ports: ClassVar[tuple[type, ...]] = (
        *ScaledDotProductAttention.input_ports,
        AttentionMask,
    )


_MATRIX: AnyPolicyObject = PParamTypeIs(Matrix)
_VECTOR: AnyPolicyObject = PParamTypeIs(Vector)
_PARAMS = (("w_qkv", QkvWeight), ("b_qkv", QkvBias), ("w_out", OutWeight), ("b_out", OutBias))


def _topology(core: type[Layer[Any, Any]], masked: bool) -> ComposeTopology:
    inputs = [(LayerInput, LayerInput), *([(AttentionMask, AttentionMask)] if masked else [])]
    return param_op_topology(
        "attn", core, [(name, ParamSourceLayer, port) for name, port in _PARAMS], inputs
    )


def _sublayer_args(
    layer: ComposeKernel[Any, Any], name: str, d_model: int, n_heads: int, causal: bool
) -> SublayerArgs:
    """The parameters' shapes and the attention's heads, once the width is checked."""
    example = f"{type(layer).__name__}(name, d_model, n_heads), e.g. (name, 64, 4)."
    d_model, n_heads = check_sizes(name, {"d_model": d_model, "n_heads": n_heads}, example)
    given: object = causal  # callers without a type checker may pass anything
    if not isinstance(given, bool | np.bool_):
        raise LayerError(
            message(
                f"cannot create layer '{name}': causal must be True or False, got {causal!r}.",
                [("causal", repr(causal))],
                built_at=format_site(user_site()),
                hint="causal=True drops every key after its query.",
            )
        )
    if d_model % n_heads:
        raise LayerError(
            message(
                f"cannot create layer '{name}': {n_heads} heads do not divide the model "
                f"width {d_model}.",
                [("d_model", str(d_model)), ("n_heads", str(n_heads))],
                built_at=format_site(user_site()),
                hint="choose n_heads >= 1 dividing d_model (each head is d_model / n_heads wide).",
            )
        )
    return (
        layer.create_sublayers()
        .set("w_qkv", d_model, 3 * d_model)
        .set("b_qkv", 3 * d_model)
        .set("w_out", d_model, d_model)
        .set("b_out", d_model)
        .set("attn", n_heads, causal)
    )


class MultiHeadAttentionLayer(ComposeKernel[LayerInput, LayerOutput, Dim3, Dim3, Decl]):
    """Multi-head self-attention; ``MultiHeadAttentionLayer(name, d_model, n_heads, *,
    causal=False)``, input (batch, seq, d_model). See the module docstring."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {
        "w_qkv": (_MATRIX,),
        "b_qkv": (_VECTOR,),
        "w_out": (_MATRIX,),
        "b_out": (_VECTOR,),
    }
    topology = _topology(ScaledDotProductAttention, masked=False)

    def __init__(self, name: str, d_model: int, n_heads: int, *, causal: bool = False) -> None:
        self.d_model, self.n_heads, self.causal = d_model, n_heads, causal
        super().__init__(name, _sublayer_args(self, name, d_model, n_heads, causal))


# A (batch, seq, d) input or a (seq, seq) / (batch, seq, seq) mask.
_InputOrMask = TensorLike[FE, Dv, Dim3] | TensorLike[FE, Dv, Dim2]


class MaskedMultiHeadAttentionLayer(
    # Input ranks Any here: feed_forward below gives the rank set (a union, one value type).
    ComposeKernel[LayerInput | AttentionMask, LayerOutput, Any, Dim3, Decl]
):
    """``MultiHeadAttentionLayer`` with an explicit additive mask at ``AttentionMask``."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, AttentionMask)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    sublayer_policies = MultiHeadAttentionLayer.sublayer_policies
    topology = _topology(MaskedScaledDotProductAttention, masked=True)

    def __init__(self, name: str, d_model: int, n_heads: int, *, causal: bool = False) -> None:
        self.d_model, self.n_heads, self.causal = d_model, n_heads, causal
        super().__init__(name, _sublayer_args(self, name, d_model, n_heads, causal))

    # Own signature: one value type for both ports, so the rank set {3 (input), 2 or 3 (mask)}
    # is a union; a mask of another rank is a static error, as it is one at run time.
    def feed_forward(
        self, inputs: VarValues[LayerInput | AttentionMask, _InputOrMask[FE, Dv]]
    ) -> VarValues[LayerOutput, TensorLike[FE, Dv, Dim3]]:
        """``LayerOutput`` (batch, seq, d_model), from ``LayerInput`` and ``AttentionMask``."""
        return self._feed_forward(inputs)

    def feed_backward(
        self, grads: VarValues[LayerOutput, TensorLike[FE, Dv, Dim3]]
    ) -> VarValues[LayerInput | AttentionMask, _InputOrMask[FE, Dv]]:
        """The gradients of the input ports (with ``PFeedbackOutput``)."""
        return self._feed_backward(grads)
