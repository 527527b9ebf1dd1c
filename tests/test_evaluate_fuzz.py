"""The differential fuzzer's programs (fuzz_programs.py), a fixed few in every test run: eager
and compiled, plain and under the sanitizer, against numpy. ``.ci/run`` also runs
``scripts/fuzz.py`` for a fixed time with a fresh seed; a longer run is in the issue notes."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from fuzz_programs import make_program, run_program

import typed_nn as tn
from typed_nn.ops import declare


@pytest.mark.parametrize("chunk", range(4))
def test_random_programs_match_numpy(chunk: int) -> None:
    for k in range(chunk * 75, (chunk + 1) * 75):
        run_program(make_program(k), sanitize=k % 3 == 0)


def test_a_wrong_number_fails_the_program_and_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program that returns values computed through tanh (seed 3's): a tanh 1 % off is
    caught, and the message holds what reproduces it."""
    monkeypatch.setattr(declare, "_IMPLS", copy.deepcopy(declare._IMPLS))

    def off(x: Any) -> Any:
        return np.tanh(x) * np.asarray(1.01, x.dtype)

    declare.implement("tanh", tn.CPU, priority=10)(off)
    program = make_program(3)
    with pytest.raises(AssertionError, match=r"(?s)eager, call 1.*# seed 3, N=\d, M=\d.*def body"):
        run_program(program)
