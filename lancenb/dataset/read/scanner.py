"""Scans: projection, filter, limit/offset, row ids, in batches.

A scan walks the dataset's fragments in order. For each it reads the projected
columns plus any the filter needs, drops deleted rows, evaluates the filter with
``pyarrow.compute``, and yields batches of at most ``batch_size`` rows. Without a
filter, ``offset``/``limit`` skip whole fragments by their row counts (no data
read) and read only the rows inside the window.

Memory: a fragment's projected columns at a time (fragments hold at most
``max_rows_per_file`` rows, 1 Mi by default), and without a filter the next fragment's,
read on another core while this one is consumed (``SCAN_FRAGMENTS``; the fragments
ahead hold at most ``readahead.READ_SEVERAL_BYTES`` of data files).

The filter steps (reading filter columns, pruning pages, finding matches; ``_rowid`` /
``_rowaddr`` in filters) are :class:`lancenb.dataset.read.scanfilter.FilterSteps`; the plan
text is :mod:`lancenb.dataset.read.scanplan`. System columns (``_rowid``, ``_rowaddr``,
``_rowoffset``) named in ``columns`` come where they are named.
"""

from __future__ import annotations

import os
import uuid
from typing import Iterator, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.dataset.descriptions import ScanStatistics
from lancenb.dataset.read import blob, scanplan
from lancenb.dataset.read.columnless import concat_tables, with_metadata
from lancenb.dataset.read.nested import ROW_ADDR, ROW_ID, ROW_OFFSET, quoted, struct_path
from lancenb.dataset.read.readahead import decoded_ahead, read_ahead, read_several
from lancenb.dataset.read.scanfilter import FilterSteps, compiled, filter_schema
from lancenb.errors import InvalidInputError
from lancenb.expr import engine as engine
from lancenb.expr import floatorder
from lancenb.file.extensions import (
    public_columns,
    public_schema,
    with_extension_types,
)
from lancenb.index.scalar.common import parts_loaded

__all__ = ["LanceScanner", "DEFAULT_BATCH_SIZE", "TaggedRecordBatch"]


class TaggedRecordBatch(NamedTuple):
    """A batch and the fragment it was read from (``pyarrow.dataset``'s shape)."""

    record_batch: pa.RecordBatch
    fragment: object

DEFAULT_BATCH_SIZE = 8192
# filters are evaluated over the filter columns of this many rows at a time (fragments
# together: one engine call per batch, not one per small fragment)
FILTER_BATCH_ROWS = 64 * 1024
# the environment variable that changes the default batch size (pylance's)
BATCH_SIZE_ENV = "LANCE_DEFAULT_BATCH_SIZE"
# fragments a scan without a filter reads at once, on as many cores (see read_several)
SCAN_FRAGMENTS = 2
# columns a projection may name that are not stored: computed per row read
_SYSTEM = (ROW_ID, ROW_ADDR, ROW_OFFSET)
_META = (ROW_ID, ROW_ADDR)  # the ones a filter may name
# a SQL filter over one string or binary column reads its dictionary pages as
# dictionaries and is evaluated per distinct value (LanceScanner._dictionary_filter);
# False: every row's value is built and compared
_DICTIONARY_FILTERS = True
_POS = "__lancenb_position"
# pyarrow 25 takes each sort key's null placement in the key (and deprecates the global
# null_placement option); older versions only the global option
_NULLS_PER_KEY = int(pa.__version__.split(".")[0]) >= 25


