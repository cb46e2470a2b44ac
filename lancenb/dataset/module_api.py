"""pylance's module-level helpers: ``schema_to_json``/``json_to_schema``,
``sanitize_ts``, ``set_logger``, ``simd_info``.

The JSON form of a schema is Lance's (the reference's ``arrow/json.rs``): a field
is ``{"name", "type": {"type": <Lance logical type>, ["fields"], ["length"]},
"nullable", ["metadata"]}``; nested types list their children under ``fields``,
fixed-size types carry ``length``; the schema is ``{"fields", ["metadata"]}``.
"""

from __future__ import annotations

import datetime as _dt
import io
import logging
import platform
import typing

import pyarrow as pa
from llvmlite import binding

from lancenb.errors import InvalidInputError, SchemaError
from lancenb.file.schema import logical_type, parse_logical_type
from lancenb.io import PROCESS_IO

__all__ = ["schema_to_json", "json_to_schema", "sanitize_ts", "set_logger", "simd_info",
           "iops_counter", "bytes_read_counter", "BlobColumn", "pydantic_to_schema"]


def iops_counter() -> int:
    """Read requests lancenb made in this process so far."""
    return PROCESS_IO.reads


def bytes_read_counter() -> int:
    """Bytes lancenb read in this process so far."""
    return PROCESS_IO.bytes_read


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


def sanitize_ts(ts) -> _dt.datetime:
    """A ``datetime`` from a datetime, a pandas ``Timestamp`` or a string
    (``"%Y-%m-%d %H:%M:%S"``, or anything pandas parses when it is installed)."""
    if isinstance(ts, str):
        try:
            import pandas as pd  # lazy: heavy, and optional
        except ImportError:
            try:
                return _dt.datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
            except ValueError:
                raise InvalidInputError(f"Failed to parse timestamp string {ts}. Try "
                                        f"installing Pandas.") from None
        return pd.to_datetime(ts).to_pydatetime()
    if hasattr(ts, "to_pydatetime"):
        return ts.to_pydatetime()
    if not isinstance(ts, _dt.datetime):
        raise TypeError(f"Unrecognized version timestamp {ts} of type {type(ts)}")
    return ts


def set_logger(file_path="lancenb.log", name="lancenb", level=logging.INFO,
               format_string=None, log_handler=None) -> logging.Logger:
    """Send lancenb's log records (commits, retries, conflicts: the ``lancenb``
    logger and its children) to ``file_path`` or ``log_handler``, at ``level``;
    returns the logger. pylance's function with lancenb's logger name."""
    fmt = format_string or ("%(asctime)s %(name)s [%(levelname)s] %(filename)s:%(lineno)d "
                            "%(funcName)s : %(message)s")
    logger = logging.getLogger(name)
    logger.setLevel(level)
    handler = log_handler if log_handler is not None else logging.FileHandler(file_path)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(fmt))
    logger.addHandler(handler)
    return logger


_TIERS = (("avx512_fp16", ("avx512fp16", "avx512f", "avx512bw", "avx512vl")),
          ("avx512", ("avx512f", "avx512bw", "avx512vl")), ("avx2", ("avx2", "fma")),
          ("sse4.2", ("sse4.2",)), ("neon", ("neon",)))
_REPORTED = ("sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma",
             "f16c", "bmi1", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512dq",
             "avx512cd", "avx512fp16", "neon")


def simd_info() -> dict:
    """``{"tier", "target_arch", "host_features"}``: the SIMD features of this CPU as
    LLVM (which compiles lancenb's Numba kernels) sees them."""
    feats = binding.get_host_cpu_features()
    names = {"bmi": "bmi1", "sse4.1": "sse4.1"}
    have = {names.get(k, k) for k, v in feats.items() if v}
    arch = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    if arch == "aarch64":
        have.add("neon")  # always present on 64-bit ARM
    host = [f for f in _REPORTED if f in have]
    tier = next((t for t, need in _TIERS if all(n in have for n in need)), "scalar")
    return {"tier": tier, "target_arch": arch, "host_features": host}


class BlobColumn:
    """Iterate a binary column's values as file-like objects (``io.BytesIO``; a null
    reads as empty, as with pylance's ``lance.BlobColumn``). For large values stored as blobs,
    :meth:`LanceDataset.take_blobs` reads lazily instead."""

    def __init__(self, blob_column):
        if not isinstance(blob_column, (pa.Array, pa.ChunkedArray)):
            raise InvalidInputError(f"Expected a pyarrow.Array or pyarrow.ChunkedArray, got "
                                    f"{type(blob_column)}")
        if not (pa.types.is_binary(blob_column.type)
                or pa.types.is_large_binary(blob_column.type)):
            raise InvalidInputError(f"Expected a binary array, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self):
        for v in self.blob_column.to_pylist():
            yield io.BytesIO(v or b"")


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
