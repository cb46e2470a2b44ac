"""JSON scalar index in pylance's format: a BTREE or BITMAP index over the values one
key of a JSON column holds.

pylance 14 builds it with ``create_scalar_index(col, IndexConfig(index_type="json",
parameters={"target_index_type": "btree", "path": "x"}))``: the values under ``path``
are converted to the type of the first non-null one (int64, float64, string or
bool; a missing key or a JSON ``null`` is a null value) and indexed by the target
index, whose files (``page_data.lance`` ...) are the index's files. The manifest's
index details are a ``lance.index.pb.JsonIndexDetails``: ``path`` (field 1) and the
target index's details as a ``google.protobuf.Any`` (field 2, e.g.
``/lance.table.BTreeIndexDetails``); ``list_indices`` calls it ``Json``.

A filter ``json_get_int(col, 'x') = 10`` (``IN``, ranges, ``IS NULL``, ``BETWEEN``)
is answered by the index whose path is ``x`` when the function's result type is the
index's value type (``json_get_int``: int64, ``json_get_float``: float64,
``json_get_string``: string, ``json_get_bool``: bool); otherwise the scan evaluates
it (pylance answers ``json_get_float`` from an int64 index, with wrong rows).
lancenb builds the index on a plain key path (no ``$``, ``.`` or ``[``) only.

Example: ``{"x": 7}, {"y": 0}, {"x": 10}`` with path ``x`` is a BTREE over
``[7, null, 10]`` (int64); its details are ``0a 01 78 12 20 0a 1e
/lance.table.BTreeIndexDetails``.
"""

from __future__ import annotations

import pyarrow as pa
import sqlglot
from sqlglot import exp

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.expr import jsonfuncs
from lancenb.expr.nodes import FLIP, And, Cmp, Col, In, IsNull, Lit, Not
from lancenb.index.scalar.common import IndexFiles, Unanswerable
from lancenb.index.scalar.common import varint as _varint

__all__ = ["DETAILS_TYPE_URL", "encode_details", "decode_details", "json_values",
           "json_leaf", "json_key", "target_of", "extract_texts", "value_type", "check_params",
           "as_jsonb"]

DETAILS_TYPE_URL = "/lance.index.pb.JsonIndexDetails"
# target index type -> (its details type URL, list_indices type, the file and column
# holding its values)
TARGETS = {"BTREE": ("/lance.table.BTreeIndexDetails", "BTree", "page_data.lance", "values"),
           "BITMAP": ("/lance.table.BitmapIndexDetails", "Bitmap",
                      "bitmap_page_lookup.lance", "keys")}
_FUNCS = {"JSON_GET_INT": pa.int64(), "JSON_GET_FLOAT": pa.float64(),
          "JSON_GET_STRING": pa.string(), "JSON_GET_BOOL": pa.bool_()}
_GETTERS = {pa.int64(): jsonfuncs.json_get_int, pa.float64(): jsonfuncs.json_get_float,
            pa.string(): jsonfuncs.json_get_string, pa.bool_(): jsonfuncs.json_get_bool}
_OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


