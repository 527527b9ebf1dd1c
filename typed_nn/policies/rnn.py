"""RnnPolicy: which input ports a recurrent layer reads as sequences, and BPTT.

MetaNN ``layers/recurrent/recurrent_layer.h``. MetaNN's ``SeqIdCont`` has no default: a
recurrent layer must be told its sequence ports. Here the default is ``()`` and the recurrent
layer reports it missing (``has_policy(c, RnnPolicy, "seq_ids")``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from typed_nn.errors import PolicyError, message

from .annotations import show_value
from .major import PolicyMajor
from .objects import PolicyObject, VariadicPolicyTemplate
from .report import built_at

__all__ = ["PDisableBptt", "PEnableBptt", "PSeqIDsAre", "RnnPolicy", "SeqID"]


@dataclass(frozen=True)
class SeqID:
    """An input port read as a sequence, and the dim of its data that indexes time.

    Args:
        port: the port's key class (``LayerInput``, ...).
        dim: the sequence dim of the data fed to that port (0 = first).
    """

    port: type
    dim: int = 0

    def __post_init__(self) -> None:
        port: object = self.port
        dim: object = self.dim
        dim_ok = isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0
        if isinstance(port, type) and dim_ok:
            return
        raise PolicyError(
            message(
                "cannot declare SeqID: it takes a port key class and a dim >= 0.",
                [
                    ("declared", "SeqID(port: type, dim: int >= 0)"),
                    ("received", f"SeqID({show_value(port)}, {show_value(dim)})"),
                ],
                built_at=built_at(),
                hint="name the port by its key class, e.g. SeqID(LayerInput, 0).",
            )
        )


@dataclass(frozen=True)
class RnnPolicy(PolicyMajor):
    """Recurrent-layer choices.

    Attributes:
        seq_ids: the sequence ports; ``()`` means not given, which recurrent layers reject.
        use_bptt: backpropagate through time (else each step's gradient stops at the step).
    """

    seq_ids: tuple[SeqID, ...] = ()
    use_bptt: bool = True


_UseBptt: TypeAlias = PolicyObject[RnnPolicy, Literal["use_bptt"], bool]

PSeqIDsAre: VariadicPolicyTemplate[RnnPolicy, Literal["seq_ids"], SeqID] = VariadicPolicyTemplate(
    RnnPolicy, "seq_ids", name="PSeqIDsAre"
)
"""Variadic: ``PSeqIDsAre(SeqID(LayerInput, 0), SeqID(Hidden, 0))``."""
PEnableBptt: _UseBptt = PolicyObject(RnnPolicy, "use_bptt", True, name="PEnableBptt")
PDisableBptt: _UseBptt = PolicyObject(RnnPolicy, "use_bptt", False, name="PDisableBptt")
