"""JSONB, the binary JSON of pylance's JSON columns (``lance.json``), to JSON text.

The format is Databend's ``jsonb`` crate's (lance 14 carries a copy as
``lance-jsonb``). All integers are big-endian. A value is a *container*: a u32 header,
type in the top 3 bits (``0x80000000`` array, ``0x40000000`` object, ``0x20000000``
scalar) and item count in the low 29; then one u32 *entry* per item (an object: the n
keys' entries, then the n values'); then the items' payloads back to back in entry
order (an object: its keys, sorted by their UTF-8 bytes, then the values). An entry
is type in bits 28-30 and payload length in the low 28 bits (bit 31, "offset mode",
is never set): ``0x0`` null, ``0x1`` string (UTF-8 bytes, no quotes or escapes),
``0x2`` number, ``0x3`` false, ``0x4`` true, ``0x5`` container (a nested array or
object, as above), ``0x6`` extension. A top-level scalar is a scalar header (written
with count 0; the count is not read) and that one entry, then its payload.

A number payload is a tag byte, then: ``0x00`` zero, ``0x10`` NaN, ``0x20`` +inf,
``0x30`` -inf (nothing more); ``0x40`` i8/i16/i32/i64 or ``0x50`` u8/u16/u32/u64 (the
smallest that holds the value); ``0x60`` an f64. ``0x70`` (decimals) and extension
values (dates, timestamps, binary) are valid JSONB that pylance does not write from
JSON text; the kernels report them as :data:`UNSUPPORTED`.

Example: ``{"b":[1,{"c":null}],"a":"s"}`` is ::

    40000002                      object of 2
    10000001 10000001             keys "a", "b": strings of 1 byte
    10000001 5000001b             values: a string of 1 byte, a container of 27
    61 62 73                      "a" "b" "s"
    80000002 20000002 5000000d    [ number of 2 bytes, container of 13
    50 01                         1 (u8)
    40000001 10000001 00000000 63 {"c": null}

and ``-5`` is ``20000000 20000002 40 fb``.

Text (:func:`text_fill`) is serde_json's compact form, which pylance returns: no spaces;
strings escape ``"`` ``\\`` and the control characters (``\\b \\f \\n \\r \\t``, else
``\\u00xx``) and nothing else; numbers as in :mod:`.jsonnum` (NaN and the infinities as
``null``). Containers nest at most ``MAX_DEPTH`` deep; the walk keeps its own stack, so
hostile input cannot recurse.

There is no count pass: text is about as long as its JSONB (at most 6 times: a control
character), so the caller guesses a size, and the kernel stops at the first row that
does not fit, to be called again from there with room to spare.
"""

import numpy as np

from .._jit import kernel
from ..bytes_util import offsets_ok
from .jsonnum import U0, U1, double_text, int_text, uint_text

OK = 0
TRUNCATED = -1         # a header, entry or payload runs past the end of its container
BAD_HEADER = -2        # a container header of no known type (or a scalar one nested)
BAD_ENTRY = -3         # an entry of no known type, in offset mode, a key not a string, or a
#                        null/true/false with a payload
BAD_NUMBER = -4        # a number payload of no known tag, or of the wrong length
BAD_LENGTH = -5        # a container's items do not fill the length its entry gives
BAD_UTF8 = -6          # a string that is not UTF-8
TOO_DEEP = -7          # containers nested deeper than MAX_DEPTH
UNSUPPORTED = -8       # a decimal or an extension value (see the module docstring)
BAD_OFFSETS = -9       # offsets decrease or point past the data, or arrays of wrong sizes
OUTPUT_TOO_SMALL = -10  # (inside: the output is full; text_fill returns the row instead)

# pylance 14 writes and reads 4096 levels (its parser overflows its stack before 5000)
MAX_DEPTH = 4096

