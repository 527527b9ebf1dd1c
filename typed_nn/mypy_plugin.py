"""A mypy plugin that checks typed_nn policies statically.

Plain typing cannot say "no two arguments share a minor category", so this plugin does. Enable
it in ``mypy.ini``::

    [mypy]
    plugins = typed_nn.mypy_plugin

What it checks, all from static types (a policy object's type is
``PolicyObject[Major, Literal["minor"], Value]``):

* two policies of one (major, minor) given to one call - error code ``policy-conflict`` (the
  run-time check raises ``PolicyConflictError``, or ``ParamError`` for the fillers, for the same
  call). The calls checked: ``PolicyContainer(...)``, ``SubPolicyContainer(name, ...)``,
  ``make_train_layer`` / ``make_infer_layer`` (which also flatten ``PolicyContainer``
  arguments), ``MLP.build`` and the ``VarScaleFiller`` / ``XavierFiller`` constructors. It
  compares plain objects with each other and, per sublayer name, the contents of every
  ``SubPolicyContainer`` of that name; a sublayer setting what its parent sets is no conflict.
  Policies the callee sets itself count too: ``XavierFiller`` fixes the fan mode, and
  ``MLP.build`` puts ``PActFuncIs(activation)`` (and the initializers) into each ``fc{i}``;
* ``PolicyObject(Major, "minor", value)``, ``PolicyTemplate(Major, "minor")`` and
  ``VariadicPolicyTemplate(Major, "minor")`` naming a minor the major lacks, or a value that
  does not fit the minor's declared type - error code ``policy-minor``. This includes a
  ``bool`` where an ``int`` or ``float`` is declared (``PModifyDimNumIs(True)``): mypy counts
  bool as int, the run-time check does not.

It also makes those three constructors infer ``Literal["minor"]`` (and, for templates, the
value type from the major's field), so ``PNesterov = PolicyObject(OptimPolicy, "nesterov",
True)`` needs no annotation for its conflicts to be found.

How a container's contents are known: the static type of ``PolicyContainer(...)`` and
``SubPolicyContainer(...)`` carries what was given to it (the item types, their source text and
the sublayer name) as extra attributes of the instance type - attributes whose names contain a
space, so no source can read them. A variable keeps them (``c = PolicyContainer(PUpdate)``, then
``make_train_layer(L, m, c, PNoUpdate)`` is reported); a join of containers with different
contents, a parameter annotated ``PolicyContainer`` or anything built at run time carries
none, and is left to the run-time check. (Read in another scope - a function reading a module
global - a variable has the type of its first value: re-bound to other contents, it may report
a conflict its current value lacks; annotating it ``: PolicyContainer`` opts it out.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

# `import mypy.plugin` goes first (isort puts plain imports before from-imports): it loads
# mypy's modules in the order they expect; importing mypy.maptype first hits an import cycle.
import mypy.plugin
from mypy.erasetype import erase_typevars
from mypy.errorcodes import ErrorCode
from mypy.errors import ErrorInfo, Errors
from mypy.expandtype import expand_type, expand_type_by_instance, freshen_function_type_vars
from mypy.infer import ArgumentInferContext, infer_function_type_arguments
from mypy.maptype import map_instance_to_supertype
from mypy.messages import callable_name, format_type
from mypy.nodes import (
    ARG_POS,
    ARG_STAR,
    ArgKind,
    CallExpr,
    Context,
    Decorator,
    DictExpr,
    Expression,
    FloatExpr,
    FuncDef,
    IntExpr,
    LambdaExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    OverloadedFuncDef,
    RefExpr,
    StrExpr,
    SymbolTableNode,
    TupleExpr,
    TypeInfo,
    UnaryExpr,
    Var,
)
from mypy.subtypes import is_same_type, is_subtype
from mypy.typeops import bind_self
from mypy.types import (
    AnyType,
    CallableType,
    ExtraAttrs,
    FunctionLike,
    Instance,
    LiteralType,
    NoneType,
    ProperType,
    TupleType,
    Type,
    TypeOfAny,
    TypeType,
    TypeVarId,
    TypeVarType,
    UninhabitedType,
    UnionType,
    get_proper_type,
)

__all__ = [
    "INPUT_RANK",
    "POLICY_CONFLICT",
    "POLICY_MINOR",
    "TAG_MISMATCH",
    "PolicyPlugin",
    "plugin",
]

POLICY_CONFLICT = ErrorCode(
    "policy-conflict", "Two policy objects in one container set one (major, minor)", "typed_nn"
)
INPUT_RANK = ErrorCode(
    "input-rank", "A LayerInMap declares data of a rank the layer does not take", "typed_nn"
)
TAG_MISMATCH = ErrorCode(
    "tag-mismatch",
    "Tagged data whose element, device or rank a call's type parameter cannot take",
    "typed_nn",
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
_CONTAINER = "typed_nn.policies.container.PolicyContainer"
_SUB = "typed_nn.policies.container.SubPolicyContainer"
_MAKERS = (
    "typed_nn.layers.protocol.make_train_layer",
    "typed_nn.layers.protocol.make_infer_layer",
)
_MLP_BUILD = "typed_nn.layers.mlp.MLP.build"
_VAR_SCALE = "typed_nn.model.fillers.VarScaleFiller"
_XAVIER = "typed_nn.model.fillers.XavierFiller"
_PARAMS = ("items", "policies")  # the formal parameters that take policies
_NUMBERS = ("builtins.int", "builtins.float", "builtins.complex")  # bool is no number here

# Extra attributes of a container's static type; a space keeps them out of reach of source.
_CONTENT = "typed_nn policies"  # tuple[tuple[item type, Literal[source text]], ...]
_SUB_NAME = "typed_nn sublayer"  # Literal[name] of a SubPolicyContainer

_Key: TypeAlias = tuple[str, str]
_Ctx: TypeAlias = mypy.plugin.FunctionContext | mypy.plugin.MethodContext
_Hook: TypeAlias = Callable[[_Ctx], Type]
_Lookup: TypeAlias = Callable[[str], SymbolTableNode | None]


def _literal_str(typ: Type) -> str | None:
    """The string of a ``Literal["x"]`` type (or of a str inferred from a literal)."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and proper.last_known_value is not None:
        proper = proper.last_known_value
    if isinstance(proper, LiteralType) and isinstance(proper.value, str):
        return proper.value
    return None


