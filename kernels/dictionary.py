"""Dictionary encoding: unique values in first-seen order plus one index per value.

A dictionary-encoded mini-block page (FORMAT_FACTS §2.2) stores the indices as the
chunk values (u32, 0-based) and the dictionary items once, in page buffer 2.
Example: ``["b", "a", "b", "b"]`` → dictionary ``["b", "a"]``, indices
``[0, 1, 0, 0]``; ``int32 [7, 7, 9]`` → ``[7, 9]``, ``[0, 0, 1]``.

Building (``build_fixed`` for rows of ``width`` bytes, ``build_variable`` for
Arrow-style int64 offsets + bytes) uses an open-addressing hash table with linear
probing that the caller allocates: ``table`` is ``uint64[2 * capacity]``, capacity a
power of two above ``max_distinct`` (:func:`table_size` gives one at load factor
≤ 1/2), so a free slot always exists. Slot ``k`` holds a key in ``table[2k]`` and
``entry + 1`` in ``table[2k + 1]`` (0 = free). Rows of 1, 2, 4 or 8 bytes are their own
key (placed by a 64-bit mixer); 16-byte rows are keyed by a mix of their two words and
compared word for word; other rows and variable values are keyed by XXH64 and
compared byte for byte with the entry's first occurrence. A build stops with
``TOO_MANY_DISTINCT`` as soon as a value would become entry number ``max_distinct``,
so high-cardinality data gives up early. Outputs: ``out_indices[i]`` (any integer
dtype wide enough, normally uint32 or int32) and ``out_first[e]`` (int64), the row of
entry ``e``'s first occurrence; gather ``out_first`` to get the dictionary items.

Decoding (``decode_fixed``, ``decode_variable_size`` then ``decode_variable_fill``)
gathers dictionary items by index; an index outside the dictionary is
``BAD_INDEX``, and nothing is written unless every index is valid.
"""

import numpy as np

from ._jit import kernel
from .bytes_util import offsets_ok
from .stats import load_le, mul64, xxh64

OK = 0
TOO_MANY_DISTINCT = -1  # more than max_distinct distinct values
BAD_TABLE = -2          # table is not uint64[2 * capacity], capacity = 2**k > max_distinct
BAD_SIZE = -3           # a buffer is not a whole number of rows, or an output is too small
BAD_OFFSETS = -4        # offsets negative, decreasing or past the data buffer
BAD_INDEX = -5          # an index < 0 or >= the number of dictionary items
TOO_LARGE = -6          # decode_variable_size: the total does not fit in int64

_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)


def table_size(max_distinct: int) -> int:
    """Length of a ``table`` for up to ``max_distinct`` entries (load factor ≤ 1/2)."""
    cap = 2
    while cap < 2 * max_distinct:
        cap *= 2
    return 2 * cap


@kernel
def _fmix(k):
    """MurmurHash3's 64-bit finaliser: a bijection that spreads every input bit."""
    k = np.uint64(k)
    k = mul64(k ^ (k >> np.uint64(33)), _MIX1)
    k = mul64(k ^ (k >> np.uint64(33)), _MIX2)
    return k ^ (k >> np.uint64(33))


@kernel
def _table_bits(table, max_distinct):
    """log2(capacity), or -1 when the table cannot hold ``max_distinct`` entries."""
    size = table.shape[0]
    if max_distinct < 0 or size % 2 != 0:
        return -1
    cap = size // 2
    bits = 1
    while (np.int64(1) << bits) < cap and bits < 62:
        bits += 1
    if (np.int64(1) << bits) != cap or cap <= max_distinct:
        return -1
    return bits


@kernel
def _build_words(data, proto, max_distinct, table, bits, out_indices, out_first):
    """Build over typed keys (the rows themselves, as ``proto``'s word type)."""
    vals = data.view(proto.dtype)
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    count = 0
    for i in range(vals.shape[0]):
        key = np.uint64(vals[i])
        slot = np.int64(_fmix(key) >> shift)
        while True:
            e = table[2 * slot + 1]
            if e == 0:
                if count == max_distinct:
                    return TOO_MANY_DISTINCT
                table[2 * slot] = key
                table[2 * slot + 1] = count + 1
                out_first[count] = i
                out_indices[i] = count
                count += 1
                break
            if table[2 * slot] == key:
                out_indices[i] = e - np.uint64(1)
                break
            slot = (slot + 1) & mask
    return count


