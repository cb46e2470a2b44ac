"""XXH64 (seed 0) of many byte strings at once, and the split-block bloom filter
pylance's BLOOMFILTER index stores (its hash of a value is XXH64 of the value's bytes).

:func:`xxh64_many` hashes the strings ``data[offsets[i]:offsets[i + 1]]`` in one
Numba loop; :func:`xxh64_ref` is the plain-Python reference of one string (the
property test checks the two agree, and both agree with the ``xxhash`` package).

A bloom filter is ``n`` blocks of eight little-endian ``uint32`` words. A hash
``h`` picks block ``((h >> 32) * n) >> 32``; its low 32 bits ``x`` set one bit in
each word ``i``: bit ``((x * SALT[i]) mod 2**32) >> 27``. A value may be present
when all eight bits are set.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["xxh64_many", "xxh64_ref", "SALT", "bloom_insert", "bloom_check",
           "bloom_check_many", "bloom_check_blocks", "bloom_log2_bytes"]

_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261
_M = (1 << 64) - 1
SALT = np.array([0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b,
                 0x9efc4947, 0x5c6bfb31], np.uint32)


def _rotl_ref(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round_ref(acc: int, lane: int) -> int:
    return (_rotl_ref((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64_ref(b: bytes) -> int:
    """XXH64 of ``b`` with seed 0, in plain Python (the reference)."""
    n, p = len(b), 0
    if n >= 32:
        v = [(_P1 + _P2) & _M, _P2, 0, (-_P1) & _M]
        while p + 32 <= n:
            for i in range(4):
                v[i] = _round_ref(v[i], int.from_bytes(b[p + 8 * i:p + 8 * i + 8], "little"))
            p += 32
        h = (_rotl_ref(v[0], 1) + _rotl_ref(v[1], 7) + _rotl_ref(v[2], 12)
             + _rotl_ref(v[3], 18)) & _M
        for x in v:
            h = ((h ^ _round_ref(0, x)) * _P1 + _P4) & _M
    else:
        h = _P5
    h = (h + n) & _M
    while p + 8 <= n:
        h ^= _round_ref(0, int.from_bytes(b[p:p + 8], "little"))
        h = (_rotl_ref(h, 27) * _P1 + _P4) & _M
        p += 8
    if p + 4 <= n:
        h ^= (int.from_bytes(b[p:p + 4], "little") * _P1) & _M
        h = (_rotl_ref(h, 23) * _P2 + _P3) & _M
        p += 4
    while p < n:
        h ^= (b[p] * _P5) & _M
        h = (_rotl_ref(h, 11) * _P1) & _M
        p += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    return h ^ (h >> 32)


@numba.njit(inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@numba.njit(inline="always")
def _read(data, p, k):
    v = np.uint64(0)
    for j in range(k - 1, -1, -1):
        v = (v << np.uint64(8)) | np.uint64(data[p + j])
    return v


@numba.njit(inline="always")
def _round(acc, lane):
    return _rotl(acc + lane * np.uint64(_P2), 31) * np.uint64(_P1)


@numba.njit(cache=True, nogil=True)
def _xxh64_many(data, offsets, out):
    p1, p2, p3, p4, p5 = (np.uint64(_P1), np.uint64(_P2), np.uint64(_P3), np.uint64(_P4),
                          np.uint64(_P5))
    for i in range(out.size):
        p, end = offsets[i], offsets[i + 1]
        n = end - p
        if n >= 32:
            v1 = p1 + p2
            v2 = p2
            v3 = np.uint64(0)
            v4 = np.uint64(0) - p1
            while p + 32 <= end:
                v1 = _round(v1, _read(data, p, 8))
                v2 = _round(v2, _read(data, p + 8, 8))
                v3 = _round(v3, _read(data, p + 16, 8))
                v4 = _round(v4, _read(data, p + 24, 8))
                p += 32
            h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            h = (h ^ _round(np.uint64(0), v1)) * p1 + p4
            h = (h ^ _round(np.uint64(0), v2)) * p1 + p4
            h = (h ^ _round(np.uint64(0), v3)) * p1 + p4
            h = (h ^ _round(np.uint64(0), v4)) * p1 + p4
        else:
            h = p5
        h = h + np.uint64(n)
        while p + 8 <= end:
            h = h ^ _round(np.uint64(0), _read(data, p, 8))
            h = _rotl(h, 27) * p1 + p4
            p += 8
        if p + 4 <= end:
            h = h ^ (_read(data, p, 4) * p1)
            h = _rotl(h, 23) * p2 + p3
            p += 4
        while p < end:
            h = h ^ (np.uint64(data[p]) * p5)
            h = _rotl(h, 11) * p1
            p += 1
        h = h ^ (h >> np.uint64(33))
        h = h * p2
        h = h ^ (h >> np.uint64(29))
        h = h * p3
        out[i] = h ^ (h >> np.uint64(32))


def xxh64_many(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of ``data[offsets[i]:offsets[i + 1]]`` for each ``i`` (``data``
    uint8, ``offsets`` int64 of length ``n + 1``): ``n`` uint64 hashes."""
    out = np.empty(max(len(offsets) - 1, 0), np.uint64)
    if out.size:
        _xxh64_many(np.ascontiguousarray(data, np.uint8),
                    np.ascontiguousarray(offsets, np.int64), out)
    return out