def _policy_key(typ: Type) -> _Key | None:
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


def _minor_names(info: TypeInfo) -> list[str]:
    """The minors (dataclass fields) of a policy major, in declaration order."""
    return [str(field["name"]) for field in info.metadata["dataclass"].get("attributes", [])]


def _text(expr: Expression, limit: int = 60) -> str:
    """How an argument reads in the source, for messages: ``PModifyDimNumIs(2)``, ``c``."""
    if isinstance(expr, NameExpr):
        return expr.name
    if isinstance(expr, MemberExpr):
        return f"{_text(expr.expr)}.{expr.name}"
    if isinstance(expr, StrExpr):
        return f'"{expr.value}"'
    if isinstance(expr, IntExpr | FloatExpr):
        return str(expr.value)
    if isinstance(expr, UnaryExpr):
        return f"{expr.op}{_text(expr.expr)}"
    if isinstance(expr, ListExpr | TupleExpr):
        inner = ", ".join(_text(item) for item in expr.items)
        return f"[{inner}]" if isinstance(expr, ListExpr) else f"({inner})"
    if isinstance(expr, CallExpr):
        callee = _text(expr.callee)
        stars = {ARG_STAR: "*", ARG_POS: ""}
        args = [
            f"{stars.get(kind, '**')}{_text(arg)}" if name is None else f"{name}={_text(arg)}"
            for arg, kind, name in zip(expr.args, expr.arg_kinds, expr.arg_names, strict=True)
        ]
        full = f"{callee}({', '.join(args)})"
        return full if len(full) <= limit else f"{callee}(...)"
    return "..."


# --- what a call gives: policy items with where they came from -------------------------------


@dataclass(frozen=True)
class _Item:
    """One policy item: an object's (major, minor), or a sub-container's name and items."""

    text: str
    key: _Key | None = None
    sub: str | None = None
    children: tuple[_Item, ...] = ()


@dataclass(frozen=True)
class _Entry:
    """An item of one call and its origin: argument ``source`` (0: the callee itself)."""

    item: _Item
    source: int
    origin: str  # the argument's text, or for source 0 the callee's name
    context: Context


def _stored(typ: ProperType) -> list[tuple[Type, str]]:
    """The (type, text) pairs a container's static type carries; [] if it carries none."""
    if not (isinstance(typ, Instance) and typ.extra_attrs):
        return []
    content = get_proper_type(typ.extra_attrs.attrs.get(_CONTENT))
    if not isinstance(content, TupleType):
        return []
    pairs = []
    for pair in map(get_proper_type, content.items):
        if isinstance(pair, TupleType) and len(pair.items) == 2:
            text = _literal_str(pair.items[1])
            if text is not None:
                pairs.append((pair.items[0], text))
    return pairs


def _is(typ: ProperType, fullname: str) -> bool:
    return isinstance(typ, Instance) and typ.type.has_base(fullname)


def _items(typ: Type, text: str) -> list[_Item]:
    """The policy items a value of static type ``typ`` (written ``text``) stands for."""
    proper = get_proper_type(typ)
    key = _policy_key(proper)
    if key is not None:
        return [_Item(text, key=key)]
    if not isinstance(proper, Instance):
        return []
    if proper.type.has_base(_SUB):
        name = proper.extra_attrs and proper.extra_attrs.attrs.get(_SUB_NAME)
        sub = _literal_str(name) if name else None
        if sub is None:
            return []
        children = tuple(item for t, s in _stored(proper) for item in _items(t, s))
        return [_Item(text, sub=sub, children=children)]
    if proper.type.has_base(_MAJOR_BASE) and "dataclass" in proper.type.metadata:
        # A whole major instance (VarScaleFiller accepts one) sets every minor of it.
        major = proper.type.fullname
        return [_Item(text, key=(major, minor)) for minor in _minor_names(proper.type)]
    return []


def _values(typ: Type, kind: ArgKind, expr: Expression, flatten: bool) -> list[tuple[Type, str]]:
    """(type, text) of each value one actual argument passes: itself, each item of a ``*``
    tuple or container, or (``flatten``) each item of a container argument."""
    proper = get_proper_type(typ)
    if kind == ARG_POS:
        return _stored(proper) if flatten and _is(proper, _CONTAINER) else [(typ, _text(expr))]
    if kind == ARG_STAR and isinstance(proper, TupleType):
        parts = expr.items if isinstance(expr, TupleExpr | ListExpr) else []
        if len(parts) != len(proper.items):
            return [(t, f"{_text(expr)}[{i}]") for i, t in enumerate(proper.items)]
        return [(t, _text(part)) for t, part in zip(proper.items, parts, strict=True)]
    if kind == ARG_STAR and _is(proper, _CONTAINER):  # iterating a container gives its items
        return _stored(proper)
    return []


