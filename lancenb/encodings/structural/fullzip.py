"""Full-zip pages: each value stored whole with its control word (for large values).

Used when values are too large for mini-block chunks (the reference switches at 256
bytes). Description: ``FullZipLayout`` with ``bits_def`` (0, or 1 when the page has
nulls), ``bits_per_value`` (fixed width) or ``bits_per_offset`` (variable width, the
length prefix), ``num_items``/``num_visible_items`` (= rows without repetition),
``value_compression`` ``Flat(bits)`` or ``Variable(Flat(bits_per_offset))``.

Buffers: ``[0]`` the zipped items; ``[1]`` (variable width only) the repetition
index: ``rows + 1`` byte offsets where each row starts, each 1, 2, 4 or 8 bytes wide
(the reader derives the width from the buffer size). Fixed-width items are
``control word + value`` (null slots keep a value), so row ``r`` starts at
``r * item_size`` and needs no index. Item layout of variable-width values: see
``lancenb.kernels.fullzip``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedSizeList, FixedWidth, Variable
from lancenb.encodings.physical import fsl as fsl_enc
from lancenb.encodings.physical import fsst, general, packed_struct
from lancenb.encodings.structural import repdef
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import fullzip as kz
from lancenb.kernels import slices

__all__ = ["encode", "FullZipDecoder", "control_width"]

L = pb.e21.RepDefLayer


def control_width(bits_rep: int, bits_def: int) -> int:
    """Bytes of the control word holding a value's rep and def levels."""
    total = bits_rep + bits_def
    return 0 if total == 0 else 1 if total <= 8 else 2 if total <= 16 else 4


def _index_width(max_value: int) -> int:
    for w in (1, 2, 4):
        if max_value < (1 << (8 * w)):
            return w
    return 8


def _bitlen(levels) -> int:
    return 0 if levels is None or len(levels) == 0 else int(levels.max()).bit_length()


def encode_nested(block, levels, value_compression=None):
    """A full-zip page of a nested column: one item per level (see
    :func:`lancenb.kernels.fullzip.zip_levels`) and the repetition index."""
    info = levels.info
    rep = levels.rep if levels.rep is not None else np.zeros(0, np.uint16)
    defs = levels.defs if levels.defs is not None else np.zeros(0, np.uint16)
    if levels.rep is None and levels.defs is None:
        # no levels at all (e.g. a struct leaf with no nulls anywhere): the kernel
        # walks the levels to find the items, so give it "all valid" ones
        defs = np.zeros(block.num_values, np.uint16)
    bits_rep, bits_def = _bitlen(levels.rep), _bitlen(levels.defs)
    cw = control_width(bits_rep, bits_def)
    n, nvis = levels.num_levels, block.num_values
    layout = pb.e21.FullZipLayout(bits_rep=bits_rep, bits_def=bits_def,
                                  num_items=n if levels.rep is not None else nvis,
                                  num_visible_items=nvis, layers=levels.layers)
    value_desc = None
    if isinstance(block, FixedSizeList):
        block, value_desc = fsl_enc.per_value(block)
    vis = levels.visible()
    dv = defs if vis is None or not len(defs) else defs[vis]
    valid = np.ones(nvis, bool) if not len(dv) else dv == 0
    if value_desc is None:  # plain booleans, not vectors' rows of bits
        block = _byte_bools(block)
    if isinstance(block, FixedWidth):
        if block.bits % 8:
            raise NotSupportedError("full-zip pages need whole-byte values")
        width = block.bits // 8
        total = n * cw + nvis * width
        offsets = np.zeros(1, np.int64)
        lw = 0
        estimate = total if levels.rep is not None else 0
        layout.bits_per_value = block.bits
        layout.value_compression.CopyFrom(value_desc or value_compression or
                                          pb.flat(block.bits))
    else:
        width = 0
        lw = block.offset_bits // 8
        offsets = block.offsets
        lengths = np.diff(offsets)
        total = n * cw + int(valid.sum()) * lw + int(lengths[valid].sum())
        estimate = len(block.data) + cw * int(layout.num_items) + lw * nvis
        layout.bits_per_offset = lw * 8
        layout.value_compression.CopyFrom(value_compression or pb.variable(lw * 8))
    out = np.empty(total, np.uint8)
    starts = np.empty(n + 1, np.int64)
    rows = kz.zip_levels(rep, defs, info.max_rep, info.max_visible_def, bits_def, cw, width,
                         block.data, offsets, lw, out, starts)
    buffers = [out]
    if estimate:
        buffers.append(starts[:rows + 1].astype(f"<u{_index_width(estimate)}").view(np.uint8))
    return buffers, pb.e21.PageLayout(full_zip_layout=layout)


