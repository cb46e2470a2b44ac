"""Statistics the encoding selection needs (FORMAT_FACTS §2.6), one pass each.

Values are rows of ``width`` bytes in a ``uint8`` buffer (view typed arrays with
``.view(np.uint8)``: every comparison is on bits, so ``-0.0 != 0.0`` and NaN payloads
are kept apart), or Arrow-style ``int64`` offsets into a ``uint8`` buffer.

* **Hash** (``hash_fixed``, ``hash_variable``): XXH64 of each value's bytes with a
  caller-chosen seed, so results are deterministic and match any XXH64 library
  (``XXH64(b"", 0) = 0xEF46DB3751D8E999``, ``XXH64(b"abc", 0) = 0x44BC2CF5AD770999``).
  A fixed row and a variable value with the same bytes hash alike.
* **HyperLogLog** (``hll_fixed``, ``hll_variable``, ``hll_estimate``): ``registers``
  is a caller-allocated ``uint8`` array of ``m = 2**p`` zeros, ``4 <= p <= 18``;
  adding keeps, per register, the maximum rank seen, so one array can absorb many
  calls (and two sketches merge with ``np.maximum``). For hash ``h``: register
  ``h >> (64 - p)``, rank = leading zeros of ``h << p`` plus one (at most
  ``65 - p``). The estimate is Ertl's improved raw estimator (arXiv:1702.01284,
  algorithm 6), unbiased from 0 up to ~2**60 without empirical bias tables. Relative
  standard error ≈ ``1.04 / sqrt(m)``: 1.6 % at ``p = 12`` (4 KiB of registers, the
  suggested default), 0.8 % at ``p = 14``; counts far below ``m`` come out almost
  exact. Example: the 3 distinct values of ``[5, 5, 7, 9]`` estimate to 3.001 (p = 12).
* **Run count** (``run_count``): number of maximal runs of equal consecutive values
  (``[1, 1, 2, 2, 2, 3]`` → 3), which decides RLE.
* **Bit widths** (``bit_widths``): per chunk of values, the bit length of the OR of
  the chunk's values read as unsigned little-endian integers, as the reference
  measures it: no zigzag, so a negative signed value needs the full width
  (``int8 [1, 2, 3]`` → 2, ``int8 [-1, 2]`` → 8).
* **Variable sizes** (``variable_sizes``): longest value and total bytes.
* **Byte-position entropy** (``byte_position_entropy``): over the first
  ``min(n, max_sample)`` values (the reference samples 64), for each byte position
  ``j`` the Shannon entropy ``H_j = -sum_b p_jb * log2(p_jb)`` (``p_jb`` = share of
  sampled values whose byte ``j`` is ``b``), stored as ``floor(1000 * H_j)``. "Auto"
  byte-stream-split is chosen when ``mean_j(H_j) < 8 * sensitivity`` (sensitivity
  0.5, i.e. below 4 bits; see :func:`bss_auto`). Example: float32 ``[1.0, 2.0]``
  (``00 00 80 3f``, ``00 00 00 40``) → ``[0, 0, 1000, 1000]``.
"""

import numba
import numpy as np

from ._jit import kernel
from .bytes_util import offsets_ok

OK = 0
BAD_SIZE = -1       # width < 1, buffer not a whole number of rows, or an output too small
BAD_OFFSETS = -2    # offsets negative, decreasing or past the data buffer
BAD_REGISTERS = -3  # HLL registers: not 2**p entries with 4 <= p <= 18

MIN_PRECISION = 4
MAX_PRECISION = 18
DEFAULT_PRECISION = 12
ENTROPY_SAMPLE = 64        # values the reference samples for byte-position entropy
BITWIDTH_CHUNK = 1024      # values per bit-width chunk in the reference
BSS_AUTO_SENSITIVITY = 0.5

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_M32 = np.uint64(0xFFFFFFFF)
_BYTE = np.uint64(0xFF)
_MINUS_P1 = np.uint64((1 << 64) - 0x9E3779B185EBCA87)

# Hashing needs arithmetic modulo 2**64, and HLL a count of leading zeros. Compiled
# uint64 arithmetic wraps; NumPy scalars (what kernels see under NUMBA_DISABLE_JIT) warn
# on overflow instead, which the test suite turns into errors, so there the same sums
# go through Python ints. Compiled, clz64 is LLVM's ctlz (5x faster than a loop).
if numba.config.DISABLE_JIT:
    _MASK = (1 << 64) - 1

    def mul64(a, b):
        return np.uint64((int(a) * int(b)) & _MASK)

    def add64(a, b):
        return np.uint64((int(a) + int(b)) & _MASK)

    def clz64(x):
        return 64 - int(x).bit_length()
