"""The one contract every file version family implements, and opening a file with
the backend its footer names.

:class:`~lancenb.file.LanceFileReader` is a thin facade: it checks what the caller
asks for, builds tables and batches, and decodes columns in parallel; everything that
depends on the format version is behind :class:`FileBackend`:

============  ==========================  ===========================================
version       backend                     pages
============  ==========================  ===========================================
0.1           :mod:`lancenb.file.formats.v0_1`    one page per field and batch, a page table
2.0           :mod:`lancenb.file.formats.v2_0`    ``ArrayEncoding`` trees, one column per field
2.1, 2.2      :mod:`lancenb.file.formats.v2_1`    ``PageLayout`` structural pages, leaf columns
============  ==========================  ===========================================

The version is read once, at open (:func:`open_backend`); nothing downstream
switches on it.
"""

from __future__ import annotations

import copy
import struct
from typing import Protocol, Union, runtime_checkable

import numpy as np
import pyarrow as pa

from lancenb import io as lio
from lancenb.errors import CorruptFileError, LanceIOError
from lancenb.file.format import FOOTER_SIZE, Footer
from lancenb.file.formats.v0_1 import V01Backend
from lancenb.file.formats.v2_0 import V20Backend
from lancenb.file.formats.v2_1 import V21Backend
from lancenb.file.metadata import Container, LanceFileMetadata, PageRef
from lancenb.file.version import FileVersion, version_from_footer
from lancenb.io.pools import module_lock

__all__ = ["FileBackend", "Rows", "open_backend", "WholeFile", "TAIL_READ_BYTES"]

# The first read takes this much of the file's tail: enough for the footer and, for
# most files, every piece of metadata, so that opening costs one request.
TAIL_READ_BYTES = 64 * 1024

#: What a backend reads of a field: every row (None), a contiguous ``range`` of rows,
#: or row numbers sorted ascending (int64, duplicates allowed).
Rows = Union[None, range, np.ndarray]


@runtime_checkable
class FileBackend(Protocol):
    """What :class:`~lancenb.file.LanceFileReader` needs of a file version family.

    Fields are addressed by their position among the top-level fields; row
    selections are :data:`Rows`, already checked against ``num_rows`` by the facade.
    """

    path: str
    io: object  #: the byte source (a :class:`lancenb.io.RangeReader` or a whole file)
    version: FileVersion
    schema_full: pa.Schema
    fields: list  #: top-level :class:`lancenb.file.schema.LanceField`, schema order
    columns_of: list  #: top-level field -> its first column (field id order for 0.1)
    num_rows: int
    parallel_scan_rows: int  #: decode columns in parallel from this many rows (scans)
    parallel_take_rows: int  #: ... and for takes

    def metadata(self) -> LanceFileMetadata:
        """Schema, sizes and every column's pages."""

    def read_global_buffer(self, index: int) -> bytes:
        """A global buffer's bytes (``NotSupportedError`` where the format has none)."""

    def read(self, field_idx: int, rows: Rows) -> pa.ChunkedArray:
        """A top-level field's values at ``rows``."""

    def read_many(self, field_idxs: list[int], rows: Rows) -> list[pa.ChunkedArray]:
        """:meth:`read` of several fields (the 2.1+ backend plans their I/O together)."""

    def read_blob_descriptions(self, field_idx: int, rows) -> pa.ChunkedArray:
        """A blob column's ``(position, size)`` descriptions, without the values."""

    def prepare_take(self, field_idx: int) -> None:
        """Load what random access to a field needs (idempotent, thread-safe)."""

    def leaf_columns(self, field_idx: int) -> list[tuple[int, str]]:
        """``[(column, leaf name)]`` of a field whose pages decode one by one (2.1+)."""

    def column_pages(self, field_idx: int, column: int) -> list[PageRef]:
        """The checked pages of one of those columns."""

    def decode_page(self, field_idx: int, column: int, page: PageRef) -> list[pa.Array]:
        """One of those pages, decoded whole."""

    def column_metadata_position(self, column: int) -> int:
        """Where a column's metadata starts in the file."""

    def search_cache_memory(self) -> dict[str, int]:
        """Bytes of random-access metadata held per leaf column."""

    def page_statistics(self, *, raw: bool = False, stats_factory=None):
        """Statistics pages (0.1 files), else None."""