class LanceScanner(FilterSteps):
    """A configured scan of one dataset version (pylance's ``LanceScanner`` subset).

    Made by :meth:`LanceDataset.scanner` (see it for the options); nothing is read until
    :meth:`to_table`, :meth:`to_batches`, :meth:`to_reader` or :meth:`count_rows`. Pickles
    as its dataset (URI, version, storage options) and options, so workers can run it.

    Examples
    --------
    >>> sc = ds.scanner(columns=["id"], filter="id % 2 = 0", batch_size=1024)  # doctest: +SKIP
    >>> sc.count_rows(), sc.to_table().num_rows  # doctest: +SKIP
    (50, 50)
    >>> sum(b.num_rows for b in sc.to_batches())  # doctest: +SKIP
    50
    """

    #: the dataset class :meth:`from_batches` writes (``LanceDataset`` sets itself here:
    #: this module cannot import ``lance_dataset.py``, which imports it)
    dataset_class = None

    def __init__(self, dataset, *, columns=None, filter=None, limit=None, offset=None,
                 batch_size=None, with_row_id=False, with_row_address=False, fragments=None,
                 batch_readahead=None, fragment_readahead=None, scan_in_order=None,
                 blob_handling=None, use_stats=None, order_by=None, strict_batch_size=None,
                 include_deleted_rows=None):
        self._ds = dataset
        # pylance's options that change results; the ones that only tune its engine
        # (prefilter, late_materialization, ...) are taken by LanceDataset.scanner
        self.use_stats = use_stats is None or bool(use_stats)
        self.order_by = _orderings(order_by, dataset.snapshot.schema)
        self.strict_batch_size = bool(strict_batch_size)
        self.include_deleted_rows = bool(include_deleted_rows)
        if self.include_deleted_rows and not (with_row_id or (
                columns is not None and not isinstance(columns, dict) and ROW_ID in columns)):
            raise InvalidInputError("include_deleted_rows=True but with_row_id is false: "
                                    "deleted rows come back with a null _rowid")
        # blob columns: descriptions (pylance's default) or, "all_binary", the values
        self.blob_handling = blob.check_handling(blob_handling)
        schema = dataset.snapshot.schema
        if columns is None:
            columns = list(schema.names)
        elif isinstance(columns, dict):
            columns = self._set_projection(dataset, columns)
        else:
            columns = list(columns)
            bad = [c for c in columns if c not in _SYSTEM
                   and not (isinstance(c, str) and schema.get_all_field_indices(c))]
            paths = {c: struct_path(schema, c) for c in bad}
            if bad and all(paths.values()):
                # fields inside structs ("s.a"), as pylance takes them: a column each,
                # named by its path, read through the projection of their struct
                proj = {c: ".".join(quoted(p) for p in (paths.get(c) or [c]))
                        for c in columns if c not in _SYSTEM}
                with_row_id = with_row_id or ROW_ID in columns
                with_row_address = with_row_address or ROW_ADDR in columns
                asked = columns
                columns = self._set_projection(dataset, proj) + [
                    c for c in _SYSTEM if c in asked]
                self.output_order = asked
            elif bad:
                raise InvalidInputError(f"no column(s) {bad} in the dataset; it has "
                                        f"{schema.names}")
        if ROW_ID in columns:
            with_row_id = True
        if ROW_ADDR in columns:
            with_row_address = True
        # system columns named in the projection come where they are named (pylance);
        # with_row_id/with_row_address alone append them at the end
        if "output_order" not in self.__dict__:
            self.output_order = list(columns)
        if not any(c in _SYSTEM for c in self.output_order):
            self.output_order = None
        else:  # with_row_id / with_row_address without naming them: at the end
            self.output_order += [
                c for c, on in ((ROW_ID, with_row_id), (ROW_ADDR, with_row_address))
                if on and c not in self.output_order]
        self.with_row_offset = ROW_OFFSET in columns
        self.columns = [c for c in columns if c not in _SYSTEM]
        self.with_row_id = bool(with_row_id)
        self.with_row_address = bool(with_row_address)
        # pylance's messages (its test suite matches them); limit is checked first
        if limit is not None and (int(limit) < 0):
            raise InvalidInputError(f"Limit must be non-negative, not {limit}")
        if offset is not None and int(offset) < 0:
            raise InvalidInputError(f"Offset must be non-negative, not {offset}")
        self.limit = None if limit is None else int(limit)
        self.offset = int(offset or 0)
        self.batch_size = int(batch_size or os.environ.get(BATCH_SIZE_ENV) or
                              DEFAULT_BATCH_SIZE)
        if self.batch_size <= 0:
            raise InvalidInputError("batch_size must be positive")
        # batches read ahead on a background thread by to_batches/to_reader (0: none)
        self.batch_readahead = int(batch_readahead or 0)
        if self.batch_readahead < 0:
            raise InvalidInputError(f"batch_readahead must be >= 0, not {batch_readahead}")
        # fragments read at once by a scan without a filter (None: SCAN_FRAGMENTS)
        self.fragment_readahead = None if fragment_readahead is None \
            else int(fragment_readahead)
        if not hasattr(self, "projection"):
            self.projection = None
        self._fragments = fragments
        self._filter_arg = filter  # as given (a string or an Expression): what pickles
        self.filter_text = None
        self._expr = None
        self._filter = None
        self.filter_columns: list[str] = []
        self.pages_skipped = 0  # statistics pages pruned by the last scan
        self.rows_scanned = 0  # rows whose (filter) columns the scans read
        if filter is not None:
            # lazy: filters loads sqlglot, needed only when a scan has a filter
            from lancenb.expr.filters import referenced_columns

            fschema = filter_schema(filter, schema)  # (_rowid, _rowaddr usable)
            self._filter = compiled(filter, fschema)
            self._expr = self._filter.expression
            self.filter_text = filter if isinstance(filter, str) else str(filter)
            self.filter_columns = referenced_columns(self._filter, fschema.names)

    def _set_projection(self, dataset, columns: dict) -> list:
        """``columns={alias: SQL expression}``: checked now (names, functions, types);
        the columns they read are scanned, the engine evaluates them per batch."""
        # lazy: they load sqlglot
        from lancenb.expr.filters import expression_field
        from lancenb.expr.parse import bare_json_field

        if not columns:
            raise InvalidInputError("columns={} names no output column")
        read, fields = [], []
        for alias, sql in columns.items():
            if not isinstance(alias, str):
                raise InvalidInputError(f"columns: output names are strings, not {alias!r}")
            if sql in (ROW_ID, ROW_ADDR):
                raise InvalidInputError(f"columns: {sql} cannot be computed with; use "
                                        f"with_row_id / with_row_address")
            got, used = expression_field(sql, dataset.snapshot.schema, what=f"column {alias!r}",
                                         bare_json=True)
            # a JSON column as the whole expression: read back as text, as pylance does
            jf = bare_json_field(sql, dataset.snapshot.schema) if used else None
            # (nullability as the engine reports it: `a IS NULL` is never null)
            fields.append(jf.with_name(alias) if jf is not None else
                          pa.field(alias, got.type, got.nullable))
            read += [c for c in used if c not in read]
        self.projection = dict(columns)
        self._projection_schema = pa.schema(fields)
        return read

    # -- schema ----------------------------------------------------------------
    def _read_schema(self) -> pa.Schema:
        s = self._ds.snapshot.schema
        return pa.schema([blob.output_field(s.field(c), self.blob_handling)
                          for c in self.columns])

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the scan's output (projection, row id and address columns)."""
        stored = self.stored_schema()
        return public_schema(stored, self._public_cols(stored))

    def _public_cols(self, stored: pa.Schema) -> list[int]:
        """The output columns read back as extension types."""
        cols = self.__dict__.get("_public_col_list")
        if cols is None:
            # (the dataset's public schema is its stored one unless some column reads
            # back as an extension type: then the output's columns are looked at)
            plain = self._ds.schema is self._ds.snapshot.schema
            cols = self._public_col_list = [] if plain else public_columns(stored)
        return cols

    def to_public(self, data):
        """A table or batch of the stored output schema as the scan returns it."""
        cols = self._public_cols(data.schema)
        if not cols:
            return data
        return with_extension_types(data, cols, where=f"dataset {self._ds.uri!r}")

    def stored_schema(self) -> pa.Schema:
        """:attr:`projected_schema` with extension columns as their tagged storage."""
        s = self._ds.snapshot.schema
        if self.projection is not None:
            fields = list(self._projection_schema)
        else:
            fields = [blob.output_field(s.field(c), self.blob_handling) for c in self.columns]
        if self.with_row_id:
            fields.append(pa.field(ROW_ID, pa.uint64()))
        if self.with_row_address:
            fields.append(pa.field(ROW_ADDR, pa.uint64()))
        if self.with_row_offset:
            fields.append(pa.field(ROW_OFFSET, pa.uint64()))
        if self.output_order is not None:
            by_name = {f.name: f for f in fields}
            fields = [by_name[c] for c in self.output_order]
        return pa.schema(fields, metadata=s.metadata)

    # -- execution -------------------------------------------------------------
    @property
    def dataset(self):
        """The dataset (one version) this scan reads."""
        return self._ds

    def fragment_list(self) -> list:
        """The fragments this scan reads (``fragments=``, or all of the dataset's)."""
        return self._fragments if self._fragments is not None else self._ds.get_fragments()

    scan_stats_callback = None  # set by LanceDataset.scanner(scan_stats_callback=...)

    def _tables_with_stats(self) -> Iterator[pa.Table]:
        """:meth:`tables`, then ``scan_stats_callback(ScanStatistics)`` with the
        requests this scan made through the dataset's store and the rows it read."""
        callback, self.scan_stats_callback = self.scan_stats_callback, None
        io = self._ds.snapshot.store.io_stats
        reads, nbytes = io.reads, io.bytes_read
        parts = parts_loaded()
        rows = 0
        try:
            for t in self.tables():
                rows += t.num_rows
                yield t
        finally:
            self.scan_stats_callback = callback
        frags = sum(1 for f in self.fragment_list() if f.count_rows())
        callback(ScanStatistics(iops=io.reads - reads, requests=io.reads - reads,
                                bytes_read=io.bytes_read - nbytes,
                                parts_loaded=parts_loaded() - parts,
                                all_counts={"rows_scanned": rows, "fragments_scanned": frags,
                                            "ranges_scanned": frags}))

    def tables(self) -> Iterator[pa.Table]:
        """Result tables, one (or more) per fragment, limit/offset applied (after the
        sort when ``order_by`` is set: that scan is materialised whole)."""
        if self.scan_stats_callback is not None:
            yield from self._tables_with_stats()
            return
        if not self.order_by:
            yield from self._scan_tables()
            return
        limit, offset = self.limit, self.offset
        self.limit, self.offset = None, 0
        try:
            tables = [with_metadata(t, None) for t in self._scan_tables()]
        finally:
            self.limit, self.offset = limit, offset
        table = (concat_tables(tables) if tables else
                 self.stored_schema().remove_metadata().empty_table())
        table = _sort(table, self.order_by)
        stop = None if limit is None else offset + limit
        yield table.slice(offset, None if stop is None else stop - offset)

    def _scan_tables(self) -> Iterator[pa.Table]:
        read_cols = list(self.columns)
        frags = self.fragment_list()
        if self._filter is None:
            if self.limit is None and not self.offset:  # every fragment is read whole
                frags = decoded_ahead(frags, self._plain(read_cols))

            def read(job):
                frag, offsets = job
                return frag, offsets, frag.take_physical(read_cols, offsets,
                                                         blob_handling=self.blob_handling)

            for frag, offsets, table in read_several(read, self._windows(frags),
                                                     self._fragments_at_once(), _file_bytes):
                self.rows_scanned += table.num_rows
                yield self.ordered(self.with_ids(frag, self.project(table), offsets))
            return
        skip = self.offset
        remaining = self.limit
        for frag, live, ftable, keep in self.filtered(frags):
            if remaining is not None and remaining <= 0:
                return
            n_live = frag.physical_rows if live is None else len(live)
            # late materialisation: the filter was evaluated on its own columns
            # (_filtered); the other projected columns are read at the matching rows
            if skip:
                drop = min(skip, len(keep))
                keep = keep[drop:]
                skip -= drop
            if remaining is not None:
                keep = keep[:remaining]
                remaining -= len(keep)
            if not len(keep):
                continue
            phys = live[keep] if live is not None else keep
            have = set(ftable.column_names)  # (the filter's, or every one: filtered())
            rest = [c for c in self.columns if c not in have]
            ftable = ftable.drop_columns([c for c in _META if c in ftable.column_names])
            if not self.columns:  # count_rows: no column kept, only the row count
                ftable = ftable.select([]).slice(0, len(keep))
            elif len(keep) < ftable.num_rows:
                ftable = ftable.take(pa.array(keep))
            ftable = self._values(ftable)  # (dictionaries: only the rows kept decoded)
            if rest:
                dense = len(keep) * 2 > n_live  # most rows match: one sequential read
                other = frag.take_physical(rest, live if dense else phys,
                                           blob_handling=self.blob_handling)
                if dense and len(keep) < other.num_rows:
                    other = other.take(pa.array(keep))
                table = pa.Table.from_arrays(
                    [(ftable if c in have else other).column(c)
                     for c in self.columns],
                    schema=self._read_schema())
            else:
                table = ftable.select(self.columns)
            yield self.ordered(self.with_ids(frag, self.project(table), phys))

    def _windows(self, frags) -> Iterator[tuple]:
        """``(fragment, physical offsets or None)`` of each fragment a scan without a
        filter reads (offset/limit skip whole fragments by their row counts)."""
        skip = self.offset
        remaining = self.limit
        for frag in frags:
            if remaining is not None and remaining <= 0:
                return
            live = None if self.include_deleted_rows else frag.live_offsets()
            n_live = frag.physical_rows if live is None else len(live)
            if skip >= n_live:
                skip -= n_live
                continue
            lo = skip
            hi = n_live if remaining is None else min(n_live, lo + remaining)
            skip = 0
            if lo == 0 and hi == n_live:
                offsets = live
            else:
                offsets = (live[lo:hi] if live is not None
                           else np.arange(lo, hi, dtype=np.int64))
            if remaining is not None:
                remaining -= hi - lo
            yield frag, offsets

    def _fragments_at_once(self) -> int:
        """Fragments a scan without a filter reads at once: ``fragment_readahead``
        when given, else ``SCAN_FRAGMENTS`` (at most one per core) when a column needs
        decoding, one when every column is fixed-width (numbers, vectors: a read
        straight into the output, bound by memory, which two at once only slowed)."""
        if self.fragment_readahead is not None:
            return max(1, self.fragment_readahead)
        s = self._ds.snapshot.schema
        if all(_fixed_width(s.field(c).type) for c in self.columns):
            return 1
        return min(SCAN_FRAGMENTS, os.cpu_count() or 1)

    def _filter_batch_rows(self) -> int:
        return FILTER_BATCH_ROWS  # (read when used: tests change it)

    def _plain(self, columns: list[str]) -> list[str]:
        """The columns that are not blob columns (those read through their own path)."""
        schema = self._ds.snapshot.schema
        return [c for c in columns if c not in _META and not blob.has_blobs(schema.field(c))]

    def _dictionary_filter(self) -> bool:
        """Whether the filter columns are read with their dictionary pages kept as
        dictionaries (:meth:`LanceFragment.take_physical`): a compiled SQL predicate
        over one string or binary column, evaluated on each page's distinct values
        (:meth:`Filter.positions_by_dictionary`) instead of every row's; only the rows
        it keeps are decoded."""
        got = self.__dict__.get("_dict_filter")
        if got is None:
            f = self._filter
            got = (f is not None and len(self.filter_columns) == 1 and f.text is not None
                   and self.filter_columns[0] not in _META
                   and f.expression is not None and _DICTIONARY_FILTERS)
            if got:
                t = self._ds.snapshot.schema.field(self.filter_columns[0]).type
                got = (pa.types.is_string(t) or pa.types.is_large_string(t)
                       or pa.types.is_binary(t) or pa.types.is_large_binary(t))
            self._dict_filter = got
        return got

    def project(self, table: pa.Table) -> pa.Table:
        """``table`` (of :attr:`columns`) with ``columns={alias: SQL}`` evaluated: the
        output columns (the table itself without such a projection)."""
        if self.projection is None:
            return table
        return engine.evaluate(table, self.projection, what="columns") \
            .cast(self._projection_schema)

    def project_with_ids(self, table: pa.Table) -> pa.Table:
        """:meth:`project` of a table of :attr:`columns` followed by the row id and
        address columns (a take's rows, gathered from all fragments: one engine call)."""
        if self.projection is None:
            return table
        n = len(self.columns)
        out = self.project(table.select(list(range(n))))
        for i in range(n, table.num_columns):
            out = out.append_column(table.schema.field(i), table.column(i))
        return out

    def with_ids(self, frag, table: pa.Table, phys) -> pa.Table:
        """``table`` (rows ``phys`` of ``frag``, all: None) with the row id, row
        address and row offset columns asked for appended."""
        if not (self.with_row_id or self.with_row_address or self.with_row_offset):
            return table
        offsets = (np.arange(frag.physical_rows, dtype=np.int64) if phys is None
                   else np.asarray(phys, dtype=np.int64))
        if self.with_row_id:
            ids = frag.row_ids()[offsets] if frag.has_stable_row_ids else \
                frag.row_addresses(offsets)
            mask = None
            if self.include_deleted_rows:  # deleted rows: a null row id, as pylance
                mask = np.isin(offsets, frag.deleted_offsets())
            table = table.append_column(pa.field(ROW_ID, pa.uint64()),
                                        pa.array(ids, pa.uint64(), mask=mask))
        if self.with_row_address:
            table = table.append_column(pa.field(ROW_ADDR, pa.uint64()),
                                        pa.array(frag.row_addresses(offsets), pa.uint64()))
        if self.with_row_offset:
            table = table.append_column(pa.field(ROW_OFFSET, pa.uint64()),
                                        pa.array(self._row_offsets(frag, offsets), pa.uint64()))
        return table

    def _row_offsets(self, frag, offsets: np.ndarray) -> np.ndarray:
        """``_rowoffset`` of rows ``offsets`` of ``frag``: their positions among the
        live rows of the dataset's version (pylance's), deleted rows counted out."""
        starts = self.__dict__.get("_frag_starts")
        if starts is None:
            starts, n = {}, 0
            for f in self._ds.get_fragments():
                starts[f.fragment_id] = n
                n += f.count_rows()
            self._frag_starts = starts
        live = frag.live_offsets()
        local = offsets if live is None else np.searchsorted(live, offsets)
        return starts.get(frag.fragment_id, 0) + local

    def ordered(self, table: pa.Table) -> pa.Table:
        """``table`` (data columns, then the system columns asked for) with its columns
        in the order the projection named them."""
        if self.output_order is None:
            return table
        pos = {n: i for i, n in enumerate(table.column_names)}
        return table.select([pos[c] for c in self.output_order])

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The scan's rows as record batches of at most ``batch_size`` rows (exactly
        that many, but the last, with ``strict_batch_size``), read ``batch_readahead``
        batches ahead on a background thread when that is set.

        Examples
        --------
        >>> for batch in ds.scanner(columns=["a"], batch_readahead=4).to_batches():
        ...     consume(batch)  # doctest: +SKIP
        """
        if self.batch_readahead:
            return read_ahead(self._batches(), self.batch_readahead)
        return self._batches()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        schema = self.stored_schema()
        if self.strict_batch_size:
            for b in self._strict_batches(schema):
                yield self.to_public(b)
            return
        size = self.batch_size
        for t in self.tables():
            t = with_metadata(t, schema.metadata)
            if t.num_columns and any(c.num_chunks > 1 for c in t.columns):
                # even batches of a fragment's rows, whatever its pages' chunks (pylance
                # gives batch_size rows a batch, the fragment's last the rest)
                for start in range(0, t.num_rows, size):
                    part = t.slice(start, size)
                    got = part.to_batches()  # (inside one chunk: no copy)
                    yield self.to_public(got[0] if len(got) == 1 else
                                       part.combine_chunks().to_batches()[0])
                continue
            for b in t.to_batches(max_chunksize=size):
                if b.num_rows:
                    yield self.to_public(b)

    def _strict_batches(self, schema) -> Iterator[pa.RecordBatch]:
        """Batches of exactly ``batch_size`` rows (the last one may be shorter), across
        fragment boundaries: the rows of at most one batch are held back."""
        pending: list[pa.Table] = []
        held = 0
        for t in self.tables():
            pending.append(with_metadata(t, schema.metadata))
            held += t.num_rows
            while held >= self.batch_size:
                whole = concat_tables(pending)
                yield whole.slice(0, self.batch_size).combine_chunks().to_batches()[0]
                rest = whole.slice(self.batch_size)
                pending, held = [rest], rest.num_rows
        if held:
            yield concat_tables(pending).combine_chunks().to_batches()[0]

    def explain_plan(self, verbose: bool = False) -> str:
        """The scan's plan as text, in the operator names and fields of pylance's
        (``ProjectionExec``, ``LanceRead: ..., projection=[...], full_filter=...``);
        lancenb has no planner: see :mod:`lancenb.dataset.read.scanplan`.

        Examples
        --------
        >>> print(ds.scanner(columns=["a"]).explain_plan())  # doctest: +SKIP
        LanceRead: uri=..., projection=[a], num_fragments=1, range_before=None, ...
        """
        return scanplan.explain(self, verbose)

    def analyze_plan(self) -> str:
        """Run the scan and return its plan with each operator's metrics
        (``output_rows``; for the read ``rows_scanned``, ``bytes_read``, ``iops``,
        ``requests``, ...)."""
        return scanplan.analyze(self)

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the dataset scanned (before projection)."""
        return self._ds.schema

    def to_pandas(self, **kwargs):
        """The scan's rows as a pandas DataFrame (``pyarrow.Table.to_pandas`` options)."""
        return self.to_table().to_pandas(**kwargs)

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows of the scan."""
        out, n = [], 0
        for b in self.to_batches():
            out.append(b.slice(0, num_rows - n))
            n += out[-1].num_rows
            if n >= num_rows:
                break
        if not out:
            return self.projected_schema.empty_table()
        return pa.Table.from_batches(out, schema=self.projected_schema)

    def to_reader(self) -> pa.RecordBatchReader:
        """The scan as a ``pyarrow.RecordBatchReader`` (streamed)."""
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        """The scan's rows as one table (a chunk per fragment).

        Examples
        --------
        >>> ds.scanner(filter="id < 3").to_table().num_rows  # doctest: +SKIP
        3
        """
        schema = self.stored_schema()  # (once: it is rebuilt on every access)
        tables = [with_metadata(t, schema.metadata) for t in self.tables()]
        if not tables:
            return self.to_public(schema.empty_table())
        if len(tables) == 1:
            return self.to_public(tables[0])
        # one chunk per fragment (as pylance returns batches): joining them into one
        # would copy every column once more and double the peak memory of a scan
        return self.to_public(concat_tables(tables))

    def count_rows(self) -> int:
        """Rows the scan returns (without a filter, counted from metadata: no data read).
        With ``limit`` or ``offset`` it raises, as pylance (its count is an aggregate:
        limit the result instead)."""
        if self.limit is not None or self.offset:
            raise InvalidInputError("Cannot use limit/offset with aggregate. Apply limit to "
                                    "the result instead.")
        if self._filter is None:
            return sum(f.count_rows() for f in self.fragment_list())
        if self.scan_stats_callback is None:
            # only the number of matches: no positions, no rows (order, projections and
            # row ids do not change it)
            return sum(n for *_, n in self.filtered(self.fragment_list(), count=True))
        return sum(t.num_rows for t in self.tables())

    def __arrow_c_stream__(self, requested_schema=None):
        return self.to_reader().__arrow_c_stream__(requested_schema)

    # -- pyarrow.dataset.Scanner's other entry points ----------------------------------
    def take(self, indices) -> pa.Table:
        """Rows at ``indices`` (positions in this scan's result), in that order."""
        return self.to_table().take(pa.array(indices, pa.int64()))

    def scan_batches(self) -> Iterator[TaggedRecordBatch]:
        """The scan's batches with the fragment each came from
        (``TaggedRecordBatch(record_batch, fragment)``); limit, offset and order_by
        span fragments, so they are refused here."""
        if self.limit is not None or self.offset or self.order_by:
            raise InvalidInputError("scan_batches: limit, offset and order_by are not "
                                    "per-fragment; use to_batches()")
        opts = self.__reduce__()[1][1]
        for frag in self.fragment_list():
            sc = self._ds.scanner(**{**opts, "fragments": [frag]})
            for b in sc.to_batches():
                yield TaggedRecordBatch(b, frag)

    @staticmethod
    def from_dataset(dataset, **kwargs) -> "LanceScanner":
        """``dataset.scanner(**kwargs)``."""
        return dataset.scanner(**kwargs)

    @staticmethod
    def from_fragment(fragment, **kwargs) -> "LanceScanner":
        """``fragment.scanner(**kwargs)``: a scan of that fragment only."""
        return fragment.scanner(**kwargs)

    @staticmethod
    def from_batches(source, *, schema=None, **kwargs) -> "LanceScanner":
        """A scan (``columns``, ``filter``, ``limit``, ...) over in-memory data: the
        batches become a dataset in ``memory://`` first (kept for the process's
        lifetime, like any ``memory://`` dataset)."""
        # a fresh name only this call writes: one writer, no conditional put needed
        name = f"memory://lancenb-scan-{uuid.uuid4().hex}"
        ds = LanceScanner.dataset_class._write_dataset(
            source, name, schema, storage_options={"single_process_commits": True})
        return ds.scanner(**kwargs)

    def __reduce__(self):
        # the dataset (uri, version, storage options) and the scan options, nothing
        # process-local (open files, caches) travels; fragments go by id
        cols = dict(self.projection) if self.projection is not None else list(self.columns)
        if self.output_order is not None:
            cols = list(self.output_order)
        opts = {"columns": cols, "filter": self._filter_arg,
                "limit": self.limit, "offset": self.offset or None,
                "batch_size": self.batch_size, "with_row_id": self.with_row_id,
                "with_row_address": self.with_row_address}
        if not self.use_stats:
            opts["use_stats"] = False
        if not self.use_scalar_index:
            opts["use_scalar_index"] = False
        if self.order_by:
            opts["order_by"] = [(c, a, nf) for c, a, nf in self.order_by]
        if self.strict_batch_size:
            opts["strict_batch_size"] = True
        if self.include_deleted_rows:
            opts["include_deleted_rows"] = True
        if self.batch_readahead:
            opts["batch_readahead"] = self.batch_readahead
        if getattr(self, "blob_handling", None) is not None:
            opts["blob_handling"] = self.blob_handling
        ids = None if self._fragments is None else [f.fragment_id for f in self._fragments]
        return _rebuild_scanner, (self._ds, opts, ids)


def _fixed_width(t: pa.DataType) -> bool:
    """Numbers, booleans and (nested) fixed-size lists of them."""
    while pa.types.is_fixed_size_list(t):
        t = t.value_type
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) \
        or pa.types.is_temporal(t) or pa.types.is_decimal(t)


