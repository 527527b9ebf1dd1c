"""Reading policies: the resolved major (MetaNN ``PolicySelect``) and explicit-setting tests."""

from __future__ import annotations

from .container import PolicyContainer, check_container
from .major import MajorT, PolicyMajor, minor_annotation, minor_defaults

__all__ = ["has_policy", "policy_select"]


def policy_select(major: type[MajorT], policies: PolicyContainer) -> MajorT:
    """An instance of ``major`` with every minor resolved: the object's value, else the default.

    Only the plain objects of ``policies`` count (sub-containers are ignored, as MetaNN layers
    select after ``PlainPolicy``); objects of other majors are ignored. The container already
    guarantees at most one object per minor, so the order of objects does not matter.

    Example: ``policy_select(GradPolicy, PolicyContainer(PUpdate)).is_update`` is ``True``
    and its ``is_feedback_output`` is the default ``False``.
    """
    check_container(policies, "policy_select")
    values = minor_defaults(major)
    for obj in policies.objects:
        if obj.major is major:
            values[obj.minor] = obj.value
    return major(**values)


def has_policy(policies: PolicyContainer, major: type[PolicyMajor], minor: str) -> bool:
    """Whether a plain object of ``policies`` sets ``major.minor`` (MetaNN ``HasNonTrivialPolicy``).

    Layers use it for minors that must be given explicitly, e.g. ``ParamPolicy.param_type``.
    Raises PolicyError if ``major`` has no such minor.
    """
    check_container(policies, "has_policy")
    shown = getattr(major, "__qualname__", repr(major))
    minor_annotation(major, minor, policy=f"query has_policy({shown}, {minor!r})")
    return any(obj.key == (major, minor) for obj in policies.objects)
