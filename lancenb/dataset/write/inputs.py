"""Input to a dataset write: the data kinds accepted, and conforming them to a schema.

Every entry point that takes data (``write_dataset``, ``insert``, ``write_fragments``,
``LanceFragment.create``, ``merge_insert``, ``merge``, ``add_columns`` from a reader, a
fragment's ``merge``/``merge_columns``/``update_columns``) reads it through
:func:`normalize_input`, which turns it into ``(schema, iterator of RecordBatch)``
without materialising a stream. The kinds, in the order they are recognised (pylance's
``_coerce_reader`` order, so an object that is two kinds at once is read as pylance
reads it):

=============================================  =============================================
input                                          read as
=============================================  =============================================
pandas ``DataFrame``                           ``pa.Table.from_pandas(df, schema=schema)``
                                               (a non-range index becomes a column and the
                                               pandas metadata is kept, as pylance)
``pa.Table`` / ``pa.RecordBatch``              its batches
a lancenb ``LanceDataset``, a                  a scan of it (``dataset.scanner()``)
``pyarrow.dataset.Dataset``
a lancenb ``LanceScanner``, a                  its reader (the scan it describes)
``pyarrow.dataset.Scanner``
``pa.RecordBatchReader``                       itself
polars ``DataFrame``                           ``df.to_arrow()``
Hugging Face ``datasets.Dataset``              its Arrow rows, in the dataset's order (its
                                               ``select``/``shuffle`` index mapping kept)
Hugging Face ``IterableDataset``               its rows in Arrow batches, schema from its
                                               ``features``
Hugging Face ``DatasetDict`` /                 refused: several splits; pass one
``IterableDatasetDict``                        (``dd["train"]``)
``dict`` of columns                            ``pa.RecordBatch.from_pydict(d, schema=schema)``
non-empty ``list`` of ``dict`` (rows)          ``pa.RecordBatch.from_pylist(rows, schema=...)``
non-empty ``list`` of pydantic models (one     their ``model_dump()`` rows; ``schema=``
class)                                         required (lancenb does not derive it)
an object with ``__arrow_c_stream__``          a ``RecordBatchReader`` over the stream
any other iterable of RecordBatches (Tables    batch by batch; without ``schema=`` the first
accepted too)                                  batch's schema (an empty one needs a schema)
=============================================  =============================================

Anything else (a string, a number, ...) is an :class:`~lancenb.errors.InputTypeError`
(a ``TypeError``, as pylance). With ``schema=`` the data is cast to it: columns are
matched by name, a column the schema lacks or a type that cannot be cast is a
:class:`~lancenb.errors.SchemaError` (never dropped or truncated quietly). Schema and
field metadata must be UTF-8 (pylance refuses other bytes; base64-encode binary
metadata). Extension-typed columns come out in their stored form (see
:func:`normalize_input`).

:func:`check_append_schema` and :func:`fill_missing` check and complete the columns of
an append against the dataset's schema.
"""

from __future__ import annotations

import sys
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.dataset as pads

from lancenb.dataset.read.scanner import LanceScanner
from lancenb.errors import InputTypeError, InvalidInputError, NotSupportedError, SchemaError
from lancenb.file.extensions import storage_batch, storage_schema

__all__ = ["normalize_input", "check_append_schema", "fill_missing", "check_metadata",
           "is_hugging_face", "InputTypeError", "MAX_ROWS_PER_GROUP", "HF_BATCH_ROWS",
           "HF_TABLE_ROWS"]

MAX_ROWS_PER_GROUP = 1024 * 1024
# rows per batch read from a Hugging Face IterableDataset (pylance reads 1000 at a time;
# each batch is built from Python rows) and from a Dataset (slices of its Arrow table:
# 2M rows of two columns write in 0.14 s at 64Ki rows a batch, 0.34 s at 1000)
HF_BATCH_ROWS = 1000
HF_TABLE_ROWS = 64 * 1024



_KINDS = ("a pyarrow Table, RecordBatch or RecordBatchReader, a list or iterator of "
          "RecordBatches (with schema=), a pandas or polars DataFrame, a dict of columns, "
          "a list of row dicts, a pyarrow or Lance dataset or scanner, or a Hugging Face "
          "Dataset / IterableDataset")


