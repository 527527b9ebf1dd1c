"""Batching of registrations (filled in below)."""

from __future__ import annotations

from .graph import Graph

__all__ = ["batch"]


def batch(g: Graph) -> int:
    """Merge independent nodes of the same op; returns how many groups were merged."""
    return 0
