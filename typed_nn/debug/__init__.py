"""Debug mode: run-time checks of tagged types (beartype), jaxtyping shapes and NaN / Inf.

Off by default and free when off (nothing is wrapped, beartype and jaxtyping are not
imported). ``TYPED_NN_DEBUG=1`` in the environment when typed_nn is imported, or
``typed_nn.debug.enable()`` before importing the code to check, turns it on; see
``docs/debug.md``.
"""

from .install import install as install
from .switch import ENV_VAR as ENV_VAR
from .switch import enable as enable
from .switch import is_enabled as is_enabled