def _file_bytes(job) -> int:
    """The bytes of a scan job's fragment's data files (0 when the manifest has no
    sizes): what read_several bounds the fragments it holds ahead by."""
    return sum(df.file_size_bytes or 0 for df in job[0].protobuf.files)


def _orderings(order_by, schema: pa.Schema) -> list:
    """``order_by`` as ``[(column, ascending, nulls_first)]``: names, pylance
    ``ColumnOrdering`` objects (anything with ``column_name``/``ascending``/
    ``nulls_first``) or such tuples. Defaults as pylance: ascending, nulls last."""
    if not order_by:
        return []
    if isinstance(order_by, str) or hasattr(order_by, "column_name"):
        order_by = [order_by]
    out = []
    for o in order_by:
        if isinstance(o, str):
            col, asc, nf = o, True, False
        elif isinstance(o, tuple):
            col, asc, nf = (tuple(o) + (True, False))[:3]
        elif hasattr(o, "column_name"):
            col, asc, nf = o.column_name, getattr(o, "ascending", True), \
                getattr(o, "nulls_first", False)
        else:
            raise InvalidInputError(f"order_by: expected column names or ColumnOrdering, not "
                                    f"{o!r}")
        if col not in schema.names and col not in (ROW_ID, ROW_ADDR):
            raise InvalidInputError(f"order_by: no column {col!r} in the dataset; it has "
                                    f"{schema.names}")
        out.append((col, bool(asc), bool(nf)))
    return out


