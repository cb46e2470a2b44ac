"""Writing data files for a dataset: input normalisation, file rolling, fragments.

Input is streamed: batches go straight into a :class:`~lancenb.file.LanceFileWriter`
whose page budget bounds the memory held, and a new data file (fragment) starts
when the current one reaches ``max_rows_per_file`` rows or about
``max_bytes_per_file`` bytes of input.
"""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator

import pyarrow as pa

from lancenb._proto import table_pb2
from lancenb.dataset import blob
from lancenb.dataset.fragment import DATA_DIR
from lancenb.dataset.stats import STATS_KEY, StatsCollector
from lancenb.errors import InvalidInputError, LanceError, SchemaError
from lancenb.file.columns import data_file_columns
from lancenb.file.schema import fields_to_schema
from lancenb.file.version import FileVersion
from lancenb.file.writer import LanceFileWriter
from lancenb.io.pools import ThreadPool

__all__ = ["normalize_input", "write_fragments", "data_file_name", "leaf_ids",
           "DEFAULT_MAX_ROWS_PER_FILE", "DEFAULT_MAX_BYTES_PER_FILE"]

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3
MAX_ROWS_PER_GROUP = 1024 * 1024


def data_file_name() -> str:
    """A new data file name as the reference makes them: a UUIDv4 whose first three
    bytes are spelled as 24 binary digits (spreading files over object-store key
    prefixes) and whose other 13 bytes are hex."""
    b = uuid.uuid4().bytes
    return "".join(f"{x:08b}" for x in b[:3]) + b[3:].hex() + ".lance"


