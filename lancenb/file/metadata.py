"""What every version backend of :class:`~lancenb.file.LanceFileReader` shares: the
metadata types a reader returns, the checks of what a caller asks for, and the 2.x
container (footer, offset tables, schema) the 2.0 and 2.1+ backends both parse.

A 2.x file ends, in file order, with::

    ... pages | global buffer 0 (FileDescriptor: schema, rows) | column metadata
    | column metadata offsets (u64 position, u64 size per column)
    | global buffer offsets (u64 position, u64 size per buffer) | footer (40 bytes)

(:mod:`lancenb.file.format`). :class:`Container` holds those parsed pieces and the
bytes of the metadata region, from which each column's metadata is sliced.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import pyarrow as pa

from lancenb._proto import file_pb2
from lancenb.encodings import pb, rust_debug
from lancenb.errors import CorruptFileError, InvalidInputError
from lancenb.file.format import Footer, parse_offset_table
from lancenb.file.schema import fields_to_schema
from lancenb.file.version import FileVersion
from lancenb.io.pools import module_lock

__all__ = ["LanceBufferDescriptor", "LancePageMetadata", "LanceColumnMetadata",
           "LanceFileMetadata", "ColumnStatistics", "FileStatistics", "PageRef", "Container",
           "project", "check_range", "cached_fields_to_schema"]


@dataclass(frozen=True)
class LanceBufferDescriptor:
    """Where a buffer sits in the file."""

    position: int
    size: int


@dataclass(frozen=True)
class LancePageMetadata:
    """One page: its buffers, rows and encoding.

    ``layout`` is the decoded encoding message (a 2.1+ ``PageLayout``, a 2.0
    ``ArrayEncoding``; None for a legacy file), ``description`` lancenb's compact name
    for it (for example ``mini_block:variable(flat(32))``), and :attr:`encoding` the
    text pylance gives: Rust's pretty Debug of the message
    (:mod:`lancenb.encodings.rust_debug`).
    """

    buffers: list
    description: str
    num_rows: int
    layout: object = None

    @cached_property
    def encoding(self) -> str:
        """pylance's ``encoding`` of the page (rendered on first use)."""
        if self.layout is None:
            return self.description
        return rust_debug.page_encoding(self.layout)


@dataclass(frozen=True)
class LanceColumnMetadata:
    """One column: its column-wide buffers and its pages (:class:`LancePageMetadata`)."""

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


@dataclass(frozen=True)
class ColumnStatistics:
    """One column's page count and the bytes of its pages' buffers (pylance's)."""

    num_pages: int
    size_bytes: int


@dataclass(frozen=True)
class FileStatistics:
    """:meth:`LanceFileReader.file_statistics`: a :class:`ColumnStatistics` per column."""

    columns: list

    @classmethod
    def of(cls, metadata: "LanceFileMetadata") -> "FileStatistics":
        return cls([ColumnStatistics(len(c.pages), sum(b.size for p in c.pages
                                                      for b in p.buffers))
                    for c in metadata.columns])


class PageRef(NamedTuple):
    """One checked page of a 2.1+ column: its buffers and rows (``info``, a
    :class:`lancenb.encodings.page.PageInfo`), its serialized ``PageLayout`` and where
    it is (for messages)."""

    info: object
    encoding: bytes
    where: str


def project(schema_full: pa.Schema, columns: list[str] | None, path: str):
    """``(top-level field indices, projected schema)`` for the ``columns`` a reader
    was asked for (all when None); unknown names raise :class:`InvalidInputError`."""
    if columns is None:
        return list(range(len(schema_full))), schema_full
    if len(columns) <= 8:  # a few names of a wide file: Arrow's lookup, no name table
        found = [schema_full.get_all_field_indices(c) if isinstance(c, str) else []
                 for c in columns]
        at = {c: f[0] for c, f in zip(columns, found) if f}
    else:
        at = {}
        for i, n in enumerate(schema_full.names):
            at.setdefault(n, i)  # (the first field of a name, as names.index finds it)
    missing = [c for c in columns if c not in at]
    if missing:
        raise InvalidInputError(f"{path!r}: no column(s) {missing}; the file has "
                                f"{schema_full.names}")
    projection = [at[c] for c in columns]
    if projection == list(range(len(schema_full))):
        return projection, schema_full
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
_SCHEMA_LOCK = module_lock(globals(), "_SCHEMA_LOCK")


def _schema_key(fields, metadata) -> bytes:
    """The bytes of a ``Schema`` message of ``fields`` and ``metadata``: one
    serialization (the fields copied in C), not one per field (~5 us a field: 10 ms
    for every open of a 2,000-column dataset); the same bytes a file's schema message
    of that content gives."""
    try:
        msg = file_pb2.Schema()
        msg.fields.extend(fields)
        for k, v in (metadata or {}).items():
            msg.metadata[k] = bytes(v)
        return msg.SerializeToString(deterministic=True)
    except (TypeError, ValueError):  # not file Field messages / bytes metadata
        return b"\0".join([f.SerializeToString(deterministic=True) for f in fields]) + \
            repr(sorted((k, bytes(v)) for k, v in (metadata or {}).items())).encode()


