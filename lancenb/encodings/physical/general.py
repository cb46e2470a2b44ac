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
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["compress", "decompress", "GeneralValues", "GeneralCodec", "LZ4", "ZSTD",
           "compress_values", "decompress_values", "per_value_description"]

LZ4 = 1
ZSTD = 2
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Mini-block values are only compressed when buffer 0 holds at least this much, and
# only kept compressed when that saves space (the reference's rule).
MIN_COMPRESS_BYTES = 4096
# Every unit is inflated to at most the size its context allows (a mini-block chunk of
# ``n`` fixed-width values holds about ``n * width`` bytes, a level block two bytes a
# level); where the context gives no size (variable-width items, full-zip values) this
# is the ceiling, so a corrupt size prefix or a lying frame cannot allocate GiBs.
MAX_UNCOMPRESSED = 1 << 31
# Variable-width mini-block chunks: writers aim at 4 KiB and the 2.1 chunk word caps a
# chunk at 32 KiB; 2.2 large chunks may hold more, so the bound is generous.
MAX_VARIABLE_CHUNK = 8 << 20
# Slack over the exact size of fixed-width data: bit-packing headers, RLE run lengths.
_SLACK = 1024


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
    """``data`` compressed with ``scheme`` (LZ4 or zstd at ``level``), with its size prefix."""
    raw = bytes(data)
    if scheme == LZ4:
        return lz4.block.compress(raw, store_size=True)
    if scheme == ZSTD:
        c = _zstd_compressor(3 if not level else level)
        return struct.pack("<Q", len(raw)) + c.compress(raw)
    raise NotSupportedError(f"general compression scheme {scheme}")


