"""Blob pages: large binary values stored out of line, the page holding only where.

For ``large_binary`` fields with ``lance-encoding:blob`` metadata (2.1/2.2 "blob v1").
Every non-empty value is written as its own buffer (64-byte aligned, padded with
``0x48``) *before* the page's buffers; the page is a mini-block page of descriptors,
two u64 per row (``PackedStruct{[64, 64], Flat(128)}``, layers ``[ALL_VALID_ITEM]``)
wrapped in ``BlobLayout{inner_layout, layers}`` whose ``layers`` say how rows may be
null:

* ``(position, size)``: the value is ``size`` bytes at absolute file offset
  ``position``;
* ``(0, 0)``: an empty value;
* ``(def << 16 | rep, 0)`` with a non-zero position: a null (``def`` 1 for a
  nullable column).

Example: values ``[b"abc", None, b""]`` written from file offset 0 → one buffer
``61 62 63 48 ...`` (64 bytes), descriptors ``(0, 3), (65536, 0), (0, 0)``.

A take reads the descriptor chunks it needs (the chunk table is cached after the
first access) and then the values: two reads.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth, Variable, offset_bits, to_arrow
from lancenb.encodings.physical import packed_struct
from lancenb.encodings.physical import packed_struct_variable as vpacked
from lancenb.encodings.structural import fullzip, miniblock, repdef
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import slices

__all__ = ["out_of_line", "encode", "encode_v2", "BlobDecoder", "DESCRIPTION_V1",
           "DESCRIPTION_V2", "WRITE_V2", "is_write_v2"]

L = pb.e21.RepDefLayer
ALIGN = 64
PAD = 0x48
_BITS = [64, 64]

# What a blob column reads as without its values (as pylance 14 returns it by default):
# blob v1 (2.0/2.1, and 2.2 files lancenb writes) a (position, size) pair per row, null
# for a null value; blob v2 (pylance's 2.2 blob columns, stored so in the file) a packed
# struct whose ``kind`` says where the bytes are (0 inline in the data file at
# ``position``, 1 packed into the sidecar file ``blob_id`` at ``position``, 2 the whole
# sidecar file ``blob_id``, 3 the external ``blob_uri``).
DESCRIPTION_V1 = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])
DESCRIPTION_V2 = pa.struct([pa.field("kind", pa.uint8(), False),
                            pa.field("position", pa.uint64(), False),
                            pa.field("size", pa.uint64(), False),
                            pa.field("blob_id", pa.uint32(), False),
                            pa.field("blob_uri", pa.string(), False)])
# What a file writer takes for a blob v2 column (2.2): per row the inline bytes
# (``kind`` 0, ``data``) or where the bytes already are (``kind`` 1-3 with
# ``position``, ``size``, ``blob_id``, ``blob_uri``); a null row is a null value. The
# writer stores the inline bytes out of line and the descriptions as a packed struct.
WRITE_V2 = pa.struct([("kind", pa.uint8()), ("data", pa.large_binary()),
                      ("position", pa.uint64()), ("size", pa.uint64()),
                      ("blob_id", pa.uint32()), ("blob_uri", pa.string())])


def is_write_v2(field: pa.Field) -> bool:
    """A file writer's blob v2 column: :data:`WRITE_V2` with ``lance-encoding:blob``."""
    return field.type == WRITE_V2 and b"lance-encoding:blob" in (field.metadata or {})


def out_of_line(block: Variable, validity: np.ndarray | None):
    """The blob region for a page's values: ``(bytes, relative positions, sizes)``.

    Values are laid out 64-aligned from the region's start; empty and null values
    take no space (their descriptors are filled in by :func:`encode`).
    """
    n = block.num_values
    sizes = np.diff(block.offsets)
    if validity is not None:
        sizes = np.where(validity, sizes, 0)
    padded = (sizes + ALIGN - 1) // ALIGN * ALIGN
    rel = np.zeros(n, np.int64)
    if n:
        np.cumsum(padded[:-1], out=rel[1:])
    total = int(padded.sum())
    # one copy for the whole region: value bytes interleaved with padding taken from a
    # block of pad bytes placed after the data
    src = np.concatenate([block.data, np.full(ALIGN, PAD, np.uint8)])
    starts = np.stack([block.offsets[:-1], np.full(n, len(block.data), np.int64)],
                      axis=1).reshape(-1)
    lens = np.stack([sizes, padded - sizes], axis=1).reshape(-1)
    out = np.empty(total, np.uint8)
    if slices.concat_slices(src, starts, lens, out) != slices.OK:
        raise CorruptFileError("blob values outside their buffer")  # unreachable
    return out, rel, sizes