def _position(ctx: _Ctx, expr: Expression, fallback: int) -> int:
    """The 1-based position of ``expr`` among the call's arguments."""
    call = ctx.context
    if isinstance(call, CallExpr):
        for number, arg in enumerate(call.args, 1):
            if arg is expr:
                return number
    return fallback


def _entries(ctx: _Ctx, flatten: bool) -> list[_Entry]:
    """Every policy item given to the call through its policy parameters, in call order."""
    found: list[_Entry] = []
    fallback = 0
    for formal, types, kinds, exprs in zip(
        ctx.callee_arg_names, ctx.arg_types, ctx.arg_kinds, ctx.args, strict=True
    ):
        for typ, kind, expr in zip(types, kinds, exprs, strict=True):
            fallback += 1
            if formal not in _PARAMS:
                continue
            source = _position(ctx, expr, fallback)
            origin = ("*" if kind == ARG_STAR else "") + _text(expr)
            for value, text in _values(typ, kind, expr, flatten):
                found.extend(_Entry(item, source, origin, expr) for item in _items(value, text))
    return found


# --- conflicts --------------------------------------------------------------------------------


def _conflicts(entries: Sequence[_Entry], path: str = "") -> Iterator[tuple[_Entry, _Entry, str]]:
    """(earlier, later, sublayer path) for each entry whose (major, minor) another argument set.

    Two items from one argument were compared when that argument (a container) was built, so
    only items of different arguments are compared here - at the top level, and per sublayer
    name among the concatenated contents of all sub-containers of that name (as at run time).
    """
    seen: dict[_Key, list[_Entry]] = {}
    scoped: dict[str, list[_Entry]] = {}
    for entry in entries:
        item = entry.item
        if item.key is not None:
            earlier = seen.setdefault(item.key, [])
            first = next((e for e in earlier if e.source != entry.source), None)
            if first is not None:
                yield first, entry, path
            earlier.append(entry)
        elif item.sub is not None:
            scoped.setdefault(item.sub, []).extend(replace(entry, item=c) for c in item.children)
    for name, inner in scoped.items():
        yield from _conflicts(inner, f"{path}/{name}" if path else name)


def _site(entry: _Entry) -> str:
    if entry.source == 0:
        return f"{entry.item.text} (which {entry.origin} adds itself)"
    if entry.item.text == entry.origin:
        return f"argument {entry.source} ({entry.origin})"
    return f"{entry.item.text} in argument {entry.source} ({entry.origin})"


def _report(ctx: _Ctx, entries: list[_Entry], advice: str = "") -> None:
    """Report every conflict among ``entries`` at the later argument."""
    for first, later, path in _conflicts(entries):
        assert first.item.key is not None
        major, minor = first.item.key
        where = f' in sublayer "{path}"' if path else ""
        fix = advice if first.source == 0 else "keep one of them"
        ctx.api.fail(
            f"Policy conflict{where}: {major.rsplit('.', 1)[-1]}.{minor} is set by "
            f"{_site(first)} and {_site(later)}; {fix}",
            later.context,
            code=POLICY_CONFLICT,
        )


def _check_container(ctx: _Ctx) -> Type:
    """Report conflicts among a container's arguments; record its contents in its type."""
    _report(ctx, _entries(ctx, flatten=False))
    result = get_proper_type(ctx.default_return_type)
    if not isinstance(result, Instance):
        return ctx.default_return_type
    str_type = ctx.api.named_generic_type("builtins.str", [])
    tuple_type = ctx.api.named_generic_type("builtins.tuple", [AnyType(TypeOfAny.special_form)])
    pairs: list[Type] = []
    attrs: dict[str, Type] = {}
    for formal, types, kinds, exprs in zip(
        ctx.callee_arg_names, ctx.arg_types, ctx.arg_kinds, ctx.args, strict=True
    ):
        name = _literal_str(types[0]) if formal == "name" and len(types) == 1 else None
        if name is not None:
            attrs[_SUB_NAME] = LiteralType(name, str_type)
        if formal not in _PARAMS:
            continue
        for typ, kind, expr in zip(types, kinds, exprs, strict=True):
            for item_type, text in _values(typ, kind, expr, flatten=False):
                if _items(item_type, text):
                    literal = LiteralType(text, str_type)
                    pairs.append(TupleType([item_type, literal], tuple_type))
    attrs[_CONTENT] = TupleType(pairs, tuple_type)
    recorded = result.copy_modified()
    recorded.extra_attrs = ExtraAttrs(attrs, set(attrs))
    return recorded


def _check_policies(ctx: _Ctx) -> Type:
    """``make_train_layer`` / ``make_infer_layer``: containers given are flattened, as at run
    time, so their contents meet the other arguments."""
    _report(ctx, _entries(ctx, flatten=True))
    return ctx.default_return_type


_TRAIN = "typed_nn.layers.protocol.make_train_layer"
_DECL = "typed_nn.layers.declared.Decl"
_DECLARED = "typed_nn.layers.declared.Declared"
_UNDECLARED = "typed_nn.layers.declared.Undeclared"
_TENSOR_LIKE = "typed_nn.data.tensor.TensorLike"


