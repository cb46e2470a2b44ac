"""Dataset filters: SQL predicates, their evaluation, and page pruning.

A filter is either a :class:`pyarrow.compute.Expression` or a SQL predicate string (the
``WHERE`` clause of ``to_table(filter=...)``, ``count_rows(filter=...)``,
``delete(predicate)``), in pylance's dialect: ``'...'`` and ``"..."`` are string
literals, ```...``` quotes identifiers. :func:`compile_filter` parses a string once with
``sqlglot`` (depth limit, referenced columns), has the SQL engine
(:mod:`lancenb.dataset.sql`, DataFusion) check names, functions and types, and builds a
small typed tree of the parts it models, for statistics pruning (``.may_match(stats)``).
Evaluation (``.positions(table)``): when the whole predicate is modelled by the tree (the
constructs listed below), its ``pyarrow.compute`` form, which is several times faster
per batch than the engine; otherwise (functions, ``CASE``, ``IS DISTINCT FROM``, list
indexing, ...) the engine, with pylance's semantics. :func:`to_expression` gives the
``pyarrow.compute`` form and refuses what only the engine evaluates.

Modelled SQL (pyarrow.compute evaluation, pruning)
--------------------------------------------------
- comparisons ``= == != <> < <= > >=``; arithmetic ``+ - * / %`` and unary ``-``
- ``AND``, ``OR``, ``NOT``, parentheses; a bare boolean column (``WHERE flag``)
- ``x [NOT] IN (v1, v2, ...)``, ``x [NOT] BETWEEN a AND b``, ``x IS [NOT] NULL``,
  ``x IS [NOT] TRUE|FALSE``
- ``s [NOT] LIKE 'pat'`` and ``ILIKE`` (``%`` any run, ``_`` one character, ``\\`` escapes;
  ``ESCAPE 'c'`` picks another escape character)
- literals: strings, integers, decimals/floats (float64), ``TRUE``/``FALSE``, ``NULL``,
  ``TIMESTAMP '2024-01-01 00:00:00'``, ``DATE '2024-01-01'``, ``CAST('...' AS <type>)``
- ``CAST(expr AS <type>)`` / ``expr::<type>`` for the SQL types in ``_SQL_TYPES``
- identifiers: plain (exact match, else a unique case-insensitive match), ``"my col"``,
  ```my col```, and struct fields ``a.b.c``

Floats compare as pylance (DataFusion) compares them: NaN is greater than every number
and equal to itself, ``-0.0 = 0.0``.

Literals are cast to the type of what they are compared with (``int32 = 5``,
``timestamp[us] > TIMESTAMP '...'``, ``date32 = '2024-01-01'``) when the cast is exact;
otherwise Arrow's own numeric/temporal promotion applies. Naive timestamp literals
compared with a zoned column are read as UTC. Semantics are SQL three-valued logic:
a row whose predicate is NULL is not selected (``Table.filter`` drops nulls), and
``x NOT IN (1, NULL)`` is never true. Integer ``/`` truncates (as in DataFusion), ``%``
takes the sign of the dividend, integer overflow and division by zero raise when the
expression is evaluated.

Nesting is limited to ``MAX_FILTER_DEPTH`` (64) levels of parentheses, ``NOT``, unary
minus, casts and arithmetic (DataFusion's SQL parser stops at 50); deeper filters are an
:class:`~lancenb.errors.InvalidInputError`. Flat ``AND``/``OR`` chains are not nesting:
they are collected iteratively into one balanced tree, so ``' AND '.join(['id = 1'] *
3000)`` compiles (with depth 12) and evaluates like pylance's.

Everything else DataFusion accepts in an expression is evaluated by the engine; an
``AND`` chain keeps pruning on its modelled terms. Errors (syntax, unknown columns or
functions, non-boolean predicates) are :class:`~lancenb.errors.InvalidInputError` naming
the filter and the problem.

Pruning
-------
:meth:`Filter.may_match` returns False only when per-column statistics *prove* no row
can satisfy the predicate; the rules are in :mod:`lancenb.dataset.pruning`. The
statistics themselves (``ColumnStats``, ``compute_stats``) live in
:mod:`lancenb.dataset.stats`.
"""

