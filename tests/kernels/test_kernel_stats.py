"""Statistics kernels (XXH64 hashes, HyperLogLog, run count, bit widths, variable
sizes, byte-position entropy) against pure-Python references written from
``kernels/stats.py``, published XXH64 test vectors, the reference's own test cases
for bit widths, and exact distinct counts for the HyperLogLog estimate.
"""

import json
import math
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels import stats as ks

UNSET = -7
JIT = not numba.config.DISABLE_JIT
M64 = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


# -- references ---------------------------------------------------------------------------

def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _round(acc, lane):
    return _rotl((acc + lane * P2) & M64, 31) * P1 & M64


def ref_xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64, straight from the specification."""
    n, p = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
        while p + 32 <= n:
            for k in range(4):
                v[k] = _round(v[k], int.from_bytes(data[p + 8 * k:p + 8 * k + 8], "little"))
            p += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for k in range(4):
            h = ((h ^ _round(0, v[k])) * P1 + P4) & M64
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while p + 8 <= n:
        h ^= _round(0, int.from_bytes(data[p:p + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & M64
        p += 8
    if p + 4 <= n:
        h ^= int.from_bytes(data[p:p + 4], "little") * P1 & M64
        h = (_rotl(h, 23) * P2 + P3) & M64
        p += 4
    while p < n:
        h ^= data[p] * P5 & M64
        h = _rotl(h, 11) * P1 & M64
        p += 1
    h ^= h >> 33
    h = h * P2 & M64
    h ^= h >> 29
    h = h * P3 & M64
    return h ^ (h >> 32)


def ref_hll_registers(values, p, seed):
    reg = [0] * (1 << p)
    for v in values:
        h = ref_xxh64(v, seed)
        idx = h >> (64 - p)
        rest = (h << p) & M64
        rank = 1
        while rank < 65 - p and not rest >> 63:
            rank += 1
            rest = (rest << 1) & M64
        reg[idx] = max(reg[idx], rank)
    return reg


def ref_estimate(reg):
    """Ertl's improved raw estimator, written out as the sum (not Horner's form)."""
    m = len(reg)
    q = 64 - (m.bit_length() - 1)
    c = [0] * (q + 2)
    for r in reg:
        c[r] += 1
    if c[0] == m:
        return 0.0

    def sigma(x):
        if x == 1.0:
            return math.inf
        total, k = x, 1
        while True:
            term = x ** (2 ** k) * 2 ** (k - 1)
            if total + term == total:
                return total
            total += term
            k += 1

    def tau(x):
        if x in (0.0, 1.0):
            return 0.0
        total, k = 1 - x, 1
        while True:
            term = (1 - x ** (2.0 ** -k)) ** 2 * 2.0 ** -k
            if total - term == total:
                return total / 3
            total -= term
            k += 1

    z = m * tau(1 - c[q + 1] / m) * 2.0 ** -q
    z += sum(c[k] * 2.0 ** -k for k in range(1, q + 1))
    z += m * sigma(c[0] / m)
    return m * m / (2 * math.log(2)) / z


def ref_run_count(rows):
    return sum(1 for i, r in enumerate(rows) if i == 0 or r != rows[i - 1])


def ref_bit_widths(rows, chunk):
    out = []
    for s in range(0, len(rows), chunk):
        acc = 0
        for r in rows[s:s + chunk]:
            acc |= int.from_bytes(r, "little")
        out.append(acc.bit_length())
    return out


def ref_entropy(rows, width, max_sample):
    sample = rows[:max_sample]
    out = []
    for j in range(width):
        counts = [0] * 256
        for r in sample:
            counts[r[j]] += 1
        h = 0.0
        for cnt in counts:
            if cnt:
                pr = cnt / len(sample)
                h -= pr * math.log2(pr)
        out.append(int(h * 1000.0))
    return out


# -- strategies and helpers ---------------------------------------------------------------

@st.composite
def fixed_rows(draw, widths=(1, 2, 3, 4, 5, 8, 12, 16, 33), max_rows=60):
    width = draw(st.sampled_from(widths))
    pool = draw(st.lists(st.binary(min_size=width, max_size=width), min_size=1, max_size=12))
    return width, draw(st.lists(st.sampled_from(pool), max_size=max_rows))


def _u8(raw: bytes, as_input=np.asarray):
    return as_input(np.frombuffer(bytearray(raw), np.uint8))


def _i64(values, as_input):
    return as_input(np.array(values, dtype=np.int64).reshape(-1))


def _offsets(values, head=0):
    offs = [head]
    for v in values:
        offs.append(offs[-1] + len(v))
    return offs


# -- hashing ------------------------------------------------------------------------------

VECTORS = [  # published XXH64 values (seed 0)
    (b"", 0xEF46DB3751D8E999),
    (b"a", 0xD24EC4F1A98C6E5B),
    (b"abc", 0x44BC2CF5AD770999),
    (b"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1),
]


@pytest.mark.parametrize("data, expected", VECTORS)
def test_xxh64_vectors(data, expected):
    assert ref_xxh64(data) == expected
    assert int(ks.xxh64(_u8(data), 0, len(data), 0)) == expected
    out = np.zeros(1, np.uint64)
    assert ks.hash_variable(np.array([0, len(data)], np.int64), _u8(data), 0, out) == 1
    assert int(out[0]) == expected


@given(fixed_rows(), st.integers(0, 2**63 - 1))
def test_hash_fixed_matches_reference(as_input, guarded, case, seed):
    width, rows = case
    out = guarded(len(rows), np.uint64, 0)
    assert ks.hash_fixed(_u8(b"".join(rows), as_input), width, seed, out.out) == len(rows)
    assert out.out.tolist() == [ref_xxh64(r, seed) for r in rows]
    assert out.intact()


@given(st.lists(st.binary(max_size=70), max_size=20), st.integers(0, 2**63 - 1),
       st.binary(max_size=3))
def test_hash_variable_matches_reference(as_input, guarded, values, seed, head):
    out = guarded(len(values), np.uint64, 0)
    got = ks.hash_variable(_i64(_offsets(values, len(head)), as_input),
                           _u8(head + b"".join(values), as_input), seed, out.out)
    assert got == len(values)
    assert out.out.tolist() == [ref_xxh64(v, seed) for v in values]
    assert out.intact()


def test_hash_bad_inputs():
    out = np.zeros(4, np.uint64)
    assert ks.hash_fixed(_u8(bytes(7)), 2, 0, out) == ks.BAD_SIZE
    assert ks.hash_fixed(_u8(bytes(8)), 0, 0, out) == ks.BAD_SIZE
    assert ks.hash_fixed(_u8(bytes(10)), 2, 0, out) == ks.BAD_SIZE  # 5 rows, room for 4
    assert ks.hash_variable(np.array([0, 3, 2], np.int64), _u8(bytes(4)), 0, out) == \
        ks.BAD_OFFSETS
    assert ks.hash_variable(np.array([0, 5], np.int64), _u8(bytes(4)), 0, out) == \
        ks.BAD_OFFSETS
    assert ks.hash_variable(np.array([-1, 2], np.int64), _u8(bytes(4)), 0, out) == \
        ks.BAD_OFFSETS
    assert ks.hash_variable(np.zeros(6, np.int64), _u8(bytes(4)), 0, out) == ks.BAD_SIZE


# -- HyperLogLog --------------------------------------------------------------------------

@given(fixed_rows(max_rows=40), st.integers(4, 8), st.integers(0, 2**32))
def test_hll_fixed_registers_match_reference(as_input, case, p, seed):
    width, rows = case
    reg = np.zeros(1 << p, np.uint8)
    assert ks.hll_fixed(_u8(b"".join(rows), as_input), width, seed, reg) == len(rows)
    want = ref_hll_registers(rows, p, seed)
    assert reg.tolist() == want
    assert ks.hll_estimate(reg) == pytest.approx(ref_estimate(want), rel=1e-9, abs=1e-9)


@given(st.lists(st.binary(max_size=40), max_size=40), st.integers(4, 8), st.integers(0, 9))
def test_hll_variable_registers_match_reference(as_input, values, p, seed):
    reg = np.zeros(1 << p, np.uint8)
    got = ks.hll_variable(_i64(_offsets(values), as_input), _u8(b"".join(values), as_input),
                          seed, reg)
    assert got == len(values)
    assert reg.tolist() == ref_hll_registers(values, p, seed)


@given(st.lists(st.binary(max_size=40), max_size=60), st.integers(0, 60), st.integers(4, 8))
def test_hll_variable_hashes_and_prefixes(as_input, values, cut, p):
    """hll_variable_hashes: hll_variable's registers, each value's XXH64 kept (or none
    with an empty output); a prefix's registers and estimate never exceed the whole's
    (what the strategy's early distinct-count check relies on)."""
    cut = min(cut, len(values))
    offsets = _i64(_offsets(values), as_input)
    data = _u8(b"".join(values), as_input)
    reg, kept, none = (np.zeros(1 << p, np.uint8) for _ in range(3))
    hashes = np.full(len(values), 7, np.uint64)
    assert ks.hll_variable_hashes(offsets, data, 3, kept, hashes) == len(values)
    assert ks.hll_variable_hashes(offsets, data, 3, none, np.zeros(0, np.uint64)) == \
        len(values)
    assert ks.hll_variable(offsets, data, 3, reg) == len(values)
    assert reg.tolist() == kept.tolist() == none.tolist() == ref_hll_registers(values, p, 3)
    assert hashes.tolist() == [ref_xxh64(v, 3) for v in values]
    if len(values) >= 2:  # (one fewer than the values, and not empty)
        assert ks.hll_variable_hashes(offsets, data, 3, none,
                                      np.zeros(len(values) - 1, np.uint64)) == ks.BAD_SIZE
    part = np.zeros(1 << p, np.uint8)
    assert ks.hll_variable(offsets[:cut + 1], data, 3, part) == cut
    assert (part <= reg).all()
    assert ks.hll_estimate(part) <= ks.hll_estimate(reg)


@given(st.lists(st.integers(0, 59), min_size=16, max_size=16).map(
    lambda xs: xs + [0] * (2**6 - 16)))
def test_hll_estimate_matches_reference(registers):
    reg = np.array(registers, np.uint8)
    assert ks.hll_estimate(reg) == pytest.approx(ref_estimate(registers), rel=1e-9)


def test_hll_small_example_and_bad_registers():
    reg = np.zeros(4096, np.uint8)
    assert ks.hll_fixed(np.array([5, 5, 7, 9], np.int32).view(np.uint8), 4, 0, reg) == 4
    assert ks.hll_estimate(reg) == pytest.approx(3.0, abs=0.01)
    assert ks.hll_estimate(np.zeros(4096, np.uint8)) == 0.0
    for bad in (np.zeros(0, np.uint8), np.zeros(8, np.uint8), np.zeros(100, np.uint8),
                np.zeros(1 << 19, np.uint8)):
        assert ks.hll_fixed(np.zeros(8, np.uint8), 4, 0, bad) == ks.BAD_REGISTERS
        assert ks.hll_estimate(bad) == ks.BAD_REGISTERS
    too_high = np.zeros(16, np.uint8)
    too_high[3] = 62  # the largest rank at p = 4 is 61
    assert ks.hll_estimate(too_high) == ks.BAD_REGISTERS
    reg = np.zeros(16, np.uint8)
    assert ks.hll_fixed(np.zeros(7, np.uint8), 2, 0, reg) == ks.BAD_SIZE
    # offsets are checked before any register changes
    assert ks.hll_variable(np.array([0, 2, 1, 9], np.int64), _u8(bytes(4)), 0, reg) == \
        ks.BAD_OFFSETS
    assert not reg.any()


# sizes kept modest when the kernels run as plain Python
ACCURACY_SIZES = [0, 1, 2, 10, 100, 1000, 5000] + ([30_000, 200_000] if JIT else [])
P = ks.DEFAULT_PRECISION
SIGMA = 1.04 / math.sqrt(1 << P)  # 1.6 % at p = 12


@pytest.mark.parametrize("n", ACCURACY_SIZES)
def test_hll_estimate_against_exact_counts(n):
    """Within 4 standard errors (6.5 % at p = 12) of the exact distinct count, plus
    one, for ints, floats, strings; each value appears up to three times."""
    rng = np.random.default_rng(n)
    ints = rng.integers(0, 1 << 40, size=n, dtype=np.int64)
    ints = np.concatenate([ints, ints[: n // 2], ints[: n // 3]])
    floats = ints.astype(np.float64) / 7.0
    strings = [b"value-%d" % v for v in ints.tolist()]
    for data, width in ((ints.view(np.uint8), 8), (ints.astype(np.int32).view(np.uint8), 4),
                        (floats.view(np.uint8), 8)):
        reg = np.zeros(1 << P, np.uint8)
        ks.hll_fixed(data, width, 42, reg)
        exact = len(np.unique(data.view(f"<u{width}")))
        assert abs(ks.hll_estimate(reg) - exact) <= 4 * SIGMA * exact + 1
    reg = np.zeros(1 << P, np.uint8)
    ks.hll_variable(np.array(_offsets(strings), np.int64), _u8(b"".join(strings)), 42, reg)
    exact = len(set(strings))
    assert abs(ks.hll_estimate(reg) - exact) <= 4 * SIGMA * exact + 1


def test_hll_error_is_as_documented():
    """Over many seeds the relative error has no visible bias and a spread close to
    1.04 / sqrt(m)."""
    p, n, seeds = (10, 20_000, 40) if JIT else (8, 2_000, 10)
    m = 1 << p
    values = np.arange(n, dtype=np.int64).view(np.uint8)
    errs = []
    for seed in range(seeds):
        reg = np.zeros(m, np.uint8)
        ks.hll_fixed(values, 8, seed, reg)
        errs.append(ks.hll_estimate(reg) / n - 1)
    sigma = 1.04 / math.sqrt(m)
    rms = math.sqrt(sum(e * e for e in errs) / seeds)
    assert abs(sum(errs) / seeds) < 3 * sigma / math.sqrt(seeds)
    assert 0.5 * sigma < rms < 1.6 * sigma


def test_hll_sketches_merge():
    a = np.arange(0, 3000, dtype=np.int64).view(np.uint8)
    b = np.arange(2000, 5000, dtype=np.int64).view(np.uint8)
    ra, rb, rab = (np.zeros(1 << P, np.uint8) for _ in range(3))
    ks.hll_fixed(a, 8, 1, ra)
    ks.hll_fixed(b, 8, 1, rb)
    ks.hll_fixed(a, 8, 1, rab)
    ks.hll_fixed(b, 8, 1, rab)
    assert np.array_equal(np.maximum(ra, rb), rab)


# -- run count, bit widths, sizes, entropy ------------------------------------------------

@given(fixed_rows())
def test_run_count_matches_reference(as_input, case):
    width, rows = case
    assert ks.run_count(_u8(b"".join(rows), as_input), width) == ref_run_count(rows)


def test_run_count_examples():
    assert ks.run_count(np.array([1, 1, 2, 2, 2, 3], np.int16).view(np.uint8), 2) == 3
    assert ks.run_count(np.array([1, 2, 3, 4], np.int64).view(np.uint8), 8) == 4
    assert ks.run_count(np.array([5, 5, 5, 5], np.int32).view(np.uint8), 4) == 1
    assert ks.run_count(np.zeros(0, np.uint8), 4) == 0
    assert ks.run_count(np.array([0.0, -0.0], np.float64).view(np.uint8), 8) == 2
    assert ks.run_count(np.zeros(5, np.uint8), 2) == ks.BAD_SIZE
    assert ks.run_count(np.zeros(5, np.uint8), 0) == ks.BAD_SIZE


@given(fixed_rows(widths=(1, 2, 4, 8), max_rows=80), st.integers(1, 40))
def test_bit_widths_match_reference(as_input, guarded, case, chunk):
    width, rows = case
    want = ref_bit_widths(rows, chunk)
    out = guarded(len(want), np.int64, UNSET)
    got = ks.bit_widths(_u8(b"".join(rows), as_input), width, chunk, out.out)
    assert got == max(want, default=0)
    assert out.out.tolist() == want
    assert out.intact()


@pytest.mark.parametrize("values, dtype, expected", [
    # the reference's own cases (statistics.rs, test_bit_width_stat_for_integers)
    ([1, 2, 3], np.int8, 2), ([0x1, 0x2, 0x3, 0x7F], np.int8, 7),
    ([0x1, 0x2, 0x3, 0xF, 0x1F], np.int8, 5), ([-1, 2, 3], np.int8, 8),
    ([1, 2, 3], np.int16, 2), ([-1, 2, 3], np.int16, 16), ([0x1FFFF, 3], np.int32, 17),
    ([-1, 2], np.int64, 64), ([0], np.uint32, 0), ([], np.uint64, 0),
])
def test_bit_widths_examples(values, dtype, expected):
    arr = np.array(values, dtype)
    out = np.zeros(1, np.int64)
    assert ks.bit_widths(arr.view(np.uint8), arr.itemsize, ks.BITWIDTH_CHUNK, out) == expected


def test_bit_widths_bad_arguments():
    out = np.zeros(2, np.int64)
    assert ks.bit_widths(np.zeros(6, np.uint8), 3, 1024, out) == ks.BAD_SIZE
    assert ks.bit_widths(np.zeros(8, np.uint8), 4, 0, out) == ks.BAD_SIZE
    assert ks.bit_widths(np.zeros(12, np.uint8), 4, 1, out) == ks.BAD_SIZE  # 3 chunks


@given(st.lists(st.binary(max_size=30), max_size=30), st.binary(max_size=4))
def test_variable_sizes_match_reference(as_input, values, head):
    out = np.full(2, UNSET, np.int64)
    got = ks.variable_sizes(_i64(_offsets(values, len(head)), as_input),
                            _u8(head + b"".join(values), as_input), out)
    assert got == ks.OK
    assert out.tolist() == [max(map(len, values), default=0), sum(map(len, values))]


def test_variable_sizes_bad_offsets():
    out = np.full(2, UNSET, np.int64)
    for offs in ([0, 3, 2], [0, 9], [-1, 2], []):
        assert ks.variable_sizes(np.array(offs, np.int64), _u8(bytes(4)), out) == \
            ks.BAD_OFFSETS
    assert ks.variable_sizes(np.array([0, 1], np.int64), _u8(bytes(4)),
                             np.zeros(1, np.int64)) == ks.BAD_SIZE
    assert out.tolist() == [UNSET, UNSET]


@given(fixed_rows(widths=(4, 8, 2, 1), max_rows=100), st.integers(0, 120))
def test_byte_position_entropy_matches_reference(as_input, case, max_sample):
    width, rows = case
    out = np.full(width, UNSET, np.int64)
    got = ks.byte_position_entropy(_u8(b"".join(rows), as_input), width, max_sample, out)
    assert got == min(len(rows), max_sample)
    if got:
        # floor(1000 * H) can differ by one where log2 implementations round differently
        want = ref_entropy(rows, width, max_sample)
        assert all(abs(a - b) <= 1 for a, b in zip(out.tolist(), want))
    else:
        assert out.tolist() == [UNSET] * width


def test_byte_position_entropy_examples():
    out = np.zeros(8, np.int64)
    f = np.array([1.0, 2.0], np.float32).view(np.uint8)
    assert ks.byte_position_entropy(f, 4, 64, out) == 2
    assert out[:4].tolist() == [0, 0, 1000, 1000]
    # 256 values whose first byte takes every value: 8 bits there, 0 elsewhere; only the
    # first 64 are sampled by default (6 bits)
    v = np.arange(256, dtype=np.uint32).view(np.uint8)
    assert ks.byte_position_entropy(v, 4, 256, out) == 256
    assert out[:4].tolist() == [8000, 0, 0, 0]
    assert ks.byte_position_entropy(v, 4, ks.ENTROPY_SAMPLE, out) == 64
    assert out[:4].tolist() == [6000, 0, 0, 0]
    assert ks.byte_position_entropy(v, 4, 64, np.zeros(3, np.int64)) == ks.BAD_SIZE
    assert ks.byte_position_entropy(v, 4, -1, out) == ks.BAD_SIZE


def test_bss_auto():
    assert ks.bss_auto(np.array([0, 0, 1000, 1000]))            # mean 0.5 bits < 4
    assert not ks.bss_auto(np.array([6000, 6000, 6000, 1000]))  # mean 4.75 bits
    assert not ks.bss_auto(np.array([4000] * 4))                # not below 4 bits
    assert ks.bss_auto(np.array([8000] * 8), sensitivity=1.0)
    assert not ks.bss_auto(np.array([0] * 8), sensitivity=0.0)
    assert not ks.bss_auto(np.zeros(0, np.int64))
    smooth = (np.arange(64) % 8 + 1000).astype(np.float32).view(np.uint8)  # sensor-like
    out = np.zeros(4, np.int64)
    ks.byte_position_entropy(smooth, 4, 64, out)
    noise = np.random.default_rng(0).integers(0, 256, 256, dtype=np.uint8)
    out2 = np.zeros(4, np.int64)
    ks.byte_position_entropy(noise, 4, 64, out2)
    assert ks.bss_auto(out) and not ks.bss_auto(out2)


# -- extreme sizes (child process) --------------------------------------------------------

_EXTREMES = [-(2**63), -20, -1, 2**61, 2**62 - 1, 2**62, 2**63 - 1]

_EXTREME_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lancenb.kernels import stats as ks
    results = []
    data = np.frombuffer(bytearray(b"abcdefgh"), np.uint8)
    for offsets, k in json.load(sys.stdin):
        offs = np.array(offsets, np.int64)
        try:
            sizes = int(ks.variable_sizes(offs, data, np.zeros(2, np.int64)))
            hll = int(ks.hll_variable(offs, data, 0, np.zeros(16, np.uint8)))
            hv = int(ks.hash_variable(offs, data, 0, np.zeros(4, np.uint64)))
            ent = int(ks.byte_position_entropy(data, 4, k, np.zeros(4, np.int64)))
            bw = int(ks.bit_widths(data, 4, k, np.zeros(1, np.int64)))
            hf = int(ks.hash_fixed(data, k, 0, np.zeros(8, np.uint64)))
        except Exception as exc:  # a kernel must not raise: report it to the parent
            sizes = hll = hv = ent = bw = hf = type(exc).__name__
        results.append([sizes, hll, hv, ent, bw, hf])
    json.dump(results, sys.stdout)
""")


def test_extreme_offsets_and_counts():
    cases = [([0, o, 8], k) for o in [3] + _EXTREMES for k in [1, 64] + _EXTREMES]
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _EXTREME_CHILD],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-600:]}"
    for (offsets, k), (sizes, hll, hv, ent, bw, hf) in zip(cases, json.loads(proc.stdout),
                                                          strict=True):
        ok = 0 <= offsets[1] <= 8
        assert sizes == (ks.OK if ok else ks.BAD_OFFSETS), offsets
        assert hll == (2 if ok else ks.BAD_OFFSETS), offsets
        assert hv == (2 if ok else ks.BAD_OFFSETS), offsets
        assert ent == (min(2, k) if k >= 0 else ks.BAD_SIZE), k
        assert bw == (ks.BAD_SIZE if k <= 1 else (0x64636261 | 0x68676665).bit_length()), k
        assert hf == (8 // k if 1 <= k and 8 % k == 0 else ks.BAD_SIZE), k

