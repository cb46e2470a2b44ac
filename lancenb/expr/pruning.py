"""Page pruning: whether a compiled filter's tree may be true of the rows that
per-column statistics describe.

:meth:`lancenb.expr.filters.Filter.may_match` returns False only when per-column
:class:`~lancenb.file.statistics.ColumnStats`
*prove* no row can satisfy the predicate: a comparison or ``IN`` entirely outside
``[min, max]``, ``IS NULL`` with ``null_count == 0``, any null-rejecting test on an
all-null column, ``AND`` with a false side, ``OR`` with both sides false; ``NOT`` is
pushed through ``AND``/``OR``/comparisons. Everything else (arithmetic, ``LIKE``,
casts, column-to-column tests, missing stats, ``NaN`` bounds, a filter given as a
``pyarrow`` Expression) is assumed to match.

Floats compare in pylance's total order (:mod:`lancenb.expr.floatorder`): -NaN below
-inf, NaN above +inf. The statistics' min and max ignore NaN (as the spec says), so on a
float column ``<``/``<=`` are pruned only when the statistics count no -NaN
(``negative_nan_count == 0``), ``>``/``>=`` only when they count no +NaN, ``!=`` only
when they count no NaN. Float statistics without these counts (older lancenb files,
other sources) prune no value test at all: older lancenb computed their min and max
with ``fmin``/``fmax``, which drop the value next to a signalling NaN. ``=`` and
``IN`` with numbers prune on ``[min, max]`` (a NaN equals no number; -0.0 equals +0.0).
The statistics themselves (``ColumnStats``, ``compute_stats``) live in
:mod:`lancenb.file.statistics`.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pyarrow as pa

from lancenb.expr.nodes import (
    FLIP,
    NEGATE,
    And,
    Cmp,
    Col,
    In,
    IsBool,
    IsNull,
    Like,
    Lit,
    Node,
    Not,
    Or,
    is_numeric,
)
from lancenb.file.statistics import ColumnStats

__all__ = ["may_be_true"]


class _Unknown(Exception):
    """Statistics cannot decide."""


def _key(value: Any, typ: pa.DataType) -> Any:
    """A Python value ordered like ``value`` in ``typ`` (temporal types as integers)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        raise _Unknown
    if pa.types.is_temporal(typ):
        s = value if isinstance(value, pa.Scalar) else pa.scalar(value, type=typ)
        return s.value
    return value.as_py() if isinstance(value, pa.Scalar) else value


def _tested_column(node: Node) -> Col | None:
    """The column of a column-versus-literal test, if ``node`` is one."""
    if isinstance(node, Cmp) and isinstance(node.left, Col) and isinstance(node.right, Lit):
        return node.left
    if isinstance(node, (In, IsNull, Like, IsBool)) and isinstance(node.arg, Col):
        return node.arg
    return None


def may_be_true(node: Node, stats: dict[str, ColumnStats], negated: bool) -> bool:
    """False only when the statistics prove no row satisfies ``node``."""
    if isinstance(node, Not):
        return may_be_true(node.arg, stats, not negated)
    if isinstance(node, (And, Or)):
        left = may_be_true(node.left, stats, negated)
        right = may_be_true(node.right, stats, negated)
        # NOT (a AND b) = NOT a OR NOT b under three-valued logic, and vice versa
        return (left and right) if isinstance(node, And) != negated else (left or right)
    if isinstance(node, Lit):
        v = node.value.as_py()
        return v is not None and bool(v) != negated
    if isinstance(node, Cmp) and isinstance(node.left, Lit) and isinstance(node.right, Col):
        node = Cmp(FLIP[node.op], node.right, node.left)
    if isinstance(node, Col) and pa.types.is_boolean(node.type):
        node = Cmp("=", node, Lit(pa.scalar(True)))
    if isinstance(node, Cmp) and isinstance(node.right, Lit) and not node.right.value.is_valid:
        return False  # comparing with NULL is never true, nor its negation
    col = _tested_column(node)
    if col is None:
        return True
    st = stats.get(".".join(col.path))
    if st is None:
        return True
    all_null = st.null_count is not None and st.null_count >= st.num_rows
    if isinstance(node, IsNull):
        if st.null_count is None:
            return True
        wants_nulls = node.negated == negated
        return st.null_count > 0 if wants_nulls else st.null_count < st.num_rows
    if isinstance(node, IsBool):
        return True
    if all_null:
        return False  # every remaining test is NULL on a NULL input, negated or not
    if pa.types.is_floating(col.type) and (st.nan_count is None
                                           or st.negative_nan_count is None):
        return True  # bounds of unknown provenance (see the module docstring)
    try:
        lo, hi = _key(st.min, col.type), _key(st.max, col.type)
        if isinstance(node, In):
            return _in_may_be_true(node, col, lo, hi, negated)
        if isinstance(node, Cmp):
            op = NEGATE[node.op] if negated else node.op
            if pa.types.is_floating(col.type) and op != "=" and _nan_may_pass(op, st):
                return True  # min/max skip NaN
            lit = node.right.value
            if lit.type != col.type and not (is_numeric(lit.type) and is_numeric(col.type)):
                return True
            return _range_may_hold(op, _key(lit, lit.type if lit.type != col.type
                                            else col.type), lo, hi)
    except _Unknown:
        return True
    return True


def _nan_may_pass(op: str, st: ColumnStats) -> bool:
    """Whether a NaN the statistics may hide passes ``x op v`` (v a number): -NaN
    passes ``<``/``<=``, +NaN ``>``/``>=``, both ``!=``."""
    nans, negative = st.nan_count, st.negative_nan_count
    if nans is None or negative is None:
        return True
    if op in ("<", "<="):
        return negative > 0
    if op in (">", ">="):
        return nans - negative > 0
    return nans > 0


def _range_may_hold(op: str, v: Any, lo: Any, hi: Any) -> bool:
    """Whether some value in [lo, hi] (a None bound is open) satisfies ``value op v``."""
    if isinstance(v, (float, Decimal)) and v != v:
        return True
    if op == "=":
        return (lo is None or lo <= v) and (hi is None or v <= hi)
    if op == "!=":
        return not (lo is not None and lo == hi and lo == v)
    if op == "<":
        return lo is None or lo < v
    if op == "<=":
        return lo is None or lo <= v
    if op == ">":
        return hi is None or hi > v
    return hi is None or hi >= v  # ">="


def _in_may_be_true(node: In, col: Col, lo: Any, hi: Any, negated: bool) -> bool:
    if negated:
        if node.has_null:
            return False  # x NOT IN (..., NULL) is never true
        if pa.types.is_floating(col.type) or lo is None or lo != hi:
            return True
        return all(_key(v, node.values.type) != lo for v in node.values)
    if node.values.type != col.type and not (is_numeric(node.values.type)
                                             and is_numeric(col.type)):
        return True
    return any(_range_may_hold("=", _key(v, node.values.type), lo, hi) for v in node.values)
