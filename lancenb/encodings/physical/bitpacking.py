"""Bitpacking (FastLanes layout): InlineBitpacking for mini-block values,
OutOfLineBitpacking for rep/def levels.

Byte layouts and a worked example are in ``lancenb.kernels.bitpack``. In a mini-block
page an inline-bitpacked chunk holds up to 1024 values: one word of T bits with the
chunk's width W, then ``1024 * W / T`` words (the last chunk is zero-padded to 1024
values). Levels (u16) use the out-of-line form with one W for the whole page
(``OutOfLineBitpacking{16, Flat(W)}``), each chunk's levels packed on their own.
Signed values are packed as their two's-complement bits (no zigzag), so a chunk
holding a negative number packs at full width, as the reference does.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.errors import CorruptFileError
from lancenb.kernels import bitpack as kb
from lancenb.kernels import miniblock as kmb

__all__ = ["InlineValues", "OutOfLineLevels", "plan", "encode_chunks", "description",
           "encode_levels", "levels_description", "packed_bytes", "outofline_chunk_words"]

CHUNK = kb.BLOCK
# InlineValues.gather unpacks whole chunks when it wants at least 1 in this many of
# their values (the unpack kernel streams through a chunk's words; the gather kernel
# reads one or two words per value, at scattered addresses)
DENSE_GATHER = 8
_ERRORS = {kb.BAD_WIDTH: "bit width larger than the value type",
           kb.TRUNCATED: "bitpacked chunk is truncated", kb.BAD_LENGTH: "bitpacked chunk has "
           "bytes left over", kb.BAD_COUNT: "bad value count", kb.OUT_OF_BOUNDS:
           "bitpacked chunk lies outside the page", kb.BAD_OUTPUT: "inconsistent chunk sizes"}


def _uint(bits: int):
    return np.dtype(f"<u{bits // 8}")


class InlineValues(ChunkDecoder):
    """Decoder of InlineBitpacking mini-block chunks."""

    can_gather = True  # single values: see gather

    num_buffers = 1

    def __init__(self, bits: int):
        self.bits = bits
        self.batch_key = ("inline_bitpacking", bits)

    def gather(self, data, starts, sizes, counts, slot, local, where) -> FixedWidth:
        """Only the values at positions ``local`` of chunks ``slot``, read from their
        lanes' words (:func:`lancenb.kernels.bitpack.inline_gather_chunks`); the chunks
        they touch are checked as :func:`lancenb.kernels.bitpack.inline_unpack_chunks`
        checks them, with the same messages."""
        t = self.bits
        ut = _uint(t)
        counts = np.asarray(counts, np.int64)
        slot, local = np.asarray(slot, np.int64), np.asarray(local, np.int64)
        if len(local) * DENSE_GATHER >= int(counts.sum()):
            # dense (a range read by position): unpacking the chunks is cheaper
            whole = self.decode(data, starts, sizes, counts, where).data.view(ut)
            first = np.zeros(len(counts), np.int64)
            np.cumsum(counts[:-1], out=first[1:])
            if np.any((local < 0) | (local >= counts[slot])):
                raise CorruptFileError(f"{where}: a row lies past its chunk's values")
            out = whole[first[slot] + local]
            return FixedWidth(t, out.view(np.uint8), len(out))
        out = np.empty(len(local), ut)
        err = np.zeros(2, np.int64)
        status = kb.inline_gather_chunks(data, np.ascontiguousarray(starts[:, 0], np.int64),
                                         np.ascontiguousarray(sizes[:, 0], np.int64), counts,
                                         slot, local, out, err)
        if status == kb.BAD_POSITION:
            raise CorruptFileError(f"{where}: a row lies past its chunk's values")
        if status != kb.OK:
            raise CorruptFileError(f"{where}, chunk {int(err[0])}: {_ERRORS[status]}")
        return FixedWidth(t, out.view(np.uint8), len(out))

    def decode(self, data, starts, sizes, counts, where) -> FixedWidth:
        out = np.empty(int(counts.sum()), dtype=_uint(self.bits))
        err = np.zeros(2, np.int64)
        status = kb.inline_unpack_chunks(data, starts[:, 0].copy(), sizes[:, 0].copy(),
                                         counts.astype(np.int64), out, err)
        if status != kb.OK:
            raise CorruptFileError(f"{where}, chunk {int(err[0])}: {_ERRORS[status]}")
        return FixedWidth(self.bits, out.view(np.uint8), len(out))


def _block_words(buf, bits: int, where: str) -> np.ndarray:
    """A bitpacked block's bytes as aligned ``bits``-bit words (copied only when
    unaligned)."""
    raw = np.frombuffer(buf, np.uint8)
    t = _uint(bits)
    if len(raw) % t.itemsize:
        raise CorruptFileError(f"{where}: bitpacked block of {len(raw)} bytes is not a whole "
                               f"number of {bits}-bit words")
    return raw.view(t) if raw.ctypes.data % t.itemsize == 0 else raw.copy().view(t)


def decode_inline_block(buf, bits: int, num_values: int, where: str) -> FixedWidth:
    """A block of InlineBitpacking (dictionary items): ``ceil(n / 1024)`` inline chunks
    back to back, each ``W | 1024 * W / T words``."""
    words = _block_words(buf, bits, where)
    out = np.empty(num_values, dtype=words.dtype)
    status = kb.inline_unpack(words, num_values, out)
    if status != kb.OK:
        raise CorruptFileError(f"{where}: bitpacked block: {_ERRORS[status]}")
    return FixedWidth(bits, out.view(np.uint8), num_values)


def decode_outofline_block(buf, bits: int, width: int, num_values: int,
                           where: str) -> FixedWidth:
    """A block of OutOfLineBitpacking (e.g. pylance 2.2 dictionary items): the values
    packed at ``width`` bits in whole 1024-value blocks, the tail packed or raw."""
    words = _block_words(buf, bits, where)
    out = np.empty(num_values, dtype=words.dtype)
    status = kb.outofline_unpack(words, width, num_values, out)
    if status != kb.OK:
        raise CorruptFileError(f"{where}: out-of-line bitpacked block: {_ERRORS[status]}")
    return FixedWidth(bits, out.view(np.uint8), num_values)


class OutOfLineLevels(ChunkDecoder):
    """Decoder of u16 levels bitpacked out of line, one W for the page."""

    can_gather = False  # only whole chunks decode

    def __init__(self, bits: int, width: int, where: str):
        if bits != 16 or not 0 <= width <= 16:
            raise CorruptFileError(f"{where}: out-of-line bitpacked levels of {bits} bits at "
                                   f"width {width}")
        self.width = width

    def decode(self, data, starts, sizes, counts, where) -> np.ndarray:
        out = np.empty(int(counts.sum()), dtype=np.uint16)
        err = np.zeros(2, np.int64)
        status = kb.outofline_unpack_chunks(data, starts.copy(), sizes.copy(),
                                            counts.astype(np.int64), self.width, out, err)
        if status != kb.OK:
            raise CorruptFileError(f"{where}, chunk {int(err[0])}: levels: "
                                   f"{_ERRORS[status]}")
        return out


# -- encoding -----------------------------------------------------------------

def as_unsigned(block: FixedWidth) -> np.ndarray:
    """The block's values viewed as unsigned integers of their width."""
    return block.data.view(_uint(block.bits))[:block.num_values]


