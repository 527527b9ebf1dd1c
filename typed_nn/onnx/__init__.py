"""ONNX export: ``typed_nn.onnx.export(fn, example_args, path)`` traces ``fn`` as
``tn.compile`` does and writes the graph as an ONNX model (docs/interop.md).

Importing this package does not import onnx; ``export`` does, and raises a
``MissingDependencyError`` naming the extra (``typed_nn[onnx]``) when it is not installed.
The per-op mapping is :func:`typed_nn.onnx.rules.rule_for`.
"""

from .export import DEFAULT_OPSET as DEFAULT_OPSET
from .export import MIN_OPSET as MIN_OPSET
from .export import NamedTensors as NamedTensors
from .export import export as export