def unit_limit(num_values: int, bits: int | None) -> int:
    """The most bytes a unit of ``num_values`` values of ``bits`` bits each can inflate
    to, whatever encoding sits inside the compression (RLE runs and bit-packing headers
    add at most a byte a value plus a header); ``bits`` None = variable width."""
    if bits is None:
        return MAX_UNCOMPRESSED
    # inline bit-packing packs whole blocks of 1024 values, so a short chunk (the last
    # of a page) inflates to a full block: pylance's 544-value f32 chunks hold 3972 bytes
    blocks = -(-int(num_values) // 1024) * 1024
    return min(MAX_UNCOMPRESSED, blocks * ((int(bits) + 7) // 8 + 1) + _SLACK)


def _zstd(frame, size: int, where: str) -> bytes:
    """Exactly ``size`` bytes out of one zstd frame, never allocating more."""
    d = _zstd_decompressor()
    if zstandard.frame_content_size(frame) == size:
        # the header agrees: one-shot into a buffer of that size (zstd itself stops
        # with an error when the blocks would write past the size the header declares)
        out = d.decompress(frame, max_output_size=size)
    else:
        # no size in the header, or a different one: stream, stop one byte past
        with d.stream_reader(frame) as r:
            out = r.read(size + 1)
    if len(out) != size:
        raise CorruptFileError(f"{where}: zstd unit inflates to "
                               f"{'more than ' if len(out) > size else ''}{len(out)} bytes, "
                               f"its size prefix says {size}")
    return out


def _zstd_bare(frame, limit: int, where: str) -> bytes:
    """A bare zstd frame (no size prefix), inflated to at most ``limit`` bytes."""
    declared = zstandard.frame_content_size(frame)
    if declared > limit:
        raise CorruptFileError(f"{where}: zstd frame declares {declared} bytes, more than "
                               f"the {limit} its context can hold")
    if declared >= 0:
        return _zstd(frame, declared, where)
    with _zstd_decompressor().stream_reader(frame) as r:
        out = r.read(limit + 1)
    if len(out) > limit:
        raise CorruptFileError(f"{where}: zstd frame inflates past the {limit} bytes its "
                               f"context can hold")
    return out


def _zstd_decompressor():
    d = getattr(_local, "zstd_d", None)
    if d is None:
        d = _local.zstd_d = zstandard.ZstdDecompressor()
    return d


def claimed_size(data, scheme: int, where: str) -> int | None:
    """The uncompressed size a unit's prefix claims (None for a bare zstd frame)."""
    if scheme == LZ4:
        if len(data) < 4:
            raise CorruptFileError(f"{where}: LZ4 unit of {len(data)} bytes has no size")
        return int.from_bytes(bytes(data[:4]), "little")
    if bytes(data[:4]) == _ZSTD_MAGIC:
        return None
    if len(data) < 8:
        raise CorruptFileError(f"{where}: zstd unit of {len(data)} bytes has no size")
    return int.from_bytes(bytes(data[:8]), "little")


def _check_total(total: int, where: str) -> None:
    if total > MAX_UNCOMPRESSED:
        raise CorruptFileError(f"{where}: compressed units claim {total} bytes together, more "
                               f"than a page can hold ({MAX_UNCOMPRESSED})")


def decompress(data, scheme: int, where: str, *, limit: int = MAX_UNCOMPRESSED) -> bytes:
    """One compressed unit back to its bytes; damage raises ``CorruptFileError``.

    ``limit`` is the most bytes the unit's context can hold: a size prefix above it
    is refused before anything is allocated, and a frame that inflates past its
    prefix stops there (streaming), so peak memory follows the limit, not the file.
    """
    if scheme not in (LZ4, ZSTD):
        raise NotSupportedError(f"{where}: general compression scheme {scheme} is unknown")
    limit = min(int(limit), MAX_UNCOMPRESSED)
    size = claimed_size(data, scheme, where)
    if size is not None and size > limit:
        raise CorruptFileError(f"{where}: {'LZ4' if scheme == LZ4 else 'zstd'} unit claims "
                               f"{size} bytes, more than the {limit} its context can hold")
    buf = memoryview(data)
    try:
        if scheme == LZ4:
            out = lz4.block.decompress(bytes(buf[4:]), uncompressed_size=size)
            if len(out) != size:
                raise CorruptFileError(f"{where}: LZ4 unit gave {len(out)} bytes, its prefix "
                                       f"says {size}")
            return out
        if size is None:
            return _zstd_bare(buf, limit, where)
        return _zstd(buf[8:], size, where)
    except (lz4.block.LZ4BlockError, zstandard.ZstdError, OverflowError, MemoryError) as e:
        raise CorruptFileError(f"{where}: cannot decompress: {e}") from e


def scheme_of(enc, where: str) -> int:
    """The compression scheme of a ``General`` description; an unknown one raises
    ``NotSupportedError``."""
    scheme = int(enc.general.compression.scheme)
    if scheme not in (LZ4, ZSTD):
        raise NotSupportedError(f"{where}: general compression scheme {scheme} is unknown")
    return scheme


class GeneralValues(ChunkDecoder):
    """Mini-block values whose buffer 0 is compressed chunk by chunk."""

    can_gather = False  # only whole chunks decode

    def __init__(self, enc, inner, where: str, fixed_bits: int | None = None):
        self.scheme = scheme_of(enc, where)
        self.inner = inner
        self.num_buffers = inner.num_buffers
        self.fixed_bits = fixed_bits

    def decode(self, data, starts, sizes, counts, where):
        # inflate buffer 0 of every chunk into a new area placed before the original
        # bytes, so the inner decoder sees one buffer with every chunk's pieces. Every
        # size prefix is checked against what its chunk's values can hold before any
        # chunk is inflated, so a bomb fails fast and small.
        s0, z0 = starts[:, 0].tolist(), sizes[:, 0].tolist()
        cl = counts.tolist()
        limits = [unit_limit(c, self.fixed_bits) if self.fixed_bits is not None
                  else MAX_VARIABLE_CHUNK for c in cl]
        total = 0
        for i, (s, z) in enumerate(zip(s0, z0)):
            claim = claimed_size(data[s:s + z], self.scheme, f"{where}, chunk {i}")
            if claim is not None and claim > limits[i]:
                raise CorruptFileError(f"{where}, chunk {i}: compressed values claim {claim} "
                                       f"bytes, more than the {limits[i]} that {cl[i]} values "
                                       f"can hold")
            total += claim or 0
        _check_total(total, where)
        parts = [decompress(data[s:s + z], self.scheme, f"{where}, chunk {i}", limit=limits[i])
                 for i, (s, z) in enumerate(zip(s0, z0))]
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



class GeneralCodec(ChunkCodec):
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
    """The description of full-zip values each compressed on its own with ``scheme``."""
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
    # the size prefixes of all values first: their sum is what the page will inflate
    # to, refused up front when no page could hold it
    _check_total(sum(claimed_size(data[o[i]:o[i + 1]], scheme, f"{where}, value {i}") or 0
                     for i in range(block.num_values) if o[i + 1] > o[i]), where)
    parts = [decompress(data[o[i]:o[i + 1]], scheme, f"{where}, value {i}")
             if o[i + 1] > o[i] else b"" for i in range(block.num_values)]
    return _join(parts, block.num_values, block.offset_bits)