def normalize_input(data, schema: pa.Schema | None, *,
                    what: str = "write_dataset") -> tuple[pa.Schema, Iterator]:
    """``(schema, iterator of RecordBatch)`` for any accepted input (see the module
    docstring); ``what`` names the entry point in error messages.

    Extension-typed columns (``uuid``, ``fixed_shape_tensor``, pylance's blob v2 ...)
    come out as their storage type tagged with the extension
    (:mod:`lancenb.file.extensions`), the form a Lance schema stores; ``arrow.json``
    columns as JSONB (invalid JSON: an :class:`InvalidInputError` naming the column and
    row).

    Examples
    --------
    >>> schema, batches = normalize_input({"id": [1, 2]}, None)  # doctest: +SKIP
    """
    schema, batches = _read(data, schema, what)
    check_metadata(schema, what)
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


def check_metadata(schema: pa.Schema, what: str = "write_dataset") -> None:
    """Refuse schema or field metadata that is not UTF-8 (keys or values), as pylance
    does: a Lance schema stores it as text."""
    def bad(meta):
        for k, v in (meta or {}).items():
            for part in (k, v):
                try:
                    part.decode("utf-8") if isinstance(part, bytes) else None
                except UnicodeDecodeError:
                    return k
        return None

    def fields(f, path):
        yield path, f.metadata
        t = f.type
        if isinstance(t, pa.StructType):
            children = list(t)
        elif isinstance(t, pa.MapType):
            children = [t.key_field, t.item_field]
        else:
            children = [t.value_field] if hasattr(t, "value_field") else []
        for c in children:
            yield from fields(c, f"{path}.{c.name}")

    key = bad(schema.metadata)
    where = "the schema's metadata"
    if key is None:
        for f in schema:
            for path, meta in fields(f, f.name):
                key = bad(meta)
                if key is not None:
                    where = f"the metadata of field {path!r}"
                    break
            if key is not None:
                break
    if key is not None:
        raise InvalidInputError(f"{what}: metadata key {key!r} in {where} is not valid utf8. "
                                f"Consider base64 encode for generic binary metadata.")


def is_hugging_face(data) -> bool:
    """``data`` is an object of the Hugging Face ``datasets`` library (checked without
    importing it: it is loaded already if such an object exists)."""
    return "datasets" in sys.modules and any(
        c.__module__.split(".")[0] == "datasets" for c in type(data).__mro__)


def _read(data, schema: pa.Schema | None, what: str) -> tuple[pa.Schema, Iterator]:
    if _is_pandas(data):
        return _table(pa.Table.from_pandas(data, schema=schema), schema)
    if isinstance(data, pa.Table):
        return _table(data, schema)
    if isinstance(data, pa.RecordBatch):
        return _table(pa.Table.from_batches([data]), schema)
    if isinstance(data, pads.Dataset):  # a lancenb LanceDataset too: it scans itself
        return _reader(data.scanner().to_reader(), schema)
    if isinstance(data, (pads.Scanner, LanceScanner)):
        return _reader(data.to_reader(), schema)
    if isinstance(data, pa.RecordBatchReader):
        return _reader(data, schema)
    if type(data).__module__.startswith("polars") and type(data).__name__ == "DataFrame":
        return _table(data.to_arrow(), schema)
    if is_hugging_face(data):
        return _hugging_face(data, schema, what)
    if isinstance(data, dict):
        return _table(pa.Table.from_batches([pa.RecordBatch.from_pydict(data, schema=schema)]),
                      schema)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return _table(pa.Table.from_pylist(data, schema=schema), schema)
    if isinstance(data, list) and data and _is_pydantic(data[0]):
        return _pydantic(data, schema, what)
    if hasattr(data, "__arrow_c_stream__"):
        return _reader(pa.RecordBatchReader.from_stream(data), schema)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, bytearray)):
        return _iterable(iter(data), schema, what)
    raise InputTypeError(f"{what} cannot read {type(data).__module__}."
                         f"{type(data).__qualname__}: pass {_KINDS}")


def _is_pandas(data) -> bool:
    pd = sys.modules.get("pandas")  # loaded already if data is a DataFrame
    return pd is not None and isinstance(data, pd.DataFrame)


def _is_pydantic(x) -> bool:
    pyd = sys.modules.get("pydantic")
    return pyd is not None and isinstance(x, pyd.BaseModel)


