"""``LanceFileReader``: read a Lance 2.0/2.1/2.2 file, whole, by range or by row."""

from __future__ import annotations

import bisect
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancenb import io as lio
from lancenb._proto import file2_pb2, file_pb2
from lancenb.encodings import pb
from lancenb.encodings.cache import SearchCache, scanning
from lancenb.encodings.config import is_packed
from lancenb.encodings.page import PageDecoder, PageInfo, describe_layout, parse_layout
from lancenb.encodings.physical import fsl
from lancenb.encodings.structural import dictarray, repdef
from lancenb.encodings.structural.blob import DESCRIPTION_V1
from lancenb.encodings.v2_0 import FileColumns as _FileColumns2_0
from lancenb.errors import (
    CorruptFileError,
    InvalidInputError,
    LanceIOError,
    NotSupportedError,
)
from lancenb.file.columns import columns_per_field
from lancenb.file.format import FOOTER_SIZE, Footer, parse_offset_table
from lancenb.file.schema import fields_to_schema
from lancenb.file.version import FileVersion, version_from_footer
from lancenb.io.pools import ThreadPool

__all__ = ["LanceFileReader", "ReaderResults", "LanceFileMetadata", "LanceColumnMetadata",
           "LancePageMetadata", "LanceBufferDescriptor"]

# one decode pool per process, started on first use (starting threads costs
# milliseconds) and started anew in a forked child (lancenb.io.pools)
_POOL = ThreadPool(lambda: os.cpu_count() or 1, "lancenb-decode")


def _stored(f) -> tuple[pa.DataType, int]:
    """``(the type a field's columns encode, their entries per row)``: maps as their
    list layout; a fixed-size list of structs as its items (2.2, see
    :func:`lancenb.encodings.physical.fsl.struct_items`)."""
    items = fsl.struct_items(f.storage.type)
    return items if items is not None else (f.storage.type, 1)


def _pool() -> ThreadPoolExecutor:
    """The decode pool (kernels release the GIL, so columns decode in parallel)."""
    return _POOL.get()


# Full scans read and decode mini-block pages in pieces of about this many bytes.
SCAN_PIECE_BYTES = 1 << 20

# read_range scans a page (and slices it) when the range covers at least this
# fraction of its rows, (numerator, denominator) for flat and for nested pages;
# below it, rows are read by position.
RANGE_SCAN_FRACTION = ((1, 4), (3, 4))

# The first read takes this much of the file's tail: enough for the footer and, for
# most files, every piece of metadata, so that opening costs one request.
TAIL_READ_BYTES = 64 * 1024


def project(schema_full: pa.Schema, columns: list[str] | None, path: str):
    """``(top-level field indices, projected schema)`` for the ``columns`` a reader
    was asked for (all when None); unknown names raise :class:`InvalidInputError`."""
    names = schema_full.names
    if columns is None:
        projection = list(range(len(names)))
    else:
        missing = [c for c in columns if c not in names]
        if missing:
            raise InvalidInputError(f"{path!r}: no column(s) {missing}; the file has {names}")
        projection = [names.index(c) for c in columns]
    return projection, pa.schema([schema_full.field(i) for i in projection],
                                 metadata=schema_full.metadata)


def check_range(path: str, start, num_rows, total: int) -> tuple[int, int]:
    """``(start, num_rows)`` as ints, refused unless the range lies in the file's rows."""
    start, num_rows = int(start), int(num_rows)
    if start < 0 or num_rows < 0 or start + num_rows > total:
        raise InvalidInputError(f"{path!r}: range [{start}, {start + num_rows}) is outside "
                                f"the file's {total} rows")
    return start, num_rows


# the data files of a dataset share their schema: it is rebuilt once per distinct
# schema message, not once per file opened (a scan of thousands of small fragments)
_SCHEMA_CACHE: dict[bytes, tuple] = {}
_SCHEMA_CACHE_SIZE = 64
_SCHEMA_LOCK = threading.Lock()


def _file_schema(schema_pb) -> tuple:
    """``fields_to_schema`` of a file's schema message, memoised by its bytes (the
    results are not mutated by readers)."""
    return cached_fields_to_schema(schema_pb.fields, schema_pb.metadata,
                                   schema_pb.SerializeToString(deterministic=True))


