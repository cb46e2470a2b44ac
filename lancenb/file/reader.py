"""``LanceFileReader``: read a Lance file of any version, whole, by range or by row.

The reader is a thin facade over one :class:`~lancenb.file.backend.FileBackend` per
version family (0.1, 2.0, 2.1+), chosen once from the footer when the file is opened.
It checks what callers ask for, builds tables and batches, and decodes columns on a
thread pool; the backends know the bytes.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from lancenb import io as lio
from lancenb.encodings.page import dictionaries_kept
from lancenb.encodings.structural import dictarray
from lancenb.errors import InvalidInputError
from lancenb.file.backend import FileBackend, open_backend
from lancenb.file.extensions import public_columns, public_schema, with_extension_types
from lancenb.file.metadata import (
    FileStatistics,
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceFileMetadata,
    LancePageMetadata,
    PageRef,
    cached_fields_to_schema,
    check_range,
    project,
)
from lancenb.file.schema import FieldList
from lancenb.file.version import FileVersion
from lancenb.io.pools import ThreadPool

__all__ = ["LanceFileReader", "LegacyFileReader", "ReaderResults", "LanceFileMetadata",
           "LanceColumnMetadata", "LancePageMetadata", "LanceBufferDescriptor", "PageRef",
           "cached_fields_to_schema"]

# one decode pool per process, started on first use (starting threads costs
# milliseconds) and started anew in a forked child (lancenb.io.pools)
_POOL = ThreadPool(lambda: os.cpu_count() or 1, "lancenb-decode")


def _pool() -> ThreadPoolExecutor:
    """The decode pool (kernels release the GIL, so columns decode in parallel)."""
    return _POOL.get()


class ReaderResults:
    """The rows a read produced, as a Table or a stream of batches.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.file import LanceFileReader, LanceFileWriter
    >>> with LanceFileWriter("memory://results-example.lance") as w:
    ...     w.write_batch(pa.table({"x": list(range(5))}))
    >>> res = LanceFileReader("memory://results-example.lance").read_all(batch_size=2)
    >>> [b.num_rows for b in res.to_batches()]
    [2, 2, 1]
    """

    def __init__(self, table: pa.Table, batch_size: int):
        self._table = table
        self._batch_size = batch_size

    def to_table(self) -> pa.Table:
        """All the rows as one :class:`pyarrow.Table`."""
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


class LanceFileReader:
    """Read a Lance file (same surface as pylance's ``lance.file.LanceFileReader``).

    Opens files of every version pylance writes: 0.1 (legacy), 2.0, 2.1 and 2.2.
    Opening reads the footer and every piece of metadata in one request (two when
    the metadata is larger than 64 KiB). Only the projected ``columns`` are decoded.

    Parameters
    ----------
    path : str or os.PathLike
        Local path or URI (anything fsspec resolves, e.g. ``memory://``, ``s3://``).
    storage_options : dict, optional
        Passed to fsspec.
    columns : list of str, optional
        Top-level columns that ``read_all``, ``read_range`` and ``take_rows`` return
        (default: all); an unknown name raises :class:`~lancenb.errors.InvalidInputError`.

    Attributes
    ----------
    version : FileVersion
        The file's format version, from its footer.
    schema : pyarrow.Schema
        The projected schema; ``schema_full`` is the file's. Both as stored: an
        extension column is its storage type tagged with ``ARROW:extension:*``; reads
        (``read_all``, ``read_range``, ``take_rows``) and ``metadata().schema`` give
        it as the extension type.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.file import LanceFileReader, LanceFileWriter
    >>> with LanceFileWriter("memory://reader-example.lance", version="2.1") as w:
    ...     w.write_batch(pa.table({"x": [1, 2, 3], "s": ["a", "b", "c"]}))
    >>> r = LanceFileReader("memory://reader-example.lance", columns=["s"])
    >>> r.num_rows(), r.version.label
    (3, '2.1')
    >>> r.take_rows([2, 0]).to_table().column("s").to_pylist()
    ['c', 'a']
    """

    _legacy_only = False

    def __init__(self, path, storage_options: dict | None = None,
                 columns: list[str] | None = None, *, _io=None):
        # ``_io``: an open RangeReader (a dataset opens its data files through its
        # own filesystem object; ``path`` then only names the file in messages)
        self.path = os.fspath(path)
        io = _io if _io is not None else lio.open_reader(self.path, storage_options)
        self._backend: FileBackend = open_backend(self.path, io, legacy_only=self._legacy_only)
        self._io = self._backend.io  # (a small file's bytes, when the tail read took it all)
        self.version: FileVersion = self._backend.version
        self.schema_full: pa.Schema = self._backend.schema_full
        self._projection, self.schema = project(self.schema_full, columns, self.path)
        self._name_index: dict[str, int] | None = None
        self._public_cols: list[int] | None = None

    # -- metadata ------------------------------------------------------------------
    def metadata(self) -> LanceFileMetadata:
        """Schema, sizes and every column's pages (decodes all column metadata).

        Returns
        -------
        LanceFileMetadata
            As pylance's: ``num_rows``, byte counts, ``major_version`` and
            ``minor_version``, ``global_buffers`` and, per column, its pages
            (buffers, rows and a compact description of their encoding).

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://metadata-example.lance", version="2.1") as w:
        ...     w.write_batch(pa.table({"x": [1, 2, 3]}))
        >>> md = LanceFileReader("memory://metadata-example.lance").metadata()
        >>> md.num_rows, (md.major_version, md.minor_version), len(md.columns)
        (3, (2, 1), 1)
        """
        md = self._backend.metadata()
        cols = public_columns(md.schema, json=False)  # (JSON stays JSONB, as pylance's)
        return dataclasses.replace(md, schema=public_schema(md.schema, cols)) if cols else md

    def file_statistics(self) -> FileStatistics:
        """Per column, its number of pages and the bytes of their buffers (pylance's
        ``file_statistics()``)."""
        return FileStatistics.of(self._backend.metadata())

    def num_rows(self) -> int:
        """Rows in the file."""
        return self._backend.num_rows

    def read_global_buffer(self, index: int) -> bytes:
        """The bytes of global buffer ``index`` (0 is the schema; 2.x files only)."""
        return self._backend.read_global_buffer(int(index))

    def search_cache_memory(self) -> dict[str, int]:
        """Bytes the search cache holds per column (leaf column names, e.g. ``s.x``)."""
        return self._backend.search_cache_memory()

    def page_statistics(self, *, raw: bool = False, stats_factory=None):
        """A 0.1 file's statistics pages, ``(batch_offsets, {field id: [stats per
        batch]})``; None for 2.x files (their statistics are a global buffer) and for
        0.1 files without any. See :meth:`lancenb.file.formats.v0_1.V01Backend.page_statistics`."""
        return self._backend.page_statistics(raw=raw, stats_factory=stats_factory)

    # -- fields and columns --------------------------------------------------------
    @property
    def fields(self) -> list:
        """The file's top-level fields (:class:`lancenb.file.schema.LanceField`: name,
        field id, Arrow field, children), in schema order."""
        return self._backend.fields

    def field_index(self, field) -> int:
        """The position of a top-level field, given its name or its position.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://field-index.lance") as w:
        ...     w.write_batch(pa.table({"a": [1], "b": [2]}))
        >>> LanceFileReader("memory://field-index.lance").field_index("b")
        1
        """
        fields = self._backend.fields
        if isinstance(field, (int, np.integer)):
            i = int(field)
            if not 0 <= i < len(fields):
                raise InvalidInputError(f"{self.path!r}: no field {i} (the file has "
                                        f"{len(fields)})")
            return i
        if self._name_index is None:  # built once: wide files are looked up by name a lot
            if isinstance(fields, FieldList):  # (shared by every reader of that schema)
                self._name_index = fields.name_index()
            else:
                self._name_index = FieldList(fields).name_index()
        try:
            return self._name_index[field]
        except KeyError:
            raise InvalidInputError(f"{self.path!r}: no column {field!r}; the file has "
                                    f"{[f.name for f in fields]}") from None

    def field_at_column(self, column: int) -> int | None:
        """The top-level field whose columns hold ``column`` (the field a data file's
        ``column_indices`` entry names; for 0.1 files, field ids in pre-order): the
        last field starting at or before it, which is not always the field starting
        at it (a struct whose first child was dropped from the dataset is listed from
        a later column; a field of no columns starts where the next one does). None
        when no field holds it."""
        got = self.fields_at_columns(np.array([column], dtype=np.int64))
        return None if got[0] < 0 else int(got[0])

    def fields_at_columns(self, columns: np.ndarray) -> np.ndarray:
        """:meth:`field_at_column` of many columns at once (int64 array; -1 where no
        field holds the column)."""
        cols = np.asarray(self._backend.columns_of, dtype=np.int64)
        if not len(cols):
            return np.full(len(columns), -1, dtype=np.int64)
        at = np.searchsorted(cols, columns, side="right") - 1
        # past the last field's columns (a generous bound: a 2.0 string field has two)
        last = 2 * sum(1 for _ in self._backend.fields[-1].walk())
        bad = (at < 0) | (columns >= cols[-1] + last)
        return np.where(bad, -1, at)

    def leaf_columns(self, field) -> list[tuple[int, str]]:
        """``[(column index, leaf name)]`` of a top-level field of a 2.1+ file (whose
        pages decode one by one; 2.0 and 0.1 columns decode whole and raise
        :class:`~lancenb.errors.NotSupportedError`)."""
        return self._backend.leaf_columns(self.field_index(field))

    def column_metadata_position(self, column: int) -> int:
        """Where a column's metadata starts in the file (2.x)."""
        return self._backend.column_metadata_position(int(column))

    def column_pages(self, field, column: int) -> list[PageRef]:
        """The checked pages of one of a field's columns (see :meth:`leaf_columns`);
        a :class:`~lancenb.errors.CorruptFileError` when its metadata is damaged."""
        return self._backend.column_pages(self.field_index(field), int(column))

    def decode_page(self, field, column: int, page: PageRef) -> list[pa.Array]:
        """Decode one page (an entry of :meth:`column_pages`) whole, in pieces. A leaf
        of a nested field decodes inside its parents (here a struct holding ``b``).

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://pages-example.lance") as w:
        ...     w.write_batch(pa.table({"s": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]}))
        >>> r = LanceFileReader("memory://pages-example.lance")
        >>> r.leaf_columns("s")
        [(0, 's.a'), (1, 's.b')]
        >>> (page,) = r.column_pages("s", 1)
        >>> page.info.num_rows, [a.to_pylist() for a in r.decode_page("s", 1, page)]
        (2, [[{'b': 'x'}, {'b': 'y'}]])
        """
        return self._backend.decode_page(self.field_index(field), int(column), page)

    # -- reading columns -----------------------------------------------------------
    def _check_rows(self, rows: np.ndarray) -> None:
        n = self._backend.num_rows
        if rows.size and (rows.min() < 0 or rows.max() >= n):
            bad = int(rows[(rows < 0) | (rows >= n)][0])
            raise InvalidInputError(f"{self.path!r}: row {bad} is out of range (the file has "
                                    f"{n} rows)")

    def read_column(self, field, *, rows=None, range=None) -> pa.ChunkedArray:
        """One top-level field's values.

        Parameters
        ----------
        field : str or int
            The field's name or position among the top-level fields.
        rows : array-like of int, optional
            Row numbers sorted ascending (duplicates allowed).
        range : tuple of (int, int), optional
            ``(start, num_rows)``. Without ``rows`` or ``range``: every row.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://read-column.lance") as w:
        ...     w.write_batch(pa.table({"x": [10, 11, 12, 13]}))
        >>> r = LanceFileReader("memory://read-column.lance")
        >>> r.read_column("x", range=(1, 2)).to_pylist()
        [11, 12]
        >>> r.read_column(0, rows=[0, 3]).to_pylist()
        [10, 13]
        """
        i = self.field_index(field)
        if rows is not None:
            rows = np.asarray(rows, dtype=np.int64).reshape(-1)
            self._check_rows(rows)
            return self._backend.read(i, rows)
        if range is not None:
            start, n = check_range(self.path, range[0], range[1], self._backend.num_rows)
            return self._backend.read(i, _range(start, start + n))
        return self._backend.read(i, None)

    def read_blob_descriptions(self, field, *, rows=None) -> pa.ChunkedArray:
        """A top-level blob column's ``(position, size)`` descriptions, every row or
        ``rows`` (sorted ascending), without reading the blob values."""
        if rows is not None:
            rows = np.asarray(rows, dtype=np.int64).reshape(-1)
            self._check_rows(rows)
        return self._backend.read_blob_descriptions(self.field_index(field), rows)

    def prepare_take(self, fields=None) -> None:
        """Load what random access to ``fields`` (names or positions; default: the
        projected ones) needs: chunk tables, dictionaries and repetition indices, one
        coalesced read per field. Takes do this on first use; calling it first moves
        that cost out of the first take."""
        for f in (self._projection if fields is None else fields):
            self._backend.prepare_take(self.field_index(f))

    # -- reading tables ------------------------------------------------------------
    def read_columns(self, fields, *, rows=None,
                     dictionaries: bool = False) -> list[pa.ChunkedArray]:
        """Several top-level fields' values, read together: what :meth:`read_column`
        gives for each, with the reads of all of them planned at once (a wide file's
        small pages in a few coalesced requests).

        Parameters
        ----------
        fields : list of str or int
            Names or positions of top-level fields.
        rows : array-like of int, optional
            Row numbers sorted ascending (duplicates allowed); default every row.
        dictionaries : bool, default False
            A string or binary field all of whose pages read are dictionary-encoded
            (2.1/2.2 files) comes back as ``dictionary<int32, type>`` arrays of each
            page's items, without building every row's value; other fields, and
            files of other versions, as usual.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://read-columns.lance") as w:
        ...     w.write_batch(pa.table({"x": [1, 2, 3], "y": [4.0, 5.0, 6.0]}))
        >>> r = LanceFileReader("memory://read-columns.lance")
        >>> [c.to_pylist() for c in r.read_columns(["y", "x"], rows=[0, 2])]
        [[4.0, 6.0], [1, 3]]
        """
        idx = [self.field_index(f) for f in fields]
        if rows is not None:
            rows = np.asarray(rows, dtype=np.int64).reshape(-1)
            self._check_rows(rows)
        if dictionaries:  # (on this thread: the decoders see the request there)
            with dictionaries_kept():
                return self._backend.read_many(idx, rows)
        count = self._backend.num_rows if rows is None else len(rows)
        return self._read_fields(idx, rows, count >= self._backend.parallel_take_rows)

    def _read_fields(self, fields: list[int], rows, parallel: bool) -> list[pa.ChunkedArray]:
        """The fields' arrays; on the decode pool when ``parallel``: a field per task,
        or for many fields groups of them (each group's reads planned together)."""
        b = self._backend
        if len(fields) < 2 or not parallel:
            return b.read_many(fields, rows)
        cpus = os.cpu_count() or 1  # (a system call: not on every small read)
        if cpus < 2:
            return b.read_many(fields, rows)
        if len(fields) <= _FIELDS_PER_TASK * cpus:
            return list(_pool().map(lambda c: b.read(c, rows), fields))
        step = -(-len(fields) // (2 * cpus))
        groups = [fields[i:i + step] for i in _range(0, len(fields), step)]
        return [a for got in _pool().map(lambda g: b.read_many(g, rows), groups) for a in got]

    def _table(self, rows, parallel_from: int, count: int) -> pa.Table:
        arrays = self._read_fields(self._projection, rows, count >= parallel_from)
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        if self._public_cols is None:
            self._public_cols = public_columns(self.schema, json=False)
        # (extension columns come back as their extension types, as pylance's do)
        return with_extension_types(table, self._public_cols) if self._public_cols else table

    def read_all(self, *, batch_size: int = 1024, batch_readahead: int = 16) -> ReaderResults:
        """Every row of the projected columns.

        Parameters
        ----------
        batch_size : int, default 1024
            Rows per batch of :meth:`ReaderResults.to_batches`.
        batch_readahead : int, default 16
            Accepted for pylance compatibility; without effect (the rows are read
            when this returns).

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://read-all.lance") as w:
        ...     w.write_batch(pa.table({"x": [1, 2, 3]}))
        >>> LanceFileReader("memory://read-all.lance").read_all().to_table().num_rows
        3
        """
        b = self._backend
        return ReaderResults(self._table(None, b.parallel_scan_rows, b.num_rows), batch_size)

    def read_range(self, start: int, num_rows: int, *, batch_size: int = 1024,
                   batch_readahead: int = 16) -> ReaderResults:
        """Rows ``[start, start + num_rows)`` of the projected columns (the range must
        lie in the file; ``batch_size``, ``batch_readahead`` as in :meth:`read_all`).

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://read-range.lance") as w:
        ...     w.write_batch(pa.table({"x": list(range(10))}))
        >>> r = LanceFileReader("memory://read-range.lance")
        >>> r.read_range(4, 3).to_table().column("x").to_pylist()
        [4, 5, 6]
        """
        b = self._backend
        start, num_rows = check_range(self.path, start, num_rows, b.num_rows)
        return ReaderResults(self._table(_range(start, start + num_rows),
                                         b.parallel_scan_rows, num_rows), batch_size)

    def take_rows(self, indices, *, batch_size: int = 1024,
                  batch_readahead: int = 16) -> ReaderResults:
        """Rows at ``indices``, in the order given (duplicates allowed).

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://take-rows.lance") as w:
        ...     w.write_batch(pa.table({"x": list(range(10))}))
        >>> r = LanceFileReader("memory://take-rows.lance")
        >>> r.take_rows([7, 2, 7]).to_table().column("x").to_pylist()
        [7, 2, 7]
        """
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        self._check_rows(idx)
        order = None
        if idx.size > 1 and np.any(np.diff(idx) < 0):
            order = np.argsort(idx, kind="stable")
            rows = idx[order]
        else:
            rows = idx
        table = self._table(rows, self._backend.parallel_take_rows, len(rows))
        if order is not None:
            inverse = np.empty_like(order)
            inverse[order] = np.arange(len(order))
            table = dictarray.take(table, pa.array(inverse))
        return ReaderResults(table, batch_size)


_range = range  # (read_column's keyword shadows the builtin inside it)
# reads of more fields than this many per CPU go to the pool in groups of fields
_FIELDS_PER_TASK = 4


class LegacyFileReader(LanceFileReader):
    """A :class:`LanceFileReader` that opens only legacy (0.1) files: anything else
    raises :class:`~lancenb.errors.NotSupportedError`. ``LanceFileReader`` opens 0.1
    files too; this class is for callers that know from a manifest that a data file
    is 0.1 (and want that checked)."""

    _legacy_only = True
