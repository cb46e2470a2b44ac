"""FSST strings decoded straight from mini-block chunks, in one pass.

An FSST mini-block page keeps its compressed strings (codes, see :mod:`.fsst`) in
``Variable`` chunk buffers: ``cnt + 1`` offsets (u32, or u64 for 64-bit offsets)
counted from the start of the chunk's buffer, the codes, then padding (see
``kernels/variable.py``). Example (u32), table ``0:"ab" 1:"c"``, values ``["abc",
"", "c!"]``: offsets ``16 18 18 21``, codes ``00 01 | | 01 ff 21``, pad ``48 48 48``
→ strings ``abc``, ``""``, ``c!``.

:func:`decompress_chunks` validates each chunk's position, count and offsets, and
decodes its codes into the output without first joining the chunks' codes into one
buffer. Within a chunk the codes of all its values are decoded in one loop (no loop
per value, whose exit is a mispredicted branch every few codes); the output position
at each code is noted in a scratch array, from which the value boundaries' output
offsets are then read. An escape whose literal would be the first code of the next
value (or lie past the chunk's codes) is caught there: the literal's position is
marked. Output capacity: a code gives at most 8 bytes, so ``8 x`` the chunks' code
bytes always suffice (:func:`output_bound`); of an ``np.empty`` buffer only the pages
the result fills get touched.
"""

import numpy as np

from .._jit import kernel
from ..bytes_util import copy_bytes, read_u32, read_u64
from .fsst import (
    BAD_CODE,
    ESCAPE,
    ESCAPE_AT_END,
    N_SYMBOLS,
    OK,
    OUTPUT_TOO_SMALL,
    SWITCH,
    _check_table,
    _length_table,
    _symbol_words,
)

BAD_CHUNK = -9          # a chunk's buffer or offset table lies outside the data
BAD_CHUNK_OFFSETS = -10  # a chunk's offsets decrease or point outside its buffer
BAD_ARGS = -11          # offset width not 4 or 8, starts/sizes/counts of unequal lengths

__all__ = ["decompress_chunks", "output_bound", "BAD_CHUNK", "BAD_CHUNK_OFFSETS",
           "BAD_ARGS"]


def output_bound(src_len: int, sizes: np.ndarray) -> int:
    """Bytes of output that always suffice: 8 per byte of the chunks' buffers (each
    size clamped to ``0..src_len``, so a corrupt size cannot ask for more than the
    data could give; the kernel rejects such chunks anyway)."""
    return 8 * int(np.clip(sizes, 0, src_len).sum()) + 8


@kernel
def _rd(src, pos, w):
    return read_u32(src, pos) if w == 4 else read_u64(src, pos)


@kernel
def _fail(err, c, pos, value, status):
    err[0] = c
    err[1] = pos
    err[2] = value
    return status


@kernel
def _decode_codes(src, b, e, lut, words, out_data, q, pos):
    """Decode ``src[b:e]`` into ``out_data`` from ``q``; ``pos[i - b]`` gets the output
    position of the code at ``i`` (-1 for an escape's literal), ``pos[e - b]`` the end.
    Returns the new output position, or a status with the code's position in
    ``pos[0]``."""
    cap = out_data.shape[0]
    i = b
    while i < e:
        c = src[np.uint64(i)]
        pos[np.uint64(i - b)] = q
        ln = lut[c]
        if ln == 0:
            if c != ESCAPE:
                pos[0] = i
                return BAD_CODE
            if i + 1 >= e:
                pos[0] = i
                return ESCAPE_AT_END
            if q >= cap:
                pos[0] = i
                return OUTPUT_TOO_SMALL
            out_data[np.uint64(q)] = src[np.uint64(i + 1)]
            pos[np.uint64(i + 1 - b)] = -1
            q += 1
            i += 2
            continue
        wd = words[c]
        if q <= cap - 8:
            # all eight bytes, one store; the extra bytes are overwritten by what follows
            for k in range(8):
                out_data[np.uint64(q + k)] = np.uint8(wd >> np.uint64(8 * k) & np.uint64(0xFF))
        elif q <= cap - ln:
            r = q
            while r < q + ln:
                out_data[np.uint64(r)] = np.uint8(wd & np.uint64(0xFF))
                wd >>= np.uint64(8)
                r += 1
        else:
            pos[0] = i
            return OUTPUT_TOO_SMALL
        q += ln
        i += 1
    pos[np.uint64(e - b)] = q
    return q