else:
    from numba.cpython.unsafe.numbers import leading_zeros

    @kernel
    def mul64(a, b):
        return np.uint64(a) * np.uint64(b)

    @kernel
    def add64(a, b):
        return np.uint64(a) + np.uint64(b)

    @kernel
    def clz64(x):
        return np.int64(leading_zeros(np.uint64(x)))


@kernel
def load_le(data, pos, nbytes):
    """Little-endian unsigned integer of ``nbytes`` (0..8) bytes at ``data[pos]``.
    Unsigned positions: numba checks every signed index for a negative value, which
    made variable-width hashing 2x slower."""
    p = np.uint64(pos)
    v = np.uint64(0)
    for k in range(nbytes):
        v |= np.uint64(data[p + np.uint64(k)]) << np.uint64(8 * k)
    return v


@kernel
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@kernel
def _round(acc, lane):
    return mul64(_rotl(add64(acc, mul64(lane, _P2)), 31), _P1)


@kernel
def _merge(h, v):
    return add64(mul64(h ^ _round(np.uint64(0), v), _P1), _P4)


@kernel
def _tail8(h, lane):
    """One 8-byte lane of the XXH64 tail."""
    return add64(mul64(_rotl(h ^ _round(np.uint64(0), lane), 27), _P1), _P4)


@kernel
def _tail4(h, lane):
    return add64(mul64(_rotl(h ^ mul64(lane, _P1), 23), _P2), _P3)


@kernel
def _tail1(h, byte):
    return mul64(_rotl(h ^ mul64(byte, _P5), 11), _P1)


@kernel
def _avalanche(h):
    h = mul64(h ^ (h >> np.uint64(33)), _P2)
    h = mul64(h ^ (h >> np.uint64(29)), _P3)
    return h ^ (h >> np.uint64(32))


@kernel
def xxh64_word(v, nbytes, seed):
    """XXH64 of the ``nbytes`` (0..8) little-endian bytes held in ``v``."""
    v = np.uint64(v)
    h = add64(add64(np.uint64(seed), _P5), np.uint64(nbytes))
    k = 0
    if nbytes == 8:
        h = _tail8(h, v)
        k = 8
    elif nbytes >= 4:
        h = _tail4(h, v & _M32)
        k = 4
    while k < nbytes:
        h = _tail1(h, (v >> np.uint64(8 * k)) & _BYTE)
        k += 1
    return _avalanche(h)


@kernel
def xxh64(data, start, length, seed):
    """XXH64 of ``data[start:start + length]`` (the caller checks the range)."""
    seed = np.uint64(seed)
    p = start
    end = start + length
    if length >= 32:
        v1 = add64(add64(seed, _P1), _P2)
        v2 = add64(seed, _P2)
        v3 = seed
        v4 = add64(seed, _MINUS_P1)
        while p <= end - 32:
            v1 = _round(v1, load_le(data, p, 8))
            v2 = _round(v2, load_le(data, p + 8, 8))
            v3 = _round(v3, load_le(data, p + 16, 8))
            v4 = _round(v4, load_le(data, p + 24, 8))
            p += 32
        h = add64(add64(_rotl(v1, 1), _rotl(v2, 7)), add64(_rotl(v3, 12), _rotl(v4, 18)))
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = add64(seed, _P5)
    h = add64(h, np.uint64(length))
    while p + 8 <= end:
        h = _tail8(h, load_le(data, p, 8))
        p += 8
    if p + 4 <= end:
        h = _tail4(h, load_le(data, p, 4))
        p += 4
    while p < end:
        h = _tail1(h, load_le(data, p, 1))
        p += 1
    return _avalanche(h)


@kernel
def _rows_ok(data, width):
    return width >= 1 and data.shape[0] % width == 0




@kernel
def _hash_words(vals, width, seed, out):
    for i in range(vals.shape[0]):
        out[i] = xxh64_word(vals[i], width, seed)


@kernel
def hash_fixed(data, width, seed, out):
    """``out[i]`` (uint64) = XXH64 of row ``i``; returns the row count or ``BAD_SIZE``."""
    if not _rows_ok(data, width):
        return BAD_SIZE
    n = data.shape[0] // width
    if out.shape[0] < n:
        return BAD_SIZE
    if width == 8:
        _hash_words(data.view(np.uint64), 8, seed, out)
    elif width == 4:
        _hash_words(data.view(np.uint32), 4, seed, out)
    elif width == 2:
        _hash_words(data.view(np.uint16), 2, seed, out)
    elif width == 1:
        _hash_words(data, 1, seed, out)
    elif width < 8:
        for i in range(n):
            out[i] = xxh64_word(load_le(data, i * width, width), width, seed)
    else:
        for i in range(n):
            out[i] = xxh64(data, i * width, width, seed)
    return n


