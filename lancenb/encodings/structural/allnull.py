"""All-null pages (2.1 ``AllNullLayout``) and constant pages (2.2 ``ConstantLayout``).

2.1 and 2.2 share the message's field numbers: ``layers = 5``; 2.2 adds
``inline_value = 6`` (the one value of a constant fixed-width page, at most 32 bytes;
absent means every value is null) and compressed rep/def levels (fields 7..10).
A simple page (no list or struct levels) has **no buffers**. A complex page (levels
of a nested column whose leaf has no valid value) has two buffers: the rep levels
and the def levels, each raw u16 in 2.1 (an empty buffer when absent). In 2.2 each is
one compressed block whose compression and count the description names: ``Flat(16)``,
bitpacked (``InlineBitpacking``/``OutOfLineBitpacking``), or pylance's ``Rle`` block
form ``u64 values byte length | u16 values | u8 run lengths`` (3000 null lists: rep
and def ``b8 0b 00 00 00 00 00 00 | 01 00 x 12 | ff x 11, 195``), chosen as in
mini-block pages (:mod:`lancenb.encodings.physical.levels`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb, physical
from lancenb.encodings.blocks import (
    FixedWidth,
    Variable,
    fixed_bits,
    is_variable,
    offset_bits,
    to_arrow,
)
from lancenb.encodings.physical import general
from lancenb.encodings.physical import levels as level_codec
from lancenb.encodings.structural import repdef
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["encode", "encode_levels", "ConstantDecoder"]

L = pb.e21.RepDefLayer


def encode():
    """An all-null page of flat data: no buffers, one nullable-item layer."""
    layout = pb.e21.PageLayout()
    layout.constant_layout.layers.append(L.REPDEF_NULLABLE_ITEM)
    return [], layout


def encode_levels(levels, *, version_minor: int):
    """An all-null page of a nested column: its rep and def levels, each one block
    (2.1: raw u16; 2.2: compressed as pylance 14 does, :mod:`.physical.levels`)."""
    layout = pb.e21.PageLayout()
    c = layout.constant_layout
    c.layers.extend(levels.layers)
    buffers = []
    for name, lv in (("rep", levels.rep), ("def", levels.defs)):
        if lv is None:
            buffers.append(np.zeros(0, np.uint8))
            continue
        if version_minor < 2:
            buffers.append(lv.view(np.uint8))
            continue
        src, _, _, desc = level_codec.encode_levels(
            lv, np.array([0, len(lv)], np.int64), version_minor=version_minor)
        buffers.append(src)
        getattr(c, f"{name}_compression").CopyFrom(desc)
        setattr(c, f"num_{name}_values", levels.num_levels)
    return buffers, layout


def _decode_levels(buf, enc, count: int, where: str) -> np.ndarray:
    """One page's rep or def levels stored as a single block: raw u16, or any level
    compression (bitpacked, RLE; 2.2 may wrap big blocks in General)."""
    raw = np.frombuffer(buf, np.uint8)
    kind = None if enc is None else enc.WhichOneof("compression")
    if kind is None or (kind == "flat" and enc.flat.bits_per_value == 16
                        and not enc.flat.HasField("data")):
        if len(raw) != 2 * count:
            raise CorruptFileError(f"{where}: level buffer of {len(raw)} bytes for {count} "
                                   f"levels")
        return raw.view("<u2")
    if kind == "general":
        inner = general.decompress(raw, general.scheme_of(enc, where), where,
                                   limit=general.unit_limit(count, 16))
        return _decode_levels(inner, enc.general.values, count, where)
    dec = physical.level_decoder(enc, where)
    out = dec.decode(raw, np.zeros(1, np.int64), np.array([len(raw)], np.int64),
                     np.array([count], np.int64), where)
    if len(out) != count:
        raise CorruptFileError(f"{where}: {len(out)} levels decoded, expected {count}")
    return out


class ConstantDecoder:
    """Decodes constant pages: every value null, or one value repeated (2.2)."""

    def __init__(self, layout, num_rows: int, buffer_sizes, dtype: pa.DataType, where: str,
                 chain: pa.DataType | None = None):
        self.layout = layout
        self.where = where
        self.chain = chain
        self.buffer_sizes = list(buffer_sizes)
        layers = list(layout.layers)
        if chain is not None:
            self.info = repdef.LayerInfo.from_layers(layers, where)
            if len(self.buffer_sizes) not in (0, 1, 2, 3):
                raise CorruptFileError(f"{where}: all-null page with {len(self.buffer_sizes)} "
                                       f"buffers")
            self.value = bytes(layout.inline_value) if layout.HasField("inline_value") else None
            self.dtype = dtype
            self.num_rows = num_rows
            return
        if (layout.HasField("rep_compression") or layout.HasField("def_compression")
                or len(buffer_sizes)):
            raise CorruptFileError(f"{where}: all-null page of a flat column with rep/def "
                                   f"levels")
        if layers not in ([L.REPDEF_NULLABLE_ITEM], [L.REPDEF_ALL_VALID_ITEM]):
            raise NotSupportedError(f"{where}: constant page layers {layers} not supported yet")
        self.dtype = dtype
        self.num_rows = num_rows
        self.value = bytes(layout.inline_value) if layout.HasField("inline_value") else None
        if self.value is not None and not _is_bool_byte(dtype, self.value):
            bits = fixed_bits(dtype)
            if bits is None or bits % 8 or len(self.value) * 8 != bits:
                raise CorruptFileError(f"{where}: constant value of {len(self.value)} bytes for "
                                       f"a {dtype} column")

    def array(self, n: int) -> pa.Array:
        """``n`` rows of the page's constant (null or its value)."""
        if self.value is None:
            return pa.nulls(n, self.dtype)
        if _is_bool_byte(self.dtype, self.value):
            return to_arrow(self.dtype, _bool_block(self.value, n), None)
        data = np.tile(np.frombuffer(self.value, np.uint8), n)
        return to_arrow(self.dtype, FixedWidth(len(self.value) * 8, data, n), None)

    def chain_array(self, reader, offsets) -> pa.Array:
        """The page's rows (a nested column's chain type), every leaf value null."""
        info, where = self.info, self.where
        rep = defs = None
        n = None
        value = self.value
        if self.buffer_sizes:
            bufs = reader.read_ranges(list(zip(offsets, self.buffer_sizes)))
            if len(bufs) in (1, 3):  # the value (variable width) comes first
                value = _constant_blob(bufs[0], where)
                bufs = bufs[1:]
        if self.buffer_sizes and bufs:
            lay = self.layout
            nrep = int(lay.num_rep_values) if lay.HasField("rep_compression") else \
                self.buffer_sizes[0] // 2
            ndef = int(lay.num_def_values) if lay.HasField("def_compression") else \
                len(bufs[1]) // 2
            nrep = nrep if lay.HasField("rep_compression") else len(bufs[0]) // 2
            if len(bufs[0]) or lay.HasField("rep_compression"):
                rep = _decode_levels(bufs[0], lay.rep_compression if lay.HasField(
                    "rep_compression") else None, nrep, where)
                n = len(rep)
            if len(bufs[1]) or lay.HasField("def_compression"):
                defs = _decode_levels(bufs[1], lay.def_compression if lay.HasField(
                    "def_compression") else None, ndef, where)
                if n is not None and len(defs) != n:
                    raise CorruptFileError(f"{where}: {n} rep levels but {len(defs)} def "
                                           f"levels")
                n = len(defs)
        if n is None:
            n = self.num_rows
        levels = repdef.Levels(rep, defs, info, n, self.num_rows)
        vis = levels.visible()
        nvis = n if vis is None else len(vis)
        valid = repdef.leaf_validity(levels)
        if value is None and nvis and (valid is None or valid.any()):
            raise CorruptFileError(f"{where}: a valid value in an all-null page")
        un = repdef.unshred(levels, nvis, where, offsets32=repdef.offsets32(self.chain))
        leaf_t = self.dtype
        if value is None:
            leaf = pa.nulls(nvis, leaf_t)
        elif is_variable(leaf_t):
            offs = np.arange(nvis + 1, dtype=np.int64) * len(value)
            leaf = to_arrow(leaf_t, Variable(offs, np.tile(np.frombuffer(value, np.uint8), nvis),
                                             nvis, offset_bits(leaf_t)), valid)
        elif _is_bool_byte(leaf_t, value):
            leaf = to_arrow(leaf_t, _bool_block(value, nvis), valid)
        else:
            bits = fixed_bits(leaf_t)
            if bits is None or bits % 8 or len(value) * 8 != bits:
                raise CorruptFileError(f"{where}: constant value of {len(value)} bytes for a "
                                       f"{leaf_t} column")
            leaf = to_arrow(leaf_t, FixedWidth(bits, np.tile(np.frombuffer(value, np.uint8),
                                                             nvis), nvis), valid)
        return repdef.build_chain(self.chain, leaf, un, where)


