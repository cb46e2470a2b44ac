"""Dataset filters: SQL predicates, their evaluation, and page pruning.

A filter is either a :class:`pyarrow.compute.Expression` or a SQL predicate string (the
``WHERE`` clause of ``to_table(filter=...)``, ``count_rows(filter=...)``,
``delete(predicate)``), in pylance's dialect: ``'...'`` and ``"..."`` are string
literals, ```...``` quotes identifiers. :func:`compile_filter` parses a string once with
``sqlglot`` (depth limit, referenced columns), has the SQL engine
(:mod:`lancenb.expr.engine`, DataFusion) check names, functions and types, and builds a
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
- ``x [NOT] IN (v1, v2, ...)`` (values or columns), ``x [NOT] BETWEEN a AND b``,
  ``x IS [NOT] NULL``,
  ``x IS [NOT] TRUE|FALSE``
- ``s [NOT] LIKE 'pat'`` and ``ILIKE`` (``%`` any run, ``_`` one character, ``\\`` escapes;
  ``ESCAPE 'c'`` picks another escape character)
- literals: strings, integers, decimals/floats (float64), ``TRUE``/``FALSE``, ``NULL``,
  ``TIMESTAMP '2024-01-01 00:00:00'``, ``DATE '2024-01-01'``, ``CAST('...' AS <type>)``
- ``CAST(expr AS <type>)`` / ``expr::<type>`` for the SQL types in ``_SQL_TYPES``
- identifiers: plain (exact match, else a unique case-insensitive match), ``"my col"``,
  ```my col```, and struct fields ``a.b.c``

Floats compare as pylance (DataFusion) compares them, in IEEE 754's total order
(:mod:`lancenb.expr.floatorder`): -NaN below -inf, NaN above +inf, NaNs equal only
bit for bit; ``-0.0 = 0.0`` against a literal, ``-0.0 < 0.0`` between columns. A number
compared with a float32/float16 column is rounded to the column's type first; float16
values compare as float32. ``x IN (y, 1)`` with columns in the list is ``x = y OR x = 1``.

Literals are cast to the type of what they are compared with (``int32 = 5``,
``timestamp[us] > TIMESTAMP '...'``, ``date32 = '2024-01-01'``) when the cast is exact;
otherwise Arrow's own numeric/temporal promotion applies. Naive timestamp literals
compared with a zoned column are read as UTC. Semantics are SQL three-valued logic:
a row whose predicate is NULL is not selected (``Table.filter`` drops nulls), and
``x NOT IN (1, NULL)`` is never true. Integer ``/`` truncates (as in DataFusion), ``%``
takes the sign of the dividend (``INT_MIN % -1`` is 0), integer overflow and integer
division by zero raise when the expression is evaluated; float ``/`` and ``%`` follow
IEEE 754 (``1.0 / 0`` is inf, ``x % 0.0`` NaN). Float ``%`` needs pyarrow's
``remainder`` (pyarrow 26+); with older pyarrow such filters go to the SQL engine.

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
can satisfy the predicate; the rules are in :mod:`lancenb.expr.pruning`. The
statistics themselves (``ColumnStats``, ``compute_stats``) live in
:mod:`lancenb.file.statistics`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.acero import (
    Declaration,
    FilterNodeOptions,
    ProjectNodeOptions,
    TableSourceNodeOptions,
)

from lancenb.errors import InvalidInputError
from lancenb.expr import engine as engine
from lancenb.expr.nodes import (
    Node,
    Opaque,
)
from lancenb.expr.parse import (
    MAX_FILTER_DEPTH,  # noqa: F401 (documented here)
    Translator,
    check_json_expression,
    check_json_uses,
    coerce_regexp_match,
    columns_of,
    parse_sql,
    short,
    to_sql,
)
from lancenb.expr.pruning import may_be_true
from lancenb.file.statistics import ColumnStats

__all__ = [
    "Filter",
    "check_expression",
    "expression_field",
    "compile_expression",
    "compile_filter",
    "referenced_columns",
    "may_match",
    "to_expression",
]

FilterLike = Union[str, pc.Expression, "Filter"]

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
        (NULL counts as false). SQL goes through the engine (:mod:`lancenb.expr.engine`),
        a pyarrow Expression through ``pyarrow.compute``."""
        if self.expression is None:  # functions, CASE, ...: the engine
            return engine.positions(table, self.text)
        # what the typed tree models (comparisons, IN, LIKE, casts, arithmetic, AND/OR)
        # pyarrow.compute evaluates with pylance's semantics, 3-10x faster per batch
        # than the engine (benchmarks/RESULTS.md, "SQL engine")
        pos = pa.array(np.arange(table.num_rows, dtype=np.int64))
        try:
            out = _filter(table.append_column("__lancenb_position", pos), self.expression)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as e:
            what = self.text if self.text is not None else str(self.expression)
            raise InvalidInputError(f"filter {short(what)!r}: {e}") from e
        return out.column("__lancenb_position").to_numpy()

    def count(self, table: pa.Table) -> int:
        """How many rows of ``table`` the filter is true for (NULL counts as false):
        ``len(self.positions(table))``, without building the positions (a pyarrow
        Expression's result is summed)."""
        if self.expression is None:
            return len(self.positions(table))
        try:
            mask = Declaration.from_sequence([
                Declaration("table_source", TableSourceNodeOptions(table)),
                Declaration("project", ProjectNodeOptions([self.expression], ["m"]))
            ]).to_table(use_threads=table.num_rows >= _THREADED_FILTER_ROWS).column(0)
            if not pa.types.is_boolean(mask.type):
                raise TypeError(f"the filter gives {mask.type} values, not booleans")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as e:
            what = self.text if self.text is not None else str(self.expression)
            raise InvalidInputError(f"filter {short(what)!r}: {e}") from e
        return int(pc.sum(mask).as_py() or 0)

    def positions_by_dictionary(self, name: str, column: pa.ChunkedArray) -> np.ndarray | None:
        """:meth:`positions` over a table of the one column ``name`` this filter reads,
        given as dictionary arrays (``dictionary<int32, type>``): the filter is
        evaluated once per distinct value (each chunk's dictionary, and a null where
        the chunk has nulls), and a row matches where its value does. A compiled SQL
        predicate is a function of the row's value, so the positions are those of
        :meth:`positions` over the decoded rows; None where that is not known (a
        pyarrow Expression, a part the engine evaluates) or a dictionary value fails
        to evaluate (one no row may hold): the caller then evaluates the rows.

        Examples
        --------
        >>> f = compile_filter("c = 'b'", pa.schema([("c", pa.string())]))
        >>> d = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()),
        ...                                    pa.array(["a", "b"]))
        >>> f.positions_by_dictionary("c", pa.chunked_array([d])).tolist()  # b, a, b
        [0, 2]
        """
        if self.text is None or self.expression is None or self._tree is None:
            return None
        out, base = [], 0
        for chunk in column.chunks:
            items, n = chunk.dictionary, len(chunk)
            k = len(items)
            idx = np.frombuffer(chunk.indices.buffers()[1], np.int32, count=n,
                                offset=chunk.indices.offset * 4)
            values = items
            if chunk.null_count:  # null rows look up the extra null value at k
                values = pa.concat_arrays([items, pa.nulls(1, items.type)])
                idx = np.where(chunk.is_valid().to_numpy(zero_copy_only=False), idx, k)
            try:
                hit = self.positions(pa.table({name: values}))
            except InvalidInputError:
                return None
            if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= len(values)):
                return None  # (indices outside the dictionary: not ours to judge here)
            match = np.zeros(len(values), dtype=bool)
            match[hit] = True
            out.append(np.flatnonzero(match[idx]) + base)
            base += n
        return np.concatenate(out) if out else np.zeros(0, np.int64)

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