def normalize_input(data, schema: pa.Schema | None) -> tuple[pa.Schema, Iterator]:
    """``(schema, iterator of RecordBatch)`` for any supported input."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        data = pa.Table.from_pandas(data, schema=schema, preserve_index=False)
        if schema is None:
            data = data.replace_schema_metadata(None)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, dict):
        data = pa.table(data)
    if isinstance(data, pa.Table):
        if schema is not None and not data.schema.equals(schema, check_metadata=False):
            data = _cast_table(data, schema)
        return (schema or data.schema), iter(data.to_batches(max_chunksize=MAX_ROWS_PER_GROUP))
    if isinstance(data, pa.RecordBatchReader):
        rs = data.schema
        if schema is not None and not rs.equals(schema, check_metadata=False):
            return schema, (_cast_batch(b, schema) for b in data)
        return (schema or rs), iter(data)
    if hasattr(data, "__arrow_c_stream__"):
        return normalize_input(pa.RecordBatchReader.from_stream(data), schema)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes)):
        it = iter(data)
        if schema is None:
            try:
                first = next(it)
            except StopIteration:
                raise InvalidInputError("write_dataset got an empty iterable and no schema; "
                                        "pass schema= to create an empty dataset") from None
            first = _as_batch(first, None)
            schema = first.schema

            def chain():
                yield first
                for b in it:
                    yield _as_batch(b, schema)
            return schema, chain()
        return schema, (_as_batch(b, schema) for b in it)
    raise InvalidInputError(f"cannot write {type(data).__name__}: pass a pyarrow Table, "
                            f"RecordBatch, RecordBatchReader, an iterable of RecordBatches, or a "
                            f"pandas DataFrame")


def _as_batch(b, schema):
    if isinstance(b, pa.Table):
        b = b.combine_chunks().to_batches()[0] if b.num_rows else pa.RecordBatch.from_pylist(
            [], schema=b.schema)
    if not isinstance(b, pa.RecordBatch):
        raise InvalidInputError(f"an iterable passed to write_dataset must yield RecordBatches, "
                                f"not {type(b).__name__}")
    if schema is not None and not b.schema.equals(schema, check_metadata=False):
        b = _cast_batch(b, schema)
    return b


def _cast_table(t: pa.Table, schema: pa.Schema) -> pa.Table:
    try:
        return t.select(schema.names).cast(schema)
    except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
        raise SchemaError(f"the data does not match the schema: {e}\ndata: {t.schema}\n"
                          f"schema: {schema}") from e


def _cast_batch(b: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    t = _cast_table(pa.Table.from_batches([b]), schema)
    return t.combine_chunks().to_batches()[0] if t.num_rows else pa.RecordBatch.from_pylist(
        [], schema=schema)


def leaf_ids(fields_pb, version: FileVersion | None = None) -> list[int]:
    """Field ids that own a column of a data file, in column order (a data file's
    ``DataFile.fields``): :func:`lancenb.file.columns.data_file_columns` of the schema
    (leaves in 2.1+ with packed and blob v2 structs as one column; every field in 2.0
    but a packed struct's children)."""
    _, tops = fields_to_schema(fields_pb)
    return [c.field_id for c in data_file_columns(tops, version or FileVersion.V2_1)]


def write_fragments(store, batches: Iterator[pa.RecordBatch], schema: pa.Schema, fields_pb, *,
                    version: FileVersion, max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                    written: list | None = None, write_stats: bool = True,
                    progress=None) -> list:
    """Write ``batches`` as new data files; returns DataFragment messages (ids unset).

    ``written`` collects the relative paths of every file created (complete or not),
    so a caller can delete them when its commit fails. ``progress``: an object with
    pylance's ``FragmentWriteProgress`` methods, ``begin(fragment)`` when a data file
    is opened (a ``FragmentMetadata`` without files) and ``complete(fragment)`` when
    it is finished (with its file and row count; the id is assigned at commit).
    """
    if max_rows_per_file <= 0 or max_bytes_per_file <= 0:
        raise InvalidInputError("max_rows_per_file and max_bytes_per_file must be positive")
    written = [] if written is None else written
    ids = leaf_ids(fields_pb, version)
    frags = []
    writer = None
    name = ""
    rows = nbytes = 0
    write_schema = schema.remove_metadata()
    # 2.2 blob v2 columns: the file writer takes them as WRITE_V2 arrays, values over
    # 64 KiB go to sidecar files (lancenb.dataset.blob)
    v2 = blob.v2_columns(fields_pb) if version is FileVersion.V2_2 else set()
    writer_schema = blob.file_schema(write_schema, v2) if v2 else write_schema
    sidecars = None

    top_ids = [f.id for f in fields_pb if f.parent_id == -1]
    collector = None
    # a full file is finished (its last pages encoded, statistics, footer) on a
    # worker thread while the next one fills: kernels release the GIL, and at most
    # MAX_FILES_IN_FLIGHT files are buffered at once, so memory stays bounded
    pending: list = []
    open_writers: set = set()  # writers not closed yet (aborted if the write fails)

    def finish_file(w, coll, fname):
        stats = coll.finish() if coll is not None else None
        if stats is not None:
            data, info = stats
            info["global_buffer"] = w.add_global_buffer(data)
            w.add_schema_metadata(STATS_KEY, json.dumps(info, separators=(",", ":")))
        n = w.close()
        open_writers.discard(w)  # closed: nothing to abort, and its memory can go
        df = table_pb2.DataFile(path=fname, fields=ids, column_indices=list(range(len(ids))),
                                file_major_version=version.data_file[0],
                                file_minor_version=version.data_file[1],
                                file_size_bytes=w.size_bytes)
        frag = table_pb2.DataFragment(physical_rows=n)
        frag.files.append(df)
        return frag

    def done(frag):
        frags.append(frag)
        if progress is not None:
            from lancenb.dataset.fragmeta import FragmentMetadata

            progress.complete(FragmentMetadata.from_pb(frag))

    def finish():
        nonlocal writer
        if sidecars is not None:
            sidecars.close()
        w, writer = writer, None
        pending.append(_finish_pool().submit(finish_file, w, collector, name))
        while len(pending) >= MAX_FILES_IN_FLIGHT:
            done(pending.pop(0).result())

    try:
        for batch in batches:
            pos = 0
            while pos < batch.num_rows:
                if writer is None:
                    name = data_file_name()
                    written.append(f"{DATA_DIR}/{name}")
                    writer = LanceFileWriter(store.uri_of(f"{DATA_DIR}/{name}"), writer_schema,
                                             version=version.label,
                                             storage_options=store.storage_options)
                    open_writers.add(writer)
                    if progress is not None:
                        from lancenb.dataset.fragmeta import FragmentMetadata

                        progress.begin(FragmentMetadata(id=0, files=[], physical_rows=None))
                    if v2:
                        sidecars = blob.V2Sidecars(store, name, written)
                    rows = nbytes = 0
                    collector = StatsCollector(write_schema, top_ids) if write_stats else None
                take = min(batch.num_rows - pos, max_rows_per_file - rows)
                part = batch.slice(pos, take)
                wpart = part.replace_schema_metadata(None) if part.schema.metadata else part
                if sidecars is not None:
                    wpart = sidecars.convert_batch(wpart, writer_schema)
                writer.write_batch(wpart)
                if collector is not None:
                    collector.add(part)
                pos += take
                rows += take
                nbytes += part.nbytes
                if rows >= max_rows_per_file or nbytes >= max_bytes_per_file:
                    finish()
        if writer is not None and rows:
            finish()
        while pending:
            done(pending.pop(0).result())
    except BaseException:
        if sidecars is not None:
            sidecars.abort()
        for f in pending:
            try:
                f.result()
            except BaseException:
                pass
        for w in list(open_writers):
            w.abort()
        raise
    return frags


MAX_FILES_IN_FLIGHT = 2
_FINISH_POOL = ThreadPool(lambda: MAX_FILES_IN_FLIGHT, "lancenb-write")  # per process


def _finish_pool() -> ThreadPoolExecutor:
    return _FINISH_POOL.get()


def cleanup(store, paths: list[str]) -> None:
    """Best-effort removal of files a failed write or commit left behind."""
    for p in paths:
        try:
            store.delete(p)
        except LanceError:
            pass
