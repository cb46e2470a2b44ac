"""FSST string compression (the ``Fsst`` encoding): symbol tables, compression and
decompression over Arrow-style offsets.

A table maps codes ``0..n-1`` (``n <= 255``) to symbols of 1..8 bytes; code 255
(``ESCAPE``) means "the next byte is a literal". A compressed value is its codes
back to back, one value per input value, so the offsets of the compressed values
are those of the strings they came from. Example, table ``0:"ab" 1:"c"``:
``"abcab!"`` → ``00 01 00 ff 21``.

The table travels as a fixed 2312-byte blob (``Fsst.symbol_table``)::

    u64 LE  0x46535354 << 32 | switch << 24 | suffix_lim << 16 | terminator << 8 | n
    n x u64 LE  symbols, first byte in the low byte, zero past the symbol's length
    n x u8      symbol lengths (1..8), right after the n symbols
    zero fill up to 2312 bytes

The same example table (switch 1, suffix_lim 0, terminator 0) starts
``02 00 00 01 54 53 53 46 | 61 62 00 00 00 00 00 00 | 63 00 .. 00 | 02 01 | 00 ..``.
``switch == 0`` means the values are stored raw: the reference does that when handed
less than 32 KiB (a small page forced to FSST by ``lance-encoding:compression=fsst``),
and its table is then the magic alone. ``suffix_lim`` and ``terminator`` only steer the
reference's compressor; its decoder ignores them, and so does this one. The reference
samples with an OS-seeded generator, so its tables (and page sizes) differ from run to
run; :func:`sample_strings` is seeded.

In the kernels a table is three arrays: ``symbols`` (uint8, 256 x 8), ``lens``
(uint8, 256) and ``info`` (int64, 4: ``SWITCH``, ``SUFFIX_LIM``, ``TERMINATOR``,
``N_SYMBOLS``). Bytes of a symbol past its length and rows past ``n`` are ignored.

Tables are built by :mod:`.fsst_build`. Matching is greedy longest-match at every
position, in the table builder and in :func:`compress` alike.
"""

import numpy as np

from .._jit import kernel

OK = 0
BAD_TABLE_SIZE = -1    # the serialised table is not TABLE_BYTES long
BAD_MAGIC = -2         # the header's high 32 bits are not "FSST"
BAD_SWITCH = -3        # switch is neither 0 nor 1
BAD_SYMBOL = -4        # n > 255, a length outside 1..8, a field outside 0..255, bad shapes
BAD_OFFSETS = -5       # offsets decrease or point outside the buffer
BAD_CODE = -6          # a code at or past n that is not the escape
ESCAPE_AT_END = -7     # an escape is the last byte of a value
OUTPUT_TOO_SMALL = -8  # a caller-allocated output is smaller than needed

TABLE_BYTES = 8 + 256 * 8 + 256
MAGIC = 0x46535354
ESCAPE = 255
MAX_SYMBOLS = 255
MAX_SYMBOL_LEN = 8
SWITCH, SUFFIX_LIM, TERMINATOR, N_SYMBOLS = 0, 1, 2, 3

