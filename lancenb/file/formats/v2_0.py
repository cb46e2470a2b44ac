"""The 2.0 backend of :class:`~lancenb.file.LanceFileReader`: fields to columns, and
a field's rows out of its columns (the pages decode in :mod:`lancenb.encodings.v2_0`).

2.0 gives every field a column, in schema pre-order (a parent before its children):

* a primitive, string, fixed-size list, packed struct or blob field → one column;
* a struct → a header column (pages ``struct{}``, no buffers, one row per struct
  value) followed by its children's columns;
* a list → an offsets column followed by its item's columns. An offsets page holds
  page-local u64 *end* offsets into the items it covers (``num_items`` of them,
  counted on from the previous pages'); a null list stores ``end +
  null_offset_adjustment`` (= ``num_items + 1``). The item column pages by itself.
* a string or binary field written by pylance 0.13 and older → two columns, laid out
  as a ``list<u8>`` (offsets pages, then a column of u8 items) instead of one column
  of ``binary`` pages. Such files have more columns than their schema needs in the
  newer layout; only then are string fields' first pages looked at (a ``list`` page
  marks the older layout), so other files open as before.

Example: ``a: int32, s: struct{x: int32, l: list<string>}`` → columns ``a``, ``s``
(header), ``s.x``, ``s.l`` (offsets), ``s.l.item``.

Reads go page by page: a scan decodes every page; a take or range read touches
only the pages holding the rows (and, through a list, only the item pages its rows
point into); fixed-width values are fetched as byte ranges
(:mod:`lancenb.encodings.v2_0.ranges`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from google.protobuf import text_format

from lancenb._proto import file2_pb2
from lancenb.encodings import pb
from lancenb.encodings.v2_0 import decode as dec
from lancenb.encodings.v2_0 import ranges
from lancenb.encodings.v2_0.columns import BLOB_TYPE, is_blob_2_0, is_packed_2_0
from lancenb.encodings.v2_0.writing import FileWriter
from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancenb.file.metadata import (
    Container,
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceFileMetadata,
    LancePageMetadata,
)
from lancenb.file.schema import schema_to_fields
from lancenb.file.version import FileVersion
from lancenb.kernels import slices

__all__ = ["V20Backend", "V20Writer", "Node", "plan_columns"]


@dataclass
class Node:
    """A field and the column it starts at; ``kind`` is leaf/struct/list/blob."""

    arrow: pa.Field
    column: int
    kind: str
    children: list = field(default_factory=list)


def plan_columns(f: pa.Field, column: int, is_list_column=None) -> tuple[Node, int]:
    """The node tree of field ``f`` starting at ``column``; returns (node, next column).

    ``is_list_column(column)``: whether that column's pages are ``list`` pages; given,
    a string or binary field whose column is one is laid out as ``list<u8>`` (the
    older layout, see the module docstring)."""
    dt = f.type
    if pa.types.is_struct(dt) and not is_packed_2_0(f):
        node, nxt = Node(f, column, "struct"), column + 1
        for child in dt:
            c, nxt = plan_columns(child, nxt, is_list_column)
            node.children.append(c)
        return node, nxt
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        c, nxt = plan_columns(dt.value_field, column + 1, is_list_column)
        return Node(f, column, "list", [c]), nxt
    if pa.types.is_map(dt) or pa.types.is_union(dt):
        raise NotSupportedError(f"2.0 columns of type {dt} are not supported")
    if (is_list_column is not None and _is_binary(dt) and not is_blob_2_0(f)
            and is_list_column(column)):
        items = Node(pa.field("item", pa.uint8()), column + 1, "leaf")
        return Node(f, column, "binary_list", [items]), column + 2
    return Node(f, column, "blob" if is_blob_2_0(f) else "leaf"), column + 1


def _is_binary(dt: pa.DataType) -> bool:
    return (pa.types.is_string(dt) or pa.types.is_binary(dt) or pa.types.is_large_string(dt)
            or pa.types.is_large_binary(dt))


@dataclass
class _Column:
    """One column's pages: buffers, lengths, first rows, encodings (parsed lazily)."""

    index: int
    where: str
    offsets: list
    sizes: list
    lengths: np.ndarray
    firsts: np.ndarray  # num_pages + 1 (the last = total rows)
    raw: list  # serialized Any per page
    blob: bool
    parsed: dict = field(default_factory=dict)

    @property
    def total(self) -> int:
        return int(self.firsts[-1])

    def encoding(self, p: int):
        enc = self.parsed.get(p)
        if enc is None:
            where = f"{self.where}, page {p}"
            tname, value = pb.unpack_any(self.raw[p], where)
            if tname != pb.e20.ArrayEncoding.DESCRIPTOR.full_name:
                raise CorruptFileError(f"{where}: page encoding is {tname!r}, a 2.0 file needs "
                                       f"lance.encodings.ArrayEncoding")
            enc = self.parsed[p] = pb.parse(pb.e20.ArrayEncoding, value, where)
        return enc