def cached_fields_to_schema(fields, metadata, key: bytes | None = None) -> tuple:
    """:func:`lancenb.file.schema.fields_to_schema`, memoised by the fields' serialized
    bytes (``key``, else each field's bytes and the metadata): a dataset opened again
    and again, or thousands of data files, rebuild a wide schema once."""
    if key is None:
        key = b"\0".join([f.SerializeToString(deterministic=True) for f in fields]) + \
            repr(sorted((k, bytes(v)) for k, v in (metadata or {}).items())).encode()
    hit = _SCHEMA_CACHE.get(key)
    if hit is not None:
        return hit
    hit = fields_to_schema(fields, metadata)
    with _SCHEMA_LOCK:
        if len(_SCHEMA_CACHE) >= _SCHEMA_CACHE_SIZE:
            _SCHEMA_CACHE.pop(next(iter(_SCHEMA_CACHE)), None)
        _SCHEMA_CACHE[key] = hit
    return hit


def _field_position(reader, field) -> int:
    """A top-level field's position from its name or position (names memoised)."""
    if isinstance(field, (int, np.integer)):
        i = int(field)
        if not 0 <= i < len(reader._fields):
            raise InvalidInputError(f"{reader.path!r}: no field {i} (the file has "
                                    f"{len(reader._fields)})")
        return i
    index = reader.__dict__.get("_name_index")
    if index is None:
        index = {}
        for i, f in enumerate(reader._fields):
            index.setdefault(f.name, i)
        reader._name_index = index
    try:
        return index[field]
    except KeyError:
        raise InvalidInputError(f"{reader.path!r}: no column {field!r}; the file has "
                                f"{[f.name for f in reader._fields]}") from None


def _field_at_column(columns_of: list[int], column: int) -> int | None:
    """The first top-level field whose first column is at or after ``column``."""
    i = bisect.bisect_left(columns_of, column)
    return i if i < len(columns_of) else None


