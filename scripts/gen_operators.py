"""Generate the typed operator overloads of TensorLike and Tensor, and those of ``ops.dot`` and
``ops.matmul``.

Python's operators must say, for mypy and pyright, the rank of their result from the ranks of
their operands (element-wise: result rank = max; ``@`` and ``ops.matmul`` follow numpy: result
rank = max for two (stacks of) matrices, one less than the other operand's with a vector;
``dot(a, b, k)`` contracts k dims, result rank = a + b - 2k). The overloads go up to
``typed_nn.tags.MAX_RANK`` (30-odd per operator at rank 6): this script writes them between marker comments in ``typed_nn/data/tensor.py``,
``typed_nn/data/tensor.py`` and ``typed_nn/ops/structure.py`` (``dot``, ``matmul``).

Run ``python scripts/gen_operators.py`` after changing it (or the rank tags); ``--check`` exits 1
when the committed files are stale (tests/test_ops_reduce.py runs that for both generators).
"""

from __future__ import annotations

import importlib.util
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
TENSOR_LIKE = ROOT / "typed_nn" / "data" / "tensor.py"
TENSOR = ROOT / "typed_nn" / "data" / "tensor.py"
STRUCTURE = ROOT / "typed_nn" / "ops" / "structure.py"
BEGIN = "    # --- BEGIN GENERATED {name} (scripts/gen_operators.py) ---\n"
END = "    # --- END GENERATED {name} ---\n"
IND = "    "

# (dunder, the op's declaration in typed_nn.ops.arithmetic, float elements only). Operators
# build their node directly (one Python call less per node than going through the builder).
BINARY = [
    ("__add__", "ADD", False),
    ("__sub__", "SUB", False),
    ("__mul__", "MUL", False),
    ("__truediv__", "DIV", True),
]
REFLECTED = [
    ("__radd__", "ADD", False),
    ("__rsub__", "SUB", False),
    ("__rmul__", "MUL", False),
    ("__rtruediv__", "DIV", True),
]


def tl(elem: str, dim: str) -> str:
    return f"TensorLike[{elem}, Dv, {dim}]"


def overload(name: str, self_t: str | None, other: str, result: str) -> str:
    self_part = f"self: {self_t}" if self_t else "self"
    return f"{IND}@overload\n{IND}def {name}({self_part}, other: {other}) -> {result}: ...\n"


def self_type(dim: str, float_only: bool) -> str | None:
    """The annotation of ``self`` for an overload whose left operand has rank ``dim``.

    Float-only overloads ask for ``Tagged[FloatTag, rank]``, a protocol with covariant tag
    arguments: concrete float data and data generic over a float TypeVar both match, Int32
    data does not. (A self-type ``TensorLike[FE, Dv, D]`` would do for pyright, but mypy does
    not check FE's bound when it binds ``self`` to a subclass: ``Tensor[Int32, ...] / x``
    would pass.) Element, device and rank of the result come from the class's own E, Dv, D.
    """
    if float_only:
        return f"Tagged[FloatTag, {'DimTag' if dim == 'D' else dim}]"
    return None if dim == "D" else tl("E", dim)


def binary_block(name: str, builder: str, float_only: bool) -> str:
    out: list[str] = []
    # Same rank, a scalar on either side, then each strictly-lower-rank pair.
    out.append(overload(name, self_type("D", float_only), tl("E", "D"), tl("E", "D")))
    out.append(overload(name, self_type("D", float_only), tl("E", "Dim0"), tl("E", "D")))
    out.append(overload(name, self_type("Dim0", float_only), tl("E", "D2"), tl("E", "D2")))
    for hi in range(2, MAX_RANK + 1):
        for lo in range(1, hi):
            high, low = f"Dim{hi}", f"Dim{lo}"
            out.append(overload(name, self_type(high, float_only), tl("E", low), tl("E", high)))
            out.append(overload(name, self_type(low, float_only), tl("E", high), tl("E", high)))
    out.extend(number_overloads(name, float_only))
    out.append(
        f"{IND}def {name}(self, other: object) -> AnyTensor:\n"
        f"{IND}{IND}return UP.build(UP.{builder}, (self, other))\n"
    )
    return "".join(out)


def number_overloads(name: str, float_only: bool) -> list[str]:
    out = []
    if not float_only:
        # int goes first: an Int32 tensor accepts ints; only float tensors accept floats.
        out.append(overload(name, None, "int", tl("E", "D")))
    out.append(overload(name, self_type("D", True), "float", tl("E", "D")))
    return out


