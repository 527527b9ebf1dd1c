"""A mypy plugin that checks typed_nn policies statically.

Plain typing cannot say "no two arguments share a minor category", so this plugin does. Enable
it in ``mypy.ini``::

    [mypy]
    plugins = typed_nn.mypy_plugin

What it checks, all from static types (a policy object's type is
``PolicyObject[Major, Literal["minor"], Value]``):

* ``PolicyContainer(...)`` / ``SubPolicyContainer(name, ...)`` with two objects of one
  (major, minor) - error code ``policy-conflict`` (the run-time check raises
  ``PolicyConflictError`` for the same call);
* ``PolicyObject(Major, "minor", value)``, ``PolicyTemplate(Major, "minor")`` and
  ``VariadicPolicyTemplate(Major, "minor")`` naming a minor the major lacks, or a value that
  does not fit the minor's declared type - error code ``policy-minor``.

It also makes those three constructors infer ``Literal["minor"]`` (and, for templates, the
value type from the major's field), so ``PNesterov = PolicyObject(OptimPolicy, "nesterov",
True)`` needs no annotation for its conflicts to be found.
"""

from __future__ import annotations

from collections.abc import Callable

# `import mypy.plugin` goes first (isort puts plain imports before from-imports): it loads
# mypy's modules in the order they expect; importing mypy.maptype first hits an import cycle.
import mypy.plugin
from mypy.errorcodes import ErrorCode
from mypy.maptype import map_instance_to_supertype
from mypy.messages import format_type
from mypy.nodes import ARG_POS, TypeInfo, Var
from mypy.subtypes import is_subtype
from mypy.types import (
    FunctionLike,
    Instance,
    LiteralType,
    ProperType,
    TupleType,
    Type,
    TypeType,
    UninhabitedType,
    get_proper_type,
)

__all__ = ["POLICY_CONFLICT", "POLICY_MINOR", "PolicyPlugin", "plugin"]

POLICY_CONFLICT = ErrorCode(
    "policy-conflict", "Two policy objects in one container set one (major, minor)", "typed_nn"
)
POLICY_MINOR = ErrorCode(
    "policy-minor",
    "A policy names a minor its major lacks, or a value of the wrong type",
    "typed_nn",
)

_OBJECT = "typed_nn.policies.objects.PolicyObject"
_MAJOR_BASE = "typed_nn.policies.major.PolicyMajor"
_TEMPLATES = (
    "typed_nn.policies.objects.PolicyTemplate",
    "typed_nn.policies.objects.VariadicPolicyTemplate",
)
_CONTAINERS = (
    "typed_nn.policies.container.PolicyContainer",
    "typed_nn.policies.container.SubPolicyContainer",
)


def _literal_str(typ: Type) -> str | None:
    """The string of a ``Literal["x"]`` type (or of a str inferred from a literal)."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and proper.last_known_value is not None:
        proper = proper.last_known_value
    if isinstance(proper, LiteralType) and isinstance(proper.value, str):
        return proper.value
    return None


def _policy_key(typ: Type) -> tuple[str, str] | None:
    """(major, minor) of a policy object's static type; None if not one or minor unknown."""
    proper = get_proper_type(typ)
    if not isinstance(proper, Instance):
        return None
    base = next((info for info in proper.type.mro if info.fullname == _OBJECT), None)
    if base is None:
        return None
    major, minor, _ = map_instance_to_supertype(proper, base).args
    major_type = get_proper_type(major)
    name = _literal_str(minor)
    if not isinstance(major_type, Instance) or name is None:
        return None
    if major_type.type.fullname == _MAJOR_BASE:  # the major is not known statically
        return None
    return (major_type.type.fullname, name)