# a filter over fewer rows than this runs on the calling thread: handing a few
# thousand rows to Acero's thread pool costs more than evaluating them (about half
# the CPU time and wall time over 1,000 rows), and a scan of many small fragments
# evaluates one such batch after another
_THREADED_FILTER_ROWS = 1 << 17


def _filter(table: pa.Table, expression: pc.Expression) -> pa.Table:
    """``table.filter(expression)``, single-threaded below :data:`_THREADED_FILTER_ROWS`."""
    if table.num_rows >= _THREADED_FILTER_ROWS:
        return table.filter(expression)
    return Declaration.from_sequence([
        Declaration("table_source", TableSourceNodeOptions(table)),
        Declaration("filter", FilterNodeOptions(expression))]).to_table(use_threads=False)


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


def compile_filter(filter: FilterLike, schema: pa.Schema) -> Filter:
    """Parse and type-check ``filter`` (SQL text, Expression or :class:`Filter`)."""
    if isinstance(filter, Filter):
        return filter
    if isinstance(filter, pc.Expression):
        check_json_expression(filter, schema)
        _validate(filter, schema, repr(str(filter)))
        return Filter(None, filter)
    if not isinstance(filter, str):
        raise InvalidInputError(f"filter must be a SQL string or a pyarrow Expression, "
                                f"not {type(filter).__name__}")
    if not filter.strip():
        raise InvalidInputError(f"filter {filter!r}: empty predicate")
    ast = parse_sql(filter, "filter")
    check_json_uses(ast, schema, filter, "filter")
    coerced = coerce_regexp_match(ast)
    if coerced is not None:  # regexp_match(...) as a condition, as pylance reads it
        ast, filter = coerced, to_sql(coerced)
    try:
        tree = Translator(filter, schema, tolerant=True).term(ast)
    except InvalidInputError:
        raise  # the depth limit
    except RecursionError:  # a backstop: the depth limit should come first
        raise InvalidInputError(f"filter {short(filter)!r}: nests too deeply") from None
    except (pa.ArrowException, TypeError, ValueError):
        tree = None  # left to the engine, pruning nothing
    expression = None
    if tree is not None and not any(isinstance(n, Opaque) for n in _nodes(tree)):
        try:
            expression = tree.expr()
            _validate(expression, schema, repr(short(filter)))
        except (InvalidInputError, pa.ArrowException, TypeError, ValueError):
            expression = None
    if expression is None:
        # names, functions and types, in the engine's terms (the engine evaluates it).
        # Only here: DataFusion plans a 3000-term AND chain in ~40 s, pyarrow in ms.
        engine.check(schema, filter)
    return Filter(filter, expression, tree, columns_of(ast))