ARRAY = 0x80000000
OBJECT = 0x40000000
SCALAR = 0x20000000
COUNT_MASK = 0x1FFFFFFF
LENGTH_MASK = 0x0FFFFFFF
E_NULL, E_STRING, E_NUMBER, E_FALSE, E_TRUE, E_CONTAINER, E_EXTENSION = range(7)
N_ZERO, N_NAN, N_INF, N_NEG_INF, N_INT, N_UINT, N_FLOAT, N_DECIMAL = range(0, 0x80, 0x10)

# frames of the walk's stack
F_KIND, F_COUNT, F_NEXT, F_ENTRIES, F_KEY, F_CUR, F_END = range(7)
FRAME = 7
_K_SCALAR, _K_ARRAY, _K_OBJECT = 0, 1, 2

_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
# the short escapes: control character -> letter (0: \u00xx)
_SHORT = np.zeros(32, np.uint8)
for _c, _l in ((8, b"b"), (9, b"t"), (10, b"n"), (12, b"f"), (13, b"r")):
    _SHORT[_c] = _l[0]
del _c, _l


@kernel(inline=True)
def read_be32(data, p):
    """The big-endian u32 at ``data[p]``, as int64."""
    return (np.int64(data[p]) << 24) | (np.int64(data[p + 1]) << 16) \
        | (np.int64(data[p + 2]) << 8) | np.int64(data[p + 3])


@kernel(inline=True)
def read_be(data, p, n):
    """The big-endian unsigned integer of ``n`` (1..8) bytes at ``data[p]``."""
    v = U0
    for k in range(n):
        v = (v << np.uint64(8)) | np.uint64(data[p + k])
    return v


@kernel
def utf8_length(data, p, end):
    """The length of the UTF-8 sequence starting at ``data[p]`` (ending by ``end``),
    or 0 if there is none (overlong forms, surrogates and code points past U+10FFFF
    are not UTF-8)."""
    b = data[p]
    if b < 0x80:
        return 1
    if 0xC2 <= b <= 0xDF:
        n = 2
        lo, hi = 0x80, 0xBF
    elif 0xE0 <= b <= 0xEF:
        n = 3
        lo = 0xA0 if b == 0xE0 else 0x80
        hi = 0x9F if b == 0xED else 0xBF
    elif 0xF0 <= b <= 0xF4:
        n = 4
        lo = 0x90 if b == 0xF0 else 0x80
        hi = 0x8F if b == 0xF4 else 0xBF
    else:
        return 0
    if p + n > end or not lo <= data[p + 1] <= hi:
        return 0
    for k in range(2, n):
        if not 0x80 <= data[p + k] <= 0xBF:
            return 0
    return n


@kernel
def _put(out, pos, c):
    """One byte of output; the new position, or -1 past the end of ``out``."""
    if pos < 0 or pos >= out.shape[0]:
        return -1
    out[pos] = c
    return pos + 1


@kernel(inline=True)
def _string(data, p, n, out, pos):
    """``data[p:p+n]`` as a quoted JSON string; the new position or a status."""
    pos = _put(out, pos, 34)
    end = p + n
    while p < end and pos >= 0:
        q = p  # a run of bytes that stand for themselves, copied at once
        while q < end:
            c = data[q]
            if c < 0x20 or c == 34 or c == 92:
                break
            if c < 0x80:
                q += 1
                continue
            k = utf8_length(data, q, end)
            if k == 0:
                return BAD_UTF8
            q += k
        if q > p:
            if pos + (q - p) > out.shape[0]:
                return OUTPUT_TOO_SMALL
            for k in range(q - p):
                out[pos + k] = data[p + k]
            pos += q - p
            p = q
            continue
        c = data[p]
        pos = _put(out, pos, 92)
        if c == 34 or c == 92:  # '"', '\'
            pos = _put(out, pos, c) if pos >= 0 else pos
        elif _SHORT[c] != 0:
            pos = _put(out, pos, _SHORT[c]) if pos >= 0 else pos
        else:  # u00xx
            for h in range(5):
                x = 117 if h == 0 else 48 if h < 3 else _HEX[c >> 4] if h == 3 \
                    else _HEX[c & 15]
                pos = _put(out, pos, x) if pos >= 0 else pos
        p += 1
    if pos >= 0:
        pos = _put(out, pos, 34)
    return pos if pos >= 0 else OUTPUT_TOO_SMALL