# -- details -------------------------------------------------------------------------
def _field(num: int, data: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def _fields(raw: bytes) -> dict[int, bytes]:
    """The length-delimited fields of a protobuf message (others skipped)."""
    out, i = {}, 0
    while i < len(raw):
        key, i = _read_varint(raw, i)
        kind = key & 7
        if kind == 2:
            n, i = _read_varint(raw, i)
            out[key >> 3] = raw[i:i + n]
            i += n
        elif kind == 0:
            _, i = _read_varint(raw, i)
        elif kind in (1, 5):
            i += 8 if kind == 1 else 4
        else:
            raise InvalidInputError(f"JsonIndexDetails: wire type {kind}")
    return out


def _read_varint(raw: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if i >= len(raw):
            raise InvalidInputError("JsonIndexDetails: truncated")
        b = raw[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def encode_details(path: str, target_url: str) -> bytes:
    """The ``JsonIndexDetails`` bytes of an index on ``path`` (target details empty)."""
    return _field(1, path.encode()) + _field(2, _field(1, target_url.encode()))


def decode_details(raw: bytes) -> tuple[str, str]:
    """``(path, target details type URL)`` of ``JsonIndexDetails`` bytes."""
    f = _fields(bytes(raw))
    return f.get(1, b"").decode(), _fields(f.get(2, b"")).get(1, b"").decode()


def target_of(uri: str, uuid: str, details: bytes) -> tuple[str, str, pa.DataType] | None:
    """``(path, list_indices type of the target, value type)`` of a JSON index, None
    when lancenb does not read its target type."""
    path, url = decode_details(details)
    for _, (turl, tname, fname, col) in TARGETS.items():
        if url.rsplit(".", 1)[-1] == turl.rsplit(".", 1)[-1]:
            reader = IndexFiles(uri, uuid).reader(fname)
            return path, tname, reader.schema_full.field(col).type
    return None


# -- build -----------------------------------------------------------------------------
def plain_key(path: str) -> bool:
    return bool(path) and not any(c in path for c in "$.[]*")


def check_params(params: dict) -> tuple[str, str]:
    """``(target index type, path)`` of a JSON index's parameters."""
    target = str(params.get("target_index_type", "")).upper()
    path = params.get("path")
    if target not in TARGETS:
        raise NotSupportedError(f"JSON index: target_index_type {target!r}: lancenb builds "
                                f"{sorted(TARGETS)}")
    if not isinstance(path, str) or not plain_key(path):
        raise NotSupportedError(f"JSON index: path {path!r}: lancenb indexes a plain key "
                                f"(no '$', '.', '[')")
    return target, path


def _json_type(text: str) -> pa.DataType | None:
    if text == "null":
        return None
    if text[0] == '"':
        return pa.string()
    if text in ("true", "false"):
        return pa.bool_()
    if text[0] in "[{":
        raise NotSupportedError("JSON index: the values under the path are arrays or "
                                "objects (lancenb indexes numbers, strings and booleans)")
    return pa.int64() if text.lstrip("-").isdigit() else pa.float64()


def value_type(chunks) -> pa.DataType:
    """The type of the first non-null value of the JSON texts ``chunks`` (string
    when all are null, as pylance)."""
    for texts in chunks:
        for t in texts.drop_null().to_pylist():
            got = _json_type(t)
            if got is not None:
                return got
    return pa.string()


def as_jsonb(v: pa.Array, column: str) -> pa.Array:
    """A JSON column's values as JSONB (``large_binary``), as the JSON functions take."""
    from lancenb.file.jsonb import to_jsonb

    return v if pa.types.is_large_binary(v.type) else to_jsonb(v, column=column)


def json_values(arr: pa.Array, path: str, typ: pa.DataType) -> pa.Array:
    """The values under key ``path`` of the JSONB array ``arr`` as ``typ``."""
    return _GETTERS[typ](arr, path)


def extract_texts(arr: pa.Array, path: str) -> pa.Array:
    """The JSON text under key ``path`` of each row (null where absent)."""
    return jsonfuncs.json_extract(arr, "$." + path)


# -- queries ---------------------------------------------------------------------------
def json_key(column: str, path: str) -> str:
    """The name a JSON index's values go by in a query tree (no column has it)."""
    return f"{column}\x00{path}"


def _literal(e, typ: pa.DataType):
    neg = isinstance(e, exp.Neg)
    if neg:
        e = e.this
    if isinstance(e, exp.Boolean) and typ == pa.bool_():
        return pa.scalar(bool(e.this), typ)
    if not isinstance(e, exp.Literal) or e.is_string != (typ == pa.string()):
        raise Unanswerable("not a literal of the function's type")
    text = ("-" if neg else "") + e.this
    try:
        v = text if typ == pa.string() else int(text) if typ == pa.int64() else float(text)
    except ValueError as err:
        raise Unanswerable(str(err)) from err
    return pa.scalar(v, typ)


def _json_call(e):
    """``(column, path, type)`` of ``JSON_GET_<T>(column, 'path')``, else None."""
    if not isinstance(e, exp.Anonymous):
        return None
    typ = _FUNCS.get(str(e.this).upper())
    args = e.expressions
    if typ is None or len(args) != 2 or not isinstance(args[0], exp.Column) or \
            not isinstance(args[1], exp.Literal) or not args[1].is_string:
        return None
    return args[0].name, args[1].this, typ


def json_leaf(sql: str):
    """``(column, path, type, node)`` of an opaque filter part testing
    ``json_get_<type>(column, 'path')`` against literals, ``node`` over
    ``Col((json_key(column, path),), type)``; None if it is not one."""
    try:
        e = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return None
    return _leaf(e)


def _leaf(e):
    if isinstance(e, exp.Paren):
        return _leaf(e.this)
    if isinstance(e, exp.Not):
        got = _leaf(e.this)
        return None if got is None else (*got[:3], Not(got[3]))
    try:
        op = _OPS.get(type(e))
        if op is not None:
            a, b = e.this, e.expression
            if _json_call(a) is None:
                a, b, op = b, a, FLIP[op]
            got = _json_call(a)
            if got is None:
                return None
            col = Col((json_key(got[0], got[1]),), got[2])
            return (*got, Cmp(op, col, Lit(_literal(b, got[2]))))
        got = _json_call(e.this) if isinstance(e, (exp.In, exp.Is, exp.Between)) else None
        if got is None:
            return None
        col = Col((json_key(got[0], got[1]),), got[2])
        if isinstance(e, exp.In) and e.expressions:
            vals = [_literal(v, got[2]) for v in e.expressions]
            return (*got, In(col, pa.array([v.as_py() for v in vals], got[2]), False))
        if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
            return (*got, IsNull(col, False))
        if isinstance(e, exp.Between):
            lo = Cmp(">=", col, Lit(_literal(e.args["low"], got[2])))
            hi = Cmp("<=", col, Lit(_literal(e.args["high"], got[2])))
            return (*got, And(lo, hi))
    except Unanswerable:
        return None
    return None
