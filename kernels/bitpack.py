"""FastLanes bitpacking: the 1024-value block, InlineBitpacking and OutOfLineBitpacking.

**Block.** T is the bit width of the element type (u8, u16, u32 or u64), W the packed
width (0..T) and ``LANES = 1024 // T``. A block packs 1024 values of T into
``W * LANES`` words of T. Value ``FL_ORDER[row // 8] * 16 + (row % 8) * 128 + lane``
(``FL_ORDER = 0 4 2 6 1 5 3 7``, row in 0..T, lane in 0..LANES) is stored in bits
``row * W .. row * W + W`` of lane ``lane``'s bit stream, which is the words ``lane``,
``LANES + lane``, ``2 * LANES + lane``, ... (word k holds stream bits ``k * T ..``,
least significant bit first). W = 0 stores no words; W = T stores value
``(row, lane)`` as word ``row * LANES + lane``.
Example, u8 with W = 1: the values are 8 rows of 128, value ``row * 128 + lane`` is
bit ``row`` of word ``lane``, so ``[0] * 128 + [1] + [0] * 895`` packs to
``02 00 00 ...`` (128 bytes).

**InlineBitpacking** (mini-block chunk values; block-context levels when there are at
most 1024): each 1024 values are ``[W as one T word][W * LANES words]``, W the bit
width of that block's largest value; the last block is zero-padded to 1024 and its
real count is kept elsewhere. Example: u32 ``0..1023`` is one block of W = 10:
``0a 00 00 00`` then 320 words starting ``00 00 02 10`` (values 0, 128, 256 and the
low 2 bits of 384 in lane 0's first word): 1284 bytes.

**OutOfLineBitpacking** (block-context rep/def levels, W from the description): full
blocks of ``W * LANES`` words, then a tail of ``r = n % 1024`` values packed as a
zero-padded block if ``W * (1024 - r) < (T - W) * r``, otherwise the r values as raw
T-bit words. A reader tells the forms apart by length: the tail is raw exactly when
there are ``full_blocks * W * LANES + r`` words. Example: 1025 u16 levels of W = 1
are 64 words then the last level as one raw u16 (130 bytes).

Kernels take the element type T from their arrays' dtype (unsigned; signed or float
data is passed as a ``.view`` of the unsigned type), so each compiles at most four
times (times read-only/writable inputs), and W as an argument. The ``*_chunks``
kernels take a uint8 buffer: chunks can sit at any address, so each chunk's bytes are
copied into an aligned scratch array and read as little-endian words there (on a
little-endian host, like every numpy view of file bytes in lancenb).
"""

import numpy as np

from ._jit import kernel
from .bytes_util import read_uint

__all__ = [
    "BLOCK", "OK", "BAD_WIDTH", "TRUNCATED", "BAD_LENGTH", "BAD_COUNT", "OUT_OF_BOUNDS",
    "TOO_WIDE", "BAD_OUTPUT",
    "pack_block", "unpack_block", "bit_width", "block_bit_widths", "inline_chunk_words",
    "inline_pack", "inline_unpack", "inline_unpack_chunks", "inline_gather_chunks",
    "outofline_words",
    "outofline_pack", "outofline_unpack", "outofline_unpack_chunks",
]

BLOCK = 1024

OK = 0
BAD_WIDTH = -1       # a bit width above T (or below 0)
TRUNCATED = -2       # the words (or a chunk's bytes) end before the layout does
BAD_LENGTH = -3      # more words than the layout has, or bytes not a whole number of words
BAD_COUNT = -4       # a value count is negative, or above 1024 for one inline block
OUT_OF_BOUNDS = -5   # a chunk's byte range lies outside the data buffer
TOO_WIDE = -6        # pack: a value needs more than W bits
BAD_OUTPUT = -7      # the caller's arrays are not sized (or typed) as documented
BAD_POSITION = -8    # a value asked for lies past its chunk's count

FL_ORDER = np.array([0, 4, 2, 6, 1, 5, 3, 7], dtype=np.int64)
INV_ORDER = np.argsort(FL_ORDER)  # the row group of each FL_ORDER position

_U = np.uint64  # indexing with unsigned integers skips numba's negative-index fix-up,
#                 which would otherwise turn every lane loop into gathers and scatters
# Helper kernels get positions and counts as these, not as literals: numba compiles a
# helper once more for every distinct literal argument.
_0 = np.int64(0)
_BLOCK = np.int64(BLOCK)


