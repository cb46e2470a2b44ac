"""A scan's filter: compiled once per (text, schema), with the row id and row address
usable in it (``_rowid = 27``, ``_rowaddr > 4294967296 AND a < 5``), as pylance takes
them, and its evaluation over the fragments (:class:`FilterSteps`, the part of
:class:`~lancenb.dataset.read.scanner.LanceScanner` that reads the filter columns, prunes
pages by statistics and finds the matching rows).

The meta columns are not stored: the scanner computes them for the rows it reads
(:meth:`LanceScanner.filter_table`), so a filter over them reads no data file for
them. ``_rowoffset`` is not a filter column (pylance refuses it too).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.dataset.read.nested import ROW_ADDR, ROW_ID
from lancenb.dataset.read.ranges import read_runs, without_deleted
from lancenb.dataset.read.readahead import decoded_ahead
from lancenb.index.scalar.query import TableView, index_offsets

__all__ = ["META_FILTER_COLUMNS", "FilterSteps", "compiled",
           "filter_schema", "stats_can_decide"]

# the columns a filter may name besides the dataset's own
META_FILTER_COLUMNS = (ROW_ID, ROW_ADDR)
_META = META_FILTER_COLUMNS
# an index's candidates of a fragment up to this many rows are read with every
# projected column at once (:meth:`FilterSteps.filtered`)
FEW_CANDIDATES = 256

# compiled SQL filters by (text, schema object): a dataset opened again and again shares
# one schema object (memoised by its manifest's fields), so a filter used on each
# opening is parsed, typed and checked once (the set-up costs more than evaluating it
# over a few small fragments)
_FILTERS: dict = {}
_FILTERS_SIZE = 256
# dataset schemas with the meta columns appended, by the schema object (held: its id
# stays its own), so the filters over them are cached as well
_WITH_META: dict = {}


def filter_schema(filter, schema: pa.Schema) -> pa.Schema:
    """``schema``, with ``_rowid``/``_rowaddr`` (uint64) appended when ``filter``
    names one the dataset does not have."""
    text = filter if isinstance(filter, str) else str(filter)
    if not any(m in text and m not in schema.names for m in META_FILTER_COLUMNS):
        return schema
    hit = _WITH_META.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    extended = schema
    for m in META_FILTER_COLUMNS:
        if m not in schema.names:
            extended = extended.append(pa.field(m, pa.uint64()))
    if len(_WITH_META) >= _FILTERS_SIZE:
        _WITH_META.clear()
    _WITH_META[id(schema)] = (schema, extended)
    return extended


def compiled(filter, schema: pa.Schema):
    """``compile_filter(filter, schema)``, from the cache for SQL text."""
    from lancenb.expr.filters import compile_filter  # lazy: it loads sqlglot

    if not isinstance(filter, str):
        return compile_filter(filter, schema)
    key = (filter, id(schema))
    hit = _FILTERS.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    got = compile_filter(filter, schema)
    if len(_FILTERS) >= _FILTERS_SIZE:
        _FILTERS.clear()
    _FILTERS[key] = (schema, got)  # (the schema held: its id stays its own)
    return got


def stats_can_decide(filt) -> bool:
    """Whether page statistics could ever prove ``filt`` (a compiled filter) false for
    a page: what :func:`lancenb.expr.pruning.may_be_true` can answer False for
    (a literal, a column, a column tested against a literal, ``IN``/``IS NULL``/
    ``LIKE``/``IS TRUE`` of a column, a comparison with NULL), through ``NOT``,
    ``AND`` and ``OR``. False (e.g. ``id % 7 = 0``, or a pyarrow Expression) lets a
    scan skip reading each file's statistics; when unsure, True."""
    from lancenb.expr.nodes import And, Cmp, Col, In, IsBool, IsNull, Like, Lit, Not, Or

    def can(node) -> bool:
        if isinstance(node, Not):
            return can(node.arg)
        if isinstance(node, (And, Or)):
            return can(node.left) or can(node.right)
        if isinstance(node, Cmp):
            left, right = node.left, node.right
            return ((isinstance(right, Lit) and not right.value.is_valid)
                    or (isinstance(left, Col) and isinstance(right, Lit))
                    or (isinstance(left, Lit) and isinstance(right, Col)))
        if isinstance(node, (In, IsNull, Like, IsBool)):
            return isinstance(node.arg, Col)
        return isinstance(node, (Col, Lit))

    tree = getattr(filt, "_tree", None)
    return tree is not None and can(tree)


