"""Variable-width values in mini-block chunks (the ``Variable`` encoding).

A chunk's value buffer holds ``n + 1`` offsets (u32, or u64 for 64-bit offsets)
measured from the start of that buffer, then the ``n`` values' bytes, then 0x48
padding to a multiple of the offset width. Example (u32): ``["ab", "", "c"]`` →
offsets ``16 18 18 19``, bytes ``a b c``, one pad byte: 20 bytes.

Encoding: ``plan_chunks`` picks chunk boundaries, ``fill_chunks`` writes them.
Decoding: ``decode_size`` validates and counts bytes, ``decode_fill`` copies.
Statistics: ``value_bounds`` finds the least and the greatest value (page min/max).
"""

import numpy as np

from ._jit import kernel
from .bytes_util import copy_bytes, offsets_ok, read_u32, read_u64, write_uint

OK = 0
TOO_LARGE = -1            # plan_chunks: two values do not fit in one chunk
OFFSETS_PAST_BUFFER = -2  # decode: the offset table does not fit in the buffer
BAD_OFFSET = -3           # decode: offsets decrease or point past the buffer
BAD_SIZE = -4             # value_bounds: validity or output of the wrong size

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
        if offset_width == 4:  # constant shifts: one store per offset, not four
            for k in range(cnt + 1):
                v = np.uint32(first + (offsets[i0 + k] - b0))
                q = p + 4 * k
                out[q] = np.uint8(v & np.uint32(0xFF))
                out[q + 1] = np.uint8((v >> np.uint32(8)) & np.uint32(0xFF))
                out[q + 2] = np.uint8((v >> np.uint32(16)) & np.uint32(0xFF))
                out[q + 3] = np.uint8(v >> np.uint32(24))
        else:
            for k in range(cnt + 1):
                write_uint(out, p + k * offset_width, first + (offsets[i0 + k] - b0),
                           offset_width)
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
def _read_offset(src, pos, offset_width):
    return read_u32(src, pos) if offset_width == 4 else read_u64(src, pos)


@kernel
def _offsets_bad(src, s, cnt, offset_width, first, size):
    """Whether offsets ``1..cnt`` of the table at ``s`` decrease or pass ``size``
    (one loop per width, branch-free inside)."""
    prev = first
    bad = False
    if offset_width == 4:
        for k in range(1, cnt + 1):
            o = read_u32(src, s + 4 * k)
            bad |= (o < prev) | (o > size)
            prev = o
    else:
        for k in range(1, cnt + 1):
            o = read_u64(src, s + 8 * k)
            bad |= (o < prev) | (o > size)
            prev = o
    return bad


@kernel
def _copy_offsets(src, s, cnt, offset_width, base, out, j):
    """``out[j + k] = base + offset k`` for ``k`` in ``1..cnt``."""
    if offset_width == 4:
        for k in range(1, cnt + 1):
            out[j + k] = base + read_u32(src, s + 4 * k)
    else:
        for k in range(1, cnt + 1):
            out[j + k] = base + read_u64(src, s + 8 * k)


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
        first = _read_offset(src, s, offset_width)
        if first < (cnt + 1) * offset_width or first > size:
            err[0] = c
            err[1] = s
            return BAD_OFFSET
        if _offsets_bad(src, s, cnt, offset_width, first, size):
            prev = first
            for k in range(1, cnt + 1):
                o = _read_offset(src, s + k * offset_width, offset_width)
                if o < prev or o > size:
                    err[0] = c
                    err[1] = s + k * offset_width
                    return BAD_OFFSET
                prev = o
        total += _read_offset(src, s + cnt * offset_width, offset_width) - first
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
        first = _read_offset(src, s, offset_width)
        last = _read_offset(src, s + cnt * offset_width, offset_width)
        copy_bytes(out_data, pos, src, s + first, last - first)  # memcpy, not a byte loop
        _copy_offsets(src, s, cnt, offset_width, pos - first, out_offsets, j)
        pos += last - first
        j += cnt
    return OK


