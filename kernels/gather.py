"""Gathering selected values straight out of encoded chunks (random access).

``gather_fixed``: value ``i`` is ``width`` bytes at ``data[pos[i]]``.
``gather_bits``: value ``i`` is the bit at bit position ``bitpos[i]`` (LSB-first).
``gather_variable_*``: value ``i`` is item ``local[i]`` of the Variable chunk buffer
that starts at ``buf_start[i]`` (offsets relative to that buffer, see
``kernels/variable.py``); ``buf_size[i]`` and ``buf_count[i]`` bound it.

Positions come from validated chunk tables; the kernels still check every access and
return a negative status rather than read outside ``data``.
"""

import numpy as np

from ._jit import kernel
from .bytes_util import read_uint

OK = 0
OUT_OF_BOUNDS = -1
BAD_OFFSET = -2


@kernel
def gather_fixed(data, pos, width, out):
    n = data.shape[0]
    for i in range(pos.shape[0]):
        p = pos[i]
        if p < 0 or p > n - width:
            return OUT_OF_BOUNDS
        out[i * width:(i + 1) * width] = data[p:p + width]
    return OK


@kernel
def gather_bits(data, bitpos, out):
    n = data.shape[0]
    out[:] = 0
    for i in range(bitpos.shape[0]):
        b = bitpos[i]
        if b < 0 or (b >> 3) >= n:
            return OUT_OF_BOUNDS
        if (data[b >> 3] >> (b & 7)) & 1:
            out[i >> 3] |= np.uint8(1 << (i & 7))
    return OK


@kernel
def gather_variable_size(data, buf_start, buf_size, buf_count, local, offset_width, err):
    """Validate the selected items' offsets; return their total bytes or a status."""
    n = data.shape[0]
    total = np.int64(0)
    for i in range(local.shape[0]):
        s = buf_start[i]
        size = buf_size[i]
        k = local[i]
        cnt = buf_count[i]
        # compare by division so no product can overflow int64
        if s < 0 or size < 0 or s > n or size > n - s or k < 0 or k >= cnt \
                or cnt >= size // offset_width:
            err[0] = i
            return OUT_OF_BOUNDS
        a = np.int64(read_uint(data, s + k * offset_width, offset_width))
        b = np.int64(read_uint(data, s + (k + 1) * offset_width, offset_width))
        if a < (cnt + 1) * offset_width or b < a or b > size:
            err[0] = i
            return BAD_OFFSET
        total += b - a
    return total


@kernel
def gather_variable_fill(data, buf_start, local, offset_width, out_offsets, out_data):
    """Copy the items validated by :func:`gather_variable_size`."""
    q = np.int64(0)
    out_offsets[0] = 0
    for i in range(local.shape[0]):
        s = buf_start[i]
        k = local[i]
        a = np.int64(read_uint(data, s + k * offset_width, offset_width))
        b = np.int64(read_uint(data, s + (k + 1) * offset_width, offset_width))
        out_data[q:q + b - a] = data[s + a:s + b]
        q += b - a
        out_offsets[i + 1] = q
    return OK