def _declared_ports(ctx: _Ctx) -> list[tuple[Type, Type, Type] | None] | None:
    """(element, device, rank) of each port of a literal ``LayerInMap({...})`` argument (None
    for a number port); None when the map is not a literal or a type is not tagged data."""
    if len(ctx.args) < 2 or len(ctx.args[1]) != 1:
        return None
    call = ctx.args[1][0]
    if not (isinstance(call, CallExpr) and len(call.args) == 1):
        return None
    items = call.args[0]
    if not isinstance(items, DictExpr):
        return None
    ports: list[tuple[Type, Type, Type] | None] = []
    for _, value in items.items:
        typ = get_proper_type(ctx.api.get_expression_type(value))
        if isinstance(typ, CallableType) and typ.is_type_obj():
            typ = get_proper_type(typ.ret_type)
        elif isinstance(typ, TypeType):
            typ = typ.item
        if not isinstance(typ, Instance):
            return None
        base = next((b for b in typ.type.mro if b.fullname == _TENSOR_LIKE), None)
        if typ.type.fullname in _NUMBERS:
            ports.append(None)  # a number port: no element, device or rank
        elif base is None:
            return None
        else:
            elem, device, rank = map_instance_to_supertype(typ, base).args
            ports.append((elem, device, rank))
    return ports


def _declared_tags(ctx: _Ctx) -> tuple[Type, Type] | None:
    """(element, device) every tensor port of a literal ``LayerInMap({...})`` argument
    declares; None when the map is not a literal or its ports disagree."""
    tags: tuple[Type, Type] | None = None
    for port in _declared_ports(ctx) or []:
        if port is None:
            continue
        found = (port[0], port[1])
        if any(isinstance(get_proper_type(t), AnyType) for t in found):
            return None
        if tags is not None and not all(
            is_same_type(a, b) for a, b in zip(tags, found, strict=True)
        ):
            return None
        tags = found
    return tags


def _accepted_ranks(layer: Instance) -> list[Instance] | None:
    """The ranks (``DimN`` instances) a layer's ``feed_forward`` takes in its input container,
    over its overloads; None when any rank is taken (or the signature is not one to read)."""
    node = layer.type.get("feed_forward")
    func = node.node if node is not None else None
    if isinstance(func, Decorator):
        func = func.func
    if not isinstance(func, FuncDef | OverloadedFuncDef) or func.type is None:
        return None
    signature = get_proper_type(func.type)
    if not isinstance(signature, FunctionLike):
        return None
    owner = map_instance_to_supertype(layer, func.info)
    ranks: list[Instance] = []
    for item in signature.items:
        params = get_proper_type(expand_type_by_instance(item, owner))
        container = (
            get_proper_type(params.arg_types[1]) if isinstance(params, CallableType) else None
        )
        if not (isinstance(container, Instance) and len(container.args) == 2):
            return None
        value = get_proper_type(container.args[1])
        for data in value.items if isinstance(value, UnionType) else [value]:
            proper = get_proper_type(data)
            if not (isinstance(proper, Instance) and proper.type.fullname == _TENSOR_LIKE):
                return None
            rank = get_proper_type(proper.args[2])
            if not isinstance(rank, Instance):
                return None  # Any or a method-level variable: any rank
            ranks.append(rank)
    return ranks


def _check_ranks(ctx: _Ctx, layer: Instance) -> None:
    """``make_train_layer(Template, LayerInMap({...}))``: report a declared rank the
    template's ``feed_forward`` does not take (every later feed would be a type error)."""
    accepted = _accepted_ranks(layer)
    if not accepted:
        return
    for port in _declared_ports(ctx) or []:
        rank = get_proper_type(port[2]) if port is not None else None
        if isinstance(rank, Instance) and not any(is_same_type(rank, r) for r in accepted):
            names = sorted({r.type.name for r in accepted})
            ctx.api.fail(
                f"{layer.type.name} takes data of rank {' or '.join(names)}; "
                f"the LayerInMap declares {rank.type.name}",
                ctx.context,
                code=INPUT_RANK,
            )
            return


def _declare(ctx: _Ctx, lookup: _Lookup, train: bool) -> Type:
    """``make_train_layer(Template, LayerInMap({...}))``: the class is typed
    ``Template[..., Declared[elem, device]]`` from the map's types (what pyright users write
    as the template's type argument), so data of another element or device is rejected; a map
    that is not a literal, or ``make_infer_layer``, gives ``Undeclared`` (what the checkers
    read a bare template as), so outputs are typed from the inputs."""
    result = get_proper_type(ctx.default_return_type)
    if not (isinstance(result, TypeType) and isinstance(result.item, Instance)):
        return ctx.default_return_type
    layer = result.item
    if train:
        _check_ranks(ctx, layer)
    slot = next((i for i, v in enumerate(layer.type.defn.type_vars) if v.fullname == _DECL), None)
    given = get_proper_type(layer.args[slot]) if slot is not None else None
    undeclared = isinstance(given, Instance) and given.type.fullname == _UNDECLARED
    if slot is None or not (isinstance(given, AnyType) or undeclared):
        return ctx.default_return_type  # not generic in Decl, or declared in the argument
    tags = _declared_tags(ctx) if train else None
    sym = lookup(_UNDECLARED if tags is None else _DECLARED)
    if sym is None or not isinstance(sym.node, TypeInfo):
        return ctx.default_return_type
    args = list(layer.args)
    args[slot] = Instance(sym.node, list(tags) if tags is not None else [])
    return TypeType(layer.copy_modified(args=args))


