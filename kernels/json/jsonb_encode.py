"""JSON text to JSONB (the layout is in :mod:`.jsonb`), as pylance stores it.

Three passes over Arrow-style text (int64 offsets, uint8 bytes, a uint8 validity). The
first, in :mod:`.jsontape`, checks the text and turns a group of rows into a tape of
nodes in document order; the other two, here, lay the tape out as JSONB:

2. :func:`jsonb_sizes` sorts each object's members by key (UTF-8 bytes, as the crate
   does; a key twice is :data:`DUPLICATE_KEY`, as in pylance), sizes every node from
   the last to the first (a container after its items) and gives each row's length.
3. :func:`fill_jsonb` walks each row's nodes in order, every container writing its
   header and entries and giving each item its place, which the item then fills.

Example: the tape of ``{"b": 2, "a": [true]}`` (see :mod:`.jsontape`) sorts to the keys
``a, b`` and lays out as ``40000002 10000001 10000001 5000000c 20000002 61 62 80000001
40000000 50 02``: the object's header and four entries, the keys, then the array
(its header and the entry of ``true``) and the number 2.
"""

import numpy as np

from .._jit import kernel
from ..bytes_util import offsets_ok
from .jsonb import (
    ARRAY,
    E_CONTAINER,
    E_FALSE,
    E_NULL,
    E_NUMBER,
    E_STRING,
    E_TRUE,
    LENGTH_MASK,
    N_FLOAT,
    N_INF,
    N_INT,
    N_NAN,
    N_NEG_INF,
    N_UINT,
    OBJECT,
    SCALAR,
)
from .jsonnum import INF_BITS, SIGN, U0
from .jsontape import (
    BAD_OFFSETS,
    DUPLICATE_KEY,
    K_ARRAY,
    K_FLOAT,
    K_INT,
    K_OBJECT,
    K_PENDING,
    K_STRING,
    K_UINT,
    OK,
    OUTPUT_TOO_SMALL,
    T_AUX,
    T_KIND,
    T_NEXT,
    T_POS,
    T_SIZE,
    T_VAL,
    TAPE_COLS,
    TOO_LARGE,
    UNRESOLVED,
)

# tape kind -> entry type
_ENTRY_TYPE = np.array([E_NULL, E_FALSE, E_TRUE, E_STRING, E_NUMBER, E_NUMBER, E_NUMBER,
                        E_NUMBER, E_CONTAINER, E_CONTAINER], np.int64)
_U32 = np.uint64(32)


@kernel
def _key_less(pool, tape, a, b):
    """Whether key node ``a`` sorts before key node ``b`` (bytes, then length)."""
    pa, na = tape[a, T_VAL], tape[a, T_AUX]
    pb, nb = tape[b, T_VAL], tape[b, T_AUX]
    for k in range(min(na, nb)):
        if pool[pa + k] != pool[pb + k]:
            return pool[pa + k] < pool[pb + k]
    return na < nb


@kernel
def _sort_keys(pool, tape, keys, tmp):
    """Stable merge sort of the key nodes ``keys`` (``tmp``: as long)."""
    n = keys.shape[0]
    width = 1
    src, dst = keys, tmp
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a, b, k = lo, mid, lo
            while k < hi:
                if b >= hi or (a < mid and not _key_less(pool, tape, src[b], src[a])):
                    dst[k] = src[a]
                    a += 1
                else:
                    dst[k] = src[b]
                    b += 1
                k += 1
        src, dst = dst, src
        width *= 2
    if src is not keys:
        keys[:] = src[:]


@kernel
def _number_size(tape, i):
    kind = tape[i, T_KIND]
    if kind == K_UINT:
        hi, lo = tape[i, T_AUX], tape[i, T_VAL]
        return 9 if hi != 0 else 1 if lo == 0 else 2 if lo <= 0xFF else \
            3 if lo <= 0xFFFF else 5
    if kind == K_INT:
        v = tape[i, T_VAL]
        return 2 if v >= -128 else 3 if v >= -32768 else 5 if v >= -2 ** 31 else 9
    hi = tape[i, T_AUX]
    return 1 if (hi >> 20) & 0x7FF == 0x7FF else 9  # NaN and the infinities are a tag


