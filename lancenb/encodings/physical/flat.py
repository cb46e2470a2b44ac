"""Flat: fixed-width values stored as they are.

Layout: ``num_values`` little-endian values of ``bits_per_value`` bits, back to back;
``bits_per_value == 1`` is an LSB-first bitmap. Example: int16 ``[1, 2]`` →
``01 00 02 00``; bool ``[T, F, T]`` → ``05``.

In a mini-block page each chunk holds the largest power-of-two count of values ``n``
(at most 4096) with ``n * bytes_per_value < 8186``, and the last chunk the rest.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.errors import CorruptFileError
from lancenb.kernels import gather as kg
from lancenb.kernels import slices

__all__ = ["values_per_chunk", "plan", "encode_chunks", "decode_chunks", "description",
           "FlatValues", "FlatCodec", "FLAT"]

MAX_CHUNK_VALUES = 4096
MAX_CHUNK_VALUE_BYTES = 8186  # the reference's per-chunk value budget (8 KiB minus headers)


def values_per_chunk(bits: int) -> int:
    """Values in each mini-block chunk of ``bits``-bit values (a power of two, see
    the module docstring)."""
    n = 2
    while n * 2 <= MAX_CHUNK_VALUES and (n * 2 * bits) / 8 < MAX_CHUNK_VALUE_BYTES:
        n *= 2
    return n


def plan(block: FixedWidth) -> np.ndarray:
    """Chunk boundaries (first value of each chunk, then the count)."""
    k = values_per_chunk(block.bits)
    return np.append(np.arange(0, block.num_values, k, dtype=np.int64), block.num_values)


def description(block: FixedWidth):
    """The ``Flat`` description of the block's values."""
    return pb.flat(block.bits)


def encode_chunks(block: FixedWidth, bounds: np.ndarray):
    """``(src, starts, sizes, description)``: one value buffer per chunk, as slices of
    ``src``."""
    cnt = np.diff(bounds)
    starts = bounds[:-1] * block.bits // 8
    sizes = (cnt * block.bits + 7) // 8
    return block.data, starts[:, None], sizes[:, None], description(block)


def decode_chunks(bits: int, data: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                  counts: np.ndarray, where: str) -> FixedWidth:
    """Join the chunks' value buffers (``starts``/``sizes`` are 1-D, one per chunk)."""
    expected = (counts * bits + 7) // 8
    bad = np.flatnonzero(sizes != expected)
    if bad.size:
        c = int(bad[0])
        raise CorruptFileError(f"{where}, chunk {c}: flat value buffer has {int(sizes[c])} "
                               f"bytes, expected {int(expected[c])} for {int(counts[c])} values")
    total = int(counts.sum())
    out = np.empty((total * bits + 7) // 8, dtype=np.uint8)
    if bits % 8 == 0 or len(counts) <= 1 or np.all((counts[:-1] * bits) % 8 == 0):
        status = slices.concat_slices(data, starts.astype(np.int64), sizes.astype(np.int64), out)
    else:
        status = slices.concat_bits(data, starts.astype(np.int64),
                                    (counts * bits).astype(np.int64), out)
    if status != 0:
        raise CorruptFileError(f"{where}: flat value buffers point outside the page")
    return FixedWidth(bits, out, total)


class FlatCodec(ChunkCodec):
    """Mini-block codec (:class:`lancenb.encodings.codecs.ChunkCodec`): values stored
    as they are, chunked by :func:`plan`. Use the instance :data:`FLAT`."""

    def plan(self, block: FixedWidth) -> np.ndarray:
        """Chunk boundaries (see :func:`plan`)."""
        return plan(block)

    def encode_chunks(self, block: FixedWidth, bounds: np.ndarray):
        """``(src, starts, sizes, description)`` (see :func:`encode_chunks`)."""
        return encode_chunks(block, bounds)


FLAT = FlatCodec()


class FlatValues(ChunkDecoder):
    """Decoder of Flat mini-block chunks (one value buffer per chunk)."""

    can_gather = True  # single values without decoding their chunk

    num_buffers = 1

    def __init__(self, bits: int):
        self.bits = bits
        # (subclasses, e.g. packed structs, are not plain values)
        self.batch_key = ("flat", bits) if type(self) is FlatValues else None

    def decode(self, data, starts, sizes, counts, where) -> FixedWidth:
        return decode_chunks(self.bits, data, starts[:, 0].copy(), sizes[:, 0].copy(), counts,
                             where)

    def gather(self, data, starts, sizes, counts, slot, local, where) -> FixedWidth:
        """Only the values at ``local`` of chunk ``slot`` (no whole-chunk decode)."""
        expected = (counts * self.bits + 7) // 8
        bad = np.flatnonzero(sizes[:, 0] != expected)
        if bad.size:
            raise CorruptFileError(f"{where}: flat value buffer of {int(sizes[bad[0], 0])} "
                                   f"bytes for {int(counts[bad[0]])} values")
        n = len(local)
        vs = starts[slot, 0]
        if self.bits % 8 == 0:
            w = self.bits // 8
            out = np.empty(n * w, np.uint8)
            status = kg.gather_fixed(data, vs + local * w, w, out)
        else:
            out = np.empty((n * self.bits + 7) // 8, np.uint8)
            status = kg.gather_bits(data, vs * 8 + local * self.bits, out)
        if status != 0:
            raise CorruptFileError(f"{where}: value outside its chunk")
        return FixedWidth(self.bits, out, n)


class FlatLevels(ChunkDecoder):
    """Rep/def levels stored raw as u16 (``Flat(16)``) in each chunk."""

    can_gather = True  # single values without decoding their chunk

    def decode(self, data, starts, sizes, counts, where) -> np.ndarray:
        if not np.array_equal(sizes, counts * 2):
            raise CorruptFileError(f"{where}: level buffer sizes do not match the level counts")
        out = np.empty(int(counts.sum()) * 2, np.uint8)
        if slices.concat_slices(data, starts.astype(np.int64), sizes.astype(np.int64), out):
            raise CorruptFileError(f"{where}: level buffers outside the page")
        return out.view(np.uint16)

    def gather(self, data, starts, sizes, counts, slot, local, where) -> np.ndarray:
        if not np.array_equal(sizes, counts * 2):
            raise CorruptFileError(f"{where}: level buffer sizes do not match the level counts")
        out = np.empty(2 * len(local), np.uint8)
        if kg.gather_fixed(data, starts[slot] + 2 * local, 2, out) != 0:
            raise CorruptFileError(f"{where}: levels outside their chunk")
        return out.view(np.uint16)