def _maker_hook(lookup: _Lookup) -> _Hook:
    """``make_train_layer`` / ``make_infer_layer``: policies checked, then what the class is
    declared for put into its type."""

    def hook(ctx: _Ctx) -> Type:
        _check_policies(ctx)
        callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
        if not isinstance(callee, RefExpr):
            return ctx.default_return_type
        return _declare(ctx, lookup, callee.fullname == _TRAIN)

    return hook


def _xavier_hook(ctx: _Ctx) -> Type:
    """``XavierFiller(...)``: it adds ``PVarScaleFanAvg`` itself."""
    key = ("typed_nn.policies.var_scale.VarScaleFillerPolicy", "scale_mode")
    fixed = _Entry(_Item("PVarScaleFanAvg", key=key), 0, "XavierFiller", ctx.context)
    advice = "use VarScaleFiller(1.0, ...) to choose the fan mode"
    _report(ctx, [fixed, *_entries(ctx, flatten=False)], advice)
    return ctx.default_return_type


def _keyword(ctx: _Ctx, formal: str) -> tuple[bool | None, str]:
    """Whether keyword ``formal`` was given a non-None value (None: cannot tell), and its text."""
    index = ctx.callee_arg_names.index(formal) if formal in ctx.callee_arg_names else -1
    if index < 0 or not ctx.args[index]:
        return False, ""
    proper = get_proper_type(ctx.arg_types[index][0])
    text = _text(ctx.args[index][0])
    if isinstance(proper, NoneType):
        return False, text
    if isinstance(proper, UnionType | AnyType):
        return None, text
    return True, text


def _mlp_items(ctx: _Ctx) -> list[_Item]:
    """The sub-containers ``MLP.build`` makes itself, when ``activations`` is a literal list."""
    if "activations" not in ctx.callee_arg_names:
        return []
    exprs = ctx.args[ctx.callee_arg_names.index("activations")]
    if len(exprs) != 1 or not isinstance(exprs[0], ListExpr | TupleExpr):
        return []
    params: list[_Item] = []
    for formal, sub in (("weight_init", "weight"), ("bias_init", "bias")):
        given, text = _keyword(ctx, formal)
        if given:
            init = _Item(
                f"PInitializerIs({text})",
                key=("typed_nn.policies.param.ParamPolicy", "initializer"),
            )
            params.append(_Item(f'SubPolicyContainer("{sub}", ...)', sub=sub, children=(init,)))
    made = []
    for i, act in enumerate(exprs[0].items, 1):
        if isinstance(act, NameExpr) and act.fullname == "builtins.None":
            made.append(
                _Item(f'SubPolicyContainer("fc{i}", ...)', sub=f"fc{i}", children=tuple(params))
            )
        elif isinstance(act, RefExpr) and isinstance(act.node, TypeInfo):
            key = ("typed_nn.policies.layer_structure.LayerStructurePolicy", "act_func")
            act_func = _Item(f"PActFuncIs({_text(act)})", key=key)
            linear = _Item(
                'SubPolicyContainer("linear", ...)', sub="linear", children=tuple(params)
            )
            made.append(
                _Item(
                    f'SubPolicyContainer("fc{i}", ...)', sub=f"fc{i}", children=(act_func, linear)
                )
            )
    return made


def _mlp_hook(ctx: _Ctx) -> Type:
    """``MLP.build``: its own ``fc{i}`` sub-containers meet the policies given."""
    own = [_Entry(item, 0, "MLP.build", ctx.context) for item in _mlp_items(ctx)]
    advice = "change activations, weight_init or bias_init instead"
    _report(ctx, [*own, *_entries(ctx, flatten=False)], advice)
    return ctx.default_return_type


# --- policy objects and templates: minors and values ------------------------------------------


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


def _minor_type(ctx: _Ctx, major: TypeInfo, minor: str) -> ProperType | None:
    """The declared type of ``major.minor``; reports ``policy-minor`` if there is no such field."""
    names = _minor_names(major)
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


def _is_bool(typ: Type) -> bool:
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and proper.last_known_value is not None:
        proper = proper.last_known_value
    if isinstance(proper, LiteralType):
        return isinstance(proper.value, bool)
    return isinstance(proper, Instance) and proper.type.fullname == "builtins.bool"


def _takes_bool(declared: Type) -> bool:
    """Whether the run-time check lets a bool through where ``declared`` is declared."""
    proper = get_proper_type(declared)
    if isinstance(proper, UnionType):
        return any(_takes_bool(item) for item in proper.items)
    return not (isinstance(proper, Instance) and proper.type.fullname in _NUMBERS)


def _bool_for_number(value: Type, declared: Type) -> bool:
    """A bool (or a tuple holding one) where a number is declared: mypy allows it (bool is an
    int), the run-time check does not (``PModifyDimNumIs(True)`` is a mistake, not 1)."""
    given, wanted = get_proper_type(value), get_proper_type(declared)
    if isinstance(given, TupleType):
        if isinstance(wanted, TupleType) and len(wanted.items) == len(given.items):
            return any(map(_bool_for_number, given.items, wanted.items))
        if isinstance(wanted, Instance) and wanted.type.fullname == "builtins.tuple":
            return any(_bool_for_number(item, wanted.args[0]) for item in given.items)
        return False
    return _is_bool(given) and not _takes_bool(wanted)