# -- block cores (no validation) ---------------------------------------------------------

@kernel
def _row_start(row):
    return FL_ORDER[row >> 3] * 16 + (row & 7) * 128


@kernel
def _unpack(words, wpos, width, out, opos):
    """Block at ``words[wpos:]`` of width ``width`` -> ``out[opos:opos + 1024]``."""
    t = np.iinfo(out.dtype).bits
    tp = out.dtype.type
    # LLVM fully unrolls a lane loop of a known 32 or 16 iterations into scalar code; a
    # lane count it cannot see through (the run-time itemsize) keeps it a loop, which
    # vectorises. The 64 and 128 lanes of u16 and u8 vectorise as they are.
    lanes = BLOCK // t if t <= 16 else BLOCK // (8 * words.itemsize)
    if width == 0:
        for i in range(BLOCK):
            out[_U(opos + i)] = 0
        return
    if width == t:
        for row in range(t):
            src = wpos + row * lanes
            dst = opos + _row_start(row)
            for lane in range(lanes):
                out[_U(dst + lane)] = words[_U(src + lane)]
        return
    mask = tp((_U(1) << _U(width)) - _U(1))
    for row in range(t):
        bit = row * width
        first = bit // t
        s = bit % t
        if s + width > t:  # the value continues in the lane's next word
            second = first + 1
            r = t - s
        else:              # a left shift by T - 1 leaves nothing under a W < T bit mask
            second = first
            r = t - 1
        sh = tp(s)
        rs = tp(r)
        a = wpos + first * lanes
        b = wpos + second * lanes
        dst = opos + _row_start(row)
        for lane in range(lanes):
            lo = np.right_shift(words[_U(a + lane)], sh)
            hi = np.left_shift(words[_U(b + lane)], rs)
            out[_U(dst + lane)] = np.bitwise_and(np.bitwise_or(lo, hi), mask)