def _byte_bools(block):
    """Booleans are zipped one byte a value (0 or 1), as pylance zips them; other
    blocks are returned as they are."""
    if isinstance(block, FixedWidth) and block.bits == 1:
        n = block.num_values
        data = np.unpackbits(np.asarray(block.data, np.uint8), count=n, bitorder="little")
        return FixedWidth(8, data, n)
    return block


def encode(block, validity: np.ndarray | None, *, levels=None, value_compression=None):
    """Encode one page: ``(buffers, PageLayout)``. ``value_compression`` describes
    variable-width values already compressed per value (FSST codes, General units)."""
    if levels is not None:
        if not (levels.is_simple() and levels.rep is None):
            return encode_nested(block, levels, value_compression)
        validity = None if levels.defs is None else levels.defs == 0
    value_desc = None
    if isinstance(block, FixedSizeList):
        block, value_desc = fsl_enc.per_value(block)
    n = block.num_values
    bits_def = 0 if validity is None else 1
    cw = control_width(0, bits_def)
    layout = pb.e21.FullZipLayout(bits_def=bits_def, num_items=n, num_visible_items=n,
                                  layers=[L.REPDEF_ALL_VALID_ITEM if validity is None
                                          else L.REPDEF_NULLABLE_ITEM])
    if value_desc is None:  # plain booleans, not vectors' rows of bits
        block = _byte_bools(block)
    if isinstance(block, FixedWidth):
        if block.bits % 8:
            raise NotSupportedError("full-zip pages need whole-byte values")
        width = block.bits // 8
        items = np.empty((n, cw + width), dtype=np.uint8)
        if cw:
            items[:, 0] = ~validity
        items[:, cw:] = block.data.reshape(n, width)
        layout.bits_per_value = block.bits
        layout.value_compression.CopyFrom(value_desc or value_compression or pb.flat(block.bits))
        return [items.reshape(-1)], pb.e21.PageLayout(full_zip_layout=layout)
    # the length prefix is as wide as the Arrow type's offsets (pylance insists on it)
    lw = block.offset_bits // 8
    defs = np.zeros(0, np.uint16) if validity is None else (~validity).astype(np.uint16)
    lengths = np.diff(block.offsets)
    valid_bytes = int(lengths.sum() if validity is None else lengths[validity].sum())
    nvalid = n if validity is None else int(validity.sum())
    out = np.empty(n * cw + nvalid * lw + valid_bytes, dtype=np.uint8)
    starts = np.empty(n + 1, dtype=np.int64)
    kz.zip_variable(block.offsets, block.data, defs, cw, lw, out, starts)
    index = starts.astype(f"<u{_index_width(len(out))}")
    layout.bits_per_offset = lw * 8
    layout.value_compression.CopyFrom(value_compression or pb.variable(lw * 8))
    return [out, index.view(np.uint8)], pb.e21.PageLayout(full_zip_layout=layout)


