"""lancenb's encoders on Spark's Arrow batches.

:func:`batch_encoding_stats` is plain pyarrow in, pyarrow out: it encodes one batch
with lancenb's strategy (the file writer's, so the pages are exactly what a
dataset write would make) and reports, per column, the encoding chosen and the
bytes it takes. Use it in any per-batch step (``mapInArrow``, ``applyInArrow``, a
``pandas_udf`` after ``pa.RecordBatch.from_pandas``). :func:`encoding_stats` wraps it
as a Spark job: one row per column and Spark batch::

    stats = lancenb.spark.encoding_stats(df.select("category", "price"))
    stats.groupBy("column").agg(F.sum("lance_bytes"), F.sum("arrow_bytes")).show()

(Writing fragments per batch is :func:`lancenb.spark.write_lance`, a ``mapInArrow``
step over :func:`lancenb.spark.jobs.write_task`.)
"""

from __future__ import annotations

import uuid

import fsspec
import pyarrow as pa

from lancenb.encodings.structural.repdef import leaf_paths
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.spark.types import to_lance_batch, write_schema_from_spark

__all__ = ["batch_encoding_stats", "encoding_stats", "STATS_SCHEMA"]

STATS_SCHEMA = pa.schema([("column", pa.string()), ("rows", pa.int64()),
                          ("arrow_bytes", pa.int64()), ("lance_bytes", pa.int64()),
                          ("pages", pa.int64()), ("encoding", pa.string())])
_SPARK_STATS = ("batch string, column string, rows long, arrow_bytes long, lance_bytes long, "
                "pages long, encoding string")


def batch_encoding_stats(batch, *, version: str = "2.1") -> pa.RecordBatch:
    """Per top-level column of ``batch`` (a RecordBatch or Table): rows, Arrow bytes,
    encoded bytes, pages and the encodings lancenb chose (``;``-joined when a
    column has several leaves or pages differ)."""

    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks()
    batch = batch.replace_schema_metadata(None)
    path = f"memory://lancenb-batch-stats/{uuid.uuid4().hex}.lance"
    try:
        with LanceFileWriter(path, batch.schema, version=version) as w:
            w.write_batch(batch)
        cols = LanceFileReader(path).metadata().columns
    finally:
        fs = fsspec.filesystem("memory")
        if fs.exists(path):
            fs.rm(path)
    rows = {k: [] for k in STATS_SCHEMA.names}
    i = 0
    for f, arr in zip(batch.schema, batch.columns):
        n_leaves = len(leaf_paths(f.type))
        leaves = cols[i: i + n_leaves]
        i += n_leaves
        pages = [p for c in leaves for p in c.pages]
        rows["column"].append(f.name)
        rows["rows"].append(batch.num_rows)
        rows["arrow_bytes"].append(arr.nbytes)
        rows["lance_bytes"].append(sum(b.size for p in pages for b in p.buffers))
        rows["pages"].append(len(pages))
        rows["encoding"].append(";".join(dict.fromkeys(p.description for p in pages)))
    return pa.RecordBatch.from_pydict(rows, schema=STATS_SCHEMA)


def encoding_stats(df, *, version: str = "2.1"):
    """A DataFrame of :func:`batch_encoding_stats` for every Arrow batch of ``df``,
    with a ``batch`` id (``partition-sequence``). Select the columns first: every
    column of ``df`` crosses into Python."""
    target = write_schema_from_spark(df.schema)  # restores vectors, unsigned ints, ...

    def stats(batches):
        from pyspark import TaskContext  # lazy: pyspark is optional

        ctx = TaskContext.get()
        part = ctx.partitionId() if ctx is not None else 0
        for k, b in enumerate(batches):
            if not b.num_rows:
                continue
            out = batch_encoding_stats(to_lance_batch(b.replace_schema_metadata(None),
                                                      target.remove_metadata()),
                                       version=version)
            ids = pa.array([f"{part}-{k}"] * out.num_rows)
            yield pa.RecordBatch.from_arrays([ids, *out.columns],
                                             names=["batch", *out.schema.names])

    return df.mapInArrow(stats, _SPARK_STATS)