from __future__ import annotations

import re
import sys
import threading
from dataclasses import dataclass, field, fields
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp, tokens
from sqlglot.dialects.dialect import Dialect

from lancenb.dataset import sql as engine
from lancenb.dataset.exprnodes import (
    ARITH,
    CMP,
    And,
    Arith,
    Cast,
    Cmp,
    Col,
    In,
    IsBool,
    IsNull,
    Like,
    Lit,
    Neg,
    Node,
    Not,
    Opaque,
    Or,
    is_numeric,
    is_text,
)
from lancenb.dataset.pruning import may_be_true
from lancenb.dataset.stats import ColumnStats
from lancenb.errors import InvalidInputError

__all__ = [
    "Filter",
    "check_expression",
    "compile_expression",
    "compile_filter",
    "referenced_columns",
    "may_match",
    "to_expression",
]

FilterLike = Union[str, pc.Expression, "Filter"]

# How deep a filter may nest (see the module docstring). sqlglot's parser spends about
# 20 Python frames a level, so parsing runs under a raised recursion limit.
MAX_FILTER_DEPTH = 64
_PARSE_RECURSION_LIMIT = 4000
_PARSE_LOCK = threading.Lock()
_OPENERS = frozenset({"L_PAREN", "NOT", "DASH"})


class _LanceSql(Dialect):
    """pylance's filter dialect in sqlglot: ``'...'`` and ``"..."`` are string literals,
    ````` quotes identifiers (DataFusion's MySQL dialect, which pylance parses with)."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ["`"]
        QUOTES = ["'", '"']


# ----------------------------------------------------------------- SQL → tree

_SQL_TYPES = {
    exp.DataType.Type.BOOLEAN: pa.bool_(),
    exp.DataType.Type.TINYINT: pa.int8(), exp.DataType.Type.SMALLINT: pa.int16(),
    exp.DataType.Type.INT: pa.int32(), exp.DataType.Type.BIGINT: pa.int64(),
    exp.DataType.Type.UTINYINT: pa.uint8(), exp.DataType.Type.USMALLINT: pa.uint16(),
    exp.DataType.Type.UINT: pa.uint32(), exp.DataType.Type.UBIGINT: pa.uint64(),
    exp.DataType.Type.FLOAT: pa.float32(), exp.DataType.Type.DOUBLE: pa.float64(),
    exp.DataType.Type.VARCHAR: pa.string(), exp.DataType.Type.TEXT: pa.string(),
    exp.DataType.Type.CHAR: pa.string(), exp.DataType.Type.VARBINARY: pa.binary(),
    exp.DataType.Type.BINARY: pa.binary(), exp.DataType.Type.BLOB: pa.binary(),
    exp.DataType.Type.DATE: pa.date32(),
    exp.DataType.Type.TIMESTAMP: pa.timestamp("us"),
    exp.DataType.Type.TIMESTAMPNTZ: pa.timestamp("us"),
    exp.DataType.Type.DATETIME: pa.timestamp("us"),
    exp.DataType.Type.TIMESTAMPTZ: pa.timestamp("us", "UTC"),
    exp.DataType.Type.TIMESTAMP_NS: pa.timestamp("ns"),
}

_UNITS = ["s", "ms", "us", "ns"]

_BINARY_OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">",
               exp.GTE: ">=", exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/",
               exp.Mod: "%"}


def _exact_cast(value: pa.Scalar, target: pa.DataType) -> pa.Scalar | None:
    """``value`` cast to ``target`` if that loses nothing (it casts back unchanged)."""
    if value.type == target:
        return value
    if not value.is_valid:
        return pa.scalar(None, target)
    try:
        out = value.cast(target, safe=True)
        if pa.types.is_string(value.type) or pa.types.is_large_string(value.type):
            return out  # parsing text: the round trip would only differ in spelling
        return out if out.cast(value.type, safe=True) == value else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


class _Translator:
    """Turns a sqlglot AST into a typed :class:`Node` tree against one schema."""

    def __init__(self, text: str, schema: pa.Schema, tolerant: bool = False):
        self.text = text
        self.schema = schema
        self.depth = 0
        self.tolerant = tolerant

    def fail(self, problem: str) -> InvalidInputError:
        return InvalidInputError(f"filter {_short(self.text)!r}: {problem}")

    def node(self, e: exp.Expression) -> Node:
        self.depth += 1
        try:
            if self.depth > MAX_FILTER_DEPTH:
                raise self.fail(f"nests deeper than {MAX_FILTER_DEPTH} levels")
            return self._node(e)
        finally:
            self.depth -= 1

    def chain(self, e: exp.Expression, kind: type) -> Node:
        """A flat run of ``AND`` (or ``OR``) terms, collected without recursion and
        combined into a balanced tree (depth log2 of the number of terms)."""
        terms, stack = [], [e]
        while stack:
            x = stack.pop()
            while isinstance(x, exp.Paren) and isinstance(x.this, kind):
                x = x.this
            if isinstance(x, kind):
                stack.append(x.expression)
                stack.append(x.this)
            else:
                terms.append(self.term(x))
        combine = And if kind is exp.And else Or
        while len(terms) > 1:
            paired = [combine(terms[i], terms[i + 1]) for i in range(0, len(terms) - 1, 2)]
            terms = paired + ([terms[-1]] if len(terms) % 2 else [])
        return terms[0]

    def term(self, e: exp.Expression) -> Node:
        """A predicate, or, in tolerant mode, an :class:`Opaque` stand-in for one the
        tree does not model (the engine checks and evaluates it)."""
        if not self.tolerant:
            return self.predicate(e)
        try:
            return self.predicate(e)
        except InvalidInputError as err:
            if "nests deeper than" in str(err):
                raise  # the depth limit holds for the engine too
            return Opaque(e.sql())

    def _node(self, e: exp.Expression) -> Node:
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, (exp.Column, exp.Dot)):
            return self.column(e)
        if isinstance(e, (exp.Literal, exp.Boolean, exp.Null)):
            return self.literal(e)
        if isinstance(e, exp.Cast):
            return self.cast(e)
        if isinstance(e, exp.Neg):
            arg = self.node(e.this)
            if not (is_numeric(arg.type) or pa.types.is_null(arg.type)):
                raise self.fail(f"unary minus needs a number, got {arg.type}")
            return Lit(pc.negate_checked(arg.value)) if isinstance(arg, Lit) else Neg(arg)
        if isinstance(e, (exp.And, exp.Or)):
            return self.chain(e, type(e))
        if isinstance(e, exp.Not):
            return Not(self.predicate(e.this))
        if type(e) in _BINARY_OPS:
            op = _BINARY_OPS[type(e)]
            left, right = self.node(e.this), self.node(e.expression)
            if op in CMP:
                left, right = self.coerce(left, right)
                return Cmp(op, left, right)
            return self.arith(op, left, right)
        if isinstance(e, exp.Between):
            x = self.node(e.this)
            lo = Cmp(">=", *self.coerce(x, self.node(e.args["low"])))
            hi = Cmp("<=", *self.coerce(x, self.node(e.args["high"])))
            return And(lo, hi)
        if isinstance(e, exp.In):
            return self.in_list(e)
        if isinstance(e, exp.Is):
            return self.is_(e)
        if isinstance(e, (exp.Like, exp.ILike)):
            return self.like(e, escape=None)
        if isinstance(e, exp.Escape) and isinstance(e.this, (exp.Like, exp.ILike)):
            esc = e.expression
            if not (isinstance(esc, exp.Literal) and esc.is_string and len(esc.this) == 1):
                raise self.fail("ESCAPE takes a one-character string")
            return self.like(e.this, escape=esc.this)
        if isinstance(e, (exp.Func, exp.Anonymous)) and not isinstance(e, exp.Binary):
            name = e.sql_name() if not isinstance(e, exp.Anonymous) else e.name
            raise self.fail(f"unsupported function {name}()")
        raise self.fail(f"unsupported SQL construct {e.sql()!r} ({type(e).__name__})")

    def predicate(self, e: exp.Expression) -> Node:
        n = self.node(e)
        if isinstance(n, Lit) and pa.types.is_null(n.type):
            return Lit(pa.scalar(None, pa.bool_()))
        if not (pa.types.is_boolean(n.type) or pa.types.is_null(n.type)):
            raise self.fail(f"{e.sql()!r} is {n.type}, not a boolean condition")
        return n

    def column(self, e: exp.Expression) -> Col:
        parts: list[exp.Identifier] = []
        for part in e.parts if isinstance(e, exp.Column) else e.flatten():
            if isinstance(part, exp.Column):
                parts.extend(part.parts)
            elif isinstance(part, exp.Identifier):
                parts.append(part)
            else:
                raise self.fail(f"unsupported column reference {e.sql()!r}")
        fields, typ, path = self.schema, None, []
        for ident in parts:
            if typ is not None and not pa.types.is_struct(typ):
                raise self.fail(f"{'.'.join(path)} is {typ}, it has no field {ident.name!r}")
            names = [f.name for f in fields]
            name = ident.name
            if name not in names and not ident.quoted:
                folded = [n for n in names if n.lower() == name.lower()]
                name = folded[0] if len(folded) == 1 else name
            if name not in names:
                where = f"in {'.'.join(path)}" if path else "in the schema"
                raise self.fail(f"no column {'.'.join(path + [ident.name])!r} {where} "
                                f"(columns: {', '.join(names)})")
            if names.count(name) > 1:
                raise self.fail(f"column name {name!r} is ambiguous")
            path.append(name)
            typ = fields[names.index(name)].type
            fields = list(typ) if pa.types.is_struct(typ) else []
        return Col(tuple(path), typ)

    def literal(self, e: exp.Expression) -> Lit:
        if isinstance(e, exp.Null):
            return Lit(pa.scalar(None, pa.null()))
        if isinstance(e, exp.Boolean):
            return Lit(pa.scalar(bool(e.this)))
        if e.is_string:
            return Lit(pa.scalar(e.this, pa.string()))
        text = e.this
        try:
            if text.isdigit():
                return Lit(pa.scalar(int(text), pa.int64() if int(text) < 2**63 else None))
            return Lit(pa.scalar(float(text), pa.float64()))
        except (ValueError, OverflowError, pa.ArrowException):
            raise self.fail(f"cannot read the number {text!r}") from None

    def sql_type(self, dt: exp.DataType) -> pa.DataType:
        if dt.this == exp.DataType.Type.DECIMAL:
            p, s = [int(x.this.this) for x in dt.expressions] or [38, 10]
            return pa.decimal128(p, s)
        if dt.this not in _SQL_TYPES:
            raise self.fail(f"unsupported type {dt.sql()!r} in CAST")
        return _SQL_TYPES[dt.this]

    def cast(self, e: exp.Cast) -> Node:
        target = self.sql_type(e.to)
        arg = self.node(e.this)
        if not isinstance(arg, Lit):
            return Cast(arg, target)
        if pa.types.is_timestamp(target) and pa.types.is_string(arg.type):
            parsed = self.parse_timestamp(arg.value.as_py())
            unit = max(parsed.type.unit, target.unit, key=_UNITS.index)  # keep precision
            return Lit(parsed.cast(pa.timestamp(unit, target.tz)))
        try:
            return Lit(arg.value.cast(target, safe=True))
        except pa.ArrowException as err:
            raise self.fail(f"cannot cast {e.this.sql()} to {target}: {err}") from None

    def parse_timestamp(self, text: str) -> pa.Scalar:
        """A timestamp literal: microseconds unless it needs nanoseconds; an offset
        (``Z``, ``+02:00``) makes it a UTC timestamp."""
        for typ in (pa.timestamp("us"), pa.timestamp("ns"), pa.timestamp("us", "UTC"),
                    pa.timestamp("ns", "UTC")):
            try:
                return pa.scalar(text).cast(typ)
            except pa.ArrowInvalid:
                continue
        raise self.fail(f"cannot read {text!r} as a timestamp")

    def coerce(self, left: Node, right: Node) -> tuple[Node, Node]:
        """Cast a literal compared with a column (or any non-literal) to its type."""
        if isinstance(right, Lit) and not isinstance(left, Lit):
            return left, self.coerce_literal(right, left.type)
        if isinstance(left, Lit) and not isinstance(right, Lit):
            return self.coerce_literal(left, right.type), right
        return left, right

    def coerce_literal(self, lit: Lit, target: pa.DataType) -> Lit:
        """``lit`` as ``target`` when the cast is exact; a string literal that does not
        parse as ``target`` is an error, other mismatches are left to Arrow's promotion."""
        if is_text(target) and not (is_text(lit.type) or pa.types.is_null(lit.type)):
            return lit  # no implicit number → text cast; Arrow reports the mismatch
        cast = _exact_cast(lit.value, target)
        if cast is None and pa.types.is_string(lit.type):
            if pa.types.is_timestamp(target):
                lit = Lit(self.parse_timestamp(lit.value.as_py()))
                cast = _exact_cast(lit.value, target)
        if cast is None and pa.types.is_timestamp(target) and pa.types.is_timestamp(lit.type):
            # Arrow compares timestamps of different units, not zoned with naive ones
            cast = _exact_cast(lit.value, pa.timestamp(lit.type.unit, target.tz))
        if cast is None and pa.types.is_string(lit.type):
            raise self.fail(f"cannot compare {target} with {lit.value.as_py()!r}")
        return lit if cast is None else Lit(cast)

    def arith(self, op: str, left: Node, right: Node) -> Node:
        for side in (left, right):
            if not (is_numeric(side.type) or pa.types.is_null(side.type)):
                raise self.fail(f"arithmetic {op!r} needs numbers, got {side.type}")
        if isinstance(left, Lit) and isinstance(right, Lit):
            try:
                return Lit(ARITH[op](left.value, right.value))
            except pa.ArrowException as err:
                raise self.fail(f"cannot compute {left.value} {op} {right.value}: {err}") \
                    from None
        if pa.types.is_null(left.type) or pa.types.is_null(right.type):
            typ = left.type if pa.types.is_null(right.type) else right.type
        else:  # Arrow's promotion decides the result type
            typ = ARITH[op](pa.array([], left.type), pa.array([], right.type)).type
        return Arith(op, left, right, typ)

    def in_list(self, e: exp.In) -> Node:
        if e.args.get("query") or e.args.get("unnest") or e.args.get("field"):
            raise self.fail("IN takes a list of literals, not a subquery")
        arg = self.node(e.this)
        items = [self.node(v) for v in e.expressions]
        if not all(isinstance(i, Lit) for i in items):
            raise self.fail("IN takes a list of literals")
        values = [self.coerce(arg, i)[1].value for i in items]
        kept = [v for v in values if v.is_valid]
        try:
            typed = [_exact_cast(v, arg.type) for v in kept]
            if all(t is not None for t in typed):
                array = pa.array([t.as_py() for t in typed], arg.type)
            else:
                array = pa.array([v.as_py() for v in kept])
        except (pa.ArrowException, TypeError, ValueError) as err:
            raise self.fail(f"IN list does not match {arg.type}: {err}") from None
        if pa.types.is_floating(array.type) and pc.any(pc.equal(array, 0)).as_py():
            # is_in hashes bits, so -0.0 would not match 0.0 as SQL requires
            array = pa.concat_arrays([array, pa.array([0.0, -0.0], array.type)])
        return In(arg, array, len(kept) < len(values))

    def is_(self, e: exp.Is) -> Node:
        arg = self.node(e.this)
        if isinstance(e.expression, exp.Null):
            return IsNull(arg, negated=False)
        if isinstance(e.expression, exp.Boolean) and pa.types.is_boolean(arg.type):
            return IsBool(arg, bool(e.expression.this))
        raise self.fail(f"unsupported IS test {e.sql()!r}")

    def like(self, e: exp.Expression, escape: str | None) -> Node:
        arg = self.node(e.this)
        pat = e.expression
        if not (isinstance(pat, exp.Literal) and pat.is_string):
            raise self.fail("LIKE takes a string literal pattern")
        if not (pa.types.is_string(arg.type) or pa.types.is_large_string(arg.type)):
            raise self.fail(f"LIKE needs a string column, got {arg.type}")
        pattern = pat.this
        if escape is not None and escape != "\\":
            out, chars = [], iter(pattern)
            for ch in chars:
                if ch == escape:
                    out.append("\\" + next(chars, ""))
                else:
                    out.append("\\\\" if ch == "\\" else ch)
            pattern = "".join(out)
        node = Like(arg, pattern, ignore_case=isinstance(e, exp.ILike))
        return Not(node) if e.args.get("negate") else node


