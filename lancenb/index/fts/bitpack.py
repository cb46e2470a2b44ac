"""The ``bitpacking`` crate's ``BitPacker4x`` layout of blocks of 128 ``uint32``, as the
INVERTED index stores full posting blocks and position blocks, vectorised over many blocks.

Block values are four interleaved lanes (value ``i`` in lane ``i % 4``); each lane's 32
values are packed ``b`` bits each, least significant bit first, into ``b`` words, and the
output is those words lane-interleaved (``16 * b`` bytes). Sorted blocks store deltas
from the previous value (the first from an ``initial`` value).

Examples
--------
>>> import numpy as np
>>> v = np.arange(128, dtype=np.uint32).reshape(1, 128) * 3
>>> bits = num_bits(np.diff(v, prepend=v[:, :1]))
>>> raw = pack(np.diff(v, prepend=v[:, :1]), int(bits[0]))
>>> len(raw[0]), np.array_equal(np.cumsum(unpack(raw, int(bits[0])), axis=1), v)
(32, True)
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLOCK", "num_bits", "pack", "unpack"]

BLOCK = 128
_CHUNK = 4096


def num_bits(values: np.ndarray) -> np.ndarray:
    """Bits needed for the largest value of each row of ``(n, 128)`` ``values``."""
    m = values.max(axis=1).astype(np.uint64) if values.size else np.zeros(0, np.uint64)
    out = np.zeros(len(m), np.uint8)
    nz = m > 0
    out[nz] = np.floor(np.log2(m[nz].astype(np.float64))).astype(np.uint8) + 1
    # (float log2 is exact enough below 2**32 except just under powers of two: fix up)
    big = nz & (m >= (np.uint64(1) << out.astype(np.uint64)))
    out[big] += 1
    return out


def pack(values: np.ndarray, bits: int) -> list[bytes]:
    """Pack each row of ``(n, 128)`` uint32 ``values`` with ``bits`` bits: ``n`` byte
    strings of ``16 * bits`` bytes."""
    n = len(values)
    if bits == 0:
        return [b""] * n
    if n > _CHUNK:  # (bounded memory: 4 KiB of bits per block while packing)
        out: list[bytes] = []
        for a in range(0, n, _CHUNK):
            out.extend(pack(values[a:a + _CHUNK], bits))
        return out
    lanes = np.ascontiguousarray(values.astype("<u4").reshape(n, 32, 4).transpose(0, 2, 1))
    b = np.unpackbits(lanes.view(np.uint8).reshape(n, 4, 32, 4), axis=-1,
                      bitorder="little").reshape(n, 4, 32, 32)[..., :bits]
    words = np.packbits(b.reshape(n, 4, 32 * bits), axis=-1, bitorder="little")
    words = words.view("<u4").reshape(n, 4, bits).transpose(0, 2, 1)
    flat = np.ascontiguousarray(words).tobytes()
    step = 16 * bits
    return [flat[i * step:(i + 1) * step] for i in range(n)]


def unpack(blocks: list[bytes], bits: int) -> np.ndarray:
    """The inverse of :func:`pack`: ``(n, 128)`` uint32."""
    n = len(blocks)
    if bits == 0:
        return np.zeros((n, BLOCK), np.uint32)
    words = np.frombuffer(b"".join(blocks), "<u4").reshape(n, bits, 4).transpose(0, 2, 1)
    b = np.unpackbits(np.ascontiguousarray(words).view(np.uint8).reshape(n, 4, 4 * bits),
                      axis=-1, bitorder="little").reshape(n, 4, 32, bits)
    full = np.zeros((n, 4, 32, 32), np.uint8)
    full[..., :bits] = b
    vals = np.packbits(full, axis=-1, bitorder="little").view("<u4").reshape(n, 4, 32)
    return np.ascontiguousarray(vals.transpose(0, 2, 1)).reshape(n, BLOCK).astype(np.uint32)
