"""BTREE scalar index in pylance's on-disk format.

Layout (``_indices/<uuid>/``, Lance files in format 2.2):

``page_data.lance``
    Every indexed row, sorted by value: columns ``values`` (the column's type,
    nullable) and ``ids`` (``uint64``, not null: row addresses ``fragment << 32 |
    offset``, or stable row ids when the dataset has them). Nulls sort first, then the
    values in ascending order (floats in total order: NaN last). The rows are cut
    into pages of ``batch_size`` rows: page ``p`` is rows ``[p * batch_size, (p + 1)
    * batch_size)``.
``page_lookup.lance``
    One row per page: ``min`` and ``max`` (the page's first and last value, so
    ``min`` is null when the page holds nulls and both are null for a page of
    nulls only), ``null_count`` (``uint32``) and ``page_idx`` (``uint32``). Schema
    metadata ``batch_size`` (``"4096"``) and ``range_partitioned`` (``"false"``;
    lancenb reads only such indices).

Example: values ``[3, null, 1]`` at addresses ``0, 1, 2`` give page data
``values=[null, 1, 3], ids=[1, 2, 0]`` and one lookup row ``min=null, max=3,
null_count=1, page_idx=0``. The manifest's index details are an empty
``lance.table.BTreeIndexDetails``.

A query reads the lookup, picks the pages whose ``[min, max]`` may hold a matching
value (pages with nulls for ``IS NULL``), reads just those pages and evaluates the
predicate on their values, so the answer is exact.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from lancenb.errors import CorruptFileError
from lancenb.expr.nodes import FLIP, Cmp, Col, In, IsNull, Like, Lit
from lancenb.index.scalar import rowmap
from lancenb.index.scalar.common import (
    Answer,
    IndexFiles,
    Unanswerable,
    ids_at,
    leaf_mask,
    note_parts,
)
from lancenb.index.scalar.sorting import RUN_ROWS, sorted_pairs
from lancenb.io.pools import fork_safe_locks

__all__ = ["BTreeIndex", "write_btree", "read_rows", "PAGES_FILE", "LOOKUP_FILE",
           "DETAILS_TYPE_URL"]

PAGES_FILE = "page_data.lance"
LOOKUP_FILE = "page_lookup.lance"
DETAILS_TYPE_URL = "/lance.table.BTreeIndexDetails"
DEFAULT_BATCH_SIZE = 4096
# pages of an open index kept decoded (4096 rows each: ~64 KiB for 8-byte values)
PAGE_CACHE = 256


def _isnan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _leaf_ranges(node):
    """The value ranges ``[(lo, hi), ...]`` (None: unbounded) a leaf predicate can be
    true in, or None when any non-null value may match."""
    if isinstance(node, Cmp):
        op, a, b = node.op, node.left, node.right
        if isinstance(a, Lit) and isinstance(b, Col):
            op, a, b = FLIP[op], b, a
        if not (isinstance(a, Col) and isinstance(b, Lit)):
            raise Unanswerable("a comparison of a column with a literal only")
        v = b.value.as_py()
        if v is None or _isnan(v):
            return None
        return {"=": [(v, v)], "<": [(None, v)], "<=": [(None, v)], ">": [(v, None)],
                ">=": [(v, None)]}.get(op)
    if isinstance(node, In):
        vals = node.values.to_pylist()
        if any(_isnan(v) for v in vals):
            return None
        return [(v, v) for v in vals if v is not None]
    if isinstance(node, IsNull):
        return [] if not node.negated else None
    if isinstance(node, Like) and not node.ignore_case:
        prefix = []
        for ch in node.pattern:
            if ch in "%_\\":
                break
            prefix.append(ch)
        p = "".join(prefix)
        if p and (pa.types.is_string(node.arg.type) or pa.types.is_large_string(node.arg.type)):
            return [(p, None)]  # (pages from the prefix on: an upper bound is not exact)
    return None


def _numeric_bounds(mins: pa.ChunkedArray, maxs: pa.ChunkedArray):
    """The pages' ``(min, max, min valid, max valid)`` as numpy arrays (int64 or
    float64) for integer and float columns, None for other types."""
    t = mins.type
    if pa.types.is_floating(t):
        dt = np.float64
    elif pa.types.is_integer(t) and (pa.types.is_signed_integer(t) or t.bit_width < 64):
        dt = np.int64
    else:
        return None
    out = []
    for c in (mins, maxs):
        c = c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        out.append(np.asarray(c.fill_null(0).to_numpy(zero_copy_only=False), dt))
    for c in (mins, maxs):
        c = c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        out.append(np.asarray(c.is_valid().to_numpy(zero_copy_only=False), bool))
    return tuple(out)


def _plain_numbers(ranges, dtype) -> bool:
    """Whether every bound of ``ranges`` compares exactly with ``dtype`` values (ints
    with an int64 column; ints in float range or floats with a float64 one)."""
    for lo, hi in ranges:
        for v in (lo, hi):
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return False
            if dtype == np.int64 and not (isinstance(v, int) and -2**63 <= v < 2**63):
                return False
            if dtype == np.float64 and isinstance(v, int) and abs(v) > 2**53:
                return False
    return True


def _pages_holding(bounds, ranges) -> list[int]:
    """:meth:`BTreeIndex._may_hold` for every page and range at once: the pages
    whose ``[min, max]`` meets some range (a NaN or null bound rules nothing out; a
    page of nulls only holds no value)."""
    mins, maxs, min_ok, max_ok = bounds
    hit = np.zeros(len(mins), bool)
    for lo, hi in ranges:
        ok = max_ok.copy()
        if lo is not None:
            ok &= ~(maxs < lo)  # (NaN compares False: kept)
        if hi is not None:
            ok &= ~(min_ok & (hi < mins))
        hit |= ok
    return np.flatnonzero(hit).tolist()


class BTreeIndex:
    """An open BTREE index: its page lookup in memory, pages read on demand."""

    def __init__(self, files: IndexFiles):
        self.files = files
        lookup_reader = files.reader(LOOKUP_FILE)
        meta = lookup_reader.schema_full.metadata or {}
        if meta.get(b"range_partitioned", b"false") not in (b"false", b""):
            raise Unanswerable("range-partitioned BTREE indices are not read by lancenb")
        try:
            self.batch_size = int(meta.get(b"batch_size", DEFAULT_BATCH_SIZE))
        except ValueError as e:
            raise CorruptFileError(f"index {files.uuid}: batch_size {meta!r}") from e
        lookup = lookup_reader.read_all().to_table()
        self.mins = lookup.column("min").to_pylist()
        self.maxs = lookup.column("max").to_pylist()
        self._bounds = _numeric_bounds(lookup.column("min"), lookup.column("max"))
        self.null_counts = np.asarray(lookup.column("null_count").to_numpy(), np.int64)
        self.pages = np.asarray(lookup.column("page_idx").to_numpy(), np.int64)
        self.data = files.reader(PAGES_FILE)
        self.num_rows = self.data.num_rows()
        self.value_type = self.data.schema_full.field("values").type
        # a 0.1 file's batch row starts (one page per batch; the row ids' pages are its batches)
        self._batches = None if self.data.version.label != "0.1" else np.cumsum(
            [0] + [p.num_rows for p in self.data.metadata().columns[-1].pages])
        self._pages: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        fork_safe_locks(self, "_lock")  # (a fresh one in a forked child)

    # -- pages -----------------------------------------------------------------------
    def _may_hold(self, i: int, lo, hi) -> bool:
        mn, mx = self.mins[i], self.maxs[i]
        if mx is None:
            return False  # nulls only
        try:
            if lo is not None and not _isnan(mx) and mx < lo:
                return False
            if hi is not None and mn is not None and not _isnan(mn) and hi < mn:
                return False
        except TypeError:
            return True  # incomparable: read it
        return True

    def candidate_pages(self, node, with_nulls: bool) -> list[int]:
        """Positions (in the lookup) of the pages that may hold rows ``node`` is true
        or (``with_nulls``) NULL for."""
        ranges = _leaf_ranges(node)
        n = len(self.pages)
        if ranges is None:
            want = [i for i in range(n) if self.maxs[i] is not None]
        elif self._bounds is not None and _plain_numbers(ranges, self._bounds[0].dtype):
            want = _pages_holding(self._bounds, ranges)
        else:
            want = [i for i in range(n) if any(self._may_hold(i, lo, hi) for lo, hi in ranges)]
        if with_nulls or isinstance(node, IsNull):
            want = sorted(set(want) | {i for i in range(n) if self.null_counts[i] > 0})
        return want

    def read_pages(self, positions: list[int]) -> pa.Table:
        """The rows of the pages at ``positions`` (lookup rows), as one table (the
        last :data:`PAGE_CACHE` pages read are kept, as pylance's index cache does)."""
        missing = [i for i in positions if i not in self._pages]
        if missing:
            got = self._read_pages(missing)
            bounds = np.cumsum([0] + [self._page_rows(i) for i in missing])
            with self._lock:
                for k, i in enumerate(missing):
                    self._pages[i] = got.slice(int(bounds[k]), int(bounds[k + 1] - bounds[k]))
                    self._pages.move_to_end(i)
                while len(self._pages) > PAGE_CACHE:
                    self._pages.popitem(last=False)
        with self._lock:
            parts = [self._pages[i] for i in positions if i in self._pages]
        if len(parts) != len(positions):  # (evicted meanwhile by another query)
            return self._read_pages(positions)
        if not parts:
            return self._read_pages([])
        return pa.concat_tables(parts)

    def _page_rows(self, i: int) -> int:
        start, end = self._span(i)
        return max(0, end - start)

    def _span(self, i: int) -> tuple[int, int]:
        """Rows ``[start, end)`` of the page at lookup position ``i``: page ``p`` is rows
        ``[p * batch_size, (p + 1) * batch_size)``, or, in a 0.1 file (pylance before
        0.21 wrote one batch per page), the file's batch ``p``."""
        p = int(self.pages[i])
        if self._batches is None:
            start = p * self.batch_size
            return start, min(start + self.batch_size, self.num_rows)
        if not 0 <= p < len(self._batches) - 1:
            raise CorruptFileError(f"index {self.files.uuid}: page {p}; {PAGES_FILE} has "
                                   f"{len(self._batches) - 1} batches")
        return int(self._batches[p]), int(self._batches[p + 1])

    def _read_pages(self, positions: list[int]) -> pa.Table:
        spans = []
        for i in positions:
            start, end = self._span(i)
            if start >= self.num_rows:
                raise CorruptFileError(f"index {self.files.uuid}: page {self.pages[i]} starts "
                                       f"at row {start}; {PAGES_FILE} has {self.num_rows}")
            if spans and spans[-1][1] == start:
                spans[-1][1] = end
            else:
                spans.append([start, end])
        parts = [self._rows(a, b - a) for a, b in spans]
        note_parts(len(positions))
        if not parts:
            return pa.table({"values": pa.array([], self.value_type),
                             "ids": pa.array([], pa.uint64())})
        return pa.concat_tables(parts)

    def _rows(self, start: int, n: int) -> pa.Table:
        return read_rows(self.data, start, n)

    def prewarm(self) -> None:
        """Read every page into the page cache (the first :data:`PAGE_CACHE` pages
        stay), as pylance's ``prewarm_index``."""
        self.read_pages(list(range(min(len(self.pages), PAGE_CACHE))))

    # -- queries -----------------------------------------------------------------------
    def search(self, node, column: str, with_nulls: bool) -> Answer:
        """The rows ``node`` (a leaf predicate over ``column``) is true for, and NULL
        for when ``with_nulls``."""
        t = self.read_pages(self.candidate_pages(node, with_nulls))
        values = t.column("values")
        ids = np.asarray(t.column("ids").to_numpy(), np.uint64)
        true, null = leaf_mask(pa.table({column: values}), node.expr())
        return Answer(ids_at(ids, true), ids_at(ids, null) if with_nulls else None)

    def search_all(self, nodes: list, column: str) -> Answer:
        """The rows every leaf of ``nodes`` (predicates over ``column``) is true for:
        only the pages all of them may hold are read (``x >= a AND x < b`` reads the
        pages of ``[a, b)``, not those of each side)."""
        want = None
        for node in nodes:
            got = set(self.candidate_pages(node, False))
            want = got if want is None else want & got
        t = self.read_pages(sorted(want))
        ids = np.asarray(t.column("ids").to_numpy(), np.uint64)
        table = pa.table({column: t.column("values")})
        keep = None
        for node in nodes:
            true, _ = leaf_mask(table, node.expr())
            keep = true if keep is None else np.intersect1d(keep, true, assume_unique=True)
        return Answer(ids_at(ids, keep))

    def all_rows(self) -> BitMap64:
        """Every row the index holds."""
        ids = self._rows(0, self.num_rows).column("ids") \
            if self.num_rows else pa.array([], pa.uint64())
        return rowmap.from_ids(np.asarray(ids.to_numpy(), np.uint64))


def read_rows(reader, start: int, n: int) -> pa.Table:
    """Rows ``[start, start + n)`` of a ``page_data.lance`` reader as columns ``values,
    ids`` (pylance before 0.21 wrote a 0.1 file naming the second one ``row_ids``)."""
    t = reader.read_range(start, n).to_table()
    return t if t.column_names == ["values", "ids"] else t.rename_columns(["values", "ids"])


def write_btree(files: IndexFiles, batches, value_type: pa.DataType, *,
                batch_size: int = DEFAULT_BATCH_SIZE, run_rows: int = RUN_ROWS) -> None:
    """Write a BTREE index into ``files`` from ``batches`` of ``(values, uint64 row
    ids)`` in any order, sorting in bounded memory (:mod:`.sorting`)."""
    data_schema = pa.schema([pa.field("values", value_type),
                             pa.field("ids", pa.uint64(), nullable=False)])
    mins, maxs, nulls = [], [], []

    def pages():
        held, n = [], 0
        for t in sorted_pairs(batches, value_type, run_rows=run_rows):
            held.append(t)
            n += t.num_rows
            while n >= batch_size:
                allt = pa.concat_tables(held).combine_chunks()
                yield page(allt.slice(0, batch_size))
                held, n = [allt.slice(batch_size)], n - batch_size
        if n:
            yield page(pa.concat_tables(held).combine_chunks())

    def page(t: pa.Table) -> pa.RecordBatch:
        v = t.column("values").combine_chunks()
        mins.append(v.slice(0, 1))
        maxs.append(v.slice(len(v) - 1, 1))
        nulls.append(v.null_count)
        return pa.record_batch([v, t.column("ids").combine_chunks()], schema=data_schema)

    files.write(PAGES_FILE, None, data_schema, pages())
    lookup_schema = pa.schema([
        pa.field("min", value_type), pa.field("max", value_type),
        pa.field("null_count", pa.uint32(), nullable=False),
        pa.field("page_idx", pa.uint32(), nullable=False)],
        metadata={"range_partitioned": "false", "batch_size": str(batch_size)})
    lookup = pa.table([pa.concat_arrays(mins) if mins else pa.array([], value_type),
                       pa.concat_arrays(maxs) if maxs else pa.array([], value_type),
                       pa.array(nulls, pa.uint32()), pa.array(range(len(nulls)), pa.uint32())],
                      schema=lookup_schema)
    files.write(LOOKUP_FILE, lookup, lookup_schema)
