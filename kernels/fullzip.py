"""Full-zip pages of variable-width values without repetition.

Each item is stored whole, one after another::

    control word (0, 1, 2 or 4 bytes; holds the definition level)
    if the item is valid (def == 0): length (``len_width`` bytes) then the value's bytes

Example (1-byte control word, u32 lengths): ``["ab", None]`` →
``00 02 00 00 00 61 62 | 01``. ``row_starts`` (the page's repetition index) records
where each item begins, plus the end.
"""

import numpy as np

from ._jit import kernel
from .bytes_util import copy_bytes, read_uint, write_uint

OK = 0
TRUNCATED = -1       # an item runs past the end of the buffer
TRAILING_BYTES = -2  # bytes are left over after the last item


@kernel
def zip_variable(offsets, data, defs, ctrl_width, len_width, out, row_starts):
    """Write items; ``defs`` is empty when every item is valid. ``out`` is sized by
    the caller: ``n * ctrl_width + valid * len_width + valid bytes``."""
    n = offsets.shape[0] - 1
    has_defs = defs.shape[0] > 0
    p = 0
    for i in range(n):
        row_starts[i] = p
        d = defs[i] if has_defs else 0
        if ctrl_width:
            write_uint(out, p, d, ctrl_width)
            p += ctrl_width
        if d == 0:
            ln = offsets[i + 1] - offsets[i]
            write_uint(out, p, ln, len_width)
            p += len_width
            out[p:p + ln] = data[offsets[i]:offsets[i + 1]]
            p += ln
    row_starts[n] = p
    return OK


@kernel
def unzip_variable_size(data, num_items, ctrl_width, len_width, def_mask, err):
    """Validate the items; return their total value bytes, or a negative status."""
    size = data.shape[0]
    pos = np.int64(0)
    total = np.int64(0)
    for i in range(num_items):
        if pos + ctrl_width > size:
            err[0] = i
            err[1] = pos
            return TRUNCATED
        d = np.int64(0)
        if ctrl_width:
            d = np.int64(read_uint(data, pos, ctrl_width)) & def_mask
            pos += ctrl_width
        if d == 0:
            if pos + len_width > size:
                err[0] = i
                err[1] = pos
                return TRUNCATED
            ln = read_uint(data, pos, len_width)
            pos += len_width
            if ln > np.uint64(size - pos):
                err[0] = i
                err[1] = pos - len_width
                return TRUNCATED
            pos += np.int64(ln)
            total += np.int64(ln)
    if pos != size:
        err[0] = num_items
        err[1] = pos
        return TRAILING_BYTES
    return total


@kernel
def unzip_variable_fill(data, num_items, ctrl_width, len_width, def_mask, out_offsets,
                        out_data, out_defs):
    """Copy items validated by :func:`unzip_variable_size` into Arrow-style offsets,
    bytes and definition levels."""
    pos = 0
    q = 0
    out_offsets[0] = 0
    for i in range(num_items):
        d = 0
        if ctrl_width:
            d = np.int64(read_uint(data, pos, ctrl_width)) & def_mask
            pos += ctrl_width
        out_defs[i] = d
        if d == 0:
            ln = np.int64(read_uint(data, pos, len_width))
            pos += len_width
            copy_bytes(out_data, q, data, pos, ln)
            pos += ln
            q += ln
        out_offsets[i + 1] = q
    return OK


# -- nested pages: items with repetition and definition levels ----------------------------
#
# With rep/def levels every level is an item: its control word is
# ``(rep << bits_def) | def`` and only *visible* items (def <= max_visible_def) carry
# a value: fixed-width values always (null slots included), variable-width values only
# when valid (def == 0), as ``length | bytes``. Example, list<int32> ``[[5], []]``
# (1-byte control words, bits_def 2): ``06 05 00 00 00 | 0a``.

BAD_LEVELS = -3      # a zipped item's rep level is above the page's maximum


@kernel
def zip_levels(rep, defs, max_rep, max_visible_def, bits_def, ctrl_width, width, data,
               offsets, len_width, out, row_starts):
    """Write one item per level into ``out`` (sized by the caller). ``width > 0``:
    fixed-width values, value ``v`` at ``data[v * width:]``; ``width == 0``: variable
    values ``data[offsets[v]:offsets[v + 1]]``. ``rep``/``defs`` may be empty.
    ``row_starts`` gets the byte offset of each row (an item with ``rep == max_rep``,
    or every item without repetition) and the end; returns the row count."""
    n = max(rep.shape[0], defs.shape[0])
    has_rep = rep.shape[0] > 0
    has_def = defs.shape[0] > 0
    p = 0
    v = 0
    rows = 0
    for i in range(n):
        r = np.int64(rep[i]) if has_rep else 0
        d = np.int64(defs[i]) if has_def else 0
        if not has_rep or r == max_rep:
            row_starts[rows] = p
            rows += 1
        if ctrl_width:
            write_uint(out, p, (r << bits_def) | d, ctrl_width)
            p += ctrl_width
        if d <= max_visible_def:
            if width > 0:
                out[p:p + width] = data[v * width:(v + 1) * width]
                p += width
            elif d == 0:
                ln = offsets[v + 1] - offsets[v]
                write_uint(out, p, ln, len_width)
                p += len_width
                out[p:p + ln] = data[offsets[v]:offsets[v + 1]]
                p += ln
            v += 1
    row_starts[rows] = p
    return rows


@kernel
def unzip_levels(data, ctrl_width, bits_def, max_rep, max_visible_def, width, len_width,
                 fill, out_rep, out_def, out_data, out_offsets, counts, err):
    """Parse every item in ``data`` (as :func:`zip_levels` writes them).

    Counting (``fill`` false) validates and sets ``counts = [items, visible items,
    value bytes]``. Filling writes the levels, the visible values back to back
    (``out_data``) and, for variable width, their offsets (``out_offsets``, visible
    items + 1; null slots are empty). ``err = [item, byte]`` on failure."""
    size = data.shape[0]
    def_mask = (np.int64(1) << bits_def) - 1
    pos = np.int64(0)
    n = 0
    nvis = 0
    q = np.int64(0)
    if fill and width == 0:
        out_offsets[0] = 0
    while pos < size:
        err[0] = n
        err[1] = pos
        if pos + ctrl_width > size:
            return TRUNCATED
        cw = np.int64(0)
        if ctrl_width:
            cw = np.int64(read_uint(data, pos, ctrl_width))
            pos += ctrl_width
        r = cw >> bits_def
        d = cw & def_mask
        if r > max_rep:
            return BAD_LEVELS
        if fill:
            if out_rep.shape[0]:
                out_rep[n] = r
            if out_def.shape[0]:
                out_def[n] = d
        if d <= max_visible_def:
            if width > 0:
                if width > size - pos:
                    return TRUNCATED
                if fill:
                    out_data[q:q + width] = data[pos:pos + width]
                pos += width
                q += width
            elif d == 0:
                if pos + len_width > size:
                    return TRUNCATED
                ln = read_uint(data, pos, len_width)
                pos += len_width
                if ln > np.uint64(size - pos):
                    return TRUNCATED
                ln = np.int64(ln)
                if fill:
                    out_data[q:q + ln] = data[pos:pos + ln]
                pos += ln
                q += ln
            if fill and width == 0:
                out_offsets[nvis + 1] = q
            nvis += 1
        n += 1
        if ctrl_width == 0 and width == 0 and len_width == 0:
            return TRUNCATED  # items of zero bytes cannot be counted
    counts[0] = n
    counts[1] = nvis
    counts[2] = q
    return OK
