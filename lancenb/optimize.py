"""Compaction, as pylance's ``lance.optimize``: :class:`CompactionMetrics` (what
``ds.optimize.compact_files()`` returns) and :class:`CompactionOptions` (its options).

Distributed compaction as pylance's: ``Compaction.plan`` gives
:class:`CompactionTask` s, each ``execute`` (in any process) gives a
:class:`RewriteResult`, and ``Compaction.commit`` commits them
(:mod:`lancenb.dataset.write.compaction`).

Examples
--------
>>> CompactionMetrics().fragments_removed
0
"""

from __future__ import annotations

from typing import Literal, Optional, TypedDict

from lancenb.dataset.write.compaction import (
    Compaction,
    CompactionMetrics,
    CompactionPlan,
    CompactionTask,
    RewriteResult,
)

__all__ = ["CompactionMetrics", "CompactionOptions", "Compaction", "CompactionPlan",
           "CompactionTask", "RewriteResult"]


class CompactionOptions(TypedDict, total=False):
    """Keyword options of ``compact_files`` (all optional; pylance's names).

    ``target_rows_per_fragment`` (default 1024 * 1024), ``max_rows_per_group`` (1024),
    ``max_bytes_per_file``, ``materialize_deletions`` (True),
    ``materialize_deletions_threshold`` (0.1: the fraction of deleted rows that makes
    a fragment worth rewriting), ``num_threads``, ``batch_size``; the others are
    pylance's and lancenb refuses what it does not implement.
    """

    target_rows_per_fragment: Optional[int]
    max_rows_per_group: Optional[int]
    max_bytes_per_file: Optional[int]
    materialize_deletions: Optional[bool]
    materialize_deletions_threshold: Optional[float]
    num_threads: Optional[int]
    batch_size: Optional[int]
    io_buffer_size: Optional[int]
    compaction_mode: Optional[Literal["reencode", "try_binary_copy", "force_binary_copy"]]
    binary_copy_read_batch_bytes: Optional[int]
    defer_index_remap: Optional[bool]