class FilterSteps:
    """The filter steps of a scan, mixed into ``LanceScanner`` (which provides
    ``_filter``, ``filter_columns``, ``limit``, ``use_stats``, ``_plain``,
    ``_filter_batch_rows`` and ``_dictionary_filter``)."""

    #: False (``scanner(use_scalar_index=False)``): no scalar index answers the filter
    use_scalar_index = True

    def filtered(self, frags, count: bool = False):
        """``(fragment, live offsets, filter columns, matching positions)`` of each
        fragment with rows left after pruning. The filter columns of consecutive small
        fragments are evaluated together, in one call per ``_filter_batch_rows()`` rows
        (without a limit: with one, a fragment at a time, so nothing is read past it).
        ``count``: ``(None, None, None, number of matches)`` per evaluation instead."""
        batch_rows = self._filter_batch_rows() if self.limit is None else 0
        pending: list = []
        rows = 0
        # scalar indices: the live rows of each covered fragment the filter holds for
        # (exact; the filter is still evaluated on them), None: no index answers it
        hits = None if self.include_deleted_rows or self._filter.text is None or \
            not self.use_scalar_index else self._index_hits()
        if self.limit is None and not hits:  # (whole fragments decoded ahead: not
            frags = decoded_ahead(frags, self._plain(self.filter_columns))  # indexed ones)
        exact = getattr(hits, "exact", False)
        for frag in frags:
            if hits is not None and frag.fragment_id in hits:
                # (the index's rows less the deleted ones: it left them out already,
                # this makes sure, without building the fragment's live rows)
                live = without_deleted(hits[frag.fragment_id], frag.deleted_offsets())
                if exact:  # (the index's rows are the filter's: nothing to evaluate)
                    if pending:
                        yield from self._evaluate(pending, count)
                        pending, rows = [], 0
                    self.rows_scanned += len(live)
                    if len(live):
                        yield (None, None, None, len(live)) if count else (
                            frag, live, self.filter_table(frag, live, projected=True),
                            np.arange(len(live)))
                    continue
                if not len(live):  # (no candidate row: nothing to prune or read)
                    continue
            else:
                live = None if self.include_deleted_rows else frag.live_offsets()
            live = self._prune(frag, live)
            n_live = frag.physical_rows if live is None else len(live)
            if n_live == 0:
                continue
            # (an index's candidate zones: runs of rows, read as ranges; None: by position)
            ftable = read_runs(frag, self.filter_columns, live) if hits is not None and \
                frag.fragment_id in hits else None
            if ftable is None:
                # (a few candidates of an index: the other projected columns come in the
                # same take, not in a second one per fragment after the filter)
                few = hits is not None and not count and frag.fragment_id in hits and \
                    len(live) <= FEW_CANDIDATES
                ftable = self.filter_table(frag, live, extra=few)
            if pending and ftable.column_names != pending[0][2].column_names:
                yield from self._evaluate(pending, count)
                pending, rows = [], 0
            self.rows_scanned += ftable.num_rows
            pending.append((frag, live, ftable))
            rows += ftable.num_rows
            if rows >= batch_rows:
                yield from self._evaluate(pending, count)
                pending, rows = [], 0
        if pending:
            yield from self._evaluate(pending, count)

    def _index_hits(self):
        """:func:`~lancenb.index.scalar.query.index_offsets` of this scan's filter, the
        dataset's indices and fragments handed down (None: no scalar index answers)."""
        ds = self._ds
        indices = ds.list_indices()
        if not indices:
            return None
        cache = ds.snapshot.cache  # (the version's fragments, built once per version)
        frags = cache.get("index_view_fragments")
        if frags is None:
            frags = cache["index_view_fragments"] = [f.metadata for f in ds.get_fragments()]
        view = TableView(ds.uri, ds.version, ds.schema, indices, frags, ds.session())
        return index_offsets(view, self._filter.text)

    def filter_table(self, frag, live, projected: bool = False,
                     extra: bool = False) -> pa.Table:
        """The filter columns of ``frag``'s rows ``live`` (all: None); ``_rowid`` and
        ``_rowaddr`` computed, not read. ``projected``: only those the scan returns;
        ``extra``: the other columns it returns too."""
        cols = [c for c in self.filter_columns if c in (self.columns or ())] \
            if projected else self.filter_columns
        if extra:
            cols = cols + [c for c in self.columns if c not in cols]
        if not cols:
            n = frag.physical_rows if live is None else len(live)
            return pa.table({"_": pa.nulls(n)}).select([])
        stored = [c for c in cols if c not in _META]
        table = frag.take_physical(stored, live, blob_handling=self.blob_handling,
                                   dictionaries=self._dictionary_filter())
        if len(stored) == len(cols):
            return table
        offs = np.arange(frag.physical_rows, dtype=np.int64) if live is None else live
        for i, c in enumerate(cols):
            if c in _META:
                v = frag.row_ids()[offs] if (c == ROW_ID and frag.has_stable_row_ids) \
                    else frag.row_addresses(offs)
                table = table.add_column(i, pa.field(c, pa.uint64()),
                                         pa.array(v, pa.uint64()))
        return table

    def _evaluate(self, pending: list, count: bool = False):
        if len(pending) == 1 or not pending[0][2].num_columns:
            # (tables of no columns concatenate to no rows: those go one by one)
            for frag, live, ftable in pending:
                if count:
                    yield None, None, None, self._expr_count(ftable)
                else:
                    yield frag, live, ftable, self.expr_mask(ftable)
            return
        tables = [p[2] for p in pending]
        if any(t.schema != tables[0].schema for t in tables):  # some kept dictionaries
            tables = [self._values(t) for t in tables]
        if count:
            yield None, None, None, self._expr_count(pa.concat_tables(tables))
            return
        pos = self.expr_mask(pa.concat_tables(tables))
        bounds = np.zeros(len(tables) + 1, dtype=np.int64)
        np.cumsum([t.num_rows for t in tables], out=bounds[1:])
        cuts = np.searchsorted(pos, bounds)
        for i, (frag, live, ftable) in enumerate(pending):
            yield frag, live, ftable, pos[cuts[i]:cuts[i + 1]] - bounds[i]

    def _prune(self, frag, live):
        """Drop the statistics pages whose bounds prove the filter false."""
        # (statistics are read only for a filter they could ever rule a page out for)
        decides = self.__dict__.get("_stats_decide")
        if decides is None:
            decides = self._stats_decide = stats_can_decide(self._filter)
        sp = frag.page_stats() if self.use_stats and decides else None
        if sp is None:
            return live
        rpp, by_name = sp
        npages = len(next(iter(by_name.values())))
        ok = np.array([self._filter.may_match({n: st[k] for n, st in by_name.items()})
                       for k in range(npages)], dtype=bool)
        if ok.all():
            return live
        self.pages_skipped += int((~ok).sum())
        keep_row = np.repeat(ok, rpp)[: frag.physical_rows]
        if live is None:
            return np.flatnonzero(keep_row)
        return live[keep_row[live]]

    def expr_mask(self, table: pa.Table) -> np.ndarray:
        """Positions of the rows where the filter is true (null counts as false): SQL
        through the engine (:mod:`lancenb.expr.engine`), Expressions through pyarrow;
        a column read as dictionaries (:meth:`_dictionary_filter`) by its values."""
        if table.num_columns == 1 and self._kept(table.schema.field(0)):
            got = self._filter.positions_by_dictionary(table.column_names[0], table.column(0))
            if got is not None:
                return got
            table = self._values(table)
        return self._filter.positions(table)

    def _expr_count(self, table: pa.Table) -> int:
        """``len(self.expr_mask(table))``, counted without the positions where the
        filter allows."""
        if table.num_columns == 1 and self._kept(table.schema.field(0)):
            return len(self.expr_mask(table))
        return self._filter.count(table)

    def _kept(self, field: pa.Field) -> bool:
        """A filter column read as dictionaries whose stored type is not one."""
        return pa.types.is_dictionary(field.type) and not pa.types.is_dictionary(
            self._ds.snapshot.schema.field(field.name).type)

    def _values(self, table: pa.Table) -> pa.Table:
        """``table`` with its kept-dictionary columns decoded to their values."""
        for i, f in enumerate(table.schema):
            if self._kept(f):
                table = table.set_column(i, f.with_type(f.type.value_type),
                                         table.column(i).cast(f.type.value_type))
        return table