class WholeFile:
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
        self._inner.count_read(length)
        return self._data[offset:offset + length]

    def read_ranges(self, ranges) -> list[memoryview]:
        view = memoryview(self._data)
        out = []
        for off, n in ranges:
            self._check(off, n)
            out.append(view[off:off + n])
        if out:
            self._inner.count_read(sum(len(v) for v in out))
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
        self._inner.count_read(int(lengths.sum()))
        lo = int(offsets.min())
        return self._arr[lo:int((offsets + lengths).max())], offsets - lo


def open_backend(path: str, io, *, legacy_only: bool = False) -> FileBackend:
    """The backend of the file ``io`` reads (``path`` names it in messages), chosen
    by its footer; one read of the file's tail (two for 2.x files whose metadata is
    larger than :data:`TAIL_READ_BYTES`). ``legacy_only``: refuse anything but 0.1."""
    if legacy_only:
        return V01Backend(path, io)
    size = io.size()
    if size < FOOTER_SIZE:
        raise CorruptFileError(f"file {path!r}: {size} bytes is too small to be a Lance "
                               f"file (the footer alone is {FOOTER_SIZE})")
    tail_start = max(0, size - TAIL_READ_BYTES)
    tail = io.read(tail_start, size - tail_start)
    footer = Footer.parse(tail, size, path)
    version = version_from_footer(footer.major, footer.minor, path)
    if version is FileVersion.LEGACY:
        return V01Backend(path, io, tail, tail_start)
    if tail_start == 0 and isinstance(io, lio.RangeReader):
        io = WholeFile(io, tail)
    container = _container(path, io, footer, tail, tail_start, size)
    if version is FileVersion.V2_0:
        return V20Backend(path, io, container)
    return V21Backend(path, io, version, container)


# The data files of one writer (thousands of small fragments) often end in the same
# metadata bytes: same schema, row count, page positions and encodings. Their parsed
# container (offset tables, schema) is then the same; it is parsed once per distinct
# (file size, metadata bytes) and copied for each file (the path, which messages name,
# is the copy's own). Keyed by content, so it cannot serve a stale parse.
_CONTAINERS: dict[tuple[int, bytes], Container] = {}
_CONTAINERS_SIZE = 256
_CONTAINERS_LOCK = module_lock(globals(), "_CONTAINERS_LOCK")


def _container(path: str, io, footer: Footer, tail: bytes, tail_start: int,
               size: int) -> Container:
    """``Container(path, io, footer, tail, tail_start)``, through :data:`_CONTAINERS`
    when the whole metadata region (schema buffer to footer) is inside ``tail``."""
    start = footer.column_meta_start
    gbo_at = footer.gbo_position - tail_start
    if footer.num_global_buffers and 0 <= gbo_at and gbo_at + 8 <= len(tail):
        start = min(start, struct.unpack_from("<Q", tail, gbo_at)[0])
    if start < tail_start:
        return Container(path, io, footer, tail, tail_start)
    key = (size, bytes(memoryview(tail)[start - tail_start:]))
    hit = _CONTAINERS.get(key)
    if hit is None:
        # (the cached parse holds the metadata bytes only, not a small file's pages)
        hit = Container(path, io, footer, key[1], start)
        with _CONTAINERS_LOCK:
            if len(_CONTAINERS) >= _CONTAINERS_SIZE:
                _CONTAINERS.pop(next(iter(_CONTAINERS)), None)
            _CONTAINERS[key] = hit
        return hit
    c = copy.copy(hit)
    c.path = path
    return c