class FileColumns:
    """A 2.0 file's columns: the node tree of every field and its rows read out of
    the columns' pages."""

    def __init__(self, path: str, io, fields: list, num_rows: int, num_columns: int,
                 column_bytes):
        self.path = path
        self._io = io
        self._num_rows = num_rows
        self._column_bytes = column_bytes  # column index -> serialized ColumnMetadata
        self._cols: dict[int, _Column] = {}
        self.nodes, col = self._plan(fields)
        if col != num_columns:  # (strings in the older layout? see the module docstring)
            self._num_columns = num_columns
            self.nodes, col = self._plan(fields, self._is_list_column)
        if col != num_columns:
            raise CorruptFileError(f"file {path!r}: the schema needs {col} columns in a 2.0 "
                                   f"file, the footer says {num_columns}")
        self.columns_of = [n.column for n in self.nodes]

    @staticmethod
    def _plan(fields: list, is_list_column=None) -> tuple[list, int]:
        nodes, col = [], 0
        for lf in fields:
            node, col = plan_columns(lf.arrow, col, is_list_column)
            nodes.append(node)
        return nodes, col

    def _is_list_column(self, ci: int) -> bool:
        """Whether column ``ci``'s first page is a ``list`` page."""
        if ci >= self._num_columns:
            return False
        c = self.column(ci)
        return bool(len(c.lengths)) and c.encoding(0).WhichOneof("array_encoding") == "list"

    # -- metadata ------------------------------------------------------------
    def column(self, ci: int) -> _Column:
        c = self._cols.get(ci)
        if c is not None:
            return c
        where = f"file {self.path!r}, column {ci}"
        cm = pb.parse(file2_pb2.ColumnMetadata, self._column_bytes(ci), where)
        blob = False
        if cm.encoding.WhichOneof("location") == "direct" and cm.encoding.direct.encoding:
            tname, value = pb.unpack_any(cm.encoding.direct.encoding, where)
            if tname == pb.e20.ColumnEncoding.DESCRIPTOR.full_name:
                ce = pb.parse(pb.e20.ColumnEncoding, value, where)
                kind = ce.WhichOneof("column_encoding")
                if kind == "zone_index":
                    raise NotSupportedError(f"{where}: zone-indexed 2.0 columns")
                blob = kind == "blob"
        size = self._io.size()
        offs, sizes, lens, raw = [], [], [], []
        for p_i, page in enumerate(cm.pages):
            pwhere = f"{where}, page {p_i}"
            pb.check_page(page, size, pwhere)
            if page.length >= 1 << 40:
                raise CorruptFileError(f"{pwhere}: page length {page.length} is implausible")
            offs.append(list(page.buffer_offsets))
            sizes.append(list(page.buffer_sizes))
            lens.append(int(page.length))
            raw.append(page.encoding.direct.encoding)
        lengths = np.array(lens, np.int64)
        firsts = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lengths, out=firsts[1:])
        c = self._cols[ci] = _Column(ci, where, offs, sizes, lengths, firsts, raw, blob)
        return c

    def page_metadata(self, ci: int) -> list:
        """``[(buffers [(pos, size)], description, rows, ArrayEncoding)]`` of a column."""
        c = self.column(ci)
        out = []
        for p in range(len(c.lengths)):
            enc = c.encoding(p)
            out.append((list(zip(c.offsets[p], c.sizes[p])),
                        text_format.MessageToString(enc, as_one_line=True),
                        int(c.lengths[p]), enc))
        return out

    def all_columns(self) -> list[int]:
        out = []

        def walk(n):
            out.append(n.column)
            for ch in n.children:
                walk(ch)

        for n in self.nodes:
            walk(n)
        return out

    def _page(self, c: _Column, p: int) -> dec.Page:
        bufs = self._io.read_ranges(list(zip(c.offsets[p], c.sizes[p])))
        return dec.Page([np.frombuffer(b, np.uint8) for b in bufs], f"{c.where}, page {p}")

    def _expect(self, c: _Column, n: int) -> None:
        if c.total != n:
            raise CorruptFileError(f"{c.where}: pages hold {c.total} rows, {n} expected")

    # -- reading -------------------------------------------------------------
    def read_all(self, field_idx: int) -> pa.ChunkedArray:
        node = self.nodes[field_idx]
        if node.kind == "leaf":
            c = self.column(node.column)
            self._expect(c, self._num_rows)
            chunks = [dec.decode(c.encoding(p), self._page(c, p), int(c.lengths[p]),
                                 node.arrow.type) for p in range(len(c.lengths))]
            return pa.chunked_array(chunks, type=node.arrow.type)
        return pa.chunked_array([self._read(node, None, self._num_rows)], type=node.arrow.type)

    def read_rows(self, field_idx: int, rows: np.ndarray) -> pa.ChunkedArray:
        """``rows`` sorted ascending (duplicates allowed)."""
        node = self.nodes[field_idx]
        rows = np.ascontiguousarray(rows, np.int64)
        return pa.chunked_array([self._read(node, rows, self._num_rows)], type=node.arrow.type)

    def read_blob_descriptions(self, field_idx: int, rows: np.ndarray | None
                               ) -> pa.ChunkedArray:
        """A blob column's ``(position, size)`` descriptions at ``rows`` (sorted; None:
        every row) as stored, without reading the values: a null value reads as
        ``(1, 0)``, as pylance 14 returns it from 2.0 files."""
        node = self.nodes[field_idx]
        if node.kind != "blob":
            raise InvalidInputError(f"{self.path!r}: column {node.arrow.name!r} is not a "
                                    f"blob column")
        c = self.column(node.column)
        self._expect(c, self._num_rows)
        rows = None if rows is None else np.ascontiguousarray(rows, np.int64)
        desc = self._read_leaf(c, rows, BLOB_TYPE)
        if desc.null_count:
            raise CorruptFileError(f"{c.where}: null blob descriptors")
        return pa.chunked_array([desc], type=BLOB_TYPE)

    def read_range(self, field_idx: int, start: int, count: int) -> pa.ChunkedArray:
        """Rows ``[start, start + count)``."""
        node = self.nodes[field_idx]
        rows = range(int(start), int(start) + int(count))
        return pa.chunked_array([self._read(node, rows, self._num_rows)], type=node.arrow.type)

    def _read(self, node: Node, rows, n: int) -> pa.Array:
        """The values of ``node`` at ``rows``: None (all ``n``), a ``range``, or sorted
        row numbers (duplicates allowed)."""
        dt = node.arrow.type
        if node.kind == "struct":
            c = self.column(node.column)
            self._expect(c, n)
            kids = [self._read(ch, rows, n) for ch in node.children]
            if kids:
                return pa.StructArray.from_arrays(kids, fields=list(dt))
            return pa.Array.from_buffers(dt, n if rows is None else len(rows), [None],
                                         children=[])
        if node.kind == "list":
            return self._read_list(node, rows, n)
        if node.kind == "binary_list":
            return self._read_binary_list(node, rows, n)
        c = self.column(node.column)
        self._expect(c, n)
        if node.kind == "blob":
            return self._read_blob(c, rows, dt)
        return self._read_leaf(c, rows, dt)

    def _pages_of(self, c: _Column, rows):
        """``[(page, page-local rows)]`` for sorted ``rows`` (a range gives ranges)."""
        if isinstance(rows, range):
            if not len(rows):
                return []
            f = c.firsts
            p0 = int(np.searchsorted(f, rows.start, side="right")) - 1
            p1 = int(np.searchsorted(f, rows.stop - 1, side="right")) - 1
            out = []
            for p in range(max(p0, 0), min(p1, len(c.lengths) - 1) + 1):
                lo, hi = max(rows.start, int(f[p])), min(rows.stop, int(f[p + 1]))
                if hi > lo:
                    out.append((p, range(lo - int(f[p]), hi - int(f[p]))))
            return out
        page_of = np.searchsorted(c.firsts, rows, side="right") - 1
        cuts = np.flatnonzero(np.diff(page_of)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(rows)]])
        return [(int(page_of[s]), rows[s:e] - c.firsts[page_of[s]])
                for s, e in zip(starts.tolist(), ends.tolist()) if e > s]

    def _read_leaf(self, c: _Column, rows, dt) -> pa.Array:
        if rows is None:
            chunks = [dec.decode(c.encoding(p), self._page(c, p), int(c.lengths[p]), dt)
                      for p in range(len(c.lengths))]
        else:
            chunks = []
            for p, local in self._pages_of(c, rows):
                if isinstance(local, range) and len(local) == int(c.lengths[p]):
                    chunks.append(dec.decode(c.encoding(p), self._page(c, p), len(local), dt))
                    continue
                if isinstance(local, range):
                    local = np.arange(local.start, local.stop, dtype=np.int64)
                chunks.append(ranges.take(self._io, c, p, local, dt, self._page))
        if not chunks:
            return pa.array([], dt)
        return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)

    def _list_offsets(self, c: _Column, p: int):
        """Page ``p``'s ``(offsets[n + 1] from 0, validity or None)``, page-local."""
        enc = c.encoding(p)
        where = f"{c.where}, page {p}"
        lst = enc.list
        n = int(c.lengths[p])
        ends = dec.uint_values(lst.offsets, self._page(c, p), n)
        adj = int(lst.null_offset_adjustment)
        num_items = int(lst.num_items)
        offsets = np.empty(n + 1, np.int64)
        offsets[0] = 0
        offsets[1:] = ends  # (a u64 over 2^63 turns negative: caught below)
        valid = None
        if adj > 0:
            null = offsets[1:] >= adj
            if null.any():
                valid = ~null
                offsets[1:][null] -= adj
        if n and (np.any(offsets[1:] < offsets[:-1]) or int(offsets[-1]) > num_items):
            raise CorruptFileError(f"{where}: list offsets go backwards or past the page's "
                                   f"{num_items} items")
        return offsets, valid

    def _list_pages(self, c: _Column):
        """Items before each page (every page's ``num_items``, from its description)."""
        bases = np.zeros(len(c.lengths) + 1, np.int64)
        for p in range(len(c.lengths)):
            enc = c.encoding(p)
            if enc.WhichOneof("array_encoding") != "list":
                raise CorruptFileError(f"{c.where}, page {p}: a list column page encoded as "
                                       f"{enc.WhichOneof('array_encoding')}")
            if enc.list.num_items >= 1 << 48:
                raise CorruptFileError(f"{c.where}, page {p}: {enc.list.num_items} list items "
                                       f"is implausible")
            bases[p + 1] = bases[p] + int(enc.list.num_items)
        return bases

    def _read_list(self, node: Node, rows, n: int) -> pa.Array:
        dt = node.arrow.type
        c = self.column(node.column)
        self._expect(c, n)
        bases = self._list_pages(c)
        total_items = int(bases[-1])
        child = node.children[0]
        if isinstance(rows, np.ndarray):
            count, item_offsets, valid, items = self._list_take(c, child, rows, bases)
        else:
            # all rows or a range: each page's offsets are a run of the result's
            pages = ([(p, range(int(c.lengths[p]))) for p in range(len(c.lengths))]
                     if rows is None else self._pages_of(c, rows))
            segs, valids, runs = [], [], True
            for p, local in pages:
                got = None
                if len(local) < int(c.lengths[p]):
                    got = ranges.list_offsets(self._io, c, p, np.arange(local.start, local.stop))
                if got is not None:
                    s, e, v = got
                    runs = runs and bool(np.array_equal(s[1:], e[:-1]))
                    offs = np.concatenate([s[:1], e])
                else:
                    offs, v = self._list_offsets(c, p)
                    offs = offs[local.start:local.stop + 1]
                    v = None if v is None else v[local.start:local.stop]
                offs = offs + bases[p]
                runs = runs and (not segs or int(offs[0]) == int(segs[-1][-1]))
                segs.append(offs)
                valids.append(v if v is not None else np.ones(len(offs) - 1, bool))
            count = sum(len(x) - 1 for x in segs)
            valid = np.concatenate(valids) if valids else np.zeros(0, bool)
            if not runs:
                starts = np.concatenate([x[:-1] for x in segs])
                ends = np.concatenate([x[1:] for x in segs])
                item_offsets, items = self._gather_items(c, child, starts, ends, total_items)
            elif count == 0:
                item_offsets = np.zeros(1, np.int64)
                items = self._read(child, range(0), total_items)
            else:
                item_offsets = segs[0] if len(segs) == 1 else np.concatenate(
                    [segs[0]] + [x[1:] for x in segs[1:]])
                first, last = int(item_offsets[0]), int(item_offsets[-1])
                if first < 0 or last > total_items:
                    raise CorruptFileError(f"{c.where}: list items fall outside the column's "
                                           f"{total_items} items")
                whole = first == 0 and last == total_items
                items = self._read(child, None if whole else range(first, last), total_items)
                if first:
                    item_offsets = item_offsets - first
        large = pa.types.is_large_list(dt)
        if not large and int(item_offsets[-1]) > np.iinfo(np.int32).max:
            raise NotSupportedError(f"{c.where}: more than 2^31 list items in one read")
        offs = item_offsets if large else item_offsets.astype(np.int32)
        vbuf = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return pa.Array.from_buffers(dt, count, [vbuf, pa.py_buffer(offs)], children=[items])

    def _read_binary_list(self, node: Node, rows, n: int) -> pa.Array:
        """A string/binary field of the older layout: read as ``list<u8>``, returned
        as its type (same offsets and validity, the items as the values)."""
        dt = node.arrow.type
        large = pa.types.is_large_string(dt) or pa.types.is_large_binary(dt)
        as_list = (pa.large_list if large else pa.list_)(pa.field("item", pa.uint8()))
        lst = self._read_list(Node(node.arrow.with_type(as_list), node.column, "list",
                                   node.children), rows, n)
        items = lst.values
        if items.null_count:
            raise CorruptFileError(f"file {self.path!r}, column {node.column + 1}: null bytes "
                                   f"in the values of {node.arrow.name!r}")
        data = items.buffers()[1]
        if data is not None and items.offset:
            data = data.slice(items.offset)
        out = pa.Array.from_buffers(dt, len(lst), [lst.buffers()[0], lst.buffers()[1], data],
                                    offset=lst.offset)
        if pa.types.is_string(dt) or pa.types.is_large_string(dt):
            try:
                out.validate(full=True)
            except pa.ArrowInvalid as e:
                raise CorruptFileError(f"file {self.path!r}, column {node.column + 1}: "
                                       f"{node.arrow.name!r} holds invalid strings: {e}") from e
        return out

    def _list_take(self, c: _Column, child: Node, rows: np.ndarray, bases: np.ndarray):
        starts_l, ends_l, valid_l = [], [], []
        for p, local in self._pages_of(c, rows):
            got = ranges.list_offsets(self._io, c, p, local)
            if got is not None:
                s, e, v = got
            else:
                offs, v = self._list_offsets(c, p)
                s, e = offs[local], offs[local + 1]
                v = None if v is None else v[local]
            starts_l.append(s + bases[p])
            ends_l.append(e + bases[p])
            valid_l.append(np.ones(len(s), bool) if v is None else v)
        starts = np.concatenate(starts_l) if starts_l else np.zeros(0, np.int64)
        ends = np.concatenate(ends_l) if ends_l else np.zeros(0, np.int64)
        valid = np.concatenate(valid_l) if valid_l else np.zeros(0, bool)
        item_offsets, items = self._gather_items(c, child, starts, ends, int(bases[-1]))
        return len(starts), item_offsets, valid, items

    def _gather_items(self, c: _Column, child: Node, starts, ends, total_items: int):
        """The items ``[starts[i], ends[i])`` back to back, and their offsets."""
        lens = ends - starts
        tot = int(lens.sum())
        idx = np.empty(tot, np.int64)
        if slices.expand_ranges(starts, ends, total_items, idx) != tot:
            raise CorruptFileError(f"{c.where}: list items fall outside the column's "
                                   f"{total_items} items")
        items = self._read(child, idx, total_items)
        item_offsets = np.zeros(len(starts) + 1, np.int64)
        np.cumsum(lens, out=item_offsets[1:])
        return item_offsets, items

    def _read_blob(self, c: _Column, rows, dt) -> pa.Array:
        desc = self._read_leaf(c, rows, BLOB_TYPE)
        if desc.null_count:
            raise CorruptFileError(f"{c.where}: null blob descriptors")
        pos = np.asarray(desc.field(0)).astype(np.int64)
        size = np.asarray(desc.field(1)).astype(np.int64)
        null = (pos == 1) & (size == 0)
        fsize = self._io.size()
        if np.any((pos < 0) | (size < 0) | (pos > fsize - size)):
            bad = int(np.flatnonzero((pos < 0) | (size < 0) | (pos > fsize - size))[0])
            raise CorruptFileError(f"{c.where}: blob {bad} at offset {int(pos[bad])} with size "
                                   f"{int(size[bad])} lies outside the file ({fsize} bytes)")
        take = size > 0
        offsets = np.zeros(len(pos) + 1, np.int64)
        np.cumsum(size, out=offsets[1:])
        data = np.empty(int(offsets[-1]), np.uint8)
        if take.any():
            buf, at = self._io.read_ranges_np(pos[take], size[take])
            if slices.concat_slices(buf, at, size[take], data) != slices.OK:
                raise CorruptFileError(f"{c.where}: blob bytes outside what was read")
        return dec.variable_array(dt, offsets, data, ~null if null.any() else None)


