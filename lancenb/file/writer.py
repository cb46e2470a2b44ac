"""``LanceFileWriter``: Arrow batches in, one Lance 2.x file out.

The writer is a thin facade over one :class:`WriterBackend` per version family,
chosen from ``version`` when the schema is known:
:class:`~lancenb.file.formats.v0_1_write.V01Writer` for legacy 0.1 files (which end differently:
its ``finish_file``), :class:`~lancenb.file.formats.v2_0.V20Writer` for 2.0 and
:class:`~lancenb.file.formats.v2_1_write.V21Writer` for 2.1 and 2.2. The facade
checks what callers pass, owns the output stream and writes what every 2.x file ends
with: global buffer 0 (schema and row count), the column metadata, the offset tables
and the footer (:mod:`lancenb.file.format`).
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Protocol

import pyarrow as pa

from lancenb import io as lio
from lancenb._proto import file2_pb2, file_pb2
from lancenb.encodings import pb
from lancenb.encodings.config import writer_config
from lancenb.encodings.physical import fsl
from lancenb.encodings.structural import blob
from lancenb.errors import InvalidInputError, LanceError, NotSupportedError, SchemaError
from lancenb.file.extensions import extension_names, storage_batch, storage_schema
from lancenb.file.format import FOOTER_SIZE, PAD_BYTE, PAGE_ALIGN, Footer, pack_offset_table
from lancenb.file.formats.v0_1_write import V01Writer
from lancenb.file.formats.v2_0 import V20Writer
from lancenb.file.formats.v2_1_write import DEFAULT_COLUMN_BUDGET, V21Writer
from lancenb.file.schema import has_map
from lancenb.file.version import FileVersion

__all__ = ["LanceFileWriter", "WriterBackend", "DEFAULT_COLUMN_BUDGET"]

MAX_ROWS_PER_WRITE = 2**32 - 1


class WriterBackend(Protocol):
    """What :class:`LanceFileWriter` needs of a version family's column writers.

    ``columns`` are the file's columns in order, each with its ``pages``
    (``ColumnMetadata.Page`` messages, filled as pages are written) and, optionally,
    a ``column_encoding`` (serialized, for the column's metadata); ``fields_pb`` the
    schema's field messages.
    """

    columns: list
    fields_pb: list

    def write(self, batch: pa.RecordBatch) -> None:
        """Take a batch (schema already checked); write the pages that are full."""

    def finish(self) -> None:
        """Write every column's remaining pages."""


def _locked(method):
    """Run ``method`` holding the writer's lock (see :class:`LanceFileWriter`)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return run


class _BufferWriter:
    """Writes one 64-aligned buffer, 'H'-padded after, to ``out``; returns
    ``(position, size)``."""

    __slots__ = ("out",)

    def __init__(self, out):
        self.out = out

    def __call__(self, data) -> tuple[int, int]:
        pos = self.out.tell()
        n = self.out.write(data)
        pad = (-n) % PAGE_ALIGN
        if pad:
            self.out.write(PAD_BYTE * pad)
        return pos, n


class LanceFileWriter:
    """Write a Lance file (the same surface as pylance's ``lance.file.LanceFileWriter``).

    Use it as a context manager (the file is complete when the block ends without an
    exception, discarded otherwise), or call :meth:`close` or :meth:`abort`. A writer
    dropped without either is aborted when it is collected, as pylance's: nothing is
    left at ``path``.

    One writer may be shared by several threads, as pylance's: each call runs whole
    (a lock around it), so every batch's rows are written together, batches in the
    order their ``write_batch`` calls took the lock. Columns are still encoded on the
    encoder pool within a call.

    Parameters
    ----------
    path : str
        Local path or URI (anything fsspec resolves, e.g. ``memory://``).
    schema : pyarrow.Schema, optional
        The schema; taken from the first batch when omitted.
    data_cache_bytes : int, optional
        Bytes buffered across all columns before pages are written (split evenly;
        default 8 MiB per column). Smaller values make more, smaller pages.
    version : str, optional
        File format version: ``"2.0"``, ``"2.1"`` or ``"2.2"`` (the default, as pylance 14; also
        ``"stable"``/``"next"``), or ``"0.1"``/``"legacy"`` (the types
        :mod:`lancenb.file.formats.v0_1_write` lists; no global buffers).
    storage_options : dict, optional
        Passed to fsspec.
    max_page_bytes : int, optional
        2.0 files only: the largest page a column writes.
    compression : str, optional
        lancenb only. ``"compact"``: the compact profile (smallest files pylance still
        reads exactly: General zstd on mini-block chunks where it pays,
        byte-stream-split, dictionaries for numbers and one-byte strings; slower
        writes). ``"lz4"``/``"zstd"``/``"fsst"``/``"none"``: that
        ``lance-encoding:compression`` for every field. Field metadata
        (``lance-encoding:*``, ``lancenb:profile``) overrides it per field.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.file import LanceFileReader, LanceFileWriter
    >>> with LanceFileWriter("memory://writer-example.lance", version="2.2") as w:
    ...     w.write_batch(pa.table({"x": [1, 2, 3]}))
    >>> LanceFileReader("memory://writer-example.lance").version.label
    '2.2'
    """

    def __init__(self, path, schema: pa.Schema | None = None, *,
                 data_cache_bytes: int | None = None, version: str | None = None,
                 storage_options: dict | None = None, max_page_bytes: int | None = None,
                 compression: str | None = None, **kwargs):
        if kwargs:
            raise InvalidInputError(f"unknown LanceFileWriter options: {sorted(kwargs)}")
        self.version = FileVersion.resolve(version)
        if data_cache_bytes is not None and data_cache_bytes <= 0:
            raise InvalidInputError("data_cache_bytes must be positive")
        self._base_config = writer_config(compression)
        self.path = os.fspath(path)
        self._data_cache_bytes = data_cache_bytes
        self._max_page_bytes = max_page_bytes
        self._lock = threading.RLock()  # one call at a time (write_batch recurses)
        self._out = lio.open_writer(self.path, storage_options)
        # (a function of the stream, not a bound method: the backends hold it, and a
        # cycle back to the writer would keep an abandoned writer from being collected)
        self._write_buffer = _BufferWriter(self._out)
        self._global_buffers: list[tuple[int, int]] = []
        self._schema_metadata: dict[str, bytes] = {}
        self._schema: pa.Schema | None = None  # as stored
        self._input_schema: pa.Schema | None = None  # with extension types, if it had any
        self._backend: WriterBackend | None = None
        self._rows = 0
        self.closed = False
        self.size_bytes: int | None = None
        if schema is not None:
            self._set_schema(schema)

    # -- setup ---------------------------------------------------------------
    def _set_schema(self, schema: pa.Schema) -> None:
        # extension columns are stored as their storage type with the extension's tags
        # (Lance's own lance.* extensions are not: a dataset writer converts those)
        if not any(n.startswith(b"lance.") for f in schema for n in extension_names(f)):
            try:
                stored = storage_schema(schema)
            except LanceError as e:
                self._fail(e)
            if stored is not None:
                self._input_schema, schema = schema, stored
        v2 = [f.name for f in schema if blob.is_write_v2(f)]
        if v2 and self.version is not FileVersion.V2_2:
            self._fail(NotSupportedError(f"column {v2[0]!r}: blob v2 columns need file version "
                                         f"2.2, not {self.version.label}"))
        if self.version is not FileVersion.V2_2 and any(has_map(f.type) for f in schema):
            name = next(f.name for f in schema if has_map(f.type))
            self._fail(NotSupportedError(
                f"column {name!r}: map types need file version 2.2 (pylance refuses them in "
                f"{self.version.label} too)"))
        items = [f for f in schema if fsl.struct_items(f.type) is not None]
        if items and self.version is not FileVersion.V2_2:
            self._fail(NotSupportedError(
                f"column {items[0].name!r}: writing {items[0].type} needs file version 2.2 "
                f"(pylance refuses fixed-size lists of structs in {self.version.label} too)"))
        try:
            if self.version is FileVersion.LEGACY:
                self._backend = V01Writer(schema, self._out)
            elif self.version is FileVersion.V2_0:
                self._backend = V20Writer(schema, self._write_buffer,
                                          data_cache_bytes=self._data_cache_bytes,
                                          max_page_bytes=self._max_page_bytes)
            else:
                self._backend = V21Writer(schema, self.version, self._out, self._write_buffer,
                                          self._base_config, self._data_cache_bytes)
        except LanceError as e:
            self._fail(e)
        self._schema = schema
        for k, v in (schema.metadata or {}).items():
            self._schema_metadata.setdefault(k.decode(), v)

    def _fail(self, exc: Exception):
        self._out.abort()
        self.closed = True
        raise exc

    # -- public API ----------------------------------------------------------
    @_locked
    def add_schema_metadata(self, key: str, value: str) -> None:
        """Add (or replace) a key of the schema's metadata, written when the file closes."""
        self._check_open()
        self._schema_metadata[key] = value.encode() if isinstance(value, str) else bytes(value)

    @_locked
    def add_global_buffer(self, data: bytes) -> int:
        """Write ``data`` as a global buffer now; returns its index (1, 2, ...; 0 is
        the schema), for :meth:`LanceFileReader.read_global_buffer`.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://global-buffer.lance") as w:
        ...     w.write_batch(pa.table({"x": [1]}))
        ...     i = w.add_global_buffer(b"hello")
        >>> LanceFileReader("memory://global-buffer.lance").read_global_buffer(i)
        b'hello'
        """
        self._check_open()
        if self.version is FileVersion.LEGACY:
            raise NotSupportedError(f"{self.path!r}: legacy (0.1) files have no global buffers")
        self._global_buffers.append(self._write_buffer(memoryview(data)))
        return len(self._global_buffers)

    @_locked
    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Write a batch (or every batch of a table); the first one sets the schema
        when none was given.

        Columns are buffered and written as pages when their share of the buffer
        budget fills (``data_cache_bytes``); a LanceError while encoding discards the
        file (the writer is then closed).

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileReader, LanceFileWriter
        >>> with LanceFileWriter("memory://write-batch.lance") as w:
        ...     w.write_batch(pa.record_batch({"x": [1, 2]}))
        ...     w.write_batch(pa.table({"x": [3]}))
        >>> LanceFileReader("memory://write-batch.lance").num_rows()
        3
        """
        self._check_open()
        if isinstance(batch, pa.Table):
            if self._schema is None:
                self._set_schema(batch.schema)
            for b in batch.to_batches():
                self.write_batch(b)
            return
        if not isinstance(batch, pa.RecordBatch):
            raise InvalidInputError(f"write_batch takes a RecordBatch or Table, not "
                                    f"{type(batch).__name__}")
        if self._schema is None:
            self._set_schema(batch.schema)
        if self._input_schema is not None and batch.schema.equals(self._input_schema,
                                                                  check_metadata=False):
            # extension arrays as their storage (no copy; JSON text encoded as JSONB)
            batch = storage_batch(batch, self._schema, first_row=self._rows)
        elif not batch.schema.equals(self._schema, check_metadata=False):
            raise SchemaError(f"batch schema does not match the file's schema:\n"
                              f"{batch.schema}\nvs\n{self._schema}")
        if batch.num_rows > MAX_ROWS_PER_WRITE:
            raise InvalidInputError("a single write_batch may hold at most 2^32-1 rows")
        try:
            self._backend.write(batch)
        except LanceError as e:
            self._fail(e)
        self._rows += batch.num_rows

    @property
    def bytes_written(self) -> int:
        """Bytes of the file written so far (pages flushed; a column's values stay
        buffered until its page fills). Dataset writers start a new file when this
        reaches ``max_bytes_per_file``, as pylance's do."""
        return int(self._out.tell())

    def _check_open(self) -> None:
        if self.closed:
            raise InvalidInputError(f"the writer for {self.path!r} is closed")

    @_locked
    def close(self) -> int | None:
        """Flush, write metadata and footer; returns the number of rows (None if closed).

        Examples
        --------
        >>> import pyarrow as pa
        >>> from lancenb.file import LanceFileWriter
        >>> w = LanceFileWriter("memory://close-example.lance")
        >>> w.write_batch(pa.table({"x": [1, 2, 3]}))
        >>> w.close()
        3
        """
        if self.closed:
            return None
        if self._schema is None:
            self._fail(SchemaError(f"{self.path!r}: Schema is unknown and file cannot be "
                                   f"created (no schema given and no batch written)"))
        if self.version is FileVersion.LEGACY:
            return self._close_legacy()
        try:
            self._backend.finish()
            schema_pb = file_pb2.Schema(fields=self._backend.fields_pb)
            for k, v in self._schema_metadata.items():
                schema_pb.metadata[k] = v
            desc = file_pb2.FileDescriptor(schema=schema_pb, length=self._rows)
            gb0 = desc.SerializeToString()
            gb0_pos = self._out.tell()
            self._out.write(gb0)
            colenc = pb.column_encoding_bytes()
            cmo, parts = [], []
            meta_start = pos = self._out.tell()
            columns = self._backend.columns
            for col in columns:
                cm = file2_pb2.ColumnMetadata(pages=col.pages)
                cm.encoding.direct.encoding = getattr(col, "column_encoding", colenc)
                data = cm.SerializeToString()
                cmo.append((pos, len(data)))
                parts.append(data)
                pos += len(data)
            self._out.write(b"".join(parts))  # one write, not one per column
            cmo_pos = self._out.tell()
            self._out.write(pack_offset_table(cmo))
            gbo_pos = self._out.tell()
            gbs = [(gb0_pos, len(gb0))] + self._global_buffers
            self._out.write(pack_offset_table(gbs))
            major, minor = self.version.footer
            self._out.write(Footer(meta_start, cmo_pos, gbo_pos, len(gbs), len(columns),
                                   major, minor).pack())
            self.size_bytes = self._out.tell()
            assert self.size_bytes == gbo_pos + 16 * len(gbs) + FOOTER_SIZE
            self._out.close()
        except BaseException:
            self._out.abort()
            self.closed = True
            raise
        self.closed = True
        return self._rows

    def _close_legacy(self) -> int:
        try:
            self._backend.finish_file(self._schema_metadata)
            self.size_bytes = self._out.tell()
            self._out.close()
        except BaseException:
            self._out.abort()
            self.closed = True
            raise
        self.closed = True
        return self._rows

    @_locked
    def abort(self) -> None:
        """Give up on the file: discard what was written (nothing is left at ``path``).

        Does nothing once the writer is closed (a closed file is complete).

        Examples
        --------
        >>> import pyarrow as pa
        >>> w = LanceFileWriter("memory://abort-example.lance")
        >>> w.write_batch(pa.table({"x": [1, 2]}))
        >>> w.abort()
        >>> w.closed
        True
        """
        if not self.closed:
            self._out.abort()
            self.closed = True

    def __del__(self):
        # abandoned (never closed nor aborted): discard the partial file, as pylance
        if not getattr(self, "closed", True) and getattr(self, "_out", None) is not None:
            try:
                self._out.abort()
            except Exception:  # pragma: no cover - best effort at collection time
                pass
            self.closed = True

    def __enter__(self) -> "LanceFileWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
