"""How a composite layer hands its policies to its sublayers (METANN.md section 4.4).

* :func:`plain_policies` keeps the objects, dropping every sub-container (MetaNN
  ``PlainPolicy``); layers select from this.
* :func:`sub_policies` is MetaNN's ``SubPolicyPicker``: the contents of every
  ``SubPolicyContainer(name, ...)``, then every plain object of the parent whose
  (major, minor) the sublayer does not set itself. The sublayer's own policy wins.
* :func:`change_policy` replaces one (major, minor): MetaNN ``ChangePolicy``.
"""

from __future__ import annotations

from typed_nn.errors import PolicyError, message

from .container import (
    AnyPolicyObject,
    PolicyContainer,
    PolicyItem,
    SubPolicyContainer,
    check_container,
)

__all__ = ["change_policy", "plain_policies", "sub_policies"]


def plain_policies(policies: PolicyContainer) -> PolicyContainer:
    """The plain policy objects of ``policies``, every sub-container dropped.

    Example: ``plain_policies(PolicyContainer(PUpdate, SubPolicyContainer("w", PNoUpdate)))``
    is ``PolicyContainer(PUpdate)``.
    """
    check_container(policies, "plain_policies")
    return PolicyContainer(*policies.objects)


def sub_policies(policies: PolicyContainer, name: str) -> PolicyContainer:
    """The policies of the sublayer ``name``: its own objects win, the parent's others inherit.

    Args:
        policies: the composite layer's policies.
        name: the sublayer's name.

    Returns:
        The concatenated contents of every ``SubPolicyContainer(name, ...)`` in ``policies``
        (nested sub-containers kept, for the sublayer's own sublayers), followed by each plain
        object of ``policies`` whose (major, minor) the sublayer does not set. Sub-containers
        for other names are dropped.

    Example: with ``c = PolicyContainer(PUpdate, SubPolicyContainer("w", PNoUpdate))``,
    ``sub_policies(c, "w")`` is ``PolicyContainer(PNoUpdate)`` and ``sub_policies(c, "b")``
    is ``PolicyContainer(PUpdate)``.
    """
    check_container(policies, "sub_policies")
    given: object = name  # callers without a type checker may pass anything
    if not isinstance(given, str):
        raise PolicyError(
            message(
                "sub_policies needs the sublayer's name (a str).",
                [("received", repr(given)[:80])],
                hint="pass the name the composite gives the sublayer, e.g. 'fc1'.",
            )
        )
    own: list[PolicyItem] = [
        item for sub in policies.subs if sub.name == name for item in sub.items
    ]
    own_keys = {item.key for item in own if not isinstance(item, SubPolicyContainer)}
    inherited = [obj for obj in policies.objects if obj.key not in own_keys]
    return PolicyContainer(*own, *inherited)


def change_policy(new: AnyPolicyObject, policies: PolicyContainer) -> PolicyContainer:
    """``policies`` with every plain object of ``new``'s (major, minor) replaced by ``new``.

    Sub-containers are kept as they are; ``new`` goes last. Example:
    ``change_policy(PFeedbackOutput, PolicyContainer(PFeedbackNoOutput, PUpdate))`` is
    ``PolicyContainer(PUpdate, PFeedbackOutput)``.
    """
    check_container(policies, "change_policy")
    kept = [
        item
        for item in policies.items
        if isinstance(item, SubPolicyContainer) or item.key != new.key
    ]
    return PolicyContainer(*kept, new)
