"""RLE: runs of equal values, as run values then u8 run lengths.

Two value buffers per mini-block chunk: ``[0]`` the run values (T bits each), ``[1]``
the run lengths (u8; runs longer than 255 are cut). Description:
``Rle{values: Flat(T), run_lengths: Flat(8)}``. Example (int32): ``[1, 1, 1, 2, 2]``
→ ``01 00 00 00 02 00 00 00`` and ``03 02``. Chunks hold up to 4096 values and about
8 KiB of runs. Kernels and the exact rules: ``lancenb.kernels.rle``.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import rle as kr

__all__ = ["RleValues", "RleCodec", "RleLevels"]

_ERRORS = {kr.BUFFER_PAST_END: "RLE buffers reach outside the chunk",
           kr.BAD_BUFFER_SIZES: "RLE value and length buffers disagree",
           kr.ZERO_RUN: "an RLE run of length 0", kr.RUNS_PAST_COUNT: "RLE runs cover more "
           "values than the chunk holds", kr.RUNS_SHORT: "RLE runs cover fewer values than "
           "the chunk holds", kr.BAD_SIZE: "inconsistent RLE sizes",
           kr.BAD_WIDTH: "unsupported RLE widths"}


class RleValues(ChunkDecoder):
    """Decoder of RLE mini-block chunks (values and run lengths per chunk)."""

    can_gather = False  # only whole chunks decode

    num_buffers = 2

    def __init__(self, enc, fixed_bits, where: str):
        v, r = enc.rle.values, enc.rle.run_lengths
        if v.WhichOneof("compression") != "flat" or r.WhichOneof("compression") != "flat":
            raise NotSupportedError(f"{where}: RLE with {pb.describe(enc)}")
        self.bits = int(v.flat.bits_per_value)
        self.length_bytes = int(r.flat.bits_per_value) // 8
        if self.bits != fixed_bits or self.bits not in (8, 16, 32, 64) \
                or self.length_bytes not in (1, 2, 4):
            raise CorruptFileError(f"{where}: RLE of {self.bits}-bit values with "
                                   f"{self.length_bytes * 8}-bit lengths for a column of "
                                   f"{fixed_bits}-bit values")

    def decode(self, data, starts, sizes, counts, where) -> FixedWidth:
        w = self.bits // 8
        out = np.empty(int(counts.sum()) * w, np.uint8)
        err = np.zeros(2, np.int64)
        status = kr.decode_chunks(data, starts[:, 0].copy(), sizes[:, 0].copy(),
                                  starts[:, 1].copy(), sizes[:, 1].copy(),
                                  counts.astype(np.int64), w, self.length_bytes, out, err)
        if status != kr.OK:
            raise CorruptFileError(f"{where}, chunk {int(err[0])}: {_ERRORS[status]}")
        return FixedWidth(self.bits, out, int(counts.sum()))


class RleLevels(ChunkDecoder):
    """u16 rep/def levels of mini-block chunks in RLE *block* form (pylance 2.2):
    one buffer per chunk, ``u64 values byte length | u16 values | u8 run lengths``."""

    can_gather = False  # only whole chunks decode

    def __init__(self, enc, where: str):
        v, r = enc.rle.values, enc.rle.run_lengths
        if v.WhichOneof("compression") != "flat" or r.WhichOneof("compression") != "flat" \
                or v.flat.bits_per_value != 16 or r.flat.bits_per_value not in (8, 16, 32):
            raise NotSupportedError(f"{where}: levels as RLE with {pb.describe(enc)}")
        self.length_bytes = int(r.flat.bits_per_value) // 8

    def decode(self, data, starts, sizes, counts, where) -> np.ndarray:
        out = np.empty(int(counts.sum()), dtype=np.uint16)
        err = np.zeros(2, np.int64)
        status = kr.decode_blocks(data, np.asarray(starts, np.int64), np.asarray(sizes, np.int64),
                                  counts.astype(np.int64), 2, self.length_bytes,
                                  out.view(np.uint8), err)
        if status != kr.OK:
            raise CorruptFileError(f"{where}, chunk {int(err[0])}: levels: {_ERRORS[status]}")
        return out


class RleCodec(ChunkCodec):
    """Encoder: chunk bounds as the reference picks them, then runs per chunk."""

    def __init__(self, block: FixedWidth, max_values: int = kr.MAX_CHUNK_VALUES):
        """``max_values`` per chunk: the reference's 4096 by default; the compact
        profile allows up to 32768 (a power of two up to 2**15 fits the chunk word)."""
        self.width = block.bits // 8
        data = block.data[:block.num_values * self.width]
        bounds = np.empty(block.num_values + 1, np.int64)
        nc = kr.plan_chunks(data, self.width, max_values, kr.MAX_CHUNK_BYTES, 1, bounds)
        if nc < 0:
            raise NotSupportedError("values too wide for RLE chunks")
        self.bounds = bounds[:nc + 1].copy()
        runs = np.empty(nc, np.int64)
        total = kr.encode_count(data, self.width, self.bounds, 1, runs)
        self.runs = runs
        run_starts = np.zeros(nc, np.int64)
        np.cumsum(runs[:-1], out=run_starts[1:])
        self.values = np.empty(int(total) * self.width, np.uint8)
        self.lengths = np.empty(int(total), np.uint8)
        kr.encode_fill(data, self.width, self.bounds, 1, run_starts, self.values, self.lengths)
        self.run_starts = run_starts
        self.nbytes = len(self.values) + len(self.lengths)

    def plan(self, block):
        return self.bounds

    def encode_chunks(self, block, bounds):
        src = np.concatenate([self.values, self.lengths])
        vstarts = self.run_starts * self.width
        lstarts = len(self.values) + self.run_starts
        starts = np.stack([vstarts, lstarts], axis=1)
        sizes = np.stack([self.runs * self.width, self.runs], axis=1)
        desc = pb.e21.CompressiveEncoding(rle=pb.e21.Rle(values=pb.flat(block.bits),
                                                         run_lengths=pb.flat(8)))
        return src, starts, sizes, desc
