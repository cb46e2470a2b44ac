"""Walking JSONB values (layout in :mod:`.jsonb`) for the JSON SQL functions.

A *location* is one JSONB value inside a data buffer: ``start`` (the byte its payload
starts at: a container's header, a scalar's payload), ``length`` (payload bytes) and
``kind`` (its entry type, ``E_NULL`` .. ``E_CONTAINER``; ``NONE`` = no value). The
kernels map arrays of locations to arrays of locations, so a JSONPath is evaluated a
step at a time over every row at once:

- :func:`roots`: each row's value (a row's JSONB is a container, or a scalar header
  then one entry and its payload), ``NONE`` for a null row;
- :func:`key_lookup`: each object's value under one key (``NONE`` where absent or
  not an object);
- :func:`child_counts` / :func:`child_fill`: the items of each array (``want`` 1) or
  the values of each object (``want`` 2), back to back, with the index of the parent
  location and the item's position in its container (count, allocate, fill);
- :func:`fill_values`: the locations as standalone JSONB values (a container's bytes
  as they are; a scalar behind a scalar header ``20000000`` and its entry);
- :func:`number_values`: the numbers at number locations, as int64 where they are
  integers that fit (class 0), else as float64 (class 1; class 2: an unsigned integer
  above int64's range).

Example: in ``{"a":[1,"x"]}`` (``40000001 10000001 5000000f 61 80000002 20000002
10000001 50 01 78``) the root is ``(0, 28, E_CONTAINER)``; key ``a`` gives ``(13, 15,
E_CONTAINER)``; its items are ``(25, 2, E_NUMBER)`` and ``(27, 1, E_STRING)``.

Every header, entry and length is checked against the location it lies in before it
is used; a value that breaks the layout is a negative status, with ``err[0]`` the index
of the offending location (row for :func:`roots`).
"""

import numpy as np

from .._jit import kernel
from ..bytes_util import offsets_ok
from .jsonb import (
    ARRAY,
    BAD_ENTRY,
    BAD_HEADER,
    BAD_NUMBER,
    BAD_OFFSETS,
    COUNT_MASK,
    E_CONTAINER,
    E_STRING,
    LENGTH_MASK,
    N_FLOAT,
    N_INF,
    N_INT,
    N_NAN,
    N_NEG_INF,
    N_UINT,
    N_ZERO,
    OBJECT,
    OK,
    SCALAR,
    TRUNCATED,
    UNSUPPORTED,
    read_be,
    read_be32,
)

NONE = -1  # no value at this location
WANT_ARRAY = 1
WANT_OBJECT = 2
INT, FLOAT, BIG_UINT = 0, 1, 2


@kernel
def roots(offsets, data, valid, out_start, out_length, out_kind, err):
    """Each row's value as a location (``valid[r]`` 0: ``NONE``); a status."""
    n = offsets.shape[0] - 1
    if n < 0 or valid.shape[0] != n or out_start.shape[0] < n or out_length.shape[0] < n \
            or out_kind.shape[0] < n or not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSETS
    for r in range(n):
        out_kind[r] = NONE
        out_start[r] = 0
        out_length[r] = 0
        if valid[r] == 0:
            continue
        s = offsets[r]
        e = offsets[r + 1]
        if e - s < 4:
            err[0] = r
            return TRUNCATED
        h = read_be32(data, s)
        t = h & 0xE0000000
        if t == SCALAR:
            if e - s < 8:
                err[0] = r
                return TRUNCATED
            entry = read_be32(data, s + 4)
            if entry >> 31 != 0:
                err[0] = r
                return BAD_ENTRY
            size = entry & LENGTH_MASK
            if size > e - s - 8:
                err[0] = r
                return TRUNCATED
            out_start[r] = s + 8
            out_length[r] = size
            out_kind[r] = (entry >> 28) & 7
        elif t == ARRAY or t == OBJECT:
            out_start[r] = s
            out_length[r] = e - s
            out_kind[r] = E_CONTAINER
        else:
            err[0] = r
            return BAD_HEADER
    return OK


