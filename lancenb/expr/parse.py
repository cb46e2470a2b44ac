"""The filter parser: SQL text to a sqlglot tree (:func:`parse_sql`, in pylance's
dialect, depth-limited) and that tree to the typed node tree of
:mod:`lancenb.expr.nodes` against one schema (:class:`Translator`).

Example: ``parse_sql("a > 5", "filter")`` is sqlglot's ``GT(Column(a), Literal(5))``;
``Translator("a > 5", schema).node(ast)`` is ``Cmp(">", Col(("a",), int64), Lit(5))``,
the literal cast to the column's type. What the tree models is listed in
:mod:`lancenb.expr.filters`; the rest becomes an ``Opaque`` node the SQL engine
evaluates.
"""

from __future__ import annotations

import re
import sys

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp, tokens
from sqlglot.dialects.dialect import Dialect

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.expr import engine as engine
from lancenb.expr import jsonfuncs
from lancenb.expr.nodes import (
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
from lancenb.file.extensions import holds_lance_json
from lancenb.io.pools import module_lock

__all__ = ["Translator", "parse_sql", "columns_of", "short", "MAX_FILTER_DEPTH", "check_json_uses",
           "check_json_expression", "bare_json_field", "coerce_regexp_match", "to_sql"]

# How deep a filter may nest (see the module docstring). sqlglot's parser spends about
# 20 Python frames a level, so parsing runs under a raised recursion limit.
MAX_FILTER_DEPTH = 64
_PARSE_RECURSION_LIMIT = 4000
_PARSE_LOCK = module_lock(globals(), "_PARSE_LOCK")
_OPENERS = frozenset({"L_PAREN", "NOT", "DASH"})


class Refused(InvalidInputError):
    """What pylance refuses although the SQL engine would evaluate it (a string column
    compared with a binary literal): an error even where the engine takes over."""


class _LanceSql(Dialect):
    """pylance's filter dialect in sqlglot: ``'...'`` and ``"..."`` are string literals,
    ````` quotes identifiers (DataFusion's MySQL dialect, which pylance parses with)."""

    # JSONPath arguments stay text: lancenb.expr.jsonpath reads them, in pylance's
    # dialect (sqlglot's own reading would log warnings for paths it does not know)
    STRICT_JSON_PATH_SYNTAX = False

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ["`"]
        QUOTES = ["'", '"']
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]  # binary literals: X'616263' is b"abc"


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


