"""Distributed reads: split one pinned dataset version into tasks, read a task.

A task is a list of *ranges* ``(fragment_id, lo, hi)`` over a fragment's live rows
(``lo``/``hi`` None: the whole fragment). By default each fragment is one task
(lance-spark's split); ``fragments_per_partition`` packs several small fragments
into one task and ``rows_per_partition`` cuts large fragments into row ranges
(Lance 2.x files are randomly addressable, so a range reads only its pages).

:class:`ScanJob` is pickled to every task; the task reopens the dataset at the pinned
version and reads with :class:`lancenb.dataset.LanceScanner` (deletions applied, page
statistics pruned by the filter, filter columns read first), then casts to the Arrow
schema Spark expects (:func:`lancenb.spark.types.to_spark_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from lancenb.dataset import dataset
from lancenb.errors import InvalidInputError
from lancenb.spark.types import stored_schema, to_spark_batch

__all__ = ["ScanJob", "plan_tasks", "read_task", "DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE = 65536


@dataclass
class ScanJob:
    """What a Spark read task needs to read its part of a dataset (picklable)."""

    uri: str
    version: int
    columns: list
    target: pa.Schema  # the Arrow schema of the batches handed to Spark
    filter: str | None = None  # lancenb SQL, applied exactly
    batch_size: int = DEFAULT_BATCH_SIZE
    storage_options: dict | None = None

    def open(self):
        """The dataset at the job's version."""
        return dataset(self.uri, self.version, storage_options=self.storage_options)


def plan_tasks(ds, *, fragments_per_partition: int = 1,
               rows_per_partition: int | None = None) -> list[list[tuple]]:
    """The read tasks of ``ds`` (a LanceDataset): lists of ``(fragment_id, lo, hi)``."""
    if fragments_per_partition <= 0:
        raise InvalidInputError("fragments_per_partition must be positive")
    if rows_per_partition is not None and rows_per_partition <= 0:
        raise InvalidInputError("rows_per_partition must be positive")
    tasks: list[list[tuple]] = []
    cur: list[tuple] = []
    cur_rows = 0
    for frag in ds.get_fragments():
        n = frag.count_rows()
        if n == 0:
            continue
        if rows_per_partition is not None and n > rows_per_partition:
            if cur:
                tasks.append(cur)
                cur, cur_rows = [], 0
            for lo in range(0, n, rows_per_partition):
                tasks.append([(frag.fragment_id, lo, min(n, lo + rows_per_partition))])
            continue
        full = len(cur) >= fragments_per_partition or (
            rows_per_partition is not None and cur_rows + n > rows_per_partition)
        if cur and full:
            tasks.append(cur)
            cur, cur_rows = [], 0
        cur.append((frag.fragment_id, None, None))
        cur_rows += n
    if cur:
        tasks.append(cur)
    return tasks


def read_task(job: ScanJob, ranges) -> Iterator[pa.RecordBatch]:
    """The batches of one task, already in Spark's Arrow schema."""
    if not ranges:
        return
    ds = job.open()
    stored = stored_schema(ds.schema)
    by_id = {f.fragment_id: f for f in ds.get_fragments()}
    compiled = None
    fcols: list[str] = []
    if job.filter:
        from lancenb.expr.filters import compile_filter, referenced_columns  # lazy: sqlglot

        compiled = compile_filter(job.filter, stored)
        fcols = referenced_columns(compiled, stored.names)
    for fid, lo, hi in ranges:
        frag = by_id[fid]
        if lo is None:
            sc = ds.scanner(columns=job.columns, filter=job.filter, fragments=[frag],
                            batch_size=job.batch_size, blob_handling="all_binary")
        else:
            cols = list(dict.fromkeys(list(job.columns) + fcols))
            sc = ds.scanner(columns=cols, fragments=[frag], offset=lo, limit=hi - lo,
                            batch_size=job.batch_size, blob_handling="all_binary")
        batches = sc.to_batches()  # (to_spark_batch: extension arrays as their storage)
        for b in batches:
            t = pa.Table.from_batches([b])
            if compiled is not None and lo is not None:
                t = compiled.apply(t).select(job.columns)
            if t.num_rows:
                yield from to_spark_batch(t, job.target).to_batches(
                    max_chunksize=job.batch_size)