@kernel(inline=True)
def _container(data, s, size, want):
    """``(count, entries, payload)`` of the container at ``data[s:s+size]`` when it is of
    the wanted type (``want``: 1 array, 2 object, 3 either), ``count`` -1 when it is of
    the other type, or ``(status, 0, 0)`` with a negative status."""
    if size < 4 or s < 0 or s > data.shape[0] - size:
        return TRUNCATED, 0, 0
    h = read_be32(data, s)
    t = h & 0xE0000000
    n = h & COUNT_MASK
    if t == ARRAY:
        if want & WANT_ARRAY == 0:
            return -1, 0, 0
        table = 4 * n
    elif t == OBJECT:
        if want & WANT_OBJECT == 0:
            return -1, 0, 0
        table = 8 * n
    else:
        return BAD_HEADER, 0, 0
    if table > size - 4:
        return TRUNCATED, 0, 0
    return n, s + 4, s + 4 + table


@kernel
def key_lookup(data, start, length, kind, key, out_start, out_length, out_kind, err):
    """The value under ``key`` (UTF-8 bytes) of each object location; a status."""
    m = start.shape[0]
    if length.shape[0] != m or kind.shape[0] != m or out_start.shape[0] < m \
            or out_length.shape[0] < m or out_kind.shape[0] < m:
        return BAD_OFFSETS
    klen = key.shape[0]
    for i in range(m):
        out_kind[i] = NONE
        out_start[i] = 0
        out_length[i] = 0
        if kind[i] != E_CONTAINER:
            continue
        s = start[i]
        end = s + length[i]
        n, entries, payload = _container(data, s, length[i], WANT_OBJECT)
        if n == -1:
            continue
        if n < -1:
            err[0] = i
            return n
        cur = payload
        hit = -1
        for k in range(n):  # the keys: string entries, payloads back to back
            entry = read_be32(data, entries + 4 * k)
            if entry >> 28 != E_STRING:
                err[0] = i
                return BAD_ENTRY
            size = entry & LENGTH_MASK
            if size > end - cur:
                err[0] = i
                return TRUNCATED
            if hit < 0 and size == klen:
                same = True
                for b in range(klen):
                    if data[cur + b] != key[b]:
                        same = False
                        break
                if same:
                    hit = k
            cur += size
        if hit < 0:
            continue
        for k in range(n):  # the values follow the keys, in the same order
            entry = read_be32(data, entries + 4 * (n + k))
            if entry >> 31 != 0:
                err[0] = i
                return BAD_ENTRY
            size = entry & LENGTH_MASK
            if size > end - cur:
                err[0] = i
                return TRUNCATED
            if k == hit:
                out_start[i] = cur
                out_length[i] = size
                out_kind[i] = (entry >> 28) & 7
                break
            cur += size
    return OK


@kernel
def child_counts(data, start, length, kind, want, out_counts, err):
    """How many items each location of the wanted container type has (others: 0)."""
    m = start.shape[0]
    if length.shape[0] != m or kind.shape[0] != m or out_counts.shape[0] < m:
        return BAD_OFFSETS
    for i in range(m):
        out_counts[i] = 0
        if kind[i] != E_CONTAINER:
            continue
        n, entries, payload = _container(data, start[i], length[i], want)
        if n < -1:
            err[0] = i
            return n
        if n > 0:
            out_counts[i] = n
    return OK


@kernel
def child_fill(data, start, length, kind, want, first, out_parent, out_pos, out_start,
               out_length, out_kind, err):
    """The items of each wanted container from ``out_*[first[i]]`` on (``first``: the
    exclusive cumulative sum of :func:`child_counts`); a status."""
    m = start.shape[0]
    if length.shape[0] != m or kind.shape[0] != m or first.shape[0] < m:
        return BAD_OFFSETS
    total = out_parent.shape[0]
    if out_pos.shape[0] != total or out_start.shape[0] != total \
            or out_length.shape[0] != total or out_kind.shape[0] != total:
        return BAD_OFFSETS
    for i in range(m):
        if kind[i] != E_CONTAINER:
            continue
        s = start[i]
        end = s + length[i]
        n, entries, payload = _container(data, s, length[i], want)
        if n == -1:
            continue
        if n < -1:
            err[0] = i
            return n
        if first[i] < 0 or n > total - first[i]:
            return BAD_OFFSETS
        cur = payload
        items = entries
        if read_be32(data, s) & 0xE0000000 == OBJECT:
            for k in range(n):  # skip the keys
                entry = read_be32(data, entries + 4 * k)
                size = entry & LENGTH_MASK
                if entry >> 28 != E_STRING:
                    err[0] = i
                    return BAD_ENTRY
                if size > end - cur:
                    err[0] = i
                    return TRUNCATED
                cur += size
            items = entries + 4 * n
        o = first[i]
        for k in range(n):
            entry = read_be32(data, items + 4 * k)
            if entry >> 31 != 0:
                err[0] = i
                return BAD_ENTRY
            size = entry & LENGTH_MASK
            if size > end - cur:
                err[0] = i
                return TRUNCATED
            out_parent[o + k] = i
            out_pos[o + k] = k
            out_start[o + k] = cur
            out_length[o + k] = size
            out_kind[o + k] = (entry >> 28) & 7
            cur += size
    return OK