class Translator:
    """Turns a sqlglot AST into a typed :class:`Node` tree against one schema."""

    def __init__(self, text: str, schema: pa.Schema, tolerant: bool = False):
        self.text = text
        self.schema = schema
        self.depth = 0
        # > 0 inside NOT (...) or IS TRUE/FALSE: pylance rounds a literal to a float
        # column's type only in comparisons reached through AND/OR (and NOT IN, NOT
        # BETWEEN); under an explicit NOT it compares unrounded, so f32 = 5e-324 and
        # NOT (f32 = 5e-324) both hold for 0.0 (measured with pylance 14)
        self.verbatim = 0
        self.tolerant = tolerant

    def fail(self, problem: str) -> InvalidInputError:
        """An ``InvalidInputError`` naming the filter text and ``msg``."""
        return InvalidInputError(f"filter {short(self.text)!r}: {engine.USER_INPUT}{problem}")

    def node(self, e: exp.Expression) -> Node:
        """The typed node of sqlglot expression ``e`` (an Opaque one when tolerant and
        not modelled)."""
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
            if "nests deeper than" in str(err) or isinstance(err, Refused):
                raise  # the depth limit holds for the engine too; pylance refuses these
            return Opaque(e.sql(dialect=_LanceSql))

    def _node(self, e: exp.Expression) -> Node:
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, (exp.Column, exp.Dot)):
            return self.column(e)
        if isinstance(e, (exp.Literal, exp.Boolean, exp.Null)):
            return self.literal(e)
        if isinstance(e, exp.HexString):
            return self.binary_literal(e)
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
            # (x NOT IN / NOT BETWEEN parse as NOT without parentheses: not verbatim)
            keyword = isinstance(e.this, (exp.In, exp.Between))
            self.verbatim += 0 if keyword else 1
            try:
                return Not(self.predicate(e.this))
            finally:
                self.verbatim -= 0 if keyword else 1
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
        """The node of ``e``, which must be boolean."""
        n = self.node(e)
        if isinstance(n, Lit) and pa.types.is_null(n.type):
            return Lit(pa.scalar(None, pa.bool_()))
        if not (pa.types.is_boolean(n.type) or pa.types.is_null(n.type)):
            raise self.fail(f"{e.sql()!r} is {n.type}, not a boolean condition (the filter "
                            f"does not return a boolean)")
        return n

    def column(self, e: exp.Expression) -> Col:
        """A column or struct field reference, resolved against the schema."""
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
                                f"(No field named {ident.name}; columns: {', '.join(names)})")
            if names.count(name) > 1:
                raise self.fail(f"column name {name!r} is ambiguous")
            path.append(name)
            typ = fields[names.index(name)].type
            fields = list(typ) if pa.types.is_struct(typ) else []
        return Col(tuple(path), typ)

    def literal(self, e: exp.Expression) -> Lit:
        """A literal: string, number, boolean or NULL."""
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

    def binary_literal(self, e: exp.HexString) -> Node:
        """``X'616263'``: the bytes ``abc`` (binary); hex digits that do not make whole
        bytes are left to the engine, as pylance leaves them to DataFusion."""
        try:
            return Lit(pa.scalar(bytes.fromhex(e.this), pa.binary()))
        except ValueError:
            if self.tolerant:
                return Opaque(e.sql(dialect=_LanceSql))
            raise self.fail(f"{e.sql(dialect=_LanceSql)!r} is not a binary literal "
                            f"(whole bytes of hex digits)") from None

    def sql_type(self, dt: exp.DataType) -> pa.DataType:
        """The Arrow type of a SQL type name."""
        if dt.this == exp.DataType.Type.DECIMAL:
            p, s = [int(x.this.this) for x in dt.expressions] or [38, 10]
            return pa.decimal128(p, s)
        if dt.this not in _SQL_TYPES:
            raise self.fail(f"unsupported type {dt.sql()!r} in CAST")
        return _SQL_TYPES[dt.this]

    def cast(self, e: exp.Cast) -> Node:
        """``CAST(x AS type)``; a literal is cast now."""
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
            return left, self.coerce_literal(right, left.type, isinstance(left, Col))
        if isinstance(left, Lit) and not isinstance(right, Lit):
            return self.coerce_literal(left, right.type, isinstance(right, Col)), right
        return left, right

    def coerce_literal(self, lit: Lit, target: pa.DataType, column: bool = False) -> Lit:
        """``lit`` as ``target`` when the cast is exact; a string literal that does not
        parse as ``target`` is an error, other mismatches are left to Arrow's promotion.
        A number compared with a float *column* is rounded to the column's type, as
        pylance converts it (``f32 = 3.4028235677973366e38`` compares with +inf)."""
        if is_text(target) and not (is_text(lit.type) or pa.types.is_null(lit.type)):
            return lit  # no implicit number → text cast; Arrow reports the mismatch
        if (pa.types.is_string(target) or pa.types.is_large_string(target)) \
                and pa.types.is_binary(lit.type):
            raise Refused(f"filter {short(self.text)!r}: {engine.USER_INPUT}cannot compare "
                          f"{target} with the binary literal {lit.value.as_py()!r}")
        cast = _exact_cast(lit.value, target)
        if (cast is None and column and not self.verbatim and pa.types.is_floating(target)
                and (pa.types.is_integer(lit.type) or pa.types.is_floating(lit.type))):
            try:
                cast = lit.value.cast(target, safe=False)  # (round to nearest, as Rust's as)
            except pa.ArrowException:
                cast = None
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
        """Arithmetic; two literals are folded."""
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
        """``x [NOT] IN (...)``: the values cast to x's type where exact."""
        if e.args.get("query") or e.args.get("unnest") or e.args.get("field"):
            raise self.fail("IN takes a list of literals, not a subquery")
        arg = self.node(e.this)
        items = [self.node(v) for v in e.expressions]
        if not all(isinstance(i, Lit) for i in items) or pa.types.is_float16(arg.type):
            # x IN (y, 1) is x = y OR x = 1, compared as pylance compares (floats: y by
            # the total order, -0.0 < +0.0; DataFusion's own IN holds them equal);
            # float16 too (Arrow's is_in has no float16 kernel)
            terms = [Cmp("=", *self.coerce(arg, i)) for i in items]
            while len(terms) > 1:
                terms = [Or(terms[k], terms[k + 1]) if k + 1 < len(terms) else terms[k]
                         for k in range(0, len(terms), 2)]
            return terms[0]
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
        """``x IS [NOT] NULL|TRUE|FALSE``."""
        self.verbatim += 1  # (see __init__)
        try:
            arg = self.node(e.this)
        finally:
            self.verbatim -= 1
        if isinstance(e.expression, exp.Null):
            return IsNull(arg, negated=False)
        if isinstance(e.expression, exp.Boolean) and pa.types.is_boolean(arg.type):
            return IsBool(arg, bool(e.expression.this))
        raise self.fail(f"unsupported IS test {e.sql()!r}")

    def like(self, e: exp.Expression, escape: str | None) -> Node:
        """``[NOT] LIKE`` / ``ILIKE`` with an optional ``ESCAPE``."""
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


