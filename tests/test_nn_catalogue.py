"""Every module of ``typed_nn.nn``'s catalogue and every optimizer of ``typed_nn.optim``
against PyTorch's, through references PyTorch wrote (``scripts/gen_nn_references.py``; the
cases in tests/nn_cases.py): the state dict loads by PyTorch's names without a mapping, and
the output, the gradients of ``sum(out ** 2) / 2``, the state after the forward (batch-norm
statistics) and four optimizer steps match. No torch is needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nn_cases
import numpy as np
import pytest
from safetensors.numpy import load_file

import typed_nn as tn
from typed_nn import nn

REFERENCES = Path(__file__).resolve().parent / "references"
RTOL, ATOL = 1e-4, 1e-5


def _load(name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(state dict, inputs, everything) of a reference file."""
    data = load_file(str(REFERENCES / name))
    state = {k[len("state/") :]: v for k, v in data.items() if k.startswith("state/")}
    inputs = {k[len("input/") :]: v for k, v in data.items() if k.startswith("input/")}
    return state, inputs, data


@pytest.mark.parametrize("name", nn_cases.CASES)
def test_a_module_matches_pytorchs_output_gradients_and_state(name: str) -> None:
    case = nn_cases.CASES[name]
    state, inputs, data = _load(f"nn_{name}.safetensors")
    model = case.ours()
    assert nn.load_state_dict(model, state) == []  # PyTorch's names and layouts as they are
    out = case.ours_out(model, inputs)
    np.testing.assert_allclose(tn.evaluate(out).numpy(), data["output"], rtol=RTOL, atol=ATOL)
    grads = dict(nn.named_parameters(tn.grad(nn_cases.loss_of(out), model)))
    expected = {k[len("grad/") :]: v for k, v in data.items() if k.startswith("grad/")}
    assert sorted(grads) == sorted(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(
            tn.evaluate(grads[key]).numpy(), want, err_msg=key, rtol=RTOL, atol=ATOL
        )
    for key, value in nn.state_dict(model).items():
        np.testing.assert_allclose(value, data[f"after/{key}"], err_msg=key, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("rule", nn_cases.OPTIMIZERS)
def test_an_optimizer_matches_pytorchs_steps(rule: str, compiled: bool) -> None:
    state, _, data = _load(f"optim_{rule}.safetensors")
    model = nn_cases.mlp()
    nn.load_state_dict(model, state)
    opt = nn_cases.OPTIMIZERS[rule][0](model)
    x = nn_cases.tensor(nn_cases.OPT_INPUT)

    def step(x: Any) -> None:
        opt.step(tn.grad(nn_cases.loss_of(model(x)), model))

    run = tn.compile(step) if compiled else step
    for _ in range(nn_cases.OPT_STEPS):
        run(x)
    assert opt.step_count == nn_cases.OPT_STEPS
    for key, value in nn.state_dict(model).items():
        np.testing.assert_allclose(value, data[f"final/{key}"], err_msg=key, rtol=RTOL, atol=ATOL)
