"""Shared fixtures for the kernel property tests (the hypothesis profiles are
registered once, in ``tests/conftest.py``).

Fixtures:

* ``as_input`` (parametrised ``writable`` / ``readonly``): turns an array into a kernel
  input. ``readonly`` goes through ``np.frombuffer(bytes(...))``, which is what decoders
  get from files, so every property runs against both numba specialisations.
* ``guarded``: the :class:`Guarded` class, an output array with canary bytes on both
  sides, to catch writes outside the output a kernel was given.
"""

import numpy as np
import pytest

CANARY = 0xA5


def _writable(arr):
    return np.array(arr, copy=True, order="C")


def _readonly(arr):
    arr = np.ascontiguousarray(arr)
    out = np.frombuffer(arr.tobytes(), dtype=arr.dtype).reshape(arr.shape)
    assert not out.flags.writeable
    return out


@pytest.fixture(scope="session", params=["writable", "readonly"])
def as_input(request):
    return _writable if request.param == "writable" else _readonly


class Guarded:
    """A caller-allocated output of exactly ``shape`` inside a larger canary-filled block.

    ``out`` is a C-contiguous view (1-D: a slice; 2-D: a block of whole rows) whose
    neighbours on both sides hold :data:`CANARY` bytes; :meth:`intact` checks them.
    """

    PAD = 3  # elements (1-D) or rows (2-D) of canary on each side

    def __init__(self, shape, dtype, fill=0):
        dtype = np.dtype(dtype)
        shape = (shape,) if np.isscalar(shape) else tuple(shape)
        rows = shape[0] + 2 * self.PAD
        row_elems = int(np.prod(shape[1:], dtype=np.int64))
        raw = np.full(rows * row_elems * dtype.itemsize, CANARY, dtype=np.uint8)
        self.full = raw.view(dtype).reshape((rows,) + shape[1:])
        self.out = self.full[self.PAD:self.PAD + shape[0]]
        self.out[...] = fill
        assert self.out.flags.c_contiguous and self.out.shape == shape
        self._raw = raw
        self._inner = (self.PAD * row_elems * dtype.itemsize,
                       (self.PAD + shape[0]) * row_elems * dtype.itemsize)

    def intact(self) -> bool:
        lo, hi = self._inner
        return bool(np.all(self._raw[:lo] == CANARY) and np.all(self._raw[hi:] == CANARY))


@pytest.fixture(scope="session")
def guarded():
    return Guarded
