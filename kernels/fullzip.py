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
from .bytes_util import read_uint, write_uint

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
            out_data[q:q + ln] = data[pos:pos + ln]
            pos += ln
            q += ln
        out_offsets[i + 1] = q
    return OK
