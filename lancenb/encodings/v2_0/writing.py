"""Writing 2.0 files: one column writer per field, in schema pre-order.

Each column buffers its values until it holds ``budget`` bytes (the file's
``data_cache_bytes`` split across the top-level fields, 8 MiB each by default) and
then writes a page (a page made of a single written array is cut into pieces of
``max_page_bytes``, 32 MiB by default), independently of the other columns, as
pylance does:

* leaf columns encode a page with :func:`lancenb.encodings.v2_0.encode.encode`;
* a list column hands its items (everything between its first and last offset) to
  its child's writer and pages its own end offsets (``num_items`` per page);
* a struct column passes each child its values and writes one header page
  (``struct{}``, no buffers) for all rows at the end; a null struct cannot be stored
  in 2.0, so it is refused, as pylance refuses it;
* a blob column (``lance-encoding:blob`` on large_binary) writes each value out of
  line (64-byte aligned) before its page, whose rows are ``(position, size)`` u64
  pairs in a packed struct: ``(0, 0)`` empty, ``(1, 0)`` null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb._proto import file2_pb2
from lancenb.encodings import blocks, pb
from lancenb.encodings.physical import packed_struct
from lancenb.encodings.structural import blob as blob_layout
from lancenb.encodings.v2_0 import encode as enc
from lancenb.encodings.v2_0.columns import BLOB_TYPE, is_blob_2_0, is_packed_2_0
from lancenb.errors import InvalidInputError, NotSupportedError

__all__ = ["FileWriter", "DEFAULT_COLUMN_BUDGET", "DEFAULT_MAX_PAGE_BYTES"]

DEFAULT_COLUMN_BUDGET = 8 * 1024 * 1024
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024


def _column_encoding(blob: bool) -> bytes:
    ce = pb.e20.ColumnEncoding()
    if blob:
        ce.blob.inner.values.SetInParent()
    else:
        ce.values.SetInParent()
    return pb.pack_any(ce)


class _Column:
    """What the file writer needs of a column: its pages and column encoding."""

    def __init__(self, blob: bool = False):
        self.pages: list = []
        self.column_encoding = _column_encoding(blob)

    def add_page(self, sink, buffers: list, tree, rows: int) -> None:
        positions = [sink(b) for b in buffers]
        page = file2_pb2.ColumnMetadata.Page(buffer_offsets=[p for p, _ in positions],
                                             buffer_sizes=[s for _, s in positions],
                                             length=rows, priority=0)
        page.encoding.direct.encoding = pb.pack_any(tree)
        self.pages.append(page)


class _Leaf:
    def __init__(self, field: pa.Field, writer: "FileWriter"):
        self.field = field
        self.blob = is_blob_2_0(field)
        self.compression = enc.compression_of(field) if blocks.is_variable(field.type) else None
        self.col = _Column(self.blob)
        self.w = writer
        self.arrays: list = []
        self.nbytes = 0
        writer.columns.append(self.col)

    def add(self, arr: pa.Array) -> None:
        # an empty array (a list's items when its rows are all empty) still makes a
        # page of 0 rows, as in pylance
        self.arrays.append(arr)
        self.nbytes += arr.nbytes
        if self.nbytes > self.w.budget:
            self.flush()

    def flush(self) -> None:
        if not self.arrays:
            return
        single = len(self.arrays) == 1
        arr = self.arrays[0] if single else pa.concat_arrays(self.arrays)
        self.arrays, self.nbytes = [], 0
        n = len(arr)
        # as pylance: only a page made of one written array is cut to max_page_bytes
        pieces = max(1, -(-arr.nbytes // self.w.max_page_bytes)) if single else 1
        step = max(1, -(-n // pieces))
        for start in range(0, max(n, 1), step):
            part = arr.slice(start, step)
            if self.blob:
                buffers, tree = self._blob_page(part)
            else:
                buffers, tree = enc.encode(part, self.compression)
            self.col.add_page(self.w.sink, buffers, tree, len(part))

    def _blob_page(self, arr: pa.Array):
        block, validity = blocks.from_arrow(arr)
        region, rel, sizes = blob_layout.out_of_line(block, validity)
        base = self.w.sink(region)[0] if len(region) else 0
        pos = (base + rel).astype(np.uint64)
        pos[sizes == 0] = 0
        if validity is not None:
            pos[~validity] = 1
        desc = pa.StructArray.from_arrays(
            [pa.array(pos, pa.uint64()), pa.array(sizes.astype(np.uint64), pa.uint64())],
            fields=list(BLOB_TYPE))
        return enc.encode(desc)

    def finish(self) -> None:
        self.flush()


class _List:
    def __init__(self, field: pa.Field, writer: "FileWriter"):
        self.col = _Column()
        self.w = writer
        writer.columns.append(self.col)
        self.child = _make(field.type.value_field, writer)
        self.lengths: list = []
        self.valid: list = []
        self.nbytes = 0

    def add(self, arr: pa.Array) -> None:
        offs = np.asarray(arr.offsets).astype(np.int64)
        self.child.add(arr.values.slice(int(offs[0]), int(offs[-1] - offs[0])))
        self.lengths.append(np.diff(offs))
        self.valid.append(blocks.validity_of(arr))
        # as pylance counts it: the Arrow offsets, plus the validity when there is one
        width = 8 if pa.types.is_large_list(arr.type) else 4
        self.nbytes += width * (len(arr) + 1) + (-(-len(arr) // 8) if arr.null_count else 0)
        if self.nbytes > self.w.budget:
            self.flush()

    def flush(self) -> None:
        if not self.lengths:
            return
        lengths = np.concatenate(self.lengths)
        if any(v is not None for v in self.valid):
            valid = np.concatenate([np.ones(len(ln), bool) if v is None else v
                                    for ln, v in zip(self.lengths, self.valid)])
        else:
            valid = None
        self.lengths, self.valid, self.nbytes = [], [], 0
        buffers, tree = enc.list_offsets(lengths, valid)
        self.col.add_page(self.w.sink, buffers, tree, len(lengths))

    def finish(self) -> None:
        self.flush()
        self.child.finish()


class _Struct:
    def __init__(self, field: pa.Field, writer: "FileWriter"):
        self.name = field.name
        self.col = _Column()
        self.w = writer
        writer.columns.append(self.col)
        self.children = [_make(f, writer) for f in field.type]
        self.rows = 0

    def add(self, arr: pa.Array) -> None:
        if arr.null_count:
            raise InvalidInputError(enc.struct_null_message(arr.null_count, self.name))
        self.rows += len(arr)
        for i, ch in enumerate(self.children):
            ch.add(arr.field(i))

    def finish(self) -> None:
        # one header page for all rows, written even for none (as pylance)
        tree = pb.e20.ArrayEncoding(struct=pb.e20.SimpleStruct())
        self.col.add_page(self.w.sink, [], tree, self.rows)
        for ch in self.children:
            ch.finish()


def _check(field: pa.Field) -> None:
    dt = field.type
    if pa.types.is_map(dt) or pa.types.is_union(dt) or (
            pa.types.is_dictionary(dt) and (pa.types.is_nested(dt.value_type)
                                            or pa.types.is_dictionary(dt.value_type))):
        raise NotSupportedError(f"column {field.name!r}: writing {dt} in a 2.0 file is not "
                                f"supported")
    if is_blob_2_0(field) and not pa.types.is_large_binary(dt):
        raise InvalidInputError(f"column {field.name!r}: blob columns must be large_binary, "
                                f"not {dt}")
    if pa.types.is_fixed_size_list(dt):
        inner = dt.value_type
        while pa.types.is_fixed_size_list(inner):
            inner = inner.value_type
        if blocks.fixed_bits(inner) is None or pa.types.is_struct(inner):
            raise NotSupportedError(f"column {field.name!r}: writing {dt} in a 2.0 file is "
                                    f"not supported")
    if pa.types.is_struct(dt) and is_packed_2_0(field):
        if packed_struct.child_bits(dt) is None:
            raise NotSupportedError(f"column {field.name!r}: packed structs need whole-byte "
                                    f"fixed-width children, not {dt}")


def _no_null_structs(arr: pa.Array, name: str) -> None:
    dt = arr.type
    if pa.types.is_struct(dt):
        if arr.null_count:
            raise InvalidInputError(enc.struct_null_message(arr.null_count, name))
        for i in range(dt.num_fields):
            _no_null_structs(arr.field(i), f"{name}.{dt.field(i).name}")
    elif pa.types.is_list(dt) or pa.types.is_large_list(dt):
        if len(arr):
            offs = arr.offsets
            start = offs[0].as_py()
            _no_null_structs(arr.values.slice(start, offs[len(arr)].as_py() - start),
                             f"{name}.item")


def _make(field: pa.Field, writer: "FileWriter"):
    _check(field)
    dt = field.type
    if pa.types.is_struct(dt) and not is_packed_2_0(field):
        return _Struct(field, writer)
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        return _List(field, writer)
    return _Leaf(field, writer)


class FileWriter:
    """The column writers of one 2.0 file.

    ``sink(data) -> (position, size)`` writes one 64-byte aligned buffer. ``columns``
    lists, in column order, objects with ``pages`` (``ColumnMetadata.Page`` protos)
    and ``column_encoding`` (the serialized column-level encoding).
    """

    def __init__(self, schema: pa.Schema, sink, *, data_cache_bytes: int | None = None,
                 max_page_bytes: int | None = None):
        self.sink = sink
        self.columns: list[_Column] = []
        budget = (data_cache_bytes / max(1, len(schema)) if data_cache_bytes
                  else DEFAULT_COLUMN_BUDGET)
        self.budget = max(1, int(budget))
        self.max_page_bytes = max(1, int(max_page_bytes or DEFAULT_MAX_PAGE_BYTES))
        self.fields = [_make(f, self) for f in schema]

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return  # as pylance: an empty batch reaches no column
        # refuse null structs before any column takes the batch
        for i, f in enumerate(batch.schema):
            _no_null_structs(batch.column(i), f.name)
        for i, fw in enumerate(self.fields):
            fw.add(batch.column(i))

    def finish(self) -> None:
        for fw in self.fields:
            fw.finish()
