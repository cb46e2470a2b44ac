"""Small data files of one shape: read whole, decoded through shared page decoders.

A table grown by many small appends (streaming ingestion, ``max_rows_per_file=100``)
has thousands of data files that one writer made alike: the same schema, row count,
page positions and encodings, so the bytes from the schema buffer to the footer are
the same in every one of them; only the pages differ. Opening each such file the
usual way parses that metadata again, and its first read builds the column's page
decoders again, which costs more than decoding its few rows.

:func:`open_small` reads a 2.1+ data file of at most :data:`SMALL_FILE_BYTES` whole
(one request, as the usual open's tail read would) and looks its metadata bytes up
in a process-wide table keyed by ``(file size, metadata bytes)``: by content, so a
hit is the same parse by construction. A hit gives a :class:`SmallFile`, which answers
the metadata questions a fragment asks (rows, fields, column mapping) from the first
file of that shape and decodes a whole column of a flat (not nested) field from its
own bytes through page decoders built once per shape. Anything else (rows by
position, ranges, nested fields, statistics) goes to a full
:class:`~lancenb.file.LanceFileReader` of the file, opened from the bytes already
read; so does a decode that fails (the full reader then names this file in its
message, where the shared decoders would name the first file of the shape).

Example: 1,000 files of 100 rows written by one ``write_dataset`` call share one
shape: one full open and one set of page decoders, then 1,000 whole-file reads and
page decodes.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.cache import scanning
from lancenb.encodings.page import PageDecoder
from lancenb.encodings.structural import miniblock
from lancenb.errors import LanceError
from lancenb.file.backend import WholeFile
from lancenb.file.format import FOOTER_SIZE, MAGIC
from lancenb.file.reader import LanceFileReader
from lancenb.io.pools import module_lock

__all__ = ["open_small", "SmallFile", "decode_ahead", "take_small",
           "SMALL_FILE_BYTES"]

# files of at most this many bytes are read whole and matched by their metadata
SMALL_FILE_BYTES = 64 * 1024
# whole-column decodes read mini-block pages in pieces of about this many bytes
_PIECE_BYTES = 1 << 20
# scans decode the small files of this many fragments at a time together (below the
# dataset's reader cache of 128, which holds the decoded columns until they are read)
DECODE_AHEAD_FILES = 64
_FOOTER = struct.Struct("<QQQIIHH4s")
_SHAPES: dict[tuple[int, bytes], "_Shape"] = {}
_SHAPES_SIZE = 64
_LOCK = module_lock(globals(), "_LOCK")


class _Shape:
    """What files of one ``(size, metadata bytes)`` share: a reader of the first such
    file (metadata questions only) and, per flat field, its pages' decoders."""

    def __init__(self, reader: LanceFileReader, size: int):
        self.reader = reader
        self.size = size
        self.rows = reader.num_rows()
        self._decoders: dict[int, list | None] = {}

    def decoders(self, field_idx: int):
        """The page decoders of a flat top-level field (built once, attached to no
        search cache), or None for a field this module leaves to the full reader."""
        if field_idx in self._decoders:
            return self._decoders[field_idx]
        r = self.reader
        f = r.fields[field_idx]
        st = f.storage.type
        decs = None
        if not (pa.types.is_nested(st) or pa.types.is_dictionary(st)
                or isinstance(st, pa.ExtensionType)) and st == f.arrow.type:
            leaves = r.leaf_columns(field_idx)
            if len(leaves) == 1:
                decs = [PageDecoder(p.encoding, p.info, st, p.where, None,
                                    file_size=self.size)
                        for p in r.column_pages(field_idx, leaves[0][0])]
        self._decoders[field_idx] = decs
        return decs


def _metadata_key(data: bytes, size: int):
    """``(size, bytes from the schema buffer to the end)`` of a whole 2.1+ file, or
    None (another version, or not a Lance file: the full reader says what is wrong)."""
    if size < FOOTER_SIZE:
        return None
    cm, _, gbo, ngb, _, major, minor, magic = _FOOTER.unpack_from(data, size - FOOTER_SIZE)
    if magic != MAGIC or (major, minor) not in ((2, 1), (2, 2)) or ngb < 1:
        return None
    if gbo + 16 > size or cm > size:
        return None
    start = min(cm, struct.unpack_from("<Q", data, gbo)[0])
    if start > size:
        return None
    return size, bytes(data[start:])