def short(text: str, limit: int = 200) -> str:
    """``text``, cut to ``limit`` characters for messages."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _syntax_error(text: str, what: str) -> InvalidInputError:
    """The engine's account of a syntax error (sqlglot's names its own classes)."""
    try:
        engine.result_types(pa.schema([]), {"v": text}, what=what)
    except InvalidInputError as err:
        if ": syntax error: " in str(err):
            return err
    return InvalidInputError(f"{what} {short(text)!r}: {engine.USER_INPUT}syntax error: not "
                             f"one SQL expression")


def columns_of(ast: exp.Expression) -> frozenset:
    """The top-level column names an expression mentions (and their lower-case
    spellings): ``s.a`` mentions ``s``."""
    out = set()
    for c in ast.find_all(exp.Column):
        parts = c.parts
        if parts:
            out.add(parts[0].name)
            out.add(parts[0].name.lower())
    return frozenset(out)


def _field_at(schema: pa.Schema, parts: list[str]) -> pa.Field | None:
    """The field ``a.b.c`` names (exact names, else one case-insensitive match)."""
    fields = list(schema)
    f = None
    for name in parts:
        hits = [g for g in fields if g.name == name] or \
            [g for g in fields if g.name.lower() == name.lower()]
        if len(hits) != 1:
            return None
        f = hits[0]
        fields = list(f.type) if pa.types.is_struct(f.type) else []
    return f


def check_json_uses(ast: exp.Expression, schema: pa.Schema, text: str, what: str, *,
                    bare: bool = False) -> None:
    """Refuse an expression that reads a JSON column (JSONB, tagged ``lance.json``) other
    than as ``x IS [NOT] NULL``, the first argument of a JSON function
    (:mod:`lancenb.expr.jsonfuncs`) or, with ``bare``, the whole expression: anything
    else would see JSONB bytes."""
    for c in ast.find_all(exp.Column):
        f = _field_at(schema, [p.name for p in c.parts])
        if f is None or not holds_lance_json(f):
            continue
        if (bare and c is ast) or (isinstance(c.parent, exp.Is) and isinstance(
                c.parent.expression, exp.Null)) or _json_argument(c):
            continue
        raise NotSupportedError(
            f"{what} {short(text)!r}: {c.sql()!r} is JSON (stored as JSONB); SQL reads it "
            f"through the JSON functions (json_get, json_get_string/int/float/bool, "
            f"json_extract, json_exists, json_array_length, json_array_contains) or "
            f"tests it with IS NULL / IS NOT NULL")


def _json_argument(c: exp.Column) -> bool:
    """Whether column ``c`` is the first argument of one of the JSON functions."""
    f = c.parent
    if not isinstance(f, exp.Func):
        return False
    name = f.name if isinstance(f, exp.Anonymous) else f.sql_name()
    first = f.expressions[0] if isinstance(f, exp.Anonymous) and f.expressions \
        else f.args.get("this")
    return first is c and jsonfuncs.is_json_function(name)


def check_json_expression(expression: pc.Expression, schema: pa.Schema) -> None:
    """:func:`check_json_uses` for a pyarrow Expression, which cannot be inspected but
    as text: a column holding JSON may be named only as ``is_null(c`` / ``is_valid(c``
    (pyarrow would compare the JSONB bytes)."""
    text = str(expression)
    for f in schema:
        if not holds_lance_json(f):
            continue
        for m in re.finditer(r"(?<![\w])" + re.escape(f.name) + r"(?![\w])", text):
            if not re.search(r"\b(is_null|is_valid)\($", text[:m.start()]):
                raise NotSupportedError(
                    f"filter {short(text)!r}: {f.name!r} is or holds JSON (stored as JSONB); "
                    f"a pyarrow Expression may test it only with is_null / is_valid")


def bare_json_field(text: str, schema: pa.Schema) -> pa.Field | None:
    """The JSON field a SQL expression is, when it is just one (``j``, ``s.j``)."""
    ast = parse_sql(text, "expression")
    if not isinstance(ast, exp.Column):
        return None
    f = _field_at(schema, [p.name for p in ast.parts])
    return f if f is not None and holds_lance_json(f) else None


def coerce_regexp_match(ast: exp.Expression) -> exp.Expression | None:
    """pylance 14's reading of ``regexp_match`` in a filter: where the filter's value
    is made (the top, either side of ``AND`` / ``OR``, under ``NOT`` or parentheses),
    ``regexp_match(...)`` (a list of captures, or NULL) stands for ``regexp_match(...)
    IS NOT NULL``; elsewhere (``IS NULL``, comparisons, ``CASE``) it is the list. The
    rewritten tree, or None when nothing changed. Example: ``regexp_match(s, 'c.+')
    AND i > 1`` is ``NOT REGEXP_MATCH(s, 'c.+') IS NULL AND i > 1``."""
    def is_match(e) -> bool:
        return isinstance(e, exp.Anonymous) and e.name.lower() == "regexp_match"

    def as_test(e):
        return exp.Not(this=exp.Is(this=e, expression=exp.Null()))

    if not any(is_match(e) for e in ast.find_all(exp.Anonymous)):
        return None  # (most filters; long AND chains are walked without recursion)
    out = ast.copy()
    if is_match(out):
        return as_test(out)
    stack = [out]
    while stack:  # explicit stack: a filter of thousands of ANDs nests that deep
        e = stack.pop()
        if isinstance(e, (exp.And, exp.Or)):
            slots = ("this", "expression")
        elif isinstance(e, (exp.Not, exp.Paren)):
            slots = ("this",)
        else:
            continue
        for slot in slots:
            child = e.args.get(slot)
            if is_match(child):
                e.set(slot, as_test(child))
            elif child is not None:
                stack.append(child)
    return out


def to_sql(ast: exp.Expression) -> str:
    """SQL text of a tree, in pylance's dialect (what the engine parses)."""
    return ast.sql(dialect=_LanceSql)


def parse_sql(text: str, what: str) -> exp.Expression:
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
        raise InvalidInputError(f"{what} {short(text)!r}: nests deeper than "
                                f"{MAX_FILTER_DEPTH} levels (parentheses, NOT, unary minus)")
    with _PARSE_LOCK:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, _PARSE_RECURSION_LIMIT))
        try:
            ast = sqlglot.parse_one(text, read=_LanceSql)
        except sqlglot.errors.SqlglotError:
            raise _syntax_error(text, what) from None
        except RecursionError:
            raise InvalidInputError(f"{what} {short(text)!r}: nests too deeply") from None
        finally:
            sys.setrecursionlimit(old)
    if isinstance(ast, (exp.Query, exp.Block, exp.Command, exp.DDL, exp.DML)):
        raise InvalidInputError(f"{what} {short(text)!r}: expected one "
                                f"{'predicate' if what == 'filter' else what}, not a statement")
    return ast
