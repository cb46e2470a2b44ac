"""``read_uint`` / ``write_uint`` against a pure-Python reference."""

import struct

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels.bytes_util import read_u32, read_u64, read_uint, write_uint


def ref_read_uint(buf: bytes, pos: int, nbytes: int) -> int:
    v = 0
    for k in range(nbytes):
        v |= buf[pos + k] << (8 * k)
    return v


def ref_write_uint(buf: bytearray, pos: int, value: int, nbytes: int) -> None:
    for k in range(nbytes):
        buf[pos + k] = (value >> (8 * k)) & 0xFF


@st.composite
def positions(draw):
    """A buffer and an ``nbytes`` (1..8) field that lies inside it."""
    nbytes = draw(st.integers(1, 8))
    raw = draw(st.binary(min_size=nbytes, max_size=24))
    pos = draw(st.integers(0, len(raw) - nbytes))
    return raw, pos, nbytes


def _scalar(value: int):
    # the callers pass int64 values; very large ones only fit in uint64
    return np.int64(value) if value < 2**63 else np.uint64(value)


@given(positions())
def test_read_uint_matches_reference(as_input, case):
    raw, pos, nbytes = case
    buf = as_input(np.frombuffer(raw, dtype=np.uint8))
    assert int(read_uint(buf, pos, nbytes)) == ref_read_uint(raw, pos, nbytes)


@given(positions(), st.integers(0, 2**64 - 1))
def test_write_uint_matches_reference(as_input, guarded, case, value):
    raw, pos, nbytes = case
    g = guarded(len(raw), np.uint8)
    g.out[:] = np.frombuffer(raw, dtype=np.uint8)
    expected = bytearray(raw)
    ref_write_uint(expected, pos, value, nbytes)
    write_uint(g.out, pos, _scalar(value), nbytes)
    assert g.out.tobytes() == bytes(expected)
    assert g.intact()
    # the only array write_uint takes is its output, so the input flavour applies to the
    # read-back: what was written reads back (truncated to nbytes) from either flavour
    back = read_uint(as_input(g.out), pos, nbytes)
    assert int(back) == value & ((1 << (8 * nbytes)) - 1)


def test_read_uint_known_answers():
    buf = np.frombuffer(struct.pack("<HIQB", 0x0020, 0xDEADBEEF, 2**64 - 2, 7), np.uint8)
    assert int(read_uint(buf, 0, 2)) == 0x0020
    assert int(read_uint(buf, 2, 4)) == 0xDEADBEEF
    assert int(read_uint(buf, 6, 8)) == 2**64 - 2
    assert int(read_uint(buf, 14, 1)) == 7
    assert int(read_uint(buf, 3, 3)) == 0xDEADBE


def test_write_uint_known_answers():
    buf = np.zeros(15, np.uint8)
    write_uint(buf, 0, 0x0020, 2)
    write_uint(buf, 2, 0xDEADBEEF, 4)
    write_uint(buf, 6, np.uint64(2**64 - 2), 8)
    write_uint(buf, 14, 0x1FF, 1)  # truncated to the low byte
    assert buf.tobytes() == struct.pack("<HIQB", 0x0020, 0xDEADBEEF, 2**64 - 2, 0xFF)


@given(st.sampled_from([4, 8]), st.binary(min_size=8, max_size=24), st.data())
def test_read_u32_u64_match_reference(as_input, nbytes, raw, data):
    pos = data.draw(st.integers(0, len(raw) - nbytes))
    buf = as_input(np.frombuffer(raw, dtype=np.uint8))
    want = ref_read_uint(raw, pos, nbytes)
    want = want - (1 << 64) if want >= 1 << 63 else want  # as int64
    assert int((read_u32 if nbytes == 4 else read_u64)(buf, pos)) == want
