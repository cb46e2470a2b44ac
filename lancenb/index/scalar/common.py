"""What the scalar index modules share: where index files live, reading and writing
them with lancenb's file reader and writer, evaluating one predicate on the values an
index holds, and the three-valued answer of a predicate over rows.

An index lives in ``_indices/<uuid>/`` under the dataset root; its files are Lance
files (format 2.2, as pylance 14 writes them) listed in the manifest's
``IndexMetadata.files`` with their sizes.
"""

from __future__ import annotations

import dataclasses
import types
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.acero import Declaration, ProjectNodeOptions, TableSourceNodeOptions
from pyroaring import BitMap64

from lancenb.errors import InvalidInputError
from lancenb.file.reader import LanceFileReader
from lancenb.file.writer import LanceFileWriter
from lancenb.index.scalar import rowmap
from lancenb.io.store import ObjectStore

__all__ = ["become", "note_parts", "parts_loaded", "INDICES_DIR", "INDEX_FILE_VERSION",
           "Answer", "IndexFiles", "Unanswerable", "leaf_mask", "sort_order", "ids_at",
           "varint"]

INDICES_DIR = "_indices"


def varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf varint: the index details messages lancenb writes by
    hand (full-text parameters, JSON index targets)."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)
# pylance 14 writes its index files in Lance file format 2.2
INDEX_FILE_VERSION = "2.2"


_PARTS = [0]  # index parts (pages) read from index files, process-wide (see parts_loaded)


def note_parts(n: int) -> None:
    """Count ``n`` index parts read from an index file (cache misses)."""
    _PARTS[0] += int(n)


def parts_loaded() -> int:
    """The index parts read so far (a scan reports its difference as pylance's
    ``ScanStatistics.parts_loaded``: the parts its index cache did not hold)."""
    return _PARTS[0]


class Unanswerable(Exception):
    """Raised inside the query code when an index cannot answer a predicate exactly
    (never escapes :func:`lancenb.index.scalar.query.index_rows`, which returns None)."""


@dataclass
class Answer:
    """A predicate's three-valued answer over the rows an index covers: the rows
    where it is true, and (when asked for) the rows where it is NULL."""

    true: BitMap64
    null: BitMap64 | None = None


class IndexFiles:
    """The files of one index directory, ``_indices/<uuid>/`` under ``uri``."""

    def __init__(self, uri: str, uuid: str, storage_options: dict | None = None):
        self.store = ObjectStore(uri, storage_options)
        self.uuid = uuid
        self.written: list[tuple[str, int]] = []

    def rel(self, name: str) -> str:
        """The file's path relative to the dataset root."""
        return f"{INDICES_DIR}/{self.uuid}/{name}"

    def exists(self, name: str) -> bool:
        """Whether the index has the file ``name``."""
        return self.store.exists(self.rel(name))

    def reader(self, name: str, columns: list[str] | None = None) -> LanceFileReader:
        """A reader of the index file ``name`` (of its ``columns``, default all)."""
        return LanceFileReader(self.store.uri_of(self.rel(name)),
                               storage_options=self.store.storage_options, columns=columns)

    def write(self, name: str, table: pa.Table | None, schema: pa.Schema,
              batches=None, buffers: dict | None = None) -> int:
        """Write ``table`` (or the ``batches``) as the index file ``name``; returns its
        size, also recorded in :attr:`written` for the manifest's file list.
        ``buffers``: ``{metadata key: bytes}`` written as global buffers, each key
        set to its buffer's index."""
        w = LanceFileWriter(self.store.uri_of(self.rel(name)), schema,
                            version=INDEX_FILE_VERSION,
                            storage_options=self.store.storage_options)
        try:
            if table is not None and table.num_rows:
                w.write_batch(table)
            for b in batches or ():
                if b.num_rows:
                    w.write_batch(b)
            for key, data in (buffers.items() if buffers is not None else ()):
                w.add_schema_metadata(key, str(w.add_global_buffer(data)))
            w.close()
        except BaseException:
            w.abort()
            raise
        size = self.store.size(self.rel(name))
        self.written.append((name, size))
        return size


def leaf_mask(table: pa.Table, expression) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate a boolean ``pyarrow.compute`` expression over ``table``: the positions
    where it is true and those where it is NULL (both int64, ascending)."""
    if table.num_rows == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty
    try:
        mask = Declaration.from_sequence([
            Declaration("table_source", TableSourceNodeOptions(table)),
            Declaration("project", ProjectNodeOptions([expression], ["m"]))
        ]).to_table(use_threads=False).column(0).combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as e:
        raise Unanswerable(str(e)) from e
    if not pa.types.is_boolean(mask.type):
        raise InvalidInputError(f"a filter term gives {mask.type} values, not booleans")
    valid = mask.is_valid().to_numpy(zero_copy_only=False)
    vals = mask.fill_null(False).to_numpy(zero_copy_only=False)
    return np.flatnonzero(vals), np.flatnonzero(~valid)


def sort_order(values: pa.Array) -> np.ndarray:
    """Positions (int64) that sort ``values`` as the indices store them: nulls first,
    then ascending, floats with NaN last (pyarrow would put NaN with the nulls)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count == 0:
        return np.asarray(pc.sort_indices(values).to_numpy(), np.int64)
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    nulls, present = np.flatnonzero(~valid), np.flatnonzero(valid)
    order = np.asarray(pc.sort_indices(values.filter(pa.array(valid))).to_numpy(), np.int64)
    return np.concatenate([nulls, present[order]])


def ids_at(ids: np.ndarray, positions: np.ndarray) -> BitMap64:
    """The ``BitMap64`` of ``ids[positions]``."""
    return rowmap.from_ids(ids[positions]) if positions.size else BitMap64()


def become(ds, new) -> None:
    """Move the dataset object ``ds`` to ``new`` (the dataset a commit of ``ds``'s
    returned), in place, as pylance's index methods move the dataset they are called
    on: ``new``'s state, with the snapshot's commit rebound to ``ds`` so that ``ds``'s
    later commits move ``ds`` (not ``new``)."""
    vars(ds).update(vars(new))
    snap = getattr(ds, "snapshot", None)
    bound = getattr(snap, "commit", None)
    if getattr(bound, "__self__", None) is new:
        ds.snapshot = dataclasses.replace(snap, commit=types.MethodType(bound.__func__, ds))