def _value_misfit(ctx: _Ctx, value: Type, declared: Type, where: str, context: Context) -> None:
    """Report a value that does not fit the minor ``where`` (declared ``declared``)."""
    note = ""
    if is_subtype(value, declared):  # it fits for mypy: a bool where a number is declared
        note = "; a bool is not accepted where an int or float is declared"
    ctx.api.fail(
        f"Policy value of type {format_type(value, ctx.api.options)} does not fit "
        f"{where} (declared {format_type(declared, ctx.api.options)}){note}",
        context,
        code=POLICY_MINOR,
    )


def _refine_maker(ctx: _Ctx) -> Type:
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
        if not is_subtype(value, declared) or _bool_for_number(value, declared):
            _value_misfit(ctx, value, declared, f"{info.name}.{minor}", ctx.args[2][0])
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


def _check_template_call(ctx: _Ctx) -> Type:
    """``PModifyDimNumIs(True)``: a bool given to a template whose minor is a number."""
    template = ctx.type if isinstance(ctx, mypy.plugin.MethodContext) else None
    if not (isinstance(template, Instance) and len(template.args) == 3):
        return ctx.default_return_type
    major, minor, declared = template.args
    major_type, name = get_proper_type(major), _literal_str(minor)
    where = format_type(template, ctx.api.options).strip('"')
    if isinstance(major_type, Instance) and name is not None:
        where = f"{major_type.type.name}.{name}"
    if template.type.fullname == _TEMPLATES[1]:  # variadic: each argument is one item
        where = f"an item of {where}"
    for types, exprs in zip(ctx.arg_types, ctx.args, strict=True):
        for typ, expr in zip(types, exprs, strict=True):
            if _bool_for_number(typ, declared):
                _value_misfit(ctx, typ, declared, where, expr)
    return ctx.default_return_type


# --- readable first errors: tagged arguments a type parameter cannot take ---------------------
#
# mypy says 'Cannot infer value of type parameter "FE" of "helper"' when two arguments bind one
# element, device or rank variable to different tags, and 'Value of type variable "FE" of ...
# cannot be "Int64"' for a tag outside the bound: neither names the argument nor its type. A
# function (or method) hook runs after mypy has inferred the call; where mypy has just reported
# one of those two errors for it, the hook replaces it with one naming the arguments, their types
# and a fix, and types the call from its first argument. Calls without that error cost a look at
# the last few errors only: nothing is type-checked a second time (a signature hook, run before
# inference, would have to check every argument expression again: 2.3x mypy's time).

_TAG_KINDS = ("element", "device", "rank")  # TensorLike's type arguments, in this order
_CLASH_FIXES = (
    "convert one with ops.astype",
    "move one with ops.to_device",
    "reshape one with ops.reshape, or give each its own rank variable",
)
_BOUND_FIXES = ("convert it with ops.astype", "move it with ops.to_device", "reshape it")
_INFERENCE_FAILURES = ("Cannot infer value of type parameter ", "Value of type variable ")
_RECENT_ERRORS = 50  # how far back mypy's error for the call is looked for (args' come later)
_Types: TypeAlias = list[list[Type]]  # the types of the arguments given to each parameter


@dataclass(frozen=True)
class _Clash:
    """An argument whose tag its parameter's type variable cannot take, and why."""

    formal: int
    var: TypeVarType
    message: str
    context: Context
    outside: bool  # a tag outside the variable's bound (else one that differs from another's)


def _tag_args(typ: Type) -> list[Type] | None:
    """TensorLike's (element, device, rank) of ``typ``; None if it is not tagged data."""
    proper = get_proper_type(typ)
    if not isinstance(proper, Instance):
        return None
    base = next((b for b in proper.type.mro if b.fullname == _TENSOR_LIKE), None)
    return list(map_instance_to_supertype(proper, base).args) if base is not None else None


def _tag_vars(formal: Type) -> list[TypeVarType | None] | None:
    """The type variable at each tag position of a parameter that takes tagged data (a union
    of them counts where its items agree); None if the parameter takes no tagged data."""
    proper = get_proper_type(formal)
    found = [_tag_args(t) for t in (proper.items if isinstance(proper, UnionType) else [proper])]
    known = [args for args in found if args is not None]
    if not found or len(known) != len(found):
        return None
    tags: list[TypeVarType | None] = []
    for position in range(3):
        seen = [get_proper_type(args[position]) for args in known]
        first = seen[0]
        same = isinstance(first, TypeVarType) and all(first == t for t in seen)
        tags.append(first if same and isinstance(first, TypeVarType) else None)
    return tags


def _label(sig: CallableType, formal: int) -> str:
    name = sig.arg_names[formal]
    return f'"{name}"' if name else str(formal + 1)


