"""The ``ScalarIndexQuery`` text of a scan plan: which part of a filter the scalar
indices answer, written as pylance prints it.

pylance prints each indexed leaf as ``[<column> <op> <value>]@<index>(<Type>)`` and
joins them with ``AND(a,b)``, ``OR(a,b)`` and ``NOT(a)``; two comparisons of one
column bounding it from below and above become one range ``[x >= 3 && x <= 7]``
(``BETWEEN`` too); ``x IN (1, 2)`` is ``OR([x = 1]@..,[x = 2]@..)``; ``x != 5`` is
``NOT([x = 5]@..)`` and ``IS NOT NULL`` is ``NOT([x IS NULL]@..)``. Values print as
DataFusion shows them: numbers plainly (``1.0`` as ``1``), strings unquoted, dates
as ``2020-01-05``, timestamps as their integer, binary as hex (fixed-size binary:
the first 20 hex digits, then ``...``). A top-level ``AND`` side no index answers
is left to the scan (the refine filter).

Example: ``x > 3 AND x < 10 AND y = 4`` with a BTREE on ``x`` and a BITMAP on ``y``
is ``AND([x > 3 && x < 10]@x_idx(BTree),[y = 4]@y_idx(Bitmap))``.
"""

from __future__ import annotations

import datetime

import pyarrow as pa

from lancenb.errors import LanceError
from lancenb.expr.nodes import FLIP, And, Cast, Cmp, Col, In, IsNull, Like, Lit, Not, Opaque, Or
from lancenb.expr.parse import Translator, parse_sql
from lancenb.index.json_index import json_leaf
from lancenb.index.scalar.common import Unanswerable
from lancenb.index.scalar.label_list import label_query
from lancenb.index.scalar.literals import opaque_comparison
from lancenb.index.scalar.ngram import contains_query, like_regex, like_runs
from lancenb.index.scalar.query import json_targets

__all__ = ["describe"]

# list_indices types a scan answers leaves with, and the order one is picked in
_VALUE_TYPES = ("BTree", "Bitmap", "ZoneMap", "BloomFilter")
_INEXACT = ("ZoneMap", "BloomFilter")  # (not under a NOT)
_LOWER, _UPPER = (">", ">="), ("<", "<=")


def _value(s: pa.Scalar) -> str:
    v = s.as_py()
    t = s.type
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return str(s.cast(pa.int64()).as_py())
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        h = bytes(v).hex()
        return h[:20] + "..." if pa.types.is_fixed_size_binary(t) and len(h) > 20 else h
    return str(v)


def _col_lit(node: Cmp):
    """``(column, op, literal)`` of a comparison of a column with a literal (column
    first), None otherwise."""
    op, a, b = node.op, node.left, node.right
    if isinstance(a, Lit) and not isinstance(b, Lit):
        op, a, b = FLIP[op], b, a
    while isinstance(a, Cast):
        a = a.arg
    if isinstance(a, Col) and isinstance(b, Lit):
        return ".".join(a.path), op, b.value
    return None