def plan(block: FixedWidth) -> np.ndarray:
    """Chunk boundaries: a chunk every 1,024 values (one bit-packing block), then the count."""
    return np.append(np.arange(0, block.num_values, CHUNK, dtype=np.int64), block.num_values)


def packed_bytes(values: np.ndarray) -> int:
    """Bytes the inline form takes for ``values`` (an unsigned array)."""
    return int(kb.inline_chunk_words(values).sum()) * values.dtype.itemsize


class InlineCodec(ChunkCodec):
    """The inline bitpacking codec of one block, its per-chunk word counts computed
    once: the strategy's size test (:attr:`nbytes`) and the encoding share them (the
    module-level :func:`encode_chunks` counts them again)."""

    def __init__(self, block: FixedWidth):
        self.words = kb.inline_chunk_words(as_unsigned(block))
        self.nbytes = int(self.words.sum()) * (block.bits // 8)

    @staticmethod
    def plan(block: FixedWidth) -> np.ndarray:
        return plan(block)

    def encode_chunks(self, block: FixedWidth, bounds: np.ndarray):
        return encode_chunks(block, bounds, words=self.words)


def encode_chunks(block: FixedWidth, bounds: np.ndarray, *, words: np.ndarray | None = None):
    """``(src, starts, sizes, description)``: one inline-bitpacked value buffer per 1024
    values (``words``: their word counts, when already known)."""
    values = as_unsigned(block)
    if words is None:
        words = kb.inline_chunk_words(values)
    out = np.empty(int(words.sum()), dtype=values.dtype)
    kb.inline_pack(values, out)
    isz = values.dtype.itemsize
    sizes = words * isz
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return out.view(np.uint8), starts[:, None], sizes[:, None], description(block)


def description(block: FixedWidth):
    """The ``InlineBitpacking`` description of the block's values."""
    return pb.e21.CompressiveEncoding(
        inline_bitpacking=pb.e21.InlineBitpacking(uncompressed_bits_per_value=block.bits))


def encode_levels(levels: np.ndarray, bounds: np.ndarray, *, flat: bool | None = None):
    """Compress each chunk's u16 levels with the page's bitpacking block compressor.

    As the reference chooses: at most 1024 levels in the page → InlineBitpacking(16)
    unless the packed bits alone (``1024 * W / 8`` bytes, pylance 14's test) are no
    smaller than the raw u16s, then Flat(16) (``flat`` forces the choice); more →
    OutOfLineBitpacking at the page's width. Returns ``(src, starts, sizes,
    description)``. (:mod:`.levels` adds 2.2's RLE to the choice.)
    """
    n = len(levels)
    width = int(kb.bit_width(levels)) if n else 0
    counts = np.diff(bounds)
    if n <= CHUNK:
        if flat is None:
            flat = width * CHUNK // 8 >= 2 * n
        if flat:
            return levels.view(np.uint8), bounds[:-1] * 2, counts * 2, pb.flat(16)
        words = np.array([int(kb.inline_chunk_words(levels[bounds[i]:bounds[i + 1]]).sum())
                          for i in range(len(counts))], dtype=np.int64)
        desc = pb.e21.CompressiveEncoding(
            inline_bitpacking=pb.e21.InlineBitpacking(uncompressed_bits_per_value=16))
    else:
        words = outofline_chunk_words(counts, width, 16)
        desc = levels_description(width)
    starts_w = np.zeros(len(words), dtype=np.int64)
    np.cumsum(words[:-1], out=starts_w[1:])
    out = np.empty(int(words.sum()), dtype=np.uint16)
    if n > CHUNK:  # every chunk in one kernel call
        status = kmb.outofline_pack_chunks(levels, np.asarray(bounds, np.int64), width,
                                           starts_w, out)
        if status != kb.OK:  # sizes come from the same counts: a bug, not bad input
            raise AssertionError(f"out-of-line level chunks: status {status}")
        return out.view(np.uint8), starts_w * 2, words * 2, desc
    for i in range(len(counts)):  # at most 1024 levels in the page
        kb.inline_pack(levels[bounds[i]:bounds[i + 1]], out[starts_w[i]:starts_w[i] + words[i]])
    return out.view(np.uint8), starts_w * 2, words * 2, desc


def outofline_chunk_words(counts: np.ndarray, width: int, bits: int) -> np.ndarray:
    """:func:`kernels.bitpack.outofline_words` of every chunk count at once (int64)."""
    counts = np.asarray(counts, np.int64)
    lanes = CHUNK // bits
    full, r = np.divmod(counts, CHUNK)
    tail = np.where(width * (CHUNK - r) < (bits - width) * r, width * lanes, r)
    return full * width * lanes + np.where(r > 0, tail, 0)


class InlineLevels(ChunkDecoder):
    """Decoder of u16 levels stored as one inline-bitpacked block per chunk."""

    can_gather = False  # only whole chunks decode

    def decode(self, data, starts, sizes, counts, where) -> np.ndarray:
        out = np.empty(int(counts.sum()), dtype=np.uint16)
        err = np.zeros(2, np.int64)
        status = kb.inline_unpack_chunks(data, starts.copy(), sizes.copy(),
                                         counts.astype(np.int64), out, err)
        if status != kb.OK:
            raise CorruptFileError(f"{where}, chunk {int(err[0])}: levels: "
                                   f"{_ERRORS[status]}")
        return out


def levels_description(width: int):
    """The out-of-line bitpacked description of u16 rep/def levels packed to ``width`` bits."""
    return pb.e21.CompressiveEncoding(out_of_line_bitpacking=pb.e21.OutOfLineBitpacking(
        uncompressed_bits_per_value=16, values=pb.flat(width)))
