"""Arrow schemas as the namespace spec writes them (``JsonArrowSchema``): what
``describe_table`` returns when asked for detailed metadata.

Each field is ``{"name", "nullable", "type": {"type": <name>, "fields"?, "length"?},
"metadata"?}``; type names are the spec's (``"utf8"``, ``"bool"``, ``"large_list"``),
nested types carry their child fields, fixed sizes go in ``length``, and a decimal
encodes ``precision * 1000 + scale`` there. A dictionary is written as its value type;
times, timestamps and durations by name only (units and time zone are not in the spec's
model). Example: ``pa.field("v", pa.list_(pa.float32()))`` becomes
``{"name": "v", "nullable": true, "type": {"type": "list", "fields": [{"name": "item",
"nullable": true, "type": {"type": "float32"}}]}}``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.types as pt

from lancenb.namespace.errors import InvalidInputError

__all__ = ["schema_to_spec_json"]

# pyarrow type predicate -> the spec's name, for types without parameters
_SIMPLE = [
    (pt.is_null, "null"), (pt.is_boolean, "bool"), (pt.is_int8, "int8"),
    (pt.is_uint8, "uint8"), (pt.is_int16, "int16"), (pt.is_uint16, "uint16"),
    (pt.is_int32, "int32"), (pt.is_uint32, "uint32"), (pt.is_int64, "int64"),
    (pt.is_uint64, "uint64"), (pt.is_float16, "float16"), (pt.is_float32, "float32"),
    (pt.is_float64, "float64"), (pt.is_date32, "date32"), (pt.is_date64, "date64"),
    (pt.is_time32, "time32"), (pt.is_time64, "time64"), (pt.is_timestamp, "timestamp"),
    (pt.is_duration, "duration"), (pt.is_interval, "interval"),
    (pt.is_string, "utf8"), (pt.is_large_string, "large_utf8"),
    (pt.is_binary, "binary"), (pt.is_large_binary, "large_binary"),
]
_DECIMALS = {32: "decimal32", 64: "decimal64", 128: "decimal128", 256: "decimal256"}


def _meta(metadata) -> dict | None:
    if not metadata:
        return None
    return {k.decode(): v.decode() for k, v in metadata.items()}


def _field(f: pa.Field) -> dict:
    out = {"name": f.name, "nullable": f.nullable, "type": _type(f.type, f.name)}
    meta = _meta(f.metadata)
    if meta:
        out["metadata"] = meta
    return out


def _type(t: pa.DataType, name: str) -> dict:
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    for test, spec_name in _SIMPLE:
        if test(t):
            return {"type": spec_name}
    if pt.is_decimal(t):
        return {"type": _DECIMALS[t.bit_width], "length": t.precision * 1000 + t.scale}
    if pt.is_fixed_size_binary(t):
        return {"type": "fixed_size_binary", "length": t.byte_width}
    if pt.is_dictionary(t):
        return _type(t.value_type, name)
    if pt.is_list(t) or pt.is_large_list(t):
        return {"type": "list" if pt.is_list(t) else "large_list",
                "fields": [_field(t.value_field)]}
    if pt.is_fixed_size_list(t):
        return {"type": "fixed_size_list", "fields": [_field(t.value_field)],
                "length": t.list_size}
    if pt.is_struct(t):
        return {"type": "struct", "fields": [_field(t.field(i)) for i in range(t.num_fields)]}
    if pt.is_union(t):
        return {"type": "union"}
    raise InvalidInputError(f"field {name!r}: type {t} has no form in the namespace spec's "
                            "JSON schema")


def schema_to_spec_json(schema: pa.Schema) -> dict:
    """``schema`` as the spec's ``JsonArrowSchema`` dict (see the module docstring)."""
    out = {"fields": [_field(f) for f in schema]}
    meta = _meta(schema.metadata)
    if meta:
        out["metadata"] = meta
    return out