@kernel
def _word_be(data, p, k):
    """The ``k`` (0..8) bytes at ``data[p]`` as a big-endian uint64, left-aligned (so
    that words compare as the bytes do)."""
    w = np.uint64(0)
    if k >= 8:
        for j in range(8):
            w = (w << np.uint64(8)) | np.uint64(data[p + j])
        return w
    for j in range(k):
        w = (w << np.uint64(8)) | np.uint64(data[p + j])
    return w << np.uint64(8 * (8 - k)) if k > 0 else w


@kernel
def _compare(data, a, la, b, lb, k):
    """-1, 0 or 1 as ``data[a:a + la]`` sorts before, equal to or after
    ``data[b:b + lb]`` (bytes unsigned, a prefix first), given that their first ``k``
    bytes (``k`` at most the shorter length) are equal."""
    m = min(la, lb)
    while k + 8 <= m:
        x = _word_be(data, a + k, 8)
        y = _word_be(data, b + k, 8)
        if x != y:
            return -1 if x < y else 1
        k += 8
    if k < m:
        x = _word_be(data, a + k, m - k)
        y = _word_be(data, b + k, m - k)
        if x != y:
            return -1 if x < y else 1
    if la == lb:
        return 0
    return -1 if la < lb else 1


@kernel
def value_bounds(offsets, data, valid, out):
    """Indices of the least and the greatest value (bytes compared unsigned, a prefix
    before its extensions; the first of equal values) among those where ``valid``
    (uint8, one per value; empty: every value) is nonzero, into ``out[0]`` and
    ``out[1]`` (int64; -1 when no value is valid): the order of Arrow's ``min_max`` on
    strings and binary. Returns ``OK``, ``BAD_OFFSET`` (offsets decrease or pass the
    data) or ``BAD_SIZE`` (``valid`` neither empty nor one per value, ``out`` shorter
    than 2)."""
    n = offsets.shape[0] - 1
    if (valid.shape[0] != 0 and valid.shape[0] != n) or out.shape[0] < 2:
        return BAD_SIZE
    if not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSET
    every = valid.shape[0] == 0
    lo = hi = -1
    # the bounds' first sixteen bytes kept as two words: a value whose words differ
    # from a bound's is ordered by them alone (zero padding sorts a prefix first)
    l0 = l1 = h0 = h1 = np.uint64(0)
    ll = lh = offsets[0] - offsets[0]  # the bounds' lengths
    for i in range(n):
        if not every and valid[i] == 0:
            continue
        a = offsets[i]
        la = offsets[i + 1] - a
        # the two words, inline (a call passing the array costs reference counting)
        x0 = x1 = np.uint64(0)
        if la >= 16:
            for j in range(8):
                x0 = (x0 << np.uint64(8)) | np.uint64(data[a + j])
            for j in range(8, 16):
                x1 = (x1 << np.uint64(8)) | np.uint64(data[a + j])
        else:
            for j in range(min(la, 8)):
                x0 = (x0 << np.uint64(8)) | np.uint64(data[a + j])
            for j in range(8, la):
                x1 = (x1 << np.uint64(8)) | np.uint64(data[a + j])
            if la < 8:
                x0 = x0 << np.uint64(8 * (8 - la)) if la > 0 else x0
            else:
                x1 = x1 << np.uint64(8 * (16 - la)) if la > 8 else x1
        if lo < 0:
            lo = hi = i
            l0 = h0 = x0
            l1 = h1 = x1
            ll = lh = la
            continue
        # equal words: values of at most 16 bytes differ by length alone (the shorter
        # a prefix), longer ones are compared past the words
        if x0 < l0 or (x0 == l0 and (x1 < l1 or (x1 == l1 and (
                la < ll if la <= 16 and ll <= 16 else _compare(
                    data, a, la, offsets[lo], ll, 16) < 0)))):
            lo = i
            l0 = x0
            l1 = x1
            ll = la
        elif x0 > h0 or (x0 == h0 and (x1 > h1 or (x1 == h1 and (
                la > lh if la <= 16 and lh <= 16 else _compare(
                    data, a, la, offsets[hi], lh, 16) > 0)))):
            hi = i
            h0 = x0
            h1 = x1
            lh = la
    out[0] = lo
    out[1] = hi
    return OK