# pylance's thresholds for choosing FSST (input bytes, longest value)
LEAST_INPUT_SIZE = 32 * 1024
LEAST_INPUT_MAX_LENGTH = 5
HASH_BITS = 12            # buckets of multi-byte symbols, by their first two bytes
MASKS = np.array([0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [(1 << 64) - 1],
                 np.uint64)


def new_table():
    """Empty ``(symbols, lens, info)`` arrays."""
    return (np.zeros((256, 8), np.uint8), np.zeros(256, np.uint8), np.zeros(4, np.int64))


# -- helpers -------------------------------------------------------------------------------

@kernel
def _load(buf, i, k):
    """The ``k`` (0..8) bytes at ``buf[i]`` as a little-endian uint64."""
    w = np.uint64(0)
    if k >= 8:
        for j in range(8):
            w |= np.uint64(buf[i + j]) << np.uint64(8 * j)
    else:
        for j in range(k):
            w |= np.uint64(buf[i + j]) << np.uint64(8 * j)
    return w


@kernel
def _bucket(w):
    x = np.int64(w & np.uint64(0xFFFF))
    return ((x * 0x9E3779B1) >> (32 - HASH_BITS)) & ((1 << HASH_BITS) - 1)


@kernel
def _bad_shapes(symbols, lens, info):
    return info.shape[0] < 4 or lens.shape[0] != 256 or symbols.shape[0] != 256 \
        or symbols.shape[1] != 8


@kernel
def _check_table(symbols, lens, info):
    if _bad_shapes(symbols, lens, info):
        return BAD_SYMBOL
    if info[SWITCH] != 0 and info[SWITCH] != 1:
        return BAD_SWITCH
    n = info[N_SYMBOLS]
    if n < 0 or n > MAX_SYMBOLS or info[SUFFIX_LIM] < 0 or info[SUFFIX_LIM] > 255 \
            or info[TERMINATOR] < 0 or info[TERMINATOR] > 255:
        return BAD_SYMBOL
    for c in range(n):
        if lens[c] < 1 or lens[c] > MAX_SYMBOL_LEN:
            return BAD_SYMBOL
    return OK


@kernel
def _check_offsets(offsets, size, err):
    """0 <= offsets[0] <= ... <= offsets[-1] <= size, at least one offset."""
    n = offsets.shape[0] - 1
    if n < 0:
        err[0] = 0
        err[1] = 0
        return BAD_OFFSETS
    prev = np.int64(0)
    for k in range(n + 1):
        o = offsets[k]
        if o < prev or o > size:
            err[0] = k
            err[1] = o
            return BAD_OFFSETS
        prev = o
    return OK


@kernel
def _copy_raw(offsets, src, out_offsets, out_data):
    """Switch 0: the values as they are (offsets validated, ``out_offsets`` sized)."""
    n = offsets.shape[0] - 1
    total = offsets[n] - offsets[0]
    if out_data.shape[0] < total:
        return OUTPUT_TOO_SMALL
    out_data[:total] = src[offsets[0]:offsets[n]]
    for s in range(n + 1):
        out_offsets[s] = offsets[s] - offsets[0]
    return total


@kernel
def _symbol_words(symbols, lens, n, vals):
    """``vals[c]``: symbol ``c`` as a uint64, masked to its length."""
    for c in range(n):
        vals[c] = _load(symbols[c], 0, 8) & MASKS[lens[c]]


@kernel
def _build_matcher(vals, lens, lo, hi, least, byte_code, bstart, bval, bmask, binfo):
    """Lookup structures for codes ``lo..hi-1``.

    ``byte_code[b]``: the lowest code of the one-byte symbol ``b`` (left alone where
    there is none). Symbols of ``least`` (2 or 3) bytes or more are grouped by the hash
    of their first two bytes (group ``h`` is ``bstart[h]..bstart[h + 1]``), longest
    first, then by code, so the first match in a group is the longest (and lowest) one;
    with ``least == 3`` two-byte symbols are left to the caller. Entry ``j`` holds the
    symbol's bytes ``bval[j]``, its length mask ``bmask[j]`` and ``code | len << 16``
    in ``binfo[j]``, side by side so a probe needs no further lookups.
    """
    nb = 1 << HASH_BITS
    for c in range(hi - 1, lo - 1, -1):
        if lens[c] == 1:
            byte_code[np.int64(vals[c])] = c
    bstart[:] = 0
    for c in range(lo, hi):
        if lens[c] >= least:
            bstart[_bucket(vals[c]) + 1] += 1
    for h in range(nb):
        bstart[h + 1] += bstart[h]
    fill = bstart[:nb].copy()
    for c in range(lo, hi):
        if lens[c] >= least:
            h = _bucket(vals[c])
            # insertion into a group kept sorted by length (groups hold a few codes)
            j = fill[h]
            while j > bstart[h] and (binfo[j - 1] >> 16) < lens[c]:
                bval[j] = bval[j - 1]
                bmask[j] = bmask[j - 1]
                binfo[j] = binfo[j - 1]
                j -= 1
            bval[j] = vals[c]
            bmask[j] = MASKS[lens[c]]
            binfo[j] = c | (lens[c] << 16)
            fill[h] += 1


# -- serialisation ---------------------------------------------------------------------------

@kernel
def parse_table(buf, symbols, lens, info):
    """Read a serialised table into ``symbols``/``lens``/``info``; outputs are written
    only when the table is valid. Returns ``OK`` or a negative status."""
    if buf.shape[0] != TABLE_BYTES:
        return BAD_TABLE_SIZE
    if _bad_shapes(symbols, lens, info):
        return BAD_SYMBOL
    if _load(buf, 4, 4) != np.uint64(MAGIC):
        return BAD_MAGIC
    switch = np.int64(buf[3])
    if switch > 1:
        return BAD_SWITCH
    n = np.int64(buf[0])
    base = 8 + 8 * n
    for c in range(n):
        if buf[base + c] < 1 or buf[base + c] > MAX_SYMBOL_LEN:
            return BAD_SYMBOL
    symbols[:, :] = 0
    lens[:] = 0
    for c in range(n):
        ln = buf[base + c]
        lens[c] = ln
        for k in range(ln):
            symbols[c, k] = buf[8 + 8 * c + k]
    info[SWITCH] = switch
    info[SUFFIX_LIM] = buf[2]
    info[TERMINATOR] = buf[1]
    info[N_SYMBOLS] = n
    return OK


@kernel
def write_table(symbols, lens, info, out):
    """Serialise a table into ``out`` (``TABLE_BYTES``). Returns ``OK`` or a status."""
    st = _check_table(symbols, lens, info)
    if st != OK:
        return st
    if out.shape[0] != TABLE_BYTES:
        return BAD_TABLE_SIZE
    n = info[N_SYMBOLS]
    out[:] = 0
    out[0] = n
    out[1] = info[TERMINATOR]
    out[2] = info[SUFFIX_LIM]
    out[3] = info[SWITCH]
    out[4] = 0x54  # "TSSF": MAGIC in little-endian order
    out[5] = 0x53
    out[6] = 0x53
    out[7] = 0x46
    for c in range(n):
        ln = lens[c]
        for k in range(ln):
            out[8 + 8 * c + k] = symbols[c, k]
        out[8 + 8 * n + c] = ln
    return OK


def serialize_table(symbols: np.ndarray, lens: np.ndarray, info: np.ndarray) -> np.ndarray:
    """The 2312-byte blob for a table (``ValueError`` if the arrays are malformed)."""
    out = np.zeros(TABLE_BYTES, np.uint8)
    status = write_table(symbols, lens, info, out)
    if status != OK:
        raise ValueError(f"malformed FSST table arrays (status {status})")
    return out


# -- compression -----------------------------------------------------------------------------

def compress_bound(offsets: np.ndarray) -> int:
    """Bytes :func:`compress` may need: two per input byte (every byte escaped)."""
    return 2 * int(offsets[-1] - offsets[0])


# a compressor lookup entry (uint16): code | length << 8 (length 0: an escape), with
# LONGER set where symbols of three or more bytes start with the entry's two bytes
LONGER = 0x8000
# symbols of three or more bytes are found by their bytes and length in an open-addressing
# table of this many slots (at most 255 symbols: a quarter full, short probe runs)
LONG_SLOT_BITS = 10
# groups (symbols of three or more bytes by the hash of their first two bytes) of up to
# this many symbols are scanned; larger ones are looked up by length (see
# _compress_values)
SCAN_GROUP = 8


@kernel
def _long_slot(key, ln):
    """The first slot of the ``ln``-byte symbol (or prefix) ``key``: its bytes folded
    to 31 bits, then Knuth's multiplicative hash modulo 2**32 (the product fits an
    int64: the pure-Python run computes the same, without overflow)."""
    x = (key ^ (key >> np.uint64(31)) ^ (key >> np.uint64(47)) ^ np.uint64(ln))
    x = np.int64(x & np.uint64(0x7FFFFFFF))
    return ((x * 0x9E3779B1) & 0xFFFFFFFF) >> (32 - LONG_SLOT_BITS)


@kernel
def _long_lookup(w, ln, lkey, linfo):
    """The code of the ``ln``-byte symbol whose bytes are the low ``ln`` bytes of ``w``,
    or -1 (see :func:`_long_table`)."""
    key = w & MASKS[ln]
    h = _long_slot(key, ln)
    size = lkey.shape[0]
    while linfo[h] >= 0:
        if (lkey[h] == key) & ((linfo[h] >> 8) == ln):
            return linfo[h] & 0xFF
        h = (h + 1) & (size - 1)
    return -1


@kernel
def _long_table(vals, lens, n, lkey, linfo, lmask):
    """The matcher of symbols of three or more bytes: ``lkey``/``linfo`` (``code |
    length << 8``, -1 empty) an open-addressing table by bytes and length, the lowest
    code kept among equal symbols; ``lmask[two bytes]`` bit ``k`` set where a symbol
    of ``k + 3`` bytes starts with those two bytes, so a position probes only the
    lengths that can match there, longest first."""
    size = lkey.shape[0]
    for c in range(n):  # ascending: the first code of a symbol stays
        ln = np.int64(lens[c])
        if ln < 3:
            continue
        key = vals[c]
        h = _long_slot(key, ln)
        while linfo[h] >= 0 and not ((lkey[h] == key) & ((linfo[h] >> 8) == ln)):
            h = (h + 1) & (size - 1)
        if linfo[h] < 0:
            lkey[h] = key
            linfo[h] = c | (ln << 8)
        k = np.int64(key & np.uint64(0xFFFF))
        lmask[k] = lmask[k] | np.uint8(1 << (ln - 3))


@kernel
def _compress_values(offsets, data, byte1, short, bstart, bval, bmask, binfo, lmask, lkey,
                     linfo, out_offsets, out_data):
    """The loop of :func:`compress`. ``short[two bytes]``: the longest symbol of at most
    two bytes at a position (else the escape), ``byte1[byte]`` the same for a value's
    last byte (see :data:`LONGER`); symbols of three or more bytes are looked up (see
    :func:`_long_table`) only where ``short`` says some start there, one probe per
    length that can match, longest first (a group scan by the first two bytes probed
    50 symbols at every URL of 50 hosts: ``host12.e``, ``host13.e``, ...). A function
    of its own so that the lookup arrays arrive as arguments: as local arrays of the
    caller the loop ran 1.5x slower."""
    one = np.uint64(1)
    size = data.shape[0]
    p = 0
    out_offsets[0] = 0
    for s in range(offsets.shape[0] - 1):
        i = offsets[s]
        end = offsets[s + 1]
        while i < end:
            # inlined rather than helpers: a call that passes arrays costs reference
            # counting, and unsigned indices skip numba's negative-index wraparound
            rem = end - i
            w = np.uint64(0)
            if i + 8 <= size:  # eight bytes (one load), those past the value masked off
                for j in range(8):
                    w |= np.uint64(data[np.uint64(i + j)]) << np.uint64(8 * j)
                if rem < 8:
                    w &= MASKS[rem]
            else:  # the buffer's last bytes, in a loop LLVM does not vectorise
                j = i + min(rem, 8)
                while j > i:
                    j -= 1
                    w = (w << np.uint64(8)) | np.uint64(data[np.uint64(j)])
            if rem >= 2:
                x = np.int64(short[w & np.uint64(0xFFFF)])
                if x & LONGER:
                    h = np.uint64(_bucket(w))
                    j = bstart[h]
                    last = bstart[h + one]
                    if last - j <= SCAN_GROUP:
                        # a few candidates: scanned, longest (then lowest code) first
                        while j < last:
                            ju = np.uint64(j)
                            if ((w & bmask[ju]) == bval[ju]) & ((binfo[ju] >> 16) <= rem):
                                break
                            j += 1
                        if j < last:
                            out_data[np.uint64(p)] = binfo[np.uint64(j)] & 0xFF
                            p += 1
                            i += binfo[np.uint64(j)] >> 16
                            continue
                    else:  # many: one lookup per length that can match, longest first
                        m = np.int64(lmask[w & np.uint64(0xFFFF)])
                        ln = min(rem, 8)
                        code = -1
                        while ln >= 3:
                            if (m >> (ln - 3)) & 1:
                                code = _long_lookup(w, ln, lkey, linfo)
                                if code >= 0:
                                    break
                            ln -= 1
                        if code >= 0:
                            out_data[np.uint64(p)] = code
                            p += 1
                            i += ln
                            continue
            else:
                x = np.int64(byte1[w & np.uint64(0xFF)])
            # the literal is written either way; it stays only after an escape (p + 1
            # is within the 2x bound: each input byte so far took at most two)
            ln = (x >> 8) & 0x7F
            esc = np.int64(ln == 0)
            out_data[np.uint64(p)] = x & 0xFF
            out_data[np.uint64(p + 1)] = w & np.uint64(0xFF)
            p += 1 + esc
            i += ln + esc
        out_offsets[s + 1] = p
    return p


@kernel
def compress(offsets, data, symbols, lens, info, out_offsets, out_data):
    """Compress each value; ``out_offsets`` (``len(offsets)``) gets offsets from 0 and
    ``out_data`` (at least :func:`compress_bound` bytes) the codes. With switch 0 the
    values are copied raw. Returns the bytes written or a negative status."""
    st = _check_table(symbols, lens, info)
    if st != OK:
        return st
    err = np.zeros(2, np.int64)
    if _check_offsets(offsets, data.shape[0], err) != OK:
        return BAD_OFFSETS
    n = offsets.shape[0] - 1
    total = offsets[n] - offsets[0]
    if out_offsets.shape[0] < n + 1:
        return OUTPUT_TOO_SMALL
    if info[SWITCH] == 0:
        return _copy_raw(offsets, data, out_offsets, out_data)
    if out_data.shape[0] // 2 < total:
        return OUTPUT_TOO_SMALL
    ns = info[N_SYMBOLS]
    vals = np.zeros(256, np.uint64)
    slens = np.zeros(256, np.int64)
    _symbol_words(symbols, lens, ns, vals)
    for c in range(ns):
        slens[c] = lens[c]
    byte_code = np.full(256, -1, np.int64)
    bstart = np.zeros((1 << HASH_BITS) + 1, np.int64)
    bval = np.empty(MAX_SYMBOLS, np.uint64)
    bmask = np.empty(MAX_SYMBOLS, np.uint64)
    binfo = np.empty(MAX_SYMBOLS, np.int64)
    _build_matcher(vals, slens, 0, ns, 3, byte_code, bstart, bval, bmask, binfo)
    lkey = np.zeros(1 << LONG_SLOT_BITS, np.uint64)
    linfo = np.full(1 << LONG_SLOT_BITS, -1, np.int64)
    lmask = np.zeros(1 << 16, np.uint8)
    _long_table(vals, slens, ns, lkey, linfo, lmask)
    byte1 = np.empty(256, np.uint16)
    for b in range(256):
        byte1[b] = ESCAPE if byte_code[b] < 0 else byte_code[b] | 1 << 8
    short = np.empty(1 << 16, np.uint16)
    for k in range(1 << 16):
        short[k] = byte1[k & 0xFF]
    for c in range(ns - 1, -1, -1):  # the lowest code among equal symbols
        if slens[c] == 2:
            short[np.int64(vals[c])] = c | 2 << 8
    for c in range(ns):
        if slens[c] >= 3:
            k = np.int64(vals[c] & np.uint64(0xFFFF))
            short[k] = short[k] | LONGER
    return _compress_values(offsets, data, byte1, short, bstart, bval, bmask, binfo, lmask,
                            lkey, linfo, out_offsets, out_data)


# -- decompression ---------------------------------------------------------------------------

@kernel
def _length_table(lens, n):
    lut = np.zeros(256, np.int64)
    for c in range(n):
        lut[c] = lens[c]
    return lut


@kernel
def _size_values(offsets, codes, lut, err):
    """The loop of :func:`decompress_size` (``lut``: symbol lengths, 0 past the table)."""
    total = np.int64(0)
    # one loop over all codes, not one per value: the exit of a short per-value loop
    # is a mispredicted branch per value. Only escapes and bad codes need to know their
    # value s; it is found by walking on from the last one (i only grows).
    i = offsets[0]
    end = offsets[offsets.shape[0] - 1]
    s = 0
    while i < end:
        c = codes[np.uint64(i)]
        ln = lut[c]
        if ln == 0:
            while offsets[s + 1] <= i:
                s += 1
            if c != ESCAPE:
                err[0] = s
                err[1] = i
                return BAD_CODE
            if i + 1 >= offsets[s + 1]:
                err[0] = s
                err[1] = i
                return ESCAPE_AT_END
            ln = 1
            i += 1
        total += ln
        i += 1
    return total


@kernel
def decompress_size(offsets, codes, symbols, lens, info, err):
    """Validate the table and every value's codes; return the decompressed size or a
    negative status (``err``: value index and byte position in ``codes``, or for
    ``BAD_OFFSETS`` the offset's index and value)."""
    st = _check_table(symbols, lens, info)
    if st != OK:
        return st
    if _check_offsets(offsets, codes.shape[0], err) != OK:
        return BAD_OFFSETS
    n = offsets.shape[0] - 1
    if info[SWITCH] == 0:
        return offsets[n] - offsets[0]
    return _size_values(offsets, codes, _length_table(lens, info[N_SYMBOLS]), err)


@kernel
def _decode_values(offsets, codes, lut, words, out_offsets, out_data):
    """The loop of :func:`decompress` (``words``: symbols as uint64). A function of its
    own so the tables arrive as arguments: as local arrays it ran 1.4x slower."""
    cap = out_data.shape[0]
    p = np.int64(0)
    out_offsets[0] = 0
    for s in range(offsets.shape[0] - 1):
        i = offsets[s]
        end = offsets[s + 1]
        while i < end:
            c = codes[np.uint64(i)]
            ln = lut[c]
            if ln == 0:
                if c != ESCAPE:
                    return BAD_CODE
                if i + 1 >= end:
                    return ESCAPE_AT_END
                if p >= cap:
                    return OUTPUT_TOO_SMALL
                out_data[np.uint64(p)] = codes[np.uint64(i + 1)]
                p += 1
                i += 2
                continue
            w = words[c]
            if p <= cap - 8:
                # all eight bytes, which compiles to one store; the extra bytes are
                # overwritten by what follows
                for k in range(8):
                    out_data[np.uint64(p + k)] = np.uint8(w >> np.uint64(8 * k) & np.uint64(0xFF))
            elif p <= cap - ln:
                # near the end: byte by byte, in a loop LLVM does not vectorise (a
                # vectorised tail loop here cost 1.5x in the hot path next to it)
                q = p
                while q < p + ln:
                    out_data[np.uint64(q)] = np.uint8(w & np.uint64(0xFF))
                    w >>= np.uint64(8)
                    q += 1
            else:
                return OUTPUT_TOO_SMALL
            p += ln
            i += 1
        out_offsets[s + 1] = p
    return p


@kernel
def decompress(offsets, codes, symbols, lens, info, out_offsets, out_data):
    """Decompress each value: ``out_offsets`` (``len(offsets)``) gets offsets from 0,
    ``out_data`` the bytes. Size ``out_data`` with :func:`decompress_size`, or skip that
    pass and give it ``8 * len(codes)`` bytes (no code expands to more, and of an
    ``np.empty`` buffer only the pages the result fills get touched). Checks everything
    :func:`decompress_size` checks and never writes outside its outputs. Returns the
    bytes written or a negative status."""
    st = _check_table(symbols, lens, info)
    if st != OK:
        return st
    err = np.zeros(2, np.int64)
    if _check_offsets(offsets, codes.shape[0], err) != OK:
        return BAD_OFFSETS
    n = offsets.shape[0] - 1
    if out_offsets.shape[0] < n + 1:
        return OUTPUT_TOO_SMALL
    if info[SWITCH] == 0:
        return _copy_raw(offsets, codes, out_offsets, out_data)
    words = np.zeros(256, np.uint64)
    _symbol_words(symbols, lens, info[N_SYMBOLS], words)
    return _decode_values(offsets, codes, _length_table(lens, info[N_SYMBOLS]), words,
                          out_offsets, out_data)