# ----------------------------------------------------------------------- public API


@dataclass(frozen=True, eq=False)
class Filter:
    """A compiled filter: the Arrow ``expression`` and, for SQL, the typed tree used
    by :meth:`may_match`. Build with :func:`compile_filter`."""

    text: str | None
    expression: pc.Expression | None
    _tree: Node | None = field(default=None, repr=False)
    _columns: frozenset = field(default=frozenset(), repr=False)

    def positions(self, table: pa.Table) -> np.ndarray:
        """Positions (int64, ascending) of the rows of ``table`` where the filter is true
        (NULL counts as false). SQL goes through the engine (:mod:`lancenb.dataset.sql`),
        a pyarrow Expression through ``pyarrow.compute``."""
        if self.expression is None:  # functions, CASE, ...: the engine
            return engine.positions(table, self.text)
        # what the typed tree models (comparisons, IN, LIKE, casts, arithmetic, AND/OR)
        # pyarrow.compute evaluates with pylance's semantics, 3-10x faster per batch
        # than the engine (benchmarks/RESULTS.md, "SQL engine")
        pos = pa.array(np.arange(table.num_rows, dtype=np.int64))
        try:
            out = table.append_column("__lancenb_position", pos).filter(self.expression)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as e:
            what = self.text if self.text is not None else str(self.expression)
            raise InvalidInputError(f"filter {_short(what)!r}: {e}") from e
        return out.column("__lancenb_position").to_numpy()

    def apply(self, table: pa.Table) -> pa.Table:
        """The rows of ``table`` where the filter is true."""
        keep = self.positions(table)
        return table if len(keep) == table.num_rows else table.take(pa.array(keep))

    def may_match(self, stats: dict[str, ColumnStats]) -> bool:
        """False only if ``stats`` prove no row satisfies the filter."""
        if self._tree is None:
            return True  # a pyarrow Expression cannot be inspected: assume it matches
        try:
            return may_be_true(self._tree, stats, negated=False)
        except (TypeError, ValueError, ArithmeticError, pa.ArrowException):
            return True  # incomparable statistics prove nothing


