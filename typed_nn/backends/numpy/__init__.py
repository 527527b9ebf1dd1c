"""The CPU backend: numpy implementations of every op, one module per op family.

Importing this package registers the implementations (``typed_nn.ops`` does it at import).
"""

from . import activation as activation
from . import conv as conv
from . import convert as convert
from . import elementwise as elementwise
from . import embedding as embedding
from . import erf as erf
from . import join as join
from . import layout as layout
from . import nn as nn
from . import pick as pick
from . import random as random
from . import reduce as reduce
from . import select as select
from . import structure as structure

# isort: split
# Rewritten, batched and specialised forms mirror the plain implementations registered above.
from . import batched as batched
from . import rewritten as rewritten
from . import specialised as specialised

# isort: split
from ...ops.declare import implemented_ops as _implemented_ops
from ...tags import CPU as _CPU

REGISTERED = frozenset(_implemented_ops(_CPU))
"""The ops this backend implements (taken at import, before anyone else registers): the GPU
backend shares these implementations, but for its own few."""
