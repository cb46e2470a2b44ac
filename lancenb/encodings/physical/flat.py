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
from lancenb.errors import CorruptFileError
from lancenb.kernels import slices

__all__ = ["values_per_chunk", "plan", "encode_chunks", "decode_chunks", "description"]

MAX_CHUNK_VALUES = 4096
MAX_CHUNK_VALUE_BYTES = 8186  # the reference's per-chunk value budget (8 KiB minus headers)


def values_per_chunk(bits: int) -> int:
    n = 2
    while n * 2 <= MAX_CHUNK_VALUES and (n * 2 * bits) / 8 < MAX_CHUNK_VALUE_BYTES:
        n *= 2
    return n


def plan(block: FixedWidth) -> np.ndarray:
    """Chunk boundaries (first value of each chunk, then the count)."""
    k = values_per_chunk(block.bits)
    return np.append(np.arange(0, block.num_values, k, dtype=np.int64), block.num_values)


def description(block: FixedWidth):
    return pb.flat(block.bits)


def encode_chunks(block: FixedWidth, bounds: np.ndarray):
    """``(src, starts, sizes)``: one value buffer per chunk, as slices of ``src``."""
    cnt = np.diff(bounds)
    starts = bounds[:-1] * block.bits // 8
    sizes = (cnt * block.bits + 7) // 8
    return block.data, starts[:, None], sizes[:, None]


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
