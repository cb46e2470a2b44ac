"""The scalar-index methods of :class:`~lancenb.dataset.LanceDataset` (a mixin)."""

from __future__ import annotations

__all__ = ["ScalarIndexMethods"]


class ScalarIndexMethods:
    """Dataset methods that build and manage scalar and full-text indices."""