def encode(positions: np.ndarray, sizes: np.ndarray, validity: np.ndarray | None, *,
           version_minor: int, levels: repdef.Levels | None = None):
    """The descriptor page: ``(buffers, PageLayout)`` with absolute ``positions``.

    ``levels``: a blob inside structs (definition levels only, one per row): a null
    row's descriptor carries its definition level, whichever layer made it null."""
    pos = positions.astype(np.uint64)
    pos[sizes == 0] = 0
    if levels is not None and levels.defs is not None:
        d = levels.defs[:levels.num_levels].astype(np.uint64)
        pos[d > 0] = d[d > 0] << np.uint64(16)
    elif validity is not None:
        pos[~validity] = 1 << 16  # def level 1, no repetition
    desc = np.stack([pos, sizes.astype(np.uint64)], axis=1).reshape(-1)
    block = FixedWidth(128, desc.view(np.uint8), len(sizes))
    buffers, inner = miniblock.encode(block, None, codec=packed_struct.PackedCodec(_BITS),
                                      large_chunks=version_minor >= 2)
    layout = pb.e21.PageLayout()
    layout.blob_layout.inner_layout.CopyFrom(inner)
    if levels is not None:
        layout.blob_layout.layers.extend(levels.layers)
    else:
        layout.blob_layout.layers.append(L.REPDEF_ALL_VALID_ITEM if validity is None
                                         else L.REPDEF_NULLABLE_ITEM)
    return buffers, layout


def encode_v2(desc: pa.StructArray):
    """A blob v2 description page (2.2): ``(buffers, PageLayout)``.

    ``desc`` (:data:`DESCRIPTION_V2`, a null row for a null value) is stored as pylance
    14 stores it: a full-zip page of variable packed struct rows (``kind`` u8,
    ``position`` u64, ``size`` u64, ``blob_id`` u32, ``blob_uri`` as a u32 length and its
    bytes), a null row being its control byte alone. Example: ``(0, 0, 3, 0, "")`` →
    ``00 | 19 00 00 00 | 00 | 00 x8 | 03 00 x7 | 00 x4 | 00 x4`` (25 bytes of row)."""
    valid = None if desc.null_count == 0 else np.asarray(desc.is_valid())
    rows = desc if valid is None else desc.filter(pa.array(valid))
    block = vpacked.pack_rows(rows)
    if valid is not None:  # null rows hold no bytes
        lens = np.zeros(len(desc), np.int64)
        lens[valid] = np.diff(block.offsets)
        offs = np.zeros(len(desc) + 1, np.int64)
        np.cumsum(lens, out=offs[1:])
        block = Variable(offs, block.data, len(desc), 32)
    return fullzip.encode(block, valid, value_compression=vpacked.description(DESCRIPTION_V2))


