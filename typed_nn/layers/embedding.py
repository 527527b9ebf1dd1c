"""``EmbeddingLayer``: rows of a trainable (num, dim) table picked by integer indices
(PyTorch's ``nn.Embedding``; parameter ``name/weight`` (num, dim), the same layout).

``EmbeddingLayer(name, num_embeddings, dim)``: ``LayerInput`` Int64 indices of any shape
(declared e.g. ``tn.Tensor[tn.Int64, tn.CPU, tn.Dim2]`` for (batch, seq)) -> ``LayerOutput``
``indices.shape + (dim,)`` of the weight's element. The weight's gradient adds the output
gradient's rows at their indices, so a repeated index accumulates; the indices get none.
An index outside ``0 .. num_embeddings - 1`` is an ``IndexRangeError``: at feed time when
the indices are a tensor, else when they are evaluated (a compiled step checks each batch).
A composite of a ``ParamSourceLayer`` (policies as for ``LinearLayer``) and ``EmbeddingOp``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, overload

from .. import ops, tracing
from ..data.tensor import AnyTensor, Matrix, Tensor, TensorLike
from ..errors import ElemTypeError, IndexRangeError, message
from ..ops.node import format_site, user_site
from ..policies import AnyPolicyObject, PParamTypeIs
from ..tags import CPU, D, Dim0, Dim1, Dim2, Dim3, Dim4, Dim5, Dim6, Dv, Int64, IntTag
from .compose import ComposeKernel
from .in_map import port_type, tensor_type
from .keys import LayerInput, LayerOutput, PortKey
from .protocol import Layer
from .source_layers import ParamSourceLayer, check_sizes
from .topology import (
    param_op_topology,
)
from .var_type_dict import VarValues

__all__ = ["EmbeddingLayer", "EmbeddingOp", "EmbeddingWeight", "embedding_lookup"]


class EmbeddingWeight(PortKey):
    """EmbeddingOp's table (num, dim)."""


def _not_indices(layer: str, x: object) -> ElemTypeError:
    shown = x.describe() if isinstance(x, TensorLike) else f"{type(x).__name__} {x!r}"
    return ElemTypeError(
        message(
            f"cannot feed layer '{layer}': the indices are not an integer tensor.",
            [("layer", layer), ("received", shown), ("accepted", "Int64 data")],
            built_at=format_site(user_site()),
            hint="pass row numbers: tn.tensor(ids, tn.Int64, tn.CPU, dim).",
        )
    )


def embedding_lookup(owner: str, weight: AnyTensor, idx: object) -> AnyTensor:
    """The rows of ``weight`` (num, dim) at the integer indices ``idx``, checked first
    (``owner`` names the layer): the one forward of ``EmbeddingLayer`` and ``nn.Embedding``.
    Indices that are a principal tensor are range-checked now; lazy ones when evaluated."""
    if not isinstance(idx, TensorLike) or not issubclass(idx.elem, IntTag):
        raise _not_indices(owner, idx)
    if type(idx) is Tensor and tracing.state.trace is None and idx.size and idx.device is CPU:
        # a principal tensor on the host: check its values now, naming the layer (on the GPU
        # the lookup checks them without waiting for the device: out of range is a NaN row)
        values = idx.numpy()
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= weight.shape[0]:
            raise IndexRangeError(
                message(
                    f"cannot feed layer '{owner}': index {low if low < 0 else high} is out "
                    f"of range for {weight.shape[0]} embeddings.",
                    [("layer", owner), ("indices", f"{idx.describe()}, min {low}, max {high}")],
                    built_at=format_site(user_site()),
                    hint=f"indices select rows 0 .. {weight.shape[0] - 1}.",
                )
            )
    rows: AnyTensor = ops.embedding(weight, idx)
    return rows


