"""Blob columns in datasets: descriptions, bytes on request, and file-like blobs.

A blob column holds large binary values that are stored out of line. Scans return
what pylance 14 returns for it by default, a *description* per row, and
:meth:`LanceDataset.take_blobs <lancenb.dataset.LanceDataset.take_blobs>` opens
values as :class:`BlobFile` objects that read lazily, with range reads. The scan
option ``blob_handling="all_binary"`` returns the bytes instead.

Two layouts exist:

* **blob v1**: a ``large_binary`` field with ``lance-encoding:blob`` metadata (2.0 and
  2.1 files, and the 2.2 files lancenb writes). Each value sits in the data file;
  the description is ``struct<position: uint64, size: uint64>`` (absolute file
  offset and length), null for a null value.
* **blob v2**: what pylance 14 makes of a ``lance-encoding:blob`` column at 2.2 (or a
  ``lance.blob.v2`` extension column): the dataset schema holds
  ``struct<data: large_binary, uri: string>`` with ``ARROW:extension:name`` =
  ``lance.blob.v2`` and the data file holds the description itself,
  ``struct<kind, position, size, blob_id, blob_uri>``. ``kind`` says where the
  bytes are: 0 inline in the data file at ``position``; 1 packed in the sidecar
  file ``blob_id`` at ``position``; 2 the whole sidecar file ``blob_id``; 3 the
  external object ``blob_uri`` (at ``position``, or all of it when ``size`` is 0).
  Sidecar files live next to the data file: ``data/<data file stem>/<name>.blob``
  where ``<name>`` is ``blob_id`` as 32 binary digits, least significant first
  (blob id 1 → ``1000…0``; pylance 14 keeps values over 64 KiB in sidecar files,
  over 4 MiB one file per value).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb import io as lio
from lancenb.encodings.structural.blob import DESCRIPTION_V1, DESCRIPTION_V2, WRITE_V2
from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancenb.kernels import slices

__all__ = ["BlobFile", "BlobMethods", "BLOB_HANDLING", "DEFAULT_BLOB_HANDLING",
           "DEFAULT_BUFFER_SIZE", "blob_layout", "output_field", "check_handling", "has_blobs"]

BLOB_KEY = b"lance-encoding:blob"
EXTENSION_KEY = b"ARROW:extension:name"
BLOB_V2_EXTENSION = b"lance.blob.v2"
# pylance's names: "all_binary" reads the values; the two others the descriptions
# (pylance's "all_descriptions" also covers binary columns without blob metadata, which
# lancenb returns as values)
BLOB_HANDLING = ("blobs_descriptions", "all_descriptions", "all_binary")
DEFAULT_BLOB_HANDLING = "blobs_descriptions"
# read-ahead of BlobFile's sequential reads (pylance's default, 512 KiB)
DEFAULT_BUFFER_SIZE = 512 * 1024

KIND_INLINE, KIND_PACKED, KIND_DEDICATED, KIND_EXTERNAL = 0, 1, 2, 3


def _md(field: pa.Field) -> dict:
    return field.metadata or {}


def blob_layout(field: pa.Field) -> str | None:
    """``"v1"``, ``"v2"`` or None (not a blob column) for a dataset's top-level field."""
    md = _md(field)
    if md.get(EXTENSION_KEY) == BLOB_V2_EXTENSION and pa.types.is_struct(field.type):
        return "v2"
    if BLOB_KEY in md and (pa.types.is_large_binary(field.type)
                           or pa.types.is_binary(field.type)):
        return "v1"
    return None


def check_handling(handling) -> str:
    """The blob handling mode, checked (None: the default, descriptions)."""
    if handling is None:
        return DEFAULT_BLOB_HANDLING
    if handling not in BLOB_HANDLING:
        raise InvalidInputError(f"blob_handling must be one of {list(BLOB_HANDLING)}, not "
                                f"{handling!r}")
    return handling