def _pydantic(models: list, schema: pa.Schema | None, what: str):
    """A list of pydantic models of one class: their ``model_dump()`` rows. pylance
    derives the schema from the model class (``lance.pydantic``), which lancenb does
    not: without ``schema=`` it is refused rather than guessed from the values."""
    model = type(models[0])
    bad = next((i for i, m in enumerate(models) if type(m) is not model), None)
    if bad is not None:
        raise InputTypeError(f"{what}: a list of pydantic models must hold one model class: "
                             f"item {bad} is {type(models[bad]).__qualname__}, not "
                             f"{model.__qualname__}")
    if schema is None:
        raise NotSupportedError(f"{what}: lancenb does not derive an Arrow schema from the "
                                f"pydantic model {model.__qualname__} (pylance's "
                                f"lance.pydantic); pass schema=")
    return _table(pa.Table.from_pylist([m.model_dump() for m in models], schema=schema),
                  schema)


def _table(t: pa.Table, schema: pa.Schema | None) -> tuple[pa.Schema, Iterator]:
    if schema is not None and not t.schema.equals(schema, check_metadata=False):
        t = _cast_table(t, schema)
    return (schema or t.schema), iter(t.to_batches(max_chunksize=MAX_ROWS_PER_GROUP))


def _reader(r: pa.RecordBatchReader, schema: pa.Schema | None) -> tuple[pa.Schema, Iterator]:
    if schema is not None and not r.schema.equals(schema, check_metadata=False):
        return schema, (_cast_batch(b, schema) for b in r)
    return (schema or r.schema), iter(r)


def _iterable(it: Iterator, schema: pa.Schema | None, what: str):
    if schema is not None:
        return schema, (_as_batch(b, schema, what) for b in it)
    try:
        first = next(it)
    except StopIteration:
        raise InvalidInputError(f"{what} got an empty iterable and no schema; pass schema= "
                                f"(for write_dataset: to create an empty dataset)") from None
    first = _as_batch(first, None, what)
    schema = first.schema

    def chain():
        yield first
        for b in it:
            yield _as_batch(b, schema, what)
    return schema, chain()


def _hugging_face(data, schema: pa.Schema | None, what: str):
    hf = sys.modules["datasets"]
    if isinstance(data, (hf.DatasetDict, hf.IterableDatasetDict)):
        splits = list(data.keys())
        first = splits[0] if splits else "train"
        raise InvalidInputError(
            f"{what}: a Hugging Face {type(data).__name__} holds several splits "
            f"({', '.join(map(str, splits)) or 'none'}), which {what} would not know how "
            f"to combine: pass one split, e.g. data[{first!r}], or write each split on its "
            f"own")
    if isinstance(data, hf.Dataset):
        # the arrow format gives the rows as the dataset shows them: a select()/shuffle()
        # index mapping applied (``data.data`` is the table before it)
        tables = data.with_format("arrow").iter(batch_size=HF_TABLE_ROWS)
        return _iterable((b for t in tables for b in t.to_batches()),
                         schema or data.data.schema, what)
    if isinstance(data, hf.IterableDataset):
        tables = (b for t in data.with_format("arrow").iter(batch_size=HF_BATCH_ROWS)
                  for b in t.to_batches())
        if schema is None and data.features is not None:
            schema = data.features.arrow_schema
        return _iterable(tables, schema, what)
    raise InputTypeError(f"{what}: unknown Hugging Face dataset type "
                         f"{type(data).__qualname__}; pass a datasets.Dataset or "
                         f"IterableDataset (one split of a DatasetDict)")


def _as_batch(b, schema, what: str = "write_dataset"):
    if isinstance(b, pa.Table):
        b = b.combine_chunks().to_batches()[0] if b.num_rows else pa.RecordBatch.from_pylist(
            [], schema=b.schema)
    if not isinstance(b, pa.RecordBatch):
        raise InputTypeError(f"an iterable passed to {what} must yield RecordBatches, "
                             f"not {type(b).__name__}")
    if schema is not None and not b.schema.equals(schema, check_metadata=False):
        b = _cast_batch(b, schema)
    return b


def _cast_table(t: pa.Table, schema: pa.Schema) -> pa.Table:
    extra = [n for n in t.column_names if n not in schema.names]
    if extra:
        raise SchemaError(f"the data does not match the schema: it has column(s) {extra} "
                          f"the schema does not\ndata: {t.schema}\nschema: {schema}")
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
