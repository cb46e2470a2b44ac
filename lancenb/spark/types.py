"""Type mapping between Lance (Arrow) schemas and Spark schemas.

Spark has no unsigned integers, no float16, no fixed-size lists and no large or
view types. Reading widens or relaxes them; the original Arrow field is recorded in
the Spark field's metadata so that writing the DataFrame back restores it:

============================  ===============================  =====================
Lance / Arrow                 Spark (and the Arrow Spark sends) metadata on the field
============================  ===============================  =====================
uint8 / uint16 / uint32       smallint / int / bigint           ``lancenb.arrow_field``
uint64                        decimal(20, 0)                    ``lancenb.arrow_field``
float16                       float                             ``lancenb.arrow_field``
fixed_size_list<T>[n]         array<T>                          + ``arrow.fixed-size-list.size``
large_string/binary/list,     string / binary / array           ``lancenb.arrow_field``
string_view, fixed binary
timestamp[s/ms/ns, tz]        timestamp (UTC microseconds)      ``lancenb.arrow_field``
timestamp[*] without tz       timestamp_ntz                     ``lancenb.arrow_field``
dictionary<K, V>              V                                 ``lancenb.arrow_field``
============================  ===============================  =====================

``lancenb.arrow_field`` holds the original top-level field (type and Lance field
metadata such as ``lance-encoding:*``) as a base64 Arrow IPC schema. It is also
written for lossless fields that carry field metadata. On write, the recorded field
is used only when it still maps to the column's Spark type (a transformed column
has lost it anyway). ``arrow.fixed-size-list.size`` is lance-spark's key: an
``array`` column carrying it is written as a fixed-size list, so DataFrames built
for lance-spark write vectors the same way.

Only :func:`to_spark_schema`, :func:`write_schema_from_spark` and
:func:`spark_compatible` touch pyspark; the conversions of data are pure pyarrow.
"""

from __future__ import annotations

import base64
import json

import pyarrow as pa

from lancenb.errors import SchemaError
from lancenb.file import jsonb
from lancenb.file.extensions import storage_schema

__all__ = ["ARROW_FIELD_KEY", "FSL_SIZE_KEY", "spark_arrow_type", "to_spark_schema",
           "write_schema_from_spark", "to_spark_batch", "to_lance_batch", "encode_field",
           "decode_field", "stored_schema"]

ARROW_FIELD_KEY = "lancenb.arrow_field"
FSL_SIZE_KEY = "arrow.fixed-size-list.size"
SPARK_METADATA_KEY = b"SPARK::metadata::json"
UTC = "UTC"


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark can carry for Lance type ``t`` (``t`` itself when it can)."""
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.json":
        return pa.string()  # JSON reaches Spark as its text
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)
    if t in (pa.uint8(), pa.uint16(), pa.uint32()):
        return {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64()}[t]
    if t == pa.uint64():
        return pa.decimal128(20, 0)
    if t == pa.float16():
        return pa.float32()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or \
            pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", UTC if t.tz is not None else None)
    if pa.types.is_date64(t):
        return pa.date32()
    if pa.types.is_time(t):
        return pa.time64("ns")
    if pa.types.is_duration(t):
        return pa.duration("us")
    if pa.types.is_decimal(t) and t.precision > 38:
        raise SchemaError(f"Spark cannot hold {t} (decimal precision above 38)")
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or \
            pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        vf = t.value_field
        return pa.list_(pa.field("element", spark_arrow_type(vf.type), vf.nullable))
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", spark_arrow_type(t.key_type), False),
                       pa.field("value", spark_arrow_type(t.item_type),
                                t.item_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in t])
    return t


def encode_field(f: pa.Field) -> str:
    """An Arrow field as text (base64 of its IPC schema), to carry through Spark options."""
    return base64.b64encode(pa.schema([f]).serialize().to_pybytes()).decode()


def decode_field(text: str) -> pa.Field | None:
    """The Arrow field of :func:`encode_field`'s text, or None when it is not one."""
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text))).field(0)
    except (ValueError, pa.ArrowInvalid, IndexError):
        return None


def _needs_record(f: pa.Field) -> bool:
    return bool(f.metadata) or spark_arrow_type(f.type) != f.type


def to_spark_schema(schema: pa.Schema):
    """The Spark ``StructType`` for a Lance schema, with the type-restoring metadata."""
    from pyspark.sql.pandas.types import from_arrow_type  # lazy: optional
    from pyspark.sql.types import StructField, StructType

    fields = []
    for f in schema:
        f = jsonb.text_field(f)  # (stored JSON: Spark gets the text, a string)
        try:
            st = from_arrow_type(spark_arrow_type(f.type), prefer_timestamp_ntz=True)
        except Exception as e:  # pyspark's PySparkTypeError and friends
            raise SchemaError(f"column {f.name!r}: Spark has no type for {f.type}: {e}") from e
        md = {}
        if _needs_record(f):
            md[ARROW_FIELD_KEY] = encode_field(f)
        if pa.types.is_fixed_size_list(f.type):
            md[FSL_SIZE_KEY] = f.type.list_size
        fields.append(StructField(f.name, st, f.nullable, md))
    return StructType(fields)


