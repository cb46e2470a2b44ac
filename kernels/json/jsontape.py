"""JSON text to a *tape*: the first pass of :mod:`.jsonb_encode`.

:func:`fill_tape` checks each row against JSON's grammar (RFC 8259) and writes its
*nodes*, one per value (object keys included), in document order into ``tape`` (int64,
one row of ``TAPE_COLS`` per node: kind, value, aux, next, size, position) and its
strings, unescaped, into ``pool``. ``next`` is the index after the node's subtree, so
the items of a container are found by hopping from one to the next. A number whose
digits leave the nearest double undecided (over 19 significant digits) is left as
``K_PENDING`` with its text's place; the caller makes it ``K_FLOAT``. There is no count
pass: the tape is filled until it is full, that group of rows is laid out, and the
next group starts at the top of the tape, so a tape of a fixed size serves any input.

Example: ``{"b": 2, "a": [true]}`` is the tape (kind, value, aux, next)
``object 2 - 6 | string 0 1 2 | uint 2 0 3 | string 1 1 4 | array 1 - 6 | true - - 6``
with the pool ``ba``.

pylance's own parser takes more than JSON (``+1``, ``.5``, ``0x10``, ``NaN``, single
quotes, ``[1,,2]``, empty text as null, raw control characters in strings); these
kernels refuse what RFC 8259 refuses. Where JSON leaves a choice they do what pylance
does: integers that fit a u64 (or, negative, an i64) are integers, the others and any
number with a fraction or exponent doubles (``1e400`` is +inf); ``-0`` is 0; an escaped
UTF-16 surrogate that is not half of a pair is kept as its six characters of text.
Nesting deeper than ``MAX_DEPTH`` is refused; the parser keeps its own stack.
"""

import numpy as np

from .._jit import kernel
from ..bytes_util import offsets_ok
from .jsonb import LENGTH_MASK, utf8_length
from .jsonnum import SIGN, U0, U1, decimal_to_double

# as jsonb.MAX_DEPTH (a test checks): numba caches a kernel by its own module's text, so
# a limit taken from another module would stay compiled in at its old value
MAX_DEPTH = 4096

OK = 0
UNEXPECTED_END = -1     # the text ends inside a value
EXPECTED_VALUE = -2     # a character that cannot start a value (or a key, in an object)
UNEXPECTED_CHAR = -3    # a character where , : ] } or the end of the text belongs
BAD_NUMBER = -4         # a number outside JSON's grammar (01, 1., .5, +1, 1e)
BAD_ESCAPE = -5         # a backslash escape other than \" \\ \/ \b \f \n \r \t \uXXXX
CONTROL_CHARACTER = -6  # U+0000..U+001F unescaped inside a string
BAD_UTF8 = -7           # a string that is not UTF-8
TOO_DEEP = -8           # arrays and objects nested deeper than MAX_DEPTH
DUPLICATE_KEY = -9      # an object with a key twice (err[1]: the second one's node)
TOO_LARGE = -10         # a string or nested container of 2**28 bytes, 2**29 items
BAD_OFFSETS = -11       # offsets decrease or point past the data, or arrays of wrong sizes
OUTPUT_TOO_SMALL = -12  # fill_jsonb: the output offsets leave too little room (inside
#                         fill_tape: the tape or pool is full; it returns the row instead)
UNRESOLVED = -13        # a K_PENDING node the caller did not resolve

K_NULL, K_FALSE, K_TRUE, K_STRING, K_UINT, K_INT, K_FLOAT, K_PENDING, K_ARRAY, K_OBJECT = \
    range(10)
# tape columns. string: pool start, length; uint/float: low, high 32 bits of the value;
# int: the value; pending: text start, length; array: count; object: count, then (pass
# 3) the start of its sorted key nodes in ``members``
T_KIND, T_VAL, T_AUX, T_NEXT, T_SIZE, T_POS = range(6)
TAPE_COLS = 6

_M32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint64(32)
_ESCAPED = np.zeros(256, np.uint8)  # escape letter -> the byte it stands for
for _c, _b in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t'):
    _ESCAPED[_c] = _b