@kernel
def hash_variable(offsets, data, seed, out):
    """``out[i]`` = XXH64 of value ``i``; returns the value count or a status."""
    if not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSETS
    n = offsets.shape[0] - 1
    if out.shape[0] < n:
        return BAD_SIZE
    for i in range(n):
        out[i] = xxh64(data, offsets[i], offsets[i + 1] - offsets[i], seed)
    return n


# -- HyperLogLog ----------------------------------------------------------------------------

@kernel
def precision(registers):
    """``p`` for ``2**p`` registers, or ``BAD_REGISTERS``."""
    m = registers.shape[0]
    for p in range(MIN_PRECISION, MAX_PRECISION + 1):
        if m == 1 << p:
            return p
    return BAD_REGISTERS


@kernel
def _hll_add(registers, p, h):
    idx = h >> np.uint64(64 - p)
    # the bit below the p shifted-out ones caps the rank at 65 - p
    rank = clz64((h << np.uint64(p)) | (np.uint64(1) << np.uint64(p - 1))) + 1
    if rank > registers[idx]:
        registers[idx] = rank


@kernel
def _hll_words(vals, width, seed, p, registers):
    for i in range(vals.shape[0]):
        _hll_add(registers, p, xxh64_word(vals[i], width, seed))


@kernel
def hll_fixed(data, width, seed, registers):
    """Add every row to the sketch; returns the row count or a status."""
    p = precision(registers)
    if p < 0:
        return BAD_REGISTERS
    if not _rows_ok(data, width):
        return BAD_SIZE
    n = data.shape[0] // width
    if width == 8:
        _hll_words(data.view(np.uint64), 8, seed, p, registers)
    elif width == 4:
        _hll_words(data.view(np.uint32), 4, seed, p, registers)
    elif width == 2:
        _hll_words(data.view(np.uint16), 2, seed, p, registers)
    elif width == 1:
        _hll_words(data, 1, seed, p, registers)
    elif width < 8:
        for i in range(n):
            _hll_add(registers, p, xxh64_word(load_le(data, i * width, width), width, seed))
    else:
        for i in range(n):
            _hll_add(registers, p, xxh64(data, i * width, width, seed))
    return n


@kernel
def hll_variable_hashes(offsets, data, seed, registers, out_hashes):
    """Add every value to the sketch, keeping each value's XXH64 in ``out_hashes[i]``
    (uint64, at least one per value) so that a dictionary build that follows need not
    hash the values again, or not keeping them when ``out_hashes`` is empty. Returns
    the value count or a status (``BAD_SIZE``: ``out_hashes`` neither empty nor long
    enough); the offsets are checked before any register changes."""
    p = precision(registers)
    if p < 0:
        return BAD_REGISTERS
    if not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSETS
    n = offsets.shape[0] - 1
    keep = out_hashes.shape[0] != 0
    if keep and out_hashes.shape[0] < n:
        return BAD_SIZE
    for i in range(n):
        h = xxh64(data, offsets[i], offsets[i + 1] - offsets[i], seed)
        if keep:
            out_hashes[i] = h
        _hll_add(registers, p, h)
    return n


@kernel
def hll_variable(offsets, data, seed, registers):
    """Add every value to the sketch (:func:`hll_variable_hashes` keeping no hashes);
    returns the value count or a status."""
    return hll_variable_hashes(offsets, data, seed, registers, np.empty(0, np.uint64))


@kernel
def _sigma(x):
    if x == 1.0:
        return np.inf
    y = 1.0
    z = x
    while True:
        x = x * x
        z_prev = z
        z += x * y
        y += y
        if z == z_prev:
            return z


@kernel
def _tau(x):
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1.0 - x
    while True:
        x = np.sqrt(x)
        z_prev = z
        y *= 0.5
        z -= (1.0 - x) * (1.0 - x) * y
        if z == z_prev:
            return z / 3.0


@kernel
def hll_estimate(registers):
    """Distinct-count estimate (Ertl's improved estimator), or ``BAD_REGISTERS``
    (as a float) when the array is not a valid sketch."""
    p = precision(registers)
    if p < 0:
        return float(BAD_REGISTERS)
    m = registers.shape[0]
    q = 64 - p
    counts = np.zeros(q + 2, np.int64)
    for j in range(m):
        r = registers[j]
        if r > q + 1:
            return float(BAD_REGISTERS)
        counts[r] += 1
    if counts[0] == m:
        return 0.0
    fm = float(m)
    z = fm * _tau(1.0 - counts[q + 1] / fm)
    for k in range(q, 0, -1):
        z = 0.5 * (z + counts[k])
    z += fm * _sigma(counts[0] / fm)
    return 0.5 / np.log(2.0) * fm * fm / z