@kernel
def _decode_codes_roomy(src, b, e, lut, words, out_data, q, pos):
    """:func:`_decode_codes` where the output has room for 8 bytes per code (no
    capacity check per code), four codes at a time while none of them is an escape
    (their stores and lookups then overlap: 1.25x the speed of one at a time)."""
    i = b
    one = np.uint64(1)
    while i < e:
        if i <= e - 4:
            c0 = src[np.uint64(i)]
            c1 = src[np.uint64(i + 1)]
            c2 = src[np.uint64(i + 2)]
            c3 = src[np.uint64(i + 3)]
            l0 = lut[c0]
            l1 = lut[c1]
            l2 = lut[c2]
            l3 = lut[c3]
            if (l0 != 0) & (l1 != 0) & (l2 != 0) & (l3 != 0):
                w0 = words[c0]
                w1 = words[c1]
                w2 = words[c2]
                w3 = words[c3]
                q1 = q + l0
                q2 = q1 + l1
                q3 = q2 + l2
                r = np.uint64(i - b)
                pos[r] = q
                pos[r + one] = q1
                pos[r + one + one] = q2
                pos[r + one + one + one] = q3
                for k in range(8):
                    out_data[np.uint64(q + k)] = np.uint8(w0 >> np.uint64(8 * k) & np.uint64(0xFF))
                for k in range(8):
                    out_data[np.uint64(q1 + k)] = np.uint8(w1 >> np.uint64(8 * k) & np.uint64(0xFF))
                for k in range(8):
                    out_data[np.uint64(q2 + k)] = np.uint8(w2 >> np.uint64(8 * k) & np.uint64(0xFF))
                for k in range(8):
                    out_data[np.uint64(q3 + k)] = np.uint8(w3 >> np.uint64(8 * k) & np.uint64(0xFF))
                q = q3 + l3
                i += 4
                continue
        c = src[np.uint64(i)]
        pos[np.uint64(i - b)] = q
        ln = lut[c]
        if ln == 0:
            if c != ESCAPE:
                pos[0] = i
                return BAD_CODE
            if i + 1 >= e:
                pos[0] = i
                return ESCAPE_AT_END
            out_data[np.uint64(q)] = src[np.uint64(i + 1)]
            pos[np.uint64(i + 1 - b)] = -1
            q += 1
            i += 2
            continue
        wd = words[c]
        for k in range(8):
            out_data[np.uint64(q + k)] = np.uint8(wd >> np.uint64(8 * k) & np.uint64(0xFF))
        q += ln
        i += 1
    pos[np.uint64(e - b)] = q
    return q


@kernel
def _value_offsets(src, s, cnt, w, first, last, pos, out_offsets, j):
    """``out_offsets[j + k] = pos[o_k - first]`` for the chunk's offsets ``o_k``, ``k``
    in ``1..cnt-1`` (one loop per width). Returns 0, the first ``k`` whose offset
    decreases or passes ``last``, or ``-k`` where it falls on an escape's literal."""
    prev = first
    if w == 4:
        for k in range(1, cnt):
            o = read_u32(src, s + 4 * k)
            if (o < prev) | (o > last):
                return k
            r = pos[o - first]
            if r < 0:
                return -k
            out_offsets[j + k] = r
            prev = o
    else:
        for k in range(1, cnt):
            o = read_u64(src, s + 8 * k)
            if (o < prev) | (o > last):
                return k
            r = pos[o - first]
            if r < 0:
                return -k
            out_offsets[j + k] = r
            prev = o
    return 0