del _c, _b


@kernel
def _ws(data, p, e):
    while p < e and (data[p] == 32 or data[p] == 10 or data[p] == 13 or data[p] == 9):
        p += 1
    return p


@kernel
def _hex4(data, p, e):
    """The value of four hex digits at ``data[p]``, or -1."""
    if p + 4 > e:
        return -1
    v = 0
    for k in range(4):
        c = np.int64(data[p + k])
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return -1
        v = (v << 4) | d
    return v


@kernel
def _put_utf8(pool, q, u):
    """Code point ``u`` as UTF-8 at ``pool[q]``; the new position (-1: no room)."""
    n = 1 if u < 0x80 else 2 if u < 0x800 else 3 if u < 0x10000 else 4
    if q < 0 or q + n > pool.shape[0]:
        return -1
    if n == 1:
        pool[q] = u
    else:
        for k in range(n - 1, 0, -1):
            pool[q + k] = 0x80 | (u & 0x3F)
            u >>= 6
        pool[q] = (0xC0 if n == 2 else 0xE0 if n == 3 else 0xF0) | u
    return q + n


@kernel
def _copy(data, p, n, pool, q):
    if q < 0 or q + n > pool.shape[0]:
        return -1
    for k in range(n):
        pool[q + k] = data[p + k]
    return q + n


@kernel
def _string(data, p, e, pool, q, err):
    """The string whose opening quote is ``data[p]``, unescaped into ``pool[q:]``:
    ``(position after it, new q)``, ``(OUTPUT_TOO_SMALL, 0)`` when ``pool`` ends first,
    or ``(status, 0)`` with the fault in ``err[1]``."""
    p += 1
    while q >= 0:
        if p >= e:
            err[1] = p
            return UNEXPECTED_END, 0
        c = data[p]
        if c == 34:
            return p + 1, q
        if c == 92:
            if p + 1 >= e:
                err[1] = p
                return UNEXPECTED_END, 0
            x = data[p + 1]
            if x != 117:  # not \u
                if _ESCAPED[x] == 0:
                    err[1] = p
                    return BAD_ESCAPE, 0
                q = _put_utf8(pool, q, _ESCAPED[x])
                p += 2
                continue
            u = _hex4(data, p + 2, e)
            if u < 0:
                err[1] = p
                return BAD_ESCAPE, 0
            if 0xDC00 <= u <= 0xDFFF:  # half a pair, alone: kept as text (as pylance)
                q = _copy(data, p, 6, pool, q)
                p += 6
            elif 0xD800 <= u <= 0xDBFF:
                if p + 7 < e and data[p + 6] == 92 and data[p + 7] == 117:
                    u2 = _hex4(data, p + 8, e)
                    if u2 < 0:
                        err[1] = p + 6
                        return BAD_ESCAPE, 0
                    if 0xDC00 <= u2 <= 0xDFFF:
                        q = _put_utf8(pool, q, 0x10000 + ((u - 0xD800) << 10) + u2 - 0xDC00)
                    else:  # not a pair: both kept as text (as pylance)
                        q = _copy(data, p, 12, pool, q)
                    p += 12
                else:
                    q = _copy(data, p, 6, pool, q)
                    p += 6
            else:
                q = _put_utf8(pool, q, u)
                p += 6
        elif c < 0x20:
            err[1] = p
            return CONTROL_CHARACTER, 0
        elif c < 0x80:
            q = _put_utf8(pool, q, c)
            p += 1
        else:
            k = utf8_length(data, p, e)
            if k == 0:
                err[1] = p
                return BAD_UTF8, 0
            q = _copy(data, p, k, pool, q)
            p += k
    return OUTPUT_TOO_SMALL, 0


@kernel
def _digits(data, p, e):
    while p < e and 48 <= data[p] <= 57:
        p += 1
    return p