def output_field(field: pa.Field, handling: str) -> pa.Field:
    """The field a scan returns for ``field`` under ``handling`` (as pylance 14).

    Blob columns inside structs: blob v2 ones read as their descriptions (or bytes),
    as at the top level; blob v1 ones as their bytes in either mode (pylance returns
    their descriptions)."""
    kind = blob_layout(field)
    if kind is None:
        if pa.types.is_struct(field.type):
            kids = [_nested_output(c, handling) for c in field.type]
            if any(k is not c for k, c in zip(kids, field.type)):
                return pa.field(field.name, pa.struct(kids), field.nullable, field.metadata)
        return field
    if handling == "all_binary":
        if kind == "v1":
            return field
        return pa.field(field.name, pa.large_binary(), field.nullable)
    if kind == "v1":
        return pa.field(field.name, DESCRIPTION_V1, field.nullable, metadata={BLOB_KEY: b"true"})
    return pa.field(field.name, DESCRIPTION_V2, field.nullable,
                    metadata={BLOB_KEY: b"true", b"lance-encoding:packed": b"true"})


def _nested_output(field: pa.Field, handling: str) -> pa.Field:
    return field if blob_layout(field) == "v1" else output_field(field, handling)


def has_blobs(field: pa.Field) -> bool:
    """Whether a top-level field is a blob column or holds blob v2 columns in structs."""
    if blob_layout(field) is not None:
        return True
    return pa.types.is_struct(field.type) and any(
        blob_layout(c) == "v2" or has_blobs(c) for c in field.type)


def sidecar_path(data_file: str, blob_id: int) -> str:
    """The dataset-relative path of a blob v2 sidecar file of ``data_file``."""
    stem = data_file[:-len(".lance")] if data_file.endswith(".lance") else data_file
    return f"data/{stem}/{format(int(blob_id), '032b')[::-1]}.blob"


def read_column(frag, reader, data_file: str, name: str, field: pa.Field, offsets,
                handling: str) -> pa.ChunkedArray:
    """A blob column of one data file of a fragment, at sorted physical ``offsets``
    (None: every row), as :func:`output_field` says."""
    kind = blob_layout(field)
    rows = None if offsets is None else np.asarray(offsets, dtype=np.int64)
    if kind == "v1" and handling != "all_binary":
        return reader.read_blob_descriptions(name, rows=rows)
    got = reader.read_column(name, rows=rows)
    if kind == "v1":
        return got
    if kind is None:  # blob v2 columns inside structs
        out = output_field(field, handling).type
        if handling != "all_binary":
            return got if got.type == out else got.cast(out)
        store = frag.dataset.snapshot.store
        return pa.chunked_array([_nested_values(store, data_file, c, field.type, out)
                                 for c in got.chunks], type=out)
    desc = got
    if desc.type != DESCRIPTION_V2:
        raise CorruptFileError(f"fragment {frag.fragment_id}, data file {data_file!r}: blob "
                               f"column {name!r} is stored as {desc.type}, not {DESCRIPTION_V2}")
    if handling != "all_binary":
        return desc
    store = frag.dataset.snapshot.store
    return pa.chunked_array([_v2_values(store, data_file, c) for c in desc.chunks],
                            type=pa.large_binary())


def _nested_values(store, data_file: str, arr: pa.StructArray, dtype: pa.DataType,
                   out: pa.DataType) -> pa.Array:
    """A struct array with its blob v2 descriptions (at any depth) replaced by bytes."""
    kids = []
    for child, f, o in zip(arr.flatten(), dtype, out):
        if blob_layout(f) == "v2":
            kids.append(_v2_values(store, data_file, child))
        elif o.type != child.type and pa.types.is_struct(f.type):
            kids.append(_nested_values(store, data_file, child, f.type, o.type))
        else:
            kids.append(child)
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(kids, fields=list(out), mask=mask)