def _clashes(ctx: _Ctx, sig: CallableType, types: _Types) -> list[_Clash]:
    """The arguments of the call whose tags the type variables of ``sig`` cannot take: a tag
    outside the variable's bound, or one that differs from an earlier argument's for it."""

    def show(typ: Type) -> str:
        return format_type(typ, ctx.api.options)

    call = callable_name(sig) or "the function"
    bound: dict[TypeVarId, tuple[int, Type, Type]] = {}  # var -> (formal, argument type, tag)
    found: list[_Clash] = []
    for formal, (declared, given) in enumerate(zip(sig.arg_types, types, strict=True)):
        tag_vars = _tag_vars(declared) if len(given) == 1 else None
        actual = _tag_args(given[0]) if tag_vars is not None else None
        if tag_vars is None or actual is None:
            continue
        arg_type, where = given[0], ctx.args[formal][0]
        for kind, (var, tag) in enumerate(zip(tag_vars, actual, strict=True)):
            if var is None or isinstance(get_proper_type(tag), AnyType):
                continue
            if not is_subtype(tag, var.upper_bound):
                if any(c.var.id == var.id for c in found):
                    continue  # one report per type variable
                text = (
                    f"Argument {_label(sig, formal)} to {call} takes data whose "
                    f"{_TAG_KINDS[kind]} type is a {show(var.upper_bound)} ({var.name}), "
                    f"got {show(arg_type)}; "
                    f"{_BOUND_FIXES[kind]}"
                )
                found.append(_Clash(formal, var, text, where, outside=True))
                continue
            first, first_type, first_tag = bound.setdefault(var.id, (formal, arg_type, tag))
            if not is_same_type(first_tag, tag):
                text = (
                    f"Arguments {_label(sig, first)} and {_label(sig, formal)} to {call} take one "
                    f"{_TAG_KINDS[kind]} type ({var.name}), got {show(first_type)} and "
                    f"{show(arg_type)} ({show(first_tag)} vs {show(tag)}); {_CLASH_FIXES[kind]}"
                )
                found.append(_Clash(formal, var, text, where, outside=False))
    return found


def _fits(ctx: _Ctx, sig: CallableType, types: _Types) -> bool:
    """Whether ``sig`` is the signature mypy checked the call against (an overload's item) and
    takes the arguments when its type variables are left out."""
    if sig.arg_names != ctx.callee_arg_names:
        return False
    return all(
        is_subtype(typ, erase_typevars(declared))
        for declared, given in zip(sig.arg_types, types, strict=True)
        for typ in given
    )


def _error_list(errors: Errors) -> list[ErrorInfo] | None:
    """Where an error reported now is kept: the innermost filtering watcher's saved errors
    (an overload being tried), else the file's; None where it is dropped."""
    for watcher in errors.get_watchers():
        if callable(watcher._filter):
            return None  # kept or not error by error
        if watcher._filter:
            return watcher._filtered
    return errors.error_info_map.get(errors.file)


def _inference_errors(ctx: _Ctx) -> tuple[list[ErrorInfo], list[int]] | None:
    """mypy's errors that it could not infer the call's type variables (one a variable: two
    tags may differ), if it reported any for this call, with the list that keeps them and
    their indexes there, last first."""
    kept = _error_list(ctx.api.msg.errors)
    if not kept:
        return None
    line, column = ctx.context.line, ctx.context.column
    found = []
    for index in range(len(kept) - 1, max(len(kept) - _RECENT_ERRORS, 0) - 1, -1):
        info = kept[index]
        at_call = info.line == line and info.column == column
        if at_call and info.message.startswith(_INFERENCE_FAILURES):
            found.append(index)
    return (kept, found) if found else None


def _typed_from_first(ctx: _Ctx, sig: CallableType, types: _Types, clashes: list[_Clash]) -> Type:
    """The call's type with each clashing variable taken from the first argument that binds
    it (erased from the later ones), and a tag outside a bound taken as Any."""
    anywhere: dict[TypeVarId, Type] = {}
    erased: dict[int, dict[TypeVarId, Type]] = {}
    for clash in clashes:
        where = anywhere if clash.outside else erased.setdefault(clash.formal, {})
        where[clash.var.id] = AnyType(TypeOfAny.from_error)
    arg_types = [expand_type(t, erased.get(i, {})) for i, t in enumerate(sig.arg_types)]
    kept = [v for v in sig.variables if v.id not in anywhere]
    typed = expand_type(sig.copy_modified(arg_types=arg_types, variables=kept), anywhere)
    assert isinstance(typed, CallableType)
    actuals = [typ for given in types for typ in given]
    to_actual: list[list[int]] = []
    for given in types:
        start = sum(map(len, to_actual))
        to_actual.append(list(range(start, start + len(given))))
    any_type = AnyType(TypeOfAny.special_form)
    infer_context = ArgumentInferContext(
        ctx.api.named_generic_type("typing.Mapping", [any_type, any_type]),
        ctx.api.named_generic_type("typing.Iterable", [any_type]),
    )
    inferred, _ = infer_function_type_arguments(
        typed,
        actuals,
        [kind for kinds in ctx.arg_kinds for kind in kinds],
        [name for names in ctx.arg_names for name in names],
        to_actual,
        infer_context,
    )
    values = {v.id: t or any_type for v, t in zip(typed.variables, inferred, strict=True)}
    return expand_type(typed.ret_type, values)


def _reword_tag_errors(ctx: _Ctx, items: Callable[[], Sequence[CallableType]]) -> Type:
    """Replace mypy's inference error for the call (if it reported one) with one naming the
    tagged arguments that the first of the callee's ``items()`` that takes them cannot take.
    This reads mypy's error lists (internals): on a mypy where they differ, mypy's own
    message stays, rather than the plugin failing the user's run."""
    try:
        return _reword(ctx, items)
    except Exception:  # an unknown mypy: keep its own error
        return ctx.default_return_type