def open_small(store, rel: str, uri: str):
    """A reader of the data file ``rel`` of ``store``: a :class:`SmallFile` when it is
    a 2.1+ file of at most :data:`SMALL_FILE_BYTES`, else None (open it the usual way).

    Parameters
    ----------
    store : lancenb.io.store.Store
        The dataset's store (its filesystem object and I/O counters).
    rel : str
        The object's path relative to the dataset root (``data/<name>``), checked.
    uri : str
        The file's URI, as messages name it.
    """
    io = store.open_reader(rel)
    size = io.size()
    try:
        if size > SMALL_FILE_BYTES:
            return None
        data = io.read(0, size)
    finally:
        # every later read is served from ``data``: no file handle is held (a scan of
        # 10,000 fragments, a shape kept for the process's lifetime)
        io.close()
    whole = WholeFile(io, data)
    key = _metadata_key(data, size)
    if key is None:
        return None
    shape = _SHAPES.get(key)
    if shape is None:
        # a reader of its own (the dataset's reader of this file may fill a search
        # cache on takes; the shape's holds metadata and decoders only)
        shape = _Shape(LanceFileReader(uri, storage_options=store.storage_options,
                                       _io=WholeFile(io, data)), size)
        with _LOCK:
            if len(_SHAPES) >= _SHAPES_SIZE:
                _SHAPES.pop(next(iter(_SHAPES)), None)
            _SHAPES[key] = shape
    return SmallFile(shape, uri, whole, store.storage_options, data)


