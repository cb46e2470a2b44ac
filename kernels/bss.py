"""Byte-stream split (the ``ByteStreamSplit`` encoding, FORMAT_FACTS §3.4).

Values are cut into chunks (in mini-block pages: 1024 values of 32 bits or 512 of 64
bits, the last chunk the remainder) and each chunk of ``n`` values of ``w`` bytes is
stored transposed: output byte ``j * n + i`` is byte ``j`` of value ``i``. The
transform keeps the size. Example (float32 ``[1.0, 2.0]`` = ``00 00 80 3f``,
``00 00 00 40``, one chunk): ``00 00 | 00 00 | 80 00 | 3f 40``.

``split`` transposes chunks given by value bounds; ``join`` undoes it for chunks
anywhere in a buffer (each chunk's decompressed value buffer) and writes the values
back to back. Both work on ``uint8`` with a runtime width; 4 and 8 have fast paths.
"""

import numpy as np

from ._jit import kernel

OK = 0
BAD_WIDTH = -1    # width < 1
BAD_SIZE = -2     # buffer lengths do not match the values described
BAD_BOUNDS = -3   # split: bounds not 0 = b0 <= b1 <= ... = n
BAD_CHUNK = -4    # join: a chunk (start, count) reaches outside the source buffer

VALUES_PER_CHUNK = {4: 1024, 8: 512}  # what the reference writes per mini-block chunk


