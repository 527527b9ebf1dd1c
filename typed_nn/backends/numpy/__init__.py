"""The CPU backend: numpy implementations of every op, one module per op family.

Importing this package registers the implementations (``typed_nn.ops`` does it at import).
"""

from . import elementwise as elementwise
from . import structure as structure
from . import layout as layout
from . import join as join
from . import convert as convert
from . import activation as activation
from . import nn as nn
from . import reduce as reduce
from . import select as select
from . import conv as conv
from . import fused as fused
from . import rewritten as rewritten
from . import batched as batched
