"""FixedSizeList: vectors of fixed-width items, with the items' own validity.

Description: ``FixedSizeList{items_per_value: dim, values: Flat(item bits),
has_validity}``. The items are never compressed (as in the reference: compressing
them would cut vectors or their validity across chunks). A row's own nullness is a
definition level like any value's; only *item* nulls travel here.

* **Mini-block chunk**: with ``has_validity`` two buffers, ``[0]`` the chunk's item
  validity bitmap (LSB-first, ``ceil(rows * dim / 8)`` bytes, starting at the chunk's
  first item) and ``[1]`` the items; otherwise just the items. A chunk holds the
  largest power-of-two number of rows (at most 4096) whose estimated size (items plus
  ``ceil(dim / 8)`` validity bytes per row) stays below 8186 bytes.
  Example, dim 2 f32, rows ``[1, null]``, ``[3, 4]``: ``0d`` then
  ``00 00 80 3f | 00 00 00 00 | 00 00 40 40 | 00 00 80 40``.
* **Full-zip value** (per row): ``ceil(dim / 8)`` bytes of that row's item validity
  (only with ``has_validity``), then the row's items; ``bits_per_value`` counts both.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedSizeList, FixedWidth
from lancenb.encodings.physical import flat
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import gather as kg
from lancenb.kernels import slices

__all__ = ["FslCodec", "FslValues", "PerValueFsl", "description", "per_value", "parse"]


def description(dim: int, item_bits: int, has_validity: bool):
    return pb.e21.CompressiveEncoding(fixed_size_list=pb.e21.FixedSizeList(
        items_per_value=dim, values=pb.flat(item_bits), has_validity=has_validity))


def parse(enc, fixed_bits: int | None, where: str) -> tuple[int, int, bool]:
    """``(dim, item_bits, has_validity)`` of a FixedSizeList description, checked
    against the column's value width (``dim * item_bits``)."""
    f = enc.fixed_size_list
    inner = f.values
    kind = inner.WhichOneof("compression")
    if kind != "flat" or inner.flat.HasField("data"):
        raise NotSupportedError(f"{where}: vectors whose items use {pb.describe(inner)} are "
                                f"not supported yet")
    dim, ibits = int(f.items_per_value), int(inner.flat.bits_per_value)
    if dim <= 0 or ibits <= 0 or ibits % 8 or fixed_bits is None or dim * ibits != fixed_bits:
        raise CorruptFileError(f"{where}: vectors of {dim} x {ibits}-bit items for a column "
                               f"of {fixed_bits or 'variable'}-bit values")
    return dim, ibits, bool(f.has_validity)


def _validity_bytes(dim: int) -> int:
    return (dim + 7) // 8


