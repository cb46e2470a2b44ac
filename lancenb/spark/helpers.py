"""``read_lance`` / ``write_lance``: Spark jobs on ``mapInArrow``, without the Data
Source API.

They work wherever ``mapInArrow`` does (Spark 3.3+, Spark Connect), give real
column pruning (the Data Source API cannot), take lancenb SQL filters, and the
write commits in the caller's process, so it returns the new version. The job
protocol is the data source's (:mod:`lancenb.spark.jobs`, :mod:`lancenb.spark.scan`).
"""

from __future__ import annotations

import pyarrow as pa

from lancenb.dataset import dataset
from lancenb.dataset.read.blob import output_field
from lancenb.errors import InvalidInputError
from lancenb.spark.jobs import abort_job, commit_job, normalize_uri, plan_write, write_task
from lancenb.spark.scan import DEFAULT_BATCH_SIZE, ScanJob, plan_tasks, read_task
from lancenb.spark.types import stored_schema, to_spark_schema

__all__ = ["read_lance", "write_lance"]

_TASK_SCHEMA = "fragments array<binary>, files array<string>"


def read_lance(spark, uri, *, columns=None, filter=None, version=None, asof=None,
               batch_size: int = DEFAULT_BATCH_SIZE, fragments_per_partition: int = 1,
               rows_per_partition: int | None = None, storage_options=None):
    """A DataFrame of one dataset version: only ``columns`` are read, ``filter`` (a
    lancenb SQL predicate, as in ``LanceDataset.to_table``) is applied in the scan.

    The version is pinned now; the DataFrame does not see later commits.
    """
    from pyspark.sql.pandas.types import to_arrow_schema  # lazy: pyspark is optional

    ds = dataset(normalize_uri(uri), version, asof=asof, storage_options=storage_options)
    stored = stored_schema(ds.schema)
    names = list(stored.names) if columns is None else list(columns)
    bad = [c for c in names if c not in stored.names]
    if bad:
        raise InvalidInputError(f"read_lance: no column(s) {bad} in {ds.uri!r}; it has "
                                f"{stored.names}")
    if filter is not None:
        from lancenb.expr.filters import compile_filter  # lazy: sqlglot

        compile_filter(filter, stored)  # a bad filter fails here, not in a task
        if not isinstance(filter, str):
            raise InvalidInputError("read_lance: filter must be a SQL string")
    spark_schema = to_spark_schema(pa.schema([output_field(stored.field(c), "all_binary")
                                              for c in names]))
    job = ScanJob(uri=ds.uri, version=ds.version, columns=names,
                  target=to_arrow_schema(spark_schema, timezone="UTC"), filter=filter,
                  batch_size=int(batch_size), storage_options=storage_options)
    tasks = plan_tasks(ds, fragments_per_partition=fragments_per_partition,
                       rows_per_partition=rows_per_partition)
    if not tasks:
        return spark.createDataFrame([], spark_schema)

    def read(batches):
        for b in batches:
            for i in b.column(0).to_pylist():
                yield from read_task(job, tasks[i])

    # one row (a task number) per partition: no shuffle, one task per read task
    return spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(read, spark_schema)


def write_lance(df, uri, *, mode: str = "append", max_rows_per_file=None,
                max_bytes_per_file=None, data_storage_version=None, commit_retries=None,
                storage_options=None):
    """Write ``df`` to a Lance dataset; returns the new :class:`LanceDataset` version.

    ``mode``: ``append`` (creates the dataset if missing), ``overwrite`` or
    ``create``. Each Spark task writes data files; this process commits one
    transaction (conflict check and retries as ``write_dataset``). On failure the
    job's files are removed before the error propagates.
    """
    job = plan_write(uri, df.schema, mode=mode, max_rows_per_file=max_rows_per_file,
                     max_bytes_per_file=max_bytes_per_file,
                     data_storage_version=data_storage_version, max_retries=commit_retries,
                     storage_options=storage_options)

    def write(batches):
        from pyspark import TaskContext  # lazy: pyspark

        ctx = TaskContext.get()
        task = f"{ctx.partitionId()}-{ctx.attemptNumber()}" if ctx is not None else "x-0"
        frags, files = write_task(job, batches, task=task)
        yield pa.RecordBatch.from_pydict({"fragments": [frags], "files": [files]},
                                         schema=pa.schema([("fragments", pa.list_(pa.binary())),
                                                           ("files", pa.list_(pa.string()))]))

    files: list[str] = []
    try:
        rows = df.mapInArrow(write, _TASK_SCHEMA).collect()
        frags = [f for r in rows for f in r["fragments"]]
        files = [p for r in rows for p in r["files"]]
        version = commit_job(job, frags)
    except BaseException:
        abort_job(job, files)
        raise
    return dataset(job.uri, version, storage_options=storage_options)