def _reword(ctx: _Ctx, items: Callable[[], Sequence[CallableType]]) -> Type:
    failed = _inference_errors(ctx)
    if failed is None:
        return ctx.default_return_type
    types = _own_types(ctx)
    for item in items():
        sig = freshen_function_type_vars(item)
        clashes = _clashes(ctx, sig, types) if _fits(ctx, sig, types) else []
        if clashes:
            kept, indexes = failed
            for index in indexes:  # last first: the earlier indexes stay where they were
                after = kept[index + 1] if index + 1 < len(kept) else None
                # mypy's note on a `type: ignore` of another code goes with the error it is on
                if after and after.line == kept[index].line and "not covered by" in after.message:
                    del kept[index + 1]
                del kept[index]
            for clash in clashes:
                ctx.api.fail(clash.message, clash.context, code=TAG_MISMATCH)
            return _typed_from_first(ctx, sig, types, clashes)
    return ctx.default_return_type


def _own_types(ctx: _Ctx) -> _Types:
    """The arguments' types on their own: after the failed inference mypy typed them for
    parameters whose variables are Any, which makes a nested generic call's tags Any too
    (``ops.ones(.., GPU)`` gives ``Tensor[Any, Any, Dim1]``). Checked again only here, where
    mypy reported an error: calls without one read nothing twice."""
    with ctx.api.msg.filter_errors():
        return [
            [
                typ if isinstance(arg, LambdaExpr) else ctx.api.get_expression_type(arg)
                for arg, typ in zip(args, types, strict=True)
            ]
            for args, types in zip(ctx.args, ctx.arg_types, strict=True)
        ]


def _function_items(ctx: _Ctx) -> Sequence[CallableType]:
    """Every overload of the called function (one item when not overloaded)."""
    callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
    node = callee.node if isinstance(callee, RefExpr) else None
    typ = node.var.type if isinstance(node, Decorator) else None
    typ = node.type if isinstance(node, FuncDef | OverloadedFuncDef) else typ
    proper = get_proper_type(typ)
    return proper.items if isinstance(proper, FunctionLike) else []


def _method_items(ctx: _Ctx, method: FuncDef, owner: TypeInfo) -> Sequence[CallableType]:
    """The method's signature as called on ``ctx.type`` (``self`` bound, class variables
    given)."""
    receiver = get_proper_type(ctx.type) if isinstance(ctx, mypy.plugin.MethodContext) else None
    typ = get_proper_type(method.type)
    if not isinstance(receiver, Instance) or not isinstance(typ, CallableType):
        return []
    typ = expand_type_by_instance(typ, map_instance_to_supertype(receiver, owner))
    return [bind_self(typ, receiver)]


class PolicyPlugin(mypy.plugin.Plugin):
    """Hooks the policy constructors and the calls that take policies (none is overloaded:
    errors reported while mypy picks an overload are discarded), and every call's signature
    for tagged arguments its type variables cannot take; everything else is left to mypy."""

    def _owner(self, fullname: str, member: str) -> str | None:
        """``Owner.member`` for the class that defines ``member`` of class ``fullname``."""
        sym = self.lookup_fully_qualified(fullname)
        info = sym.node if sym is not None else None
        owner = info.get_containing_type_info(member) if isinstance(info, TypeInfo) else None
        return f"{owner.fullname}.{member}" if owner is not None else None

    def get_function_hook(self, fullname: str) -> _Hook | None:
        if fullname in (_CONTAINER, _SUB):
            return _check_container
        if fullname == _OBJECT or fullname in _TEMPLATES:
            return _refine_maker
        if fullname in _MAKERS:
            return _maker_hook(self.lookup_fully_qualified)
        init = self._owner(fullname, "__init__")  # a filler's (or a subclass's) constructor
        if init == f"{_XAVIER}.__init__":
            return _xavier_hook
        if init == f"{_VAR_SCALE}.__init__":
            return _check_policies
        return lambda ctx: _reword_tag_errors(ctx, lambda: _function_items(ctx))

    def get_method_hook(self, fullname: str) -> _Hook | None:
        if fullname in (f"{t}.__call__" for t in _TEMPLATES):
            return _check_template_call
        if fullname.endswith(".build"):
            cls, _, member = fullname.rpartition(".")
            if self._owner(cls, member) == _MLP_BUILD:
                return _mlp_hook
        if fullname.rpartition(".")[2].startswith("__"):
            return None  # operators have mypy's own readable message
        return lambda ctx: _reword_tag_errors(ctx, lambda: self._method_items(ctx, fullname))

    def _method_items(self, ctx: _Ctx, fullname: str) -> Sequence[CallableType]:
        """The signature of the called method (none for overloads, static and class methods,
        properties: their messages stay mypy's)."""
        cls, _, member = fullname.rpartition(".")
        sym = self.lookup_fully_qualified(cls)
        info = sym.node if sym is not None else None
        owner = info.get_containing_type_info(member) if isinstance(info, TypeInfo) else None
        method = owner.names[member].node if owner is not None else None
        if owner is None or not isinstance(method, FuncDef):
            return []
        if method.is_static or method.is_class or method.is_property:
            return []
        return _method_items(ctx, method, owner)


def plugin(version: str) -> type[mypy.plugin.Plugin]:
    """The entry point mypy calls (``plugins = typed_nn.mypy_plugin``)."""
    return PolicyPlugin