def _pack_runs(valid: np.ndarray, run_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pack consecutive runs of ``valid`` (bool) of ``run_bits`` bits each into
    separate LSB-first bitmaps: ``(bytes, byte size of each run)``."""
    nbytes = (run_bits + 7) // 8
    padded_start = np.zeros(len(run_bits), np.int64)
    np.cumsum(nbytes[:-1] * 8, out=padded_start[1:])
    bit_start = np.zeros(len(run_bits), np.int64)
    np.cumsum(run_bits[:-1], out=bit_start[1:])
    bits = np.zeros(int(nbytes.sum()) * 8, np.uint8)
    dest = np.arange(len(valid), dtype=np.int64) + np.repeat(padded_start - bit_start, run_bits)
    bits[dest] = valid
    return np.packbits(bits, bitorder="little"), nbytes


class FslCodec:
    """Mini-block codec for a :class:`FixedSizeList` block (no compression)."""

    @staticmethod
    def rows_per_chunk(block: FixedSizeList) -> int:
        est = block.dim * block.item_bits // 8
        if block.item_validity is not None:
            est += _validity_bytes(block.dim)
        return flat.values_per_chunk(est * 8)

    def plan(self, block: FixedSizeList) -> np.ndarray:
        k = self.rows_per_chunk(block)
        return np.append(np.arange(0, block.num_values, k, dtype=np.int64), block.num_values)

    def encode_chunks(self, block: FixedSizeList, bounds: np.ndarray):
        counts = np.diff(bounds)
        row_bytes = block.dim * block.item_bits // 8
        vstarts = bounds[:-1] * row_bytes
        vsizes = counts * row_bytes
        has_validity = block.item_validity is not None
        desc = description(block.dim, block.item_bits, has_validity)
        if not has_validity:
            return block.data, vstarts[:, None], vsizes[:, None], desc
        packed, nbytes = _pack_runs(block.item_validity, counts * block.dim)
        bstarts = np.zeros(len(counts), np.int64)
        np.cumsum(nbytes[:-1], out=bstarts[1:])
        src = np.concatenate([packed, block.data])
        starts = np.stack([bstarts, vstarts + len(packed)], axis=1)
        sizes = np.stack([nbytes, vsizes], axis=1)
        return src, starts, sizes, desc


class FslValues:
    """Decoder of FixedSizeList mini-block chunks."""

    def __init__(self, enc, fixed_bits: int | None, where: str):
        self.dim, self.item_bits, self.has_validity = parse(enc, fixed_bits, where)
        self.num_buffers = 2 if self.has_validity else 1
        self.row_bytes = self.dim * self.item_bits // 8

    def _check(self, sizes, counts, where):
        expected = counts * self.row_bytes
        bad = np.flatnonzero(sizes[:, -1] != expected)
        if not bad.size and self.has_validity:
            bad = np.flatnonzero(sizes[:, 0] != (counts * self.dim + 7) // 8)
        if bad.size:
            c = int(bad[0])
            raise CorruptFileError(f"{where}, chunk {c}: vector buffers of {sizes[c].tolist()} "
                                   f"bytes for {int(counts[c])} rows of {self.dim} items")

    def decode(self, data, starts, sizes, counts, where) -> FixedSizeList:
        self._check(sizes, counts, where)
        items = flat.decode_chunks(self.item_bits, data, starts[:, -1].copy(),
                                   sizes[:, -1].copy(), counts * self.dim, where)
        n = int(counts.sum())
        valid = None
        if self.has_validity:
            nbits = counts * self.dim
            out = np.empty((int(nbits.sum()) + 7) // 8, np.uint8)
            if slices.concat_bits(data, starts[:, 0].astype(np.int64), nbits.astype(np.int64),
                                  out) != 0:
                raise CorruptFileError(f"{where}: vector validity outside the page")
            valid = np.unpackbits(out, count=int(nbits.sum()), bitorder="little").view(bool)
        return FixedSizeList(self.dim, self.item_bits, items.data, valid, n)

    def gather(self, data, starts, sizes, counts, slot, local, where) -> FixedSizeList:
        """Only the rows at ``local`` of chunk ``slot`` (no whole-chunk decode)."""
        self._check(sizes, counts, where)
        n = len(local)
        w = self.row_bytes
        out = np.empty(n * w, np.uint8)
        if kg.gather_fixed(data, starts[slot, -1] + local * w, w, out) != 0:
            raise CorruptFileError(f"{where}: vector outside its chunk")
        valid = None
        if self.has_validity:
            pos = ((starts[slot, 0] * 8 + local * self.dim)[:, None]
                   + np.arange(self.dim, dtype=np.int64)).reshape(-1)
            bits = np.empty((n * self.dim + 7) // 8, np.uint8)
            if kg.gather_bits(data, pos, bits) != 0:
                raise CorruptFileError(f"{where}: vector validity outside its chunk")
            valid = np.unpackbits(bits, count=n * self.dim, bitorder="little").view(bool)
        return FixedSizeList(self.dim, self.item_bits, out, valid, n)


def per_value(block: FixedSizeList):
    """Full-zip values: ``(FixedWidth of whole rows, description)``."""
    n, d = block.num_values, block.dim
    desc = description(d, block.item_bits, block.item_validity is not None)
    if block.item_validity is None:
        return FixedWidth(block.bits, block.data, n), desc
    vb = _validity_bytes(d)
    bits = np.zeros((n, vb * 8), np.uint8)
    bits[:, :d] = block.item_validity.reshape(n, d)
    rows = np.concatenate([np.packbits(bits, axis=1, bitorder="little"),
                           block.data.reshape(n, -1)], axis=1)
    return FixedWidth(8 * rows.shape[1], rows.reshape(-1), n), desc


class PerValueFsl:
    """Splits full-zip vector values back into items and item validity."""

    def __init__(self, enc, bits_per_value: int, fixed_bits: int | None, where: str):
        self.dim, self.item_bits, self.has_validity = parse(enc, fixed_bits, where)
        self.vb = _validity_bytes(self.dim) if self.has_validity else 0
        self.width = self.vb + self.dim * self.item_bits // 8
        self.where = where
        if bits_per_value != 8 * self.width:
            raise CorruptFileError(f"{where}: {bits_per_value}-bit values for vectors of "
                                   f"{self.width} bytes")

    def unzip(self, data: np.ndarray, n: int) -> FixedSizeList:
        if len(data) != n * self.width:
            raise CorruptFileError(f"{self.where}: {len(data)} bytes for {n} vectors of "
                                   f"{self.width} bytes")
        if not self.has_validity:
            return FixedSizeList(self.dim, self.item_bits, data, None, n)
        rows = data.reshape(n, self.width)
        bits = np.unpackbits(rows[:, :self.vb], axis=1, bitorder="little")[:, :self.dim]
        items = np.ascontiguousarray(rows[:, self.vb:]).reshape(-1)
        return FixedSizeList(self.dim, self.item_bits, items,
                             bits.reshape(-1).view(bool), n)