class FullZipDecoder:
    """Decodes a full-zip page of flat (non-repeated) data."""

    def __init__(self, layout, num_rows: int, buffer_sizes, where: str, dtype: pa.DataType,
                 fixed_bits: int | None):
        self.where = where
        self.bool_bytes = False  # booleans zipped one byte a value (set by _fixed_width)
        layers = list(layout.layers)
        self.nested = bool(layout.bits_rep) or layers not in (
            [L.REPDEF_ALL_VALID_ITEM], [L.REPDEF_NULLABLE_ITEM])
        if self.nested:
            self._init_nested(layout, num_rows, buffer_sizes, dtype, fixed_bits)
            return
        if layout.bits_def > 1:
            raise CorruptFileError(f"{where}: {layout.bits_def} definition bits for one "
                                   f"nullable layer")
        if layout.num_items != num_rows or layout.num_visible_items != num_rows:
            raise CorruptFileError(f"{where}: full-zip layout has {layout.num_items} items "
                                   f"for {num_rows} rows")
        self.cw = control_width(0, layout.bits_def)
        self.def_mask = (1 << layout.bits_def) - 1
        self.num_rows = num_rows
        self.sizes = list(buffer_sizes)
        vc = layout.value_compression
        kind = vc.WhichOneof("compression")
        details = layout.WhichOneof("details")
        self.fsl = None
        self.expand = None
        if details == "bits_per_value":
            self.width = self._fixed_width(layout, vc, kind, dtype, fixed_bits)
            self.item = self.cw + self.width
            if not self.sizes or self.sizes[0] != num_rows * self.item:
                raise CorruptFileError(f"{where}: zipped buffer has {self.sizes[:1]} bytes, "
                                       f"expected {num_rows * self.item}")
            self.fixed = True
        elif details == "bits_per_offset":
            if fixed_bits is not None:
                raise CorruptFileError(f"{where}: variable-width values for a {dtype} column")
            self.expand = _per_value_decoder(vc, where)
            if layout.bits_per_offset not in (32, 64):
                raise CorruptFileError(f"{where}: {layout.bits_per_offset}-bit value lengths")
            self.lw = layout.bits_per_offset // 8
            if len(self.sizes) != 2:
                raise CorruptFileError(f"{where}: variable full-zip page has {len(self.sizes)} "
                                       f"buffers, expected 2")
            rows1 = num_rows + 1
            if self.sizes[1] % rows1 or self.sizes[1] // rows1 not in (1, 2, 4, 8):
                raise CorruptFileError(f"{where}: repetition index of {self.sizes[1]} bytes "
                                       f"for {num_rows} rows")
            self.iw = self.sizes[1] // rows1
            self.fixed = False
        else:
            raise CorruptFileError(f"{where}: full-zip layout gives no value width")

    def _fixed_width(self, layout, vc, kind, dtype, fixed_bits) -> int:
        """Bytes per fixed-width value (vectors: their validity bytes included)."""
        where = self.where
        if kind == "fixed_size_list":
            self.fsl = fsl_enc.PerValueFsl(vc, int(layout.bits_per_value), fixed_bits, where)
            return self.fsl.width
        if kind == "packed_struct":
            packed_struct.parse(vc, fixed_bits, where)
            if layout.bits_per_value != fixed_bits:
                raise CorruptFileError(f"{where}: {layout.bits_per_value}-bit values for a "
                                       f"{dtype} column")
            return fixed_bits // 8
        if fixed_bits is None or kind != "flat" or vc.flat.HasField("data"):
            raise NotSupportedError(f"{where}: full-zip value encoding {pb.describe(vc)} "
                                    f"for {dtype} is not supported yet")
        if fixed_bits == 1 and layout.bits_per_value == 8:
            # pylance zips booleans (list<bool> forced to full-zip) one byte a value, 0 or 1
            self.bool_bytes = True
            return 1
        if layout.bits_per_value != fixed_bits or fixed_bits % 8:
            raise CorruptFileError(f"{where}: {layout.bits_per_value}-bit values for a "
                                   f"{dtype} column")
        return fixed_bits // 8

    def _init_nested(self, layout, num_rows, buffer_sizes, dtype, fixed_bits):
        where = self.where
        self.info = repdef.LayerInfo.from_layers(layout.layers, where)
        if layout.bits_rep > 16 or layout.bits_def > 16:
            raise CorruptFileError(f"{where}: {layout.bits_rep} rep bits, {layout.bits_def} "
                                   f"def bits")
        if (1 << layout.bits_rep) <= self.info.max_rep and self.info.max_rep:
            raise CorruptFileError(f"{where}: {layout.bits_rep} rep bits for "
                                   f"{self.info.max_rep} list layers")
        if self.info.max_rep and not layout.bits_rep:
            raise CorruptFileError(f"{where}: list layers without repetition levels")
        self.bits_rep, self.bits_def = int(layout.bits_rep), int(layout.bits_def)
        self.cw = control_width(self.bits_rep, self.bits_def)
        self.num_rows = num_rows
        self.num_items = int(layout.num_items)
        self.num_visible = int(layout.num_visible_items)
        self.sizes = list(buffer_sizes)
        self.dtype = dtype
        vc = layout.value_compression
        kind = vc.WhichOneof("compression")
        details = layout.WhichOneof("details")
        self.fixed = details == "bits_per_value"
        self.fsl = None
        self.expand = None
        if self.fixed:
            self.width = self._fixed_width(layout, vc, kind, dtype, fixed_bits)
            self.lw = 0
        elif details == "bits_per_offset":
            if fixed_bits is not None:
                raise CorruptFileError(f"{where}: variable-width values for a {dtype} column")
            self.expand = _per_value_decoder(vc, where)
            if layout.bits_per_offset not in (32, 64):
                raise CorruptFileError(f"{where}: {layout.bits_per_offset}-bit value lengths")
            self.width = 0
            self.lw = layout.bits_per_offset // 8
        else:
            raise CorruptFileError(f"{where}: full-zip layout gives no value width")
        self.has_index = len(self.sizes) == 2
        if len(self.sizes) not in (1, 2) or (not self.has_index and (
                self.info.max_rep or not self.fixed)):
            raise CorruptFileError(f"{where}: full-zip page has {len(self.sizes)} buffers")
        if self.has_index:
            rows1 = num_rows + 1
            if self.sizes[1] % rows1 or self.sizes[1] // rows1 not in (1, 2, 4, 8):
                raise CorruptFileError(f"{where}: repetition index of {self.sizes[1]} bytes "
                                       f"for {num_rows} rows")
            self.iw = self.sizes[1] // rows1
        else:
            self.item = self.cw + self.width
            if self.sizes[0] != num_rows * self.item:
                raise CorruptFileError(f"{where}: zipped buffer has {self.sizes[0]} bytes, "
                                       f"expected {num_rows * self.item}")

    def _unzip(self, data: np.ndarray, expect_rows: int | None):
        """``(block, Levels)`` of the items in ``data`` (whole rows)."""
        info = self.info
        counts = np.zeros(3, np.int64)
        err = np.zeros(2, np.int64)
        e16, e8, e64 = np.zeros(0, np.uint16), np.zeros(0, np.uint8), np.zeros(0, np.int64)
        args = (self.cw, self.bits_def, info.max_rep, info.max_visible_def, self.width,
                self.lw)
        status = kz.unzip_levels(data, *args, False, e16, e16, e8, e64, counts, err)
        if status != kz.OK:
            what = "item runs past the end of the page" if status == kz.TRUNCATED else \
                "rep level above the page's maximum"
            raise CorruptFileError(f"{self.where}, item {int(err[0])}, byte {int(err[1])}: "
                                   f"{what}")
        n, nvis, nbytes = (int(x) for x in counts)
        rep = np.empty(n if self.bits_rep else 0, np.uint16)
        defs = np.empty(n if self.bits_def else 0, np.uint16)
        out = np.empty(nbytes, np.uint8)
        offs = np.empty(nvis + 1 if self.width == 0 else 0, np.int64)
        kz.unzip_levels(data, *args, True, rep, defs, out, offs, counts, err)
        levels = repdef.Levels(rep if self.bits_rep else None, defs if self.bits_def else None,
                               info, n, 0)
        if levels.rep is not None:
            rows = int(np.count_nonzero(rep == info.max_rep))
            if n and rep[0] != info.max_rep:
                raise CorruptFileError(f"{self.where}: a row does not start at its index entry")
        else:
            rows = n
        if expect_rows is not None and rows != expect_rows:
            raise CorruptFileError(f"{self.where}: zipped data holds {rows} rows, expected "
                                   f"{expect_rows}")
        if self.width == 0:
            block = Variable(offs, out, nvis, self.lw * 8)
            if self.expand is not None:
                block = self.expand(block)
        elif self.fsl is not None:
            block = self.fsl.unzip(out, nvis)
        else:
            block = self._fixed_block(out, nvis)
        return block, levels

    def read_nested(self, reader, offsets, rows: np.ndarray | None):
        """``(block, Levels, rows decoded)`` for sorted ``rows`` (None: all)."""
        if rows is None:
            (buf,) = reader.read_ranges([(offsets[0], self.sizes[0])])
            block, levels = self._unzip(np.frombuffer(buf, np.uint8), self.num_rows)
            if self.info.max_rep and levels.num_levels != self.num_items:
                raise CorruptFileError(f"{self.where}: {levels.num_levels} items, the layout "
                                       f"says {self.num_items}")
            return block, levels, None
        uniq = np.unique(rows)
        n = len(uniq)
        if self.has_index:
            iw = self.iw
            idx = _read_slices(reader, offsets[1] + uniq * iw, np.full(n, 2 * iw, np.int64),
                               self.where)
            bounds = idx.view(f"<u{iw}").reshape(-1, 2).astype(np.int64)
            if np.any(bounds[:, 1] < bounds[:, 0]) or np.any(bounds < 0) or \
                    np.any(bounds[:, 1] > self.sizes[0]):
                raise CorruptFileError(f"{self.where}: repetition index points outside the "
                                       f"page")
        else:
            bounds = np.stack([uniq * self.item, (uniq + 1) * self.item], axis=1)
        data = _read_slices(reader, offsets[0] + bounds[:, 0], bounds[:, 1] - bounds[:, 0],
                            self.where)
        block, levels = self._unzip(data, n)
        return block, levels, uniq

    # -- decoding ------------------------------------------------------------
    def _fixed(self, data: np.ndarray, n: int):
        items = data.reshape(n, self.item)
        validity = None
        if self.cw:
            d = items[:, 0] & self.def_mask
            validity = d == 0
        values = np.ascontiguousarray(items[:, self.cw:]).reshape(-1)
        if self.fsl is not None:
            return self.fsl.unzip(values, n), validity
        return self._fixed_block(values, n), validity

    def _fixed_block(self, values: np.ndarray, n: int):
        """The unzipped fixed-width values as a block (byte booleans packed to bits)."""
        if not self.bool_bytes:
            return FixedWidth(self.width * 8, values, n)
        if len(values) and int(values.max()) > 1:
            raise CorruptFileError(f"{self.where}: a one-byte boolean value is "
                                   f"{int(values.max())}, not 0 or 1")
        return FixedWidth(1, np.packbits(values, bitorder="little"), n)

    def _variable(self, data: np.ndarray, n: int):
        err = np.zeros(2, np.int64)
        total = kz.unzip_variable_size(data, n, self.cw, self.lw, self.def_mask, err)
        if total < 0:
            what = "item runs past the end of the page" if total == kz.TRUNCATED else \
                "bytes left over after the last item"
            raise CorruptFileError(f"{self.where}, item {int(err[0])}, byte {int(err[1])}: "
                                   f"{what}")
        offsets = np.empty(n + 1, np.int64)
        out = np.empty(int(total), np.uint8)
        defs = np.empty(n, np.int64)
        kz.unzip_variable_fill(data, n, self.cw, self.lw, self.def_mask, offsets, out, defs)
        validity = (defs == 0) if self.cw else None
        block = Variable(offsets, out, n, self.lw * 8)
        return (block if self.expand is None else self.expand(block)), validity

    def buffers_for_all(self, offsets, sizes):
        """The page's value buffer (all a whole-page decode needs)."""
        return [(offsets[0], sizes[0])]

    def decode_all(self, buffers):
        """``(block, validity)`` of every row from the value buffer."""
        data = np.frombuffer(buffers[0], dtype=np.uint8)
        if self.fixed:
            return self._fixed(data, self.num_rows)
        return self._variable(data, self.num_rows)

    def read_rows(self, reader, offsets, rows: np.ndarray):
        """``(block, validity)`` for sorted unique page-relative ``rows`` (vectorised:
        no per-row Python)."""
        rows = np.asarray(rows, dtype=np.int64)
        n = len(rows)
        if self.fixed:
            data = _read_slices(reader, offsets[0] + rows * self.item,
                                np.full(n, self.item, np.int64), self.where)
            return self._fixed(data, n)
        # first read: each row's start and end in the repetition index
        iw = self.iw
        idx = _read_slices(reader, offsets[1] + rows * iw, np.full(n, 2 * iw, np.int64),
                           self.where)
        bounds = idx.view(f"<u{iw}").reshape(-1, 2).astype(np.int64)
        if np.any(bounds[:, 1] < bounds[:, 0]) or np.any(bounds < 0) or \
                np.any(bounds[:, 1] > self.sizes[0]):
            raise CorruptFileError(f"{self.where}: repetition index points outside the page")
        # second read: the items themselves
        data = _read_slices(reader, offsets[0] + bounds[:, 0], bounds[:, 1] - bounds[:, 0],
                            self.where, scratch=True)  # (unzipped into new arrays at once)
        return self._variable(data, n)


