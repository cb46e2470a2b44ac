"""The Lance table format: datasets with versions, fragments, transactions and deletions.

``write_dataset``/``dataset``/``LanceDataset`` mirror pylance's API; see
:mod:`lancenb.dataset.lance_dataset`. This module also carries the small public names of
pylance's ``lance.dataset``: :class:`ColumnOrdering` (a sort key for ``order_by``),
:data:`LANCE_COMMIT_MESSAGE_KEY` (the transaction property holding a commit message)
and :class:`AutoCleanupConfig`, and re-exports the classes pylance's module has that
live elsewhere in this package (``DatasetOptimizer`` is what ``ds.optimize`` is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from lancenb.dataset.descriptions import (
    DatasetDelta,
    DataStatistics,
    FieldStatistics,
    LanceSchema,
    LanceStats,
)
from lancenb.dataset.fragment import DataFile, FragmentMetadata, LanceFragment
from lancenb.dataset.lance_dataset import LanceDataset, Tags, dataset, write_dataset
from lancenb.dataset.operations import LanceOperation, Transaction
from lancenb.dataset.read.blob import BlobFile
from lancenb.dataset.read.scanner import LanceScanner
from lancenb.dataset.write.compaction import CompactionMetrics
from lancenb.dataset.write.evolution import BatchUDF, batch_udf
from lancenb.dataset.write.merge_insert import MergeInsertBuilder
from lancenb.dataset.write.optimize import Optimize as DatasetOptimizer
from lancenb.expr.engine import SqlQuery, SqlQueryBuilder
from lancenb.index.vector.reader import VectorIndexReader
from lancenb.table.indices import Index, IndexFile

__all__ = ["LanceDataset", "LanceFragment", "LanceScanner", "Tags", "DataFile",
           "FragmentMetadata", "dataset", "write_dataset", "ColumnOrdering",
           "LANCE_COMMIT_MESSAGE_KEY", "AutoCleanupConfig", "LanceOperation", "Transaction",
           "MergeInsertBuilder", "BlobFile", "BatchUDF", "batch_udf", "CompactionMetrics",
           "DatasetOptimizer", "DataStatistics", "DatasetDelta", "FieldStatistics",
           "LanceSchema", "LanceStats", "SqlQuery", "SqlQueryBuilder", "Index", "IndexFile",
           "VectorIndexReader"]

#: The transaction property under which ``commit_message=`` is stored (pylance's key).
LANCE_COMMIT_MESSAGE_KEY = "__lance_commit_message"


@dataclass
class ColumnOrdering:
    """One sort key of ``order_by`` (scans, ``to_table``): the column, its direction
    and where its nulls go (default: ascending, nulls last, as pylance).

    Examples
    --------
    >>> ColumnOrdering("a", ascending=False)
    ColumnOrdering(column_name='a', ascending=False, nulls_first=False)
    """

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


class AutoCleanupConfig(TypedDict):
    """``auto_cleanup_options`` of ``write_dataset``: every ``interval`` commits,
    remove versions older than ``older_than_seconds``."""

    interval: int
    older_than_seconds: int
