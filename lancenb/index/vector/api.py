"""The vector-index methods of :class:`~lancenb.dataset.LanceDataset` (a mixin)."""

from __future__ import annotations

__all__ = ["VectorIndexMethods"]


class VectorIndexMethods:
    """Dataset methods that build and manage vector indices (pylance's names)."""
