"""Positions in pylance 14's format 2 (``positions_layout=shared_stream_v2``,
``positions_codec=packed_delta_v1``), vectorised over a partition.

``_compressed_position`` holds one byte stream per token; ``_position_block_offset``
the offset in it where each posting block (128 documents) starts. A block's positions,
document after document (each document's delta-coded, its first absolute), are stored
as full groups of 128 values (a bit width byte then the ``BitPacker4x`` words of
:mod:`.bitpack`), then the rest as LEB128 varints. Example: one document with
positions 3, 7, 8 -> block bytes ``03 04 01``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.index.fts import bitpack
from lancenb.index.fts.impacts import varint_encode

__all__ = ["META", "position_columns"]

META = {"positions_layout": "shared_stream_v2", "positions_codec": "packed_delta_v1"}
BLOCK = bitpack.BLOCK


def position_columns(offsets: np.ndarray, freqs: np.ndarray, pos_offsets: np.ndarray,
                     positions: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """``(_compressed_position, _position_block_offset)`` of CSR posting lists with
    their positions (``pos_offsets`` per posting into ``positions``)."""
    lengths = np.diff(offsets).astype(np.int64)
    ntok = len(lengths)
    nb = (lengths + BLOCK - 1) // BLOCK
    nblocks = int(nb.sum())
    fb = np.zeros(ntok + 1, np.int64)
    np.cumsum(nb, out=fb[1:])
    # first posting of each block, and of the block after it
    within = np.arange(nblocks) - np.repeat(fb[:-1], nb)
    bstart = np.repeat(offsets[:-1].astype(np.int64), nb) + within * BLOCK
    bend = np.minimum(bstart + BLOCK, np.repeat(offsets[1:].astype(np.int64), nb))
    pstart, pend = pos_offsets[bstart].astype(np.int64), pos_offsets[bend].astype(np.int64)
    # delta-code each document's positions
    p = positions.astype(np.int64)
    deltas = p - np.r_[0, p[:-1]]
    f = np.diff(pos_offsets).astype(np.int64)
    firsts = pos_offsets[:-1][f > 0].astype(np.int64)
    deltas[firsts] = p[firsts]
    deltas = deltas.astype(np.uint32)
    cnt = pend - pstart
    nfull, rest = cnt // BLOCK, cnt % BLOCK
    # full groups: a width byte and the packed words
    gblock = np.repeat(np.arange(nblocks), nfull)
    gk = np.arange(len(gblock)) - np.repeat(np.cumsum(nfull) - nfull, nfull)
    gstart = pstart[gblock] + gk * BLOCK
    groups = deltas[gstart[:, None] + np.arange(BLOCK)[None, :]] if len(gblock) else \
        np.zeros((0, BLOCK), np.uint32)
    bits = bitpack.num_bits(groups)
    gbytes: list = [b""] * len(gblock)
    for w in np.unique(bits).tolist():
        sel = np.flatnonzero(bits == w)
        for i, raw in zip(sel.tolist(), bitpack.pack(groups[sel], w)):
            gbytes[i] = bytes([w]) + raw
    # the rest: varints, per block
    rblock = np.repeat(np.arange(nblocks), rest)
    rk = np.arange(len(rblock)) - np.repeat(np.cumsum(rest) - rest, rest)
    rvals = deltas[pstart[rblock] + nfull[rblock] * BLOCK + rk]
    rdata, rat = varint_encode(rvals)
    rcum = np.r_[0, np.cumsum(rest)]
    rraw = rdata.tobytes()
    streams, block_offsets = [], []
    g = 0
    for t in range(ntok):
        parts, offs, size = [], [], 0
        for b in range(int(fb[t]), int(fb[t + 1])):
            offs.append(size)
            for _ in range(int(nfull[b])):
                parts.append(gbytes[g])
                size += len(gbytes[g])
                g += 1
            tail = rraw[int(rat[rcum[b]]):int(rat[rcum[b + 1]])]
            parts.append(tail)
            size += len(tail)
        streams.append(b"".join(parts))
        block_offsets.append(offs)
    return (pa.array(streams, pa.large_binary()),
            pa.array(block_offsets, pa.list_(pa.uint32())))
