"""The legacy (0.1) backend of :class:`~lancenb.file.LanceFileWriter`.

pylance 14 still writes 0.1 data files into datasets whose storage version is 0.1
(``data_storage_version="legacy"``, or datasets from pylance 0.15 and older). The
byte layout is :mod:`lancenb.file.formats.v0_1`'s docstring; this module writes it as pylance
does:

* rows are cut into batches of at most :data:`GROUP_ROWS` (pylance's
  ``max_rows_per_group``); inside a batch every field writes its page in pre-order,
  back to back, unaligned;
* fixed-width values (and a fixed-size list's flattened items) are the Arrow
  buffer's bytes, nulls included; bool an LSB-first bitmap;
* string/binary: the value bytes, then ``n + 1`` i64 absolute file offsets, the page
  pointing at the offsets (``["ab", "", "c"]`` at 24: ``ab c`` at 24..26, offsets
  ``[24, 26, 26, 27]`` at 27, page ``(27, 3)``);
* list / large_list: ``n + 1`` i32 / i64 offsets from 0, the child's page
  holding the values they cover; struct: no page ``(0, 0)``, its children only;
* dictionary: the keys as a fixed-width page, indices into one dictionary per
  field (each batch's dictionary merged into it), written once after the page table
  (``Field.dictionary``);
* then the page table, the dictionaries, ``[u32 n][Manifest]`` (the schema),
  ``[u32 n][Metadata]`` and the footer ``i64 metadata position | i16 0 | i16 2 |
  "LANC"``. No statistics are written (they are optional; pylance reads such files).

No validity is stored (the format has none), so a null reads back as what the Arrow
buffer held, as with pylance's writer. Maps, unions, views and fixed-size lists of
anything but fixed-width numbers are refused with :class:`NotSupportedError`.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb._proto import file_pb2, table_pb2
from lancenb.errors import NotSupportedError
from lancenb.file.schema import schema_to_fields

__all__ = ["V01Writer", "GROUP_ROWS"]

GROUP_ROWS = 1024  # rows per batch of a 0.1 file (pylance's default max_rows_per_group)
MAGIC = b"LANC"


def _is_var(dt: pa.DataType) -> bool:
    return (pa.types.is_string(dt) or pa.types.is_binary(dt) or pa.types.is_large_string(dt)
            or pa.types.is_large_binary(dt))


def _fixed_width(dt: pa.DataType) -> int:
    """Bytes per value of a fixed-width type other than bool (0: not one)."""
    if pa.types.is_boolean(dt) or pa.types.is_nested(dt) or pa.types.is_dictionary(dt):
        return 0
    try:
        bits = dt.bit_width
    except ValueError:
        return 0
    return bits // 8 if bits % 8 == 0 else 0


def check_writable(dt: pa.DataType, name: str) -> None:
    """Refuse a type the 0.1 writer does not write."""
    if pa.types.is_struct(dt):
        for f in dt:
            check_writable(f.type, f"{name}.{f.name}")
        return
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        check_writable(dt.value_type, f"{name}.item")
        return
    if pa.types.is_fixed_size_list(dt):
        if _fixed_width(dt.value_type):
            return
    elif pa.types.is_dictionary(dt):
        if _is_var(dt.value_type) or _fixed_width(dt.value_type):
            return
    elif (pa.types.is_null(dt) or pa.types.is_boolean(dt) or _is_var(dt)
          or _fixed_width(dt)) and not isinstance(dt, pa.ExtensionType):
        return
    raise NotSupportedError(f"column {name!r}: lancenb does not write {dt} in legacy (0.1) "
                            f"files (it writes numbers, temporal, decimal, bool, string/binary, "
                            f"fixed-size lists of numbers, structs, lists and dictionaries)")


class V01Writer:
    """Writes a 0.1 file's pages batch by batch (:class:`lancenb.file.writer.WriterBackend`
    for ``write``), then its tables and footer (:meth:`finish_file`)."""

    def __init__(self, schema: pa.Schema, out):
        for f in schema:
            check_writable(f.type, f.name)
        self._out = out
        fields_pb, self._tops = schema_to_fields(schema)
        self.fields_pb = list(fields_pb)
        self.columns: list = []  # (no 2.x columns)
        self._index = {int(f.id): i for i, f in enumerate(self.fields_pb)}
        self._ids = sorted(self._index)
        self._pages: list[dict] = []  # per batch: field id -> (position, length)
        self._batch_offsets = [0]
        self._dicts: dict[int, pa.Array] = {}  # field id -> the file's dictionary

    # -- pages -----------------------------------------------------------------
    def write(self, batch: pa.RecordBatch) -> None:
        for start in range(0, batch.num_rows, GROUP_ROWS):
            group = batch.slice(start, GROUP_ROWS)
            entries: dict = {}
            for lf, arr in zip(self._tops, group.columns):
                self._field(lf, arr, entries)
            self._pages.append(entries)
            self._batch_offsets.append(self._batch_offsets[-1] + group.num_rows)

    def finish(self) -> None:
        """(Pages are written as batches come: nothing is buffered.)"""

    def _put(self, data) -> int:
        pos = self._out.tell()
        self._out.write(data)
        return pos

    def _field(self, lf, arr: pa.Array, entries: dict) -> None:
        dt, n = arr.type, len(arr)
        if pa.types.is_struct(dt):
            for i, child in enumerate(lf.children):
                self._field(child, arr.field(i), entries)
            return
        if pa.types.is_null(dt):
            entries[lf.id] = (self._out.tell(), n)
        elif pa.types.is_dictionary(dt):
            entries[lf.id] = (self._put(self._keys(lf.id, arr)), n)
        elif pa.types.is_list(dt) or pa.types.is_large_list(dt):
            off = _offsets(arr, np.int32 if pa.types.is_list(dt) else np.int64)
            first = int(off[0])
            entries[lf.id] = (self._put((off - off[0]).tobytes()), n + 1)
            self._field(lf.children[0], arr.values.slice(first, int(off[-1]) - first), entries)
        elif _is_var(dt):
            entries[lf.id] = self._var(arr)
        elif pa.types.is_boolean(dt):
            bits = np.packbits(np.asarray(arr.fill_null(False), dtype=bool), bitorder="little")
            entries[lf.id] = (self._put(bits.tobytes()), n)
        elif pa.types.is_fixed_size_list(dt):
            size = dt.list_size
            items = arr.values.slice(arr.offset * size, n * size)
            entries[lf.id] = (self._put(_fixed_bytes(items)), n)
        else:
            entries[lf.id] = (self._put(_fixed_bytes(arr)), n)

    def _var(self, arr: pa.Array) -> tuple[int, int]:
        """Value bytes, then the i64 absolute offsets; ``(offsets position, n)``."""
        large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
        off = _offsets(arr, np.int64 if large else np.int32).astype(np.int64)
        data = arr.buffers()[2]
        start = self._out.tell()
        if data is not None and off[-1] > off[0]:
            self._out.write(memoryview(data)[int(off[0]):int(off[-1])])
        pos = self._put((off - off[0] + start).tobytes())
        return pos, len(arr)

    def _keys(self, field_id: int, arr: pa.DictionaryArray) -> bytes:
        """The batch's keys as indices into the file's dictionary (extended with the
        batch's new values)."""
        values = arr.dictionary
        known = self._dicts.get(field_id)
        if known is None:
            known = values
        else:
            new = values.filter(pc.invert(pc.is_in(values, value_set=known)))
            if len(new):
                known = pa.concat_arrays([known, new])
        self._dicts[field_id] = known
        remap = pc.index_in(values, value_set=known)
        keys = remap.take(arr.indices).fill_null(0).cast(arr.type.index_type)
        return _fixed_bytes(keys)

    # -- the end of the file ---------------------------------------------------
    def finish_file(self, schema_metadata: dict) -> None:
        """Write the page table, the dictionaries, the schema, the metadata and the
        footer."""
        lo, hi = (self._ids[0], self._ids[-1]) if self._ids else (0, -1)
        nb = len(self._pages)
        table = np.zeros((hi - lo + 1, nb, 2), "<i8")
        for b, entries in enumerate(self._pages):
            for fid, (pos, length) in entries.items():
                table[fid - lo, b] = (pos, length)
        table_pos = self._put(table.tobytes())
        for fid, values in self._dicts.items():
            f = self.fields_pb[self._index[fid]]
            if _is_var(values.type):
                pos, _ = self._var(values)
            else:
                pos = self._put(_fixed_bytes(values))
            f.dictionary.offset = pos
            f.dictionary.length = len(values)
        man = table_pb2.Manifest(fields=self.fields_pb)
        for k, v in schema_metadata.items():
            man.schema_metadata[k] = v
        man_pos = self._put(_framed(man))
        meta = file_pb2.Metadata(batch_offsets=self._batch_offsets if nb else [],
                                 page_table_position=table_pos, manifest_position=man_pos)
        meta_pos = self._put(_framed(meta))
        self._out.write(struct.pack("<qhh", meta_pos, 0, 2) + MAGIC)


def _framed(msg) -> bytes:
    data = msg.SerializeToString()
    return struct.pack("<I", len(data)) + data


def _offsets(arr: pa.Array, dtype) -> np.ndarray:
    """The ``len + 1`` offsets of a list or string array (its slice applied)."""
    buf = arr.buffers()[1]
    if buf is None:  # (an empty array may have no buffer)
        return np.zeros(1, dtype)
    return np.frombuffer(buf, dtype)[arr.offset: arr.offset + len(arr) + 1]


def _fixed_bytes(arr: pa.Array) -> memoryview:
    """The value bytes of a fixed-width array (its slice applied)."""
    w = _fixed_width(arr.type)
    buf = arr.buffers()[1]
    if buf is None or not len(arr):
        return memoryview(b"")
    return memoryview(buf)[arr.offset * w:(arr.offset + len(arr)) * w]
