"""Variable: variable-width values (strings, binary) with an offsets table.

Mini-block chunk buffer: ``n + 1`` offsets (u32, or u64 for 64-bit offsets) counted
from the start of the buffer, the values' bytes, then 0x48 padding to the offset
width. Example (u32): ``["ab", "", "c"]`` → ``10 00 00 00 12 00 00 00 12 00 00 00 13
00 00 00 61 62 63 48``.

Chunking: the largest power-of-two count whose offsets and bytes fit in 4 KiB (the
reference's target chunk size), the last chunk taking the rest once that fits.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import Variable
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import gather as kg
from lancenb.kernels import variable as kv

__all__ = ["plan", "encode_chunks", "decode_chunks", "description", "VariableValues",
           "encode_block", "decode_block", "VariableCodec", "VARIABLE"]

AIM_CHUNK_BYTES = 4096
MAX_CHUNK_VALUE_BYTES = 32 * 1024 - 64  # a chunk (headers included) must stay within 32 KiB
MAX_CHUNK_VALUES = 4096


def description(block: Variable):
    """The ``Variable`` description of the block's offsets."""
    return pb.variable(block.offset_bits)


def plan(block: Variable) -> np.ndarray:
    """Chunk boundaries (first value of each chunk, then the count); values too large
    for mini-block chunks raise ``NotSupportedError``.
    """
    w = block.offset_bits // 8
    bounds = np.empty(block.num_values + 1, dtype=np.int64)
    nc = kv.plan_chunks(block.offsets, w, AIM_CHUNK_BYTES, MAX_CHUNK_VALUE_BYTES,
                        MAX_CHUNK_VALUES, bounds)
    if nc < 0:
        raise NotSupportedError(
            "values too large for mini-block chunks (two values must fit in 32 KiB); "
            "use lance-encoding:structural-encoding=fullzip")
    return bounds[:nc + 1].copy()


def encode_chunks(block: Variable, bounds: np.ndarray):
    """``(src, starts, sizes, description)``: one offsets-and-bytes buffer per chunk."""
    w = block.offset_bits // 8
    sizes = kv.chunk_buffer_sizes(block.offsets, bounds, w)
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    kv.fill_chunks(block.offsets, block.data, bounds, w, out, starts)
    return out, starts[:, None], sizes[:, None].astype(np.int64), description(block)


_ERRORS = {kv.OFFSETS_PAST_BUFFER: "offset table does not fit in the value buffer",
           kv.BAD_OFFSET: "offsets decrease or point past the value buffer"}


def decode_chunks(offset_bits: int, data: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                  counts: np.ndarray, where: str) -> Variable:
    """Join the chunks' offsets and bytes into one variable-width block."""
    if offset_bits not in (32, 64):
        raise CorruptFileError(f"{where}: variable offsets of {offset_bits} bits")
    w = offset_bits // 8
    starts = starts.astype(np.int64)
    sizes = sizes.astype(np.int64)
    counts = counts.astype(np.int64)
    err = np.zeros(2, dtype=np.int64)
    total = kv.decode_size(data, starts, sizes, counts, w, err)
    if total < 0:
        raise CorruptFileError(f"{where}, chunk {err[0]}, offset {err[1]}: {_ERRORS[total]}")
    n = int(counts.sum())
    # from Arrow's pool, whose freed memory the next pages reuse (a fresh np.empty of a
    # few MiB costs a page fault per 4 KiB on first touch)
    offsets = np.frombuffer(pa.allocate_buffer(8 * (n + 1)), np.int64)
    out = np.frombuffer(pa.allocate_buffer(int(total)), np.uint8)
    kv.decode_fill(data, starts, counts, w, offsets, out)
    return Variable(offsets, out, n, offset_bits)