def _sort(table: pa.Table, orderings: list) -> pa.Table:
    """``table`` stably sorted by ``orderings`` (floats in pylance's total order,
    :mod:`lancenb.expr.floatorder`); each key may place its nulls first
    or last (Arrow's sort takes one null placement for all keys, so sort by the last
    key first, one key at a time: stable sorts compose)."""
    idx = pa.array(np.arange(table.num_rows, dtype=np.int64))
    for col, asc, nf in reversed(orderings):
        if col not in table.column_names:
            raise InvalidInputError(f"order_by: column {col!r} must be in the projection")
        keys = table.column(col).take(idx)
        if pa.types.is_floating(keys.type):  # pylance's total order: -NaN first, NaN last
            keys = floatorder.key_array(keys)
        direction, nulls = "ascending" if asc else "descending", "at_start" if nf else "at_end"
        if _NULLS_PER_KEY:
            order = pc.sort_indices(pa.table({"k": keys}), sort_keys=[("k", direction, nulls)])
        else:
            order = pc.sort_indices(pa.table({"k": keys}), sort_keys=[("k", direction)],
                                    null_placement=nulls)
        idx = idx.take(order)
    return table.take(idx)


def _rebuild_scanner(ds, opts: dict, fragment_ids):
    if fragment_ids is not None:
        opts = dict(opts, fragments=[ds.get_fragment(i) for i in fragment_ids])
    return ds.scanner(**opts)