class _WholeFile:
    """A small file's bytes, all read when it was opened (the tail read took it whole):
    page reads are served from memory, without a request or a copy per page. Other
    attributes (``stats``, ``uri``, ``close``...) are the underlying reader's."""

    def __init__(self, io, data: bytes):
        self._inner = io
        self._data = data
        self._arr = np.frombuffer(data, dtype=np.uint8)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def size(self) -> int:
        return len(self._data)

    def _check(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > len(self._data):
            raise LanceIOError(f"{self._inner.uri!r}: read of {length} bytes at offset "
                               f"{offset} is outside the file ({len(self._data)} bytes)")

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        self._inner._count(length)
        return self._data[offset:offset + length]

    def read_ranges(self, ranges) -> list[memoryview]:
        view = memoryview(self._data)
        out = []
        for off, n in ranges:
            self._check(off, n)
            out.append(view[off:off + n])
        if out:
            self._inner._count(sum(len(v) for v in out))
        return out

    def read_ranges_np(self, offsets: np.ndarray, lengths: np.ndarray):
        # a view of the file from the first range's start to the last one's end (as
        # RangeReader's merged reads, gaps included): no copy
        offsets = np.asarray(offsets, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(offsets) == 0:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64)
        bad = (offsets < 0) | (lengths < 0) | (offsets + lengths > len(self._data))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self._check(int(offsets[i]), int(lengths[i]))
        self._inner._count(int(lengths.sum()))
        lo = int(offsets.min())
        return self._arr[lo:int((offsets + lengths).max())], offsets - lo


class ReaderResults:
    """The rows a read produced, as a Table or a stream of batches."""

    def __init__(self, table: pa.Table, batch_size: int):
        self._table = table
        self._batch_size = batch_size

    def to_table(self) -> pa.Table:
        return self._table

    def to_batches(self) -> pa.RecordBatchReader:
        """Batches of ``batch_size`` rows (the last may be shorter)."""
        t, bs = self._table, max(1, self._batch_size)

        def gen():
            for i in range(0, t.num_rows, bs):
                part = t.slice(i, bs)
                # a batch spanning two pages needs its chunks joined (a copy of that batch)
                if any(c.num_chunks > 1 for c in part.columns):
                    part = dictarray.combine_chunks(part)
                yield from part.to_batches()

        return pa.RecordBatchReader.from_batches(t.schema, gen())


@dataclass(frozen=True)
class LanceBufferDescriptor:
    """Where a buffer sits in the file."""

    position: int
    size: int


@dataclass(frozen=True)
class LancePageMetadata:
    """One page: its buffers and a compact description of its encoding (for example
    ``mini_block:variable(flat(32))``); ``layout`` is the decoded protobuf."""

    buffers: list
    encoding: str
    num_rows: int
    layout: object = None


@dataclass(frozen=True)
class LanceColumnMetadata:
    column_buffers: list
    pages: list


@dataclass(frozen=True)
class LanceFileMetadata:
    """What the file's metadata says (the fields of pylance's ``LanceFileMetadata``)."""

    schema: pa.Schema
    num_rows: int
    num_data_bytes: int
    num_column_metadata_bytes: int
    num_global_buffer_bytes: int
    major_version: int
    minor_version: int
    global_buffers: list
    columns: list


class LanceFileReader:
    """Read a Lance file (same surface as pylance's ``lance.file.LanceFileReader``).

    Opening reads the footer and every piece of metadata in one request (two when
    the metadata is larger than 64 KiB). Only the projected ``columns`` are decoded.
    """

    def __init__(self, path, storage_options: dict | None = None,
                 columns: list[str] | None = None, *, _io=None):
        # ``_io``: an open RangeReader (a dataset opens its data files through its
        # own filesystem object; ``path`` then only names the file in messages)
        self.path = os.fspath(path)
        self._io = _io if _io is not None else lio.open_reader(self.path, storage_options)
        size = self._io.size()
        if size < FOOTER_SIZE:
            raise CorruptFileError(f"file {self.path!r}: {size} bytes is too small to be a Lance "
                                   f"file (the footer alone is {FOOTER_SIZE})")
        tail_start = max(0, size - TAIL_READ_BYTES)
        tail = self._io.read(tail_start, size - tail_start)
        footer = Footer.parse(tail, size, self.path)
        self.version = version_from_footer(footer.major, footer.minor, self.path)
        if self.version is FileVersion.LEGACY:
            # a 0.1 file has another container altogether: this object becomes a
            # LegacyFileReader (same read surface), so one class opens every version
            from lancenb.file.legacy import LegacyFileReader

            self.__class__ = LegacyFileReader
            LegacyFileReader.__init__(self, path, storage_options, columns, _io=self._io)
            return
        if tail_start == 0 and isinstance(self._io, lio.RangeReader):
            self._io = _WholeFile(self._io, tail)
        gbo = parse_offset_table(
            self._slice(tail, tail_start, footer.gbo_position, 16 * footer.num_global_buffers),
            footer.num_global_buffers, footer.cmo_position, "global buffer", self.path)
        cmo = parse_offset_table(
            self._slice(tail, tail_start, footer.cmo_position, 16 * footer.num_columns),
            footer.num_columns, footer.cmo_position, "column metadata", self.path)
        self._gbo = gbo
        # everything from the schema buffer to the end; a second read if the tail missed it
        need_from = min(int(gbo[0, 0]), footer.column_meta_start)
        if need_from < tail_start:
            head = self._io.read(need_from, tail_start - need_from)
            tail = head + tail
            tail_start = need_from
        self._meta = memoryview(tail)
        self._meta_start = tail_start
        desc = pb.parse(file_pb2.FileDescriptor,
                        self._slice(tail, tail_start, int(gbo[0, 0]), int(gbo[0, 1])),
                        f"file {self.path!r}: schema (global buffer 0)")
        self._num_rows = int(desc.length)
        self.schema_full, self._fields = _file_schema(desc.schema)
        self._cmo = cmo
        self._leaves_of: dict[int, list] = {}
        self._v20 = None  # 2.0 files: one column per field (lancenb.encodings.v2_0)
        if self.version is FileVersion.V2_0:
            self._v20 = _FileColumns2_0(
                self.path, self._io, self._fields, self._num_rows, footer.num_columns,
                lambda ci: self._slice(self._meta, self._meta_start, int(cmo[ci, 0]),
                                       int(cmo[ci, 1])))
            self._columns_of = self._v20.columns_of
        else:
            self._columns_of = self._leaf_columns(footer.num_columns)
        self._projection, self.schema = project(self.schema_full, columns, self.path)
        self._decoders: dict[int, list[PageDecoder]] = {}
        # random access: chunk tables, dictionaries and repetition indices of every
        # column, loaded when a column is first taken from (see _initialise)
        self._search_cache = SearchCache()
        self._initialised: set[int] = set()
        self._init_lock = threading.Lock()

    # -- metadata ------------------------------------------------------------
    def _slice(self, buf: bytes, buf_start: int, pos: int, size: int) -> bytes:
        if pos < buf_start or pos + size > buf_start + len(buf):
            raise CorruptFileError(f"file {self.path!r}: metadata at {pos} (+{size}) is outside "
                                   f"the metadata region")
        return buf[pos - buf_start: pos - buf_start + size]

    def _leaf_columns(self, num_columns: int) -> list[int]:
        """Top-level field index -> its (single, for flat types) column index."""
        out = []
        col = 0
        # the one field-to-column mapping (lancenb.file.columns): leaves own columns,
        # packed and blob v2 structs one column each
        for n in columns_per_field(self._fields, self.version):
            out.append(col)
            col += n
        if col != num_columns:
            inside = [f.name for f in self._fields if fsl.struct_items_inside(f.storage.type)]
            if inside:
                raise NotSupportedError(f"file {self.path!r}: column {inside[0]!r} holds a "
                                        f"fixed-size list of structs inside a struct or list "
                                        f"(not supported yet)")
            raise CorruptFileError(f"file {self.path!r}: the schema needs {col} columns, the "
                                   f"footer says {num_columns}")
        return out

    def _leaves(self, field_idx: int):
        """``[(column index, path, leaf name)]`` of a top-level field's columns."""
        hit = self._leaves_of.get(field_idx)
        if hit is None:
            hit = self._leaves_of[field_idx] = self._find_leaves(field_idx)
        return hit

    def _find_leaves(self, field_idx: int):
        f = self._fields[field_idx]
        ci = self._columns_of[field_idx]
        if fsl.struct_items_inside(f.storage.type):  # (its pages count items of those)
            raise NotSupportedError(f"file {self.path!r}: column {f.name!r} holds a fixed-size "
                                    f"list of structs inside a struct or list (not supported "
                                    f"yet)")
        st = _stored(f)[0]
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

    def _column_meta(self, field_idx: int, ci: int | None = None, name: str | None = None):
        """``(where, [(PageInfo, encoding bytes)])`` of a leaf field's column, checked."""
        f = self._fields[field_idx]
        if ci is None:
            ci = self._columns_of[field_idx]
        pos, size = int(self._cmo[ci, 0]), int(self._cmo[ci, 1])
        where = f"file {self.path!r}, column {ci} ({name or f.name!r})"
        cm = pb.parse(file2_pb2.ColumnMetadata, self._slice(self._meta, self._meta_start, pos,
                                                            size), where)
        pages = []
        row = 0
        for p_i, page in enumerate(cm.pages):
            pwhere = f"{where}, page {p_i}"
            pb.check_page(page, self._io.size(), pwhere)
            info = PageInfo(list(page.buffer_offsets), list(page.buffer_sizes), int(page.length),
                            row)
            pages.append((info, page.encoding.direct.encoding, pwhere))
            row += int(page.length)
        if row != self._num_rows * _stored(f)[1]:
            raise CorruptFileError(f"{where}: pages hold {row} rows, the file has "
                                   f"{self._num_rows}")
        return pages

    def _column_pages(self, field_idx: int) -> list[PageDecoder]:
        """Page decoders of the field's (first) column."""
        return self._leaf_pages(field_idx)[0]

    def _leaf_pages(self, field_idx: int) -> list[list[PageDecoder]]:
        """Page decoders of each of the field's columns (one per leaf)."""
        if field_idx in self._decoders:
            return self._decoders[field_idx]
        f = self._fields[field_idx]
        out = []
        for ci, path, name in self._leaves(field_idx):
            if path is None:
                leaf_t, chain = f.storage.type, None
            else:
                chain = repdef.chain_type(_stored(f)[0], path)
                leaf_t = repdef.leaf_field(_stored(f)[0], path)
            decs = [PageDecoder(enc, info, leaf_t, where, chain, file_size=self._io.size())
                    for info, enc, where in self._column_meta(field_idx, ci, name)]
            for p_i, d in enumerate(decs):
                d.attach_cache(self._search_cache, (ci, p_i))
            out.append(decs)
        self._decoders[field_idx] = out
        return out

    def metadata(self) -> LanceFileMetadata:
        """Schema, sizes and every column's pages (decodes all column metadata)."""
        cols = []
        for ci in (self._v20.all_columns() if self._v20 is not None else []):
            cols.append(LanceColumnMetadata([], [
                LancePageMetadata([LanceBufferDescriptor(o, z) for o, z in bufs], desc, rows,
                                  enc) for bufs, desc, rows, enc in self._v20.page_metadata(ci)]))
        for i in range(len(self._fields) if self._v20 is None else 0):
            for ci, _, name in self._leaves(i):
                pages = []
                for info, enc, where in self._column_meta(i, ci, name):
                    layout = parse_layout(enc, where)
                    pages.append(LancePageMetadata(
                        [LanceBufferDescriptor(o, z) for o, z in zip(info.offsets, info.sizes)],
                        describe_layout(layout), info.num_rows, layout))
                cols.append(LanceColumnMetadata([], pages))
        gbs = [LanceBufferDescriptor(int(p), int(z)) for p, z in self._gbo]
        major, minor = self.version.footer
        return LanceFileMetadata(
            schema=self.schema_full, num_rows=self._num_rows,
            # as pylance counts it: everything before the schema except user global buffers
            num_data_bytes=int(self._gbo[0, 0] - self._gbo[1:, 1].sum()),
            num_column_metadata_bytes=int(self._cmo[:, 1].sum()) + 16 * len(self._cmo),
            num_global_buffer_bytes=int(self._gbo[:, 1].sum()),
            major_version=major, minor_version=minor, global_buffers=gbs, columns=cols)

    def num_rows(self) -> int:
        return self._num_rows

    def read_global_buffer(self, index: int) -> bytes:
        if not 0 <= index < len(self._gbo):
            raise InvalidInputError(f"{self.path!r}: no global buffer {index} (the file has "
                                    f"{len(self._gbo)})")
        pos, size = map(int, self._gbo[index])
        return self._io.read(pos, size)

    # -- public column access: what the dataset layer and inspect use -----------
    @property
    def fields(self) -> list:
        """The file's top-level fields (:class:`lancenb.file.schema.LanceField`: name,
        field id, Arrow field, children), in schema order."""
        return self._fields

    def field_index(self, field) -> int:
        """The position of a top-level field, given its name or position."""
        return _field_position(self, field)

    def field_at_column(self, column: int) -> int | None:
        """The top-level field whose columns start at or after ``column`` first (the
        field a data file's ``column_indices`` entry names), None past the last."""
        return _field_at_column(self._columns_of, column)

    def read_column(self, field, *, rows=None, range=None) -> pa.ChunkedArray:
        """One top-level field's values: every row (default), ``rows`` (row numbers
        sorted ascending, duplicates allowed) or ``range=(start, num_rows)``."""
        i = self.field_index(field)
        if rows is not None:
            return self._read_column_rows(i, np.asarray(rows, dtype=np.int64).reshape(-1))
        if range is not None:
            start, n = check_range(self.path, range[0], range[1], self._num_rows)
            return self._read_column_range(i, start, n)
        return self._read_column_all(i)

    def read_blob_descriptions(self, field, *, rows=None) -> pa.ChunkedArray:
        """A top-level blob v1 column's ``(position, size)`` descriptions, every row or
        ``rows`` (sorted ascending), without reading the blob values."""
        rows = None if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
        return self._read_blob_descriptions(self.field_index(field), rows)

    def prepare_take(self, fields=None) -> None:
        """Load what random access to ``fields`` (default: the projected ones) needs:
        chunk tables, dictionaries, repetition indices, in one coalesced read each."""
        for f in (self._projection if fields is None else fields):
            i = self.field_index(f)
            if self._v20 is None:
                self._initialise(i)

    def leaf_columns(self, field) -> list[tuple[int, str]]:
        """``[(column index, leaf name)]`` of a top-level field (2.1+ files, whose
        pages decode one by one)."""
        i = self.field_index(field)
        if self._v20 is not None:
            raise NotSupportedError(f"{self.path!r}: 2.0 columns decode whole, not by page")
        return [(ci, name) for ci, _, name in self._leaves(i)]

    def column_metadata_position(self, column: int) -> int:
        """Where a column's metadata starts in the file."""
        return int(self._cmo[column, 0])

    def column_pages(self, field, column: int) -> list:
        """The checked pages of one of a field's columns: ``[(PageInfo, encoding bytes,
        where)]``; a :class:`CorruptFileError` when the metadata is damaged."""
        i = self.field_index(field)
        name = dict(self.leaf_columns(i))[column]
        return self._column_meta(i, column, name)

    def decode_page(self, field, column: int, page) -> list[pa.Array]:
        """Decode one page (an entry of :meth:`column_pages`) whole, in pieces."""
        i = self.field_index(field)
        f = self._fields[i]
        path = next(p for ci, p, _ in self._leaves(i) if ci == column)
        st = f.storage.type
        if path is None:
            leaf_t, chain = st, None
        else:
            chain, leaf_t = repdef.chain_type(st, path), repdef.leaf_field(st, path)
        info, enc, where = page
        d = PageDecoder(enc, info, leaf_t, where, chain, file_size=self._io.size())
        return d.scan(self._io)

    def page_statistics(self, **kwargs):
        """Statistics pages: only legacy (0.1) files have them; None here."""
        return None

    # -- data ----------------------------------------------------------------
    def _merge(self, field_idx: int, columns: list[list[pa.Array]]) -> pa.ChunkedArray:
        """One field's array from its columns' arrays (leaves of nested fields joined)."""
        f = self._fields[field_idx]
        st, per_row = _stored(f)  # (maps: the lists of entries they are stored as)
        if len(columns) == 1 and (not repdef.is_nested(st) or is_packed(f.arrow)):
            return pa.chunked_array(columns[0], type=f.arrow.type)
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

    def _read_column_all(self, field_idx: int) -> pa.ChunkedArray:
        if self._v20 is not None:
            return self._v20.read_all(field_idx)
        # page by page, in pieces: peak memory is the result plus one piece's bytes;
        # a scan leaves the search cache alone
        with scanning():
            return self._merge(field_idx, [[a for d in decs for a in d.scan(
                self._io, SCAN_PIECE_BYTES)] for decs in self._leaf_pages(field_idx)])

    def _initialise(self, field_idx: int) -> None:
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
            bufs = self._io.read_ranges(flat) if flat else []
            i = 0
            for d, rs in zip(decs, ranges):
                if rs:
                    d.init_from(bufs[i:i + len(rs)])
                i += len(rs)
            self._initialised.add(field_idx)

    def search_cache_memory(self) -> dict[str, int]:
        """Bytes the search cache holds per column (leaf column names, e.g. ``s.x``)."""
        by_ci = self._search_cache.memory_by_column()
        out = {}
        for i in range(len(self._fields) if self._v20 is None else 0):
            for ci, _, name in self._leaves(i):
                if ci in by_ci:
                    out[name] = by_ci[ci]
        return out

    def _read_column_rows(self, field_idx: int, rows: np.ndarray) -> pa.ChunkedArray:
        """``rows`` sorted ascending (duplicates allowed)."""
        if self._v20 is not None:
            return self._v20.read_rows(field_idx, rows)
        self._initialise(field_idx)
        d = _stored(self._fields[field_idx])[1]
        if d > 1:  # columns of d items a row
            rows = (rows[:, None] * d + np.arange(d, dtype=np.int64)).reshape(-1)
        columns = []
        for decs in self._leaf_pages(field_idx):
            if len(decs) == 1:
                columns.append([decs[0].read_rows(self._io, rows)])
                continue
            firsts = np.array([p.page.first_row for p in decs] + [self._num_rows * d],
                              dtype=np.int64)
            page_of = np.searchsorted(firsts, rows, side="right") - 1
            parts = []
            for p in np.unique(page_of):
                sel = rows[page_of == p] - firsts[p]
                parts.append(decs[int(p)].read_rows(self._io, sel))
            columns.append(parts)
        return self._merge(field_idx, columns)

    def _read_blob_descriptions(self, field_idx: int, rows: np.ndarray | None = None
                                ) -> pa.ChunkedArray:
        """A top-level blob v1 column's ``(position, size)`` descriptions
        (:data:`~lancenb.encodings.structural.blob.DESCRIPTION_V1`), every row or
        ``rows`` (sorted), without reading the values (the blob API reads them)."""
        if self._v20 is not None:
            return self._v20.read_blob_descriptions(field_idx, rows)
        decs = self._column_pages(field_idx)
        if rows is None:
            return pa.chunked_array([d.blob_descriptions(self._io) for d in decs],
                                    type=DESCRIPTION_V1)
        self._initialise(field_idx)
        firsts = np.array([p.page.first_row for p in decs] + [self._num_rows], dtype=np.int64)
        page_of = np.searchsorted(firsts, rows, side="right") - 1
        parts = [decs[int(p)].blob_descriptions(self._io, rows[page_of == p] - firsts[p])
                 for p in np.unique(page_of)]
        return pa.chunked_array(parts, type=DESCRIPTION_V1)

    def _read_column_range(self, field_idx: int, start: int, num_rows: int) -> pa.ChunkedArray:
        """Rows ``[start, start + num_rows)``. A page the range covers enough of
        (RANGE_SCAN_FRACTION) is scanned whole, which is faster than picking rows, and
        sliced; otherwise rows are read by position, which reads only the chunks the
        range touches (nested pages locate the range's two ends and slice the levels
        between)."""
        if self._v20 is not None:
            return self._v20.read_range(field_idx, start, num_rows)
        per_row = _stored(self._fields[field_idx])[1]
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
                        whole = d.scan(self._io, SCAN_PIECE_BYTES)
                    arr = whole[0] if len(whole) == 1 else pa.concat_arrays(whole)
                    parts.append(arr.slice(lo - first, hi - lo))
                else:
                    self._initialise(field_idx)
                    parts.append(d.read_rows(self._io, np.arange(lo - first, hi - first,
                                                                 dtype=np.int64)))
            columns.append(parts)
        return self._merge(field_idx, columns)

    def _table(self, fn, parallel: bool = True) -> pa.Table:
        cols = self._projection
        if parallel and len(cols) > 1 and (os.cpu_count() or 1) > 1:
            arrays = list(_pool().map(fn, cols))
        else:
            arrays = [fn(c) for c in cols]
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def read_all(self, *, batch_size: int = 1024, batch_readahead: int = 16) -> ReaderResults:
        return ReaderResults(self._table(self._read_column_all), batch_size)

    def read_range(self, start: int, num_rows: int, *, batch_size: int = 1024,
                   batch_readahead: int = 16) -> ReaderResults:
        start, num_rows = check_range(self.path, start, num_rows, self._num_rows)
        return ReaderResults(self._table(lambda c: self._read_column_range(c, start, num_rows)),
                             batch_size)

    def take_rows(self, indices, *, batch_size: int = 1024,
                  batch_readahead: int = 16) -> ReaderResults:
        """Rows at ``indices``, in the order given (duplicates allowed)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self._num_rows):
            bad = int(idx[(idx < 0) | (idx >= self._num_rows)][0])
            raise InvalidInputError(f"{self.path!r}: row {bad} is out of range (the file has "
                                    f"{self._num_rows} rows)")
        order = None
        if idx.size > 1 and np.any(np.diff(idx) < 0):
            order = np.argsort(idx, kind="stable")
            rows = idx[order]
        else:
            rows = idx
        # small takes are dominated by fixed costs: decode them on this thread
        table = self._table(lambda c: self._read_column_rows(c, rows), parallel=len(rows) > 4096)
        if order is not None:
            inverse = np.empty_like(order)
            inverse[order] = np.arange(len(order))
            table = dictarray.take(table, pa.array(inverse))
        return ReaderResults(table, batch_size)