@kernel(inline=True)
def _number(data, p, n, tmp, dig):
    """The text of the number payload ``data[p:p+n]`` into ``tmp``; its length, or a
    status."""
    if n < 1:
        return BAD_NUMBER
    tag = data[p] & 0xF0
    size = n - 1
    if data[p] & 0x0F != 0:
        return BAD_NUMBER
    if tag == N_ZERO or tag == N_NAN or tag == N_INF or tag == N_NEG_INF:
        if size != 0:
            return BAD_NUMBER
        if tag == N_ZERO:
            tmp[0] = 48
            return 1
        return double_text(np.uint64(0x7FF << 52), tmp, dig)  # "null"
    if tag == N_INT or tag == N_UINT:
        if size != 1 and size != 2 and size != 4 and size != 8:
            return BAD_NUMBER
        v = read_be(data, p + 1, size)
        if tag == N_UINT:
            return uint_text(v, tmp)
        bits = np.uint64(8 * size)
        if size < 8 and (v >> (bits - U1)) & U1 == U1:  # sign-extend
            v |= ~((U1 << bits) - U1)
        return int_text(np.int64(v), tmp)
    if tag == N_FLOAT:
        if size != 8:
            return BAD_NUMBER
        return double_text(read_be(data, p + 1, 8), tmp, dig)
    return UNSUPPORTED if tag == N_DECIMAL else BAD_NUMBER


@kernel
def _open(data, p, end, stack, d):
    """Push the container at ``data[p:end]`` as frame ``d``; a status."""
    if end - p < 4:
        return TRUNCATED
    h = read_be32(data, p)
    t = h & 0xE0000000
    n = h & COUNT_MASK
    if t == ARRAY:
        kind, table = _K_ARRAY, 4 * n
    elif t == OBJECT:
        kind, table = _K_OBJECT, 8 * n
    elif t == SCALAR and d == 0:  # one entry, whatever the count says (as the crate)
        kind, table, n = _K_SCALAR, 4, 1
    else:
        return BAD_HEADER
    if table > end - p - 4:
        return TRUNCATED
    payload = p + 4 + table
    keys = 0
    if kind == _K_OBJECT:  # the keys' payloads come first
        for i in range(n):
            entry = read_be32(data, p + 4 + 4 * i)
            if entry >> 28 != E_STRING:
                return BAD_ENTRY
            keys += entry & LENGTH_MASK
        if keys > end - payload:
            return TRUNCATED
    stack[d, F_KIND] = kind
    stack[d, F_COUNT] = n
    stack[d, F_NEXT] = 0
    stack[d, F_ENTRIES] = p + 4
    stack[d, F_KEY] = payload
    stack[d, F_CUR] = payload + keys
    stack[d, F_END] = end
    return OK