def _validate(expression: pc.Expression, schema: pa.Schema, what: str) -> None:
    """Bind the expression against ``schema``: unknown fields, missing kernels and
    non-boolean results fail here rather than at scan time."""
    try:
        schema.empty_table().filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise InvalidInputError(f"filter {what}: {err}") from None


def _nodes(node: Node):
    """Every node of a tree (children are the dataclass fields holding nodes)."""
    yield node
    for fl in fields(node):
        child = getattr(node, fl.name)
        if isinstance(child, Node):
            yield from _nodes(child)


def referenced_columns(filter: "Filter | pc.Expression", names: list[str]) -> list[str]:
    """The top-level columns (of ``names``, in that order) an expression reads.

    Exact for a compiled SQL filter (from its tree). A pyarrow Expression cannot be
    inspected, so for one this returns the names that occur in its text: a superset,
    which is harmless (a column read and not used).
    """
    if isinstance(filter, Filter) and filter.text is not None:
        used = filter._columns
        return [n for n in names if n in used or n.lower() in used]
    text = str(filter.expression if isinstance(filter, Filter) else filter)
    return [n for n in names if re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", text)]


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _syntax_error(text: str, what: str) -> InvalidInputError:
    """The engine's account of a syntax error (sqlglot's names its own classes)."""
    try:
        engine.result_types(pa.schema([]), {"v": text}, what=what)
    except InvalidInputError as err:
        if ": syntax error: " in str(err):
            return err
    return InvalidInputError(f"{what} {_short(text)!r}: syntax error: not one SQL "
                             f"expression")


def _columns_of(ast: exp.Expression) -> frozenset:
    """The top-level column names an expression mentions (and their lower-case
    spellings): ``s.a`` mentions ``s``."""
    out = set()
    for c in ast.find_all(exp.Column):
        parts = c.parts
        if parts:
            out.add(parts[0].name)
            out.add(parts[0].name.lower())
    return frozenset(out)


def _parse(text: str, what: str) -> exp.Expression:
    """sqlglot's tree of ``text``, once its nesting is known to be within the limit."""
    try:
        toks = _LanceSql().tokenize(text)
    except sqlglot.errors.SqlglotError:
        raise _syntax_error(text, what) from None
    depth = deepest = 0
    for t in toks:  # parentheses, and runs of NOT / unary minus, nest
        name = t.token_type.name
        if name == "L_PAREN":
            depth += 1
        elif name == "R_PAREN":
            depth -= 1
        deepest = max(deepest, depth)
    run = longest = 0
    for t in toks:
        run = run + 1 if t.token_type.name in _OPENERS else 0
        longest = max(longest, run)
    if max(deepest, longest) > MAX_FILTER_DEPTH:
        raise InvalidInputError(f"{what} {_short(text)!r}: nests deeper than "
                                f"{MAX_FILTER_DEPTH} levels (parentheses, NOT, unary minus)")
    with _PARSE_LOCK:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _PARSE_RECURSION_LIMIT))
        try:
            ast = sqlglot.parse_one(text, read=_LanceSql)
        except sqlglot.errors.SqlglotError:
            raise _syntax_error(text, what) from None
        except RecursionError:
            raise InvalidInputError(f"{what} {_short(text)!r}: nests too deeply") from None
        finally:
            sys.setrecursionlimit(old)
    if isinstance(ast, (exp.Query, exp.Block, exp.Command, exp.DDL, exp.DML)):
        raise InvalidInputError(f"{what} {_short(text)!r}: expected one "
                                f"{'predicate' if what == 'filter' else what}, not a statement")
    return ast


