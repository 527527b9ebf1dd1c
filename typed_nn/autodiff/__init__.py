"""Automatic differentiation of lazy graphs: ``grad`` and ``vjp`` build gradient graphs."""

from .api import grad as grad
from .api import vjp as vjp