@kernel
def _value(data, s, e, out, pos, stack, tmp, dig, err):
    """The text of the JSONB value ``data[s:e]`` from ``out[pos]``: the end position,
    OUTPUT_TOO_SMALL when ``out`` ends first, or a fault's status with its byte offset
    in the value in ``err[1]``."""
    err[1] = 0
    st = _open(data, s, e, stack, 0)
    if st < 0:
        return st
    depth = 0
    if stack[0, F_KIND] != _K_SCALAR:
        pos = _put(out, pos, 91 if stack[0, F_KIND] == _K_ARRAY else 123)
    while pos >= 0:
        kind = stack[depth, F_KIND]
        n = stack[depth, F_COUNT]
        i = stack[depth, F_NEXT]
        if i == n:  # the container is done: its items must fill it
            if stack[depth, F_CUR] != stack[depth, F_END]:
                err[1] = stack[depth, F_CUR] - s
                return BAD_LENGTH
            if kind != _K_SCALAR:
                pos = _put(out, pos, 93 if kind == _K_ARRAY else 125)
            if depth == 0 or pos < 0:
                break
            depth -= 1
            continue
        if i > 0:
            pos = _put(out, pos, 44)
        entries = stack[depth, F_ENTRIES]
        if kind == _K_OBJECT:
            k = stack[depth, F_KEY]
            klen = read_be32(data, entries + 4 * i) & LENGTH_MASK
            if pos >= 0:
                pos = _string(data, k, klen, out, pos)
            if pos < 0:
                err[1] = k - s
                return pos if pos != -1 else OUTPUT_TOO_SMALL
            pos = _put(out, pos, 58)
            stack[depth, F_KEY] = k + klen
            entry = read_be32(data, entries + 4 * (n + i))
        else:
            entry = read_be32(data, entries + 4 * i)
        stack[depth, F_NEXT] = i + 1
        typ = entry >> 28
        ln = entry & LENGTH_MASK
        cur = stack[depth, F_CUR]
        err[1] = cur - s
        if ln > stack[depth, F_END] - cur:
            return TRUNCATED
        stack[depth, F_CUR] = cur + ln
        if pos < 0:
            break
        if typ == E_CONTAINER:
            if depth + 1 >= MAX_DEPTH:  # (frames 0..MAX_DEPTH - 1)
                return TOO_DEEP
            st = _open(data, cur, cur + ln, stack, depth + 1)
            if st < 0:
                return st
            depth += 1
            pos = _put(out, pos, 91 if stack[depth, F_KIND] == _K_ARRAY else 123)
        elif typ == E_STRING:
            pos = _string(data, cur, ln, out, pos)
            if pos < -1:
                return pos
        elif typ == E_NUMBER:
            m = _number(data, cur, ln, tmp, dig)
            if m < 0:
                return m
            if pos + m > out.shape[0]:
                return OUTPUT_TOO_SMALL
            for k in range(m):
                out[pos + k] = tmp[k]
            pos += m
        elif typ == E_NULL or typ == E_TRUE or typ == E_FALSE:
            if ln != 0:
                return BAD_ENTRY
            word = (110, 117, 108, 108, 0) if typ == E_NULL else \
                (116, 114, 117, 101, 0) if typ == E_TRUE else (102, 97, 108, 115, 101)
            for c in word:
                if c != 0:
                    pos = _put(out, pos, c)
        elif typ == E_EXTENSION:
            return UNSUPPORTED
        else:
            return BAD_ENTRY
    return pos if pos >= 0 else OUTPUT_TOO_SMALL


@kernel
def _shapes_ok(offsets, data, valid, n_out):
    n = offsets.shape[0] - 1
    return n >= 0 and valid.shape[0] == n and n_out >= n and offsets_ok(offsets, data.shape[0])


@kernel
def text_fill(offsets, data, valid, row, out_offsets, out, err):
    """Row ``r``'s text into ``out[out_offsets[r]:out_offsets[r + 1]]`` for the rows
    from ``row`` on (``out_offsets[row]``: where its text starts), while they fit in
    ``out`` (a null row, ``valid[r]`` 0, is empty). Returns the first row not written:
    ``n`` when all are; else ``out`` is full, and the caller grows it (its first
    ``out_offsets[row']`` bytes kept) and calls again from there. A fault is a negative
    status with ``err`` = (row, byte offset in the row's value)."""
    n = offsets.shape[0] - 1
    if not _shapes_ok(offsets, data, valid, out_offsets.shape[0] - 1) or row < 0 \
            or row > n or out_offsets[row] < 0 or out_offsets[row] > out.shape[0]:
        return BAD_OFFSETS
    stack = np.empty((MAX_DEPTH + 1, FRAME), np.int64)
    tmp = np.empty(32, np.uint8)
    dig = np.empty(20, np.uint8)
    pos = out_offsets[row]
    for r in range(row, n):
        if valid[r] != 0:
            got = _value(data, offsets[r], offsets[r + 1], out, pos, stack, tmp, dig, err)
            if got == OUTPUT_TOO_SMALL:
                return r
            if got < 0:
                err[0] = r
                return got
            pos = got
        out_offsets[r + 1] = pos
    return n
