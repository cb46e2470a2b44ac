"""The 2.1/2.2 backend of :class:`~lancenb.file.LanceFileReader`: structural pages.

Every leaf of a field has its own column (a packed struct and a blob v2 struct are one
column each; :mod:`lancenb.file.columns` is the mapping). A column's pages are
independent: each is a ``PageLayout`` (mini-block, full-zip, constant, blob) decoded by
:class:`lancenb.encodings.page.PageDecoder`, and a nested field's leaves are joined
again through their repetition and definition levels (:mod:`repdef`).

Reads:

* all rows: page by page, each page scanned in pieces of about ``SCAN_PIECE_BYTES``;
* a range: a page the range covers enough of (``RANGE_SCAN_FRACTION``) is scanned and
  sliced, otherwise its rows are read by position;
* rows by position: the pages holding them, through the search cache (chunk tables,
  dictionaries, repetition indices), loaded per field in one coalesced read.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pyarrow as pa

from lancenb._proto import file2_pb2
from lancenb.encodings import pb
from lancenb.encodings.cache import SearchCache, scanning
from lancenb.encodings.config import is_packed
from lancenb.encodings.page import PageDecoder, PageInfo, describe_layout, parse_layout
from lancenb.encodings.physical import fsl
from lancenb.encodings.structural import dictarray, repdef
from lancenb.encodings.structural.blob import DESCRIPTION_V1
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.file.columns import columns_per_field
from lancenb.file.formats import v2_1_plain as plain
from lancenb.file.metadata import (
    Container,
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceFileMetadata,
    LancePageMetadata,
    PageRef,
)
from lancenb.file.version import FileVersion
from lancenb.io.pools import fork_safe_locks

__all__ = ["V21Backend", "SCAN_PIECE_BYTES", "RANGE_SCAN_FRACTION", "BATCH_READ_BYTES"]

# Full scans read and decode mini-block pages in pieces of about this many bytes.
SCAN_PIECE_BYTES = 1 << 20

# A scan of several fields reads their small pages (at most SCAN_PIECE_BYTES each)
# together, in coalesced requests of about this many bytes (bounding peak memory).
BATCH_READ_BYTES = 16 << 20
# the layouts whose pages decode whole from buffer_ranges() (flat columns)
_WHOLE_PAGE_KINDS = frozenset({"mini_block_layout", "full_zip_layout"})

# a take decodes a flat page whole (and keeps it for the next takes: see
# V21Backend._page_for_take) when it touches it again and its buffers hold at most this
CACHED_PAGE_BYTES = 1 << 20
# ... or up to LARGE_CACHED_PAGE_BYTES when the take picks at least one row per this many
# of its bytes: decoding such a page whole (~1 ms per 3 MB) costs about what reading
# those rows chunk by chunk does, and later takes then only pick rows (a 200k-row table
# of 16-d vectors: 3.2 MB pages, 64 rows each of a 256-row take). Random takes from a
# large table pick a row or two per page and never decode one whole.
LARGE_CACHED_PAGE_BYTES = 4 << 20
LARGE_PAGE_BYTES_PER_ROW = 64 << 10

# read_range scans a page (and slices it) when the range covers at least this
# fraction of its rows, (numerator, denominator) for flat and for nested pages;
# below it, rows are read by position.
RANGE_SCAN_FRACTION = ((1, 4), (3, 4))


def _stored(f) -> tuple[pa.DataType, int]:
    """``(the type a field's columns encode, their entries per row)``: maps as their
    list layout; a fixed-size list of structs as its items (2.2, see
    :func:`lancenb.encodings.physical.fsl.struct_items`)."""
    items = fsl.struct_items(f.storage.type)
    return items if items is not None else (f.storage.type, 1)


def _chunked(arrays: list, t: pa.DataType) -> pa.ChunkedArray:
    """A flat field's page arrays as one chunked array of type ``t``; pages kept as
    dictionary arrays (:func:`~lancenb.encodings.page.dictionaries_kept`) give a
    ``dictionary<int32, t>`` array when every page did, else they are decoded."""
    if pa.types.is_dictionary(t) or not any(isinstance(a, pa.DictionaryArray)
                                            for a in arrays):
        return pa.chunked_array(arrays, type=t)
    if all(isinstance(a, pa.DictionaryArray) for a in arrays):
        return pa.chunked_array(arrays, type=pa.dictionary(pa.int32(), t))
    return pa.chunked_array([a.dictionary_decode() if isinstance(a, pa.DictionaryArray)
                             else a for a in arrays], type=t)


class V21Backend:
    """Reads 2.1 and 2.2 files (:class:`lancenb.file.backend.FileBackend`)."""

    # the facade decodes columns on its pool for scans of any size and for takes
    # of more rows than this (small takes are dominated by fixed costs)
    parallel_scan_rows = 0
    parallel_take_rows = 4097

    def __init__(self, path: str, io, version: FileVersion, container: Container):
        self.path, self.io, self.version = path, io, version
        self._c = container
        self.schema_full, self.fields = container.schema_full, container.fields
        self.num_rows = container.num_rows
        self.columns_of = self._leaf_columns(container.num_columns)
        self._leaves_of: dict[int, list] = {}
        self._stored_of: dict[int, tuple] = {}
        self._decoders: dict[int, list[list[PageDecoder]]] = {}
        # random access: chunk tables, dictionaries and repetition indices of every
        # column, loaded when a column is first taken from (see prepare_take)
        self._search_cache = SearchCache()
        self._initialised: set[int] = set()
        self._init_lock = threading.Lock()
        fork_safe_locks(self, "_init_lock")
        self._plain_key = plain.new_cache_key()  # this file's pages in plain.take's cache

    # -- columns and pages -----------------------------------------------------
    def _leaf_columns(self, num_columns: int) -> list[int]:
        """Top-level field index -> its first column index."""
        # the one field-to-column mapping (lancenb.file.columns): leaves own columns,
        # packed and blob v2 structs one column each
        out = [0, *itertools.accumulate(columns_per_field(self.fields, self.version))]
        col = out.pop()
        if col != num_columns:
            inside = [f.name for f in self.fields if fsl.struct_items_inside(f.storage.type)]
            if inside:
                raise NotSupportedError(f"file {self.path!r}: column {inside[0]!r} holds a "
                                        f"fixed-size list of structs inside a struct or list "
                                        f"(not supported yet)")
            raise CorruptFileError(f"file {self.path!r}: the schema needs {col} columns, the "
                                   f"footer says {num_columns}")
        return out

    def _stored(self, field_idx: int) -> tuple[pa.DataType, pa.DataType, int]:
        """``(storage type, the type its columns encode, entries per row)`` of a field
        (:func:`_stored`), worked out once (wide files ask for it per column)."""
        hit = self._stored_of.get(field_idx)
        if hit is None:
            f = self.fields[field_idx]
            hit = self._stored_of[field_idx] = (f.storage.type, *_stored(f))
        return hit

    def _leaves(self, field_idx: int):
        """``[(column index, path, leaf name)]`` of a top-level field's columns."""
        hit = self._leaves_of.get(field_idx)
        if hit is None:
            hit = self._leaves_of[field_idx] = self._find_leaves(field_idx)
        return hit

    def _find_leaves(self, field_idx: int):
        f = self.fields[field_idx]
        ci = self.columns_of[field_idx]
        if fsl.struct_items_inside(self._stored(field_idx)[0]):  # (pages count those items)
            raise NotSupportedError(f"file {self.path!r}: column {f.name!r} holds a fixed-size "
                                    f"list of structs inside a struct or list (not supported "
                                    f"yet)")
        st = self._stored(field_idx)[1]
        if not repdef.is_nested(st) or is_packed(f.arrow):
            return [(ci, None, f.name)]
        out = []
        for i, path in enumerate(repdef.leaf_paths(st)):
            node, names = f, [f.name]
            for step in path:
                node = node.children[step]
                names.append(node.name)
            out.append((ci + i, path, ".".join(names)))
        return out

    def _plain(self, field_idx: int):
        """``(leaf type, plain pages)`` of a flat field all of whose pages are plain
        (:mod:`.v2_1_plain`), else None; worked out once per file content."""
        k = ("plain", field_idx)
        hit = self._c.memo.get(k, k)
        if hit is k:
            hit = None
            # (a plain type is its own storage type, one column, one entry a row)
            t = self.fields[field_idx].arrow.type
            if plain.is_plain_type(t):
                pages = plain.column_pages(self._c.column_bytes(self.columns_of[field_idx]),
                                           t, self.num_rows, self.io.size())
                if pages is not None:
                    hit = (t, pages)
            self._c.memo[k] = hit
        return hit

    def leaf_columns(self, field_idx: int) -> list[tuple[int, str]]:
        return [(ci, name) for ci, _, name in self._leaves(field_idx)]

    def column_pages(self, field_idx: int, ci: int | None = None,
                     name: str | None = None) -> list[PageRef]:
        """The checked pages of a field's column (default: its first)."""
        f = self.fields[field_idx]
        if ci is None:
            ci = self.columns_of[field_idx]
        where = f"file {self.path!r}, column {ci} ({name or f.name!r})"
        cm = pb.parse(file2_pb2.ColumnMetadata, self._c.column_bytes(ci), where)
        pages = []
        row = 0
        size = self.io.size()
        for p_i, page in enumerate(cm.pages):
            pwhere = f"{where}, page {p_i}"
            pb.check_page(page, size, pwhere)
            info = PageInfo(list(page.buffer_offsets), list(page.buffer_sizes), int(page.length),
                            row)
            pages.append(PageRef(info, page.encoding.direct.encoding, pwhere))
            row += int(page.length)
        if row != self.num_rows * self._stored(field_idx)[2]:
            raise CorruptFileError(f"{where}: pages hold {row} rows, the file has "
                                   f"{self.num_rows}")
        return pages

    def _leaf_type(self, field_idx: int, path):
        """``(leaf type, chain type or None)`` of one of a field's columns."""
        storage, st, _ = self._stored(field_idx)
        if path is None:
            return storage, None
        return repdef.leaf_field(st, path), repdef.chain_type(st, path)

    def decode_page(self, field_idx: int, ci: int, page: PageRef) -> list[pa.Array]:
        path = next(p for c, p, _ in self._leaves(field_idx) if c == ci)
        leaf_t, chain = self._leaf_type(field_idx, path)
        info, enc, where = page
        d = PageDecoder(enc, info, leaf_t, where, chain, file_size=self.io.size())
        return d.scan(self.io)

    def _column_pages(self, field_idx: int) -> list[PageDecoder]:
        """Page decoders of the field's (first) column."""
        return self._leaf_pages(field_idx)[0]

    def _leaf_pages(self, field_idx: int) -> list[list[PageDecoder]]:
        """Page decoders of each of the field's columns (one per leaf)."""
        if field_idx in self._decoders:
            return self._decoders[field_idx]
        out = []
        size = self.io.size()
        for ci, path, name in self._leaves(field_idx):
            leaf_t, chain = self._leaf_type(field_idx, path)
            decs = [PageDecoder(enc, info, leaf_t, where, chain, file_size=size)
                    for info, enc, where in self.column_pages(field_idx, ci, name)]
            for p_i, d in enumerate(decs):
                d.attach_cache(self._search_cache, (ci, p_i))
            out.append(decs)
        self._decoders[field_idx] = out
        return out

    def metadata(self) -> LanceFileMetadata:
        cols = []
        for i in range(len(self.fields)):
            for ci, _, name in self._leaves(i):
                pages = []
                for info, enc, where in self.column_pages(i, ci, name):
                    layout = parse_layout(enc, where)
                    pages.append(LancePageMetadata(
                        [LanceBufferDescriptor(o, z) for o, z in zip(info.offsets, info.sizes)],
                        describe_layout(layout), info.num_rows, layout))
                cols.append(LanceColumnMetadata([], pages))
        return self._c.file_metadata(self.version, cols)

    def read_global_buffer(self, index: int) -> bytes:
        return self.io.read(*self._c.global_buffer_range(index))

    def column_metadata_position(self, ci: int) -> int:
        return int(self._c.cmo[ci, 0])

    def search_cache_memory(self) -> dict[str, int]:
        by_ci = self._search_cache.memory_by_column()
        out = {}
        for i in range(len(self.fields)):
            for ci, _, name in self._leaves(i):
                if ci in by_ci:
                    out[name] = by_ci[ci]
        return out

    def page_statistics(self, **_):
        return None

    # -- data ----------------------------------------------------------------
    def _merge(self, field_idx: int, columns: list[list[pa.Array]]) -> pa.ChunkedArray:
        """One field's array from its columns' arrays (leaves of nested fields joined)."""
        f = self.fields[field_idx]
        _, st, per_row = self._stored(field_idx)  # (maps: stored as lists of entries)
        if len(columns) == 1 and (not repdef.is_nested(st) or is_packed(f.arrow)):
            return _chunked(columns[0], f.arrow.type)
        try:
            return pa.chunked_array([self._merge_one(f, st, per_row, field_idx, columns)],
                                    type=f.arrow.type)
        except pa.ArrowInvalid:  # pages' dictionaries that do not unify: page by page
            if not dictarray.has_dictionary(st):
                raise
            return pa.chunked_array([self._merge_one(f, st, per_row, field_idx, seg)
                                     for seg in dictarray.page_segments(columns)],
                                    type=f.arrow.type)

    def _merge_one(self, f, st, per_row: int, field_idx: int, columns) -> pa.Array:
        chains = []
        for (_, path, _), parts in zip(self._leaves(field_idx), columns):
            if len(parts) == 1:
                chains.append(parts[0])
            else:
                ct = repdef.chain_type(st, path)
                chains.append(pa.concat_arrays(parts) if parts else pa.array([], type=ct))
        arr = repdef.merge(st, chains, f"file {self.path!r}, field {f.name!r}")
        if per_row > 1:
            arr = fsl.from_struct_items(arr, f.arrow.type, per_row, f"file {self.path!r}, "
                                        f"field {f.name!r}")
        elif st is not f.arrow.type:
            arr = arr.view(f.arrow.type)
        return arr

    def read(self, field_idx: int, rows) -> pa.ChunkedArray:
        if rows is None:
            return self._read_all(field_idx)
        if isinstance(rows, range):
            return self._read_range(field_idx, rows.start, len(rows))
        return self._read_rows(field_idx, rows)

    def read_many(self, field_idxs, rows) -> list[pa.ChunkedArray]:
        """:meth:`read` of several fields, planned together: a scan reads the small
        pages of all of them in coalesced requests of about ``BATCH_READ_BYTES``, a
        take loads their search state in one request and reads every page's chunks in
        one more (wide tables: the cost per column is then decoding, not requests)."""
        if rows is None:
            return self._read_all_many(field_idxs)
        if isinstance(rows, range):
            return [self.read(i, rows) for i in field_idxs]
        return self._read_rows_many(field_idxs, rows)

    def _split_plain(self, field_idxs):
        """``(positions of plain fields, their (type, pages))`` among ``field_idxs``."""
        at, got = [], []
        for k, i in enumerate(field_idxs):
            p = self._plain(i)
            if p is not None:
                at.append(k)
                got.append(p)
        return at, got

    def _read_all_many(self, field_idxs) -> list[pa.ChunkedArray]:
        at, fields = self._split_plain(field_idxs)
        out: list = [None] * len(field_idxs)
        for k, (t, _), arrs in zip(at, fields,
                                   plain.scan(self.io, fields, BATCH_READ_BYTES,
                                              SCAN_PIECE_BYTES) if at else ()):
            if arrs is not None:
                out[k] = pa.chunked_array(arrs, type=t)
        rest = [k for k, a in enumerate(out) if a is None]
        if rest:
            for k, a in zip(rest, self._read_all_pages([field_idxs[k] for k in rest])):
                out[k] = a
        return out

    def _read_all_pages(self, field_idxs) -> list[pa.ChunkedArray]:
        """:meth:`_read_all_many` through the fields' page decoders."""
        per_field = [self._leaf_pages(i) for i in field_idxs]
        # parts[field][leaf][page]: the page's arrays
        parts = [[[None] * len(decs) for decs in leaves] for leaves in per_field]
        batch: list = []
        held = 0

        def flush():
            if not batch:
                return
            flat = [r for *_, rs in batch for r in rs]
            data, pos = self.io.read_ranges_np(np.array([o for o, _ in flat], np.int64),
                                               np.array([z for _, z in flat], np.int64))
            arrays = PageDecoder.decode_all_many([x[3] for x in batch], [x[4] for x in batch],
                                                 data, pos)
            for (a, b, c, _, _), arr in zip(batch, arrays):
                parts[a][b][c] = [arr]
            batch.clear()

        with scanning():
            for a, leaves in enumerate(per_field):
                for b, decs in enumerate(leaves):
                    for c, d in enumerate(decs):
                        if d.chain is None and d.kind in _WHOLE_PAGE_KINDS:
                            rs = d.buffer_ranges()
                            size = sum(z for _, z in rs)
                            if size <= SCAN_PIECE_BYTES:
                                batch.append((a, b, c, d, rs))
                                held += size
                                if held >= BATCH_READ_BYTES:
                                    flush()
                                    held = 0
                                continue
                        parts[a][b][c] = d.scan(self.io, SCAN_PIECE_BYTES)
            flush()
        return [self._merge(i, [[x for page in leaf for x in page] for leaf in leaves])
                for i, leaves in zip(field_idxs, parts)]

    def _prepare_many(self, field_idxs) -> None:
        """:meth:`prepare_take` of several fields in one coalesced read."""
        todo = [i for i in dict.fromkeys(field_idxs) if i not in self._initialised]
        if not todo:
            return
        with self._init_lock:
            todo = [i for i in todo if i not in self._initialised]
            decs = [d for i in todo for col in self._leaf_pages(i) for d in col]
            ranges = [d.init_ranges() for d in decs]
            flat = [r for rs in ranges for r in rs]
            if flat:
                data, pos = self.io.read_ranges_np(np.array([o for o, _ in flat], np.int64),
                                                   np.array([z for _, z in flat], np.int64))
                PageDecoder.init_from_many(decs, ranges, data, pos)
            self._initialised.update(todo)

    def _read_rows_many(self, field_idxs, rows: np.ndarray) -> list[pa.ChunkedArray]:
        at, fields = self._split_plain(field_idxs)
        out: list = [None] * len(field_idxs)
        got = plain.take(self.io, fields, rows, self.num_rows, self._plain_key) if at else ()
        for k, (t, _), arrs in zip(at, fields, got):
            if arrs is not None:
                out[k] = pa.chunked_array(arrs, type=t)
        rest = [k for k, a in enumerate(out) if a is None]
        if rest:
            for k, a in zip(rest, self._read_rows_pages([field_idxs[k] for k in rest], rows)):
                out[k] = a
        return out

    def _read_rows_pages(self, field_idxs, rows: np.ndarray) -> list[pa.ChunkedArray]:
        """:meth:`_read_rows_many` through the fields' page decoders."""
        self._prepare_many(field_idxs)
        per_field = []  # per field, per leaf: [array or plan index]
        plans: list = []  # (decoder, plan, first range, number of ranges, rows)
        memo: dict = {}  # row-to-chunk lookups shared by pages of the same chunking
        offs, lens = [], []
        n_ranges = 0
        for i in field_idxs:
            d = self._stored(i)[2]
            frows = rows if d == 1 else (rows[:, None] * d + np.arange(d, dtype=np.int64)
                                         ).reshape(-1)
            leaves = []
            for decs in self._leaf_pages(i):
                if len(decs) == 1:
                    pieces = [(decs[0], frows)]
                else:
                    firsts = np.array([p.page.first_row for p in decs] + [self.num_rows * d],
                                      dtype=np.int64)
                    page_of = np.searchsorted(firsts, frows, side="right") - 1
                    pieces = [(decs[int(p)], frows[page_of == p] - firsts[p])
                              for p in np.unique(page_of)]
                out = []
                for dec, sel in pieces:
                    whole = self._page_for_take(dec, len(sel))
                    if whole is not None:  # decoded before: pick the rows
                        out.append(whole.take(pa.array(sel)))
                        continue
                    plan = dec.plan_rows(self.io, sel, memo)
                    if plan is None:
                        out.append(dec.read_rows(self.io, sel))
                        continue
                    o, n = plan.ranges()
                    plans.append((dec, plan, n_ranges, len(o), sel))
                    offs.append(o)
                    lens.append(n)
                    n_ranges += len(o)
                    out.append(len(plans) - 1)
                leaves.append(out)
            per_field.append(leaves)
        if plans:
            data, pos = self.io.read_ranges_np(np.concatenate(offs), np.concatenate(lens))
            done = PageDecoder.rows_from_many([x[0] for x in plans], [x[1] for x in plans],
                                              data, [pos[k:k + n] for _, _, k, n, _ in plans])
            # (a page whose batch did not check, read alone: its error is a one-page read's)
            done = [a if a is not None else dec.read_rows(self.io, sel)
                    for a, (dec, *_, sel) in zip(done, plans)]
            per_field = [[[done[x] if isinstance(x, int) else x for x in leaf]
                          for leaf in leaves] for leaves in per_field]
        return [self._merge(i, leaves) for i, leaves in zip(field_idxs, per_field)]

    def _page_for_take(self, dec, picked: int = 0) -> pa.Array | None:
        """A flat page's rows decoded whole, from the take cache (shared with
        :func:`v2_1_plain.take`), when a take touches it a second time and it holds at
        most ``CACHED_PAGE_BYTES``; None: read its rows by position. Random takes and
        shuffled reads come back to the same pages; a one-off take decodes nothing more
        than it needs."""
        if dec.chain is not None or dec.kind not in _WHOLE_PAGE_KINDS:
            return None
        key = (self._plain_key, id(dec))  # (the decoders live as long as this backend)
        hit = plain.cached_page(key)
        if hit is not None or not plain.touched_again(key):
            return hit
        rs = dec.buffer_ranges()
        size = sum(z for _, z in rs)
        if size > CACHED_PAGE_BYTES and (size > LARGE_CACHED_PAGE_BYTES
                                         or picked * LARGE_PAGE_BYTES_PER_ROW < size):
            return None
        with scanning():
            data, pos = self.io.read_ranges_np(np.array([o for o, _ in rs], np.int64),
                                               np.array([z for _, z in rs], np.int64))
            arr = PageDecoder.decode_all_many([dec], [rs], data, pos)[0]
        if isinstance(arr, pa.DictionaryArray):
            arr = arr.dictionary_decode()
        plain.keep_page(key, arr)
        return arr

    def _read_all(self, field_idx: int) -> pa.ChunkedArray:
        # page by page, in pieces: peak memory is the result plus one piece's bytes;
        # a scan leaves the search cache alone
        with scanning():
            return self._merge(field_idx, [[a for d in decs for a in d.scan(
                self.io, SCAN_PIECE_BYTES)] for decs in self._leaf_pages(field_idx)])

    def prepare_take(self, field_idx: int) -> None:
        """Load what random access to a field needs into the search cache: one
        coalesced read for all its pages' chunk tables, dictionaries and repetition
        indices."""
        if field_idx in self._initialised:
            return
        with self._init_lock:
            if field_idx in self._initialised:
                return
            decs = [d for col in self._leaf_pages(field_idx) for d in col]
            ranges = [d.init_ranges() for d in decs]
            flat = [r for rs in ranges for r in rs]
            bufs = self.io.read_ranges(flat) if flat else []
            i = 0
            for d, rs in zip(decs, ranges):
                if rs:
                    d.init_from(bufs[i:i + len(rs)])
                i += len(rs)
            self._initialised.add(field_idx)

    def _read_rows(self, field_idx: int, rows: np.ndarray) -> pa.ChunkedArray:
        """``rows`` sorted ascending (duplicates allowed)."""
        self.prepare_take(field_idx)
        d = self._stored(field_idx)[2]
        if d > 1:  # columns of d items a row
            rows = (rows[:, None] * d + np.arange(d, dtype=np.int64)).reshape(-1)
        columns = []
        for decs in self._leaf_pages(field_idx):
            if len(decs) == 1:
                columns.append([decs[0].read_rows(self.io, rows)])
                continue
            firsts = np.array([p.page.first_row for p in decs] + [self.num_rows * d],
                              dtype=np.int64)
            page_of = np.searchsorted(firsts, rows, side="right") - 1
            parts = []
            for p in np.unique(page_of):
                sel = rows[page_of == p] - firsts[p]
                parts.append(decs[int(p)].read_rows(self.io, sel))
            columns.append(parts)
        return self._merge(field_idx, columns)

    def read_blob_descriptions(self, field_idx: int, rows: np.ndarray | None = None
                               ) -> pa.ChunkedArray:
        """A top-level blob v1 column's ``(position, size)`` descriptions
        (:data:`~lancenb.encodings.structural.blob.DESCRIPTION_V1`), every row or
        ``rows`` (sorted), without reading the values (the blob API reads them)."""
        decs = self._column_pages(field_idx)
        if rows is None:
            return pa.chunked_array([d.blob_descriptions(self.io) for d in decs],
                                    type=DESCRIPTION_V1)
        self.prepare_take(field_idx)
        firsts = np.array([p.page.first_row for p in decs] + [self.num_rows], dtype=np.int64)
        page_of = np.searchsorted(firsts, rows, side="right") - 1
        parts = [decs[int(p)].blob_descriptions(self.io, rows[page_of == p] - firsts[p])
                 for p in np.unique(page_of)]
        return pa.chunked_array(parts, type=DESCRIPTION_V1)

    def _read_range(self, field_idx: int, start: int, num_rows: int) -> pa.ChunkedArray:
        """Rows ``[start, start + num_rows)``. A page the range covers enough of
        (RANGE_SCAN_FRACTION) is scanned whole, which is faster than picking rows, and
        sliced; otherwise rows are read by position, which reads only the chunks the
        range touches (nested pages locate the range's two ends and slice the levels
        between)."""
        per_row = self._stored(field_idx)[2]
        start, end = start * per_row, (start + num_rows) * per_row
        columns = []
        for decs in self._leaf_pages(field_idx):
            parts = []
            for d in decs:
                first, n = d.page.first_row, d.page.num_rows
                lo, hi = max(start, first), min(end, first + n)
                if hi <= lo:
                    continue
                num, den = RANGE_SCAN_FRACTION[d.chain is not None]
                if (hi - lo) * den >= n * num:
                    with scanning():
                        whole = d.scan(self.io, SCAN_PIECE_BYTES)
                    arr = whole[0] if len(whole) == 1 else pa.concat_arrays(whole)
                    parts.append(arr.slice(lo - first, hi - lo))
                else:
                    self.prepare_take(field_idx)
                    parts.append(d.read_rows(self.io, np.arange(lo - first, hi - first,
                                                                dtype=np.int64)))
            columns.append(parts)
        return self._merge(field_idx, columns)