class V20Backend:
    """Reads 2.0 files (:class:`lancenb.file.backend.FileBackend`): a facade over
    :class:`FileColumns` with the container's metadata."""

    # 2.0 columns decode on the facade's pool for scans, and for takes of more rows
    # than this
    parallel_scan_rows = 0
    parallel_take_rows = 4097

    def __init__(self, path: str, io, container: Container):
        self.path, self.io, self.version = path, io, FileVersion.V2_0
        self._c = container
        self.schema_full, self.fields = container.schema_full, container.fields
        self.num_rows = container.num_rows
        self._cols = FileColumns(path, io, self.fields, self.num_rows, container.num_columns,
                                 container.column_bytes)
        self.columns_of = self._cols.columns_of

    def metadata(self) -> LanceFileMetadata:
        cols = [LanceColumnMetadata([], [
            LancePageMetadata([LanceBufferDescriptor(o, z) for o, z in bufs], desc, rows, enc)
            for bufs, desc, rows, enc in self._cols.page_metadata(ci)])
            for ci in self._cols.all_columns()]
        return self._c.file_metadata(self.version, cols)

    def read_global_buffer(self, index: int) -> bytes:
        return self.io.read(*self._c.global_buffer_range(index))

    def read_many(self, field_idxs, rows) -> list[pa.ChunkedArray]:
        return [self.read(i, rows) for i in field_idxs]

    def read(self, field_idx: int, rows) -> pa.ChunkedArray:
        if rows is None:
            return self._cols.read_all(field_idx)
        if isinstance(rows, range):
            return self._cols.read_range(field_idx, rows.start, len(rows))
        return self._cols.read_rows(field_idx, rows)

    def read_blob_descriptions(self, field_idx: int, rows) -> pa.ChunkedArray:
        return self._cols.read_blob_descriptions(field_idx, rows)

    def prepare_take(self, field_idx: int) -> None:
        """Nothing to load: 2.0 pages are read by position directly."""

    def _by_page(self, *_):
        raise NotSupportedError(f"{self.path!r}: 2.0 columns decode whole, not page by page")

    leaf_columns = column_pages = decode_page = _by_page

    def column_metadata_position(self, ci: int) -> int:
        return int(self._c.cmo[ci, 0])

    def search_cache_memory(self) -> dict[str, int]:
        return {}

    def page_statistics(self, **_):
        return None


class V20Writer:
    """Writes the columns of a 2.0 file (:class:`lancenb.file.writer.WriterBackend`):
    the column writers of :mod:`lancenb.encodings.v2_0.writing`, one per field in
    schema pre-order."""

    def __init__(self, schema: pa.Schema, write_buffer, *, data_cache_bytes: int | None,
                 max_page_bytes: int | None):
        self.fields_pb, _ = schema_to_fields(schema)  # checks every type is storable
        self._w = FileWriter(schema, write_buffer, data_cache_bytes=data_cache_bytes,
                             max_page_bytes=max_page_bytes)
        self.columns = self._w.columns

    def write(self, batch: pa.RecordBatch) -> None:
        self._w.write(batch)

    def finish(self) -> None:
        self._w.finish()
