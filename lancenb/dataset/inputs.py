"""Input to a dataset write: the data kinds accepted, and conforming them to a schema.

:func:`normalize_input` turns any accepted input (pyarrow Table, RecordBatch,
RecordBatchReader, an iterable of RecordBatches, an Arrow C stream, a pandas DataFrame,
a dict of columns) into ``(schema, iterator of RecordBatch)`` without materialising a
stream; :func:`check_append_schema` and :func:`fill_missing` check and complete the
columns of an append against the dataset's schema.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.dataset as pads

from lancenb.errors import InvalidInputError, SchemaError
from lancenb.file.extensions import storage_batch, storage_schema

__all__ = ["coerce_input", "normalize_input", "check_append_schema", "fill_missing",
           "MAX_ROWS_PER_GROUP"]

MAX_ROWS_PER_GROUP = 1024 * 1024


def normalize_input(data, schema: pa.Schema | None) -> tuple[pa.Schema, Iterator]:
    """``(schema, iterator of RecordBatch)`` for any supported input. Extension-typed
    columns (``uuid``, ``fixed_shape_tensor``, pylance's blob v2 ...) come out as their
    storage type tagged with the extension (:mod:`lancenb.file.extensions`), the form a
    Lance schema stores; ``arrow.json`` columns as JSONB (invalid JSON: an
    :class:`InvalidInputError` naming the column and row)."""
    schema, batches = _normalize_input(data, schema)
    stored = storage_schema(schema)
    if stored is None:
        return schema, batches
    return stored, _stored_batches(batches, stored)


def _stored_batches(batches, stored: pa.Schema):
    """Batches in their stored form (JSON encoded as JSONB; a fault names the row of
    the whole input)."""
    row = 0
    for b in batches:
        yield storage_batch(b, stored, first_row=row)
        row += b.num_rows


def _normalize_input(data, schema: pa.Schema | None) -> tuple[pa.Schema, Iterator]:
    try:
        import pandas as pd  # lazy: heavy, and optional
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
        return _normalize_input(pa.RecordBatchReader.from_stream(data), schema)
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


def fill_missing(in_schema: pa.Schema, batches, ds_schema: pa.Schema, uri: str):
    """An append of some of the dataset's columns (as pylance allows): the others
    are null in the new rows; a non-nullable one is a :class:`SchemaError`."""
    missing = [f for f in ds_schema if f.name not in in_schema.names]
    required = [f.name for f in missing if not f.nullable]
    if required:
        raise SchemaError(f"cannot append to {uri!r}: the data lacks non-nullable "
                          f"column(s) {required}")
    out = pa.schema([in_schema.field(f.name) if f.name in in_schema.names else f
                     for f in ds_schema])

    def fill():
        for b in batches:
            yield pa.RecordBatch.from_arrays(
                [b.column(f.name) if f.name in in_schema.names
                 else pa.nulls(b.num_rows, f.type) for f in out], schema=out)
    return out, fill()


def check_append_schema(data_schema: pa.Schema, ds_schema: pa.Schema, uri: str) -> None:
    """A full append's columns: the same names (any order) and types as the dataset's,
    else a :class:`SchemaError` naming the column."""
    if set(data_schema.names) != set(ds_schema.names) or len(data_schema) != len(ds_schema):
        raise SchemaError(f"cannot append to {uri!r}: the data has columns {data_schema.names}, "
                          f"the dataset {ds_schema.names}")
    for f in ds_schema:
        g = data_schema.field(f.name)
        if g.type != f.type:
            raise SchemaError(f"cannot append to {uri!r}: column {f.name!r} is {g.type} in the "
                              f"data but {f.type} in the dataset")


def coerce_input(data, schema):
    """pylance's extra input kinds, as it reads them: a list of dicts (one per row),
    a pandas DataFrame (its pandas metadata kept in the schema), a
    ``pyarrow.dataset.Dataset`` (streamed through its scanner)."""
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        return pa.Table.from_pylist(data, schema=schema)
    # (a LanceDataset is a pyarrow Dataset too: it streams itself, as an Arrow C stream)
    if isinstance(data, pads.Dataset) and not hasattr(data, "__arrow_c_stream__"):
        return data.scanner().to_reader()
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_numpy") and \
            type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, schema=schema)
    return data
