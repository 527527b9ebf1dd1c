"""PyTorch's names for what typed_nn spells otherwise: a missing attribute a PyTorch user
reaches for (``loss.backward()``, ``model.parameters()``) says where its equivalent is.

Only at run time: the classes' ``__getattr__`` is hidden from type checkers, which keep
reporting the attribute as missing.
"""

from __future__ import annotations

TENSOR = {
    "backward": "gradients are values: grads = tn.grad(loss, wrt) (docs/autodiff.md)",
    "grad": "gradients are values: grads = tn.grad(loss, wrt) (docs/autodiff.md)",
    "requires_grad": "tn.grad(loss, wrt) differentiates with respect to any tensor it is given",
    "requires_grad_": "tn.grad(loss, wrt) differentiates with respect to any tensor it is given",
    "detach": "ops.stop_gradient(x)",
    "to": "ops.to_device(x, tn.GPU) or ops.astype(x, tn.Float64)",
    "cuda": "ops.to_device(x, tn.GPU)",
    "cpu": "ops.to_device(x, tn.CPU)",
    "float": "ops.astype(x, tn.Float32)",
    "double": "ops.astype(x, tn.Float64)",
    "half": "ops.astype(x, tn.Float16)",
    "long": "ops.astype(x, tn.Int64)",
    "view": "ops.reshape(x, shape)",
    "permute": "ops.permute(x, order)",
    "t": "ops.transpose(x)",
    "sum": "ops.reduce_sum(x, dims)",
    "mean": "ops.reduce_mean(x, dims)",
    "max": "ops.reduce_max(x, dims)",
    "argmax": "ops.argmax(x, axis)",
    "unsqueeze": "ops.unsqueeze(x, dim)",
    "squeeze": "ops.squeeze(x, dim)",
    "clone": "tensors are values: an expression never changes x (t.assign writes into t)",
    "copy_": "t.assign(value)",
    "tolist": "x.numpy().tolist()",
}
"""A tensor's missing attribute -> its typed_nn equivalent."""

MODULE = {
    "parameters": "nn.parameters(model)",
    "named_parameters": "nn.named_parameters(model)",
    "buffers": "nn.buffers(model)",
    "named_buffers": "nn.named_buffers(model)",
    "state_dict": "nn.state_dict(model)",
    "load_state_dict": "nn.load_state_dict(model, state)",
    "zero_grad": "gradients are values returned by tn.grad(loss, model): nothing to zero",
    "forward": "call the module: model(x)",
    "to": "build it on its device: nn.Linear(4, 3, device=tn.GPU) (docs/gpu.md)",
    "cuda": "build it on its device: nn.Linear(4, 3, device=tn.GPU) (docs/gpu.md)",
    "cpu": "modules are built on the CPU unless given device=",
}
"""A module's missing attribute -> its typed_nn equivalent."""


def no_attribute(obj: object, name: str, hints: dict[str, str]) -> AttributeError:
    """Python's AttributeError for ``obj.name``, with the typed_nn equivalent of PyTorch's
    ``name`` when there is one (``hasattr`` and ``getattr(obj, name, default)`` unchanged)."""
    text = f"{type(obj).__name__!r} object has no attribute {name!r}"
    hint = hints.get(name)
    if hint is not None:
        text += f" (PyTorch's {name}; in typed_nn: {hint})"
    return AttributeError(text, name=name, obj=obj)
