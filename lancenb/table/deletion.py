"""Deletion files: which rows of a fragment are deleted.

A fragment's deleted rows are row *offsets* within the fragment (0-based, counting
deleted rows too). They live in ``_deletions/{fragment_id}-{read_version}-{id}.{ext}``
where ``id`` is a random u64 written in decimal:

* ``.arrow`` (``DeletionFile.file_type`` ARROW_ARRAY): an Arrow IPC *file* with one
  record batch of a single non-nullable ``uint32`` column named ``row_id``, ZSTD
  body compression, in any order. Used for up to 5,000 deleted rows.
* ``.bin`` (BITMAP): a RoaringBitmap in the portable serialisation. Used above
  5,000 rows (the reference's threshold).
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from pyroaring import BitMap

from lancenb._proto import table_pb2
from lancenb.errors import CorruptFileError

__all__ = ["BITMAP_THRESHOLD", "deletion_path", "read_deletions", "write_deletions"]

BITMAP_THRESHOLD = 5000
DELETIONS_DIR = "_deletions"
_SCHEMA = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])


def deletion_path(fragment_id: int, df) -> str:
    """The relative path of a fragment's deletion file ``df``."""
    ext = "bin" if df.file_type == table_pb2.DeletionFile.BITMAP else "arrow"
    return f"{DELETIONS_DIR}/{fragment_id}-{df.read_version}-{df.id}.{ext}"


def read_deletions(store, fragment_id: int, df, physical_rows: int) -> np.ndarray:
    """Sorted unique uint32 offsets of the deleted rows of one fragment."""
    rel = deletion_path(fragment_id, df)
    raw = store.read_bytes(rel)
    where = f"deletion file {store.uri_of(rel)!r} (fragment {fragment_id})"
    if df.file_type == table_pb2.DeletionFile.BITMAP:
        try:
            bm = BitMap.deserialize(raw)
        except Exception as e:  # pyroaring raises plain ValueError/OverflowError
            raise CorruptFileError(f"{where}: not a roaring bitmap: {e}") from e
        # a few bytes of run containers can describe 2**32 rows: check the count
        # against the fragment before expanding it
        if len(bm) > physical_rows:
            raise CorruptFileError(f"{where}: deletes {len(bm)} rows but the fragment has "
                                   f"{physical_rows}")
        rows = np.array(bm.to_array(), dtype=np.uint32) if len(bm) else np.zeros(0, np.uint32)
    else:
        try:
            with ipc.open_file(pa.BufferReader(raw)) as f:
                table = f.read_all()
            ok = table.num_columns == 1 and pa.types.is_integer(table.schema.field(0).type)
            col = table.column(0) if ok else None
            values = col.to_numpy().astype(np.int64) if ok and not col.null_count else None
        except (pa.ArrowException, OSError, MemoryError, UnicodeDecodeError, ValueError) as e:
            # damaged IPC can claim absurd buffer sizes (Arrow refuses the allocation),
            # odd integer widths or undecodable names: all mean a corrupt file
            raise CorruptFileError(f"{where}: not a valid Arrow IPC file: "
                                   f"{type(e).__name__}: {e}") from e
        if not ok:
            raise CorruptFileError(f"{where}: expected one integer column 'row_id'")
        if values is None:
            raise CorruptFileError(f"{where}: the row_id column has nulls")
        rows = np.unique(values)
        if rows.size and (rows[0] < 0 or rows[-1] >= 2**32):
            raise CorruptFileError(f"{where}: row offset {int(rows[0])} is not a u32")
        rows = rows.astype(np.uint32)
    if rows.size and int(rows[-1]) >= physical_rows:
        raise CorruptFileError(f"{where}: deletes row {int(rows[-1])} but the fragment has "
                               f"{physical_rows} rows")
    if df.num_deleted_rows and int(df.num_deleted_rows) != rows.size:
        raise CorruptFileError(f"{where}: the manifest says {df.num_deleted_rows} deleted rows, "
                               f"the file holds {rows.size}")
    return rows


def write_deletions(store, fragment_id: int, rows: np.ndarray, read_version: int):
    """Write a deletion file for sorted unique ``rows``; returns its DeletionFile message."""
    rows = np.asarray(rows, dtype=np.uint32)
    df = table_pb2.DeletionFile(read_version=read_version, id=random.getrandbits(64),
                                num_deleted_rows=len(rows))
    if len(rows) > BITMAP_THRESHOLD:
        df.file_type = table_pb2.DeletionFile.BITMAP
        data = BitMap(rows.tolist()).serialize()
    else:
        df.file_type = table_pb2.DeletionFile.ARROW_ARRAY
        sink = pa.BufferOutputStream()
        batch = pa.record_batch([pa.array(rows, pa.uint32())], schema=_SCHEMA)
        opts = ipc.IpcWriteOptions(compression="zstd")
        with ipc.new_file(sink, _SCHEMA, options=opts) as w:
            w.write_batch(batch)
        data = sink.getvalue().to_pybytes()
    store.write_bytes(deletion_path(fragment_id, df), data, atomic=False)  # unique name
    return df