# -- runs, bit widths, sizes, entropy ---------------------------------------------------------

# word types by row width, for the run counter (see run_count)
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@kernel
def _runs_words(data, proto):
    vals = data.view(proto.dtype)
    n = vals.shape[0]
    if n == 0:
        return 0
    runs = 1
    for i in range(1, n):
        if vals[i] != vals[i - 1]:
            runs += 1
    return runs


@kernel
def _rows_equal(data, a, b, width):
    for k in range(width):
        if data[a + k] != data[b + k]:
            return False
    return True


def run_count(data, width):
    """Number of runs of equal consecutive rows, or ``BAD_SIZE``.

    The width picks the kernel in Python, so that only the word types met get
    compiled (a kernel compiles every branch, taken or not)."""
    if not _rows_ok(data, width):
        return BAD_SIZE
    if width in _WORDS:
        return _runs_words(data, np.empty(0, _WORDS[width]))
    return _runs_rows(data, width)


@kernel
def _runs_rows(data, width):
    n = data.shape[0] // width
    if n == 0:
        return 0
    runs = 1
    for i in range(1, n):
        if not _rows_equal(data, (i - 1) * width, i * width, width):
            runs += 1
    return runs


@kernel
def _widths_words(vals, chunk, out):
    n = vals.shape[0]
    best = 0
    c = 0
    for s in range(0, n, chunk):
        part = vals[s:min(s + chunk, n)]  # zero-based, so the OR loop vectorises
        acc = np.uint64(0)
        for i in range(part.shape[0]):
            acc |= np.uint64(part[i])
        b = 64 - clz64(acc)
        out[c] = b
        best = max(best, b)
        c += 1
    return best


@kernel
def bit_widths(data, width, chunk_values, out):
    """``out[c]`` = bit width of chunk ``c`` (``chunk_values`` values each, the last
    may be shorter); returns the largest, or ``BAD_SIZE`` (width not 1/2/4/8, or
    ``out`` shorter than the chunk count)."""
    if not _rows_ok(data, width) or chunk_values < 1:
        return BAD_SIZE
    n = data.shape[0] // width
    chunks = n // chunk_values + (1 if n % chunk_values else 0)  # no n + chunk - 1 overflow
    if out.shape[0] < chunks:
        return BAD_SIZE
    if width == 8:
        return _widths_words(data.view(np.uint64), chunk_values, out)
    if width == 4:
        return _widths_words(data.view(np.uint32), chunk_values, out)
    if width == 2:
        return _widths_words(data.view(np.uint16), chunk_values, out)
    if width == 1:
        return _widths_words(data, chunk_values, out)
    return BAD_SIZE


@kernel
def variable_sizes(offsets, data, out):
    """``out[0]`` = longest value, ``out[1]`` = total bytes; returns a status."""
    if out.shape[0] < 2:
        return BAD_SIZE
    if not offsets_ok(offsets, data.shape[0]):
        return BAD_OFFSETS
    n = offsets.shape[0] - 1
    longest = np.int64(0)
    for i in range(n):
        longest = max(longest, offsets[i + 1] - offsets[i])
    out[0] = longest
    out[1] = offsets[n] - offsets[0]
    return OK


@kernel
def byte_position_entropy(data, width, max_sample, out):
    """``out[j]`` = ``floor(1000 * H_j)`` over the first ``min(n, max_sample)`` rows
    (module docstring); returns the number of rows sampled or ``BAD_SIZE``."""
    if not _rows_ok(data, width) or max_sample < 0 or out.shape[0] < width:
        return BAD_SIZE
    n = min(data.shape[0] // width, max_sample)
    if n == 0:
        return 0
    counts = np.zeros(256, np.int64)
    total = float(n)
    for j in range(width):
        counts[:] = 0
        for i in range(n):
            counts[data[i * width + j]] += 1
        h = 0.0
        for b in range(256):
            if counts[b] > 0:
                pr = counts[b] / total
                h -= pr * np.log2(pr)
        out[j] = np.int64(h * 1000.0) if h > 0.0 else 0
    return n


def bss_auto(entropies: np.ndarray, sensitivity: float = BSS_AUTO_SENSITIVITY) -> bool:
    """The reference's "auto" byte-stream-split rule over :func:`byte_position_entropy`
    output: split when the mean entropy is below ``8 * sensitivity`` bits."""
    if sensitivity <= 0.0:
        return False
    if sensitivity >= 1.0:
        return True
    if len(entropies) == 0:
        return False
    return float(np.sum(entropies, dtype=np.int64)) / len(entropies) / 1000.0 < sensitivity * 8.0
