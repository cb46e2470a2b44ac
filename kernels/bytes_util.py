"""Little-endian integer reads and writes on ``uint8`` buffers, offset checks and byte
copies, for use inside kernels.

:func:`copy_bytes` copies a byte run with LLVM's ``memcpy``: numba compiles
``out[q:q + n] = src[p:p + n]`` on ``uint8`` arrays to a loop of byte loads and stores
(about 1 GB/s), ``memcpy`` moves runs of a few KiB at memory speed (4-12 GB/s here).
Kernels copying many such values (images and blobs in full-zip pages, sliced chunks)
call it. Bounds are the caller's to check, as for any index in a kernel. Example:
``copy_bytes(out, 2, src, 5, 3)`` is ``out[2:5] = src[5:8]``.
"""

import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

from ._jit import kernel


def copy_bytes(dst, dst_pos, src, src_pos, n):
    """``dst[dst_pos:dst_pos + n] = src[src_pos:src_pos + n]`` (``memcpy`` in a kernel;
    this Python body runs under ``NUMBA_DISABLE_JIT``)."""
    dst[dst_pos:dst_pos + n] = src[src_pos:src_pos + n]


@intrinsic
def _memcpy(typingctx, dst, dst_pos, src, src_pos, n):
    sig = types.void(dst, types.int64, src, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        d = context.make_array(signature.args[0])(context, builder, args[0])
        s = context.make_array(signature.args[2])(context, builder, args[2])
        cgutils.raw_memcpy(builder, builder.gep(d.data, [args[1]]),
                           builder.gep(s.data, [args[3]]), args[4], 1)
        return context.get_dummy_value()

    return sig, codegen


@overload(copy_bytes, inline="always")
def _copy_bytes_jit(dst, dst_pos, src, src_pos, n):
    if (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == types.uint8 and src.dtype == types.uint8
            and dst.layout == "C" and src.layout == "C" and dst.ndim == 1 and src.ndim == 1):
        def impl(dst, dst_pos, src, src_pos, n):
            if n > 0:
                _memcpy(dst, dst_pos, src, src_pos, n)
        return impl

    def sliced(dst, dst_pos, src, src_pos, n):  # other layouts and types
        dst[dst_pos:dst_pos + n] = src[src_pos:src_pos + n]
    return sliced


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