@kernel
def decompress_chunks(src, starts, sizes, counts, offset_width, symbols, lens, info,
                      out_offsets, out_data, err):
    """Decode the strings of FSST mini-block chunks: chunk ``c``'s buffer is
    ``src[starts[c]:starts[c] + sizes[c]]`` holding ``counts[c]`` values.

    ``out_offsets`` (int64, at least the total count + 1) gets Arrow-style offsets from
    0, ``out_data`` the bytes (:func:`output_bound` bytes always suffice). With switch
    0 the codes are the strings. Every start, size, count and offset is checked before
    it is used; nothing is read or written outside the arguments. Returns the bytes
    written, or a negative status with ``err`` (int64, 3) = chunk, byte position in
    ``src``, value index (-1 where not known).
    """
    st = _check_table(symbols, lens, info)
    if st != OK:
        return _fail(err, -1, -1, -1, st)
    w = offset_width
    nc = starts.shape[0]
    if (w != 4 and w != 8) or sizes.shape[0] != nc or counts.shape[0] != nc:
        return _fail(err, -1, -1, -1, BAD_ARGS)
    if out_offsets.shape[0] < 1:
        return _fail(err, -1, -1, -1, OUTPUT_TOO_SMALL)
    raw = info[SWITCH] == 0
    words = np.zeros(256, np.uint64)
    _symbol_words(symbols, lens, info[N_SYMBOLS], words)
    lut = _length_table(lens, info[N_SYMBOLS])
    pos = np.empty(4097, np.int64)
    cap = out_data.shape[0]
    n_src = src.shape[0]
    p = np.int64(0)
    j = np.int64(0)
    out_offsets[0] = 0
    for c in range(nc):
        s = starts[c]
        size = sizes[c]
        cnt = counts[c]
        # compare by division so no product or sum can overflow int64
        if s < 0 or size < 0 or cnt < 0 or s > n_src or size > n_src - s \
                or cnt >= size // w:
            return _fail(err, c, s, j, BAD_CHUNK)
        first = _rd(src, s, w)
        last = _rd(src, s + cnt * w, w)
        if first < (cnt + 1) * w or first > size or last < first or last > size:
            return _fail(err, c, s, j, BAD_CHUNK_OFFSETS)
        if cnt >= out_offsets.shape[0] - j:
            return _fail(err, c, s, j, OUTPUT_TOO_SMALL)
        b = s + first
        e = s + last
        if raw:
            if last - first > cap - p:
                return _fail(err, c, s, j, OUTPUT_TOO_SMALL)
            copy_bytes(out_data, p, src, b, last - first)
        else:
            if pos.shape[0] < e - b + 1:
                pos = np.empty(e - b + 1, np.int64)
            if 8 * (e - b) <= cap - p:
                q = _decode_codes_roomy(src, b, e, lut, words, out_data, p, pos)
            else:
                q = _decode_codes(src, b, e, lut, words, out_data, p, pos)
            if q < 0:
                return _fail(err, c, pos[0], -1, q)
        # the values' boundaries: offsets 1..cnt-1 (first and last checked above)
        if raw:
            prev = first
            for k in range(1, cnt):
                o = _rd(src, s + k * w, w)
                if o < prev or o > last:
                    return _fail(err, c, s + k * w, j + k, BAD_CHUNK_OFFSETS)
                out_offsets[j + k] = p + (o - first)
                prev = o
        else:
            k = _value_offsets(src, s, cnt, w, first, last, pos, out_offsets, j)
            if k > 0:
                return _fail(err, c, s + k * w, j + k, BAD_CHUNK_OFFSETS)
            if k < 0:  # an escape's literal: the escape ended the value before
                o = _rd(src, s - k * w, w)
                return _fail(err, c, s + o - 1, j - k - 1, ESCAPE_AT_END)
        p = p + (last - first) if raw else q
        j += cnt
        out_offsets[j] = p
    return p