@kernel
def jsonb_sizes(tape, pool, first, members, out_sizes, err):
    """Pass 3: sort objects' keys into ``members`` (one slot per object member; at
    least ``(tape rows) // 2``), size every node, ``out_sizes[r]`` = row ``r``'s
    JSONB length (rows ``first[r]:first[r + 1]`` of ``tape``). A fault: its status,
    ``err`` = (the row's first node, the node at fault)."""
    n = first.shape[0] - 1
    if n < 0 or out_sizes.shape[0] < n or tape.shape[1] != TAPE_COLS \
            or not offsets_ok(first, tape.shape[0]) or members.shape[0] < tape.shape[0] // 2:
        return BAD_OFFSETS
    tmp = np.empty(members.shape[0], np.int64)
    m = 0
    for i in range(first[n] - 1, first[0] - 1, -1):
        kind = tape[i, T_KIND]
        err[1] = i
        if kind == K_STRING:
            tape[i, T_SIZE] = tape[i, T_AUX]
        elif kind == K_PENDING:
            return UNRESOLVED
        elif kind >= K_UINT:
            if kind < K_ARRAY:
                tape[i, T_SIZE] = _number_size(tape, i)
                continue
            count = tape[i, T_VAL]
            obj = kind == K_OBJECT
            if count > 0x1FFFFFFF or (obj and m + count > members.shape[0]):
                return TOO_LARGE if count > 0x1FFFFFFF else BAD_OFFSETS
            size = 4 + (8 if obj else 4) * count
            c = i + 1
            for k in range(count):
                if c < 0 or c + (1 if obj else 0) >= tape.shape[0]:
                    return BAD_OFFSETS
                if obj:
                    members[m + k] = c
                    size += tape[c, T_SIZE]
                    c += 1
                if tape[c, T_SIZE] > LENGTH_MASK:
                    return TOO_LARGE
                size += tape[c, T_SIZE]
                c = tape[c, T_NEXT]
            tape[i, T_SIZE] = size
            if obj:
                keys = members[m:m + count]
                _sort_keys(pool, tape, keys, tmp[:count])
                for k in range(1, count):
                    if not _key_less(pool, tape, keys[k - 1], keys[k]):
                        err[1] = max(keys[k - 1], keys[k])
                        return DUPLICATE_KEY
                tape[i, T_AUX] = m
                m += count
        else:
            tape[i, T_SIZE] = 0
    for r in range(n):
        out_sizes[r] = 0
        if first[r + 1] > first[r]:
            root = first[r]
            out_sizes[r] = tape[root, T_SIZE] + (0 if tape[root, T_KIND] >= K_ARRAY else 8)
    return OK


@kernel
def _be32(out, p, v):
    for k in range(4):
        out[p + k] = (v >> (24 - 8 * k)) & 0xFF


@kernel
def _write_scalar(tape, i, pool, out, p):
    """Node ``i``'s payload at ``out[p]``."""
    kind = tape[i, T_KIND]
    if kind == K_STRING:
        n = tape[i, T_AUX]
        out[p:p + n] = pool[tape[i, T_VAL]:tape[i, T_VAL] + n]
        return
    if kind < K_UINT:
        return
    size = tape[i, T_SIZE]
    if kind == K_INT:
        x = tape[i, T_VAL]  # (arithmetic shifts: two's complement bytes)
        out[p] = N_INT
        for k in range(1, size):
            out[p + k] = (x >> (8 * (size - 1 - k))) & 0xFF
        return
    v = (np.uint64(tape[i, T_AUX]) << _U32) | np.uint64(tape[i, T_VAL])
    if kind == K_FLOAT and v & ~SIGN >= INF_BITS:  # NaN and the infinities: a tag
        out[p] = N_NAN if v & ~SIGN > INF_BITS else N_NEG_INF if v & SIGN != U0 else N_INF
        return
    out[p] = N_FLOAT if kind == K_FLOAT else N_UINT if size > 1 else 0
    for k in range(1, size):
        out[p + k] = np.uint8((v >> np.uint64(8 * (size - 1 - k))) & np.uint64(0xFF))


@kernel
def fill_jsonb(tape, pool, first, members, out_offsets, out, err):
    """Pass 4: row ``r``'s JSONB into ``out[out_offsets[r]:out_offsets[r + 1]]``
    (offsets from :func:`jsonb_sizes`' sizes); a status, ``err`` as there."""
    n = first.shape[0] - 1
    if n < 0 or out_offsets.shape[0] != n + 1 or tape.shape[1] != TAPE_COLS \
            or not offsets_ok(first, tape.shape[0]) or not offsets_ok(out_offsets, out.shape[0]):
        return BAD_OFFSETS
    for r in range(n):
        if first[r + 1] == first[r]:
            continue
        root = first[r]
        p = out_offsets[r]
        size = tape[root, T_SIZE]
        err[0] = root
        err[1] = root
        if tape[root, T_KIND] < K_ARRAY:  # a scalar: header, entry, payload
            if out_offsets[r + 1] - p != size + 8:
                return OUTPUT_TOO_SMALL
            _be32(out, p, SCALAR)
            _be32(out, p + 4, (_ENTRY_TYPE[tape[root, T_KIND]] << 28) | size)
            _write_scalar(tape, root, pool, out, p + 8)
            continue
        if out_offsets[r + 1] - p != size:
            return OUTPUT_TOO_SMALL
        tape[root, T_POS] = p
        for i in range(root, tape[root, T_NEXT]):
            kind = tape[i, T_KIND]
            at = tape[i, T_POS]
            if kind < K_ARRAY:
                _write_scalar(tape, i, pool, out, at)
                continue
            count = tape[i, T_VAL]
            obj = kind == K_OBJECT
            _be32(out, at, (OBJECT if obj else ARRAY) | count)
            entry = at + 4
            payload = entry + (8 if obj else 4) * count
            if obj:  # keys in order, then their values in the same order
                for half in range(2):
                    for k in range(count):
                        c = members[tape[i, T_AUX] + k] + half
                        _be32(out, entry, (_ENTRY_TYPE[tape[c, T_KIND]] << 28) | tape[c, T_SIZE])
                        tape[c, T_POS] = payload
                        payload += tape[c, T_SIZE]
                        entry += 4
            else:
                c = i + 1
                for _ in range(count):
                    _be32(out, entry, (_ENTRY_TYPE[tape[c, T_KIND]] << 28) | tape[c, T_SIZE])
                    tape[c, T_POS] = payload
                    payload += tape[c, T_SIZE]
                    entry += 4
                    c = tape[c, T_NEXT]
    return OK
