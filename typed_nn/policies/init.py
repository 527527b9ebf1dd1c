"""InitPolicy: the random engine parameter fillers draw from.

MetaNN ``model/param_initializer/facilities/policies.h`` (default ``std::mt19937``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .major import PolicyMajor
from .objects import PolicyTemplate

__all__ = ["InitPolicy", "PRandomGeneratorIs"]


@dataclass(frozen=True)
class InitPolicy(PolicyMajor):
    """How fillers get random numbers.

    Attributes:
        rand_engine: what the model's fillers draw from - a ``numpy.random.Generator`` or a
            callable taking a seed and returning one; None means ``numpy.random.default_rng``.
    """

    rand_engine: object = None


PRandomGeneratorIs: PolicyTemplate[InitPolicy, Literal["rand_engine"], object] = PolicyTemplate(
    InitPolicy, "rand_engine", name="PRandomGeneratorIs"
)