def compile_filter(filter: FilterLike, schema: pa.Schema) -> Filter:
    """Parse and type-check ``filter`` (SQL text, Expression or :class:`Filter`)."""
    if isinstance(filter, Filter):
        return filter
    if isinstance(filter, pc.Expression):
        _validate(filter, schema, repr(str(filter)))
        return Filter(None, filter)
    if not isinstance(filter, str):
        raise InvalidInputError(f"filter must be a SQL string or a pyarrow Expression, "
                                f"not {type(filter).__name__}")
    if not filter.strip():
        raise InvalidInputError(f"filter {filter!r}: empty predicate")
    ast = _parse(filter, "filter")
    try:
        tree = _Translator(filter, schema, tolerant=True).term(ast)
    except InvalidInputError:
        raise  # the depth limit
    except RecursionError:  # a backstop: the depth limit should come first
        raise InvalidInputError(f"filter {_short(filter)!r}: nests too deeply") from None
    except (pa.ArrowException, TypeError, ValueError):
        tree = None  # left to the engine, pruning nothing
    expression = None
    if tree is not None and not any(isinstance(n, Opaque) for n in _nodes(tree)):
        try:
            expression = tree.expr()
            _validate(expression, schema, repr(_short(filter)))
        except (InvalidInputError, pa.ArrowException, TypeError, ValueError):
            expression = None
    if expression is None:
        # names, functions and types, in the engine's terms (the engine evaluates it).
        # Only here: DataFusion plans a 3000-term AND chain in ~40 s, pyarrow in ms.
        engine.check(schema, filter)
    return Filter(filter, expression, tree, _columns_of(ast))


