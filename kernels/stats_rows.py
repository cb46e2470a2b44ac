"""Statistics of many same-shaped columns in one call (a writer of a wide table has
thousands of small pages: one kernel call each costs more than the work).

``hll_fixed_rows`` is :func:`stats.hll_fixed` then :func:`stats.hll_estimate` for every
row of a 2-D array, each row one page's fixed-width values: the same sketches and the
same estimates as the per-page calls, without a dispatch and a register allocation
per page.

``lex_bounds`` finds the least and the greatest row of a 2-D ``uint64`` array in one
pass, rows compared word by word from the first (unsigned), or each row read as one
little-endian two's complement integer (decimals): the bounds of a page of wide
fixed-width values. Example: rows ``[[1, 5], [0, 9], [1, 2]]`` → least row 1, greatest
row 0 (word by word); as integers (``signed_le``) → least row 2, greatest row 1.
"""

import numpy as np

from ._jit import kernel
from .stats import (
    _P5,
    BAD_REGISTERS,
    BAD_SIZE,
    OK,
    _avalanche,
    _hll_add,
    _tail8,
    add64,
    hll_estimate,
    hll_fixed,
    precision,
)


@kernel
def hll_fixed_rows(data, width, seed, registers, out):
    """HyperLogLog estimate of the distinct ``width``-byte values of each row of
    ``data`` (2-D uint8) into ``out`` (float64, one per row); ``registers`` (2-D uint8,
    one zeroed sketch of 2**p entries per row) receives the sketches. Returns OK,
    ``BAD_SIZE`` (shapes disagree or a row is not whole values) or ``BAD_REGISTERS``."""
    rows = data.shape[0]
    if registers.shape[0] != rows or out.shape[0] != rows:
        return BAD_SIZE
    for r in range(rows):
        reg = registers[r]
        n = hll_fixed(data[r], width, seed, reg)
        if n < 0:
            return n
        est = hll_estimate(reg)
        if est < 0:
            return BAD_REGISTERS
        out[r] = est
    return OK


@kernel
def hll_words(words, seed, registers):
    """:func:`stats.hll_fixed` of rows of 8 to 24 bytes given as the rows of ``words``
    (2-D uint64, 1 to 3 words: little-endian loads of the row's bytes): the same
    XXH64 (for inputs under 32 bytes, a tail step per 8-byte word) and the same
    sketch, without loading the bytes one at a time. Returns the row count,
    ``BAD_SIZE`` (rows of no word or of 4+) or ``BAD_REGISTERS``."""
    p = precision(registers)
    if p < 0:
        return BAD_REGISTERS
    n, k = words.shape
    if k < 1 or k > 3:
        return BAD_SIZE
    start = add64(add64(np.uint64(seed), _P5), np.uint64(8 * k))
    for i in range(n):
        h = start
        for j in range(k):
            h = _tail8(h, words[i, j])
        _hll_add(registers, p, _avalanche(h))
    return n


_SIGN = np.uint64(1 << 63)


@kernel
def _word(keys, i, j, k, signed_le):
    """Word ``j`` (0: the most significant) of row ``i`` as an unsigned key."""
    if signed_le:
        if j == 0:
            return keys[i, k - 1] ^ _SIGN
        return keys[i, k - 1 - j]
    return keys[i, j]


@kernel
def _cmp_rows(keys, i, r, k, signed_le):
    """-1, 0 or 1 as row ``i`` is less than, equal to or greater than row ``r``."""
    for j in range(k):
        a, b = _word(keys, i, j, k, signed_le), _word(keys, r, j, k, signed_le)
        if a != b:
            return -1 if a < b else 1
    return 0


@kernel
def lex_bounds(keys, signed_le, valid, out):
    """Rows of the least and the greatest row of ``keys`` (2-D uint64) among the rows
    where ``valid`` (uint8, one per row; empty: every row) is nonzero, the first of
    equal rows, into ``out[0]`` and ``out[1]`` (int64; -1 when no row is valid).
    ``signed_le`` 0: rows are compared word by word from the first, unsigned; 1: each
    row is one little-endian two's complement integer (its last word the most
    significant, signed). Returns OK or ``BAD_SIZE`` (``valid`` neither empty nor one
    per row, ``out`` shorter than 2, or rows of no word)."""
    n, k = keys.shape
    if (valid.shape[0] != 0 and valid.shape[0] != n) or out.shape[0] < 2 or k < 1:
        return BAD_SIZE
    every = valid.shape[0] == 0
    lo = hi = -1
    if k <= 2:  # (most columns: both words kept in registers)
        flip = _SIGN if signed_le else np.uint64(0)
        j0 = k - 1 if signed_le else 0
        j1 = k - 1 - j0  # (k = 1: the same word again, never deciding)
        l0 = l1 = h0 = h1 = np.uint64(0)
        for i in range(n):
            if not every and valid[i] == 0:
                continue
            a0 = keys[i, j0] ^ flip
            a1 = keys[i, j1]
            if lo < 0:
                lo = hi = i
                l0, l1, h0, h1 = a0, a1, a0, a1
                continue
            # bitwise, not short-circuit: a tie on the first word (decimals: the
            # sign word) would otherwise be a branch the CPU mispredicts half the time
            less = (a0 < l0) | ((a0 == l0) & (a1 < l1))
            greater = (a0 > h0) | ((a0 == h0) & (a1 > h1))
            if less:
                lo, l0, l1 = i, a0, a1
            elif greater:
                hi, h0, h1 = i, a0, a1
    else:
        for i in range(n):
            if not every and valid[i] == 0:
                continue
            if lo < 0:
                lo = hi = i
            elif _cmp_rows(keys, i, lo, k, signed_le) < 0:
                lo = i
            elif _cmp_rows(keys, i, hi, k, signed_le) > 0:
                hi = i
    out[0] = lo
    out[1] = hi
    return OK


__all__ = ["hll_fixed_rows", "hll_words", "lex_bounds", "OK", "BAD_SIZE", "BAD_REGISTERS"]