@kernel(inline=True)
def _be32_out(out, p, v):
    out[p] = np.uint8((v >> 24) & 0xFF)
    out[p + 1] = np.uint8((v >> 16) & 0xFF)
    out[p + 2] = np.uint8((v >> 8) & 0xFF)
    out[p + 3] = np.uint8(v & 0xFF)


@kernel
def fill_values(data, start, length, kind, out_offsets, out):
    """Each location (not ``NONE``) as a standalone JSONB value at
    ``out[out_offsets[i]:out_offsets[i + 1]]`` (``length[i]`` bytes for a container,
    ``8 + length[i]`` for a scalar, 0 for ``NONE``); a status."""
    m = start.shape[0]
    if length.shape[0] != m or kind.shape[0] != m or out_offsets.shape[0] != m + 1 \
            or out_offsets[0] != 0:
        return BAD_OFFSETS
    for i in range(m):
        s = start[i]
        n = length[i]
        head = 0 if kind[i] == E_CONTAINER or kind[i] == NONE else 8
        size = 0 if kind[i] == NONE else n + head
        p = out_offsets[i]
        if out_offsets[i + 1] - p != size or out_offsets[i + 1] > out.shape[0] or p < 0:
            return BAD_OFFSETS
        if size == 0:
            continue
        if s < 0 or n < 0 or n > data.shape[0] - s or n > LENGTH_MASK:
            return TRUNCATED
        if head:
            _be32_out(out, p, SCALAR)
            _be32_out(out, p + 4, (kind[i] << 28) | n)
        out[p + head:p + head + n] = data[s:s + n]
    return OK


@kernel
def number_values(data, start, length, out_int, out_float, out_class, err):
    """The number payload at each location: ``out_class`` ``INT`` (``out_int``; also in
    ``out_float``), ``FLOAT`` or ``BIG_UINT`` (``out_float``); a status."""
    m = start.shape[0]
    if length.shape[0] != m or out_int.shape[0] < m or out_float.shape[0] < m \
            or out_class.shape[0] < m:
        return BAD_OFFSETS
    word = np.empty(1, np.uint64)
    as_float = word.view(np.float64)
    for i in range(m):
        p = start[i]
        n = length[i]
        if n < 1 or p < 0 or n > data.shape[0] - p:
            err[0] = i
            return BAD_NUMBER if n < 1 else TRUNCATED
        tag = data[p] & 0xF0
        size = n - 1
        out_int[i] = 0
        out_class[i] = FLOAT
        if tag == N_ZERO or tag == N_NAN or tag == N_INF or tag == N_NEG_INF:
            if size != 0 or data[p] & 0x0F != 0:
                err[0] = i
                return BAD_NUMBER
            if tag == N_ZERO:
                out_class[i] = INT
                out_float[i] = 0.0
            elif tag == N_NAN:
                out_float[i] = np.nan
            else:
                out_float[i] = np.inf if tag == N_INF else -np.inf
        elif tag == N_INT or tag == N_UINT:
            if size != 1 and size != 2 and size != 4 and size != 8:
                err[0] = i
                return BAD_NUMBER
            v = read_be(data, p + 1, size)
            if tag == N_UINT:
                if v >> np.uint64(63) != 0:
                    out_class[i] = BIG_UINT
                    out_float[i] = float(v)
                else:
                    out_class[i] = INT
                    out_int[i] = np.int64(v)
                    out_float[i] = float(np.int64(v))
            else:
                width = np.uint64(8 * size)
                one = np.uint64(1)
                if size < 8 and (v >> (width - one)) & one == one:  # sign-extend
                    v |= ~((one << width) - one)
                out_class[i] = INT
                out_int[i] = np.int64(v)
                out_float[i] = float(np.int64(v))
        elif tag == N_FLOAT:
            if size != 8:
                err[0] = i
                return BAD_NUMBER
            word[0] = read_be(data, p + 1, 8)
            out_float[i] = as_float[0]
        else:
            err[0] = i
            return UNSUPPORTED
    return OK
