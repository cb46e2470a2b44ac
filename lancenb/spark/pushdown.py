"""Spark's pushed filters (``pyspark.sql.datasource.Filter``) as lancenb SQL.

Spark removes the filters a source claims from its plan (SPARK_NOTES G5), so a
claimed filter must be applied exactly. A filter is claimed only when its meaning
in lancenb's SQL is the same as in Spark's for sure:

* comparisons, ``IN``, ``IS [NOT] NULL``, ``LIKE 'p%'``/``'%s'``/``'%c%'`` and ``NOT``
  of those, on top-level columns whose Spark type is their Lance type (no widened
  unsigned, float16, large or dictionary columns);
* literals of type bool, int, finite float, str (no backslash), ``date``; NaN, ``None``
  and timestamps stay with Spark.

Both engines compare floats the same way (NaN above every number and equal to
itself, ``-0.0 = 0.0``) and use three-valued logic. Everything else is returned
unclaimed and Spark evaluates it after the scan.
"""

from __future__ import annotations

import datetime as _dt
import math

import pyarrow as pa

__all__ = ["to_sql"]

_CMP = {"EqualTo": "=", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
        "LessThanOrEqual": "<="}
_SIMPLE = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, pa.types.is_string,
           pa.types.is_date32)


class _No(Exception):
    """This filter is not claimed."""


def _column(attr, schema: pa.Schema) -> pa.Field:
    if len(attr) != 1 or attr[0] not in schema.names or "`" in attr[0]:
        raise _No
    f = schema.field(attr[0])
    t = f.type
    if t in (pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(), pa.float16()) or \
            not any(test(t) for test in _SIMPLE):
        raise _No
    return f


def _literal(v, t: pa.DataType) -> str:
    if isinstance(v, bool):
        if not pa.types.is_boolean(t):
            raise _No
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            raise _No
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v) or not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            raise _No
        return repr(v)
    if isinstance(v, str):
        if "\\" in v or not pa.types.is_string(t):
            raise _No
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        if not pa.types.is_date32(t):
            raise _No
        return f"DATE '{v.isoformat()}'"
    raise _No


def _like(value: str, kind: str) -> str:
    if "\\" in value or not isinstance(value, str):
        raise _No
    esc = value.replace("!", "!!").replace("%", "!%").replace("_", "!_").replace("'", "''")
    pat = {"StringStartsWith": f"{esc}%", "StringEndsWith": f"%{esc}",
           "StringContains": f"%{esc}%"}[kind]
    return f"LIKE '{pat}' ESCAPE '!'"


def _one(flt, schema: pa.Schema) -> str:
    kind = type(flt).__name__
    if kind == "Not":
        return f"NOT ({_one(flt.child, schema)})"
    f = _column(flt.attribute, schema)
    col = f"`{f.name}`"
    if kind in _CMP:
        return f"{col} {_CMP[kind]} {_literal(flt.value, f.type)}"
    if kind == "In":
        if not flt.value:
            raise _No
        return f"{col} IN ({', '.join(_literal(v, f.type) for v in flt.value)})"
    if kind == "IsNull":
        return f"{col} IS NULL"
    if kind == "IsNotNull":
        return f"{col} IS NOT NULL"
    if kind in ("StringStartsWith", "StringEndsWith", "StringContains"):
        if not pa.types.is_string(f.type):
            raise _No
        return f"{col} {_like(flt.value, kind)}"
    raise _No


def to_sql(filters, schema: pa.Schema) -> tuple[list[str], list]:
    """``(claimed SQL predicates, filters left to Spark)`` for ``schema`` (Lance types)."""
    claimed, rest = [], []
    for flt in filters:
        try:
            claimed.append(_one(flt, schema))
        except (_No, AttributeError, TypeError):
            rest.append(flt)
    return claimed, rest