def reflected_block(name: str, builder: str, float_only: bool) -> str:
    if float_only:  # one signature: a float on the left of a float tensor
        return (
            f"{IND}def {name}(self: {self_type('D', True)}, other: float) -> {tl('E', 'D')}:\n"
            f"{IND}{IND}return UP.build(UP.{builder}, (other, self))\n"
        )
    out = number_overloads(name, float_only)
    out.append(
        f"{IND}def {name}(self, other: object) -> AnyTensor:\n"
        f"{IND}{IND}return UP.build(UP.{builder}, (other, self))\n"
    )
    return "".join(out)


def matmul_rank(a: int, b: int) -> int:
    """numpy's (PEP 465) result rank of ``a @ b``: batch dims broadcast to the higher rank, a
    vector operand's promoted dim removed."""
    if a == 1 or b == 1:
        return a + b - 2
    return max(a, b)


def matmul_pairs() -> list[tuple[int, int, int]]:
    return [
        (a, b, matmul_rank(a, b)) for a in range(1, MAX_RANK + 1) for b in range(1, MAX_RANK + 1)
    ]


# A self type variable used once on purpose (it only selects the receiver): pyright warns.
ONCE = "  # pyright: ignore[reportInvalidTypeVarUse]"


def non_scalar(elem: str) -> str:
    """Data of any rank but 0 (a union: the rank argument is invariant)."""
    return " | ".join(tl(elem, f"Dim{r}") for r in range(1, MAX_RANK + 1))


def unknown_rank_overloads(name: str) -> list[str]:
    """The overloads of ``@`` for an operand of unknown rank (``TensorLike[E, Dv, Any]``, the
    rank known at run time only), ahead of the concrete-rank ones: ``Any`` matches every
    concrete rank, and a checker gives the first overload it matches (mypy and pyrefly: a
    made-up rank, ``<unknown rank> @ Matrix`` typed as a Vector) or calls the call ambiguous
    (pyright, ty: ``Any``). ``UnknownRankTensorLike`` (``self``) and ``UR`` (``other``) match only
    an ``Any`` rank (typed_nn.tags.UnknownRank), and the result keeps the element and the
    device. Type variables, so that pyright takes the first overload an ``Any`` rank matches
    rather than calling the call ambiguous; ``self``'s is the whole type, bounded by data of
    rank UnknownRank: mypy keeps an overload for a receiver when the receiver matches its
    ``self`` type with the type variables erased to Any, which would keep
    ``TensorLike[E, Dv, UR]`` for every receiver. ``other`` is matched twice, by the class
    and then by ``UR``: pyright takes the first match once one of them has a type variable
    there, and mypy reports a call that matches nothing against the first overload its
    arguments resemble: the class gives "Unsupported operand types", ``UR`` would give "Value
    of type variable". (mypy still calls ``Matrix @ <unknown
    rank>`` ambiguous, ``TensorLike[Any, Any, Any]``: it weighs every overload that an
    argument containing ``Any`` matches; ``self`` is not such an argument.)"""
    unknown = tl("E", "Any")
    return [
        f"{IND}@overload\n"
        f"{IND}def {name}(self: UnknownRankTensorLike, other: {unknown}) -> {unknown}: ...{ONCE}\n",
        f"{IND}@overload\n"
        f"{IND}def {name}(self: {non_scalar('E')}, other: {tl('E', 'UnknownRank')}) -> {unknown}: ...\n",
        f"{IND}@overload\n"
        f"{IND}def {name}(self: {non_scalar('E')}, other: {tl('E', 'UR')}) -> {unknown}: ...\n",
    ]


def matmul_block() -> str:
    out = unknown_rank_overloads("__matmul__")
    out += [
        overload("__matmul__", tl("E", f"Dim{a}"), tl("E", f"Dim{b}"), tl("E", f"Dim{r}"))
        for a, b, r in matmul_pairs()
    ]
    out.append(
        f"{IND}def __matmul__(self, other: object) -> AnyTensor:\n"
        f"{IND}{IND}return UP.matmul(self, other)\n"
    )
    return "".join(out)


def getitem_block(cls: str, runtime: str) -> str:
    # Data of unknown rank first (see unknown_rank_overloads): else ``x[i]`` is a Scalar.
    out: list[str] = [
        f"{IND}@overload\n"
        f"{IND}def __getitem__(self: UnknownRank{cls}, index: int) -> {cls}[E, Dv, Any]: ...{ONCE}\n"
    ]
    for r in range(1, MAX_RANK + 1):
        out.append(
            f"{IND}@overload\n"
            f"{IND}def __getitem__(self: {cls}[E, Dv, Dim{r}], index: int) -> {cls}[E, Dv, Dim{r - 1}]: ...\n"
        )
    out.append(f"{IND}def __getitem__(self, index: int) -> {cls}[Any, Any, Any]:\n{runtime}")
    return "".join(out)