def check_expression(sql: str, schema: pa.Schema, *,
                     what: str = "expression") -> tuple[pa.DataType, list[str]]:
    """Check a SQL *value* expression over ``schema`` (syntax, depth, names, functions,
    types) for the engine: its result type and the top-level columns it reads."""
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidInputError(f"{what} must be a non-empty SQL string, not {sql!r}")
    ast = _parse(sql, what)
    typ = engine.result_types(schema, {"v": sql}, what=what).field("v").type
    used = _columns_of(ast)
    return typ, [n for n in schema.names if n in used or n.lower() in used]


def compile_expression(sql: str, schema: pa.Schema) -> tuple[pc.Expression, pa.DataType]:
    """A SQL *value* expression (``a * 2``, ``CAST(x AS DOUBLE)``, ``s LIKE 'a%'``) over
    ``schema``: its pyarrow expression and result type (for ``add_columns``)."""
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidInputError(f"expression must be a non-empty SQL string, not {sql!r}")
    ast = _parse(sql, "expression")
    try:
        tree = _Translator(sql, schema).node(ast)
        expression = tree.expr()
        import pyarrow.dataset as pads  # lazy: it loads pandas; only add_columns needs it

        typ = pads.dataset(schema.empty_table()).to_table(columns={"v": expression}) \
            .schema.field("v").type
    except (pa.ArrowException, TypeError) as err:
        raise InvalidInputError(f"expression {_short(sql)!r}: {err}") from None
    except RecursionError:
        raise InvalidInputError(f"expression {_short(sql)!r}: nests too deeply") from None
    return expression, typ


