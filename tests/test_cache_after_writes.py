"""Every library call that writes into a tensor's memory outside an evaluation (loaders,
optimizer settings, layer state) forgets results cached before it, as ``assign`` does: an
expression evaluated before the write and read again after it sees the new values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import typed_nn as tn
from typed_nn import nn, optim
from typed_nn.layers import LayerInput, LayerOutput
from typed_nn.layers.state_entry import tensor_entry
from typed_nn.model import (
    from_torch_state_dict,
    load_checkpoint,
    load_weights,
    save_checkpoint,
    save_weights,
    to_torch_state_dict,
    torch_mapping,
)
from typed_nn.train.classifier import build_mlp

Load = Callable[[nn.Linear[Any, Any], Path], None]


def _zeros_of(model: nn.Module) -> dict[str, Any]:
    return {k: np.zeros_like(v) for k, v in nn.state_dict(model).items()}


def _state_dict(model: nn.Linear[Any, Any], tmp: Path) -> None:
    nn.load_state_dict(model, _zeros_of(model))


def _weights_file(model: nn.Linear[Any, Any], tmp: Path) -> None:
    named = {k: t for k, t in nn.named_parameters(model) if isinstance(t, tn.Tensor)}
    zeros = {k: tn.zeros(t.shape, tn.Float32, tn.CPU) for k, t in named.items()}
    save_weights(tmp / "w.safetensors", zeros)
    load_weights(tmp / "w.safetensors", named)


def _checkpoint(model: nn.Linear[Any, Any], tmp: Path) -> None:
    zeros = nn.Linear(3, 2)
    nn.load_state_dict(zeros, _zeros_of(zeros))
    save_checkpoint(tmp / "c.safetensors", zeros, optim.SGD(zeros, lr=0.1), epoch=0)
    load_checkpoint(tmp / "c.safetensors", model, optim.SGD(model, lr=0.1))


@pytest.mark.parametrize("load", [_state_dict, _weights_file, _checkpoint])
def test_an_expression_read_again_after_a_load_sees_the_loaded_weights(
    load: Load, tmp_path: Path
) -> None:
    tn.manual_seed(0)
    model = nn.Linear(3, 2)
    x = tn.tensor(np.ones((1, 3), np.float32), tn.Float32, tn.CPU, tn.Dim2)
    y = model(x)
    assert np.abs(y.numpy()).max() > 0  # evaluated and cached
    load(model, tmp_path)
    np.testing.assert_array_equal(y.numpy(), np.zeros((1, 2), np.float32))


def test_a_layer_output_read_again_after_from_torch_state_dict() -> None:
    net, params = build_mlp([4, 3], "relu", seed=0)
    x = tn.tensor(np.ones((1, 4), np.float32), tn.Float32, tn.CPU, tn.Dim2)
    out = net.feed_forward(net.input_cont().set(LayerInput, x)).get(LayerOutput)
    assert np.abs(out.numpy()).max() > 0
    mapping = torch_mapping.mlp("mlp", 1)
    state = {k: v * 0 for k, v in to_torch_state_dict(params, mapping).items()}
    from_torch_state_dict(state, params, mapping)
    np.testing.assert_array_equal(out.numpy(), np.zeros((1, 3), np.float32))


def test_a_value_read_again_after_a_state_entry_is_written() -> None:
    t = tn.tensor(np.ones(3, np.float32), tn.Float32, tn.CPU, tn.Dim1)
    doubled = t * 2.0
    np.testing.assert_array_equal(doubled.numpy(), [2.0, 2.0, 2.0])
    tensor_entry("t", "buffer", t).write(np.full(3, 5.0, np.float32))
    np.testing.assert_array_equal(doubled.numpy(), [10.0, 10.0, 10.0])


def test_a_constant_filler_forgets_cached_results() -> None:
    from typed_nn.model import ConstantFiller

    w = tn.tensor(np.ones(4, np.float32), tn.Float32, tn.CPU, tn.Dim1)
    doubled = w * 2.0
    np.testing.assert_array_equal(doubled.numpy(), np.full(4, 2.0))
    ConstantFiller(5.0).fill(w)
    np.testing.assert_array_equal(doubled.numpy(), np.full(4, 10.0))


# Writes into a tensor's memory that need no ``overwrite``: tensors made on the line before
# (nothing can have read them yet) and the batch buffers only a compiled step reads.
FRESH_WRITES = {
    "typed_nn/layers/dropout.py": 1,
    "typed_nn/train/regression.py": 2,
    "typed_nn/distributed/gradients.py": 1,
    "typed_nn/evaluate/cache.py": 1,
}


def test_the_library_writes_into_tensors_only_through_overwrite() -> None:
    """A raw write (``t.array[...] = v``, ``t.array.fill(v)``) leaves cached results stale:
    each library write goes through ``evaluate.cache.overwrite`` (or is listed above)."""
    import re

    root = Path(__file__).resolve().parent.parent
    raw = re.compile(r"\.array\[[^\]]*\]\s*[-+*/]?=[^=]|\.array\.fill\(|np\.copyto\(\w+\.array")
    found: dict[str, int] = {}
    for path in sorted((root / "typed_nn").rglob("*.py")):
        hits = len(raw.findall(path.read_text()))
        if hits:
            found[str(path.relative_to(root))] = hits
    assert found == FRESH_WRITES