def _check_container(ctx: mypy.plugin.FunctionContext) -> Type:
    """Report every argument whose (major, minor) an earlier argument already set."""
    seen: dict[tuple[str, str], int] = {}
    position = 0
    for types, kinds, exprs in zip(ctx.arg_types, ctx.arg_kinds, ctx.args, strict=True):
        for typ, kind, expr in zip(types, kinds, exprs, strict=True):
            position += 1
            key = _policy_key(typ) if kind == ARG_POS else None
            if key is None:
                continue
            if key in seen:
                major = key[0].rsplit(".", 1)[-1]
                ctx.api.fail(
                    f"Policy conflict: {major}.{key[1]} is set by argument {seen[key]} "
                    f"and argument {position}; keep one of them",
                    expr,
                    code=POLICY_CONFLICT,
                )
            else:
                seen[key] = position
    return ctx.default_return_type


def _major_info(typ: Type) -> TypeInfo | None:
    """The class a ``Major`` argument names, if it is a concrete (dataclass) policy major."""
    proper = get_proper_type(typ)
    info: TypeInfo | None = None
    if isinstance(proper, FunctionLike) and proper.is_type_obj():
        info = proper.type_object()
    elif isinstance(proper, TypeType) and isinstance(proper.item, Instance):
        info = proper.item.type
    if info is None or "dataclass" not in info.metadata or info.fullname == _MAJOR_BASE:
        return None
    return info


def _minor_type(ctx: mypy.plugin.FunctionContext, major: TypeInfo, minor: str) -> ProperType | None:
    """The declared type of ``major.minor``; reports ``policy-minor`` if there is no such field."""
    names = [str(field["name"]) for field in major.metadata["dataclass"].get("attributes", [])]
    node = major.get(minor)
    if minor in names and node is not None and isinstance(node.node, Var) and node.node.type:
        return get_proper_type(node.node.type)
    ctx.api.fail(
        f'Policy major "{major.name}" has no minor "{minor}" '
        f"(its minors: {', '.join(names) or 'none'})",
        ctx.context,
        code=POLICY_MINOR,
    )
    return None


def _refine_maker(ctx: mypy.plugin.FunctionContext) -> Type:
    """Check a policy object/template constructor and infer ``Literal`` minor (and value)."""
    result = get_proper_type(ctx.default_return_type)
    args = [arg[0] if len(arg) == 1 else None for arg in ctx.arg_types[:3]]
    if not (isinstance(result, Instance) and len(result.args) == 3 and len(args) > 1):
        return ctx.default_return_type
    info = _major_info(args[0]) if args[0] is not None else None
    minor = _literal_str(args[1]) if args[1] is not None else None
    if info is None or minor is None:
        return ctx.default_return_type
    declared = _minor_type(ctx, info, minor)
    if declared is None:
        return ctx.default_return_type
    major = Instance(info, [])
    literal = LiteralType(minor, ctx.api.named_generic_type("builtins.str", []))
    value = result.args[2]
    if result.type.fullname == _OBJECT and len(args) > 2 and args[2] is not None:
        value = args[2]
        if not is_subtype(value, declared):
            ctx.api.fail(
                f"Policy value of type {format_type(value, ctx.api.options)} does not fit "
                f"{info.name}.{minor} (declared {format_type(declared, ctx.api.options)})",
                ctx.args[2][0],
                code=POLICY_MINOR,
            )
        value = declared
    elif isinstance(get_proper_type(value), UninhabitedType):
        value = _template_value(result.type.fullname, declared)
    return result.copy_modified(args=[major, literal, value])


def _template_value(template: str, declared: ProperType) -> Type:
    """The value type a template takes, read from its minor's declared type."""
    if template.endswith("VariadicPolicyTemplate"):
        if isinstance(declared, Instance) and declared.args:
            return declared.args[0]
        if isinstance(declared, TupleType):
            return declared.partial_fallback.args[0]
    return declared


class PolicyPlugin(mypy.plugin.Plugin):
    """Hooks the policy constructors; everything else is left to mypy."""

    def get_function_hook(
        self, fullname: str
    ) -> Callable[[mypy.plugin.FunctionContext], Type] | None:
        if fullname in _CONTAINERS:
            return _check_container
        if fullname == _OBJECT or fullname in _TEMPLATES:
            return _refine_maker
        return None


def plugin(version: str) -> type[mypy.plugin.Plugin]:
    """The entry point mypy calls (``plugins = typed_nn.mypy_plugin``)."""
    return PolicyPlugin
