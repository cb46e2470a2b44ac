"""``concat_slices`` / ``concat_bits`` against pure-Python references.

Valid slices, out-of-range slices and too-small outputs: the kernel's status must match
the reference, and nothing may be written outside the output it was given.
"""

import json
import random
import subprocess
import sys
import textwrap

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels import slices

FILL = 0x5C  # initial output bytes, so untouched bytes are visible


def ref_concat_slices(src: bytes, starts, sizes, out: bytearray) -> int:
    for s, n in zip(starts, sizes, strict=True):
        if s < 0 or n < 0 or s + n > len(src):
            return -1
    joined = b"".join(src[s:s + n] for s, n in zip(starts, sizes, strict=True))
    if len(joined) > len(out):
        return -1
    out[:len(joined)] = joined
    return 0


def ref_concat_bits(src: bytes, byte_starts, nbits, out: bytearray) -> int:
    """LSB-first bit runs, slice ``i`` = ``nbits[i]`` bits from bit 0 of ``src[byte_starts[i]]``.

    Fills ``out[:ceil(total / 8)]``, the unused high bits of the last byte zero.
    """
    bits = []
    for s, n in zip(byte_starts, nbits, strict=True):
        if s < 0 or n < 0 or s + (n + 7) // 8 > len(src):
            return -1
        bits.extend((src[s + j // 8] >> (j % 8)) & 1 for j in range(n))
    need = (len(bits) + 7) // 8
    if need > len(out):
        return -1
    packed = bytearray(need)
    for i, b in enumerate(bits):
        packed[i // 8] |= b << (i % 8)
    out[:need] = packed
    return 0


def _i64(values, as_input):
    return as_input(np.array(values, dtype=np.int64).reshape(-1))


def _u8(raw: bytes) -> np.ndarray:
    """Writable bytes, like the other arguments of the call: mixing read-only and
    writable arrays in one call would compile one more numba specialisation."""
    return np.frombuffer(bytearray(raw), np.uint8)


# -- strategies -----------------------------------------------------------------------

@st.composite
def valid_byte_slices(draw):
    src = draw(st.binary(max_size=64))
    k = draw(st.integers(0, 6))
    starts, sizes = [], []
    for _ in range(k):
        s = draw(st.integers(0, len(src)))
        starts.append(s)
        sizes.append(draw(st.integers(0, len(src) - s)))
    extra = draw(st.integers(0, 3))
    return src, starts, sizes, sum(sizes) + extra


@st.composite
def valid_bit_slices(draw):
    src = draw(st.binary(max_size=48))
    k = draw(st.integers(0, 6))
    starts, nbits = [], []
    for _ in range(k):
        s = draw(st.integers(0, len(src)))
        starts.append(s)
        nbits.append(draw(st.integers(0, 8 * (len(src) - s))))
    extra = draw(st.integers(0, 3))
    return src, starts, nbits, (sum(nbits) + 7) // 8 + extra


# Values near the int64 limits are tested in a child process (see the end of the module).
_wild = st.one_of(st.integers(-70, 140), st.sampled_from([-(2**40), -1, 2**31, 2**40]))


@st.composite
def wild_slices(draw):
    """Slices and output sizes that are often out of range; sometimes all valid."""
    src = draw(st.binary(max_size=40))
    k = draw(st.integers(0, 5))
    starts = [draw(_wild) for _ in range(k)]
    sizes = [draw(_wild) for _ in range(k)]
    out_len = draw(st.integers(0, 60))
    return src, starts, sizes, out_len


# -- concat_slices --------------------------------------------------------------------

def _run_slices(as_input, guarded, src, starts, sizes, out_len):
    g = guarded(out_len, np.uint8, fill=FILL)
    expected = bytearray([FILL] * out_len)
    want = ref_concat_slices(src, starts, sizes, expected)
    got = slices.concat_slices(as_input(np.frombuffer(src, np.uint8)),
                               _i64(starts, as_input), _i64(sizes, as_input), g.out)
    assert got == want
    assert g.intact()
    if want == 0:
        assert g.out.tobytes() == bytes(expected)


@given(valid_byte_slices())
def test_concat_slices_matches_reference(as_input, guarded, case):
    src, starts, sizes, out_len = case
    _run_slices(as_input, guarded, src, starts, sizes, out_len)


@given(wild_slices())
def test_concat_slices_out_of_range(as_input, guarded, case):
    _run_slices(as_input, guarded, *case)


@given(valid_byte_slices(), st.integers(1, 3))
def test_concat_slices_output_too_small(as_input, guarded, case, short):
    src, starts, sizes, _ = case
    total = sum(sizes)
    if total:
        _run_slices(as_input, guarded, src, starts, sizes, max(total - short, 0))


@given(valid_byte_slices(), st.sampled_from([np.uint16, np.int32, np.uint64]))
def test_concat_slices_wide_elements(as_input, guarded, case, dtype):
    """Elements wider than a byte: slices and bounds are counted in elements."""
    src, starts, sizes, out_len = case
    rng = np.random.default_rng(len(src))
    vals = rng.integers(0, 1 << 15, len(src)).astype(dtype)
    total = sum(sizes)
    for room in (out_len, total, max(total - 1, 0)):
        g = guarded(room, dtype, fill=7)
        got = slices.concat_slices(as_input(vals), _i64(starts, as_input),
                                   _i64(sizes, as_input), g.out)
        assert g.intact()
        if total > room:
            assert got == slices.OUT_OF_BOUNDS
            continue
        assert got == slices.OK
        want = np.concatenate([vals[s:s + n] for s, n in zip(starts, sizes, strict=True)]
                              + [np.full(room - total, 7, dtype)])
        np.testing.assert_array_equal(g.out, want)
    bad = np.array([len(src)], np.int64)
    assert slices.concat_slices(vals, bad, np.array([1], np.int64),
                                np.empty(1, dtype)) == slices.OUT_OF_BOUNDS


def test_concat_slices_docstring_example():
    src = _u8(b"abcdef")
    out = np.zeros(4, np.uint8)
    assert slices.concat_slices(src, np.array([1, 4]), np.array([2, 2]), out) == slices.OK
    assert out.tobytes() == b"bcef"


# -- concat_bits ----------------------------------------------------------------------

def _run_bits(as_input, guarded, src, starts, nbits, out_len):
    g = guarded(out_len, np.uint8, fill=FILL)
    expected = bytearray([FILL] * out_len)
    want = ref_concat_bits(src, starts, nbits, expected)
    got = slices.concat_bits(as_input(np.frombuffer(src, np.uint8)),
                             _i64(starts, as_input), _i64(nbits, as_input), g.out)
    assert got == want
    assert g.intact()
    if want == 0:
        # only the bytes the bits occupy are specified (the kernel also clears the rest)
        need = (sum(nbits) + 7) // 8
        assert g.out[:need].tobytes() == bytes(expected[:need])


@given(valid_bit_slices())
def test_concat_bits_matches_reference(as_input, guarded, case):
    _run_bits(as_input, guarded, *case)


@given(wild_slices())
def test_concat_bits_out_of_range(as_input, guarded, case):
    src, starts, sizes, out_len = case
    _run_bits(as_input, guarded, src, starts, sizes, out_len // 4)


@given(valid_bit_slices(), st.integers(1, 2))
def test_concat_bits_output_too_small(as_input, guarded, case, short):
    src, starts, nbits, _ = case
    need = (sum(nbits) + 7) // 8
    if need:
        _run_bits(as_input, guarded, src, starts, nbits, max(need - short, 0))


def test_concat_bits_known_answer():
    # the low 3 bits of 0b11111101, the low 7 bits of 0xFF, the low 4 bits of 0x0A
    src = _u8(bytes([0b11111101, 0xFF, 0x0A]))
    out = np.full(2, 0x77, np.uint8)
    status = slices.concat_bits(src, np.array([0, 1, 2]), np.array([3, 7, 4]), out)
    assert status == slices.OK
    # bits LSB first: 1 0 1 | 1 1 1 1 1 1 1 | 0 1 0 1, i.e. bits 0..7 = 1 0 1 1 1 1 1 1 and
    # bits 8..13 = 1 1 0 1 0 1 (the two high bits of the last byte stay 0)
    assert out.tolist() == [0b11111101, 0b00101011]


# -- expand_ranges ----------------------------------------------------------------------

def ref_expand_ranges(starts, ends, limit, out_len):
    out = []
    for s, e in zip(starts, ends, strict=True):
        if s < 0 or e < s or e > limit:
            return -1, None
        out.extend(range(s, e))
    if len(out) > out_len:
        return -1, None
    return len(out), out


@st.composite
def ranges_case(draw):
    limit = draw(st.integers(0, 40))
    k = draw(st.integers(0, 6))
    wild = draw(st.booleans())
    starts, ends = [], []
    for _ in range(k):
        if wild:
            starts.append(draw(_wild))
            ends.append(draw(_wild))
        else:
            s = draw(st.integers(0, limit))
            starts.append(s)
            ends.append(draw(st.integers(s, limit)))
    total = min(sum(max(e - s, 0) for s, e in zip(starts, ends)), 60)
    out_len = draw(st.integers(max(total - 2, 0), total + 2))
    return starts, ends, limit, out_len


@given(ranges_case())
def test_expand_ranges_matches_reference(as_input, guarded, case):
    starts, ends, limit, out_len = case
    g = guarded(out_len, np.int64)
    want, ref = ref_expand_ranges(starts, ends, limit, out_len)
    got = slices.expand_ranges(_i64(starts, as_input), _i64(ends, as_input), limit, g.out)
    assert got == want
    assert g.intact()
    if want >= 0:
        assert g.out[:want].tolist() == ref


def test_expand_ranges_docstring_example():
    out = np.zeros(3, np.int64)
    assert slices.expand_ranges(np.array([3, 0]), np.array([5, 1]), 5, out) == 3
    assert out.tolist() == [3, 4, 0]


# -- int64 overflow in the range checks -------------------------------------------------
# Regression: the range checks used to be `s + n > len(src)` and `s + (n + 7) // 8 >
# len(src)`, which wrap for huge int64 starts/sizes. concat_slices then returned 0 or
# raised ValueError; concat_bits read src[2**63 - 1] and segfaulted. The cases run in a
# child process so that a regression fails one test instead of killing the run.

_EXTREMES = [0, 1, 9, 10, 11, 2**31, 2**62, 2**63 - 8, 2**63 - 1, -1, -(2**63)]


def _extreme_cases():
    cases = [([s], [n], out_len) for s in _EXTREMES for n in _EXTREMES for out_len in (0, 1, 4)]
    rng = random.Random(0)
    for _ in range(300):
        k = rng.randint(2, 3)
        cases.append(([rng.choice(_EXTREMES) for _ in range(k)],
                      [rng.choice(_EXTREMES + [2, 3, 5]) for _ in range(k)],
                      rng.choice([0, 1, 4, 10])))
    return cases


_EXTREME_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lancenb.kernels import slices
    src = np.arange(10, dtype=np.uint8)
    results = []
    for name, starts, sizes, out_len in json.load(sys.stdin):
        out = np.zeros(out_len, np.uint8)
        try:
            status = getattr(slices, name)(src, np.array(starts, np.int64),
                                           np.array(sizes, np.int64), out)
        except Exception as exc:  # a kernel must not raise: report it to the parent
            status = type(exc).__name__
        results.append([status, out.tolist()])
    json.dump(results, sys.stdout)
""")


def test_huge_starts_and_sizes_are_out_of_bounds():
    cases = [(name, *c) for name in ("concat_slices", "concat_bits") for c in _extreme_cases()]
    # -W error: under NUMBA_DISABLE_JIT an int64 overflow warning counts as a failure
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _EXTREME_CHILD],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-600:]}"
    src = bytes(range(10))
    results = json.loads(proc.stdout)
    for (name, starts, sizes, out_len), (status, out) in zip(cases, results, strict=True):
        ref = ref_concat_slices if name == "concat_slices" else ref_concat_bits
        expected = bytearray(out_len)
        want = ref(src, starts, sizes, expected)
        assert status == want, (name, starts, sizes, out_len)
        if want == 0 and name == "concat_slices":
            assert bytes(out) == bytes(expected)
