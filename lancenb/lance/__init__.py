"""pylance's ``lance.lance`` (the name of its compiled extension module): the names
pylance's users and tests import from it, from where they live in lancenb.

Examples
--------
>>> from lancenb.lance import Compaction, manifest_needs_migration
>>> Compaction.plan  # doctest: +ELLIPSIS
<function Compaction.plan at ...>
"""

from __future__ import annotations

from lancenb.dataset.write.compaction import (
    Compaction,
    CompactionMetrics,
    CompactionPlan,
    CompactionTask,
    RewriteResult,
)

__all__ = ["Compaction", "CompactionMetrics", "CompactionPlan", "CompactionTask",
           "RewriteResult", "manifest_needs_migration"]


def manifest_needs_migration(dataset) -> bool:
    """Whether the dataset's manifest misses what newer writers record (the writer
    version, fragments' physical row counts, deletion files' row counts), which a
    commit then fills in, as pylance's ``manifest_needs_migration``."""
    m = dataset.manifest
    if not m.HasField("writer_version"):
        return True
    return any(not f.physical_rows or (f.HasField("deletion_file")
                                       and not f.deletion_file.num_deleted_rows)
               for f in m.fragments)