def to_expression(filter: FilterLike, schema: pa.Schema) -> pc.Expression:
    """The :class:`pyarrow.compute.Expression` for ``filter`` over ``schema``.

    Raises :class:`~lancenb.errors.InvalidInputError` naming the filter and the problem
    (syntax error, unknown column, unsupported construct, type mismatch).
    """
    if isinstance(filter, str):
        if not filter.strip():
            raise InvalidInputError(f"filter {filter!r}: empty predicate")
        try:
            expression = _Translator(filter, schema).predicate(_parse(filter, "filter")).expr()
        except (pa.ArrowException, TypeError) as err:  # literal arithmetic, odd casts, ...
            raise InvalidInputError(f"filter {_short(filter)!r}: {err}") from None
        except RecursionError:  # a backstop: the depth limit should come first
            raise InvalidInputError(f"filter {_short(filter)!r}: nests too deeply") from None
        _validate(expression, schema, repr(_short(filter)))
        return expression
    compiled = compile_filter(filter, schema)
    if compiled.expression is None:
        raise InvalidInputError(f"filter {_short(compiled.text)!r} has no pyarrow.compute "
                                f"form (it uses functions only the SQL engine evaluates)")
    return compiled.expression


def may_match(filter: FilterLike, stats: dict[str, ColumnStats], *,
              schema: pa.Schema | None = None) -> bool:
    """Whether any row described by ``stats`` may satisfy ``filter``.

    Prefer ``compile_filter(...).may_match(stats)`` in loops. A SQL string with no
    ``schema`` is typed from the statistics' values; if that fails the answer is True.
    A pyarrow Expression is always True (it cannot be inspected).
    """
    if isinstance(filter, str):
        if schema is None:
            schema = _schema_from_stats(stats)
            try:
                filter = compile_filter(filter, schema)
            except InvalidInputError:
                return True
        else:
            filter = compile_filter(filter, schema)
    if isinstance(filter, pc.Expression):
        return True
    return filter.may_match(stats)


def _schema_from_stats(stats: dict[str, ColumnStats]) -> pa.Schema:
    fields = []
    for name, st in stats.items():
        typ = pa.null()
        for v in (st.min, st.max):
            if v is not None:
                try:
                    typ = pa.scalar(v).type
                except (pa.ArrowException, TypeError):
                    continue
                break
        if "." not in name:
            fields.append(pa.field(name, typ))
    return pa.schema(fields)