def chunk_bounds(num_values: int, width: int) -> np.ndarray:
    """Chunk bounds (first value of each chunk, then ``num_values``) as the
    reference cuts them; widths other than 4 and 8 get 4096 // width per chunk."""
    per = VALUES_PER_CHUNK.get(width, max(1, 4096 // max(width, 1)))
    return np.append(np.arange(0, num_values, per, dtype=np.int64), np.int64(num_values))


_SH8 = np.uint32(8)
_SH16 = np.uint32(16)
_SH24 = np.uint32(24)
_LOW = np.uint32(0xFF)
_B = np.uint64(0xFF)
_S1, _S2, _S3, _S4, _S5, _S6, _S7 = (np.uint64(8 * j) for j in range(1, 8))

# The fast paths write (or read) one plain loop per byte stream over zero-based slices:
# that vectorises, where a loop over the byte index or a strided one does not.


@kernel
def _split4(words, out, base, n):
    o0 = out[base:base + n]
    o1 = out[base + n:base + 2 * n]
    o2 = out[base + 2 * n:base + 3 * n]
    o3 = out[base + 3 * n:base + 4 * n]
    for i in range(n):
        x = words[i]
        o0[i] = np.uint8(x & _LOW)
        o1[i] = np.uint8((x >> _SH8) & _LOW)
        o2[i] = np.uint8((x >> _SH16) & _LOW)
        o3[i] = np.uint8(x >> _SH24)


@kernel
def _split8(words, out, base, n):
    o0 = out[base:base + n]
    o1 = out[base + n:base + 2 * n]
    o2 = out[base + 2 * n:base + 3 * n]
    o3 = out[base + 3 * n:base + 4 * n]
    o4 = out[base + 4 * n:base + 5 * n]
    o5 = out[base + 5 * n:base + 6 * n]
    o6 = out[base + 6 * n:base + 7 * n]
    o7 = out[base + 7 * n:base + 8 * n]
    for i in range(n):
        x = words[i]
        o0[i] = np.uint8(x & _B)
        o1[i] = np.uint8((x >> _S1) & _B)
        o2[i] = np.uint8((x >> _S2) & _B)
        o3[i] = np.uint8((x >> _S3) & _B)
        o4[i] = np.uint8((x >> _S4) & _B)
        o5[i] = np.uint8((x >> _S5) & _B)
        o6[i] = np.uint8((x >> _S6) & _B)
        o7[i] = np.uint8(x >> _S7)


@kernel
def _join4(src, s, n, words):
    b0 = src[s:s + n]
    b1 = src[s + n:s + 2 * n]
    b2 = src[s + 2 * n:s + 3 * n]
    b3 = src[s + 3 * n:s + 4 * n]
    for i in range(n):
        words[i] = np.uint32(b0[i]) | (np.uint32(b1[i]) << _SH8) \
            | (np.uint32(b2[i]) << _SH16) | (np.uint32(b3[i]) << _SH24)


@kernel
def _join8(src, s, n, words):
    b0 = src[s:s + n]
    b1 = src[s + n:s + 2 * n]
    b2 = src[s + 2 * n:s + 3 * n]
    b3 = src[s + 3 * n:s + 4 * n]
    b4 = src[s + 4 * n:s + 5 * n]
    b5 = src[s + 5 * n:s + 6 * n]
    b6 = src[s + 6 * n:s + 7 * n]
    b7 = src[s + 7 * n:s + 8 * n]
    for i in range(n):
        words[i] = np.uint64(b0[i]) | (np.uint64(b1[i]) << _S1) \
            | (np.uint64(b2[i]) << _S2) | (np.uint64(b3[i]) << _S3) \
            | (np.uint64(b4[i]) << _S4) | (np.uint64(b5[i]) << _S5) \
            | (np.uint64(b6[i]) << _S6) | (np.uint64(b7[i]) << _S7)


@kernel
def split(src, width, bounds, out):
    """Transpose each chunk ``[bounds[c], bounds[c + 1])`` of the rows in ``src``
    into the same byte range of ``out``. Returns ``OK`` or a status; ``out`` is
    untouched unless the result is ``OK``."""
    if width < 1:
        return BAD_WIDTH
    size = src.shape[0]
    if size % width != 0 or out.shape[0] != size:
        return BAD_SIZE
    n = size // width
    nb = bounds.shape[0]
    if nb < 1 or bounds[0] != 0 or bounds[nb - 1] != n:
        return BAD_BOUNDS
    for c in range(nb - 1):
        if bounds[c + 1] < bounds[c]:
            return BAD_BOUNDS
    for c in range(nb - 1):
        v0 = bounds[c]
        cnt = bounds[c + 1] - v0
        base = v0 * width
        if width == 4:
            _split4(src[base:base + cnt * 4].view(np.uint32), out, base, cnt)
        elif width == 8:
            _split8(src[base:base + cnt * 8].view(np.uint64), out, base, cnt)
        else:
            for i in range(cnt):
                for j in range(width):
                    out[base + j * cnt + i] = src[base + i * width + j]
    return OK


@kernel
def join(src, starts, counts, width, out):
    """Undo :func:`split`: chunk ``c`` holds ``counts[c]`` values transposed at
    ``src[starts[c]:]``; the values go to ``out`` back to back. Returns ``OK`` or a
    status; ``out`` is untouched unless the result is ``OK``."""
    if width < 1:
        return BAD_WIDTH
    size = src.shape[0]
    room = out.shape[0]
    if room % width != 0:
        return BAD_SIZE
    nc = starts.shape[0]
    if counts.shape[0] != nc:
        return BAD_SIZE
    need = np.int64(0)
    for c in range(nc):
        s = starts[c]
        cnt = counts[c]
        # by division, so that no product or sum can overflow int64
        if s < 0 or cnt < 0 or s > size or cnt > (size - s) // width:
            return BAD_CHUNK
        if cnt > room // width - need:
            return BAD_SIZE
        need += cnt
    if need * width != room:
        return BAD_SIZE
    pos = np.int64(0)
    for c in range(nc):
        s = starts[c]
        cnt = counts[c]
        if width == 4:
            _join4(src, s, cnt, out[pos:pos + cnt * 4].view(np.uint32))
        elif width == 8:
            _join8(src, s, cnt, out[pos:pos + cnt * 8].view(np.uint64))
        else:
            for i in range(cnt):
                for j in range(width):
                    out[pos + i * width + j] = src[s + j * cnt + i]
        pos += cnt * width
    return OK
