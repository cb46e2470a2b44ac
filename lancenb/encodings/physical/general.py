"""General: a byte-oriented compressor (LZ4 or Zstandard) wrapped around an encoding.

Framing of one compressed unit:

* LZ4: ``u32 LE uncompressed size`` + an LZ4 *block* (not the frame format).
* Zstandard: ``u64 LE uncompressed size`` + a standard zstd frame (``28 b5 2f fd``...).
  Readers also accept a bare zstd frame.

Example: LZ4 of ``b"aaaa"`` is ``04 00 00 00`` followed by the LZ4 block.

Contexts: in mini-block pages only value buffer 0 of each chunk is compressed (each
chunk separately; other buffers and the rep/def levels are left alone); in block
contexts (dictionaries, 2.2 level blocks) the whole block is one unit; in full-zip
pages each value is its own unit (``General{scheme, Variable(Flat(32|64))}``), stored
with the usual length prefix: ``u32 zipped length | u64 raw length | zstd frame``.
Full-zip values get this when the page's longest value exceeds 32 KiB (and the page
holds at least 32 KiB), as in the reference.
"""

from __future__ import annotations

import struct
import threading

import lz4.block
import numpy as np
import zstandard

from lancenb.encodings import pb
from lancenb.encodings.blocks import Variable
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["compress", "decompress", "GeneralValues", "GeneralCodec", "LZ4", "ZSTD",
           "compress_values", "decompress_values", "per_value_description"]

LZ4 = 1
ZSTD = 2
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Mini-block values are only compressed when buffer 0 holds at least this much, and
# only kept compressed when that saves space (the reference's rule).
MIN_COMPRESS_BYTES = 4096
# Refuse to inflate a unit beyond this (a corrupt size prefix must not allocate TiBs).
MAX_UNCOMPRESSED = 1 << 34


_local = threading.local()  # zstd compressors are not thread-safe: one set per thread


def _zstd_compressor(level: int):
    cache = getattr(_local, "zstd", None)
    if cache is None:
        cache = _local.zstd = {}
    c = cache.get(level)
    if c is None:
        c = cache[level] = zstandard.ZstdCompressor(level=level)
    return c


def compress(data, scheme: int, level: int | None = None) -> bytes:
    raw = bytes(data)
    if scheme == LZ4:
        return lz4.block.compress(raw, store_size=True)
    if scheme == ZSTD:
        c = _zstd_compressor(3 if not level else level)
        return struct.pack("<Q", len(raw)) + c.compress(raw)
    raise NotSupportedError(f"general compression scheme {scheme}")


def decompress(data, scheme: int, where: str) -> bytes:
    """One compressed unit back to its bytes; damage raises ``CorruptFileError``."""
    buf = bytes(data)
    try:
        if scheme == LZ4:
            if len(buf) < 4:
                raise CorruptFileError(f"{where}: LZ4 unit of {len(buf)} bytes has no size")
            (size,) = struct.unpack_from("<I", buf)
            if size > min(MAX_UNCOMPRESSED, 2**31 - 1):  # LZ4 blocks are under 2 GiB
                raise CorruptFileError(f"{where}: LZ4 unit claims {size} bytes")
            return lz4.block.decompress(buf[4:], uncompressed_size=size)
        if scheme == ZSTD:
            if buf[:4] == _ZSTD_MAGIC:  # a bare frame
                return zstandard.ZstdDecompressor().decompress(
                    buf, max_output_size=MAX_UNCOMPRESSED)
            if len(buf) < 8:
                raise CorruptFileError(f"{where}: zstd unit of {len(buf)} bytes has no size")
            (size,) = struct.unpack_from("<Q", buf)
            if size > MAX_UNCOMPRESSED:
                raise CorruptFileError(f"{where}: zstd unit claims {size} bytes")
            out = zstandard.ZstdDecompressor().decompress(buf[8:], max_output_size=size)
            if len(out) != size:
                raise CorruptFileError(f"{where}: zstd unit gave {len(out)} bytes, its prefix "
                                       f"says {size}")
            return out
    except (lz4.block.LZ4BlockError, zstandard.ZstdError, OverflowError, MemoryError) as e:
        raise CorruptFileError(f"{where}: cannot decompress: {e}") from e
    raise NotSupportedError(f"{where}: general compression scheme {scheme} is unknown")