def _v2_values(store, data_file: str, desc: pa.StructArray) -> pa.Array:
    """The bytes a chunk of blob v2 descriptions point to (one read per file)."""
    n = len(desc)
    valid = np.ones(n, bool) if desc.null_count == 0 else np.asarray(desc.is_valid())
    kind_a, pos_a, size_a, id_a, uris = desc.flatten()
    kind = np.asarray(kind_a.fill_null(0), np.uint8)
    pos = np.asarray(pos_a.fill_null(0), np.uint64).astype(np.int64)
    size = np.asarray(size_a.fill_null(0), np.uint64).astype(np.int64)
    size = np.where(valid, size, 0)
    blob_id = np.asarray(id_a.fill_null(0), np.uint32)
    ext = np.flatnonzero(valid & (kind == KIND_EXTERNAL))
    ext_bytes = {}
    for i in ext.tolist():  # external blobs: one object each
        ext_bytes[i] = _open_external(uris[i].as_py(), int(pos[i]), int(size[i])).readall()
        size[i] = len(ext_bytes[i])
    if np.any(valid & (kind > KIND_EXTERNAL)):
        bad = int(kind[valid & (kind > KIND_EXTERNAL)][0])
        raise NotSupportedError(f"data file {data_file!r}: blob kind {bad} is unknown")
    # each row's bytes: where they start in ``pieces`` joined (one read per file)
    pieces, base = [], 0
    src_at = np.zeros(n, np.int64)
    where = np.where(kind == KIND_INLINE, -1, blob_id.astype(np.int64))
    fetch = valid & (size > 0) & (kind != KIND_EXTERNAL)
    for file_key in np.unique(where[fetch]).tolist():
        sel = np.flatnonzero(fetch & (where == file_key))
        rel = f"data/{data_file}" if file_key == -1 else sidecar_path(data_file, file_key)
        rd = lio.open_reader(store.uri_of(rel), store.storage_options)
        try:
            fsize = rd.size()
            if np.any(pos[sel] < 0) or np.any(pos[sel] > fsize - size[sel]):
                raise CorruptFileError(f"data file {data_file!r}: a blob description points "
                                       f"past the end of {rel!r} ({fsize} bytes)")
            data, at = rd.read_ranges_np(pos[sel], size[sel])
        finally:
            rd.close()
        src_at[sel] = base + np.asarray(at, np.int64)
        pieces.append(np.asarray(data, np.uint8))
        base += len(data)
    for i, b in ext_bytes.items():
        src_at[i] = base
        pieces.append(np.frombuffer(b, np.uint8))
        base += len(b)
    src = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(size, out=offs[1:])
    out = np.empty(int(offs[-1]), np.uint8)
    if slices.concat_slices(src, src_at, size, out) != slices.OK:
        raise CorruptFileError(f"data file {data_file!r}: blob reads do not fit")
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.large_binary(), n, [mask, pa.py_buffer(offs),
                                                        pa.py_buffer(out)])


def _open_external(uri: str, position: int, size: int,
                   buffer_size: int = DEFAULT_BUFFER_SIZE) -> "BlobFile":
    """An external blob (kind 3): ``size`` bytes of ``uri`` at ``position``, or all
    of it from ``position`` when ``size`` is 0."""
    rd = lio.open_reader(uri)
    if size == 0:
        size = rd.size() - position
    return BlobFile(rd, position, size, buffer_size)


@dataclass(frozen=True)
class _Where:
    """Where one blob's bytes are: a store-relative path or an absolute URI."""

    uri: str
    position: int
    size: int