def _is_bool_byte(dtype: pa.DataType, value: bytes) -> bool:
    """pylance stores a constant boolean as one byte (0 or 1)."""
    return pa.types.is_boolean(dtype) and len(value) == 1


def _bool_block(value: bytes, n: int) -> FixedWidth:
    bits = np.packbits(np.full(n, bool(value[0] & 1)), bitorder="little")
    return FixedWidth(1, bits, n)


def _constant_blob(buf, where: str) -> bytes:
    """The value of a 2.2 constant page of variable-width data, stored as a buffer
    list ``u32 count (2) | u32 size | part 0 | ... | value bytes``: part 0 starts with
    the value's u64 length (``size`` is 8 for 32-bit offsets, 16 for 64-bit ones),
    and the value is the buffer's last ``length`` bytes. Layout read off pylance
    14's files: string ``02000000 08000000 | 02..00 (u64 2) | 02000000 | 'qq'``,
    large_string ``02000000 10000000 | 02..00 (u64 2) | 00000000 02000000 00000000 |
    'qq'``."""
    raw = bytes(buf)
    if len(raw) < 16 or int.from_bytes(raw[:4], "little") != 2:
        raise CorruptFileError(f"{where}: constant value buffer is not a 2-buffer list")
    size0 = int.from_bytes(raw[4:8], "little")
    length = int.from_bytes(raw[8:16], "little")
    if size0 not in (8, 16) or 8 + size0 + 4 + length > len(raw):
        raise CorruptFileError(f"{where}: constant value buffer has an unexpected layout "
                               f"(part size {size0}, value length {length}, {len(raw)} bytes)")
    return raw[len(raw) - length:] if length else b""