def spark_compatible(spark_type, arrow_type: pa.DataType) -> bool:
    """Whether a column of Spark type ``spark_type`` can be written to ``arrow_type``
    (its Spark mapping is the same, ignoring nullability)."""
    from pyspark.sql.pandas.types import from_arrow_type  # lazy: optional

    try:
        want = from_arrow_type(spark_arrow_type(arrow_type), prefer_timestamp_ntz=True)
    except Exception:
        return False
    return _strip_nulls(want) == _strip_nulls(spark_type)


def _strip_nulls(st):
    """A Spark type as JSON with nullability and metadata removed (G13: Spark's
    nullability flags depend on the plan, not on the data)."""
    def walk(j):
        if isinstance(j, dict):
            return {k: walk(v) for k, v in j.items()
                    if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")}
        if isinstance(j, list):
            return [walk(v) for v in j]
        return j
    return walk(json.loads(st.json()))


_UNSTORABLE = ("VariantType", "GeometryType", "GeographyType", "CalendarIntervalType",
               "YearMonthIntervalType", "NullType")


def write_schema_from_spark(spark_schema) -> pa.Schema:
    """The Arrow schema to store a DataFrame with this Spark schema as a new dataset:
    recorded original fields where they still fit, fixed-size lists where
    ``arrow.fixed-size-list.size`` says so, Spark's own Arrow mapping otherwise."""
    from pyspark.sql.pandas.types import to_arrow_type  # lazy: optional
    from pyspark.sql.types import ArrayType, StructType

    out = []
    for sf in spark_schema.fields:
        md = sf.metadata or {}
        kind = type(sf.dataType).__name__
        if kind in _UNSTORABLE:
            raise SchemaError(f"column {sf.name!r}: Spark type {sf.dataType.simpleString()} "
                              f"cannot be stored in a Lance dataset; cast it first")
        rec = decode_field(md[ARROW_FIELD_KEY]) if ARROW_FIELD_KEY in md else None
        if rec is not None and spark_compatible(sf.dataType, rec.type):
            out.append(pa.field(sf.name, rec.type, sf.nullable, rec.metadata))
            continue
        try:
            t = to_arrow_type(sf.dataType, timezone=UTC)
        except Exception as e:
            raise SchemaError(f"column {sf.name!r}: Spark type {sf.dataType.simpleString()} "
                              f"has no Arrow equivalent: {e}") from e
        size = md.get(FSL_SIZE_KEY)
        if size is not None:
            if not isinstance(sf.dataType, ArrayType):
                raise SchemaError(f"column {sf.name!r}: {FSL_SIZE_KEY}={size!r} on a "
                                  f"{sf.dataType.simpleString()} column (it needs an array)")
            try:
                n = int(size)
            except (TypeError, ValueError):
                n = 0
            if n <= 0:
                raise SchemaError(f"column {sf.name!r}: {FSL_SIZE_KEY} must be a positive "
                                  f"integer, not {size!r}")
            t = pa.list_(t.value_field, n)
        elif isinstance(sf.dataType, StructType):
            t = pa.struct(list(write_schema_from_spark(sf.dataType)))
        out.append(pa.field(sf.name, t, sf.nullable))
    return pa.schema(out)


# -- data ----------------------------------------------------------------------
def _cast(arr, target: pa.DataType, name: str, *, to_spark: bool):
    if arr.type == target:
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode() if isinstance(arr, pa.Array) else pa.chunked_array(
            [c.dictionary_decode() for c in arr.chunks], arr.type.value_type)
        if arr.type == target:
            return arr
    # timestamps: Spark holds microseconds; finer units are truncated on read
    safe = not (to_spark and pa.types.is_timestamp(arr.type))
    try:
        return arr.cast(target, safe=safe)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"column {name!r}: cannot convert {arr.type} to {target}: {e}") from e


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """A dataset's schema as Lance stores it: extension columns (which the Python API
    returns as extension types) as their storage type with the extension's tags, the
    types Spark is given."""
    return storage_schema(schema) or schema


def to_spark_batch(table, target: pa.Schema):
    """``table`` (Lance types) as ``target`` (the exact Arrow schema Spark expects)."""
    stored = storage_schema(table.schema)
    if stored is not None:  # extension arrays: their storage (no copy)
        table = table.cast(stored)
    cols = [_cast(table.column(f.name), f.type, f.name, to_spark=True) for f in target]
    return pa.Table.from_arrays(cols, schema=target)


def to_lance_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """A batch from Spark cast to the dataset's Arrow schema; overflow, wrong vector
    lengths and nulls in non-nullable columns raise :class:`SchemaError`."""
    cols = []
    for f in target:
        try:
            arr = batch.column(f.name)
        except KeyError:
            raise SchemaError(f"the data has no column {f.name!r}") from None
        if jsonb.holds(f, jsonb.LANCE_JSON):  # JSON text from Spark: checked, as JSONB
            text = jsonb.text_field(f)
            arr = jsonb.jsonb_array(_cast(arr, text.type, f.name, to_spark=False), text)
        arr = _cast(arr, f.type, f.name, to_spark=False)
        if not f.nullable and arr.null_count:
            raise SchemaError(f"column {f.name!r} is not nullable in the dataset but the data "
                              f"has {arr.null_count} null(s)")
        cols.append(arr)
    return pa.RecordBatch.from_arrays(cols, schema=target)