class SmallFile:
    """The read surface a fragment uses of a :class:`~lancenb.file.LanceFileReader`,
    for a small file whose metadata matched a known shape (see the module text).

    Whole flat columns decode from this file's bytes through the shape's decoders;
    every other call goes to a full reader of this file, opened on first need from
    the bytes already in memory.
    """

    def __init__(self, shape: _Shape, path: str, io: WholeFile, storage_options,
                 data: bytes = b""):
        #: the shape this file shares (metadata, page decoders) with files like it
        self.shape = shape
        self.path = path
        self._io = io
        self._options = storage_options
        self._full: LanceFileReader | None = None
        #: the whole file's bytes
        self.data = data
        # whole columns decoded ahead together with other files' (decode_ahead), by
        # field index; taken (and dropped) by the next read of the field
        self._ready: dict[int, pa.ChunkedArray] = {}
        r = shape.reader
        self.version = r.version
        self.schema_full = r.schema_full
        self.schema = r.schema

    def offer_decoded(self, field_idx: int, column: pa.ChunkedArray) -> None:
        """Keep ``column``, field ``field_idx`` decoded ahead with other files', for the
        next read of that field (which takes it)."""
        self._ready[field_idx] = column

    @property
    def shape_key(self) -> int:
        """Equal for files of one shape (their decoders are shared)."""
        return id(self.shape)

    def _reader(self) -> LanceFileReader:
        if self._full is None:
            self._full = LanceFileReader(self.path, storage_options=self._options,
                                         _io=self._io)
        return self._full

    def __getattr__(self, name):
        # (only called for what this class does not define: the full reader has it;
        # not for dunder names, nor before __init__ ran, e.g. inside copy or pickle)
        if name.startswith("__") or "shape" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self._reader(), name)

    @property
    def fields(self) -> list:
        """The file's top-level fields (those of its shape)."""
        return self.shape.reader.fields

    def num_rows(self) -> int:
        """Rows in the file."""
        return self.shape.rows

    def field_index(self, field) -> int:
        """See :meth:`lancenb.file.LanceFileReader.field_index`."""
        return self.shape.reader.field_index(field)

    def field_at_column(self, column: int) -> int | None:
        """See :meth:`lancenb.file.LanceFileReader.field_at_column`."""
        return self.shape.reader.field_at_column(column)

    def fields_at_columns(self, columns):
        """See :meth:`lancenb.file.LanceFileReader.fields_at_columns`."""
        return self.shape.reader.fields_at_columns(columns)

    def read_global_buffer(self, index: int) -> bytes:
        """See :meth:`lancenb.file.LanceFileReader.read_global_buffer`: from this file's
        own bytes, at the position its offset table gives (a page-statistics read needs
        no full reader of each small file)."""
        data = self.data
        size = len(data)
        if size >= FOOTER_SIZE:
            _, _, gbo, ngb, *_ = _FOOTER.unpack_from(data, size - FOOTER_SIZE)
            index = int(index)
            if 0 <= index < ngb and gbo + 16 * (index + 1) <= size - FOOTER_SIZE:
                pos, n = struct.unpack_from("<QQ", data, gbo + 16 * index)
                if pos + n <= size:
                    return self._io.read(pos, n)
        return self._reader().read_global_buffer(index)  # (which says what is wrong)

    def read_column(self, field, *, rows=None, range=None) -> pa.ChunkedArray:
        """See :meth:`lancenb.file.LanceFileReader.read_column`: a flat field through
        the shape's decoders (rows by position taken from the whole column: a small
        file decodes whole for less than its random-access set-up costs), anything
        else through the full reader."""
        if rows is not None and range is None:
            rows = np.asarray(rows, dtype=np.int64).reshape(-1)
            if not rows.size or (rows.min() >= 0 and rows.max() < self.shape.rows):
                whole = self._whole(field)
                if whole is not None:
                    return whole.take(pa.array(rows))
        elif range is None:
            whole = self._whole(field)
            if whole is not None:
                return whole
        return self._reader().read_column(field, rows=rows, range=range)

    def _whole(self, field) -> pa.ChunkedArray | None:
        """Every row of a flat field, through the shape's decoders; None for a field
        they do not cover or a page they cannot decode."""
        idx = self.shape.reader.field_index(field)
        hit = self._ready.pop(idx, None)
        if hit is not None:
            return hit
        decs = self.shape.decoders(idx)
        if decs is None:
            return None
        try:
            # a scratch area of this file's own: the decoders keep nothing
            with scanning():
                arrays = [a for d in decs for a in d.scan(self._io, _PIECE_BYTES)]
        except LanceError:
            return None  # the full reader decodes it again and names this file
        return pa.chunked_array(arrays, type=self.fields[idx].arrow.type)

    def read_columns(self, fields, *, rows=None,
                     dictionaries: bool = False) -> list[pa.ChunkedArray]:
        """See :meth:`lancenb.file.LanceFileReader.read_columns`: every row of each
        field as :meth:`read_column` reads it (``dictionaries`` is accepted; a small
        file's pages are decoded, which is what they cost anyway)."""
        return [self.read_column(f, rows=rows) for f in fields]


def decode_ahead(files: list, field_idx: int) -> None:
    """Decode one flat field of many small files of one shape together: every page of
    every file in one vectorised mini-block decode (:func:`miniblock.decode_pages`,
    the shape's decoders standing for each file's, the files' bytes side by side).
    Each file keeps its column for its next read of the field. Pages that are not
    plain mini-block pages, or anything that does not check, leave the files to
    decode one by one (which names a fault in its own file).

    Parameters
    ----------
    files : list of SmallFile
        Files of one shape (``file.shape`` the same object).
    field_idx : int
        The top-level field, by position in the shape's fields.
    """
    if len(files) < 2:
        return
    shape = files[0].shape
    decs = shape.decoders(field_idx)
    if not decs:
        return
    ranges = [d.buffer_ranges() for d in decs]
    key = None
    for d, rs in zip(decs, ranges):
        if d.kind != "mini_block_layout" or d.chain is not None or len(rs) != 2:
            return
        k = d.impl.impl.batch_key()
        if k is None or (key is not None and k != key):
            return
        key = k
    size = shape.size
    data = np.frombuffer(b"".join(f.data for f in files), dtype=np.uint8)
    if len(data) != size * len(files):
        return
    base = np.repeat(np.arange(len(files), dtype=np.int64) * size, len(decs))
    meta = np.array([rs[0] for rs in ranges] * len(files), dtype=np.int64)
    chunks = np.array([rs[1] for rs in ranges] * len(files), dtype=np.int64)
    meta[:, 0] += base
    chunks[:, 0] += base
    blocks = miniblock.decode_pages([d.impl.impl for d in decs] * len(files), data, meta,
                                    chunks)
    if blocks is None:
        return
    typ = shape.reader.fields[field_idx].arrow.type
    n = len(decs)
    for i, f in enumerate(files):
        f.offer_decoded(field_idx, pa.chunked_array(
            [d.impl.values.array(b, None) for d, b in zip(decs, blocks[i * n:(i + 1) * n])],
            type=typ))