class BlobFile(io.RawIOBase):
    """One blob of a dataset as a read-only, seekable binary file (pylance's
    ``lance.BlobFile``).

    Nothing is read when the object is made: each :meth:`read` fetches the bytes it
    returns (plus up to ``buffer_size`` bytes of read-ahead) with a range read of
    the file the blob lives in, so reading ten bytes of a 1 GiB blob reads ten bytes
    (and the read-ahead), never the whole blob. :attr:`stats` counts the requests.

    Examples
    --------
    >>> with ds.take_blobs("video", indices=[0])[0] as f:  # doctest: +SKIP
    ...     header = f.read(16)
    ...     f.seek(-16, io.SEEK_END)
    ...     tail = f.read()
    """

    def __init__(self, reader, position: int, size: int, buffer_size: int):
        super().__init__()
        self._reader = reader
        self._position = int(position)
        self._size = int(size)
        self._cursor = 0
        self._buffer_size = int(buffer_size)
        self._buf = b""
        self._buf_at = 0  # blob offset of self._buf[0]

    @property
    def stats(self) -> lio.IOStats:
        """Requests made and bytes read so far."""
        return self._reader.stats

    def size(self) -> int:
        """The blob's size in bytes."""
        return self._size

    def readable(self) -> bool:
        """Always True."""
        return True

    def seekable(self) -> bool:
        """Always True."""
        return True

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on a closed BlobFile")

    def tell(self) -> int:
        """The current position in the blob."""
        self._check_open()
        return self._cursor

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move to ``offset`` from the start, the current position or the end."""
        self._check_open()
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._cursor, io.SEEK_END: self._size}.get(whence)
        if base is None:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        pos = base + int(offset)
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._cursor = pos
        return pos

    def _fetch(self, start: int, n: int) -> bytes:
        """``n`` bytes from blob offset ``start`` (inside the blob)."""
        if n <= 0:
            return b""
        return self._reader.read(self._position + start, n)

    def readinto(self, b) -> int:
        """Read into ``buf``; returns the bytes read (0 at the end)."""
        self._check_open()
        view = memoryview(b).cast("B")
        n = max(0, min(len(view), self._size - self._cursor))
        if n == 0:
            return 0
        lo = self._cursor - self._buf_at
        if 0 <= lo and lo + n <= len(self._buf):  # inside the read-ahead buffer
            view[:n] = self._buf[lo:lo + n]
        else:
            want = min(self._size - self._cursor, max(n, self._buffer_size))
            data = self._fetch(self._cursor, want)
            if len(data) != want:
                raise CorruptFileError(f"blob: read {len(data)} of {want} bytes at offset "
                                       f"{self._cursor} (the file is shorter than the blob)")
            view[:n] = data[:n]
            if want > n:
                self._buf, self._buf_at = bytes(data), self._cursor
        self._cursor += n
        return n

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes from the current position (all that is left by default)."""
        self._check_open()
        if size is None or size < 0:
            return self.readall()
        buf = bytearray(min(int(size), max(0, self._size - self._cursor)))
        n = self.readinto(buf)
        return bytes(buf[:n])

    def readall(self) -> bytes:
        """The rest of the blob."""
        self._check_open()
        n = max(0, self._size - self._cursor)
        data = self._fetch(self._cursor, n)
        if len(data) != n:
            raise CorruptFileError(f"blob: read {len(data)} of {n} bytes at offset "
                                   f"{self._cursor} (the file is shorter than the blob)")
        self._cursor += n
        return bytes(data)

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes at blob offset ``offset``; the cursor does not move."""
        return self.read_ranges([(offset, length)])[0]

    def read_ranges(self, ranges) -> list[bytes]:
        """Several ``(offset, length)`` ranges of the blob, in one coalesced read;
        the cursor does not move."""
        self._check_open()
        pairs = [(int(o), int(n)) for o, n in ranges]
        for o, n in pairs:
            if o < 0 or n < 0 or o + n > self._size:
                raise InvalidInputError(f"blob range [{o}, {o + n}) is outside the blob's "
                                        f"{self._size} bytes")
        got = self._reader.read_ranges([(self._position + o, n) for o, n in pairs])
        return [bytes(g) for g in got]

    def close(self) -> None:
        """Close the file (its source is closed with it)."""
        if not self.closed:
            self._buf = b""
            self._reader.close()
        super().close()

    def __repr__(self) -> str:
        return f"<BlobFile size={self._size}>"


def _where_of(store, data_file: str, kind: str, desc: dict) -> _Where:
    """Where a (valid) description's bytes are."""
    if kind == "v1":
        return _Where(store.uri_of(f"data/{data_file}"), desc["position"], desc["size"])
    k = desc["kind"]
    if k == KIND_INLINE:
        return _Where(store.uri_of(f"data/{data_file}"), desc["position"], desc["size"])
    if k in (KIND_PACKED, KIND_DEDICATED):
        pos = desc["position"] if k == KIND_PACKED else 0
        return _Where(store.uri_of(sidecar_path(data_file, desc["blob_id"])), pos, desc["size"])
    if k == KIND_EXTERNAL:
        return _Where(desc["blob_uri"], desc["position"], desc["size"])
    raise NotSupportedError(f"data file {data_file!r}: blob kind {k} is unknown")


def _select(ds, what: str, blob_column: str, ids, addresses, indices, handling: str):
    """The rows ``ids``/``addresses``/``indices`` (exactly one) of a blob column, with
    their row addresses (``_rowaddr``), the column read as ``handling`` says."""
    given = [(k, v) for k, v in (("ids", ids), ("addresses", addresses),
                                 ("indices", indices)) if v is not None]
    if len(given) != 1:
        raise InvalidInputError(f"{what}: give exactly one of ids, addresses or indices")
    if blob_column not in ds.snapshot.schema.names:
        raise InvalidInputError(f"{what}: no column {blob_column!r} in the dataset; it has "
                                f"{ds.snapshot.schema.names}")
    kind = blob_layout(ds.snapshot.schema.field(blob_column))
    if kind is None:
        raise InvalidInputError(f"{what}: column {blob_column!r} is not a blob column "
                                f"(a large_binary field with lance-encoding:blob metadata)")
    how, values = given[0]
    values = np.asarray(values.to_numpy(zero_copy_only=False) if isinstance(
        values, (pa.Array, pa.ChunkedArray)) else values).reshape(-1)
    if how == "indices":
        t = ds.take(values.astype(np.int64), columns=[blob_column], with_row_address=True,
                    blob_handling=handling)
    else:
        if how == "addresses" or not ds.stable_row_ids:
            _refuse_deleted(ds, values.astype(np.uint64))
        t = ds._take_rows(values.astype(np.uint64), columns=[blob_column],
                          with_row_address=True, by_address=how == "addresses",
                          blob_handling=handling)
    return kind, t


