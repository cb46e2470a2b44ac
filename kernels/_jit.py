"""The single jit policy for every kernel.

``cache=True`` so users pay compilation once per machine; ``nogil=True`` so readers
can decode columns on several threads. No fastmath: float bits must round-trip.
Under ``NUMBA_DISABLE_JIT=1`` numba returns the plain Python function, which is how
the kernel tests also run as ordinary Python (for coverage and as a second oracle).
"""

import numba

__all__ = ["kernel"]


def kernel(fn):
    """Compile ``fn`` with the project's jit policy."""
    return numba.njit(cache=True, nogil=True)(fn)