def _per_value_decoder(vc, where: str):
    """``Variable -> Variable`` undoing per-value compression (None for plain values)."""
    kind = vc.WhichOneof("compression")
    if kind == "variable" and not vc.variable.HasField("values") \
            and vc.variable.offsets.WhichOneof("compression") == "flat":
        return None
    if kind == "variable_packed_struct":
        return None  # whole packed rows; the page decoder checks and splits them
    if kind == "fsst":
        values = fsst.FsstValues(vc, where)
        return lambda block: values.expand(block, where)
    if kind == "general":
        inner = vc.general.values
        if _per_value_decoder(inner, where) is not None or inner.WhichOneof(
                "compression") != "variable":
            raise NotSupportedError(f"{where}: full-zip values {pb.describe(vc)} are not "
                                    f"supported")
        scheme = general.scheme_of(vc, where)
        return lambda block: general.decompress_values(block, scheme, where)
    raise NotSupportedError(f"{where}: full-zip value encoding {pb.describe(vc)} is not "
                            f"supported yet")


def _read_slices(reader, positions: np.ndarray, lengths: np.ndarray, where: str,
                 scratch: bool = False) -> np.ndarray:
    """The byte ranges, read (coalesced) and joined back to back; ``scratch``: the
    bytes may be in the reader's reused buffer (the caller copies them out at once)."""
    read = getattr(reader, "read_ranges_scratch", None) if scratch else None
    if len(positions) > 1:
        # consecutive rows are back to back in the page: one range per run of them
        # (a run of 1024 vectors was 1024 ranges, then 1024 copies to join them)
        positions = np.asarray(positions, np.int64)
        ends = positions + lengths
        breaks = np.flatnonzero(positions[1:] != ends[:-1]) + 1
        if len(breaks) < len(positions) - 1:
            last = np.append(breaks, len(positions)) - 1
            positions = positions[np.insert(breaks, 0, 0)]
            lengths = ends[last] - positions
    if len(positions) == 1 and read is None:
        return np.frombuffer(reader.read(int(positions[0]), int(lengths[0])), np.uint8)
    buf, pos = (read or reader.read_ranges_np)(positions, lengths)
    if len(buf) == int(lengths[-1]) + int(pos[-1]) and pos[0] == 0 and \
            np.array_equal(pos[1:], np.cumsum(lengths[:-1])):
        return buf  # read back to back already (nothing coalesced): no second copy
    out = np.empty(int(lengths.sum()), np.uint8)
    if slices.concat_slices(buf, pos, lengths.astype(np.int64), out) != 0:
        raise CorruptFileError(f"{where}: read ranges do not fit the buffer read")
    return out
