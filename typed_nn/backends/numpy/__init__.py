"""The CPU backend: numpy implementations of every op, one module per op family.

Importing this package registers the implementations (``typed_nn.ops`` does it at import).
"""

from . import elementwise as elementwise
from . import structure as structure