@kernel
def _number_end(data, p, e):
    """``(end, integer)``: where the number at ``data[p]`` ends and whether it has
    neither fraction nor exponent; ``end`` is BAD_NUMBER off JSON's grammar."""
    if data[p] == 45:
        p += 1
    if p >= e or not 48 <= data[p] <= 57:
        return BAD_NUMBER, False
    p = p + 1 if data[p] == 48 else _digits(data, p, e)
    integer = True
    if p < e and data[p] == 46:
        q = _digits(data, p + 1, e)
        if q == p + 1:
            return BAD_NUMBER, False
        p = q
        integer = False
    if p < e and (data[p] == 101 or data[p] == 69):
        p += 1
        if p < e and (data[p] == 43 or data[p] == 45):
            p += 1
        q = _digits(data, p, e)
        if q == p:
            return BAD_NUMBER, False
        p = q
        integer = False
    if p < e and 48 <= data[p] <= 57:  # 01
        return BAD_NUMBER, False
    return p, integer


@kernel
def _set_u64(tape, i, kind, v):
    tape[i, T_KIND] = kind
    tape[i, T_VAL] = np.int64(v & _M32)
    tape[i, T_AUX] = np.int64(v >> _U32)


@kernel
def _number(data, s, e, tape, i):
    """The number ``data[s:e]`` (grammar checked) as node ``i``."""
    neg = data[s] == 45
    if e - s - (1 if neg else 0) <= 20:  # an integer of up to 20 digits may fit
        v = U0
        p = s + 1 if neg else s
        fits = True
        while p < e and fits:
            if 48 <= data[p] <= 57:
                d = np.uint64(data[p] - 48)
                if v > (np.uint64(0xFFFFFFFFFFFFFFFF) - d) // np.uint64(10):
                    fits = False
                v = v * np.uint64(10) + d if fits else v
            else:
                fits = False  # a fraction or exponent
            p += 1
        if fits and not neg:
            _set_u64(tape, i, K_UINT, v)
            return
        if fits and v <= SIGN:
            if v == U0:  # -0 is 0
                _set_u64(tape, i, K_UINT, v)
            else:
                tape[i, T_KIND] = K_INT
                tape[i, T_VAL] = -np.int64(v - U1) - 1
            return
    ok, bits = decimal_to_double(data, s, e)
    if ok:
        _set_u64(tape, i, K_FLOAT, bits)
    else:
        tape[i, T_KIND] = K_PENDING
        tape[i, T_VAL] = s
        tape[i, T_AUX] = e - s