class _Describer:
    def __init__(self, indices: list[dict]):
        self.json: dict[tuple, tuple] = {}
        self.value: dict[str, dict] = {}
        self.loose = True
        self.labels: dict[str, dict] = {}
        for rank in _VALUE_TYPES:
            for e in indices:
                if len(e["fields"]) == 1 and e["type"] == rank:
                    self.value.setdefault(e["fields"][0], e)
        self.ngrams: dict[str, dict] = {}
        for e in indices:
            if len(e["fields"]) == 1 and e["type"] == "LabelList":
                self.labels.setdefault(e["fields"][0], e)
            if len(e["fields"]) == 1 and e["type"] == "NGram":
                self.ngrams.setdefault(e["fields"][0], e)

    def at(self, column: str, text: str, labels: bool = False) -> str:
        e = (self.labels if labels else self.value).get(column)
        if e is None or (e["type"] in _INEXACT and not self.loose):
            raise Unanswerable(f"no index on {column} answers this")
        return f"[{text}]@{e['name']}({e['type']})"

    def range(self, node: And) -> str | None:
        if not (isinstance(node.left, Cmp) and isinstance(node.right, Cmp)):
            return None
        a, b = _col_lit(node.left), _col_lit(node.right)
        if a is None or b is None or a[0] != b[0]:
            return None
        if a[1] in _UPPER and b[1] in _LOWER:
            a, b = b, a
        if a[1] not in _LOWER or b[1] not in _UPPER:
            return None
        c = a[0]
        return self.at(c, f"{c} {a[1]} {_value(a[2])} && {c} {b[1]} {_value(b[2])}")

    def node(self, node, loose: bool) -> tuple[str, bool]:
        """``(text, exact)``: exact is False when an ``AND`` side was dropped."""
        if isinstance(node, And):
            merged = self.range(node)
            if merged is not None:
                return merged, True
            try:
                a = self.node(node.left, loose)
            except Unanswerable:
                if not loose:
                    raise
                return self.node(node.right, loose)[0], False
            try:
                b = self.node(node.right, loose)
            except Unanswerable:
                if not loose:
                    raise
                return a[0], False
            return f"AND({a[0]},{b[0]})", a[1] and b[1]
        if isinstance(node, Or):
            a, b = self.node(node.left, loose), self.node(node.right, loose)
            if _REGEX in a[0] or _REGEX in b[0]:  # (pylance 14: no OR of a LIKE's NGRAM)
                raise Unanswerable("an OR with a LIKE answered by an NGRAM index")
            return f"OR({a[0]},{b[0]})", a[1] and b[1]
        if isinstance(node, Not):
            was, self.loose = self.loose, False
            try:
                return f"NOT({self.node(node.arg, False)[0]})", True
            finally:
                self.loose = was
        if isinstance(node, Cmp) and node.op == "!=":
            was, self.loose = self.loose, False
            try:
                return self.leaf(node), True
            finally:
                self.loose = was
        text = self.leaf(node)
        return text, _REGEX not in text  # (LIKE by an NGRAM index: a superset)

    def json_text(self, got) -> str:
        """pylance's text of a JSON index leaf: ``[Json(col = 10->path)]@idx(BTree)``."""
        column, path, typ, node = got
        e = self.json.get((column, path, typ))
        if e is None:
            raise Unanswerable(f"no JSON index on {column} -> {path} of type {typ}")

        def at(text: str) -> str:
            return f"[Json({column} {text}->{path})]@{e[0]}({e[1]})"

        def text(n) -> str:
            if isinstance(n, And):
                return f"AND({text(n.left)},{text(n.right)})"
            if isinstance(n, Not):
                return f"NOT({text(n.arg)})"
            if isinstance(n, IsNull):
                return at("IS NULL")
            if isinstance(n, In):
                return at("IN [" + ",".join(_value(v) for v in n.values) + "]")
            if n.op == "!=":
                return f"NOT({at(f'= {_value(n.right.value)}')})"
            return at(f"{n.op} {_value(n.right.value)}")
        return text(node)

    def leaf(self, node) -> str:
        if isinstance(node, Cmp):
            got = _col_lit(node)
            if got is None:
                raise Unanswerable("not a comparison with a literal")
            c, op, v = got
            if op == "!=":
                return f"NOT({self.at(c, f'{c} = {_value(v)}')})"
            return self.at(c, f"{c} {op} {_value(v)}")
        if isinstance(node, In) and isinstance(node.arg, Col):
            c = ".".join(node.arg.path)
            vals = node.values
            if not len(vals):
                raise Unanswerable("an empty IN list")
            out = self.at(c, f"{c} = {_value(vals[0])}")
            for i in range(1, len(vals)):
                out = f"OR({out},{self.at(c, f'{c} = {_value(vals[i])}')})"
            return out
        if isinstance(node, IsNull) and isinstance(node.arg, Col):
            c = ".".join(node.arg.path)
            text = self.at(c, f"{c} IS NULL")
            return f"NOT({text})" if node.negated else text
        if isinstance(node, Like) and isinstance(node.arg, Col) and not node.ignore_case:
            c = ".".join(node.arg.path)
            e = self.ngrams.get(c)
            if self.value.get(c, {}).get("type") != "BTree" and e is not None and \
                    self.loose and like_runs(node.pattern):
                regex = like_regex(node.pattern).replace('"', '\\"')
                return f'[{_REGEX}{c}, Utf8("{regex}"))]@{e["name"]}(NGram)'
            if self.value.get(c, {}).get("type") != "BTree":  # (pylance: BTREE, NGRAM)
                raise Unanswerable("LIKE is answered by a BTREE or NGRAM index only")
            pattern = node.pattern.replace("'", "''")
            return self.at(c, f"{c} LIKE '{pattern}'")
        if isinstance(node, Col) and pa.types.is_boolean(node.type):
            c = ".".join(node.path)
            return self.at(c, f"{c} = true")
        if isinstance(node, Opaque) and self.json:
            got = json_leaf(node.sql)
            if got is not None:
                return self.json_text(got)
        if isinstance(node, Opaque) and opaque_comparison(node.sql, self.schema) is not None:
            return self.leaf(opaque_comparison(node.sql, self.schema))
        if isinstance(node, Opaque) and contains_query(node.sql) is not None:
            column, text = contains_query(node.sql)
            e = self.ngrams.get(column)
            if e is None or not self.loose or len(text.encode()) < 3:
                raise Unanswerable("no NGRAM index answers this")
            return f'[contains({column}, Utf8("{text}"))]@{e["name"]}(NGram)'
        if isinstance(node, Opaque):
            q = label_query(node.sql)
            if q is not None:
                column, labels, mode = q
                items = ", ".join(str(v) for v in labels)
                return self.at(column, f"array_has_{mode}({column}, List([{items}]))", True)
        raise Unanswerable(f"{type(node).__name__} is not an indexed predicate")


_REGEX = "regexp_like("


def describe(indices: list[dict], schema: pa.Schema, filter, uri: str | None = None,
             version: int | None = None) -> tuple[str, bool] | None:
    """``(query text, exact)`` of the part of the SQL ``filter`` the scalar
    ``indices`` (``list_indices()`` entries) answer, None when they answer none of
    it; ``exact`` is False when the scan still has a part to evaluate.

    Examples
    --------
    >>> describe(ds.list_indices(), ds.schema, "val BETWEEN 10 AND 20")  # doctest: +SKIP
    ('[val >= 10 && val <= 20]@val_idx(BTree)', True)
    """
    if not isinstance(filter, str) or not filter.strip() or not indices:
        return None
    d = _Describer(indices)
    d.schema = schema
    d.json = {}
    if uri is not None and any(e["type"] == "Json" for e in indices):
        try:
            targets = json_targets(uri, version, indices)
        except (Unanswerable, LanceError, OSError):
            targets = {}
        for e in indices:
            t = targets.get(e["uuid"])
            if t is not None:
                d.json.setdefault((e["fields"][0], t[0], t[2]), (e["name"], t[1]))
    if not d.value and not d.labels and not d.ngrams and not d.json:
        return None
    try:
        tree = Translator(filter, schema, tolerant=True).term(parse_sql(filter, "filter"))
        return d.node(tree, True)
    except (Unanswerable, LanceError, RecursionError, TypeError, ValueError, KeyError):
        return None
