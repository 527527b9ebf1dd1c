"""Policy containers: a layer's policies, and policies scoped to a named sublayer.

``PolicyContainer(PUpdate, SubPolicyContainer("weight", PNoUpdate))`` says "update the
parameters, except in the sublayer named ``weight``". Building a container checks MetaNN's
conflict rule eagerly (MetaNN checks it lazily in ``PolicySelect``): two objects of one
(major, minor) - whatever their values - raise :class:`PolicyConflictError`, both among the
plain objects and among the concatenated contents of all sub-containers of one name. Order
never matters: containers with the same content in another order are equal and hash alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeAlias

from typed_nn.errors import PolicyConflictError, PolicyError, message

from .annotations import show_value
from .major import PolicyMajor
from .objects import PolicyObject
from .report import built_at

__all__ = [
    "AnyPolicyObject",
    "PolicyContainer",
    "PolicyItem",
    "SubPolicyContainer",
    "check_container",
]

AnyPolicyObject: TypeAlias = PolicyObject[PolicyMajor, str, object]
"""Any policy object, whatever its major, minor and value."""

_Key: TypeAlias = tuple[frozenset[object], frozenset[object]]


def _check_item(item: object, where: str) -> None:
    """Raise a PolicyError unless ``item`` may sit in a container."""
    if isinstance(item, PolicyObject | SubPolicyContainer):
        return
    if isinstance(item, PolicyContainer):
        hint = "unpack its items: PolicyContainer(*container.items, ...)."
    elif callable(item) and hasattr(item, "major"):
        hint = f"call the template with a value, e.g. {show_value(item)}(...)."
    else:
        hint = "pass policy objects such as PUpdate or PModifyDimNumIs(2)."
    raise PolicyError(
        message(
            f"cannot build {where}: {show_value(item)} is not a policy object.",
            [("received", f"{show_value(item)} ({type(item).__qualname__})")],
            built_at=built_at(),
            hint=hint,
        )
    )


def _conflict(first: AnyPolicyObject, second: AnyPolicyObject, where: str) -> PolicyConflictError:
    """The error for two objects of one (major, minor) in ``where``."""
    major, minor = first.major.__qualname__, first.minor
    return PolicyConflictError(
        message(
            f"cannot build {where}: two policies set {major}.{minor}.",
            [("first", first.describe()), ("second", second.describe())],
            built_at=built_at(),
            hint=f"keep one of them; to set {minor} for one sublayer only, "
            f'put it in SubPolicyContainer("<sublayer>", {second!r}).',
        )
    )


def _check_content(items: Sequence[PolicyItem], where: str) -> _Key:
    """Check conflicts among ``items`` (and per sublayer name); return the order-free key."""
    seen: dict[tuple[type[PolicyMajor], str], AnyPolicyObject] = {}
    scoped: dict[str, list[PolicyItem]] = {}
    for item in items:
        _check_item(item, where)
        if isinstance(item, SubPolicyContainer):
            scoped.setdefault(item.name, []).extend(item.items)
        elif item.key in seen:
            raise _conflict(seen[item.key], item, where)
        else:
            seen[item.key] = item
    subs = frozenset(
        (name, _check_content(content, f"sublayer {name!r} of {where}"))
        for name, content in scoped.items()
    )
    return (frozenset(seen.values()), subs)


def _show(items: Sequence[PolicyItem]) -> str:
    return ", ".join(repr(i) for i in items)


class SubPolicyContainer:
    """Policies that apply to the sublayer named ``name`` only (nestable).

    Args:
        name: the sublayer's name in its composite's topology.
        *items: policy objects and further SubPolicyContainers (for its own sublayers).
    """

    __slots__ = ("_items", "_key", "_name")

    def __init__(self, name: str, *items: PolicyItem) -> None:
        given: object = name  # callers without a type checker may pass anything
        if not isinstance(given, str) or not given:
            raise PolicyError(
                message(
                    "cannot build SubPolicyContainer: the sublayer name must be a non-empty str.",
                    [("received", f"{name!r} ({type(name).__qualname__})")],
                    built_at=built_at(),
                    hint='name the sublayer as its topology does: SubPolicyContainer("fc1", ...).',
                )
            )
        self._name = name
        self._items = items
        self._key = _check_content(items, f"SubPolicyContainer({name!r})")

    @property
    def name(self) -> str:
        """The sublayer these policies apply to."""
        return self._name

    @property
    def items(self) -> tuple[PolicyItem, ...]:
        """The policy objects and nested sub-containers, in the order given."""
        return self._items

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SubPolicyContainer):
            return NotImplemented
        return (self._name, self._key) == (other.name, other._key)

    def __hash__(self) -> int:
        return hash((self._name, self._key))

    def __repr__(self) -> str:
        inner = _show(self._items)
        return f"SubPolicyContainer({self._name!r}{', ' if inner else ''}{inner})"


PolicyItem: TypeAlias = AnyPolicyObject | SubPolicyContainer
"""What a container holds: a policy object or a sub-container."""


class PolicyContainer:
    """The policies of a layer (or op): objects in any order, conflicts rejected here.

    Args:
        *items: policy objects and SubPolicyContainers.

    Raises:
        PolicyConflictError: two objects set one (major, minor), whatever their values.
        PolicyError: an item that is not a policy object (a template not called, ...).
    """

    __slots__ = ("_items", "_key")

    def __init__(self, *items: PolicyItem) -> None:
        self._items = items
        self._key = _check_content(items, "PolicyContainer")

    @property
    def items(self) -> tuple[PolicyItem, ...]:
        """The policy objects and sub-containers, in the order given."""
        return self._items

    @property
    def objects(self) -> tuple[AnyPolicyObject, ...]:
        """The plain policy objects (sub-containers left out), in the order given."""
        return tuple(i for i in self._items if isinstance(i, PolicyObject))

    @property
    def subs(self) -> tuple[SubPolicyContainer, ...]:
        """The sub-containers, in the order given."""
        return tuple(i for i in self._items if isinstance(i, SubPolicyContainer))

    def __iter__(self) -> Iterator[PolicyItem]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolicyContainer):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"PolicyContainer({_show(self._items)})"


def check_container(policies: object, owner: str) -> None:
    """``policies`` must be a ``PolicyContainer`` (what ``owner`` reads): a ``PolicyError``
    otherwise."""
    if not isinstance(policies, PolicyContainer):
        raise PolicyError(
            message(
                f"{owner} needs a PolicyContainer.",
                [("received", f"{show_value(policies)} ({type(policies).__name__})")],
                built_at=built_at(),
                hint="wrap the policy objects: PolicyContainer(PUpdate, PFeedbackOutput).",
            )
        )