@kernel
def _same_bytes(data, a, b, length):
    # unsigned positions: no negative-index checks in the loops; 8 bytes at a time
    pa = np.uint64(a)
    pb = np.uint64(b)
    k = np.uint64(0)
    end = np.uint64(length)
    while k + np.uint64(8) <= end:
        if load_le(data, pa + k, 8) != load_le(data, pb + k, 8):
            return False
        k += np.uint64(8)
    while k < end:
        if data[pa + k] != data[pb + k]:
            return False
        k += np.uint64(1)
    return True


@kernel
def _build_pairs(data, max_distinct, table, bits, out_indices, out_first):
    """Build over 16-byte rows read as two u64 words: keyed by a mix of both words and
    compared word for word with the entry's first occurrence (same entries and order
    as the byte-wise build, a few times faster)."""
    vals = data.view(np.uint64)
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    count = 0
    for i in range(vals.shape[0] // 2):
        lo = vals[2 * i]
        hi = vals[2 * i + 1]
        key = _fmix(lo ^ _fmix(hi))
        slot = np.int64(key >> shift)
        while True:
            e = table[2 * slot + 1]
            if e == 0:
                if count == max_distinct:
                    return TOO_MANY_DISTINCT
                table[2 * slot] = key
                table[2 * slot + 1] = count + 1
                out_first[count] = i
                out_indices[i] = count
                count += 1
                break
            if table[2 * slot] == key:
                f = out_first[np.int64(e) - 1]
                if vals[2 * f] == lo and vals[2 * f + 1] == hi:
                    out_indices[i] = e - np.uint64(1)
                    break
            slot = (slot + 1) & mask
    return count


@kernel
def _build_bytes(data, offsets, width, n, max_distinct, table, bits, out_indices, out_first,
                 hashes):
    """Build over XXH64 keys (``hashes[i]`` when given, else computed); rows are
    ``data[i * width:][:width]`` when ``width > 0``, else ``data[offsets[i]:offsets[i + 1]]``."""
    mask = (np.int64(1) << bits) - 1
    shift = np.uint64(64 - bits)
    hashed = hashes.shape[0] > 0
    count = 0
    for i in range(n):
        if width > 0:
            s = i * width
            ln = width
        else:
            s = offsets[i]
            ln = offsets[i + 1] - s
        key = hashes[i] if hashed else xxh64(data, s, ln, 0)
        slot = np.int64(key >> shift)
        while True:
            e = table[2 * slot + 1]
            if e == 0:
                if count == max_distinct:
                    return TOO_MANY_DISTINCT
                table[2 * slot] = key
                table[2 * slot + 1] = count + 1
                out_first[count] = i
                out_indices[i] = count
                count += 1
                break
            if table[2 * slot] == key:
                f = out_first[np.int64(e) - 1]
                if width > 0:
                    fs = f * width
                    fl = width
                else:
                    fs = offsets[f]
                    fl = offsets[f + 1] - fs
                if fl == ln and _same_bytes(data, fs, s, ln):
                    out_indices[i] = e - np.uint64(1)
                    break
            slot = (slot + 1) & mask
    return count


# word types by row width: the width picks the kernel in Python (build_fixed), so only
# the word types met get compiled (a kernel compiles every branch, taken or not)
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def build_fixed(data, width, max_distinct, table, out_indices, out_first):
    """Dictionary of the rows of ``data`` (``width`` bytes each); returns the number
    of distinct rows or a status (module docstring)."""
    status = _fixed_status(data, width, max_distinct, table, out_indices, out_first)
    if status < 0:
        return status
    if width in _WORDS:
        return _build_words(data, np.empty(0, _WORDS[width]), max_distinct, table, status,
                            out_indices, out_first)
    if width == 16:  # decimal128 and the like: two words per row
        return _build_pairs(data, max_distinct, table, status, out_indices, out_first)
    return _build_bytes(data, np.zeros(1, np.int64), width, data.shape[0] // width,
                        max_distinct, table, status, out_indices, out_first,
                        np.zeros(0, np.uint64))


@kernel
def _fixed_status(data, width, max_distinct, table, out_indices, out_first):
    """The checks of :func:`build_fixed`: the table's bit count (after clearing the
    table), or a negative status."""
    if width < 1 or data.shape[0] % width != 0:
        return BAD_SIZE
    n = data.shape[0] // width
    if out_indices.shape[0] < n or out_first.shape[0] < min(max_distinct, n):
        return BAD_SIZE
    bits = _table_bits(table, max_distinct)
    if bits < 0:
        return BAD_TABLE
    table[:] = 0
    return bits




@kernel
def build_variable(offsets, data, max_distinct, table, out_indices, out_first):
    """Dictionary of the values ``data[offsets[i]:offsets[i + 1]]``; returns the
    number of distinct values or a status (module docstring)."""
    return build_variable_hashed(offsets, data, np.zeros(0, np.uint64), max_distinct, table,
                                 out_indices, out_first)


@kernel
def build_variable_hashed(offsets, data, hashes, max_distinct, table, out_indices,
                          out_first):
    """:func:`build_variable` keyed by ``hashes[i]``, the XXH64 (seed 0) of value ``i``
    as :func:`stats.hll_variable_hashes` keeps them (empty: hashed here; shorter than
    the values: ``BAD_SIZE``). Same entries and indices either way."""
    if not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSETS
    n = offsets.shape[0] - 1
    if out_indices.shape[0] < n or out_first.shape[0] < min(max_distinct, n) \
            or (hashes.shape[0] > 0 and hashes.shape[0] < n):
        return BAD_SIZE
    bits = _table_bits(table, max_distinct)
    if bits < 0:
        return BAD_TABLE
    table[:] = 0
    return _build_bytes(data, offsets, 0, n, max_distinct, table, bits, out_indices,
                        out_first, hashes)


# -- decoding -------------------------------------------------------------------------------

@kernel
def _indices_ok(indices, n_dict):
    """All indices in ``[0, n_dict)`` (a min/max reduction: no early exit, so it
    vectorises; a uint64 index past 2**63 turns negative and is rejected too)."""
    lo = np.int64(0)
    hi = np.int64(-1)
    for i in range(indices.shape[0]):
        k = np.int64(indices[i])
        lo = min(lo, k)
        hi = max(hi, k)
    return lo >= 0 and hi < n_dict


@kernel
def _gather_words(items, indices, out_vals):
    for i in range(indices.shape[0]):
        out_vals[i] = items[indices[i]]


@kernel
def decode_fixed(items, width, indices, out):
    """``out`` row ``i`` = dictionary row ``indices[i]`` (rows of ``width`` bytes);
    ``out`` holds ``len(indices) * width`` bytes. Returns ``OK`` or a status."""
    if width < 1 or items.shape[0] % width != 0 or out.shape[0] % width != 0 \
            or out.shape[0] // width != indices.shape[0]:
        return BAD_SIZE
    if not _indices_ok(indices, items.shape[0] // width):
        return BAD_INDEX
    if width == 8:
        _gather_words(items.view(np.uint64), indices, out.view(np.uint64))
    elif width == 4:
        _gather_words(items.view(np.uint32), indices, out.view(np.uint32))
    elif width == 2:
        _gather_words(items.view(np.uint16), indices, out.view(np.uint16))
    elif width == 1:
        _gather_words(items, indices, out)
    else:
        for i in range(indices.shape[0]):
            k = np.int64(indices[i])
            out[i * width:(i + 1) * width] = items[k * width:(k + 1) * width]
    return OK


@kernel
def decode_variable_size(offsets, data, indices):
    """Check the dictionary (``offsets`` into ``data``) and ``indices``; returns the
    total bytes of the decoded values or a status."""
    if not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSETS
    n_dict = offsets.shape[0] - 1
    if not _indices_ok(indices, n_dict):
        return BAD_INDEX
    limit = np.int64(0x7FFFFFFFFFFFFFFF)
    total = np.int64(0)
    for i in range(indices.shape[0]):
        k = np.int64(indices[i])
        ln = offsets[k + 1] - offsets[k]
        if ln > limit - total:
            return TOO_LARGE
        total += ln
    return total


@kernel
def decode_variable_fill(offsets, data, indices, out_offsets, out_data):
    """Write the values: ``out_offsets`` (int64, ``len(indices) + 1``, from 0) and
    ``out_data`` (sized by :func:`decode_variable_size`). Re-checks its inputs, so
    a wrong call returns a status instead of writing out of bounds."""
    n = indices.shape[0]
    if out_offsets.shape[0] != n + 1:
        return BAD_SIZE
    if not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSETS
    if not _indices_ok(indices, offsets.shape[0] - 1):
        return BAD_INDEX
    room = out_data.shape[0]
    q = np.int64(0)
    for i in range(n):
        k = np.int64(indices[i])
        a = offsets[k]
        ln = offsets[k + 1] - a
        if ln > room - q:
            return BAD_SIZE
        q += ln
    q = np.uint64(0)
    out_offsets[0] = 0
    for i in range(n):
        k = np.int64(indices[i])
        a = np.uint64(offsets[k])
        b = np.uint64(offsets[k + 1])
        if b - a <= np.uint64(32):
            # short values: a byte loop (unsigned positions) beats a slice copy
            while a < b:
                out_data[q] = data[a]
                q += np.uint64(1)
                a += np.uint64(1)
        else:
            out_data[q:q + (b - a)] = data[a:b]
            q += b - a
        out_offsets[i + 1] = q
    return OK