def _refuse_deleted(ds, addresses: np.ndarray) -> None:
    """pylance's refusal of a take by address (or unstable row id) that names
    deleted rows."""
    fid = (addresses >> np.uint64(32)).astype(np.int64)
    off = (addresses & np.uint64(0xFFFFFFFF)).astype(np.int64)
    frags = {f.fragment_id: f for f in ds.get_fragments()}
    gone = 0
    for f in np.unique(fid):
        frag = frags.get(int(f))
        if frag is not None:
            gone += int(np.isin(off[fid == f], frag.deleted_offsets()).sum())
    if gone:
        n = len(addresses)
        raise NotSupportedError(f"Expected {n} rows, got {n - gone}.  A take operation that "
                                f"includes row addresses must not target deleted rows.")


def read_blobs(ds, blob_column: str, ids=None, addresses=None, indices=None) -> list:
    """See :meth:`lancenb.dataset.LanceDataset.read_blobs`."""
    _, t = _select(ds, "read_blobs", blob_column, ids, addresses, indices, "all_binary")
    return list(zip(t.column("_rowaddr").to_pylist(), t.column(blob_column).to_pylist()))


def take_blobs(ds, blob_column: str, ids=None, addresses=None, indices=None, *,
               buffer_size: int = DEFAULT_BUFFER_SIZE) -> list:
    """See :meth:`lancenb.dataset.LanceDataset.take_blobs`."""
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 0:
        raise InvalidInputError(f"buffer_size must be a non-negative int, not {buffer_size!r}")
    kind, t = _select(ds, "take_blobs", blob_column, ids, addresses, indices,
                      DEFAULT_BLOB_HANDLING)
    descs = t.column(blob_column).to_pylist()
    frag_ids = (np.asarray(t.column("_rowaddr").to_numpy()) >> np.uint64(32)).tolist()
    files = {}
    out = []
    for d, fid in zip(descs, frag_ids):
        if d is None or (kind == "v1" and d["size"] == 0 and d["position"] != 0):
            out.append(None)  # (2.0 files describe a null value as (1, 0))
            continue
        if fid not in files:
            files[fid] = ds.get_fragment(int(fid)).data_file_of(blob_column)
        w = _where_of(ds.snapshot.store, files[fid], kind, d)
        if w.uri == d.get("blob_uri") and w.uri:
            out.append(_open_external(w.uri, w.position, w.size, buffer_size))
            continue
        rd = lio.open_reader(w.uri, ds.snapshot.store.storage_options)
        out.append(BlobFile(rd, w.position, w.size, buffer_size))
    return out


# -- writing blob v2 columns (2.2) ------------------------------------------------------
# pylance 14's limits: values up to INLINE_MAX bytes stay in the data file, values up to
# DEDICATED_MIN go into the data file's pack file, larger ones into a file of their own
INLINE_MAX = 64 * 1024
DEDICATED_MIN = 4 * 1024 * 1024
V2_STORAGE = pa.struct([("data", pa.large_binary()), ("uri", pa.string())])


