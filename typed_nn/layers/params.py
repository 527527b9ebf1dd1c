"""``layer_params(layer)``: a MetaNN layer model's parameters as a module tree (DESIGN §5c, §7).

MetaNN's layers keep their API (ports, policies, topologies, LIFO stacks) and name their
parameters with ``/`` paths (``net/fc1/weight``, after the initializer's name mapping); each
layer reports what it holds through ``own_state`` and ``model_state`` walks them. This file
turns that state into the tree every module-taking function walks: one :class:`LayerParams`
node per path component, the trained parameters as its tensor fields and the untrained ones
(batch-norm statistics, frozen weights) as ``nn.buffer`` fields — **the very tensors the
layers read**, so whatever changes them changes the layer model. Hence one implementation
serves both kinds of model:

* ``typed_nn.optim``: ``opt = optim.Adam(params, lr=1e-3)``; ``grads = tn.grad(loss, params)``
  is a ``LayerParams`` of gradients; ``opt.step(grads)`` (eagerly or inside ``tn.compile``);
* ``nn.named_parameters`` / ``nn.buffers`` / ``nn.tree_map``, ``nn.state_dict`` /
  ``nn.load_state_dict`` (dotted names: ``net.fc1.weight``; strict, nothing changed on a
  failure) and checkpoints (``save_checkpoint(path, params, opt, epoch=...)``).

The ``/`` of a parameter name becomes a ``.`` of its path; a component that holds a ``.``
itself, or a name that is both a parameter and the prefix of another, has no path and is a
``ModuleError``. Random-number states (a dropout layer's) are not tensors the layers read, so
they stay out of the tree: a checkpoint of the layer itself keeps them. ``GradCollector`` and
``LoadBuffer`` remain as MetaNN's names for the same parameters (what ``grad_collect`` and
``layer_init`` take); the tree needs neither, and ``collector.gradients_of(tree)`` turns what
MetaNN's backward collected into the tree's gradients for ``typed_nn.optim``.

>>> params = layer_params(net)                      # doctest: +SKIP
>>> [name for name, _ in nn.named_parameters(params)]  # doctest: +SKIP
['net.fc1.weight', 'net.fc1.bias', 'net.fc2.weight', 'net.fc2.bias']
"""

from __future__ import annotations

from typing import Any

from ..data.module import Module, buffer
from ..errors import ModuleError, listed, message
from .protocol import Layer
from .source_layers import ParamSourceLayer
from .state import model_state

__all__ = ["LayerParams", "layer_params"]


class LayerParams(Module):
    """One node of a layer model's parameter tree: its fields are the parameters, buffers
    and deeper nodes under one ``/`` prefix of their names (made by :func:`layer_params`)."""


def layer_params(layer: Layer[Any, Any]) -> LayerParams:
    """The parameters and buffers of the initialised layer model ``layer`` (and of every
    layer it is made of) as a module tree over the same tensors (see the module doc)."""
    state = model_state(layer)  # an OperandError for anything but a typed_nn layer
    _require_initialised(layer)
    root = LayerParams()
    for name, entry in state.of("parameter", "buffer").items():
        *prefix, leaf = _components(name)
        node = root
        for part in prefix:
            child = vars(node).get(part)
            if child is None:
                child = LayerParams()
                setattr(node, part, child)
            elif not isinstance(child, LayerParams):
                raise _clash(name, part)
            node = child
        if leaf in vars(node):
            raise _clash(name, leaf)
        tensor = entry.read()
        setattr(node, leaf, tensor if entry.kind == "parameter" else buffer(tensor))
    return root


def _components(name: str) -> list[str]:
    parts = name.split("/")
    if all(parts) and not any("." in p for p in parts):
        return parts
    raise ModuleError(
        message(
            f"layer_params: the parameter name {name!r} has no path in a module tree.",
            [("name", repr(name)), ("components", listed(parts))],
            hint="name layers without '.' and empty components ('net/fc1', not 'net.fc1' or "
            "'net//fc1'): the tree's paths join the components of a name with '.'.",
        )
    )


def _clash(name: str, part: str) -> ModuleError:
    return ModuleError(
        message(
            f"layer_params: {name!r} needs {part!r} as a parameter and as a node of others.",
            [("name", repr(name)), ("component", repr(part))],
            hint="a parameter name must not be the '/' prefix of another: rename one layer.",
        )
    )


def _require_initialised(layer: Layer[Any, Any]) -> None:
    sources = layer.param_sources()
    missing = [p.name for p in sources if isinstance(p, ParamSourceLayer) and p.data is None]
    if missing:
        raise ModuleError(
            message(
                f"layer_params: layer '{layer.name}' has parameters not allocated yet.",
                [("not initialised", listed(missing))],
                hint="call layer_init(layer, initializer, load_buffer) first.",
            )
        )