@kernel
def _pack(values, vpos, width, out, wpos):
    """``values[vpos:vpos + 1024]`` (each < 2**width) -> ``width * LANES`` words at
    ``out[wpos:]``."""
    t = np.iinfo(out.dtype).bits
    tp = out.dtype.type
    lanes = BLOCK // t if t <= 16 else BLOCK // (8 * out.itemsize)  # as in _unpack
    if width == 0:
        return
    if width == t:
        for row in range(t):
            src = vpos + _row_start(row)
            dst = wpos + row * lanes
            for lane in range(lanes):
                out[_U(dst + lane)] = values[_U(src + lane)]
        return
    for i in range(width * lanes):
        out[_U(wpos + i)] = 0
    for row in range(t):
        bit = row * width
        s = bit % t
        a = wpos + (bit // t) * lanes
        src = vpos + _row_start(row)
        sh = tp(s)
        for lane in range(lanes):
            v = values[_U(src + lane)]
            out[_U(a + lane)] = np.bitwise_or(out[_U(a + lane)], np.left_shift(v, sh))
        if s + width > t:
            b = a + lanes
            rs = tp(t - s)
            for lane in range(lanes):
                v = values[_U(src + lane)]
                out[_U(b + lane)] = np.bitwise_or(out[_U(b + lane)], np.right_shift(v, rs))


@kernel
def _or_range(values, start, stop):
    acc = values.dtype.type(0)
    for i in range(start, stop):
        acc = np.bitwise_or(acc, values[_U(i)])
    return _U(acc)


@kernel
def _bit_length(x):
    x = _U(x)
    n = 0
    while x != _U(0):
        x >>= _U(1)
        n += 1
    return n


@kernel
def _copy(src, spos, dst, dpos, n):
    # an explicit loop: numba's slice assignment checks for overlap and does not vectorise
    for i in range(n):
        dst[_U(dpos + i)] = src[_U(spos + i)]


@kernel
def _tail_is_packed(r, width, t):
    """The writer's choice for a tail of ``r`` (1..1023) values: pack it padded?"""
    return width * (BLOCK - r) < (t - width) * r


@kernel
def _outofline_form(nwords, width, n, t):
    """1 if ``nwords`` words hold ``n`` values with a raw tail, 0 if every block is packed,
    else a negative status."""
    full = n // BLOCK
    r = n % BLOCK
    wpb = width * (BLOCK // t)
    base = full * wpb
    if r == 0:
        if nwords < base:
            return TRUNCATED
        if nwords > base:
            return BAD_LENGTH
        return 0
    if nwords == base + r:   # checked first: this is how the reference reader decides
        return 1
    if nwords == base + wpb:
        return 0
    if nwords > base + r and nwords > base + wpb:
        return BAD_LENGTH
    return TRUNCATED


@kernel
def _outofline_decode(words, wpos, width, n, raw, out, opos, tmp):
    full = n // BLOCK
    r = n % BLOCK
    wpb = width * (BLOCK // np.iinfo(out.dtype).bits)
    for b in range(full):
        _unpack(words, wpos + b * wpb, width, out, opos + b * BLOCK)
    if r:
        if raw:
            _copy(words, wpos + full * wpb, out, opos + full * BLOCK, r)
        else:
            _unpack(words, wpos + full * wpb, width, tmp, _0)
            _copy(tmp, _0, out, opos + full * BLOCK, r)


# -- single blocks ---------------------------------------------------------------------

@kernel
def pack_block(values, width, out):
    """Pack 1024 ``values`` at ``width`` bits into ``out`` (``width * 1024 // T`` words).

    Returns OK, BAD_WIDTH, TOO_WIDE (a value needs more bits), BAD_LENGTH (``values``
    is not 1024 long) or BAD_OUTPUT (``out`` has the wrong length or element size).
    """
    t = np.iinfo(out.dtype).bits
    if np.iinfo(values.dtype).bits != t:
        return BAD_OUTPUT
    if width < 0 or width > t:
        return BAD_WIDTH
    if values.shape[0] != BLOCK:
        return BAD_LENGTH
    if out.shape[0] != width * (BLOCK // t):
        return BAD_OUTPUT
    if width < t and _or_range(values, _0, _BLOCK) >> _U(width) != _U(0):
        return TOO_WIDE
    _pack(values, _0, width, out, _0)
    return OK


@kernel
def unpack_block(words, width, out):
    """Unpack one block of ``width``-bit values into ``out`` (1024 elements).

    Returns OK, BAD_WIDTH, TRUNCATED / BAD_LENGTH (``words`` shorter / longer than
    ``width * 1024 // T``) or BAD_OUTPUT.
    """
    t = np.iinfo(out.dtype).bits
    if np.iinfo(words.dtype).bits != t or out.shape[0] != BLOCK:
        return BAD_OUTPUT
    if width < 0 or width > t:
        return BAD_WIDTH
    need = width * (BLOCK // t)
    if words.shape[0] < need:
        return TRUNCATED
    if words.shape[0] > need:
        return BAD_LENGTH
    _unpack(words, _0, width, out, _0)
    return OK


@kernel
def bit_width(values):
    """Bits needed by the largest of the unsigned ``values`` (0 when all are 0 or there
    are none)."""
    return _bit_length(_or_range(values, _0, values.shape[0]))


@kernel
def block_bit_widths(values, out):
    """Bit width of each 1024-value block of ``values`` (the last may be shorter) into
    ``out`` (int64, ``ceil(n / 1024)``). Returns OK or BAD_OUTPUT."""
    n = values.shape[0]
    nb = (n + BLOCK - 1) // BLOCK
    if out.shape[0] != nb:
        return BAD_OUTPUT
    for b in range(nb):
        out[b] = _bit_length(_or_range(values, b * BLOCK, min(n, (b + 1) * BLOCK)))
    return OK


# -- InlineBitpacking ------------------------------------------------------------------

def inline_chunk_words(values: np.ndarray) -> np.ndarray:
    """Words of T in each inline chunk of ``values`` (``1 + W * 1024 // T``), for sizing
    the output of :func:`inline_pack`."""
    widths = np.empty((values.shape[0] + BLOCK - 1) // BLOCK, dtype=np.int64)
    block_bit_widths(values, widths)
    return 1 + widths * (BLOCK // (8 * values.dtype.itemsize))


@kernel
def inline_pack(values, out):
    """Pack ``values`` as inline chunks (one per 1024 values) into ``out``.

    Returns the number of words written, or BAD_OUTPUT when ``out`` holds fewer than
    ``inline_chunk_words(values).sum()`` words (nothing is written then).
    """
    t = np.iinfo(out.dtype).bits
    if np.iinfo(values.dtype).bits != t:
        return BAD_OUTPUT
    lanes = BLOCK // t
    n = values.shape[0]
    nb = (n + BLOCK - 1) // BLOCK
    total = 0
    for b in range(nb):
        total += 1 + _bit_length(_or_range(values, b * BLOCK, min(n, (b + 1) * BLOCK))) * lanes
    if out.shape[0] < total:
        return BAD_OUTPUT
    pad = np.empty(BLOCK, values.dtype)
    p = 0
    for b in range(nb):
        start = b * BLOCK
        cnt = min(BLOCK, n - start)
        w = _bit_length(_or_range(values, start, start + cnt))
        out[p] = w
        # staging every block in pad compiles _pack once, not also for read-only values
        _copy(values, start, pad, _0, cnt)
        pad[cnt:] = 0
        _pack(pad, _0, w, out, p + 1)
        p += 1 + w * lanes
    return p


@kernel
def inline_unpack(words, n, out):
    """Unpack ``n`` values stored as back-to-back inline chunks (``ceil(n / 1024)`` of
    them, exactly filling ``words``) into ``out`` (``n`` elements).

    Returns OK, BAD_WIDTH (a chunk's W exceeds T), TRUNCATED (the words end inside a
    chunk), BAD_LENGTH (words left over) or BAD_OUTPUT. ``out`` is untouched on error.
    """
    t = np.iinfo(out.dtype).bits
    if np.iinfo(words.dtype).bits != t or n < 0 or out.shape[0] != n:
        return BAD_OUTPUT
    lanes = BLOCK // t
    nw = words.shape[0]
    nb = (n + BLOCK - 1) // BLOCK
    p = 0
    for _ in range(nb):
        if p >= nw:
            return TRUNCATED
        if _U(words[p]) > _U(t):
            return BAD_WIDTH
        need = np.int64(words[p]) * lanes
        if need > nw - p - 1:
            return TRUNCATED
        p += 1 + need
    if p != nw:
        return BAD_LENGTH
    tmp = np.empty(BLOCK, out.dtype)
    p = 0
    for b in range(nb):
        w = np.int64(words[p])
        start = b * BLOCK
        cnt = min(BLOCK, n - start)
        if cnt == BLOCK:
            _unpack(words, p + 1, w, out, start)
        else:
            _unpack(words, p + 1, w, tmp, _0)
            _copy(tmp, _0, out, start, cnt)
        p += 1 + w * lanes
    return OK


@kernel
def _inline_chunk_status(data, s, size, cnt, t):
    """OK, or why the inline chunk of ``size`` bytes at ``data[s]`` holding ``cnt``
    values of ``t`` bits cannot be read (the statuses of :func:`inline_unpack_chunks`)."""
    isz = t // 8
    if cnt < 0 or cnt > BLOCK:
        return BAD_COUNT
    if s < 0 or size < 0 or s > data.shape[0] or size > data.shape[0] - s:
        return OUT_OF_BOUNDS
    if size < isz:
        return TRUNCATED
    w = read_uint(data, s, isz)
    if w > _U(t):
        return BAD_WIDTH
    need = (1 + np.int64(w) * (BLOCK // t)) * isz
    if size < need:
        return TRUNCATED
    if size > need:
        return BAD_LENGTH
    return OK


@kernel
def inline_unpack_chunks(data, starts, sizes, counts, out, err):
    """Unpack mini-block chunks, each one inline block of ``sizes[c]`` bytes at
    ``data[starts[c]]`` (uint8, any alignment) holding ``counts[c]`` (0..1024) values,
    into ``out`` (T, ``sum(counts)`` elements), chunk after chunk.

    Every chunk is checked before anything is written: returns OK, BAD_COUNT,
    OUT_OF_BOUNDS, TRUNCATED (no room for the width word or the packed words),
    BAD_WIDTH, BAD_LENGTH (bytes beyond the block) or BAD_OUTPUT. On the data errors
    ``err`` (int64[2]) gets the chunk and its start.
    """
    t = np.iinfo(out.dtype).bits
    isz = t // 8
    lanes = BLOCK // t
    nc = starts.shape[0]
    if sizes.shape[0] != nc or counts.shape[0] != nc or err.shape[0] < 2:
        return BAD_OUTPUT
    total = np.int64(0)
    for c in range(nc):
        status = _inline_chunk_status(data, starts[c], sizes[c], counts[c], np.int64(t))
        if status != OK:
            err[0] = c
            err[1] = starts[c]
            return status
        total += counts[c]
    if total != out.shape[0]:
        return BAD_OUTPUT
    scratch = np.empty(BLOCK, out.dtype)  # the words, copied out of the (unaligned) bytes
    raw = scratch.view(np.uint8)
    tmp = np.empty(BLOCK, out.dtype)
    j = np.int64(0)  # not the literal 0 (see _0)
    for c in range(nc):
        s = starts[c]
        cnt = counts[c]
        w = np.int64(read_uint(data, s, isz))
        _copy(data, s + isz, raw, _0, w * lanes * isz)
        if cnt == BLOCK:
            _unpack(scratch, _0, w, out, j)
        else:
            _unpack(scratch, _0, w, tmp, _0)
            _copy(tmp, _0, out, j, cnt)
        j += cnt
    return OK


@kernel
def inline_gather_chunks(data, starts, sizes, counts, slot, local, out, err):
    """The values at positions ``local[k]`` of chunks ``slot[k]`` of the inline chunks
    :func:`inline_unpack_chunks` reads, into ``out[k]``, without unpacking the chunks:
    value ``v`` of a chunk of width W is stream bits ``row * W ..`` of lane
    ``v % 128 % LANES``, with ``row = INV_ORDER[(v % 128 - lane) // 16] * 8 + v // 128``.

    The chunks ``slot`` names are checked (in chunk order) as
    :func:`inline_unpack_chunks` checks them, with the same statuses and ``err``
    (chunk, start); then the positions: BAD_POSITION (``err``: the position's index
    in ``local``, the chunk) for one outside ``0..counts[chunk]``. BAD_OUTPUT when
    ``slot`` names no chunk or the arrays' lengths disagree. ``out`` is untouched on
    error.
    """
    t = np.iinfo(out.dtype).bits
    isz = t // 8
    lanes = BLOCK // t
    nc = starts.shape[0]
    n = slot.shape[0]
    if (sizes.shape[0] != nc or counts.shape[0] != nc or err.shape[0] < 2
            or local.shape[0] != n or out.shape[0] != n):
        return BAD_OUTPUT
    used = np.zeros(nc, np.bool_)
    for k in range(n):
        c = slot[k]
        if c < 0 or c >= nc:
            return BAD_OUTPUT
        used[c] = True
    for c in range(nc):
        if not used[c]:
            continue
        status = _inline_chunk_status(data, starts[c], sizes[c], counts[c], np.int64(t))
        if status != OK:
            err[0] = c
            err[1] = starts[c]
            return status
    for k in range(n):
        v = local[k]
        if v < 0 or v >= counts[slot[k]]:
            err[0] = k
            err[1] = slot[k]
            return BAD_POSITION
    for k in range(n):
        s = starts[slot[k]]
        v = local[k]
        w = np.int64(read_uint(data, s, isz))
        if w == 0:
            out[k] = 0
            continue
        m = v % 128
        lane = m % lanes
        row = INV_ORDER[(m - lane) // 16] * 8 + v // 128
        bit = row * w
        lo = s + isz + ((bit // t) * lanes + lane) * isz
        sh = bit % t
        val = read_uint(data, lo, isz) >> _U(sh)
        if sh + w > t:  # the value goes on in the lane's next word
            val |= read_uint(data, lo + lanes * isz, isz) << _U(t - sh)
        if w < t:
            val &= (_U(1) << _U(w)) - _U(1)
        out[k] = val
    return OK


# -- OutOfLineBitpacking ---------------------------------------------------------------

def outofline_words(n: int, width: int, bits: int) -> int:
    """Words of ``bits`` bits that :func:`outofline_pack` writes for ``n`` values."""
    lanes = BLOCK // bits
    full, r = divmod(n, BLOCK)
    size = full * width * lanes
    if r:
        size += width * lanes if width * (BLOCK - r) < (bits - width) * r else r
    return size


@kernel
def outofline_pack(values, width, out):
    """Pack ``values`` at ``width`` bits in the out-of-line form (tail rule in the module
    docstring) into ``out``. Returns the number of words written (see
    :func:`outofline_words`), or BAD_WIDTH, TOO_WIDE or BAD_OUTPUT (``out`` too small);
    nothing is written on error."""
    t = np.iinfo(out.dtype).bits
    if np.iinfo(values.dtype).bits != t:
        return BAD_OUTPUT
    if width < 0 or width > t:
        return BAD_WIDTH
    n = values.shape[0]
    if width < t and _or_range(values, _0, n) >> _U(width) != _U(0):
        return TOO_WIDE
    lanes = BLOCK // t
    wpb = width * lanes
    full = n // BLOCK
    r = n % BLOCK
    packed_tail = r > 0 and _tail_is_packed(r, width, t)
    size = full * wpb + (wpb if packed_tail else r)
    if out.shape[0] < size:
        return BAD_OUTPUT
    pad = np.zeros(BLOCK, values.dtype)  # as in inline_pack
    for b in range(full):
        _copy(values, b * BLOCK, pad, _0, _BLOCK)
        _pack(pad, _0, width, out, b * wpb)
    if packed_tail:
        _copy(values, full * BLOCK, pad, _0, r)
        pad[r:] = 0
        _pack(pad, _0, width, out, full * wpb)
    elif r:
        _copy(values, full * BLOCK, out, full * wpb, r)
    return size


@kernel
def outofline_unpack(words, width, n, out):
    """Unpack ``n`` values of ``width`` bits in the out-of-line form into ``out``
    (``n`` elements); the tail's form is told from ``len(words)``.

    Returns OK, BAD_WIDTH, TRUNCATED / BAD_LENGTH (``words`` is neither length the
    form allows; shorter / longer) or BAD_OUTPUT. ``out`` is untouched on error.
    """
    t = np.iinfo(out.dtype).bits
    if np.iinfo(words.dtype).bits != t or n < 0 or out.shape[0] != n:
        return BAD_OUTPUT
    if width < 0 or width > t:
        return BAD_WIDTH
    form = _outofline_form(words.shape[0], width, n, t)
    if form < 0:
        return form
    tmp = np.empty(BLOCK, out.dtype)
    _outofline_decode(words, _0, width, n, form == 1, out, _0, tmp)
    return OK


@kernel
def outofline_unpack_chunks(data, starts, sizes, counts, width, out, err):
    """Unpack mini-block level buffers, each ``sizes[c]`` bytes at ``data[starts[c]]``
    (uint8, any alignment) holding ``counts[c]`` values in the out-of-line form at the
    page's ``width``, into ``out`` (T, ``sum(counts)`` elements).

    Every chunk is checked before anything is written: returns OK, BAD_WIDTH, BAD_COUNT
    (negative, or more than ``out`` holds), OUT_OF_BOUNDS, BAD_LENGTH (bytes not whole
    words, or too many), TRUNCATED or BAD_OUTPUT. On the data errors ``err`` (int64[2])
    gets the chunk and its start.
    """
    t = np.iinfo(out.dtype).bits
    isz = t // 8
    nc = starts.shape[0]
    if sizes.shape[0] != nc or counts.shape[0] != nc or err.shape[0] < 2:
        return BAD_OUTPUT
    if width < 0 or width > t:
        return BAD_WIDTH
    total = np.int64(0)
    most = 0
    for c in range(nc):
        s = starts[c]
        size = sizes[c]
        cnt = counts[c]
        if cnt < 0 or cnt > out.shape[0]:  # the second bounds every product below
            status = BAD_COUNT
        elif s < 0 or size < 0 or s > data.shape[0] or size > data.shape[0] - s:
            status = OUT_OF_BOUNDS
        elif size % isz != 0:
            status = BAD_LENGTH
        else:
            status = _outofline_form(size // isz, width, cnt, t)
        if status < 0:
            err[0] = c
            err[1] = s
            return status
        total += cnt
        most = max(most, size // isz)
    if total != out.shape[0]:
        return BAD_OUTPUT
    scratch = np.empty(most, out.dtype)  # the words, copied out of the (unaligned) bytes
    raw = scratch.view(np.uint8)
    tmp = np.empty(BLOCK, out.dtype)
    j = np.int64(0)  # not the literal 0 (see _0)
    for c in range(nc):
        nw = sizes[c] // isz
        cnt = counts[c]
        _copy(data, starts[c], raw, _0, sizes[c])
        raw_tail = _outofline_form(nw, width, cnt, t) == 1
        _outofline_decode(scratch, _0, width, cnt, raw_tail, out, j, tmp)
        j += cnt
    return OK
