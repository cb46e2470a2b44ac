"""Variable-width values in mini-block chunks (the ``Variable`` encoding).

A chunk's value buffer holds ``n + 1`` offsets (u32, or u64 for 64-bit offsets)
measured from the start of that buffer, then the ``n`` values' bytes, then 0x48
padding to a multiple of the offset width. Example (u32): ``["ab", "", "c"]`` →
offsets ``16 18 18 19``, bytes ``a b c``, one pad byte: 20 bytes.

Encoding: ``plan_chunks`` picks chunk boundaries, ``fill_chunks`` writes them.
Decoding: ``decode_size`` validates and counts bytes, ``decode_fill`` copies.
"""

import numpy as np

from ._jit import kernel
from .bytes_util import read_uint, write_uint

OK = 0
TOO_LARGE = -1            # plan_chunks: two values do not fit in one chunk
OFFSETS_PAST_BUFFER = -2  # decode: the offset table does not fit in the buffer
BAD_OFFSET = -3           # decode: offsets decrease or point past the buffer

PAD_BYTE = 0x48


@kernel
def plan_chunks(offsets, offset_width, aim_bytes, max_bytes, max_values, out_bounds):
    """Split values into chunks; ``out_bounds`` gets the first value of each chunk.

    A chunk gets the largest power-of-two number of values whose offsets and bytes
    fit in ``aim_bytes`` (never fewer than two while two remain, because only the
    last chunk may hold a count that is not a power of two); the last chunk takes
    whatever is left once that fits. Returns the chunk count, with ``out_bounds``
    holding ``count + 1`` entries, or ``TOO_LARGE`` when a chunk would exceed
    ``max_bytes``.
    """
    n = offsets.shape[0] - 1
    i = 0
    nc = 0
    while i < n:
        remaining = n - i
        rest_bytes = (remaining + 1) * offset_width + (offsets[n] - offsets[i])
        if remaining <= max_values and rest_bytes <= aim_bytes:
            cnt = remaining
        else:
            cnt = 1
            while cnt * 2 <= remaining and cnt * 2 <= max_values:
                nxt = cnt * 2
                if (nxt + 1) * offset_width + (offsets[i + nxt] - offsets[i]) > aim_bytes:
                    break
                cnt = nxt
            if cnt == 1 and remaining >= 2:
                cnt = 2
            if cnt == 1 and remaining == 1:
                cnt = 1
        size = (cnt + 1) * offset_width + (offsets[i + cnt] - offsets[i])
        if size > max_bytes:
            return TOO_LARGE
        out_bounds[nc] = i
        nc += 1
        i += cnt
    out_bounds[nc] = n
    return nc


@kernel
def fill_chunks(offsets, data, bounds, offset_width, out, out_starts):
    """Write chunk value buffers for ``bounds`` (from :func:`plan_chunks`)."""
    nc = bounds.shape[0] - 1
    for c in range(nc):
        i0 = bounds[c]
        i1 = bounds[c + 1]
        cnt = i1 - i0
        p = out_starts[c]
        first = (cnt + 1) * offset_width
        b0 = offsets[i0]
        for k in range(cnt + 1):
            write_uint(out, p + k * offset_width, first + (offsets[i0 + k] - b0), offset_width)
        q = p + first
        nbytes = offsets[i1] - b0
        out[q:q + nbytes] = data[b0:b0 + nbytes]
        q += nbytes
        while (q - p) % offset_width != 0:
            out[q] = PAD_BYTE
            q += 1
    return OK


def chunk_buffer_sizes(offsets: np.ndarray, bounds: np.ndarray, offset_width: int) -> np.ndarray:
    """Padded size of each chunk's value buffer (NumPy, no per-value work)."""
    cnt = np.diff(bounds)
    raw = (cnt + 1) * offset_width + (offsets[bounds[1:]] - offsets[bounds[:-1]])
    return (raw + offset_width - 1) // offset_width * offset_width


@kernel
def decode_size(src, starts, sizes, counts, offset_width, err):
    """Validate each chunk's offsets; return the total value bytes or a status."""
    total = np.int64(0)
    for c in range(starts.shape[0]):
        s = starts[c]
        size = sizes[c]
        cnt = counts[c]
        # compare by division so no product or sum can overflow int64
        if s < 0 or size < 0 or cnt < 0 or s > src.shape[0] or size > src.shape[0] - s \
                or cnt >= size // offset_width:
            err[0] = c
            err[1] = s
            return OFFSETS_PAST_BUFFER
        prev = np.int64(read_uint(src, s, offset_width))
        if prev < (cnt + 1) * offset_width or prev > size:
            err[0] = c
            err[1] = s
            return BAD_OFFSET
        first = prev
        for k in range(1, cnt + 1):
            o = np.int64(read_uint(src, s + k * offset_width, offset_width))
            if o < prev or o > size:
                err[0] = c
                err[1] = s + k * offset_width
                return BAD_OFFSET
            prev = o
        total += prev - first
    return total


@kernel
def decode_fill(src, starts, counts, offset_width, out_offsets, out_data):
    """Copy values out of chunks validated by :func:`decode_size`.

    ``out_offsets`` (int64, one more than the total count) gets Arrow-style offsets
    starting at 0; ``out_data`` gets the bytes.
    """
    pos = np.int64(0)
    j = 0
    out_offsets[0] = 0
    for c in range(starts.shape[0]):
        s = starts[c]
        cnt = counts[c]
        first = np.int64(read_uint(src, s, offset_width))
        last = np.int64(read_uint(src, s + cnt * offset_width, offset_width))
        out_data[pos:pos + last - first] = src[s + first:s + last]
        for k in range(1, cnt + 1):
            o = np.int64(read_uint(src, s + k * offset_width, offset_width))
            out_offsets[j + k] = pos + o - first
        pos += last - first
        j += cnt
    return OK