def check_expression(sql: str, schema: pa.Schema, *, what: str = "expression",
                     bare_json: bool = False) -> tuple[pa.DataType, list[str]]:
    """Check a SQL *value* expression over ``schema`` (syntax, depth, names, functions,
    types) for the engine: its result type and the top-level columns it reads. A JSON
    column may be read only by ``IS [NOT] NULL`` (and, with ``bare_json``, as the whole
    expression)."""
    field, used = expression_field(sql, schema, what=what, bare_json=bare_json)
    return field.type, used


def expression_field(sql: str, schema: pa.Schema, *, what: str = "expression",
                     bare_json: bool = False) -> tuple[pa.Field, list[str]]:
    """:func:`check_expression`, giving the result as the engine's field (named
    ``v``): its type and whether it can be null (``a IS NULL`` cannot; ``a > 1`` can
    when ``a`` can), as pylance's projections report it."""
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidInputError(f"{what} must be a non-empty SQL string, not {sql!r}")
    ast = parse_sql(sql, what)
    check_json_uses(ast, schema, sql, what, bare=bare_json)
    field = engine.result_types(schema, {"v": sql}, what=what).field("v")
    used = columns_of(ast)
    return field, [n for n in schema.names if n in used or n.lower() in used]


def compile_expression(sql: str, schema: pa.Schema) -> tuple[pc.Expression, pa.DataType]:
    """A SQL *value* expression (``a * 2``, ``CAST(x AS DOUBLE)``, ``s LIKE 'a%'``) over
    ``schema``: its pyarrow expression and result type (for ``add_columns``)."""
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidInputError(f"expression must be a non-empty SQL string, not {sql!r}")
    ast = parse_sql(sql, "expression")
    try:
        tree = Translator(sql, schema).node(ast)
        expression = tree.expr()
        import pyarrow.dataset as pads  # lazy: it loads pandas; only add_columns needs it

        typ = pads.dataset(schema.empty_table()).to_table(columns={"v": expression}) \
            .schema.field("v").type
    except (pa.ArrowException, TypeError) as err:
        raise InvalidInputError(f"expression {short(sql)!r}: {err}") from None
    except RecursionError:
        raise InvalidInputError(f"expression {short(sql)!r}: nests too deeply") from None
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
            expression = Translator(filter, schema).predicate(parse_sql(filter, "filter")).expr()
        except (pa.ArrowException, TypeError) as err:  # literal arithmetic, odd casts, ...
            raise InvalidInputError(f"filter {short(filter)!r}: {err}") from None
        except RecursionError:  # a backstop: the depth limit should come first
            raise InvalidInputError(f"filter {short(filter)!r}: nests too deeply") from None
        _validate(expression, schema, repr(short(filter)))
        return expression
    compiled = compile_filter(filter, schema)
    if compiled.expression is None:
        raise InvalidInputError(f"filter {short(compiled.text)!r} has no pyarrow.compute "
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
