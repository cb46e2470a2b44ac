"""Many ranged reads of one open file in one call: ``pread`` from inside a kernel.

``pread_ranges(fd, buf, starts, sizes, pos, first)`` reads range ``i`` (``sizes[i]``
bytes at file offset ``starts[i]``) into ``buf[pos[i]:pos[i] + sizes[i]]`` for ``i`` from
``first`` on, one ``pread`` system call each (more when the system returns fewer bytes).
A random take of 256 rows from a local file makes 256 such requests; issued one by one
from Python each costs a slice, a buffer export and a call (2-4 us) on top of the
system call, here none of that, and without the GIL held.

Returns the number of ranges read in full counted from 0 (``len(starts)`` when all
were): at a failed or short ``pread`` (an error, the end of the file) it stops at that
range, and the caller repeats that one read in Python to learn the error. Returns -1,
having read nothing, when a range does not fit ``buf`` or a size is negative.
Example: ``starts=[100, 0]``, ``sizes=[2, 3]``, ``pos=[0, 2]`` fills ``buf[0:5]`` with the
file's bytes 100-101 then 0-2 and returns 2.

POSIX only (the caller uses it where ``os.preadv`` exists). Under ``NUMBA_DISABLE_JIT``
each read is ``os.preadv`` (the same contract, as plain Python).
"""

import os

import numba
from numba.core import types

from .._jit import kernel

OUT_OF_BOUNDS = -1

if numba.config.DISABLE_JIT:
    def _pread_into(fd, buf, at, n, offset):
        try:
            return os.preadv(fd, [buf[at:at + n]], offset)
        except OSError:
            return -1
else:
    _pread = types.ExternalFunction(
        "pread", types.intp(types.intc, types.voidptr, types.uintp, types.int64))

    @kernel(inline=True)
    def _pread_into(fd, buf, at, n, offset):
        return _pread(fd, buf.ctypes.data + at, n, offset)


@kernel
def pread_ranges(fd, buf, starts, sizes, pos, first):
    for i in range(first, starts.shape[0]):
        n = sizes[i]
        p = pos[i]
        if n < 0 or p < 0 or p > buf.shape[0] or n > buf.shape[0] - p:
            return OUT_OF_BOUNDS
    for i in range(first, starts.shape[0]):
        n = sizes[i]
        done = 0
        while done < n:
            got = _pread_into(fd, buf, pos[i] + done, n - done, starts[i] + done)
            if got <= 0:
                return i
            done += got
    return starts.shape[0]
