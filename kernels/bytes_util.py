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
def read_u32(buf, pos):
    """A little-endian u32 at ``buf[pos]`` as int64. Written out byte by byte with
    constant shifts, which LLVM turns into one load (:func:`read_uint`'s loop over a
    run-time width stays byte by byte)."""
    return np.int64(np.uint32(buf[pos]) | (np.uint32(buf[pos + 1]) << np.uint32(8))
                    | (np.uint32(buf[pos + 2]) << np.uint32(16))
                    | (np.uint32(buf[pos + 3]) << np.uint32(24)))


@kernel
def read_u64(buf, pos):
    """A little-endian u64 at ``buf[pos]`` as int64 (wrapping above 2**63 - 1)."""
    return np.int64(np.uint64(read_u32(buf, pos))
                    | (np.uint64(read_u32(buf, pos + 4)) << np.uint64(32)))


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