def tensor_like_body() -> str:
    parts = [binary_block(*spec) for spec in BINARY]
    parts += [reflected_block(*spec) for spec in REFLECTED]
    parts.append(
        f"{IND}def __neg__(self) -> TensorLike[E, Dv, D]:\n{IND}{IND}return UP.negative(self)\n"
    )
    parts.append(
        f"{IND}def __abs__(self) -> TensorLike[E, Dv, D]:\n{IND}{IND}return UP.abs(self)\n"
    )
    parts.append(matmul_block())
    parts.append(getitem_block("TensorLike", f"{IND}{IND}return UP.slice(self, index)\n"))
    return "".join(parts)


def tensor_body() -> str:
    return getitem_block("Tensor", f"{IND}{IND}return self._slice(index)\n")


def dot_body() -> str:
    out: list[str] = []
    for k in range(1, MAX_RANK + 1):
        default = " = 1" if k == 1 else ""
        for a in range(k, MAX_RANK + 1):
            for b in range(k, MAX_RANK + 1):
                r = a + b - 2 * k
                if r <= MAX_RANK:
                    out.append(
                        f"@overload\ndef dot(a: TensorLike[E, Dv, Dim{a}], b: TensorLike[E, Dv, Dim{b}], "
                        f"k: Literal[{k}]{default}) -> TensorLike[E, Dv, Dim{r}]: ...\n"
                    )
    out.append(
        "def dot(a: AnyTensor, b: AnyTensor, k: int = 1) -> AnyTensor:\n"
        '    """Contract the last ``k`` dims of ``a`` with the first ``k`` dims of ``b``.\n\n'
        "    ``dot(Matrix(4, 3), Matrix(3, 2))`` is a Matrix(4, 2); ``dot(Vector(3), Vector(3))`` a\n"
        "    Scalar. Raises ShapeError when the contracted dims differ.\n"
        '    """\n'
        "    return build(DOT, (a, b), (python_int(k),))\n"
    )
    return "".join(out)


def matmul_body() -> str:
    out = [
        f"@overload\ndef matmul(a: TensorLike[E, Dv, Dim{a}], b: TensorLike[E, Dv, Dim{b}]) "
        f"-> TensorLike[E, Dv, Dim{r}]: ...\n"
        for a, b, r in matmul_pairs()
    ]
    out.append(
        "def matmul(a: AnyTensor, b: AnyTensor) -> AnyTensor:\n"
        '    """``a @ b`` as numpy\'s matmul (PEP 465): batched over the leading dims, which\n'
        "    broadcast; a vector operand is promoted to a matrix and its promoted dim removed.\n\n"
        "    ``matmul(Tensor(8, 4, 3), Tensor(8, 3, 5))`` is (8, 4, 5); ``matmul(Vector(3),\n"
        "    Tensor(2, 3, 4))`` is (2, 4). Raises ShapeError when the matrix dims are not aligned\n"
        "    or the batch dims do not broadcast.\n"
        '    """\n'
        "    return build_matmul(a, b)\n"
    )
    return "".join(out)


def splice(path: Path, name: str, body: str, indent: str = IND) -> str:
    text = path.read_text()
    begin = BEGIN.format(name=name).replace(IND, indent, 1)
    end = END.format(name=name).replace(IND, indent, 1)
    head, sep, rest = text.partition(begin)
    if not sep:
        raise SystemExit(f"{path}: marker {begin.strip()!r} not found")
    _, sep, tail = rest.partition(end)
    if not sep:
        raise SystemExit(f"{path}: marker {end.strip()!r} not found")
    return head + begin + body + end + tail


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, name, body, indent in [
        (TENSOR_LIKE, "OPERATORS", tensor_like_body(), IND),
        (TENSOR, "GETITEM", tensor_body(), IND),
        (STRUCTURE, "DOT", dot_body(), ""),
        (STRUCTURE, "MATMUL", matmul_body(), ""),
    ]:
        new = splice(path, name, body, indent)
        if new != path.read_text():
            stale.append(path)
            if not check:
                path.write_text(new)
    if check and stale:
        print("stale generated code in: " + ", ".join(str(p) for p in stale))
        print("run: python scripts/gen_operators.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
