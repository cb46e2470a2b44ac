"""Mini-block chunk framing (Lance 2.1/2.2), packing and parsing.

A mini-block page stores its values in chunks. Buffer 0 of the page holds one
little-endian word per chunk (u16, or u32 in 2.2 "large chunk" pages)::

    word = ((chunk_bytes // 8 - 1) << 4) | log2(values in chunk)

where a ``log2`` of 0 on the last chunk means "the rest of the page's items".
Buffer 1 holds the chunks back to back, each one 8-byte aligned::

    u16 num_levels
    u16 size of each level buffer (rep, then def; only those the page has)
    uN  size of each value buffer (N = 16, or 32 in large-chunk pages)
    0xFE padding to a multiple of 8
    each buffer, in the order above, followed by 0xFE padding to a multiple of 8

Example: one chunk of int32 ``[1, 2, 3]`` without levels is
``00 00 0c 00 fe fe fe fe | 01 00 00 00 02 00 00 00 03 00 00 00 | fe fe fe fe`` (24
bytes) and its metadata word is ``(24 // 8 - 1) << 4 | 0 = 0x0020``.
"""

import numpy as np

from ._jit import kernel
from .bitpack import BAD_OUTPUT, outofline_pack
from .bytes_util import read_uint, write_uint

OK = 0
# parse_chunks statuses; err[0] is the chunk, err[1] the byte offset in the data buffer
CHUNKS_PAST_END = -1      # chunk sizes add up to more than the data buffer
BAD_ITEM_COUNT = -2       # counts do not add up to the page's item count
HEADER_PAST_CHUNK = -3    # the chunk header does not fit in the chunk
BUFFER_PAST_CHUNK = -4    # a buffer size points past the end of its chunk
BAD_BOUNDS = -5           # repetition_index: chunk level bounds out of order or range

PAD_BYTE = 0xFE


def header_bytes(n_level_bufs: int, n_value_bufs: int, size_width: int) -> int:
    """Size of a chunk header, padding included."""
    raw = 2 + 2 * n_level_bufs + size_width * n_value_bufs
    return (raw + 7) // 8 * 8


def chunk_bytes(sizes: np.ndarray, n_level_bufs: int, size_width: int) -> np.ndarray:
    """Bytes of each chunk, given its buffer sizes ``sizes[chunk, buffer]``."""
    n_value_bufs = sizes.shape[1] - n_level_bufs
    padded = (sizes + 7) // 8 * 8
    return padded.sum(axis=1) + header_bytes(n_level_bufs, n_value_bufs, size_width)


@kernel
def pack_chunks(level_src, value_src, starts, sizes, num_levels, n_level_bufs, size_width,
                out, out_starts):
    """Write chunks into ``out`` at ``out_starts`` (multiples of 8).

    Buffer ``b`` of chunk ``c`` is ``src[starts[c, b]: starts[c, b] + sizes[c, b]]``,
    where ``src`` is ``level_src`` for the first ``n_level_bufs`` buffers (rep/def
    levels, u16 sizes) and ``value_src`` for the rest (value buffers, sizes of
    ``size_width`` bytes). The caller sizes ``out`` with :func:`chunk_bytes`.
    """
    nc = starts.shape[0]
    nb = starts.shape[1]
    for c in range(nc):
        base = out_starts[c]
        write_uint(out, base, num_levels[c], 2)
        p = base + 2
        for b in range(nb):
            w = 2 if b < n_level_bufs else size_width
            write_uint(out, p, sizes[c, b], w)
            p += w
        while (p - base) % 8 != 0:
            out[p] = PAD_BYTE
            p += 1
        for b in range(nb):
            s = starts[c, b]
            n = sizes[c, b]
            if b < n_level_bufs:
                out[p:p + n] = level_src[s:s + n]
            else:
                out[p:p + n] = value_src[s:s + n]
            p += n
            while (p - base) % 8 != 0:
                out[p] = PAD_BYTE
                p += 1
    return OK