def take_small(files: list, fields: list[int], file_of: np.ndarray,
               rows: np.ndarray) -> list[pa.Array] | None:
    """Rows of flat fields of small files of one shape, every page of every field of
    every file decoded in one vectorised mini-block decode per kind of page
    (:func:`miniblock.decode_pages`, the shape's decoders standing for each file's),
    then one gather per field. What a take of a few rows spread over many small
    fragments needs, instead of a whole-column decode and a take per file and column.

    Parameters
    ----------
    files : list of SmallFile
        Distinct files of one shape (``file.shape`` the same object).
    fields : list of int
        Top-level fields, by position in the shape's fields.
    file_of, rows : numpy.ndarray of int64
        For each row wanted, in the order wanted (repeats allowed): the position of
        its file in ``files`` and its row in that file (``0 <= row < rows of the
        shape``, checked by the caller).

    Returns
    -------
    list of pyarrow.Array or None
        One array per field, the rows in the order given; None when a page is not a
        plain mini-block page of whole-byte values, or anything does not check (the
        caller then reads file by file, which names a fault in its own file).

    Examples
    --------
    >>> a, b = (open_small(store, f"data/{n}", uri) for n in names)  # doctest: +SKIP
    >>> take_small([a, b], [0], np.array([1, 0]), np.array([7, 0]))  # doctest: +SKIP
    [<pyarrow.lib.Int64Array ...> [row 7 of b, row 0 of a]]
    """
    shape = files[0].shape
    if any(f.shape is not shape for f in files):
        return None
    size, nf = shape.size, len(files)
    data = np.frombuffer(b"".join(f.data for f in files), dtype=np.uint8)
    if len(data) != size * nf:
        return None
    # page instances (field j, file i, page p) in that order, grouped by what decodes
    # together: then each field's values come out file after file, page after page
    groups: dict = {}
    field_decs = []
    for j, idx in enumerate(fields):
        decs = shape.decoders(idx)
        if not decs:
            return None
        field_decs.append(decs)
        for p, d in enumerate(decs):
            rs = d.buffer_ranges()
            if d.kind != "mini_block_layout" or d.chain is not None or len(rs) != 2:
                return None
            key = d.impl.impl.batch_key()
            if key is None:
                return None
            groups.setdefault((key, d.impl.impl.dtype_bits), []).append((j, p, d, rs))
    blocks: list = [[None] * (nf * len(decs)) for decs in field_decs]
    for members in groups.values():
        base = np.repeat(np.arange(nf, dtype=np.int64) * size, len(members))
        meta = np.array([rs[0] for *_, rs in members] * nf, dtype=np.int64)
        chunks = np.array([rs[1] for *_, rs in members] * nf, dtype=np.int64)
        meta[:, 0] += base
        chunks[:, 0] += base
        got = miniblock.decode_pages([d.impl.impl for _, _, d, _ in members] * nf, data,
                                     meta, chunks)
        if got is None:
            return None
        k = 0
        for i in range(nf):
            for j, p, _, _ in members:
                blocks[j][i * len(field_decs[j]) + p] = got[k]
                k += 1
    pos = file_of * shape.rows + rows
    out = []
    for decs, bl in zip(field_decs, blocks):
        bits = bl[0].bits
        if sum(b.num_values for b in bl) != nf * shape.rows:
            return None
        values = np.concatenate([b.data for b in bl]).reshape(-1, bits // 8)
        out.append(decs[0].impl.values.array(FixedWidth(bits, values[pos].reshape(-1),
                                                        len(pos)), None))
    return out
