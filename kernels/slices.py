"""Concatenating byte and bit slices (the inner loop of chunked decoders).

``concat_slices``: ``src=[a b c d e f]``, ``starts=[1, 4]``, ``sizes=[2, 2]`` →
``out=[b c e f]``. ``concat_bits`` does the same with LSB-first bit runs: slice ``i``
is ``nbits[i]`` bits starting at bit 0 of byte ``byte_starts[i]``.

Both return 0, or -1 (with nothing guaranteed written) when a slice lies outside
``src`` or the output is too small.

``expand_ranges``: the indices of ranges ``[starts[i], ends[i])`` back to back, e.g.
``starts=[3, 0]``, ``ends=[5, 1]`` → ``out=[3 4 0]`` (a gather through indices for
what cannot be copied as byte slices: single bits, variable-width item lengths).
It returns the number of indices, or -1 when a range is reversed, leaves
``[0, limit)`` or does not fit ``out``.
"""

import numpy as np

from ._jit import kernel
from .bytes_util import copy_bytes

OK = 0
OUT_OF_BOUNDS = -1


@kernel
def concat_slices(src, starts, sizes, out):
    total = 0
    for i in range(starts.shape[0]):
        s = starts[i]
        n = sizes[i]
        # written so that no sum can overflow int64
        if s < 0 or n < 0 or s > src.shape[0] or n > src.shape[0] - s:
            return OUT_OF_BOUNDS
        if n > out.shape[0] - total:
            return OUT_OF_BOUNDS
        total += n
    if total > out.shape[0]:
        return OUT_OF_BOUNDS
    pos = 0
    for i in range(starts.shape[0]):
        s = starts[i]
        n = sizes[i]
        copy_bytes(out, pos, src, s, n)
        pos += n
    return OK


@kernel
def concat_bits(src, byte_starts, nbits, out):
    total = 0
    for i in range(byte_starts.shape[0]):
        s = byte_starts[i]
        n = nbits[i]
        nbytes = n // 8 + (1 if n % 8 else 0)  # no overflow for huge n
        if s < 0 or n < 0 or s > src.shape[0] or nbytes > src.shape[0] - s:
            return OUT_OF_BOUNDS
        if n > 8 * out.shape[0] - total:
            return OUT_OF_BOUNDS
        total += n
    if (total + 7) // 8 > out.shape[0]:
        return OUT_OF_BOUNDS
    out[:] = 0
    bit = 0
    for i in range(byte_starts.shape[0]):
        s = byte_starts[i]
        n = nbits[i]
        if bit % 8 == 0:
            # byte-aligned destination: copy whole bytes, then mask the tail
            nb = n // 8
            d = bit // 8
            out[d:d + nb] = src[s:s + nb]
            rem = n - nb * 8
            if rem:
                out[d + nb] = src[s + nb] & np.uint8((1 << rem) - 1)
        else:
            for j in range(n):
                if (src[s + (j >> 3)] >> (j & 7)) & 1:
                    b = bit + j
                    out[b >> 3] |= np.uint8(1 << (b & 7))
        bit += n
    return OK


@kernel
def expand_ranges(starts, ends, limit, out):
    total = 0
    for i in range(starts.shape[0]):
        s = starts[i]
        e = ends[i]
        if s < 0 or e < s or e > limit or e - s > out.shape[0] - total:
            return OUT_OF_BOUNDS
        total += e - s
    q = 0
    for i in range(starts.shape[0]):
        for v in range(starts[i], ends[i]):
            out[q] = v
            q += 1
    return total