class EmbeddingOp(Layer[LayerInput | EmbeddingWeight, LayerOutput]):
    """``embedding(weight, indices)``; EmbeddingLayer's sublayer."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput, EmbeddingWeight)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)

    @classmethod
    def output_types(cls, input_types: Mapping[type, object] | None = None) -> dict[type, object]:
        given = input_types if input_types is not None else cls.input_map
        if given is None:
            return super().output_types(None)  # raises: an inference layer needs input types
        idx, w = port_type(given[LayerInput]), port_type(given[EmbeddingWeight])
        if idx.elem is None or not issubclass(idx.elem, IntTag):
            raise _not_indices(cls.__name__, f"declared {given[LayerInput]!r}")
        assert w.elem is not None
        assert w.device is not None
        assert idx.rank is not None
        return {LayerOutput: tensor_type(w.elem, w.device, idx.rank + 1)}

    def forward(self, inputs: dict[type, Any]) -> dict[type, AnyTensor]:
        owner = self.name.rsplit("/", 1)[0]
        return {LayerOutput: embedding_lookup(owner, inputs[EmbeddingWeight], inputs[LayerInput])}

    def feed_forward(self, inputs: VarValues[Any, Any]) -> VarValues[LayerOutput, Any]:
        """``LayerOutput`` = the picked rows (lazy)."""
        return self._feed_forward(inputs)

    def feed_backward(self, grads: VarValues[LayerOutput, Any]) -> VarValues[Any, Any]:
        """The table's gradient (derived); the indices get none."""
        return self._feed_backward(grads)


_TABLE: AnyPolicyObject = PParamTypeIs(Matrix)


class EmbeddingLayer(ComposeKernel[LayerInput, LayerOutput]):
    """A trainable table of ``num_embeddings`` rows of width ``dim`` (see the module)."""

    input_ports: ClassVar[tuple[type, ...]] = (LayerInput,)
    output_ports: ClassVar[tuple[type, ...]] = (LayerOutput,)
    sublayer_policies: ClassVar[Mapping[str, tuple[AnyPolicyObject, ...]]] = {"weight": (_TABLE,)}
    topology = param_op_topology(
        "lookup", EmbeddingOp, [("weight", ParamSourceLayer, EmbeddingWeight)]
    )

    def __init__(self, name: str, num_embeddings: int, dim: int) -> None:
        sizes = {"num_embeddings": num_embeddings, "dim": dim}
        example = "EmbeddingLayer(name, num_embeddings, dim), e.g. (name, 1000, 32)."
        num_embeddings, dim = check_sizes(name, sizes, example)
        super().__init__(name, self.create_sublayers().set("weight", num_embeddings, dim))
        self.num_embeddings, self.dim = num_embeddings, dim

    # ComposeKernel types a composite's ports as float data of one element; this one takes
    # integer indices in and gives float rows out, so it keeps its own signatures: one rank
    # more than the indices (an overload per rank); the element is the table's, which a
    # policy (PElemIs) sets, so it stays Any.
    @overload  # type: ignore[override]
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, Dim0]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Dim1]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, Dim1]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Dim2]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, Dim2]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Dim3]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, Dim3]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Dim4]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, Dim4]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Dim5]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, Dim5]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Dim6]]: ...
    @overload
    def feed_forward(
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, D]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Any]]: ...
    def feed_forward(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, inputs: VarValues[LayerInput, TensorLike[Int64, Dv, Any]]
    ) -> VarValues[LayerOutput, TensorLike[Any, Dv, Any]]:
        """``LayerOutput`` = the rows of the indices (lazy), ``indices.shape + (dim,)``."""
        return self._feed_forward(inputs)

    def feed_backward(  # type: ignore[override]
        self, grads: VarValues[LayerOutput, TensorLike[Any, Dv, Any]]
    ) -> VarValues[LayerInput, TensorLike[Int64, Dv, D]]:
        """Nothing for the indices; the table keeps its gradient (with ``PUpdate``)."""
        return self._feed_backward(grads)

    def __repr__(self) -> str:
        return f"EmbeddingLayer({self.name!r}, {self.num_embeddings}, {self.dim})"