@kernel
def _parse(data, s, e, tape, node, pool, q, stack, err):
    """Row ``data[s:e]``, checked, its nodes into ``tape[node:]`` and its strings into
    ``pool[q:]``: ``(nodes, pool bytes)``, ``(OUTPUT_TOO_SMALL, 0)`` when either ends
    first, or ``(status, 0)`` with the fault's position in ``err[1]``."""
    i = node
    q0 = q
    depth = 0  # open containers: stack[d] = (node, is object, items so far)
    p = _ws(data, s, e)
    want_key = False
    while True:
        # a value (or, in an object, a key) starts at p
        if p >= e:
            err[1] = p
            return UNEXPECTED_END, 0
        c = data[p]
        if want_key and c != 34:
            err[1] = p
            return EXPECTED_VALUE, 0
        if i >= tape.shape[0]:
            return OUTPUT_TOO_SMALL, 0
        tape[i, T_NEXT] = i + 1
        closed = False
        if c == 123 or c == 91:  # { [
            if depth >= MAX_DEPTH:
                err[1] = p
                return TOO_DEEP, 0
            stack[depth, 0] = i
            stack[depth, 1] = 1 if c == 123 else 0
            stack[depth, 2] = 0
            tape[i, T_KIND] = K_OBJECT if c == 123 else K_ARRAY
            depth += 1
            i += 1
            p = _ws(data, p + 1, e)
            if p < e and data[p] == c + 2:  # } or ]: empty
                p += 1
                closed = True
            else:
                want_key = c == 123
                continue
        elif c == 34:
            p, q2 = _string(data, p, e, pool, q, err)
            if p < 0:
                return p, 0
            if q2 - q > LENGTH_MASK:
                err[1] = p
                return TOO_LARGE, 0
            tape[i, T_KIND] = K_STRING
            tape[i, T_VAL] = q
            tape[i, T_AUX] = q2 - q
            q = q2
            i += 1
            if want_key:
                p = _ws(data, p, e)
                if p >= e or data[p] != 58:
                    err[1] = p
                    return UNEXPECTED_END if p >= e else UNEXPECTED_CHAR, 0
                p = _ws(data, p + 1, e)
                want_key = False
                continue
        elif c == 116 or c == 102 or c == 110:  # true false null
            n = 5 if c == 102 else 4
            word = (116, 114, 117, 101, 0) if c == 116 else (102, 97, 108, 115, 101) \
                if c == 102 else (110, 117, 108, 108, 0)
            for k in range(n):
                if p + k >= e or data[p + k] != word[k]:
                    err[1] = p + k
                    return UNEXPECTED_END if p + k >= e else EXPECTED_VALUE, 0
            tape[i, T_KIND] = K_TRUE if c == 116 else K_FALSE if c == 102 else K_NULL
            p += n
            i += 1
        elif c == 45 or 48 <= c <= 57:
            end, _ = _number_end(data, p, e)
            if end < 0:
                err[1] = p
                return end, 0
            _number(data, p, end, tape, i)
            p = end
            i += 1
        else:
            err[1] = p
            return EXPECTED_VALUE, 0
        # a value ended at p: what follows it
        while True:
            if closed:
                depth -= 1
                closed = False
                top = stack[depth, 0]
                tape[top, T_VAL] = stack[depth, 2]
                tape[top, T_NEXT] = i
            if depth == 0:
                p = _ws(data, p, e)
                if p != e:
                    err[1] = p
                    return UNEXPECTED_CHAR, 0
                return i - node, q - q0
            stack[depth - 1, 2] += 1
            p = _ws(data, p, e)
            if p >= e:
                err[1] = p
                return UNEXPECTED_END, 0
            obj = stack[depth - 1, 1] == 1
            if data[p] == 44:  # ,
                p = _ws(data, p + 1, e)
                want_key = obj
                break
            if data[p] == (125 if obj else 93):
                p += 1
                closed = True
                continue
            err[1] = p
            return UNEXPECTED_CHAR, 0


@kernel
def _shapes_ok(offsets, data, valid, n_out):
    n = offsets.shape[0] - 1
    return n >= 0 and valid.shape[0] == n and n_out >= n and offsets_ok(offsets, data.shape[0])


@kernel
def fill_tape(offsets, data, valid, row, first, pool_first, tape, pool, err):
    """Rows from ``row`` on, checked, while they fit: row ``r``'s nodes into
    ``tape[first[r]:first[r + 1]]`` and its strings into
    ``pool[pool_first[r]:pool_first[r + 1]]`` (``first[row]``, ``pool_first[row]``:
    where they start). Returns the first row not written (``n``: all); then the tape
    or pool is full, and the caller lays out the rows written and calls again from
    there (from the start of the tape: the group's places are its own). A fault: its
    negative status, ``err`` = (row, byte offset in the row)."""
    n = offsets.shape[0] - 1
    if not _shapes_ok(offsets, data, valid, min(first.shape[0], pool_first.shape[0]) - 1) \
            or tape.shape[1] != TAPE_COLS or row < 0 or row > n \
            or not 0 <= first[row] <= tape.shape[0] \
            or not 0 <= pool_first[row] <= pool.shape[0]:
        return BAD_OFFSETS
    stack = np.empty((MAX_DEPTH, 3), np.int64)
    i, q = first[row], pool_first[row]
    for r in range(row, n):
        if valid[r] != 0:
            nodes, nbytes = _parse(data, offsets[r], offsets[r + 1], tape, i, pool, q,
                                   stack, err)
            if nodes == OUTPUT_TOO_SMALL:
                return r
            if nodes < 0:
                err[0] = r
                err[1] -= offsets[r]
                return nodes
            i += nodes
            q += nbytes
        first[r + 1] = i
        pool_first[r + 1] = q
    return n
