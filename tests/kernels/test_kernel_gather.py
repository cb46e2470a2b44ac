"""Random-access gathers (``kernels/gather.py``) against pure-Python references:
``gather_fixed``, ``gather_bits``, ``gather_variable_size`` and ``gather_variable_fill``.

Every position is checked by the kernels themselves: out-of-range positions, starts,
sizes, counts and corrupt offsets must give a negative status, never a stray access.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels import gather as kg

FILL = 0x5C
UNSET = -7
_huge = st.sampled_from([-1, -8, -(2**63), 2**31, 2**62, 2**63 - 1, 2**63 - 8])


def _le(value: int, width: int) -> bytes:
    return bytes((value >> (8 * k)) & 0xFF for k in range(width))


def _from_le(raw: bytes) -> int:
    return sum(b << (8 * k) for k, b in enumerate(raw))


def _i64(values, as_input):
    return as_input(np.array(values, dtype=np.int64).reshape(-1))


def _u8(raw: bytes) -> np.ndarray:
    """Writable bytes, like the other arguments of the call: mixing read-only and
    writable arrays in one call would compile one more numba specialisation."""
    return np.frombuffer(bytearray(raw), np.uint8)


# -- references ---------------------------------------------------------------------------

def ref_gather_fixed(data: bytes, pos, width):
    out = bytearray()
    for p in pos:
        if p < 0 or p + width > len(data):
            return kg.OUT_OF_BOUNDS, None
        out += data[p:p + width]
    return kg.OK, bytes(out)


def ref_gather_bits(data: bytes, bitpos):
    """Bit ``bitpos[i]`` of ``data`` (LSB-first) becomes bit ``i`` of the output."""
    out = bytearray((len(bitpos) + 7) // 8)
    for i, b in enumerate(bitpos):
        if b < 0 or b // 8 >= len(data):
            return kg.OUT_OF_BOUNDS, None
        out[i // 8] |= ((data[b // 8] >> (b % 8)) & 1) << (i % 8)
    return kg.OK, bytes(out)


def ref_gather_variable_size(data: bytes, starts, sizes, counts, local, width):
    """``(total bytes, None)`` or ``(status, selection index)``."""
    total = 0
    for i, (s, size, cnt, k) in enumerate(zip(starts, sizes, counts, local, strict=True)):
        if (s < 0 or size < 0 or s + size > len(data) or not 0 <= k < cnt
                or (cnt + 1) * width > size):
            return kg.OUT_OF_BOUNDS, i
        a = _from_le(data[s + k * width:s + (k + 1) * width])
        b = _from_le(data[s + (k + 1) * width:s + (k + 2) * width])
        if a < (cnt + 1) * width or b < a or b > size:
            return kg.BAD_OFFSET, i
        total += b - a
    return total, None


def ref_gather_variable_fill(data: bytes, starts, local, width):
    offsets, out = [0], bytearray()
    for s, k in zip(starts, local, strict=True):
        a = _from_le(data[s + k * width:s + (k + 1) * width])
        b = _from_le(data[s + (k + 1) * width:s + (k + 2) * width])
        out += data[s + a:s + b]
        offsets.append(len(out))
    return offsets, bytes(out)


def variable_chunk(values, width) -> bytes:
    """A Variable chunk buffer (see kernels/variable.py), built independently."""
    first = (len(values) + 1) * width
    table, pos = [first], first
    for v in values:
        pos += len(v)
        table.append(pos)
    buf = b"".join(_le(o, width) for o in table) + b"".join(values)
    return buf + b"\x48" * (-len(buf) % width)


# -- gather_fixed / gather_bits -----------------------------------------------------------

@st.composite
def fixed_gathers(draw):
    data = draw(st.binary(max_size=64))
    width = draw(st.integers(1, 16))
    valid = st.integers(0, len(data) - width) if len(data) >= width else st.just(0)
    wild = st.one_of(st.integers(-9, len(data) + 9), _huge)
    pos = draw(st.lists(st.one_of(valid, valid, valid, wild), max_size=10))
    return data, pos, width


@given(fixed_gathers())
def test_gather_fixed_matches_reference(as_input, guarded, case):
    data, pos, width = case
    g = guarded(len(pos) * width, np.uint8, FILL)
    status = kg.gather_fixed(as_input(np.frombuffer(data, np.uint8)), _i64(pos, as_input),
                             width, g.out)
    want, out = ref_gather_fixed(data, pos, width)
    assert status == want
    assert g.intact()
    if want == kg.OK:
        assert g.out.tobytes() == out


@st.composite
def bit_gathers(draw):
    data = draw(st.binary(max_size=24))
    valid = st.integers(0, 8 * len(data) - 1) if data else st.just(0)
    wild = st.one_of(st.integers(-9, 8 * len(data) + 9), _huge)
    return data, draw(st.lists(st.one_of(valid, valid, valid, wild), max_size=40))


@given(bit_gathers())
def test_gather_bits_matches_reference(as_input, guarded, case):
    data, bitpos = case
    g = guarded((len(bitpos) + 7) // 8, np.uint8, FILL)
    status = kg.gather_bits(as_input(np.frombuffer(data, np.uint8)), _i64(bitpos, as_input),
                            g.out)
    want, out = ref_gather_bits(data, bitpos)
    assert status == want
    assert g.intact()
    if want == kg.OK:
        assert g.out.tobytes() == out


def test_gather_known_answers():
    data = _u8(bytes([0b10110010, 0x0F, 0xAA, 0xBB]))
    out = np.zeros(4, np.uint8)
    assert kg.gather_fixed(data, np.array([2, 0], np.int64), 2, out) == kg.OK
    assert out.tobytes() == bytes([0xAA, 0xBB, 0b10110010, 0x0F])
    assert kg.gather_fixed(data, np.array([3], np.int64), 2, out) == kg.OUT_OF_BOUNDS
    bits = np.full(2, FILL, np.uint8)
    # bits 1, 0, 4, 8, 31 of data are 1, 0, 1, 1, 1
    assert kg.gather_bits(data, np.array([1, 0, 4, 8, 31], np.int64), bits) == kg.OK
    assert bits.tolist() == [0b11101, 0]
    assert kg.gather_bits(data, np.array([32], np.int64), bits) == kg.OUT_OF_BOUNDS


# -- gather_variable_size / gather_variable_fill ------------------------------------------

@st.composite
def variable_gathers(draw, corrupt=False):
    """Variable chunk buffers at random places in ``data``, and a selection of items."""
    width = draw(st.sampled_from([4, 8]))
    chunks = draw(st.lists(st.lists(st.binary(max_size=12), min_size=1, max_size=6),
                           min_size=1, max_size=4))
    data, layout = bytearray(), []
    for values in chunks:
        data += draw(st.binary(max_size=5))
        buf = variable_chunk(values, width)
        layout.append((len(data), len(buf), len(values)))
        data += buf
    data += draw(st.binary(max_size=5))
    picks = draw(st.lists(st.integers(0, len(chunks) - 1), max_size=8))
    starts = [layout[c][0] for c in picks]
    sizes = [layout[c][1] for c in picks]
    counts = [layout[c][2] for c in picks]
    local = [draw(st.integers(0, layout[c][2] - 1)) for c in picks]
    if corrupt and picks:
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(picks) - 1))
            kind = draw(st.sampled_from(["offset", "byte", "start", "size", "count",
                                         "local"]))
            if kind == "offset":
                start, size, count = layout[picks[i]]   # as built, whatever else changed
                p = start + draw(st.integers(0, count)) * width
                data[p:p + width] = _le(draw(st.one_of(
                    st.integers(0, size + 2 * width),
                    st.integers(0, 2 ** (8 * width) - 1))), width)
            elif kind == "byte":
                data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
            elif kind == "start":
                starts[i] = draw(st.one_of(st.integers(-9, len(data) + 9), _huge))
            elif kind == "size":
                sizes[i] = draw(st.one_of(st.integers(-9, len(data) + 9), _huge))
            elif kind == "count":
                # values near the int64 limits: see the child-process test below
                counts[i] = draw(st.integers(-2, counts[i] + 3))
            else:
                local[i] = draw(st.one_of(st.integers(-3, counts[i] + 3), _huge))
    return bytes(data), starts, sizes, counts, local, width


def _run_gather_variable(as_input, guarded, data, starts, sizes, counts, local, width):
    err = guarded(2, np.int64, UNSET)
    got = kg.gather_variable_size(as_input(np.frombuffer(data, np.uint8)),
                                  _i64(starts, as_input), _i64(sizes, as_input),
                                  _i64(counts, as_input), _i64(local, as_input), width,
                                  err.out)
    want, where = ref_gather_variable_size(data, starts, sizes, counts, local, width)
    assert got == want
    assert err.intact()
    if want < 0:
        assert err.out[0] == where
        return None
    offs = guarded(len(local) + 1, np.int64, UNSET)
    out = guarded(got, np.uint8, FILL)
    assert kg.gather_variable_fill(as_input(np.frombuffer(data, np.uint8)),
                                   _i64(starts, as_input), _i64(local, as_input), width,
                                   offs.out, out.out) == kg.OK
    assert offs.intact() and out.intact()
    want_offsets, want_data = ref_gather_variable_fill(data, starts, local, width)
    assert offs.out.tolist() == want_offsets
    assert out.out.tobytes() == want_data
    return want_offsets, want_data


@given(variable_gathers())
def test_gather_variable_matches_reference(as_input, guarded, case):
    assert _run_gather_variable(as_input, guarded, *case) is not None


@given(variable_gathers(corrupt=True))
def test_gather_variable_corrupted(as_input, guarded, case):
    _run_gather_variable(as_input, guarded, *case)


def test_gather_variable_known_answer():
    chunk = variable_chunk([b"ab", b"", b"c"], 4)
    assert chunk == bytes.fromhex("10000000" "12000000" "12000000" "13000000" "616263" "48")
    data = _u8(b"xy" + chunk)
    sel = (np.array([2, 2, 2]), np.array([20, 20, 20]), np.array([3, 3, 3]),
           np.array([2, 1, 0]))
    err = np.zeros(2, np.int64)
    assert kg.gather_variable_size(data, *sel, 4, err) == 3
    offsets, out = np.empty(4, np.int64), np.empty(3, np.uint8)
    assert kg.gather_variable_fill(data, sel[0], sel[3], 4, offsets, out) == kg.OK
    assert offsets.tolist() == [0, 1, 1, 3]
    assert out.tobytes() == b"cab"


# Regression: gather_variable_size computed (buf_count + 1) * offset_width in int64, so
# buf_count = 2**62 with 4-byte offsets wrapped to 4, local = 2**40 passed, and the kernel
# read data[2**42] (a segfault). Extreme values run in a child process so that such a
# read fails one test instead of killing the run.

_EXTREMES = [-(2**63), -1, 2**40, 2**61, 2**62, 2**63 - 1]

_EXTREME_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lancenb.kernels import gather as kg
    results = []
    for data, start, size, count, local, width in json.load(sys.stdin):
        err = np.zeros(2, np.int64)
        try:
            got = int(kg.gather_variable_size(
                np.frombuffer(bytearray(bytes(data)), np.uint8), np.array([start], np.int64),
                np.array([size], np.int64), np.array([count], np.int64),
                np.array([local], np.int64), width, err))
        except Exception as exc:  # a kernel must not raise: report it to the parent
            got = type(exc).__name__
        results.append([got, int(err[0])])
    json.dump(results, sys.stdout)
""")


def test_gather_variable_extreme_starts_sizes_counts():
    cases = []
    for width in (4, 8):
        chunk = variable_chunk([b"ab", b"", b"c"], width)
        data = list(b"xy" + chunk + bytes(3))
        for start in [2] + _EXTREMES:
            for size in [len(chunk), 0, len(data) - 1] + _EXTREMES:
                for count in [3, 0] + _EXTREMES:
                    for local in [0, 2, 3] + _EXTREMES:
                        cases.append((data, start, size, count, local, width))
    # -W error: under NUMBA_DISABLE_JIT an int64 overflow warning counts as a failure
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _EXTREME_CHILD],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-600:]}"
    results = json.loads(proc.stdout)
    for (data, start, size, count, local, width), (got, where) in zip(cases, results,
                                                                      strict=True):
        want, want_where = ref_gather_variable_size(bytes(data), [start], [size], [count],
                                                    [local], width)
        assert got == want, (start, size, count, local, width)
        if want < 0:
            assert where == want_where
