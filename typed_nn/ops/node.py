"""``Operation``: an immutable lazy node of the expression graph (MetaNN's Operation).

Building a node runs its op's checks at once (shape, element, device; a mismatch is an error
on the line that built it), records that line, and computes nothing. Nodes are data too: they
can be operands of further nodes, registered, and evaluated. Equality is provenance equality:
two nodes are equal when they apply the same op with equal parameters to equal operands.
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

import numpy as np

from .. import tracing
from ..data.tensor import AnyTensor, TensorLike, check_elem_on_device
from ..tags import D, Dv, E, IntTag
from .declare import OpDecl, Operand, Params

__all__ = [
    "AnyOp",
    "Cotangents",
    "NumpyNumber",
    "Operation",
    "build",
    "format_site",
    "user_site",
]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_INSIDE: dict[str, bool] = {}
"""Whether a source file belongs to the typed_nn package (a dict hit per frame is about
three times faster than the prefix test; a program has few files)."""


def user_site() -> tuple[str, int] | None:
    """(file, line) of the innermost caller outside the typed_nn package."""
    frame: FrameType | None = sys._getframe(1)
    inside = _INSIDE
    while frame is not None:
        name = frame.f_code.co_filename
        known = inside.get(name)
        if known is None:
            known = inside[name] = name.startswith(_PACKAGE_DIR)
        if not known:
            break
        frame = frame.f_back
    if frame is None:
        return None
    return frame.f_code.co_filename, frame.f_lineno


def format_site(site: tuple[str, int] | None) -> str:
    """``model.py:42`` for a build site; ``unknown`` when none was recorded."""
    if site is None:
        return "unknown"
    return f"{os.path.basename(site[0])}:{site[1]}"


class Operation(TensorLike[E, Dv, D]):
    """A lazy result: ``op`` applied to ``operands`` with ``params``.

    Attributes are read-only: ``op`` (the declaration), ``operands`` (data or numbers),
    ``params`` (hashable values), ``built_at`` (the user line that built it).
    """

    __slots__ = (
        "_decl",
        "_device",
        "_elem",
        "_epoch",
        "_hash",
        "_operands",
        "_params",
        "_result",
        "_shape",
        "_site",
    )

    def __init__(
        self,
        decl: OpDecl,
        operands: tuple[Operand, ...],
        params: Params,
        shape: tuple[int, ...],
        elem: type[E],
        device: type[Dv],
        site: tuple[str, int] | None,
    ) -> None:
        self._decl = decl
        self._operands = operands
        self._params = params
        self._shape = shape
        self._elem = elem
        self._device = device
        self._site = site
        self._hash: int | None = None
        self._result: Any = None  # Tensor cached by the evaluator
        self._epoch = -1

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def elem(self) -> type[E]:
        return self._elem

    @property
    def device(self) -> type[Dv]:
        return self._device

    @property
    def op(self) -> OpDecl:
        """The op's declaration."""
        return self._decl

    @property
    def operands(self) -> tuple[Operand, ...]:
        """The operands: data objects, or numbers for ops that accept them."""
        return self._operands

    @property
    def params(self) -> Params:
        """The op's parameters, in the order of ``op.params``."""
        return self._params

    @property
    def built_at(self) -> str:
        """The user line that built this node, e.g. ``model.py:42``."""
        return format_site(self._site)

    @property
    def site(self) -> tuple[str, int] | None:
        """(file, line) that built this node, if known."""
        return self._site

    def _kind(self) -> str:
        return self._decl.name

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Operation) or self._decl is not other._decl:
            return False
        if hash(self) != hash(other):
            return False
        return self._params == other._params and self._operands == other._operands

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self._decl.name, self._params, self._operands))
            self._hash = h
        return h

    def __copy__(self) -> Operation[E, Dv, D]:
        # Nodes are immutable; a copy is the node itself, so it shares the cached result.
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Operation[E, Dv, D]:
        return self


AnyOp = Operation[Any, Any, Any]
Cotangents = tuple[AnyTensor | None, ...]
"""What an op's vjp returns: one cotangent per operand (None: that operand gets none)."""


class NumpyNumber(Exception):
    """Raised by an op's checks when a numpy scalar (``np.float32(2)``) stands for a number;
    :func:`build` turns the numpy scalars into Python numbers and checks again. (A signal, not
    an error: testing every operand's type in ``build`` would slow every node down.)"""


def _python_number(x: Operand) -> Operand:
    """A numpy number as the Python number of its value (float(), not .item(): a longdouble's
    .item() stays a numpy scalar); anything else as it is."""
    if isinstance(x, np.floating) or (isinstance(x, np.generic) and x.dtype.name == "bfloat16"):
        return float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def build(decl: OpDecl, operands: tuple[Operand, ...], params: Params = ()) -> AnyTensor:
    """Check ``operands`` against ``decl`` and return the new lazy node.

    Numpy scalars stand for Python numbers where the op takes numbers (``x * np.float32(2)``
    is ``x * 2.0``), with the same element rules.
    """
    if tracing.active[0]:  # tn.compile: a tensor assigned earlier in the trace reads as its
        trace = tracing.state.trace  # new value, as in eager code
        if trace is not None and trace.assigns:
            operands = tuple(map(trace.read, operands))
    try:
        shape, elem, device = decl.infer(decl, operands, params)
    except NumpyNumber:
        operands = tuple(_python_number(x) for x in operands)
        shape, elem, device = decl.infer(decl, operands, params)
    check_elem_on_device(elem, device, f"build {decl.name}")
    if decl.numbers and issubclass(elem, IntTag):
        # infer checked the numbers fit; store them as ints so that the backend keeps the
        # tensor's dtype (numpy promotes int32 + 2.0 to float64).
        operands = tuple(int(x) if type(x) is float else x for x in operands)
    return Operation(decl, operands, params, shape, elem, device, user_site())
