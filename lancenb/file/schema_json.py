"""Arrow schemas as JSON (pylance's ``schema_to_json``/``json_to_schema``) and from
Pydantic models (``pydantic_to_schema``).

The JSON form of a schema is Lance's (the reference's ``arrow/json.rs``): a field
is ``{"name", "type": {"type": <Lance logical type>, ["fields"], ["length"]},
"nullable", ["metadata"]}``; nested types list their children under ``fields``,
fixed-size types carry ``length``; the schema is ``{"fields", ["metadata"]}``.
"""

from __future__ import annotations

import datetime as _dt
import typing

import pyarrow as pa

from lancenb.errors import InvalidInputError, SchemaError
from lancenb.file.schema import logical_type, parse_logical_type

__all__ = ["schema_to_json", "json_to_schema", "pydantic_to_schema"]


def _type_json(dt: pa.DataType) -> dict:
    if pa.types.is_map(dt) or pa.types.is_string_view(dt) or pa.types.is_binary_view(dt):
        raise SchemaError(f"schema_to_json: unsupported type {dt} (as in pylance)")
    if pa.types.is_struct(dt):
        return {"type": "struct", "fields": [_field_json(dt.field(i))
                                             for i in range(dt.num_fields)]}
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        return {"type": "list" if pa.types.is_list(dt) else "large_list",
                "fields": [_field_json(dt.value_field)]}
    if pa.types.is_fixed_size_list(dt):
        return {"type": "fixed_size_list", "fields": [_field_json(dt.value_field)],
                "length": dt.list_size}
    if pa.types.is_fixed_size_binary(dt):
        return {"type": "fixed_size_binary", "length": dt.byte_width}
    return {"type": logical_type(dt)}


def _meta(m) -> dict:
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes)
                                                          else v) for k, v in m.items()}


def _field_json(f: pa.Field) -> dict:
    out = {"name": f.name, "type": _type_json(f.type), "nullable": f.nullable}
    if f.metadata:
        out["metadata"] = _meta(f.metadata)
    return out


def schema_to_json(schema: pa.Schema) -> dict:
    """A JSON-compatible dict describing ``schema`` (pylance's format).

    Examples
    --------
    >>> schema_to_json(pa.schema([("a", pa.int8())]))
    {'fields': [{'name': 'a', 'type': {'type': 'int8'}, 'nullable': True}]}
    """
    out = {"fields": [_field_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = _meta(schema.metadata)
    return out


def _type_from(j: dict, where: str) -> pa.DataType:
    if not isinstance(j, dict) or not isinstance(j.get("type"), str):
        raise InvalidInputError(f"json_to_schema: {where}: 'type' must be an object with a "
                                f"string 'type'")
    name = j["type"]
    children = [_field_from(c, f"{where}.") for c in j.get("fields", [])]
    if name == "fixed_size_list":
        return pa.list_(children[0], int(j["length"]))
    if name == "fixed_size_binary":
        return pa.binary(int(j["length"]))
    try:
        return parse_logical_type(name, children)
    except Exception as e:  # noqa: BLE001 - a bad type string is bad input here
        raise InvalidInputError(f"json_to_schema: {where}: {e}") from None


def _field_from(j: dict, prefix: str = "") -> pa.Field:
    if not isinstance(j, dict):
        raise InvalidInputError(f"json_to_schema: a field must be an object, not {j!r}")
    for k in ("name", "type", "nullable"):
        if k not in j:
            raise InvalidInputError(f"json_to_schema: field {j.get('name', '?')!r} has no "
                                    f"{k!r}")
    where = f"{prefix}{j['name']}"
    return pa.field(j["name"], _type_from(j["type"], where), bool(j["nullable"]),
                    j.get("metadata") or None)


def json_to_schema(schema_json: dict) -> pa.Schema:
    """The Arrow schema of a :func:`schema_to_json` dict."""
    if not isinstance(schema_json, dict) or not isinstance(schema_json.get("fields"), list):
        raise InvalidInputError("json_to_schema: expected an object with a 'fields' list")
    return pa.schema([_field_from(f) for f in schema_json["fields"]],
                     schema_json.get("metadata") or None)


def _pydantic_type(tp, nullable_out: list) -> pa.DataType:
    """The Arrow type of a Pydantic field annotation (Optional[...] sets
    ``nullable_out[0]``)."""

    from pydantic import BaseModel  # optional dependency, imported on use

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise SchemaError(f"from_pydantic_model: union {tp} is not supported")
        nullable_out[0] = True
        return _pydantic_type(rest[0], [False])
    if origin in (list, typing.List):
        inner = [False]
        t = _pydantic_type(args[0], inner)
        return pa.list_(pa.field("item", t, nullable=True))
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return pa.struct(pydantic_to_schema(tp))
    simple = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string(),
              bytes: pa.binary(), _dt.datetime: pa.timestamp("us"), _dt.date: pa.date32(),
              _dt.time: pa.time64("us"), _dt.timedelta: pa.duration("us")}
    if tp in simple:
        return simple[tp]
    raise SchemaError(f"from_pydantic_model: type {tp} is not supported")


def pydantic_to_schema(model) -> pa.Schema:
    """The Arrow schema of a Pydantic model class, from its annotations."""
    fields = []
    for name, info in model.model_fields.items():
        nullable = [False]
        t = _pydantic_type(info.annotation, nullable)
        fields.append(pa.field(name, t, nullable=nullable[0]))
    return pa.schema(fields)
