"""Little-endian integer reads and writes on ``uint8`` buffers, and offset checks, for
use inside kernels."""

import numpy as np

from ._jit import kernel


@kernel
def read_uint(buf, pos, nbytes):
    """Unsigned little-endian integer of ``nbytes`` (1..8) bytes at ``buf[pos]``."""
    v = np.uint64(0)
    for k in range(nbytes):
        v |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
    return v


@kernel
def write_uint(buf, pos, value, nbytes):
    """Store ``value`` as ``nbytes`` little-endian bytes at ``buf[pos]``."""
    v = np.uint64(value)
    for k in range(nbytes):
        buf[pos + k] = np.uint8((v >> np.uint64(8 * k)) & np.uint64(0xFF))


@kernel
def offsets_ok(offsets, size):
    """Arrow-style offsets: at least one, non-negative, non-decreasing, ending within
    ``size`` bytes."""
    n = offsets.shape[0]
    if n < 1 or offsets[0] < 0:
        return False
    for i in range(1, n):
        if offsets[i] < offsets[i - 1]:
            return False
    return offsets[n - 1] <= size