class VariableCodec(ChunkCodec):
    """Mini-block codec (:class:`lancenb.encodings.codecs.ChunkCodec`): offsets and
    bytes per chunk, chunked by :func:`plan`. Use the instance :data:`VARIABLE`."""

    def plan(self, block: Variable) -> np.ndarray:
        """Chunk boundaries (see :func:`plan`)."""
        return plan(block)

    def encode_chunks(self, block: Variable, bounds: np.ndarray):
        """``(src, starts, sizes, description)`` (see :func:`encode_chunks`)."""
        return encode_chunks(block, bounds)


VARIABLE = VariableCodec()


class VariableValues(ChunkDecoder):
    """Decoder of Variable mini-block chunks (one value buffer per chunk)."""

    can_gather = True  # single values without decoding their chunk
    copies_out = True  # decode keeps no view of the chunks' bytes (they may be reused)

    num_buffers = 1

    def __init__(self, offset_bits: int):
        self.offset_bits = offset_bits

    def decode(self, data, starts, sizes, counts, where) -> Variable:
        return decode_chunks(self.offset_bits, data, starts[:, 0].copy(), sizes[:, 0].copy(),
                             counts, where)

    def gather(self, data, starts, sizes, counts, slot, local, where) -> Variable:
        """Only the values at ``local`` of chunk ``slot`` (no whole-chunk decode)."""
        ow = self.offset_bits // 8
        n = len(local)
        vs = np.ascontiguousarray(starts[slot, 0])
        err = np.zeros(2, np.int64)
        total = kg.gather_variable_size(data, vs, np.ascontiguousarray(sizes[slot, 0]),
                                        np.ascontiguousarray(counts[slot]), local, ow, err)
        if total < 0:
            raise CorruptFileError(f"{where}: variable offsets out of bounds or decreasing "
                                   f"(value {int(err[0])} of the take)")
        offs = np.empty(n + 1, np.int64)
        out = np.empty(int(total), np.uint8)
        kg.gather_variable_fill(data, vs, local, ow, offs, out)
        return Variable(offs, out, n, self.offset_bits)


def encode_block(block: Variable) -> np.ndarray:
    """The block form (dictionary items): ``uW width | uW bytes_start | uW offsets[n+1]
    (0-based) | bytes`` with W the offset width, e.g. 32-bit ``["ab", "c"]`` →
    ``20 00 00 00 | 14 00 00 00 | 0 2 3 (u32) | 61 62 63``."""
    w = block.offset_bits // 8
    dt = np.dtype(f"<u{w}")
    n = block.num_values
    header = np.array([block.offset_bits, 2 * w + w * (n + 1)], dtype=dt)
    return np.concatenate([header.view(np.uint8), block.offsets.astype(dt).view(np.uint8),
                           block.data])


def decode_block(buf, num_values: int, where: str) -> Variable:
    """Parse the block form, checking every offset (vectorised, no per-value loop)."""
    data = np.frombuffer(buf, dtype=np.uint8)
    if len(data) < 8:
        raise CorruptFileError(f"{where}: variable block of {len(data)} bytes")
    bits = int(data[0])
    if bits not in (32, 64) or (bits == 32 and int(data[1:4].any())):
        raise NotSupportedError(f"{where}: variable block header {bytes(data[:8]).hex()} "
                                f"is not a format lancenb reads")
    w = bits // 8
    need = 2 * w + w * (num_values + 1)
    if len(data) < need:
        raise CorruptFileError(f"{where}: variable block of {len(data)} bytes is too small "
                               f"for {num_values} offsets")
    head = data[:2 * w].view(f"<u{w}")
    start = int(head[1])
    offs = data[2 * w:need].view(f"<u{w}").astype(np.int64)
    if start != need or np.any(np.diff(offs) < 0) or (len(offs) and offs[0] != 0) \
            or int(offs[-1]) > len(data) - start:
        raise CorruptFileError(f"{where}: variable block offsets are inconsistent")
    return Variable(offs, data[start:start + int(offs[-1])].copy(), num_values, bits)
