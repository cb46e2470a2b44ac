"""Byte-stream-split: the bytes of 32/64-bit values regrouped by position.

Per mini-block chunk of n values (1024 for 32-bit, 512 for 64-bit), output byte
``j * n + i`` is byte ``j`` of value ``i``. Example (two float32 values ``a0 a1 a2 a3``
and ``b0 b1 b2 b3``) → ``a0 b0 a1 b1 a2 b2 a3 b3``. Description:
``ByteStreamSplit{values: Flat(32|64)}``. It only pays under general compression, so
the reference (and lancenb) use it inside ``General{lz4|zstd}``.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth
from lancenb.errors import CorruptFileError
from lancenb.kernels import bss as kbss

__all__ = ["BssValues"]


class BssValues:
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
