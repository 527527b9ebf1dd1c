"""Random compiled programs that reuse memory (``memory.py``'s plan): operands
computed into their rows of a gather, element-wise steps written into an operand they read
last, small buffers kept and shared between steps. Each program is compiled twice — as on
small arrays (buffers kept) and as on large ones (nothing kept: rows gathered in place and
operands donated) — run twice each, and checked against numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from unittest import mock

import numpy as np
import numpy.typing as npt
from helpers import t32
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import typed_nn as tn
from typed_nn import ops
from typed_nn.evaluate import memory
from typed_nn.evaluate.pool import MIN_BYTES

Array = npt.NDArray[np.float64]
Expr = Any
N, M = 6, 5
RNG = np.random.default_rng(5)
LEAVES = [RNG.normal(size=(N, M)) for _ in range(3)]
W = RNG.normal(size=(M, M)) * 0.5


@dataclass
class Program:
    """A random sequence of steps over (N, M) values; ``build`` makes the expressions and
    their numpy values in float64."""

    steps: list[tuple[str, int, int]]
    returned: list[int]

    def build(self, leaves: list[Expr], w: Expr) -> tuple[list[Expr], list[Array]]:
        xs: list[tuple[Expr, Array]] = [(x, v) for x, v in zip(leaves, LEAVES, strict=True)]
        wv = W
        gathers: list[tuple[Expr, Array]] = []  # read again by later steps
        for kind, i, j in self.steps:
            (a, av), (b, bv) = xs[-1 - i % len(xs)], xs[-1 - j % len(xs)]  # recent ones first
            if kind == "tanh":
                xs.append((ops.tanh(a), np.tanh(av)))
            elif kind == "sin":
                xs.append((ops.sin(a), np.sin(av)))
            elif kind == "add":
                xs.append((a + b, av + bv))
            elif kind == "mul":
                xs.append((a * b, av * bv))
            elif kind == "scale":  # b read (reduced) before a is: orders the schedule
                xs.append((a * ops.reduce_mean(ops.tanh(b)), av * np.tanh(bv).mean()))
            elif kind == "matmul":
                xs.append((ops.tanh(a @ w), np.tanh(av @ wv)))
            elif kind == "concat":  # the gather read by a view of its rows and by a sum
                c, cv = ops.concat([a, b]), np.concatenate([av, bv])
                gathers.append((c, cv))
                xs.append((ops.narrow(c, 0, N, N) - ops.reduce_mean(c), cv[N:] - cv.mean()))
            elif kind == "stack":
                s, sv = ops.stack([a, b]), np.stack([av, bv])
                gathers.append((s, sv))
                xs.append((s[0] * ops.reduce_mean(s), sv[0] * sv.mean()))
            else:  # an earlier gather read again, after what ran in between
                g, gv = gathers[-1 - j % len(gathers)] if gathers else (b, bv)
                xs.append((a + ops.reduce_mean(g), av + gv.mean()))
        picked = sorted({r % len(xs) for r in self.returned} | {len(xs) - 1})
        return [xs[k][0] for k in picked], [xs[k][1] for k in picked]


KINDS = ("tanh", "sin", "add", "mul", "scale", "matmul", "concat", "stack", "again")


@st.composite
def programs(draw: st.DrawFn) -> Program:
    count = draw(st.integers(2, 14))
    index = st.integers(0, 7)
    steps = [(draw(st.sampled_from(KINDS)), draw(index), draw(index)) for _ in range(count)]
    return Program(steps, draw(st.lists(index, max_size=3)))


@settings(
    max_examples=1200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(programs())
def test_compiled_programs_reusing_memory_match_numpy(program: Program) -> None:
    leaves, w = [t32(v.astype(np.float32)) for v in LEAVES], t32(W.astype(np.float32))
    _, want = program.build(leaves, w)
    for keep_below in (MIN_BYTES, 0):
        with mock.patch.object(memory, "MIN_BYTES", keep_below):
            f = tn.compile(lambda: program.build(leaves, w)[0])
            for run in range(2):
                got = [t.numpy() for t in f()]
                for k, (g, v) in enumerate(zip(got, want, strict=True)):
                    np.testing.assert_allclose(
                        g, v, rtol=1e-4, atol=1e-5, err_msg=f"root {k}, run {run}, {keep_below=}"
                    )
