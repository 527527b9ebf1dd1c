"""Generate the typed overloads of the reductions, the select ops, ``tn.grad`` and ``tn.vjp``.

The result rank of ``reduce_sum`` / ``reduce_mean`` / ``reduce_max`` / ``argmax`` depends on
which dims are reduced, and that of ``maximum`` / ``where`` / ``interpolate`` on the ranks of
their operands (MetaNN broadcasting: result rank = the highest); the gradients of ``grad`` /
``vjp`` come in the structure of ``wrt``, each typed like its input. mypy and pyright learn it
from ``@overload``s, which this script writes between marker comments in
``typed_nn/ops/reduce.py``, ``typed_nn/ops/select.py`` and ``typed_nn/autodiff/api.py``.

Run ``python scripts/gen_op_overloads.py`` after changing it; ``--check`` exits 1 when the
committed files are stale (tests/test_ops_reduce.py runs that, for every target).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REDUCE = ROOT / "typed_nn" / "ops" / "reduce.py"
SELECT = ROOT / "typed_nn" / "ops" / "select.py"
AUTODIFF = ROOT / "typed_nn" / "autodiff" / "api.py"
MAX_RANK = 4
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


def ov(name: str, params: str, result: str) -> str:
    return f"@overload\ndef {name}({params}) -> {result}: ...\n"


def reduction_block(name: str, elem: str, doc: str) -> str:
    keep_false = "keep_dim: Literal[False] = False"
    out = [
        ov(
            name,
            f"x: {tl(elem, 'D')}, dims: int | tuple[int, ...] | None = None, *, "
            "first: int | None = None, keep_dim: Literal[True]",
            tl(elem, "D"),
        ),
        ov(
            name,
            f"x: {tl(elem, 'D')}, dims: None = None, *, first: None = None, {keep_false}",
            tl(elem, "Dim0"),
        ),
        ov(name, f"x: {tl(elem, 'D')}, dims: tuple[()], *, {keep_false}", tl(elem, "D")),
        ov(
            name,
            f"x: {tl(elem, 'D')}, dims: None = None, *, first: Literal[0], {keep_false}",
            tl(elem, "D"),
        ),
    ]
    for n in range(1, MAX_RANK + 1):
        dims = "int | tuple[int]" if n == 1 else "tuple[" + ", ".join(["int"] * n) + "]"
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


def rank_patterns(arity: int) -> list[tuple[tuple[str, ...], str]]:
    """(operand ranks, result rank) covering every mix of at most two distinct ranks.

    A generic ``D`` with scalars anywhere comes first; then each pair of concrete ranks.
    Three distinct non-zero ranks (Tensor3, Matrix, Vector together) are left out: they pass
    at run time but would need 24 more overloads per ternary op.
    """
    out = [(p, "D") for p in itertools.product(("D", "Dim0"), repeat=arity) if "D" in p]
    for hi in range(2, MAX_RANK + 1):
        for lo in range(1, hi):
            for p in itertools.product((hi, lo), repeat=arity):
                if hi in p and lo in p:
                    out.append((tuple(f"Dim{r}" for r in p), f"Dim{hi}"))
    return out


def maximum_block() -> str:
    out = [
        ov("maximum", f"a: {tl('E', a)}, b: {tl('E', b)}", tl("E", r))
        for (a, b), r in rank_patterns(2)
    ]
    out += [
        ov("maximum", f"a: {tl('E', 'D')}, b: int", tl("E", "D")),
        ov("maximum", f"a: int, b: {tl('E', 'D')}", tl("E", "D")),
        ov("maximum", f"a: {tl('FE', 'D')}, b: float", tl("FE", "D")),
        ov("maximum", f"a: float, b: {tl('FE', 'D')}", tl("FE", "D")),
    ]
    out.append(
        "def maximum(a: object, b: object) -> AnyTensor:\n"
        '    """Element-wise maximum with MetaNN broadcasting; either side may be a number."""\n'
        "    return build(MAXIMUM, (a, b))\n"
    )
    return "".join(out)


def where_block() -> str:
    out = [
        ov("where", f"cond: {tl('C', c)}, a: {tl('E', a)}, b: {tl('E', b)}", tl("E", r))
        for (c, a, b), r in rank_patterns(3)
    ]
    out.append(
        "def where(cond: AnyTensor, a: AnyTensor, b: AnyTensor) -> AnyTensor:\n"
        '    """``a`` where ``cond`` is non-zero, else ``b``; all three broadcast."""\n'
        "    return build(WHERE, (cond, a, b))\n"
    )
    return "".join(out)


def interpolate_block() -> str:
    out = [
        ov("interpolate", f"a: {tl('FE', a)}, b: {tl('FE', b)}, lam: {tl('FE', c)}", tl("FE", r))
        for (a, b, c), r in rank_patterns(3)
    ]
    out.append(
        "def interpolate(a: AnyTensor, b: AnyTensor, lam: AnyTensor) -> AnyTensor:\n"
        '    """a * lam + b * (1 - lam) element-wise; all three broadcast (MetaNN Interpolate)."""\n'
        "    return build(INTERPOLATE, (a, b, lam))\n"
    )
    return "".join(out)


def select_body() -> str:
    return "\n\n".join([maximum_block(), where_block(), interpolate_block()])


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

    One input; tuples typed position by position; then tuples, sequences and mappings of
    each CONTAINED entry; last ``list[object]`` / ``dict[K, object]``, what mypy infers for a
    list or dict literal mixing ranks (invariant, so a list of Int32 data still fails).
    """
    out = [(wrt_entry(1), wrt_entry(1), "one")]
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


def splice(path: Path, name: str, body: str) -> str:
    text = path.read_text()
    begin = f"# --- BEGIN GENERATED {name} (scripts/gen_op_overloads.py) ---\n"
    end = f"# --- END GENERATED {name} ---\n"
    head, sep, rest = text.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not (sep and sep2):
        raise SystemExit(f"{path}: markers for {name} not found")
    return head + begin + body + end + tail


TARGETS = {
    "REDUCE": (REDUCE, reduce_body),
    "SELECT": (SELECT, select_body),
    "AUTODIFF TYPEVARS": (AUTODIFF, typevars_body),
    "GRAD": (AUTODIFF, grad_body),
    "VJP": (AUTODIFF, vjp_body),
}


def stale(names: list[str], *, write: bool) -> list[Path]:
    """The target files whose generated blocks differ from this script's output."""
    out = []
    for name in names:
        path, body = TARGETS[name]
        new = splice(path, name, body())
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
