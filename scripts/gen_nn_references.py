"""Write the references of ``typed_nn.nn``'s catalogue and ``typed_nn.optim`` under
tests/references/ (needs torch): for each case of tests/nn_cases.py, ``nn_<case>.safetensors``
holds PyTorch's module state dict (``state/<key>``, every float entry redrawn so that biases
and statistics are not trivial), the inputs (``input/<name>``), the output, the gradients of
``sum(out ** 2) / 2`` (``grad/<key>``) and the state dict after the forward (``after/<key>``:
batch-norm statistics); for each optimizer, ``optim_<rule>.safetensors`` holds an MLP's
state dict before and after four steps. The tests compare typed_nn with them where torch is
not installed. Run from the repository root: ``python scripts/gen_nn_references.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import nn_cases  # noqa: E402

OUT = ROOT / "tests" / "references"


def _redrawn(module: Any, gen: torch.Generator) -> None:
    with torch.no_grad():
        for name, value in module.state_dict().items():
            if value.is_floating_point():
                drawn = torch.randn(value.shape, generator=gen, dtype=value.dtype) * 0.5
                value.copy_(drawn.abs() + 0.5 if name.endswith("running_var") else drawn)


def _host(d: dict[str, Any]) -> dict[str, np.ndarray]:
    # C order: safetensors writes an array's memory as it lies (a transposed view permuted)
    return {k: np.array(v.detach().cpu().numpy(), copy=True, order="C") for k, v in d.items()}


def module_case(name: str, case: nn_cases.Case) -> None:
    torch.manual_seed(0)
    module = case.theirs(torch)
    _redrawn(module, torch.Generator().manual_seed(1))
    tensors = {f"state/{k}": v for k, v in _host(module.state_dict()).items()}
    tensors |= {f"input/{k}": v for k, v in case.inputs.items()}
    out = case.theirs_out(torch, module, case.inputs)
    (out.square().sum() / 2).backward()
    tensors["output"] = np.array(out.detach().numpy(), copy=True, order="C")
    grads = {k: p.grad for k, p in module.named_parameters() if p.grad is not None}
    tensors |= {f"grad/{k}": v for k, v in _host(grads).items()}
    tensors |= {f"after/{k}": v for k, v in _host(module.state_dict()).items()}
    save_file(tensors, str(OUT / f"nn_{name}.safetensors"))


def optimizer_case(rule: str) -> None:
    torch.manual_seed(0)
    module = nn_cases.torch_mlp(torch)
    _redrawn(module, torch.Generator().manual_seed(2))
    tensors = {f"state/{k}": v for k, v in _host(module.state_dict()).items()}
    opt = nn_cases.OPTIMIZERS[rule][1](torch, module.parameters())
    x = torch.from_numpy(nn_cases.OPT_INPUT)
    for _ in range(nn_cases.OPT_STEPS):
        opt.zero_grad()
        (module(x).square().sum() / 2).backward()
        opt.step()
    tensors |= {f"final/{k}": v for k, v in _host(module.state_dict()).items()}
    save_file(tensors, str(OUT / f"optim_{rule}.safetensors"))


def main() -> None:
    for name, case in nn_cases.CASES.items():
        module_case(name, case)
    for rule in nn_cases.OPTIMIZERS:
        optimizer_case(rule)
    print(f"wrote {len(nn_cases.CASES) + len(nn_cases.OPTIMIZERS)} files to {OUT}")


if __name__ == "__main__":
    main()
