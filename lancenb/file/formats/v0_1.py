"""The legacy (0.1) backend of :class:`~lancenb.file.LanceFileReader`.

pylance still writes these with ``data_storage_version="legacy"``. Byte layout, in
file order::

    pages               batch by batch; inside a batch, each field's page in pre-order
    page table          i64 (position, length) per (field id, batch) for the field ids
                        min..max of the schema, field-major: entry = field * batches + batch;
                        (0, 0) where a field has no page (structs)
    statistics pages    optional: a second little file, see below
    statistics table    i64 (position, length) for its field ids 0..max, one batch
    dictionary values   one array per dictionary field (``Field.dictionary{offset,length}``)
    [u32 n][lance.table.Manifest]  schema only (fields in pre-order, schema metadata)
    [u32 n][lance.file.Metadata]   batch_offsets, page_table_position, manifest_position,
                                   statistics{schema, fields, page_table_position}
    i64 metadata position | i16 major 0 | i16 minor 2 | "LANC"

``batch_offsets`` are cumulative row starts including the end: ``[0, 2, 3]`` for
batches of 2 and 1 rows. A page's ``length`` counts items:

* fixed width (ints, floats, decimal, temporal, fixed_size_binary): ``length`` values
  back to back; bool is an LSB-first bitmap; a fixed_size_list page holds the
  flattened items (``length * list_size`` of them).
* string/binary (VAR_BINARY): the value bytes, then ``length + 1`` i64 *absolute file
  offsets*; the page position points at the offsets. ``["ab", "", "c"]`` at file
  offset 100 → bytes ``a b c`` at 100..102, offsets ``[100, 102, 102, 103]`` at 103.
* list / large_list: ``rows + 1`` i32 / i64 offsets starting at 0 into the child field's
  page of the same batch (page length = rows + 1). struct: no page, children only.
* dictionary: the keys as a fixed-width page; the values array stored once, read like
  a page of ``Field.dictionary.length`` items at ``Field.dictionary.offset``.
* null type: no bytes, ``length`` = rows.

No validity is stored. A null primitive reads back as whatever bytes the writer's
Arrow buffer held (a null bool as false, a null list as its offsets say, a struct is
never null); an empty string or binary reads back as null when the field is nullable.
This is what pylance itself returns, so it is what this reader returns.

Statistics are stored as a table with one row per batch and, per data field id ``i``
with statistics, a column ``"i": struct<null_count: int64, min_value: T, max_value: T>``
whose fields are numbered from 0 and whose pages sit in the statistics page table.
They describe the data as written (nulls included), not as read back: see
:meth:`V01Backend.page_statistics`.

Reads go by *runs*: ``(batch, first item, item count)`` triples, sorted and disjoint.
Rows become runs once; each field type turns its runs into byte ranges (one request
per run, coalesced by :mod:`lancenb.io`) and its children's runs, with NumPy and the
slice/gather kernels (no per-row Python).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancenb._proto import file_pb2, table_pb2
from lancenb.encodings import pb
from lancenb.encodings.nptypes import numpy_dtype
from lancenb.errors import CorruptFileError, InvalidInputError, LanceError, NotSupportedError
from lancenb.file.metadata import (
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceFileMetadata,
    LancePageMetadata,
)
from lancenb.file.schema import fields_to_schema
from lancenb.file.version import FileVersion
from lancenb.kernels import gather, slices

__all__ = ["V01Backend", "PageStats", "is_legacy_footer", "FOOTER_SIZE"]

FOOTER_SIZE = 16
MAGIC = b"LANC"
# The first read takes this much of the tail: footer, metadata and schema, usually.
TAIL_READ_BYTES = 64 * 1024
# Reads are decoded in chunks of at most about this many rows (bounds the temporary
# index arrays, and keeps 32-bit offsets of string/list chunks from overflowing).
CHUNK_ROWS = 1 << 16
_I32_MAX = (1 << 31) - 1
# the runs of a take of at most this many rows are kept for the take's next column
CACHED_TAKE_ROWS = 1 << 16
_STATS_CHILDREN = ("null_count", "min_value", "max_value")


def is_legacy_footer(tail: bytes) -> bool:
    """Whether the last 16 bytes of a file are a legacy (0.1) footer:
    ``i64 metadata position | i16 major 0 | i16 minor <= 2 | "LANC"``."""
    if len(tail) < FOOTER_SIZE or tail[-4:] != MAGIC:
        return False
    major, minor = struct.unpack_from("<hh", tail, len(tail) - 8)
    return major == 0 and 0 <= minor <= 2


@dataclass(frozen=True, kw_only=True)
class PageStats:
    """One batch's statistics for one field (the fields of ``ColumnStats``)."""

    num_rows: int
    null_count: int | None = None
    min: Any = None
    max: Any = None