def _masks(hashes: np.ndarray) -> np.ndarray:
    """The ``(n, 8)`` uint32 bit masks of the low halves of ``hashes``."""
    x = (hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    bits = (x[:, None] * SALT[None, :]) >> np.uint32(27)
    return (np.uint32(1) << bits).astype(np.uint32)


def _blocks(hashes: np.ndarray, n_blocks: int) -> np.ndarray:
    return (((hashes >> np.uint64(32)) * np.uint64(n_blocks)) >> np.uint64(32)).astype(np.int64)


def bloom_insert(words: np.ndarray, hashes: np.ndarray) -> None:
    """Set the bits of ``hashes`` in the filter ``words`` (uint32, shape ``(blocks, 8)``)."""
    if hashes.size:
        blocks = _blocks(hashes, words.shape[0])
        masks = _masks(hashes)
        for i in range(8):
            np.bitwise_or.at(words[:, i], blocks, masks[:, i])


def bloom_check(words: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Whether each hash may be in the filter ``words`` (bool per hash)."""
    if not hashes.size:
        return np.zeros(0, bool)
    masks = _masks(hashes)
    got = words[_blocks(hashes, words.shape[0])]
    return np.all((got & masks) != 0, axis=1)


def bloom_check_many(stack: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Whether some hash may be in each filter of ``stack`` (uint32, shape ``(filters,
    blocks, 8)``, filters of one size): one bool per filter, as
    ``bloom_check(stack[i], hashes).any()`` for each ``i``."""
    if not hashes.size or not stack.shape[0]:
        return np.zeros(stack.shape[0], bool)
    masks = _masks(hashes)
    got = stack[:, _blocks(hashes, stack.shape[1]), :]  # (filters, hashes, 8)
    return np.all((got & masks[None]) != 0, axis=2).any(axis=1)


def bloom_check_blocks(by_block: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """:func:`bloom_check_many` of filters stored block-major: ``by_block`` (uint32,
    shape ``(blocks, filters, 8)``) holds block ``b`` of every filter together, so a
    hash's test reads one contiguous slab of all filters (not one cache line in each
    filter, far apart: the misses cost more than the tests)."""
    if not hashes.size or not by_block.shape[1]:
        return np.zeros(by_block.shape[1], bool)
    masks = _masks(hashes)
    got = by_block[_blocks(hashes, by_block.shape[0])]  # (hashes, filters, 8)
    return np.all((got & masks[:, None, :]) != 0, axis=2).any(axis=0)


def _fpp(ndv: int, log_bytes: int) -> float:
    if ndv == 0:
        return 0.0
    nbits = float(1 << log_bytes) * 8.0
    if ndv / nbits > 2.0:
        return 1.0
    lam = 8.0 * 32.0 / (nbits / ndv)
    loglam = math.log(lam)
    out = 0.0
    for i in range(749, -1, -1):
        logp = i * loglam - lam - math.lgamma(i + 1)
        inner = 1.0 - (1.0 - 1.0 / 32.0) ** i
        if inner <= 0.0:
            continue
        out += math.exp(logp + 8.0 * math.log(inner))
    return min(out, 1.0)


def bloom_log2_bytes(ndv: int, fpp: float) -> int:
    """log2 of the filter size pylance picks for ``ndv`` items at false-positive
    rate ``fpp`` (the smallest that reaches it; 32 B to 128 MiB)."""
    low, high = 0, 64
    while high > low + 1:
        mid = (low + high) // 2
        if _fpp(ndv, mid) <= fpp:
            high = mid
        else:
            low = mid
    return min(max(high, 5), 27)
