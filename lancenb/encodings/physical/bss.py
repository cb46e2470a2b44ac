"""Byte-stream-split: the bytes of 32/64-bit values regrouped by position.

Per mini-block chunk of n values (1024 for 32-bit, 512 for 64-bit), output byte
``j * n + i`` is byte ``j`` of value ``i``. Example (two float32 values ``a0 a1 a2 a3``
and ``b0 b1 b2 b3``) → ``a0 b0 a1 b1 a2 b2 a3 b3``. Description:
``ByteStreamSplit{values: Flat(32|64)}``. It only pays under general compression, so
the reference (and lancenb) only try it when ``lance-encoding:compression`` is lz4 or
zstd, inside ``General`` (which is dropped for chunks where compression does not pay,
leaving a bare split). ``lance-encoding:bss``: ``on`` always splits 32/64-bit values,
``off`` never, ``auto`` (default) when the mean byte-position entropy of the first 64
values is below 4 bits (pylance 14: small-range ints, timestamps, low-cardinality
floats yes; random-walk floats no).
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.errors import CorruptFileError
from lancenb.kernels import bss as kbss
from lancenb.kernels import stats as kstats

__all__ = ["BssValues", "BssCodec", "description", "wanted"]


class BssValues(ChunkDecoder):
    """Decoder of byte-stream-split mini-block chunks (the bytes of each value regathered)."""

    can_gather = False  # only whole chunks decode

    num_buffers = 1

    def __init__(self, enc, fixed_bits, where: str):
        inner = enc.byte_stream_split.values
        bits = int(inner.flat.bits_per_value) if inner.WhichOneof("compression") == "flat" \
            else None
        if bits not in (32, 64) or bits != fixed_bits:
            raise CorruptFileError(f"{where}: byte-stream-split {pb.describe(enc)} for a "
                                   f"column of {fixed_bits}-bit values")
        self.bits = bits

    def decode(self, data, starts, sizes, counts, where) -> FixedWidth:
        w = self.bits // 8
        if not np.array_equal(sizes[:, 0], counts * w):
            raise CorruptFileError(f"{where}: byte-stream-split chunk sizes do not match")
        out = np.empty(int(counts.sum()) * w, np.uint8)
        if kbss.join(data, starts[:, 0].copy(), counts.astype(np.int64), w, out) != kbss.OK:
            raise CorruptFileError(f"{where}: byte-stream-split chunk outside the page")
        return FixedWidth(self.bits, out, int(counts.sum()))


class BssCodec(ChunkCodec):
    """Encoder: chunks of 1024 (32-bit) or 512 (64-bit) values, each transposed."""

    def __init__(self, block: FixedWidth):
        if block.bits not in (32, 64):
            raise ValueError(f"byte-stream-split needs 32/64-bit values, not {block.bits}")
        self.width = block.bits // 8

    def plan(self, block: FixedWidth) -> np.ndarray:
        return kbss.chunk_bounds(block.num_values, self.width)

    def encode_chunks(self, block: FixedWidth, bounds: np.ndarray):
        w = self.width
        src = np.ascontiguousarray(block.data[:block.num_values * w])
        out = np.empty_like(src)
        status = kbss.split(src, w, np.asarray(bounds, np.int64), out)
        if status != kbss.OK:
            raise ValueError(f"byte-stream-split: bad chunk bounds (status {status})")
        starts = np.asarray(bounds[:-1], np.int64) * w
        sizes = np.diff(bounds).astype(np.int64) * w
        return out, starts[:, None], sizes[:, None], description(block.bits)


def description(bits: int):
    """The ``ByteStreamSplit`` description of ``bits``-bit values."""
    return pb.e21.CompressiveEncoding(
        byte_stream_split=pb.e21.ByteStreamSplit(values=pb.flat(bits)))


def entropies(block: FixedWidth) -> np.ndarray:
    """Byte-position entropy (x1000) of the first values, as the reference samples it."""
    w = block.bits // 8
    out = np.zeros(w, np.int64)
    kstats.byte_position_entropy(block.data[:block.num_values * w], w,
                                 kstats.ENTROPY_SAMPLE, out)
    return out


def wanted(block: FixedWidth, mode: str) -> bool:
    """Whether ``bss`` mode ``off``/``on``/``auto`` splits these values (32/64-bit
    only; auto: mean byte-position entropy below 4 bits)."""
    if block.bits not in (32, 64) or mode == "off" or not block.num_values:
        return False
    return mode == "on" or kstats.bss_auto(entropies(block))
