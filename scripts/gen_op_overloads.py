"""Generate the typed overloads whose result rank follows the arguments.

* the reductions (``reduce_sum`` / ``reduce_mean`` / ``reduce_max`` / ``argmax``): the result
  rank depends on which dims are reduced;
* the select ops (``maximum`` / ``minimum`` / ``where`` / ``interpolate``): numpy
  broadcasting, result rank = the highest operand rank;
* the shape family (``zeros`` / ``ones`` / ``ZeroTensor`` / ``ConstantTensor`` / ``reshape`` /
  ``tile``, and ``stack`` / ``ScalableTensor`` / ``unsqueeze`` one rank up, ``squeeze`` one
  down): the rank is the shape tuple's length; a shape of unknown length (``x.shape``, a
  ``tuple[int, ...]``) gives an unknown rank;
* ``tn.grad`` and ``tn.vjp``: the gradients come in the structure of ``wrt``, each typed like
  its input.

mypy and pyright learn it from ``@overload``s, written up to ``typed_nn.tags.MAX_RANK``
between marker comments in the files of TARGETS.

Run ``python scripts/gen_op_overloads.py`` after changing it (or the rank tags); ``--check``
exits 1 when the committed files are stale (tests/test_ops_reduce.py runs that, for every
target).
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _max_rank() -> int:
    """``typed_nn.tags.MAX_RANK`` (the rank tags decide how far the overloads go), read from
    tags.py alone: importing typed_nn runs the generated code this script may be fixing."""
    spec = importlib.util.spec_from_file_location("_tags", ROOT / "typed_nn" / "tags.py")
    assert spec is not None
    assert spec.loader is not None
    tags = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tags)
    return int(tags.MAX_RANK)


MAX_RANK = _max_rank()
OPS = ROOT / "typed_nn" / "ops"
DATA = ROOT / "typed_nn" / "data"
AUTODIFF = ROOT / "typed_nn" / "autodiff" / "api.py"
# Tuples of wrt typed position by position up to this length (longer ones: see CONTAINED);
# tuples of vjp outputs, each with its cotangent, up to MAX_OUTPUTS.
MAX_WRT = 6
MAX_OUTPUTS = 3

# (name, element TypeVar, docstring) of the reductions sharing one signature.
REDUCTIONS = [
    ("reduce_sum", "E", "Sum of ``x`` over the reduced dims (see the module docstring)."),
    ("reduce_mean", "FE", "Mean of ``x`` over the reduced dims (float elements)."),
    ("reduce_max", "E", "Maximum of ``x`` over the reduced dims (none of size 0)."),
]


def tl(elem: str, dim: str) -> str:
    return f"TensorLike[{elem}, Dv, {dim}]"


def ov(name: str, params: str, result: str, indent: str = "") -> str:
    return f"{indent}@overload\n{indent}def {name}({params}) -> {result}: ...\n"


def ints(n: int) -> str:
    """A shape tuple of exactly ``n`` dims."""
    return "tuple[()]" if n == 0 else "tuple[" + ", ".join(["int"] * n) + "]"


def at_least(n: int) -> str:
    """A tuple of ``n`` or more ints."""
    return "tuple[" + "int, " * n + "*tuple[int, ...]]"


def raises(name: str, params: str, why: str, result: str, indent: str = "") -> str:
    """An overload for arguments that raise at run time (a literal shape of more than MAX_RANK
    dims, ...), ahead of the catch-all for a shape of unknown length (``tuple[int, ...]``) that
    would accept them: the checkers report the call through PEP 702 (mypy:
    ``enable_error_code = deprecated``, pyright: ``reportDeprecated``; both set in this
    repository). Its result is the catch-all's, not ``NoReturn``: a checker does not look at
    code after a ``NoReturn`` call, which would hide the errors there. Best keyed on the shape
    only: pyright reports a deprecated overload that an operand of unknown rank
    (``TensorLike[E, Dv, Any]``) could match, a false positive on valid code."""
    return (
        f'{indent}@overload\n{indent}@deprecated("{why}")\n'
        f"{indent}def {name}({params}) -> {result}: ...\n"
    )


TOO_MANY_DIMS = f"typed_nn data has at most {MAX_RANK} dims; this call raises RankError"


# --- the reductions ---------------------------------------------------------------------------


def reduction_block(name: str, elem: str, doc: str) -> str:
    keep_false = "keep_dim: Literal[False] = False"
    x = f"x: {tl(elem, 'D')}"
    keep_true = "dims: int | tuple[int, ...] | None = None, *, first: int | None = None, keep_dim: Literal[True]"
    # keep_dim=True keeps the rank: one overload per concrete rank ahead of the generic one.
    # With the generic one alone, mypy solves D from an assignment's declared type (a Vector
    # target for a Matrix operand), the call fails that overload and falls through to the
    # unknown-rank catch-all for a bool keep_dim below, hiding the mismatch.
    out = [
        ov(name, f"x: {tl(elem, f'Dim{r}')}, {keep_true}", tl(elem, f"Dim{r}"))
        for r in range(MAX_RANK + 1)
    ]
    out += [
        ov(name, f"{x}, {keep_true}", tl(elem, "D")),
        ov(name, f"{x}, dims: None = None, *, first: None = None, {keep_false}", tl(elem, "Dim0")),
        ov(name, f"{x}, dims: tuple[()], *, {keep_false}", tl(elem, "D")),
        ov(name, f"{x}, dims: None = None, *, first: Literal[0], {keep_false}", tl(elem, "D")),
    ]
    for n in range(1, MAX_RANK + 1):
        dims = "int | tuple[int]" if n == 1 else ints(n)
        for r in range(n, MAX_RANK + 1):
            out.append(
                ov(
                    name,
                    f"x: {tl(elem, f'Dim{r}')}, dims: {dims}, *, {keep_false}",
                    tl(elem, f"Dim{r - n}"),
                )
            )
    for n in range(1, MAX_RANK + 1):
        for r in range(n, MAX_RANK + 1):
            out.append(
                ov(
                    name,
                    f"x: {tl(elem, f'Dim{r}')}, dims: None = None, *, first: Literal[{n}], {keep_false}",
                    tl(elem, f"Dim{r - n}"),
                )
            )
    # A number of reduced dims known only at run time (an int variable, a generic rank) or a
    # keep_dim that is a bool variable: the result's rank is unknown (element and device are
    # still checked). Only ints: a literal tuple of more dims than a concrete operand has must
    # stay an error, and a tuple[int, ...] catch-all would accept it. (A literal first=k larger
    # than a concrete operand's rank does reach the int overload: Literal[k] is an int. A
    # deprecated-marked overload for it was tried: pyright reports it for any operand of
    # unknown rank, a false positive on valid code.)
    unknown = tl(elem, "Any")
    out += [
        ov(name, f"{x}, dims: int, *, {keep_false}", unknown),
        ov(name, f"{x}, dims: None = None, *, first: int, {keep_false}", unknown),
        ov(name, f"{x}, dims: int | None = None, *, first: None = None, keep_dim: bool", unknown),
        ov(name, f"{x}, dims: None = None, *, first: int, keep_dim: bool", unknown),
    ]
    out.append(
        f"def {name}(\n"
        "    x: AnyTensor, dims: int | tuple[int, ...] | None = None, *, first: int | None = None,\n"
        "    keep_dim: bool = False,\n"
        ") -> AnyTensor:\n"
        f'    """{doc}"""\n'
        f"    return _reduce({name.upper()}, x, dims, first, keep_dim)\n"
    )
    return "".join(out)


def argmax_block() -> str:
    out = [
        ov("argmax", f"x: {tl('E', f'Dim{r}')}, axis: int = -1", tl("Int64", f"Dim{r - 1}"))
        for r in range(1, MAX_RANK + 1)
    ]
    out.append(
        "def argmax(x: AnyTensor, axis: int = -1) -> AnyTensor:\n"
        '    """Int64 index of the maximum along ``axis`` (the first on ties); that dim is removed."""\n'
        "    return _argmax(x, axis)\n"
    )
    return "".join(out)


def reduce_body() -> str:
    return "\n\n".join([*(reduction_block(*spec) for spec in REDUCTIONS), argmax_block()])


# --- the select ops -----------------------------------------------------------------------------


def up_to(elem: str, rank: int) -> str:
    """Data of rank 0 to ``rank``: a union (the TensorLike rank argument is invariant)."""
    return " | ".join(tl(elem, f"Dim{r}") for r in range(rank + 1))


def broadcast_overloads(name: str, operands: list[tuple[str, str]]) -> list[str]:
    """Overloads of an element-wise op whose result has the highest operand rank.

    ``operands`` are (name, element TypeVar). First a generic ``D`` with scalars anywhere
    (code generic over the rank); then, for each result rank R and each operand position i,
    operand i of rank R, the operands before it of lower rank, those after it of rank <= R:
    every mix of ranks, in about arity x MAX_RANK overloads.
    """
    out = []
    for ranks in itertools.product(("D", "Dim0"), repeat=len(operands)):
        if "D" in ranks:
            params = ", ".join(
                f"{p}: {tl(e, r)}" for (p, e), r in zip(operands, ranks, strict=True)
            )
            # mypy calls a generic D beside a scalar overlapping the unions below; where both
            # match, D is the one non-scalar rank and both give it.
            out.append(ov_flagged(name, params, tl(operands[-1][1], "D"), "Dim0" in ranks))
    for rank in range(2, MAX_RANK + 1):  # rank 1 with scalars: the generic D above
        for i in range(len(operands)):
            kinds = [
                up_to(e, rank - 1) if j < i else tl(e, f"Dim{rank}") if j == i else up_to(e, rank)
                for j, (_, e) in enumerate(operands)
            ]
            params = ", ".join(f"{p}: {k}" for (p, _), k in zip(operands, kinds, strict=True))
            out.append(ov(name, params, tl(operands[-1][1], f"Dim{rank}")))
    # Last, any ranks at all: it adds no accepted call (every mix is above) but operands of
    # unknown rank, and when elements or devices differ it is the overload pyright reports
    # against (the last one tried), so the message shows no made-up rank.
    params = ", ".join(f"{p}: {tl(e, 'Any')}" for p, e in operands)
    out.append(ov(name, params, tl(operands[-1][1], "Any")))
    return out


def extremum_block(name: str, decl: str, meaning: str) -> str:
    """``maximum`` / ``minimum``: broadcast ranks, and a Python number on either side."""
    out = broadcast_overloads(name, [("a", "E"), ("b", "E")])
    out += [
        ov(name, f"a: {tl('E', 'D')}, b: int", tl("E", "D")),
        ov(name, f"a: int, b: {tl('E', 'D')}", tl("E", "D")),
        ov(name, f"a: {tl('FE', 'D')}, b: float", tl("FE", "D")),
        ov(name, f"a: float, b: {tl('FE', 'D')}", tl("FE", "D")),
    ]
    out.append(
        f"def {name}(a: object, b: object) -> AnyTensor:\n"
        f'    """Element-wise {meaning} with numpy broadcasting; either side may be a number."""\n'
        f"    return build({decl}, (a, b))\n"
    )
    return "".join(out)


def where_block() -> str:
    out = broadcast_overloads("where", [("cond", "C"), ("a", "E"), ("b", "E")])
    out.append(
        "def where(cond: AnyTensor, a: AnyTensor, b: AnyTensor) -> AnyTensor:\n"
        '    """``a`` where ``cond`` is non-zero, else ``b``; all three broadcast."""\n'
        "    return build(WHERE, (cond, a, b))\n"
    )
    return "".join(out)


def interpolate_block() -> str:
    out = broadcast_overloads("interpolate", [("a", "FE"), ("b", "FE"), ("lam", "FE")])
    out.append(
        "def interpolate(a: AnyTensor, b: AnyTensor, lam: AnyTensor) -> AnyTensor:\n"
        '    """a * lam + b * (1 - lam) element-wise; all three broadcast (MetaNN Interpolate)."""\n'
        "    return build(INTERPOLATE, (a, b, lam))\n"
    )
    return "".join(out)


def select_body() -> str:
    blocks = [
        extremum_block("maximum", "MAXIMUM", "maximum"),
        extremum_block("minimum", "MINIMUM", "minimum"),
        where_block(),
        interpolate_block(),
    ]
    return "\n\n".join(blocks)


# --- the shape family ---------------------------------------------------------------------------


# The fixed-length overloads in the order written: a matrix first. They never overlap, so the
# order changes no result; but when a call nested as an argument fails only through the outer
# parameter's type (``buf.set("w", tn.zeros((4, 3), Float64, CPU))`` into a Float32 buffer),
# mypy reports the arguments against the first overload: for a shape of that length the first
# error is then the element, not "expected tuple[()]". Matrices are the common case.
SHAPE_RANKS = [2, *(r for r in range(MAX_RANK + 1) if r != 2)]


def shape_overloads(name: str, params: str, result: str) -> str:
    """Overloads of a function whose ``shape`` argument gives the result's rank.

    ``params`` has a ``{shape}`` field, ``result`` a ``{dim}`` one. One overload per rank; a
    longer literal shape raises at run time; a shape of unknown length gives an unknown rank.
    """
    out = [
        ov(name, params.format(shape=ints(r)), result.format(dim=f"Dim{r}")) for r in SHAPE_RANKS
    ]
    unknown = result.format(dim="Any")
    out.append(raises(name, params.format(shape=at_least(MAX_RANK + 1)), TOO_MANY_DIMS, unknown))
    out.append(ov(name, params.format(shape="tuple[int, ...]"), unknown))
    return "".join(out)


def init_overloads(cls: str, params: str) -> str:
    """``shape_overloads`` for a class whose ``__init__`` takes the shape (a self-type)."""
    ind = "    "
    out = [
        ov("__init__", f"self: {cls}[E, Dv, Dim{r}], " + params.format(shape=ints(r)), "None", ind)
        for r in SHAPE_RANKS
    ]
    too_long = params.format(shape=at_least(MAX_RANK + 1))
    out.append(
        raises("__init__", f"self: {cls}[E, Dv, Any], {too_long}", TOO_MANY_DIMS, "None", ind)
    )
    out.append(
        ov(
            "__init__",
            f"self: {cls}[E, Dv, Any], " + params.format(shape="tuple[int, ...]"),
            "None",
            ind,
        )
    )
    return "".join(out)


def factory_body(name: str) -> str:
    params = "shape: {shape}, elem: type[E], device: type[Dv]"
    return shape_overloads(name, params, "Tensor[E, Dv, {dim}]")


def zero_tensor_body() -> str:
    return init_overloads("ZeroTensor", "shape: {shape}, elem: type[E], device: type[Dv]")


def constant_tensor_body() -> str:
    return init_overloads("ConstantTensor", "scalar: TensorLike[E, Dv, Dim0], shape: {shape}")


def reshape_body() -> str:
    return shape_overloads("reshape", "x: TensorLike[E, Dv, D], shape: {shape}", tl("E", "{dim}"))


def tile_body() -> str:
    # The target has at least the operand's rank: per target rank, the operand any rank up to
    # it. A literal shape shorter than a concrete operand's rank raises at run time, and is
    # reported before the catch-all for a shape of unknown length would accept it. (Unlike the
    # shape-only guards, this one keys on the operand's rank: pyright also reports it for an
    # operand of unknown rank tiled to a literal shape.)
    new_dims = "new_dims: tuple[int, ...] | None = None"
    out = [
        ov("tile", f"x: {up_to('E', r)}, shape: {ints(r)}, {new_dims}", tl("E", f"Dim{r}"))
        for r in SHAPE_RANKS
    ]
    for r in range(1, MAX_RANK + 1):
        shorter = " | ".join(ints(n) for n in range(r))
        out.append(
            raises(
                "tile",
                f"x: {tl('E', f'Dim{r}')}, shape: {shorter}, {new_dims}",
                f"tile cannot lower the rank of a rank-{r} operand; this call raises",
                tl("E", "Any"),
            )
        )
    out.append(
        raises(
            "tile",
            f"x: {tl('E', 'D')}, shape: {at_least(MAX_RANK + 1)}, {new_dims}",
            TOO_MANY_DIMS,
            tl("E", "Any"),
        )
    )
    out.append(ov("tile", f"x: {tl('E', 'D')}, shape: tuple[int, ...], {new_dims}", tl("E", "Any")))
    return "".join(out)


def stack_body() -> str:
    return "".join(
        ov("stack", f"items: Sequence[{tl('E', f'Dim{r}')}], axis: int = 0", tl("E", f"Dim{r + 1}"))
        for r in range(MAX_RANK)
    )


def squeeze_body() -> str:
    return "".join(
        ov("squeeze", f"x: {tl('E', f'Dim{r}')}, dim: int", tl("E", f"Dim{r - 1}"))
        for r in range(1, MAX_RANK + 1)
    )


def unsqueeze_body() -> str:
    return "".join(
        ov("unsqueeze", f"x: {tl('E', f'Dim{r}')}, dim: int", tl("E", f"Dim{r + 1}"))
        for r in range(MAX_RANK)
    )


def scalable_body() -> str:
    return "".join(
        ov(
            "__init__",
            f"self: ScalableTensor[E, Dv, Dim{r + 1}], items: Iterable[{tl('E', f'Dim{r}')}]",
            "None",
            "    ",
        )
        for r in range(MAX_RANK)
    )


def wrt_entry(i: int) -> str:
    return f"TensorLike[E{i}, V{i}, D{i}]"


# Entries of a homogeneous container of wrt, each with its gradients' type, most precise first:
# one type for all; one element and device but mixed ranks (a tuple or list has one entry
# type, and TensorLike is invariant in the rank); mixed float elements or devices too.
CONTAINED = [
    (wrt_entry(1), wrt_entry(1)),
    ("TensorLike[E1, V1, Any]", "TensorLike[E1, V1, Any]"),
    ("FloatData", "AnyTensor"),
]


def wrt_kinds() -> list[tuple[str, str, str]]:
    """(type of ``wrt``, type of the gradients, its kind), in the order tried.

    An nn.Module (its own type back); one input; tuples typed position by position; then tuples, sequences and mappings of
    each CONTAINED entry; last ``list[object]`` / ``dict[K, object]``, what mypy infers for a
    list or dict literal mixing ranks (invariant, so a list of Int32 data still fails).
    """
    out = [("Mod", "Mod", "module"), (wrt_entry(1), wrt_entry(1), "one")]
    for n in range(1, MAX_WRT + 1):
        items = "tuple[" + ", ".join(wrt_entry(i) for i in range(1, n + 1)) + "]"
        out.append((items, items, "tuple"))
    out += [(f"tuple[{w}, ...]", f"tuple[{g}, ...]", "tuple") for w, g in CONTAINED]
    out += [(f"Sequence[{w}]", f"list[{g}]", "sequence") for w, g in CONTAINED]
    out += [(f"Mapping[K, {w}]", f"dict[K, {g}]", "mapping") for w, g in CONTAINED]
    out += [
        ("list[object]", "list[AnyTensor]", "object"),
        ("dict[K, object]", "dict[K, AnyTensor]", "object"),
    ]
    return out


def output_kinds() -> list[tuple[str, str, str]]:
    """(type of vjp's ``ys``, of its ``cotangents``, its kind), in the order tried.

    Tuples of 2 to MAX_OUTPUTS outputs pair each cotangent with its output; one type for all
    (any length, a 1-tuple, a list) checks them all against it; longer mixed tuples only
    check that the outputs are float data, so that shorter mismatches stay errors.
    """
    one = "TensorLike[FE, Dv, D]"
    out = [(one, one, "one")]
    for n in range(2, MAX_OUTPUTS + 1):
        items = "tuple[" + ", ".join(f"TensorLike[F{i}, W{i}, R{i}]" for i in range(1, n + 1)) + "]"
        out.append((items, items, "tuple"))

    def longer(entry: str) -> str:
        return "tuple[" + f"{entry}, " * (MAX_OUTPUTS + 1) + f"*tuple[{entry}, ...]]"

    out += [
        (f"Sequence[{one}]", f"Sequence[{one}]", "homogeneous"),
        (longer("FloatData"), longer("AnyTensor"), "mixed"),
    ]
    return out


def overlaps(outputs: str, wrt: str) -> bool:
    """Whether mypy calls this overload overlapping a later one with an incompatible result.

    A tuple of wrt gives a tuple where a later Sequence overload gives a list; with
    per-position outputs, a Sequence of wrt also meets the later tuple-of-wrt overloads of
    the homogeneous outputs. (Both are shadowed in practice: the earlier overload wins.)
    """
    return wrt == "tuple" or (outputs == "tuple" and wrt == "sequence")


def typevars_body() -> str:
    def tv(name: str, bound: str) -> str:
        return f'{name} = TypeVar("{name}", bound={bound})\n'

    out = []
    for i in range(1, MAX_WRT + 1):
        out += [tv(f"E{i}", "FloatTag"), tv(f"V{i}", "DeviceTag"), tv(f"D{i}", "DimTag")]
    for i in range(1, MAX_OUTPUTS + 1):
        out += [tv(f"F{i}", "FloatTag"), tv(f"W{i}", "DeviceTag"), tv(f"R{i}", "DimTag")]
    out.append('K = TypeVar("K")\n')
    out.append('Mod = TypeVar("Mod", bound=Module)\n')
    return "".join(out)


def ov_flagged(name: str, params: str, result: str, overlap: bool) -> str:
    ignore = "  # type: ignore[overload-overlap]" if overlap else ""
    return f"@overload\ndef {name}({params}) -> {result}: ...{ignore}\n"


def grad_body() -> str:
    y = "y: TensorLike[FE, Dv, Dim0]"
    return "".join(
        ov_flagged("grad", f"{y}, wrt: {wrt}", result, overlaps("one", kind))
        for wrt, result, kind in wrt_kinds()
    )


def vjp_body() -> str:
    return "".join(
        ov_flagged("vjp", f"ys: {ys}, wrt: {wrt}, cotangents: {cot}", result, overlaps(outs, kind))
        for ys, cot, outs in output_kinds()
        for wrt, result, kind in wrt_kinds()
    )


def splice(path: Path, name: str, body: str, indent: str = "") -> str:
    text = path.read_text()
    begin = f"{indent}# --- BEGIN GENERATED {name} (scripts/gen_op_overloads.py) ---\n"
    end = f"{indent}# --- END GENERATED {name} ---\n"
    head, sep, rest = text.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not (sep and sep2):
        raise SystemExit(f"{path}: markers for {name} not found")
    return head + begin + body + end + tail


# --- the random draws: the rank from the shape; the element defaults to Float32 (Int64) -------

_GEN = "gen: Generator[Dv], shape: {shape}"
_DEVICE = "device: type[Dv] | None = None"


def draw_body(name: str, before: str, after: str, default: str, elems: str) -> str:
    """Overloads of a draw: with ``elem`` left out (the ``default`` element), then given (any
    tag of ``elems``'s TypeVar); ``before``/``after`` are the parameters around them."""
    head = _GEN + (f", {before}" if before else "")
    tail = f", {_DEVICE}" + (f", *, {after}" if after else "")
    omitted = f"{head}, elem: type[{default}] = ...{tail}"
    given = f"{head}, elem: type[{elems}]{tail}"
    return shape_overloads(name, omitted, tl(default, "{dim}")) + shape_overloads(
        name, given, tl(elems, "{dim}")
    )


RANDOM = OPS / "random.py"


# name -> (file, body, indent of the markers)
TARGETS = {
    "REDUCE": (OPS / "reduce.py", reduce_body, ""),
    "SELECT": (OPS / "select.py", select_body, ""),
    "ZEROS": (DATA / "factories.py", lambda: factory_body("zeros"), ""),
    "ONES": (DATA / "factories.py", lambda: factory_body("ones"), ""),
    "ZERO TENSOR": (OPS / "special.py", zero_tensor_body, "    "),
    "CONSTANT TENSOR": (OPS / "special.py", constant_tensor_body, "    "),
    "SCALABLE TENSOR": (DATA / "scalable.py", scalable_body, "    "),
    "RESHAPE": (OPS / "layout.py", reshape_body, ""),
    "TILE": (OPS / "layout.py", tile_body, ""),
    "STACK": (OPS / "join.py", stack_body, ""),
    "SQUEEZE": (OPS / "squeeze.py", squeeze_body, ""),
    "UNSQUEEZE": (OPS / "squeeze.py", unsqueeze_body, ""),
    "AUTODIFF TYPEVARS": (AUTODIFF, typevars_body, ""),
    "GRAD": (AUTODIFF, grad_body, ""),
    "VJP": (AUTODIFF, vjp_body, ""),
    "NORMAL": (
        RANDOM,
        lambda: draw_body("normal", "", "mean: float = 0.0, std: float = 1.0", "Float32", "FE"),
        "",
    ),
    "UNIFORM": (
        RANDOM,
        lambda: draw_body("uniform", "", "low: float = 0.0, high: float = 1.0", "Float32", "FE"),
        "",
    ),
    "BERNOULLI": (RANDOM, lambda: draw_body("bernoulli", "p: float", "", "Float32", "E"), ""),
    "RANDINT": (
        RANDOM,
        lambda: draw_body("randint", "low: int, high: int", "", "Int64", "IE"),
        "",
    ),
}


def stale(names: list[str], *, write: bool) -> list[Path]:
    """The target files whose generated blocks differ from this script's output."""
    out = []
    for name in names:
        path, body, indent = TARGETS[name]
        new = splice(path, name, body(), indent)
        if new != path.read_text():
            out.append(path)
            if write:
                path.write_text(new)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = stale(list(TARGETS), write=not check)
    if check and paths:
        print("stale generated code in: " + ", ".join(str(p) for p in paths))
        print("run: python scripts/gen_op_overloads.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