def scheme_of(enc, where: str) -> int:
    scheme = int(enc.general.compression.scheme)
    if scheme not in (LZ4, ZSTD):
        raise NotSupportedError(f"{where}: general compression scheme {scheme} is unknown")
    return scheme


class GeneralValues:
    """Mini-block values whose buffer 0 is compressed chunk by chunk."""

    def __init__(self, enc, inner, where: str):
        self.scheme = scheme_of(enc, where)
        self.inner = inner
        self.num_buffers = inner.num_buffers

    def decode(self, data, starts, sizes, counts, where):
        # inflate buffer 0 of every chunk into a new area placed before the original
        # bytes, so the inner decoder sees one buffer with every chunk's pieces
        parts = [decompress(data[s:s + z], self.scheme, f"{where}, chunk {i}")
                 for i, (s, z) in enumerate(zip(starts[:, 0].tolist(), sizes[:, 0].tolist()))]
        lens = np.array([len(p) for p in parts], dtype=np.int64)
        pos = np.zeros(len(parts), dtype=np.int64)
        np.cumsum(lens[:-1], out=pos[1:])
        head = np.frombuffer(b"".join(parts), np.uint8)
        merged = np.concatenate([head, data])
        starts = starts.copy()
        sizes = sizes.copy()
        starts[:, 1:] += len(head)
        starts[:, 0] = pos
        sizes[:, 0] = lens
        return self.inner.decode(merged, starts, sizes, counts, where)



class GeneralCodec:
    """Wraps a mini-block codec: compresses value buffer 0 of each chunk."""

    def __init__(self, inner, scheme: int, level: int | None = None):
        self.inner, self.scheme, self.level = inner, scheme, level

    def plan(self, block):
        return self.inner.plan(block)

    def encode_chunks(self, block, bounds):
        src, starts, sizes, desc = self.inner.encode_chunks(block, bounds)
        if int(sizes[:, 0].sum()) < MIN_COMPRESS_BYTES:
            return src, starts, sizes, desc
        parts = [compress(src[s:s + z], self.scheme, self.level)
                 for s, z in zip(starts[:, 0].tolist(), sizes[:, 0].tolist())]
        lens = np.array([len(p) for p in parts], dtype=np.int64)
        if int(lens.sum()) >= int(sizes[:, 0].sum()):
            return src, starts, sizes, desc
        pos = np.zeros(len(parts), dtype=np.int64)
        np.cumsum(lens[:-1], out=pos[1:])
        head = np.frombuffer(b"".join(parts), np.uint8)
        starts, sizes = starts.copy(), sizes.copy()
        starts[:, 1:] += len(head)
        starts[:, 0], sizes[:, 0] = pos, lens
        wrapped = pb.e21.CompressiveEncoding(general=pb.e21.General(
            compression=pb.e21.BufferCompression(scheme=self.scheme), values=desc))
        if self.level is not None:
            wrapped.general.compression.level = self.level
        return np.concatenate([head, src]), starts, sizes, wrapped


def per_value_description(scheme: int, offset_bits: int, level: int | None = None):
    enc = pb.e21.CompressiveEncoding(general=pb.e21.General(
        compression=pb.e21.BufferCompression(scheme=scheme), values=pb.variable(offset_bits)))
    if scheme == ZSTD:
        enc.general.compression.level = level or 0
    return enc


def _join(parts: list, n: int, offset_bits: int) -> Variable:
    lens = np.fromiter((len(p) for p in parts), np.int64, count=n)
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    return Variable(offs, np.frombuffer(b"".join(parts), np.uint8), n, offset_bits)


def compress_values(block: Variable, scheme: int, level: int | None = None) -> Variable:
    """Each value compressed on its own (full-zip per-value compression)."""
    data = memoryview(block.data)
    o = block.offsets.tolist()
    # one codec call per value: these pages hold values of tens of KiB, so the call,
    # not the loop, is the cost
    parts = [compress(data[o[i]:o[i + 1]], scheme, level) for i in range(block.num_values)]
    return _join(parts, block.num_values, block.offset_bits)


def decompress_values(block: Variable, scheme: int, where: str) -> Variable:
    """Inverse of :func:`compress_values`; empty slots (nulls, which the zipped page
    stores without bytes) stay empty."""
    data = memoryview(block.data)
    o = block.offsets.tolist()
    parts = [decompress(data[o[i]:o[i + 1]], scheme, f"{where}, value {i}")
             if o[i + 1] > o[i] else b"" for i in range(block.num_values)]
    return _join(parts, block.num_values, block.offset_bits)
