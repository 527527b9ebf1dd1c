"""GradPolicy: whether a layer updates its parameters and outputs input gradients.

MetaNN ``layers/facilities/policies.h``. A training layer with ``PUpdate`` collects gradients
for its parameters; one with ``PFeedbackOutput`` returns gradients for its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .major import PolicyMajor
from .objects import PolicyObject, PolicyTemplate

__all__ = [
    "GradPolicy",
    "PFeedbackNoOutput",
    "PFeedbackOutput",
    "PFeedbackOutputIs",
    "PNoUpdate",
    "PUpdate",
    "PUpdateIs",
]


@dataclass(frozen=True)
class GradPolicy(PolicyMajor):
    """Gradient behaviour of a layer.

    Attributes:
        is_update: the layer's parameters are trained (gradients are collected).
        is_feedback_output: ``feed_backward`` returns gradients for the layer's inputs.
    """

    is_update: bool = False
    is_feedback_output: bool = False


# Declared one by one (like policies/layer_structure.py): each object's precise type names
# its minor as a Literal, which a shared factory function would widen to str.
_IsUpdate: TypeAlias = PolicyObject[GradPolicy, Literal["is_update"], bool]
_IsFeedbackOutput: TypeAlias = PolicyObject[GradPolicy, Literal["is_feedback_output"], bool]

PUpdate: _IsUpdate = PolicyObject(GradPolicy, "is_update", True, name="PUpdate")
PNoUpdate: _IsUpdate = PolicyObject(GradPolicy, "is_update", False, name="PNoUpdate")
PUpdateIs: PolicyTemplate[GradPolicy, Literal["is_update"], bool] = PolicyTemplate(
    GradPolicy, "is_update", name="PUpdateIs"
)
PFeedbackOutput: _IsFeedbackOutput = PolicyObject(
    GradPolicy, "is_feedback_output", True, name="PFeedbackOutput"
)
PFeedbackNoOutput: _IsFeedbackOutput = PolicyObject(
    GradPolicy, "is_feedback_output", False, name="PFeedbackNoOutput"
)
PFeedbackOutputIs: PolicyTemplate[GradPolicy, Literal["is_feedback_output"], bool] = PolicyTemplate(
    GradPolicy, "is_feedback_output", name="PFeedbackOutputIs"
)
