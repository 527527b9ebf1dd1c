"""The GPU backend: cupy implementations of every op and one generated kernel per fused
element-wise region. Registered when cupy is first needed (``devices.array_module(GPU)``),
never at ``import typed_nn``.
"""

from .registration import register as register
from .registration import registered as registered
