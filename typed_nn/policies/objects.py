"""Policy objects (one minor fixed to one value) and templates (objects made from a value).

MetaNN declares ``PUpdate`` as a struct that overrides ``GradPolicy::IsUpdate``, and
``PModifyDimNumIs<2>`` as a template instance. Here both are :class:`PolicyObject` values::

    PUpdate = PolicyObject(GradPolicy, "is_update", True, name="PUpdate")
    PModifyDimNumIs = PolicyTemplate(DimPolicy, "modify_dim_num", name="PModifyDimNumIs")
    PModifyDimNumIs(2)          # PolicyObject for DimPolicy.modify_dim_num = 2

The static type ``PolicyObject[Major, Literal["minor"], Value]`` carries the (major, minor)
pair, which is what the mypy plugin compares to find conflicts. A minor the major lacks, or a
value that does not fit the minor's annotation, raises :class:`PolicyError` right here.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from typed_nn.errors import PolicyError, message

from .annotations import show_value
from .major import MajorT, PolicyMajor, check_value, minor_annotation
from .report import built_at

__all__ = ["PolicyObject", "PolicyTemplate", "VariadicPolicyTemplate"]

M_co = TypeVar("M_co", bound=PolicyMajor, covariant=True)
N_co = TypeVar("N_co", bound=str, covariant=True)
V_co = TypeVar("V_co", covariant=True)
N = TypeVar("N", bound=str)
V = TypeVar("V")


class PolicyObject(Generic[M_co, N_co, V_co]):
    """One minor category of one major fixed to one value (``PUpdate``, ``PKeepDim``, ...).

    Args:
        major: the policy major class, e.g. ``GradPolicy``.
        minor: the name of one of its fields, e.g. ``"is_update"``.
        value: the value it takes; must fit the field's annotation and be hashable.
        name: how the object prints (``PUpdate``); defaults to ``GradPolicy.is_update=True``.

    Objects are immutable and hashable; two are equal when major, minor and value are.
    """

    __slots__ = ("_major", "_minor", "_name", "_value")
    _major: type[M_co]
    _minor: N_co
    _value: V_co
    _name: str

    def __init__(
        self, major: type[M_co], minor: N_co, value: V_co, *, name: str | None = None
    ) -> None:
        label = name if name is not None else f"{major.__qualname__}.{minor}={show_value(value)}"
        check_value(major, minor, value, policy=label)
        try:
            hash(value)
        except TypeError:
            raise PolicyError(
                message(
                    f"cannot declare policy {label}: its value is not hashable.",
                    [("received", f"{value!r} ({type(value).__qualname__})")],
                    built_at=built_at(),
                    hint="use an immutable value (a tuple instead of a list, a frozen dataclass).",
                )
            ) from None
        fields = {"_major": major, "_minor": minor, "_value": value, "_name": label}
        for slot, item in fields.items():
            object.__setattr__(self, slot, item)

    @property
    def major(self) -> type[M_co]:
        """The policy major class this object belongs to."""
        return self._major

    @property
    def minor(self) -> N_co:
        """The minor category (a field name of the major) this object sets."""
        return self._minor

    @property
    def value(self) -> V_co:
        """The value the minor takes."""
        return self._value

    @property
    def name(self) -> str:
        """How the object prints: ``PUpdate``, ``PModifyDimNumIs(2)``."""
        return self._name

    @property
    def key(self) -> tuple[type[PolicyMajor], str]:
        """The (major, minor) pair; two objects with one key conflict in a container."""
        return (self._major, self._minor)

    def __setattr__(self, attr: str, value: object) -> None:
        raise AttributeError(f"policy objects are immutable; cannot set {attr!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolicyObject):
            return NotImplemented
        return (self._major, self._minor, self._value) == (other.major, other.minor, other.value)

    def __hash__(self) -> int:
        return hash((self._major, self._minor, self._value))

    def __repr__(self) -> str:
        return self._name

    def describe(self) -> str:
        """``PUpdate (GradPolicy.is_update = True)``: the name and what it sets."""
        where = f"{self._major.__qualname__}.{self._minor}"
        shown = show_value(self._value)
        if self._name == f"{where}={shown}":
            return f"{where} = {shown}"
        return f"{self._name} ({where} = {shown})"


class _Template(Generic[MajorT, N]):
    """What both template kinds share: the (major, minor) they make objects for, and a name."""

    __slots__ = ("_major", "_minor", "_name")

    def __init__(self, major: type[MajorT], minor: N, *, name: str | None = None) -> None:
        label = name if name is not None else f"{major.__qualname__}.{minor}"
        minor_annotation(major, minor, policy=f"template {label}")
        self._major = major
        self._minor = minor
        self._name = label

    @property
    def major(self) -> type[MajorT]:
        """The policy major class of the objects this template makes."""
        return self._major

    @property
    def minor(self) -> N:
        """The minor category the objects this template makes set."""
        return self._minor

    def __repr__(self) -> str:
        return self._name


class PolicyTemplate(_Template[MajorT, N], Generic[MajorT, N, V]):
    """Makes a :class:`PolicyObject` for one (major, minor) from a value: ``PUpdateIs(True)``.

    Args:
        major: the policy major class.
        minor: the name of one of its fields (checked now).
        name: how it prints; objects it makes print as ``name(value)``.
    """

    __slots__ = ()

    def __call__(self, value: V) -> PolicyObject[MajorT, N, V]:
        """The policy object setting the minor to ``value`` (checked against its annotation)."""
        return PolicyObject(
            self._major, self._minor, value, name=f"{self._name}({show_value(value)})"
        )


class VariadicPolicyTemplate(_Template[MajorT, N], Generic[MajorT, N, V]):
    """A template whose value is a tuple given as arguments: ``PDimArrayIs(1, 0)``.

    MetaNN's ``PDimArrayIs<1, 0>`` and ``PSeqIDsAre<SeqID<...>, ...>`` are variadic; so are
    these. ``PDimArrayIs(1, 0)`` sets ``DimPolicy.dim_array`` to the tuple ``(1, 0)``.
    """

    __slots__ = ()

    def __call__(self, *values: V) -> PolicyObject[MajorT, N, tuple[V, ...]]:
        """The policy object setting the minor to the tuple ``values``."""
        shown = ", ".join(show_value(v) for v in values)
        return PolicyObject(self._major, self._minor, values, name=f"{self._name}({shown})")