def manifest_schema(schema: pa.Schema) -> pa.Schema:
    """A new 2.2 dataset's schema: each top-level blob column (``lance-encoding:blob``
    on binary) becomes blob v2, ``struct<data, uri>`` with extension name
    ``lance.blob.v2``, as pylance 14 records it."""
    fields = [pa.field(f.name, V2_STORAGE, f.nullable, {EXTENSION_KEY: BLOB_V2_EXTENSION})
              if blob_layout(f) == "v1" else f for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def input_schema(schema: pa.Schema) -> pa.Schema:
    """The schema data for a dataset is written in: blob v2 columns as ``large_binary``
    with ``lance-encoding:blob`` (the values; see :func:`to_write_v2`)."""
    fields = [pa.field(f.name, pa.large_binary(), f.nullable, {BLOB_KEY: b"true"})
              if blob_layout(f) == "v2" else f for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def v2_columns(fields_pb) -> set[str]:
    """Names of the top-level blob v2 columns of a dataset's Field protos."""
    return {f.name for f in fields_pb if f.parent_id == -1 and f.metadata.get(
        EXTENSION_KEY.decode()) == BLOB_V2_EXTENSION}


def file_schema(schema: pa.Schema, v2: set[str]) -> pa.Schema:
    """The data file writer's schema: the ``v2`` columns as :data:`WRITE_V2`."""
    return pa.schema([pa.field(f.name, WRITE_V2, f.nullable, {BLOB_KEY: b"true"})
                      if f.name in v2 else f for f in schema])


class V2Sidecars:
    """Turns one data file's blob v2 columns into :data:`WRITE_V2` arrays, writing
    the values that do not stay inline into the file's sidecar files: one pack file
    (values over 64 KiB, one after another) and one file per value over 4 MiB. Blob
    ids count from 1 in row order, as pylance allocates them (the pack file takes
    one when its first value comes)."""

    def __init__(self, store, data_file: str, written: list):
        self._store = store
        self._data_file = data_file
        self._written = written
        self._next_id = 1
        self._pack = None
        self._pack_id = 0

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def convert(self, arr) -> pa.StructArray:
        """A column of values (binary, or pylance's ``struct<data, uri[, position,
        size]>``) as :data:`WRITE_V2`."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        n = len(arr)
        valid = np.ones(n, bool) if arr.null_count == 0 else np.asarray(arr.is_valid())
        uri = pos = size = None
        if pa.types.is_struct(arr.type):
            kids = dict(zip([f.name for f in arr.type], arr.flatten()))
            data, uri = kids.get("data"), kids.get("uri")
            pos, size = kids.get("position"), kids.get("size")
            if data is None:
                raise InvalidInputError(f"a blob column needs a 'data' child, not {arr.type}")
        else:
            data = arr
        data = data.cast(pa.large_binary())
        external = valid & (np.asarray(uri.is_valid()) if uri is not None else False)
        lens = np.asarray(pc.binary_length(data).fill_null(0), np.int64)
        lens = np.where(valid & ~external, lens, 0)
        kind = np.zeros(n, np.uint8)
        kind[lens > INLINE_MAX] = KIND_PACKED
        kind[lens > DEDICATED_MIN] = KIND_DEDICATED
        kind[external] = KIND_EXTERNAL
        position = np.zeros(n, np.uint64)
        blob_id = np.zeros(n, np.uint32)
        # ids in row order: each dedicated value, and the pack file at its first value
        packed = np.flatnonzero(kind == KIND_PACKED)
        takers = np.flatnonzero(kind == KIND_DEDICATED)
        first_pack = -1
        if packed.size and self._pack is None:
            first_pack = int(packed[0])
            takers = np.sort(np.append(takers, first_pack))
        ids = self._next_id + np.arange(len(takers), dtype=np.int64)
        self._next_id += len(takers)
        if first_pack >= 0:
            self._pack_id = int(ids[np.searchsorted(takers, first_pack)])
        ded = kind[takers] == KIND_DEDICATED
        blob_id[takers[ded]] = ids[ded]
        for i, bid in zip(takers[ded].tolist(), ids[ded].tolist()):  # one file per value
            rel = sidecar_path(self._data_file, bid)
            self._written.append(rel)
            self._store.write_bytes(rel, data[i].as_buffer(), atomic=False)
        if packed.size:
            if self._pack is None:
                rel = sidecar_path(self._data_file, self._pack_id)
                self._written.append(rel)
                self._pack = lio.open_writer(self._store.uri_of(rel),
                                             self._store.storage_options)
            blob_id[packed] = self._pack_id
            plens = lens[packed]
            starts = np.zeros(len(packed), np.int64)
            np.cumsum(plens[:-1], out=starts[1:])
            position[packed] = self._pack.tell() + starts
            chosen = data.take(pa.array(packed))  # fresh: offsets from 0, bytes contiguous
            end = int(np.frombuffer(chosen.buffers()[1], np.int64)[len(packed)])
            self._pack.write(memoryview(chosen.buffers()[2])[:end])
        if external.any():
            position[external] = np.asarray(pos.fill_null(0), np.uint64)[external] \
                if pos is not None else 0
            lens[external] = np.asarray(size.fill_null(0), np.uint64)[external].astype(
                np.int64) if size is not None else 0
        inline = kind == KIND_INLINE
        data_out = pc.if_else(pa.array(inline & valid), data,
                              pa.scalar(None, pa.large_binary()))
        uri_out = (pc.if_else(pa.array(external), uri, "") if uri is not None
                   else pa.array([""] * n, pa.string()))
        return pa.StructArray.from_arrays(
            [pa.array(kind, pa.uint8()), data_out, pa.array(position, pa.uint64()),
             pa.array(lens.astype(np.uint64), pa.uint64()), pa.array(blob_id, pa.uint32()),
             uri_out.cast(pa.string())],
            fields=list(WRITE_V2), mask=None if valid.all() else pa.array(~valid))

    def convert_batch(self, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
        """``batch`` with its blob v2 columns (``schema``'s :data:`WRITE_V2` fields)
        converted."""
        cols = [self.convert(batch.column(i)) if f.type == WRITE_V2 else batch.column(i)
                for i, f in enumerate(schema)]
        return pa.RecordBatch.from_arrays(cols, schema=schema)

    def close(self) -> None:
        """Finish the current pack file."""
        if self._pack is not None:
            self._pack.close()

    def abort(self) -> None:
        """Remove the sidecar files written so far."""
        if self._pack is not None:
            self._pack.abort()


class BlobColumn:
    """Iterate a binary column's values as file-like objects (``io.BytesIO``; a null
    reads as empty, as with pylance's ``lance.BlobColumn``). For large values stored as blobs,
    :meth:`LanceDataset.take_blobs` reads lazily instead."""

    def __init__(self, blob_column):
        if not isinstance(blob_column, (pa.Array, pa.ChunkedArray)):
            raise InvalidInputError(f"Expected a pyarrow.Array or pyarrow.ChunkedArray, got "
                                    f"{type(blob_column)}")
        if not (pa.types.is_binary(blob_column.type)
                or pa.types.is_large_binary(blob_column.type)):
            raise InvalidInputError(f"Expected a binary array, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self):
        for v in self.blob_column.to_pylist():
            yield io.BytesIO(v or b"")


class BlobMethods:
    """The blob methods of :class:`~lancenb.dataset.LanceDataset` (a mixin): values of
    blob columns opened as files or read whole."""

    def take_blobs(self, blob_column: str, ids=None, addresses=None, indices=None, *,
                   buffer_size: int = DEFAULT_BUFFER_SIZE) -> list:
        """Open blob values as file-like objects (pylance's ``take_blobs``).

        Exactly one of ``ids`` (row ids), ``addresses`` (row addresses) and
        ``indices`` (row offsets in the dataset, deleted rows skipped) selects the
        rows. Only descriptions are read here; each :class:`~lancenb.dataset.read.blob.BlobFile`
        reads its bytes when asked, with range reads.

        Parameters
        ----------
        blob_column : str
            A blob column: ``large_binary`` with ``lance-encoding:blob`` metadata, or
            a pylance 2.2 blob v2 column.
        ids, addresses, indices : array-like of int
            The rows, in the order the results come back (repeats allowed).
        buffer_size : int, default 512 KiB
            Read-ahead of sequential reads in bytes; 0 reads exactly what is asked.

        Returns
        -------
        list of BlobFile or None
            One per row: None for a null value, a zero-size file for an empty one.

        Examples
        --------
        >>> f = ds.take_blobs("video", indices=[3])[0]  # doctest: +SKIP
        >>> f.seek(1024); f.read(16)  # doctest: +SKIP
        """
        return take_blobs(self, blob_column, ids, addresses, indices,
                               buffer_size=buffer_size)

    def read_blobs(self, blob_column: str, ids=None, addresses=None, indices=None, *,
                   io_buffer_size=None, preserve_order=None) -> list:
        """Blob values read whole (pylance's ``read_blobs``): ``[(row address, bytes or
        None)]`` in the order asked for; select rows as in :meth:`take_blobs`.
        ``io_buffer_size`` and ``preserve_order`` are accepted (the order is always
        kept)."""
        return read_blobs(self, blob_column, ids, addresses, indices)
