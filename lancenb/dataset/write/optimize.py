"""Version cleanup and ``ds.optimize`` (compaction itself is in
:mod:`lancenb.dataset.write.compaction`, version cleanup in :mod:`lancenb.dataset.write.cleanup`,
re-exported here).
"""

from __future__ import annotations

from lancenb.dataset.write.cleanup import (  # noqa: F401 - re-exported (their old home)
    AUTO_CLEANUP_INTERVAL,
    AUTO_CLEANUP_OLDER_THAN,
    UNVERIFIED_GRACE,
    CleanupStats,
    _mtime,
    cleanup_old_versions,
)
from lancenb.dataset.write.compaction import CompactionMetrics, compact_files

__all__ = ["cleanup_old_versions", "CleanupStats", "Optimize"]


class Optimize:
    """``ds.optimize``: pylance's namespace for compaction and automatic cleanup."""

    def __init__(self, ds):
        self._ds = ds

    def compact_files(self, **kwargs) -> CompactionMetrics:
        """Rewrite small fragments into fewer, larger ones (see :func:`compact_files`)."""
        return compact_files(self._ds, **kwargs)

    def optimize_indices(self, **kwargs) -> None:
        """Add new fragments to the indices (pylance's ``num_indices_to_merge``,
        ``index_names``, ``retrain``): the vector indices
        (:mod:`lancenb.index.vector.optimize`), then the scalar and full-text ones
        (:mod:`lancenb.index.optimize`), one CreateIndex commit per index changed."""
        from lancenb.index.optimize import optimize_scalar_indices
        from lancenb.index.vector.optimize import optimize_vector_indices

        optimize_vector_indices(self._ds, **kwargs)
        optimize_scalar_indices(self._ds, **kwargs)

    def enable_auto_cleanup(self, auto_cleanup_config, **kwargs) -> None:
        """Clean up old versions automatically from now on (a config update, hence a
        new version): every ``interval`` versions, those older than
        ``older_than_seconds`` (see :mod:`lancenb.dataset.write.cleanup`)."""
        cfg = auto_cleanup_config
        self._ds.update_config({AUTO_CLEANUP_INTERVAL: str(cfg["interval"]),
                                AUTO_CLEANUP_OLDER_THAN: f"{cfg['older_than_seconds']}s"})

    def disable_auto_cleanup(self, **kwargs) -> None:
        """Stop automatic cleanup (removes its config keys, as a new version)."""
        self._ds.delete_config_keys([AUTO_CLEANUP_INTERVAL, AUTO_CLEANUP_OLDER_THAN])