class _Overflow(Exception):
    """A chunk's 32-bit offsets would overflow: decode it in smaller pieces."""


@dataclass(frozen=True)
class _Runs:
    """Sorted, disjoint item runs: ``n[i]`` items from ``s[i]`` in batch ``b[i]``'s page."""

    b: np.ndarray
    s: np.ndarray
    n: np.ndarray

    @property
    def total(self) -> int:
        return int(self.n.sum())

    def take(self, sel) -> "_Runs":
        return _Runs(self.b[sel], self.s[sel], self.n[sel])


@dataclass(frozen=True)
class _Pages:
    """A page table: ``table[field id - min_id, batch] = (position, length)``; every
    page ends at or before byte ``limit``."""

    table: np.ndarray
    min_id: int
    limit: int
    what: str


def _empty_runs() -> _Runs:
    z = np.zeros(0, np.int64)
    return _Runs(z, z, z)


def _split(runs: _Runs, max_rows: int) -> list[_Runs]:
    """Cut runs into pieces of at most ``max_rows`` items and group them into parts
    of about ``max_rows`` items (at most twice that)."""
    if len(runs.n) == 0:
        return []
    pieces = -(-runs.n // max_rows)
    first = np.cumsum(pieces) - pieces
    k = np.arange(int(pieces.sum()), dtype=np.int64) - np.repeat(first, pieces)
    b = np.repeat(runs.b, pieces)
    s = np.repeat(runs.s, pieces) + k * max_rows
    n = np.minimum(np.repeat(runs.n, pieces) - k * max_rows, max_rows)
    group = (np.cumsum(n) - 1) // max_rows
    cuts = np.flatnonzero(np.diff(group)) + 1
    bounds = np.concatenate(([0], cuts, [len(n)]))
    return [_Runs(b[i:j], s[i:j], n[i:j]) for i, j in zip(bounds[:-1], bounds[1:])]


def _to_py(arr: pa.Array) -> list:
    """Python values; a value Python cannot hold (a date sentinel such as i32::MIN
    days) becomes None, i.e. unknown."""
    try:
        return arr.to_pylist()
    except (OverflowError, ValueError):
        out = []
        for i in range(len(arr)):
            try:
                out.append(arr[i].as_py())
            except (OverflowError, ValueError):
                out.append(None)
        return out


def _packed_index(runs: _Runs):
    """For per-run arrays of ``n + 1`` offsets packed back to back: the index of each
    item's first offset, and of each run's first and last offset."""
    rid = np.repeat(np.arange(len(runs.n), dtype=np.int64), runs.n)
    q = np.arange(runs.total, dtype=np.int64) + rid
    first = np.cumsum(runs.n + 1) - (runs.n + 1)
    return q, first, first + runs.n


class V01Backend:
    """Reads legacy (0.1) files (:class:`lancenb.file.backend.FileBackend`), plus
    their statistics pages (:meth:`page_statistics`).

    Opening reads the tail of the file (footer, metadata, schema) in one request
    (none when the caller passes the tail it read) and the page table in at most one
    more.
    """

    # reads of at least this many rows decode their columns on the facade's pool
    parallel_scan_rows = parallel_take_rows = 8192

    def __init__(self, path: str, io, tail: bytes | None = None, tail_start: int = 0):
        self.path = path
        self.version = FileVersion.LEGACY
        self.io = io
        size = io.size()
        if size < FOOTER_SIZE:
            raise self._corrupt(f"{size} bytes is too small to be a Lance file")
        if tail is None:
            tail_start = max(0, size - TAIL_READ_BYTES)
            tail = io.read(tail_start, size - tail_start)
        if tail[-4:] != MAGIC:
            raise self._corrupt("no LANC magic at the end")
        meta_pos, major, minor = struct.unpack_from("<qhh", tail, len(tail) - FOOTER_SIZE)
        if major != 0 or not 0 <= minor <= 2:
            raise NotSupportedError(f"file {self.path!r}: footer version {major}.{minor} is not "
                                    f"a legacy (0.1) Lance file")
        self._tail, self._tail_start = tail, tail_start
        self._meta_pos = meta_pos
        self._meta = self._message(file_pb2.Metadata, meta_pos, size - FOOTER_SIZE, "metadata")
        man_pos = int(self._meta.manifest_position)
        if man_pos == 0:
            raise NotSupportedError(f"file {self.path!r}: legacy file without an embedded "
                                    f"schema (manifest_position 0)")
        manifest = self._message(table_pb2.Manifest, man_pos, meta_pos, "schema (manifest)")
        self._man_pos = man_pos
        self.schema_full, self.fields = self._schema(manifest.fields,
                                                     manifest.schema_metadata, "schema")
        self._protos = {int(f.id): f for f in manifest.fields}
        order = [lf.id for top in self.fields for lf in top.walk()]
        if not order:
            raise self._corrupt("the schema has no fields")
        # a DataFile's `fields` lists these ids in this (pre-)order
        self.columns_of = [order.index(top.id) for top in self.fields]
        self._by_id = {lf.id: lf for top in self.fields for lf in top.walk()}
        bo = np.asarray(self._meta.batch_offsets, dtype=np.int64)
        if len(bo) == 1 or (len(bo) and (bo[0] != 0 or np.any(np.diff(bo) < 0))):
            raise self._corrupt(f"batch offsets {bo[:8].tolist()}... are not cumulative row "
                                f"counts from 0")
        self._batch_offsets = bo if len(bo) else np.zeros(1, np.int64)
        self.num_rows = int(self._batch_offsets[-1])
        self._num_batches = len(self._batch_offsets) - 1
        self._data = self._load_page_table(
            int(self._meta.page_table_position), min(order), max(order), self._num_batches,
            limit_of_table=man_pos, what="")
        self._dicts: dict[int, pa.Array] = {}
        self._last_rows = None

    # -- opening ---------------------------------------------------------------
    def _corrupt(self, what: str) -> CorruptFileError:
        return CorruptFileError(f"file {self.path!r}: {what}")

    def _bytes(self, pos: int, n: int) -> bytes:
        """``n`` bytes at ``pos`` (from the tail already read when it holds them)."""
        if pos >= self._tail_start:
            return self._tail[pos - self._tail_start: pos - self._tail_start + n]
        return self.io.read(pos, n)

    def _message(self, cls, pos: int, end: int, what: str):
        """A ``[u32 length][protobuf]`` block at ``pos`` that must end by ``end``."""
        if pos < 0 or pos + 4 > end:
            raise self._corrupt(f"{what} position {pos} is outside the file")
        (n,) = struct.unpack("<I", self._bytes(pos, 4))
        if pos + 4 + n > end:
            raise self._corrupt(f"{what} at {pos} claims {n} bytes, past byte {end}")
        return pb.parse(cls, self._bytes(pos + 4, n), f"file {self.path!r}: {what}")

    def _schema(self, fields, metadata, what: str):
        try:
            return fields_to_schema(fields, metadata)
        except LanceError:
            raise
        except (ValueError, TypeError, pa.ArrowException) as e:  # e.g. a non-nullable null
            raise self._corrupt(f"{what}: {e}") from e

    def _load_page_table(self, pos: int, min_id: int, max_id: int, num_batches: int,
                         limit_of_table: int, what: str) -> _Pages:
        ids = max_id - min_id + 1
        nbytes = ids * num_batches * 16
        if pos < 0 or pos + nbytes > limit_of_table:
            raise self._corrupt(f"{what}page table at {pos} ({ids} fields x {num_batches} "
                                f"batches, {nbytes} bytes) does not fit before byte "
                                f"{limit_of_table}")
        raw = np.frombuffer(self._bytes(pos, nbytes), dtype="<i8")
        return _Pages(raw.reshape(ids, num_batches, 2), min_id, pos, what)

    # -- errors ----------------------------------------------------------------
    def _where(self, ctx: _Pages, f, batch=None) -> str:
        w = f"file {self.path!r}, {ctx.what}field {f.name!r} (id {f.id})"
        return w if batch is None else f"{w}, batch {int(batch)}"

    def _check(self, ctx: _Pages, f, runs: _Runs, bad: np.ndarray, what: str) -> None:
        if bad.any():
            i = int(np.argmax(bad))
            raise CorruptFileError(f"{self._where(ctx, f, runs.b[i])}: {what}")

    # -- decoding ----------------------------------------------------------------
    def _pages(self, ctx: _Pages, f, runs: _Runs):
        k = f.id - ctx.min_id
        if not 0 <= k < ctx.table.shape[0]:
            raise CorruptFileError(f"{self._where(ctx, f)}: no entry in the page table")
        return ctx.table[k, runs.b, 0], ctx.table[k, runs.b, 1]

    def _check_page(self, ctx, f, runs, pos, length, num: int, den: int = 1,
                    extra: int = 0) -> None:
        """Pages of ``length + extra`` items of ``num / den`` bytes each must lie inside
        ``[0, limit)``, and the runs inside the pages (written so nothing overflows)."""
        room = ctx.limit - pos
        cap = (np.maximum(room, 0) * den) // max(num, 1) - extra
        bad = (pos < 0) | (length < 0) | (room < 0) | (length > cap)
        self._check(ctx, f, runs, bad, "page lies outside the data region")
        self._check(ctx, f, runs, runs.s + runs.n > length,
                    "rows beyond the end of the page (page table and batch sizes disagree)")

    def _gather(self, offs: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """The byte ranges, back to back."""
        buf, p = self.io.read_ranges_np(offs, lens)
        if len(offs) == 1:
            return buf[int(p[0]):int(p[0] + lens[0])]
        out = np.empty(int(lens.sum()), np.uint8)
        if slices.concat_slices(buf, p, lens.astype(np.int64), out) != 0:
            raise self._corrupt("internal error: ranges outside the bytes read")
        return out

    def _fixed(self, ctx, f, runs: _Runs, width: int) -> np.ndarray:
        pos, length = self._pages(ctx, f, runs)
        self._check_page(ctx, f, runs, pos, length, width)
        if width == 0 or not len(runs.n):
            return np.zeros(0, np.uint8)
        return self._gather(pos + runs.s * width, runs.n * width)

    def _bits(self, ctx, f, runs: _Runs, per_row: int) -> np.ndarray:
        """LSB-first bitmap of the runs' ``per_row`` bits per row."""
        pos, length = self._pages(ctx, f, runs)
        self._check_page(ctx, f, runs, pos, length, per_row, 8)
        nbits = runs.n * per_row
        out = np.zeros((int(nbits.sum()) + 7) // 8, np.uint8)
        if not len(out):
            return out
        b0 = runs.s * per_row
        first = b0 // 8
        buf, p = self.io.read_ranges_np(pos + first, (b0 + nbits + 7) // 8 - first)
        start = p * 8 + b0 % 8
        if not np.any(start % 8):
            rc = slices.concat_bits(buf, start // 8, nbits, out)
        else:
            bitpos = (np.arange(int(nbits.sum()), dtype=np.int64)
                      + np.repeat(start - (np.cumsum(nbits) - nbits), nbits))
            rc = gather.gather_bits(buf, bitpos, out)
        if rc != 0:
            raise self._corrupt("internal error: bits outside the bytes read")
        return out

    def _plain(self, ctx, f, t: pa.DataType, runs: _Runs) -> pa.Array:
        chain, inner, per_row = [], t, 1
        while pa.types.is_fixed_size_list(inner):
            chain.append(inner)
            per_row *= inner.list_size
            inner = inner.value_type
        n = runs.total * per_row
        if pa.types.is_boolean(inner):
            arr = pa.Array.from_buffers(inner, n, [None, pa.py_buffer(self._bits(ctx, f, runs,
                                                                                 per_row))])
        else:
            try:
                width = inner.bit_width // 8
            except ValueError:
                raise NotSupportedError(f"{self._where(ctx, f)}: legacy files cannot hold "
                                        f"{t}") from None
            data = self._fixed(ctx, f, runs, width * per_row)
            arr = pa.Array.from_buffers(inner, n, [None, pa.py_buffer(data)])
        for fsl in reversed(chain):
            arr = pa.Array.from_buffers(fsl, len(arr) // max(fsl.list_size, 1) if fsl.list_size
                                        else runs.total, [None], children=[arr])
        return arr

    def _offsets(self, ctx, f, runs: _Runs, width: int, extra: int):
        """Read each run's ``n + 1`` offsets (i32/i64 entries ``s .. s + n``):
        ``(size of each item, each run's first offset, each run's last offset)``."""
        if not len(runs.n):
            z = np.zeros(0, np.int64)
            return z, z, z
        pos, length = self._pages(ctx, f, runs)
        self._check_page(ctx, f, runs, pos, length, width, extra=extra)
        self._check(ctx, f, runs, runs.s + runs.n + 1 > length + extra,
                    "offsets beyond the end of the page")
        raw = self._gather(pos + runs.s * width, (runs.n + 1) * width)
        offs = np.frombuffer(raw, dtype="<i4" if width == 4 else "<i8").astype(np.int64)
        q, first, last = _packed_index(runs)
        sizes = offs[q + 1] - offs[q]
        bad = sizes < 0
        if bad.any():
            run = np.repeat(np.arange(len(runs.n)), runs.n)[np.argmax(bad)]
            raise CorruptFileError(f"{self._where(ctx, f, runs.b[run])}: decreasing offsets")
        return sizes, offs[first], offs[last]

    def _varbin(self, ctx, f, t: pa.DataType, runs: _Runs, nullable: bool) -> pa.Array:
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        if not len(runs.n):
            return pa.array([], type=t)
        pos, _ = self._pages(ctx, f, runs)
        # page length + 1 absolute offsets at the page position, the bytes before them
        sizes, d0, d1 = self._offsets(ctx, f, runs, 8, extra=1)
        self._check(ctx, f, runs, (d0 < 0) | (d1 > pos),
                    "value bytes outside the region before the offsets")
        order = np.argsort(d0, kind="stable")
        so, se = d0[order], d1[order]
        overlap = np.zeros(len(so), bool)
        overlap[1:] = so[1:] < se[:-1]
        if overlap.any():
            raise CorruptFileError(f"{self._where(ctx, f, runs.b[order[np.argmax(overlap)]])}: "
                                   f"value bytes of different rows overlap")
        total = int((d1 - d0).sum())
        if not large and total > _I32_MAX:
            raise _Overflow
        data = self._gather(d0, d1 - d0) if total else np.zeros(0, np.uint8)
        out_offs = np.zeros(runs.total + 1, np.int64 if large else np.int32)
        np.cumsum(sizes, out=out_offs[1:])
        validity, nulls = None, 0
        if nullable:
            empty = sizes == 0
            nulls = int(empty.sum())
            if nulls:
                validity = pa.py_buffer(np.packbits(~empty, bitorder="little"))
        arr = pa.Array.from_buffers(t, runs.total, [validity, pa.py_buffer(out_offs),
                                                    pa.py_buffer(data)], null_count=nulls)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            try:
                arr.validate(full=True)  # UTF-8
            except pa.ArrowInvalid as e:
                raise CorruptFileError(f"{self._where(ctx, f, runs.b[0])}: {e}") from None
        return arr

    def _list(self, ctx, f, t: pa.DataType, runs: _Runs) -> pa.Array:
        large = pa.types.is_large_list(t)
        if not f.children:
            raise CorruptFileError(f"{self._where(ctx, f)}: list field without a child field")
        sizes, c0, c1 = self._offsets(ctx, f, runs, 8 if large else 4, extra=0)
        # child runs must be sorted and disjoint within each batch's page
        back = np.zeros(len(c0), bool)
        back[1:] = (runs.b[1:] == runs.b[:-1]) & (c0[1:] < c1[:-1])
        self._check(ctx, f, runs, (c0 < 0) | back, "list offsets out of order")
        total = int(sizes.sum())
        if not large and total > _I32_MAX:
            raise _Overflow
        keep = c1 > c0
        child = self._field(ctx, f.children[0], t.value_type,
                            _Runs(runs.b[keep], c0[keep], (c1 - c0)[keep]))
        out_offs = np.zeros(runs.total + 1, np.int64 if large else np.int32)
        np.cumsum(sizes, out=out_offs[1:])
        return pa.Array.from_buffers(t, runs.total, [None, pa.py_buffer(out_offs)],
                                     children=[child])

    def _dictionary(self, ctx, f, t: pa.DictionaryType, runs: _Runs) -> pa.Array:
        keys = self._plain(ctx, f, t.index_type, runs)
        values = self._dict_values(f, t)
        if len(keys):
            kv = np.frombuffer(keys.buffers()[1], dtype=numpy_dtype(t.index_type),
                               count=len(keys))
            if kv.min() < 0 or kv.max() >= len(values):
                bad = (kv < 0) | (kv >= len(values))
                row = np.flatnonzero(bad)[0]
                run = np.searchsorted(np.cumsum(runs.n), row, side="right")
                raise CorruptFileError(f"{self._where(ctx, f, runs.b[run])}: dictionary key "
                                       f"{int(kv[row])} outside the {len(values)} values")
        return pa.DictionaryArray.from_arrays(keys, values, safe=False)

    def _dict_values(self, f, t: pa.DictionaryType) -> pa.Array:
        hit = self._dicts.get(f.id)
        if hit is not None:
            return hit
        proto = self._protos[f.id]
        vt = t.value_type
        off, n = int(proto.dictionary.offset), int(proto.dictionary.length)
        # the values array is read like a one-batch page of n items
        ctx = _Pages(np.array([[[off, n]]], np.int64), f.id, self._man_pos, "dictionary of ")
        runs = _Runs(np.zeros(1, np.int64), np.zeros(1, np.int64),
                     np.full(1, n, np.int64)) if n > 0 else _empty_runs()
        if n < 0:
            raise CorruptFileError(f"{self._where(ctx, f)}: {n} dictionary values")
        if pa.types.is_integer(vt):
            values = self._plain(ctx, f, vt, runs)
        elif self._is_varbin(vt):
            values = self._varbin(ctx, f, vt, runs, nullable=True)
        else:
            raise NotSupportedError(f"{self._where(ctx, f)}: {vt} dictionary values")
        self._dicts[f.id] = values
        return values

    @staticmethod
    def _is_varbin(t: pa.DataType) -> bool:
        return (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
                or pa.types.is_large_binary(t))

    def _field(self, ctx, f, t: pa.DataType, runs: _Runs) -> pa.Array:
        if pa.types.is_null(t):
            _, length = self._pages(ctx, f, runs)
            self._check(ctx, f, runs, runs.s + runs.n > length, "rows beyond the end of the page")
            return pa.nulls(runs.total)
        if pa.types.is_dictionary(t):
            if ctx is not self._data:  # statistics columns have no dictionaries
                raise CorruptFileError(f"{self._where(ctx, f)}: unexpected dictionary type")
            return self._dictionary(ctx, f, t, runs)
        if self._is_varbin(t):
            return self._varbin(ctx, f, t, runs, f.arrow.nullable)
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return self._list(ctx, f, t, runs)
        if pa.types.is_struct(t):
            if len(f.children) != t.num_fields:
                raise CorruptFileError(f"{self._where(ctx, f)}: struct children disagree")
            kids = [self._field(ctx, c, t.field(i).type, runs) for i, c in enumerate(f.children)]
            return pa.Array.from_buffers(t, runs.total, [None], children=kids)
        return self._plain(ctx, f, t, runs)

    def _decode(self, ctx, f, runs: _Runs) -> list[pa.Array]:
        try:
            return [self._field(ctx, f, f.arrow.type, runs)]
        except _Overflow:
            if runs.total <= 1:
                raise CorruptFileError(f"{self._where(ctx, f, runs.b[0])}: one value holds "
                                       f"more than 2 GiB") from None
            out = []
            for part in _split(runs, -(-runs.total // 2)):
                out.extend(self._decode(ctx, f, part))
            return out

    def _read(self, field_idx: int, runs: _Runs) -> pa.ChunkedArray:
        f = self.fields[field_idx]
        parts = _split(runs, CHUNK_ROWS) or [runs]
        chunks = [a for part in parts for a in self._decode(self._data, f, part)]
        return pa.chunked_array(chunks, type=f.arrow.type)

    # -- rows -> runs ------------------------------------------------------------
    def _all_runs(self) -> _Runs:
        bo = self._batch_offsets
        n = np.diff(bo)
        b = np.flatnonzero(n > 0)
        return _Runs(b.astype(np.int64), np.zeros(len(b), np.int64), n[b])

    def _runs_of(self, rows: np.ndarray) -> _Runs:
        """Runs of sorted, distinct rows."""
        if not len(rows):
            return _empty_runs()
        bo = self._batch_offsets
        b = np.searchsorted(bo, rows, side="right") - 1
        local = rows - bo[b]
        brk = np.ones(len(rows), bool)
        brk[1:] = (np.diff(rows) != 1) | (b[1:] != b[:-1])
        starts = np.flatnonzero(brk)
        return _Runs(b[starts], local[starts], np.diff(np.append(starts, len(rows))))

    def _range_runs(self, start: int, stop: int) -> _Runs:
        """Runs of rows ``[start, stop)``: one per batch it overlaps (no per-row arrays)."""
        if stop <= start:
            return _empty_runs()
        bo = self._batch_offsets
        b = np.arange(np.searchsorted(bo, start, side="right") - 1,
                      np.searchsorted(bo, stop - 1, side="right"), dtype=np.int64)
        lo = np.maximum(bo[b], start)
        n = np.minimum(bo[b + 1], stop) - lo
        keep = n > 0
        return _Runs(b[keep], (lo - bo[b])[keep], n[keep])

    def _check_rows(self, idx: np.ndarray) -> None:
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_rows):
            bad = int(idx[(idx < 0) | (idx >= self.num_rows)][0])
            raise InvalidInputError(f"{self.path!r}: row {bad} is out of range (the file has "
                                    f"{self.num_rows} rows)")

    # -- the backend surface ---------------------------------------------------------
    def read_global_buffer(self, index: int) -> bytes:
        raise NotSupportedError(f"{self.path!r}: legacy (0.1) Lance files have no global "
                                f"buffers")

    def read_many(self, field_idxs, rows) -> list[pa.ChunkedArray]:
        return [self.read(i, rows) for i in field_idxs]

    def read(self, field_idx: int, rows) -> pa.ChunkedArray:
        """Every row (None), a ``range`` or sorted rows (duplicates allowed)."""
        if rows is None:
            return self._read(field_idx, self._all_runs())
        if isinstance(rows, range):
            return self._read(field_idx, self._range_runs(rows.start, rows.stop))
        runs, inv = self._sorted_runs(rows)
        got = self._read(field_idx, runs)
        return got if inv is None else got.take(inv)

    def _sorted_runs(self, rows):
        """``(runs, positions to take back or None)`` of sorted rows (duplicates
        allowed); the last rows' are kept, since the facade reads every column of a
        take with the same array."""
        hit = self._last_rows
        if hit is not None and hit[0] is rows:
            return hit[1], hit[2]
        arr = np.asarray(rows, dtype=np.int64).reshape(-1)
        self._check_rows(arr)
        inv = None
        if len(arr) > 1 and not np.all(arr[1:] > arr[:-1]):
            arr, inv = np.unique(arr, return_inverse=True)
            inv = pa.array(inv)
        runs = self._runs_of(arr)
        if len(arr) <= CACHED_TAKE_ROWS:  # (big takes amortise this; not kept alive)
            self._last_rows = (rows, runs, inv)  # (one assignment: safe across the pool)
        return runs, inv

    def read_blob_descriptions(self, field_idx: int, rows) -> pa.ChunkedArray:
        raise NotSupportedError(f"{self.path!r}: legacy (0.1) files store no blob "
                                f"descriptions")

    def prepare_take(self, field_idx: int) -> None:
        """Nothing to load: 0.1 pages are read by position."""

    def _by_page(self, *_):
        raise NotSupportedError(f"{self.path!r}: 0.1 columns decode whole, not page by page")

    leaf_columns = column_pages = decode_page = column_metadata_position = _by_page

    def search_cache_memory(self) -> dict[str, int]:
        return {}

    def metadata(self) -> LanceFileMetadata:
        """Schema, row count, version 0.2 and, per field id (pre-order, structs included),
        its pages: one buffer each at the page position, ``num_rows`` = page length."""
        ctx = self._data
        cols = []
        for top in self.fields:
            for lf in top.walk():
                rows = ctx.table[lf.id - ctx.min_id]
                pages = [LancePageMetadata([LanceBufferDescriptor(int(p), self._page_bytes(lf, n))],
                                           self._encoding_name(lf), int(n))
                         for p, n in rows.tolist()]
                cols.append(LanceColumnMetadata([], pages))
        major, minor = self.version.footer
        table_bytes = ctx.table.size * 8
        return LanceFileMetadata(
            schema=self.schema_full, num_rows=self.num_rows,
            num_data_bytes=int(self._meta.page_table_position),
            num_column_metadata_bytes=table_bytes, num_global_buffer_bytes=0,
            major_version=major, minor_version=minor, global_buffers=[], columns=cols)

    def _encoding_name(self, lf) -> str:
        code = self._protos[lf.id].encoding
        try:
            return file_pb2.Encoding.Name(code).lower()
        except ValueError:
            return f"unknown({code})"

    def _page_bytes(self, lf, n: int) -> int:
        """Bytes at the page position (the offsets, for strings)."""
        t = lf.arrow.type
        if pa.types.is_dictionary(t):
            t = t.index_type
        if self._is_varbin(t):
            return 8 * (n + 1) if n else 0
        if pa.types.is_list(t):
            return 4 * n
        if pa.types.is_large_list(t):
            return 8 * n
        per = 1
        while pa.types.is_fixed_size_list(t):
            per, t = per * t.list_size, t.value_type
        if pa.types.is_boolean(t):
            return (n * per + 7) // 8
        try:
            return n * per * (t.bit_width // 8)
        except ValueError:
            return 0

    def page_statistics(self, *, raw: bool = False, stats_factory=None):
        """The statistics pages: ``(batch_offsets, {field id: [stats per batch]})`` or
        None when the file has none.

        Each entry is ``stats_factory(num_rows=, null_count=, min=, max=)``; the
        dataset layer passes :class:`lancenb.file.statistics.ColumnStats` (this layer may
        not import it); the default builds a :class:`PageStats` with the same fields.

        With ``raw=True`` the values are exactly what the pages hold; they describe the
        data as written. By default they describe the data as read back (the 0.1 format
        stores no validity): for a field without stored validity the null count is 0 and
        a batch that had nulls gets ``min = max = None`` (its null slots read back as
        arbitrary values); for a nullable string/binary field the null count is None
        (empty values also read back as null). Safe for pruning either way round.
        """
        make = stats_factory or PageStats
        if not self._meta.HasField("statistics") or not self._meta.statistics.schema:
            return None
        st = self._meta.statistics
        _, tops = self._schema(st.schema, None, "statistics schema")
        ids = [lf.id for top in tops for lf in top.walk()]
        if not ids:
            return None
        max_id = max(list(st.fields) + ids)
        if min(ids) < 0:
            raise self._corrupt("statistics field ids are negative")
        ctx = self._load_page_table(int(st.page_table_position), 0, max_id, 1,
                                    limit_of_table=self._man_pos, what="statistics ")
        ctx = _Pages(ctx.table, 0, int(st.page_table_position), "statistics ")
        nb = self._num_batches
        runs = (_Runs(np.zeros(1, np.int64), np.zeros(1, np.int64), np.full(1, nb, np.int64))
                if nb else _empty_runs())
        batch_rows = np.diff(self._batch_offsets).tolist()
        out: dict[int, list] = {}
        for top in tops:
            if not (top.name.isascii() and top.name.isdigit()
                    and pa.types.is_struct(top.arrow.type)):
                continue  # unknown extra columns are allowed and ignored
            kids = {c.name: c for c in top.children if c.name in _STATS_CHILDREN}
            if len(kids) < 3:
                continue
            vals = {k: _to_py(self._field(ctx, c, c.arrow.type, runs))
                    for k, c in kids.items()}
            data_field = self._by_id.get(int(top.name))
            if data_field is None:
                continue
            t = data_field.arrow.type
            keeps_nulls = self._is_varbin(t) and data_field.arrow.nullable
            stats = []
            for k in range(nb):
                nc, lo, hi = (vals["null_count"][k], vals["min_value"][k],
                              vals["max_value"][k])
                if not raw:
                    if keeps_nulls:
                        nc = None
                    else:
                        if nc:
                            lo = hi = None
                        nc = 0
                stats.append(make(num_rows=batch_rows[k], null_count=nc, min=lo, max=hi))
            out[data_field.id] = stats
        return self._batch_offsets.copy(), out
