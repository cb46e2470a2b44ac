"""Rep/def level compression: one block compressor per page, applied to each chunk's
levels (mini-block pages) or to all the page's levels at once (2.2 constant pages).

The levels are u16. The compressor is chosen from the whole page, as pylance 14 does
(checked against its files, ``tests/encodings/test_levels_22.py``):

* bitpacking: at most 1024 levels → ``InlineBitpacking(16)`` unless the packed bits
  alone (``1024 * W / 8`` bytes) are no smaller than the raw levels, then ``Flat(16)``;
  more → ``OutOfLineBitpacking{16, Flat(W)}`` at the page's width W;
* 2.2 only, ``Rle{values Flat(16), run_lengths Flat(8)}`` in block form (``u64 byte
  length of the values | u16 values | u8 lengths``) when the page's levels as one such
  block (``8 + 3 * runs`` bytes, runs cut at 255) are smaller than the raw levels and
  no larger than the bitpacked ones.

Example (2.2): 10,000 def levels of a nullable column with 424 runs of nulls and
values: RLE ``8 + 3 * 424 = 1280`` bytes, bitpacked at W = 1 also 1280 bytes → RLE;
each 1024-level chunk then holds its own block, e.g. ``[1,1,1,0,0]`` →
``04 00 00 00 00 00 00 00 | 01 00 00 00 | 03 02``.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.physical import bitpacking
from lancenb.kernels import bitpack as kb
from lancenb.kernels import rle as kr
from lancenb.kernels import stats as kstats

__all__ = ["encode_levels", "rle_description", "choose"]

RLE_HEADER_BYTES = 8
# a chunk header stores the size of its rep or def bytes as a u16: a chunk whose RLE
# block would be larger (many short runs in one chunk of a page of long runs) makes
# the page fall back to bitpacking
MAX_CHUNK_LEVEL_BYTES = 0xFFFF


def rle_description():
    """The 2.2 RLE description of u16 rep/def levels (u16 values, u8 run lengths)."""
    return pb.e21.CompressiveEncoding(rle=pb.e21.Rle(values=pb.flat(16),
                                                     run_lengths=pb.flat(8)))


def _runs(levels: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    runs = np.zeros(max(len(bounds) - 1, 0), np.int64)
    kr.encode_count(levels.view(np.uint8), 2, bounds, 1, runs)
    return runs


def choose(levels: np.ndarray, *, version_minor: int) -> str:
    """``"flat"``, ``"inline"``, ``"outofline"`` or ``"rle"`` for a page's levels."""
    n = len(levels)
    raw = 2 * n
    width = int(kb.bit_width(levels)) if n else 0
    if n <= bitpacking.CHUNK:
        kind = "flat" if width * bitpacking.CHUNK // 8 >= raw else "inline"
        packed = raw if kind == "flat" else (1 + width * bitpacking.CHUNK // 16) * 2
    else:
        kind, packed = "outofline", kb.outofline_words(n, width, 16) * 2
    if version_minor >= 2 and n:
        # runs before cutting at 255 give a floor of the RLE size (a fast, vectorised
        # count): only a page whose floor could win pays for the exact count
        floor = RLE_HEADER_BYTES + 3 * int(kstats.run_count(levels.view(np.uint8), 2))
        if floor < raw and floor <= packed:
            rle = RLE_HEADER_BYTES + 3 * int(_runs(levels, np.array([0, n], np.int64))[0])
            if rle < raw and rle <= packed:
                return "rle"
    return kind


def encode_levels(levels: np.ndarray, bounds: np.ndarray, *, version_minor: int):
    """Each chunk's levels (``levels[bounds[c]:bounds[c + 1]]``) compressed with the
    page's compressor: ``(src, starts, sizes, description)``."""
    kind = choose(levels, version_minor=version_minor)
    bounds = np.asarray(bounds, np.int64)
    sizes = RLE_HEADER_BYTES + 3 * _runs(levels, bounds) if kind == "rle" else None
    if sizes is not None and len(sizes) and int(sizes.max()) > MAX_CHUNK_LEVEL_BYTES:
        kind = "flat" if len(levels) <= bitpacking.CHUNK else "outofline"
    if kind != "rle":
        return bitpacking.encode_levels(levels, bounds, flat=kind == "flat")
    starts = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    out = np.empty(int(sizes.sum()), np.uint8)
    status = kr.encode_blocks(levels.view(np.uint8), 2, bounds, 1, starts, out)
    if status != kr.OK:  # sizes come from the same runs: a bug, not bad input
        raise AssertionError(f"RLE level blocks: status {status}")
    return out, starts, sizes, rle_description()
