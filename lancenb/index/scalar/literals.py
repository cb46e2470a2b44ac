"""Filter parts the filter parser leaves opaque that an index still answers:
``column = arrow_cast(0x..., 'FixedSizeBinary(n)')`` (how pylance's users compare a
uuid or fixed-size binary column with a literal) becomes a comparison node.

Example: ``uuid = arrow_cast(0x3233..., 'FixedSizeBinary(16)')`` over a ``uuid``
column is ``Cmp("=", Col(("uuid",), fixed_size_binary(16)), Lit(b"2345..."))``.
"""

from __future__ import annotations

import re

import pyarrow as pa
import sqlglot
from sqlglot import exp

from lancenb.expr.nodes import Cmp, Col, Lit

__all__ = ["opaque_comparison"]

_OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FSB = re.compile(r"FixedSizeBinary\((\d+)\)$")


def _column_type(schema: pa.Schema, path: list[str]) -> pa.DataType | None:
    t = None
    fields = schema
    for p in path:
        idx = fields.get_field_index(p) if t is None else t.get_field_index(p)
        if idx < 0:
            return None
        f = fields.field(idx) if t is None else t.field(idx)
        t = f.type if pa.types.is_struct(f.type) else None
        last = f.type
    return last


def opaque_comparison(sql: str, schema: pa.Schema) -> Cmp | None:
    """The comparison node of an opaque filter part comparing a column with an
    ``arrow_cast`` of a hex literal to ``FixedSizeBinary(n)``, else None."""
    if "arrow_cast" not in sql.lower():  # (parsing costs ms: not for other parts)
        return None
    try:
        e = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return None
    op = _OPS.get(type(e))
    if op is None or not isinstance(e.this, exp.Column):
        return None
    cast = e.expression
    if not (isinstance(cast, exp.Anonymous) and str(cast.this).upper() == "ARROW_CAST"
            and len(cast.expressions) == 2 and isinstance(cast.expressions[0], exp.HexString)
            and isinstance(cast.expressions[1], exp.Literal)):
        return None
    m = _FSB.match(cast.expressions[1].this)
    if m is None:
        return None
    raw = bytes.fromhex(cast.expressions[0].this)
    width = int(m.group(1))
    if len(raw) != width:
        return None
    path = [p.name for p in e.this.parts]
    t = _column_type(schema, path)
    if t is None:
        return None
    storage = t.storage_type if isinstance(t, pa.BaseExtensionType) else t
    if storage != pa.binary(width):
        return None
    return Cmp(op, Col(tuple(path), storage), Lit(pa.scalar(raw, pa.binary(width))))