class BlobDecoder:
    """Decodes a blob page: descriptors from the inner mini-block page, then the
    values from wherever they point."""

    def __init__(self, layout, num_rows: int, buffer_sizes, dtype: pa.DataType, where: str,
                 file_size: int, nested: bool = False):
        self.where = where
        self.dtype = dtype
        self.file_size = file_size
        if not (pa.types.is_large_binary(dtype) or pa.types.is_binary(dtype)
                or pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            raise CorruptFileError(f"{where}: blob page for a {dtype} column")
        info = repdef.LayerInfo.from_layers(layout.layers, where)
        if info.max_rep:
            raise NotSupportedError(f"{where}: blobs inside lists are not supported (pylance "
                                    f"14 cannot read them either)")
        if (info.num_layers != 1) != nested:
            raise CorruptFileError(f"{where}: blob page with {info.num_layers} rep/def layers "
                                   f"for a {'nested' if nested else 'top-level'} column")
        self.info = info
        self.nullable = info.max_def > 0
        inner = layout.inner_layout
        if inner.WhichOneof("layout") != "mini_block_layout":
            raise NotSupportedError(f"{where}: blob descriptors in a "
                                    f"{inner.WhichOneof('layout')} page")
        mb = inner.mini_block_layout
        if mb.value_compression.WhichOneof("compression") != "packed_struct" or list(
                mb.value_compression.packed_struct.bits_per_value) != _BITS:
            raise CorruptFileError(f"{where}: blob descriptors encoded as "
                                   f"{pb.describe(mb.value_compression)}")
        self.inner = miniblock.MiniBlockDecoder(mb, num_rows, buffer_sizes, where, 128)
        if self.inner.nested or self.inner.levels is not None:
            raise CorruptFileError(f"{where}: blob descriptors with rep/def levels")

    def _values(self, reader, desc: FixedWidth) -> tuple[Variable, np.ndarray | None]:
        d = desc.data.view("<u8").reshape(-1, 2)
        pos, size = d[:, 0].astype(np.int64), d[:, 1].astype(np.int64)
        if np.any(d[:, 1] > np.uint64(self.file_size)) or np.any(
                (size > 0) & ((pos < 0) | (pos > self.file_size - size))):
            raise CorruptFileError(f"{self.where}: a blob descriptor points past the end of the "
                                   f"file ({self.file_size} bytes)")
        validity = None
        if self.nullable:
            null = (size == 0) & (pos != 0)
            if null.any():
                validity = ~null
        elif np.any((size == 0) & (pos != 0)):
            raise CorruptFileError(f"{self.where}: a null blob in a column without nulls")
        take = np.flatnonzero(size > 0)
        offs = np.zeros(len(size) + 1, np.int64)
        np.cumsum(size, out=offs[1:])
        out = np.empty(int(offs[-1]), np.uint8)
        if take.size:
            data, at = reader.read_ranges_np(pos[take], size[take])
            if slices.concat_slices(data, np.asarray(at, np.int64), size[take], out) != 0:
                raise CorruptFileError(f"{self.where}: blob reads do not fit")
        return Variable(offs, out, len(size), offset_bits(self.dtype)), validity

    def read_nested(self, reader, offsets, rows: np.ndarray | None):
        """``(values block, Levels)`` of a blob inside structs: ``rows`` (sorted,
        duplicates allowed) or, for None, every row. Null descriptors carry the
        definition level; their values are empty."""
        if rows is None:
            (meta, data) = reader.read_ranges(list(zip(offsets[:2],
                                                       self.inner.buffer_sizes[:2])))
            desc, _ = self.inner.decode_all([meta, data])
        else:
            desc, _, sel = self.inner.read_rows(reader, offsets, rows)
            if sel is not None:
                d = desc.data.view("<u8").reshape(-1, 2)[sel]
                desc = FixedWidth(128, np.ascontiguousarray(d).reshape(-1).view(np.uint8),
                                  len(sel))
        d = desc.data.view("<u8").reshape(-1, 2)
        null = (d[:, 1] == 0) & (d[:, 0] != 0)
        defs = np.zeros(len(d), np.uint16)
        if null.any():
            lv = (d[null, 0] >> np.uint64(16)) & np.uint64(0xFFFF)
            if np.any(lv == 0) or np.any(lv > self.info.max_def):
                raise CorruptFileError(f"{self.where}: a null blob descriptor has definition "
                                       f"level outside 1..{self.info.max_def}")
            defs[null] = lv
            d = d.copy()
            d[null] = 0  # nulls read as empty values; the levels say they are null
            desc = FixedWidth(128, d.reshape(-1).view(np.uint8), len(d))
        block, _ = self._values(reader, desc)
        levels = repdef.Levels(None, defs if self.info.max_def else None, self.info, len(d),
                               len(d))
        return block, levels

    def _rows_desc(self, reader, offsets, rows: np.ndarray | None) -> FixedWidth:
        if rows is None:
            (meta, data) = reader.read_ranges(list(zip(offsets[:2],
                                                       self.inner.buffer_sizes[:2])))
            return self.inner.decode_all([meta, data])[0]
        desc, _, sel = self.inner.read_rows(reader, offsets, rows)
        if sel is not None:
            d = desc.data.view("<u8").reshape(-1, 2)[sel]
            desc = FixedWidth(128, np.ascontiguousarray(d).reshape(-1).view(np.uint8), len(sel))
        return desc

    def descriptions(self, reader, offsets, rows: np.ndarray | None = None) -> pa.StructArray:
        """The rows' ``(position, size)`` descriptions (:data:`DESCRIPTION_V1`), every
        row or ``rows`` (sorted), without reading the values: null for a null value."""
        d = self._rows_desc(reader, offsets, rows).data.view("<u8").reshape(-1, 2)
        pos, size = np.ascontiguousarray(d[:, 0]), np.ascontiguousarray(d[:, 1])
        null = (size == 0) & (pos != 0)
        if not self.nullable and null.any():
            raise CorruptFileError(f"{self.where}: a null blob in a column without nulls")
        mask = pa.array(null) if null.any() else None
        kids = [pa.array(pos, pa.uint64(), mask=null if mask is not None else None),
                pa.array(size, pa.uint64(), mask=null if mask is not None else None)]
        return pa.StructArray.from_arrays(kids, fields=list(DESCRIPTION_V1), mask=mask)

    def to_arrow(self, reader, desc: FixedWidth) -> pa.Array:
        """The values the descriptors ``desc`` point at, read through ``reader``."""
        block, validity = self._values(reader, desc)
        return to_arrow(self.dtype, block, validity)

    def scan(self, reader, offsets) -> pa.Array:
        """Every value of the page."""
        (meta, data) = reader.read_ranges(list(zip(offsets[:2], self.inner.buffer_sizes[:2])))
        desc, _ = self.inner.decode_all([meta, data])
        return self.to_arrow(reader, desc)

    def read_rows(self, reader, offsets, rows: np.ndarray) -> pa.Array:
        """The values of ``rows`` (sorted, page-relative)."""
        desc, _, sel = self.inner.read_rows(reader, offsets, rows)
        if sel is not None:
            d = desc.data.view("<u8").reshape(-1, 2)[sel]
            desc = FixedWidth(128, np.ascontiguousarray(d).reshape(-1).view(np.uint8), len(sel))
        return self.to_arrow(reader, desc)