@kernel
def outofline_pack_chunks(values, bounds, width, word_starts, out):
    """Out-of-line bitpack each chunk's values (``values[bounds[c]:bounds[c + 1]]``,
    e.g. a page's rep or def levels) at ``width`` bits into ``out`` from word
    ``word_starts[c]`` on: one call instead of one :func:`bitpack.outofline_pack` per
    chunk, with the same words. Returns OK, or the status of the first chunk that
    fails (``bitpack.BAD_OUTPUT`` when ``out`` is too small; nothing more is written
    then)."""
    nc = bounds.shape[0] - 1
    if word_starts.shape[0] < nc:
        return BAD_OUTPUT
    for c in range(nc):
        s = word_starts[c]
        if s < 0 or s > out.shape[0]:
            return BAD_OUTPUT
        got = outofline_pack(values[bounds[c]:bounds[c + 1]], width, out[s:])
        if got < 0:
            return got
    return OK


@kernel
def repetition_index(rep, max_rep, lb, out):
    """A mini-block page's repetition index in one pass over its rep levels.

    Chunk ``c`` holds levels ``lb[c]:lb[c + 1]`` (non-empty chunks). ``out`` (u64,
    ``2 * chunks``) gets per chunk ``[rows that end in it, levels left over after its
    last row start]``, counted as the reference does: a row start other than the
    chunk's first level ends a row; with no row start, the whole chunk is left over;
    when the next chunk opens with a row start, the leftover levels complete a row
    (counted, none left over); the last chunk ends its last row and leaves nothing.
    Returns OK or BAD_BOUNDS (``out`` too small, or ``lb`` not a rising cut of
    ``rep``).
    """
    nc = lb.shape[0] - 1
    if nc < 0 or out.shape[0] < 2 * nc or (nc and (lb[0] < 0 or lb[nc] > rep.shape[0])):
        return BAD_BOUNDS
    for c in range(nc):
        if lb[c + 1] <= lb[c]:
            return BAD_BOUNDS
    for c in range(nc):
        s = lb[c]
        e = lb[c + 1]
        rows = 0
        last = -1
        for i in range(s, e):
            if rep[i] == max_rep:
                if i > s:
                    rows += 1
                last = i
        left = e - last if last >= 0 else e - s
        if c == nc - 1:
            rows += 1
            left = 0
        elif rep[e] == max_rep and left != 0:
            rows += 1
            left = 0
        out[2 * c] = rows
        out[2 * c + 1] = left
    return OK


@kernel
def parse_chunks(words, data, chunk_pos, num_items, n_level_bufs, n_value_bufs, size_width,
                 out_items, out_levels, out_starts, out_sizes, err):
    """Check every chunk and locate its buffers.

    Chunk ``c`` starts at ``data[chunk_pos[c]]`` (chunks read for random access need
    not be adjacent). Fills, per chunk: ``out_items`` (values in the chunk),
    ``out_levels`` (rep/def entries), ``out_starts``/``out_sizes`` (``[chunk, buffer]``
    positions in ``data``). Returns 0 or a negative status; ``err`` gets the chunk
    and byte position.
    """
    nc = words.shape[0]
    nb = n_level_bufs + n_value_bufs
    hdr = 2 + 2 * n_level_bufs + size_width * n_value_bufs
    hdr = (hdr + 7) // 8 * 8
    items = np.int64(0)
    for c in range(nc):
        pos = chunk_pos[c]
        w = np.int64(words[c])
        nbytes = ((w >> 4) + 1) * 8
        log2 = w & 0xF
        err[0] = c
        err[1] = pos
        if log2 == 0:
            if c != nc - 1:
                return BAD_ITEM_COUNT
            cnt = num_items - items
            if cnt <= 0:
                return BAD_ITEM_COUNT
        else:
            cnt = np.int64(1) << log2
        if pos < 0 or pos > data.shape[0] or nbytes > data.shape[0] - pos:
            return CHUNKS_PAST_END
        if hdr > nbytes:
            return HEADER_PAST_CHUNK
        out_items[c] = cnt
        out_levels[c] = np.int64(read_uint(data, pos, 2))
        p = pos + 2
        bp = pos + hdr
        end = pos + nbytes
        for b in range(nb):
            wd = 2 if b < n_level_bufs else size_width
            size = np.int64(read_uint(data, p, wd))
            p += wd
            if size > end - bp:
                err[1] = p - wd
                return BUFFER_PAST_CHUNK
            out_starts[c, b] = bp
            out_sizes[c, b] = size
            bp = pos + (bp + size - pos + 7) // 8 * 8
        items += cnt
    if items != num_items:
        err[0] = nc - 1
        return BAD_ITEM_COUNT
    return OK