def cached_fields_to_schema(fields, metadata, key: bytes | None = None) -> tuple:
    """:func:`lancenb.file.schema.fields_to_schema`, memoised by the fields' serialized
    bytes (``key``, else each field's bytes and the metadata): a dataset opened again
    and again, or thousands of data files, rebuild a wide schema once."""
    if key is None:
        key = _schema_key(fields, metadata)
    hit = _SCHEMA_CACHE.get(key)
    if hit is not None:
        return hit
    hit = fields_to_schema(fields, metadata)
    with _SCHEMA_LOCK:
        if len(_SCHEMA_CACHE) >= _SCHEMA_CACHE_SIZE:
            _SCHEMA_CACHE.pop(next(iter(_SCHEMA_CACHE)), None)
        _SCHEMA_CACHE[key] = hit
    return hit


def _file_schema(schema_pb) -> tuple:
    """``fields_to_schema`` of a file's schema message, memoised by its bytes (the
    results are not mutated by readers)."""
    return cached_fields_to_schema(schema_pb.fields, schema_pb.metadata,
                                   schema_pb.SerializeToString(deterministic=True))


class Container:
    """A 2.x file's container, parsed from its tail: the offset tables (``gbo``,
    ``cmo``: one ``(position, size)`` row per global buffer / column), the schema
    (``schema_full``, top-level ``fields``), ``num_rows`` and the metadata region's
    bytes. ``io`` is read once more only when the tail missed the metadata's start."""

    def __init__(self, path: str, io, footer: Footer, tail: bytes, tail_start: int):
        self.path = path
        self.footer = footer
        self.num_columns = footer.num_columns
        if footer.cmo_position < tail_start:
            # the offset tables alone are larger than the tail read (16 bytes a column:
            # over ~4,000 columns); the footer checks bound them by the file's end
            tail = io.read(footer.cmo_position, tail_start - footer.cmo_position) + tail
            tail_start = footer.cmo_position
        gbo = parse_offset_table(
            self._cut(tail, tail_start, footer.gbo_position, 16 * footer.num_global_buffers),
            footer.num_global_buffers, footer.cmo_position, "global buffer", path)
        cmo = parse_offset_table(
            self._cut(tail, tail_start, footer.cmo_position, 16 * footer.num_columns),
            footer.num_columns, footer.cmo_position, "column metadata", path)
        self.gbo, self.cmo = gbo, cmo
        # everything from the schema buffer to the end; a second read if the tail missed it
        need_from = min(int(gbo[0, 0]), footer.column_meta_start)
        if need_from < tail_start:
            head = io.read(need_from, tail_start - need_from)
            tail = head + tail
            tail_start = need_from
        self._meta = memoryview(tail)
        self._meta_start = tail_start
        desc = pb.parse(file_pb2.FileDescriptor,
                        self._cut(tail, tail_start, int(gbo[0, 0]), int(gbo[0, 1])),
                        f"file {path!r}: schema (global buffer 0)")
        self.num_rows = int(desc.length)
        self.schema_full, self.fields = _file_schema(desc.schema)
        # what readers work out from these bytes alone (a column's plain pages, a
        # field's stored type), shared by every reader of a file with these bytes
        self.memo: dict = {}

    def _cut(self, buf, buf_start: int, pos: int, size: int):
        if pos < buf_start or pos + size > buf_start + len(buf):
            raise CorruptFileError(f"file {self.path!r}: metadata at {pos} (+{size}) is outside "
                                   f"the metadata region")
        return buf[pos - buf_start: pos - buf_start + size]

    def column_bytes(self, ci: int):
        """Column ``ci``'s serialized ``ColumnMetadata`` (checked to lie in the region)."""
        return self._cut(self._meta, self._meta_start, int(self.cmo[ci, 0]), int(self.cmo[ci, 1]))

    def global_buffer_range(self, index: int) -> tuple[int, int]:
        if not 0 <= index < len(self.gbo):
            raise InvalidInputError(f"{self.path!r}: no global buffer {index} (the file has "
                                    f"{len(self.gbo)})")
        pos, size = map(int, self.gbo[index])
        return pos, size

    def file_metadata(self, version: FileVersion, columns: list) -> LanceFileMetadata:
        gbo, cmo = self.gbo, self.cmo
        major, minor = version.footer
        return LanceFileMetadata(
            schema=self.schema_full, num_rows=self.num_rows,
            # as pylance counts it: everything before the schema except user global buffers
            num_data_bytes=int(gbo[0, 0] - gbo[1:, 1].sum()),
            num_column_metadata_bytes=int(cmo[:, 1].sum()) + 16 * len(cmo),
            num_global_buffer_bytes=int(gbo[:, 1].sum()),
            major_version=major, minor_version=minor,
            global_buffers=[LanceBufferDescriptor(int(p), int(z)) for p, z in gbo],
            columns=columns)
