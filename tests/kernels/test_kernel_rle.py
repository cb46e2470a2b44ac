"""RLE kernels (``plan_chunks``, ``encode_count``, ``encode_fill``, ``decode_chunks``,
``decode_block``) against pure-Python references written from ``kernels/rle.py`` and
FORMAT_FACTS §3.3, and against pylance 14: our decoder reads the RLE chunks pylance
writes, and our encoder reproduces them byte for byte.

Layout: per chunk, the run values (``width`` bytes each) then the run lengths (u8, or
u16/u32 for "RLE v2"); runs longer than the largest length are cut into full pieces
and a remainder. Block form: ``u64 values byte length | values | lengths``.
"""

import json
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels import miniblock as km
from lancenb.kernels import rle

FILL = 0x5C
UNSET = -7
WIDTHS = [1, 2, 4, 8]
LENGTH_WIDTHS = [1, 2, 4]


def _u8(raw: bytes) -> np.ndarray:
    return np.frombuffer(bytearray(raw), np.uint8)


def _i64(values, as_input):
    return as_input(np.array(values, dtype=np.int64).reshape(-1))


def _le(value: int, width: int) -> bytes:
    return value.to_bytes(width, "little")


def _from_le(raw: bytes) -> int:
    return int.from_bytes(raw, "little")


# -- references ---------------------------------------------------------------------------

def ref_runs(values, max_run):
    """``[(value, length), ...]`` with long runs cut into ``max_run`` pieces."""
    out, i = [], 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        left = j - i
        while left:
            piece = min(left, max_run)
            out.append((values[i], piece))
            left -= piece
        i = j
    return out


def ref_encoded_size(values, width, length_width):
    return len(ref_runs(values, 2 ** (8 * length_width) - 1)) * (width + length_width)


def ref_plan(values, width, max_values, max_bytes, length_width):
    """The newer reference's ``encode_chunk_rolling``, literally: the rest if it fits,
    else the largest power-of-two prefix (>= 2) that fits."""
    bounds, i, n = [], 0, len(values)
    while i < n:
        remaining = n - i
        window = values[i:i + min(remaining, max_values)]
        if remaining <= max_values and \
                ref_encoded_size(window, width, length_width) <= max_bytes:
            cnt = remaining
        else:
            prefix = 1 << (len(window).bit_length() - 1)
            while prefix > 1 and ref_encoded_size(window[:prefix], width,
                                                  length_width) > max_bytes:
                prefix >>= 1
            if prefix <= 1:
                return rle.TOO_LARGE, None
            cnt = prefix
        bounds.append(i)
        i += cnt
    return len(bounds), bounds + [n]


def ref_encode(values, width, bounds, length_width):
    """``(runs per chunk, values bytes, lengths bytes)``."""
    max_run = 2 ** (8 * length_width) - 1
    counts, vals, lens = [], bytearray(), bytearray()
    for c in range(len(bounds) - 1):
        runs = ref_runs(values[bounds[c]:bounds[c + 1]], max_run)
        counts.append(len(runs))
        for v, n in runs:
            vals += _le(v, width)
            lens += _le(n, length_width)
    return counts, bytes(vals), bytes(lens)


def ref_decode_chunks(src: bytes, vstarts, vsizes, lstarts, lsizes, counts, width,
                      length_width, out_size):
    """``(status, err or None, decoded bytes or None)``, checks in the kernel's order."""
    if width not in WIDTHS or length_width not in LENGTH_WIDTHS:
        return rle.BAD_WIDTH, None, None
    nc = len(vstarts)
    if not (len(vsizes) == len(lstarts) == len(lsizes) == len(counts) == nc) \
            or out_size % width:
        return rle.BAD_SIZE, None, None
    room, need, out = out_size // width, 0, bytearray()
    for c in range(nc):
        vs, vz, ls, lz, cnt = vstarts[c], vsizes[c], lstarts[c], lsizes[c], counts[c]
        if vs < 0 or vz < 0 or vs + vz > len(src):
            return rle.BUFFER_PAST_END, (c, vs), None
        if ls < 0 or lz < 0 or ls + lz > len(src):
            return rle.BUFFER_PAST_END, (c, ls), None
        if cnt < 0:
            return rle.BAD_SIZE, (c, vs), None
        if vz % width or lz % length_width or vz // width != lz // length_width:
            return rle.BAD_BUFFER_SIZES, (c, vs), None
        total = 0
        for r in range(lz // length_width):
            p = ls + r * length_width
            n = _from_le(src[p:p + length_width])
            if n == 0:
                return rle.ZERO_RUN, (c, p), None
            if total + n > cnt:
                return rle.RUNS_PAST_COUNT, (c, p), None
            total += n
            out += src[vs + r * width:vs + (r + 1) * width] * n
        if total != cnt:
            return rle.RUNS_SHORT, (c, ls + lz), None
        if need + cnt > room:
            return rle.BAD_SIZE, (c, vs), None
        need += cnt
    if need != room:
        return rle.BAD_SIZE, (nc, 0), None
    return rle.OK, None, bytes(out)


def ref_decode_block(block: bytes, width, length_width, count, out_size):
    if width not in WIDTHS or length_width not in LENGTH_WIDTHS:
        return rle.BAD_WIDTH, None
    if count < 0 or out_size % width or out_size // width != count:
        return rle.BAD_SIZE, None
    if len(block) < 8 or _from_le(block[:8]) > len(block) - 8:
        return rle.BUFFER_PAST_END, None
    vz = _from_le(block[:8])
    status, _, out = ref_decode_chunks(block, [8], [vz], [8 + vz], [len(block) - 8 - vz],
                                       [count], width, length_width, out_size)
    return status, out


# -- strategies ---------------------------------------------------------------------------

@st.composite
def run_values(draw, width=None, max_runs=30):
    """``(width, values)``: runs of equal values, some long enough to be cut at 255."""
    width = draw(st.sampled_from(WIDTHS)) if width is None else width
    pool = draw(st.lists(st.integers(0, 2 ** (8 * width) - 1), min_size=1, max_size=4))
    runs = draw(st.lists(st.tuples(st.sampled_from(pool),
                                   st.one_of(st.integers(1, 5), st.integers(1, 700))),
                         max_size=max_runs))
    return width, [v for v, n in runs for _ in range(n)]


def _raw(values, width) -> bytes:
    return b"".join(_le(v, width) for v in values)


@st.composite
def bounds_for(draw, n):
    if n == 0:
        return [0]
    cuts = draw(st.lists(st.integers(1, n - 1), max_size=6)) if n > 1 else []
    return [0] + sorted(set(cuts)) + [n]


def _encode(values, width, bounds, length_width, as_input=np.asarray):
    """Our count + fill: ``(runs per chunk, values bytes, lengths bytes)``."""
    data = as_input(np.frombuffer(_raw(values, width), np.uint8))
    nb = len(bounds) - 1
    runs = np.full(nb, UNSET, np.int64)
    total = rle.encode_count(data, width, _i64(bounds, as_input), length_width, runs)
    assert total >= 0
    starts = np.zeros(nb, np.int64)
    if nb:
        np.cumsum(runs[:-1], out=starts[1:])
    vals = np.full(total * width, FILL, np.uint8)
    lens = np.full(total * length_width, FILL, np.uint8)
    assert rle.encode_fill(data, width, _i64(bounds, as_input), length_width,
                           as_input(starts), vals, lens) == rle.OK
    return runs.tolist(), vals.tobytes(), lens.tobytes()


def _decode(as_input, guarded, src: bytes, vstarts, vsizes, lstarts, lsizes, counts, width,
            length_width, out_size=None):
    """decode_chunks checked against the reference; returns the decoded bytes or None."""
    if out_size is None:
        out_size = max(sum(counts), 0) * width
    out = guarded(out_size, np.uint8, FILL)
    err = np.full(2, UNSET, np.int64)
    got = rle.decode_chunks(as_input(np.frombuffer(src, np.uint8)), _i64(vstarts, as_input),
                            _i64(vsizes, as_input), _i64(lstarts, as_input),
                            _i64(lsizes, as_input), _i64(counts, as_input), width,
                            length_width, out.out, err)
    want, where, decoded = ref_decode_chunks(src, vstarts, vsizes, lstarts, lsizes, counts,
                                             width, length_width, out_size)
    assert got == want
    assert out.intact()
    if want < 0:
        # nothing is written unless every chunk checks out
        assert out.out.tobytes() == bytes([FILL]) * out_size
        if where is not None:
            assert tuple(err.tolist()) == where
        return None
    assert out.out.tobytes() == decoded
    return decoded


def _layout(vals: bytes, lens: bytes, runs, width, length_width, gaps=None):
    """A source buffer holding each chunk's values then lengths, optionally gapped."""
    src, vstarts, vsizes, lstarts, lsizes, r = bytearray(), [], [], [], [], 0
    for c, n in enumerate(runs):
        src += b"\xee" * (gaps[c] if gaps else 0)
        vstarts.append(len(src))
        vsizes.append(n * width)
        src += vals[r * width:(r + n) * width]
        lstarts.append(len(src))
        lsizes.append(n * length_width)
        src += lens[r * length_width:(r + n) * length_width]
        r += n
    return bytes(src), vstarts, vsizes, lstarts, lsizes


# -- encoding -----------------------------------------------------------------------------

@given(run_values(), st.sampled_from(LENGTH_WIDTHS), st.integers(2, 5000),
       st.integers(0, 9000))
def test_plan_chunks_matches_reference(as_input, width_values, length_width, max_values,
                                       max_bytes):
    width, values = width_values
    n = len(values)
    out = np.full(n + 1, UNSET, np.int64)
    got = rle.plan_chunks(as_input(np.frombuffer(_raw(values, width), np.uint8)), width,
                          max_values, max_bytes, length_width, out)
    want, bounds = ref_plan(values, width, max_values, max_bytes, length_width)
    assert got == want
    if got >= 0:
        assert out[:got + 1].tolist() == bounds
        counts = np.diff(bounds)
        assert all(c & (c - 1) == 0 for c in counts[:-1])  # powers of two but the last


@given(run_values(), st.sampled_from(LENGTH_WIDTHS), st.data())
def test_encode_matches_reference(as_input, width_values, length_width, data):
    width, values = width_values
    bounds = data.draw(bounds_for(len(values)))
    assert _encode(values, width, bounds, length_width, as_input) == \
        tuple(ref_encode(values, width, bounds, length_width))


@given(run_values(), st.sampled_from(LENGTH_WIDTHS), st.data())
def test_encode_decode_round_trip(as_input, guarded, width_values, length_width, data):
    width, values = width_values
    bounds = data.draw(bounds_for(len(values)))
    runs, vals, lens = _encode(values, width, bounds, length_width)
    gaps = [data.draw(st.integers(0, 9)) for _ in runs]
    src, vs, vz, ls, lz = _layout(vals, lens, runs, width, length_width, gaps)
    decoded = _decode(as_input, guarded, src, vs, vz, ls, lz, np.diff(bounds).tolist(), width,
                      length_width)
    assert decoded == _raw(values, width)


def test_bitwise_equality_of_floats():
    """Runs compare bits: -0.0 and 0.0 (and NaN payloads) stay apart."""
    f = np.array([0.0, -0.0, -0.0, np.nan, np.nan, 1.0], np.float64)
    f[4] = np.frombuffer(struct.pack("<Q", 0x7FF8000000000001), np.float64)[0]
    raw = f.view(np.uint8)
    runs = np.zeros(1, np.int64)
    assert rle.encode_count(raw, 8, np.array([0, 6], np.int64), 1, runs) == 5


def test_encode_fill_rejects_small_or_misplaced_outputs(guarded):
    data = _u8(bytes([1, 1, 2, 3]))
    bounds = np.array([0, 4], np.int64)
    vals = guarded(2, np.uint8, FILL)
    lens = guarded(2, np.uint8, FILL)
    assert rle.encode_fill(data, 1, bounds, 1, np.zeros(1, np.int64), vals.out,
                           lens.out) == rle.BAD_SIZE
    assert vals.intact() and lens.intact()
    for start in (-1, 2, 2**62):
        vals = guarded(3, np.uint8, FILL)
        lens = guarded(3, np.uint8, FILL)
        assert rle.encode_fill(data, 1, bounds, 1, np.array([start], np.int64), vals.out,
                               lens.out) == rle.BAD_SIZE
        assert vals.intact() and lens.intact()
    # lengths of the wrong size for the values, widths the format does not have
    assert rle.encode_fill(data, 1, bounds, 2, np.zeros(1, np.int64), np.zeros(3, np.uint8),
                           np.zeros(3, np.uint8)) == rle.BAD_SIZE
    assert rle.encode_fill(data, 3, bounds, 1, np.zeros(1, np.int64), np.zeros(3, np.uint8),
                           np.zeros(3, np.uint8)) == rle.BAD_WIDTH
    assert rle.encode_count(data, 1, np.array([0, 5], np.int64), 1,
                            np.zeros(1, np.int64)) == rle.BAD_SIZE
    assert rle.encode_count(data, 1, np.array([0, 3, 2, 4], np.int64), 1,
                            np.zeros(3, np.int64)) == rle.BAD_SIZE
    assert rle.plan_chunks(data, 1, 4096, 8186, 3, np.zeros(5, np.int64)) == rle.BAD_WIDTH
    assert rle.plan_chunks(data, 1, 4096, 8186, 1, np.zeros(4, np.int64)) == rle.BAD_SIZE
    assert rle.plan_chunks(data, 1, 4096, 3, 1, np.zeros(5, np.int64)) == rle.TOO_LARGE


# -- decoding -----------------------------------------------------------------------------

@st.composite
def corrupted_chunks(draw):
    """Valid chunks, then one to four corruptions of lengths, layout or the buffer."""
    width, values = draw(run_values(max_runs=12))
    length_width = draw(st.sampled_from(LENGTH_WIDTHS))
    bounds = draw(bounds_for(len(values)))
    runs, vals, lens = _encode(values, width, bounds, length_width)
    src, vs, vz, ls, lz = _layout(vals, lens, runs, width, length_width)
    src = bytearray(src)
    counts = np.diff(bounds).tolist()
    kinds = ["length", "zero", "byte", "vsize", "lsize", "count", "start", "truncate", "out"]
    out_size = None
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind == "out":
            out_size = max(0, sum(counts) * width + draw(st.integers(-9, 9)))
            continue
        if not counts:
            continue
        c = draw(st.integers(0, len(counts) - 1))
        if kind in ("length", "zero") and lz[c]:
            r = draw(st.integers(0, lz[c] // length_width - 1))
            value = 0 if kind == "zero" else draw(st.integers(0, 2 ** (8 * length_width) - 1))
            p = ls[c] + r * length_width
            if p + length_width <= len(src):
                src[p:p + length_width] = _le(value, length_width)
        elif kind == "byte" and src:
            src[draw(st.integers(0, len(src) - 1))] = draw(st.integers(0, 255))
        elif kind == "vsize":
            vz[c] = max(vz[c] + draw(st.integers(-9, 9)), 0)
        elif kind == "lsize":
            lz[c] = max(lz[c] + draw(st.integers(-2, 2)) * length_width, 0)
        elif kind == "count":
            counts[c] = counts[c] + draw(st.integers(-3, 3))
        elif kind == "start":
            which = draw(st.sampled_from([vs, ls]))
            which[c] = which[c] + draw(st.integers(-9, 9))
        elif kind == "truncate":
            del src[draw(st.integers(0, len(src))):]
    return bytes(src), vs, vz, ls, lz, counts, width, length_width, out_size


@given(corrupted_chunks())
def test_decode_corrupted_chunks(as_input, guarded, case):
    *args, out_size = case
    if out_size is None:
        out_size = max(sum(args[5]), 0) * args[6]
    _decode(as_input, guarded, *args, out_size=out_size)


# -- known answers (the kernels/rle.py docstring, FORMAT_FACTS §3.3) ------------------------

def test_docstring_examples():
    assert _encode([1, 1, 1, 2, 2], 4, [0, 5], 1) == \
        ([2], bytes.fromhex("01000000" "02000000"), bytes([3, 2]))
    assert _encode([7] * 500, 4, [0, 500], 1) == \
        ([2], bytes.fromhex("07000000" "07000000"), bytes.fromhex("fff5"))
    # the reference's test: 1000 x 42 then 300 x 100 → 255 255 255 235 | 255 45
    assert _encode([42] * 1000 + [100] * 300, 4, [0, 1300], 1)[2] == \
        bytes([255, 255, 255, 235, 255, 45])
    assert _encode([42] * 1000, 4, [0, 1000], 2)[2] == struct.pack("<H", 1000)


def _decode_one(chunk_vals: bytes, chunk_lens: bytes, count: int, width=4, length_width=1):
    src = _u8(chunk_vals + chunk_lens)
    out = np.full(max(count, 0) * width, FILL, np.uint8)
    err = np.full(2, UNSET, np.int64)
    got = rle.decode_chunks(src, np.array([0], np.int64), np.array([len(chunk_vals)], np.int64),
                            np.array([len(chunk_vals)], np.int64),
                            np.array([len(chunk_lens)], np.int64),
                            np.array([count], np.int64), width, length_width, out, err)
    return got, err.tolist(), out


def test_decode_statuses():
    vals = bytes.fromhex("01000000" "02000000")
    got, err, out = _decode_one(vals, bytes([3, 2]), 5)
    assert got == rle.OK and out.view(np.int32).tolist() == [1, 1, 1, 2, 2]
    assert err == [UNSET, UNSET]
    assert _decode_one(vals, bytes([3, 2]), 4)[:2] == (rle.RUNS_PAST_COUNT, [0, 9])
    assert _decode_one(vals, bytes([3, 2]), 6)[:2] == (rle.RUNS_SHORT, [0, 10])
    assert _decode_one(vals, bytes([3, 0]), 3)[:2] == (rle.ZERO_RUN, [0, 9])
    assert _decode_one(vals, bytes([3]), 3)[:2] == (rle.BAD_BUFFER_SIZES, [0, 0])
    assert _decode_one(vals[:7], bytes([3]), 3)[:2] == (rle.BAD_BUFFER_SIZES, [0, 0])
    assert _decode_one(vals, bytes([3, 2]), 5, width=3)[0] == rle.BAD_WIDTH
    assert _decode_one(vals, bytes([3, 2]), 5, length_width=8)[0] == rle.BAD_WIDTH
    # an empty chunk of zero values is fine; of some values, short
    assert _decode_one(b"", b"", 0)[0] == rle.OK
    assert _decode_one(b"", b"", 2)[:2] == (rle.RUNS_SHORT, [0, 0])


def test_decode_rejects_output_of_the_wrong_size():
    src = _u8(bytes.fromhex("01000000") + bytes([3]))
    one = np.array([0], np.int64), np.array([4], np.int64), np.array([4], np.int64), \
        np.array([1], np.int64)
    err = np.full(2, UNSET, np.int64)
    for size in (8, 16, 13):
        out = np.full(size, FILL, np.uint8)
        assert rle.decode_chunks(src, *one, np.array([3], np.int64), 4, 1, out, err) == \
            rle.BAD_SIZE
        assert (out == FILL).all()
    # arrays of different lengths
    assert rle.decode_chunks(src, *one, np.array([3, 1], np.int64), 4, 1,
                             np.zeros(12, np.uint8), err) == rle.BAD_SIZE


# -- block form (2.2) ---------------------------------------------------------------------

def _block(values, width, length_width):
    _, vals, lens = ref_encode(values, width, [0, len(values)], length_width)
    return struct.pack("<Q", len(vals)) + vals + lens


@given(run_values(), st.sampled_from(LENGTH_WIDTHS))
def test_decode_block_round_trip(as_input, guarded, width_values, length_width):
    width, values = width_values
    block = _block(values, width, length_width)
    out = guarded(len(values) * width, np.uint8, FILL)
    got = rle.decode_block(as_input(np.frombuffer(block, np.uint8)), width, length_width,
                           len(values), out.out)
    assert got == rle.OK
    assert out.out.tobytes() == _raw(values, width)
    assert out.intact()


@given(run_values(max_runs=8), st.data())
def test_decode_block_corrupted(as_input, guarded, width_values, data):
    width, values = width_values
    block = bytearray(_block(values, width, 1))
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(["header", "byte", "truncate"]))
        if kind == "header":
            block[:8] = struct.pack("<Q", data.draw(st.one_of(
                st.integers(0, len(block) + 9), st.integers(0, 2**64 - 1))))
        elif kind == "byte" and block:
            block[data.draw(st.integers(0, len(block) - 1))] = data.draw(st.integers(0, 255))
        else:
            del block[data.draw(st.integers(0, len(block))):]
    count = len(values) + data.draw(st.integers(-1, 1))
    out_size = max(count, 0) * width
    out = guarded(out_size, np.uint8, FILL)
    got = rle.decode_block(as_input(np.frombuffer(bytes(block), np.uint8)), width, 1, count,
                           out.out)
    want, decoded = ref_decode_block(bytes(block), width, 1, count, out_size)
    assert got == want
    assert out.intact()
    if want == rle.OK:
        assert out.out.tobytes() == decoded
    else:
        assert out.out.tobytes() == bytes([FILL]) * out_size


@given(st.lists(run_values(max_runs=6), min_size=0, max_size=4), st.data())
def test_decode_blocks_equals_block_by_block(as_input, guarded, chunks, data):
    """``decode_blocks`` (one block per chunk, e.g. 2.2 levels) equals decoding each
    block on its own; a damaged chunk is reported by index."""
    width = 2
    chunks = [[v & 0xFFFF for v in vals] for _, vals in chunks]
    blobs = [_block(v, width, 1) for v in chunks]
    gap = data.draw(st.integers(0, 3))
    src, starts = b"", []
    for b in blobs:
        starts.append(len(src))
        src += b + bytes(gap)
    counts = [len(v) for v in chunks]
    bad = data.draw(st.one_of(st.none(), st.integers(0, max(0, len(chunks) - 1)))) \
        if chunks else None
    if bad is not None:
        counts[bad] += 1  # the runs now cover fewer values than the chunk claims
    out = guarded(sum(counts) * width, np.uint8, FILL)
    err = np.zeros(2, np.int64)
    got = rle.decode_blocks(as_input(np.frombuffer(src, np.uint8)), _i64(starts, as_input),
                            _i64([len(b) for b in blobs], as_input), _i64(counts, as_input),
                            width, 1, out.out, err)
    assert out.intact()
    if bad is None:
        assert got == rle.OK
        assert out.out.tobytes() == b"".join(_raw(v, width) for v in chunks)
    else:
        assert got == rle.RUNS_SHORT and err[0] == bad


def test_decode_blocks_rejects_ranges_outside_src():
    block = _block([1, 1, 2], 2, 1)
    out = np.zeros(6, np.uint8)
    err = np.zeros(2, np.int64)
    src = _u8(block)
    one = np.array([1], np.int64)
    assert rle.decode_blocks(src, one, np.array([len(block)], np.int64), np.array([3]), 2, 1,
                             out, err) == rle.BUFFER_PAST_END
    assert rle.decode_blocks(src, np.zeros(1, np.int64), np.array([len(block)], np.int64),
                             np.array([4]), 2, 1, out, err) == rle.BAD_SIZE


def test_decode_block_known_answer():
    # u16 levels [1, 1, 1, 0, 0] as the 2.2 writer stores them (FORMAT_FACTS §8)
    block = struct.pack("<Q", 4) + struct.pack("<2H", 1, 0) + bytes([3, 2])
    out = np.zeros(10, np.uint8)
    assert rle.decode_block(_u8(block), 2, 1, 5, out) == rle.OK
    assert out.view(np.uint16).tolist() == [1, 1, 1, 0, 0]
    assert rle.decode_block(_u8(block[:7]), 2, 1, 5, out) == rle.BUFFER_PAST_END
    big = struct.pack("<Q", 2**64 - 1) + block[8:]
    assert rle.decode_block(_u8(big), 2, 1, 5, out) == rle.BUFFER_PAST_END


# -- pylance 14 as the oracle -------------------------------------------------------------

def _pylance_rle_pages(tmp_path, table, version="2.1"):
    """``[(column, page values buffer, items, starts, sizes)]`` of a file pylance writes."""
    import lance.file as lf

    from lancenb.file import LanceFileReader

    path = str(tmp_path / "rle.lance")
    w = lf.LanceFileWriter(path, table.schema, version=version)
    w.write_batch(table)
    w.close()
    raw = np.fromfile(path, np.uint8)
    pages = []
    for ci, col in enumerate(LanceFileReader(path).metadata().columns):
        for page in col.pages:
            layout = page.layout.mini_block_layout
            vc = layout.value_compression
            assert vc.WhichOneof("compression") == "rle", page.encoding
            assert vc.rle.run_lengths.flat.bits_per_value == 8
            assert layout.num_buffers == 2
            meta, chunks = page.buffers[0], page.buffers[1]
            words = raw[meta.position:meta.position + meta.size].copy().view(np.uint16)
            data = raw[chunks.position:chunks.position + chunks.size].copy()
            nbytes = ((words.astype(np.int64) >> 4) + 1) * 8
            pos = np.zeros(len(words), np.int64)
            np.cumsum(nbytes[:-1], out=pos[1:])
            nc = len(words)
            items, levels = np.empty(nc, np.int64), np.empty(nc, np.int64)
            starts, sizes = np.empty((nc, 2), np.int64), np.empty((nc, 2), np.int64)
            err = np.zeros(2, np.int64)
            assert km.parse_chunks(words.astype(np.int64), data, pos, layout.num_items, 0, 2, 2,
                                   items, levels, starts, sizes, err) == km.OK
            pages.append((ci, data, items, starts, sizes))
    return pages


def _runs_column(rng, n, means):
    """Segments of runs with the given mean lengths (long runs, then short ones)."""
    parts = []
    for mean in means:
        runs = rng.geometric(1 / mean, size=n)
        vals = rng.integers(-2**31, 2**31, size=n)
        parts.append(np.repeat(vals, runs)[:n // len(means)])
    return np.concatenate(parts)


def test_pylance_rle_chunks(tmp_path, as_input, guarded):
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(42)
    base = _runs_column(rng, 24000, [400, 2, 30, 1.3])
    cols = {"i32": base.astype(np.int32), "i64": base.astype(np.int64) * 12345678901,
            "u8": base.astype(np.uint8), "i16": base.astype(np.int16)}
    pages = _pylance_rle_pages(tmp_path, pa.table(cols))
    assert [p[0] for p in pages] == [0, 1, 2, 3]
    for (_, data, items, starts, sizes), arr in zip(pages, cols.values()):
        width = arr.dtype.itemsize
        raw = arr.view(np.uint8)
        # decode what pylance wrote
        decoded = _decode(as_input, guarded, data.tobytes(), starts[:, 0].tolist(),
                          sizes[:, 0].tolist(), starts[:, 1].tolist(), sizes[:, 1].tolist(),
                          items.tolist(), width, 1)
        assert decoded == raw.tobytes()
        # and write the same chunks: same bounds, same values and lengths
        bounds = np.empty(len(arr) + 1, np.int64)
        nc = rle.plan_chunks(raw, width, rle.MAX_CHUNK_VALUES, rle.MAX_CHUNK_BYTES, 1, bounds)
        assert np.diff(bounds[:nc + 1]).tolist() == items.tolist()
        runs, vals, lens = _encode(raw.view(f"<u{width}").tolist(), width,
                                   bounds[:nc + 1].tolist(), 1)
        r = 0
        for c, n in enumerate(runs):
            assert data[starts[c, 0]:starts[c, 0] + sizes[c, 0]].tobytes() == \
                vals[r * width:(r + n) * width]
            assert data[starts[c, 1]:starts[c, 1] + sizes[c, 1]].tobytes() == lens[r:r + n]
            r += n


def test_pylance_rle_blocks(tmp_path):
    """2.2 writes the levels of an all-null list page as two RLE blocks (rep, def) of
    u16 levels; the block encoder does not cut runs at mini-block chunk bounds."""
    pa = pytest.importorskip("pyarrow")
    import lance.file as lf

    table = pa.table({"l": pa.array([None] * 4000 + [[]] * 5000 + [None] * 1000,
                                    pa.list_(pa.int32()))})
    path = str(tmp_path / "levels.lance")
    w = lf.LanceFileWriter(path, table.schema, version="2.2")
    w.write_batch(table)
    w.close()
    raw = np.fromfile(path, np.uint8)
    (page,) = lf.LanceFileReader(path).metadata().columns[0].pages
    rep = [1] * 10000                            # every row starts a list
    dfn = [1] * 4000 + [2] * 5000 + [1] * 1000   # 1 = null list, 2 = empty list
    for buf, levels in zip(page.buffers, (rep, dfn), strict=True):
        block = raw[buf.position:buf.position + buf.size].copy()
        out = np.zeros(2 * len(levels), np.uint8)
        assert rle.decode_block(block, 2, 1, len(levels), out) == rle.OK
        assert out.view(np.uint16).tolist() == levels
        assert block.tobytes() == _block(levels, 2, 1)


# -- extreme sizes (child process) --------------------------------------------------------

_EXTREMES = [-(2**63), -20, -1, 2**61, 2**62 - 1, 2**62, 2**63 - 1]

_EXTREME_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lancenb.kernels import rle
    def arr(x):
        return np.array(x, np.int64)
    results = []
    for src, vs, vz, ls, lz, cnt, out_size in json.load(sys.stdin):
        err = np.zeros(2, np.int64)
        try:
            got = int(rle.decode_chunks(np.frombuffer(bytearray(bytes(src)), np.uint8),
                                        arr([vs]), arr([vz]), arr([ls]), arr([lz]), arr([cnt]),
                                        4, 1, np.zeros(out_size, np.uint8), err))
            blk = int(rle.decode_block(np.frombuffer(bytearray(bytes(src)), np.uint8), 4, 1,
                                       cnt, np.zeros(out_size, np.uint8)))
            fill = int(rle.encode_fill(np.frombuffer(bytearray(bytes(src)), np.uint8), 1,
                                       arr([0, len(src)]), 1, arr([vs]),
                                       np.zeros(4, np.uint8), np.zeros(4, np.uint8)))
            plan = int(rle.plan_chunks(np.frombuffer(bytearray(bytes(src)), np.uint8), 1,
                                       min(abs(cnt), 2**63 - 1), vz, 1,
                                       np.zeros(len(src) + 1, np.int64)))
        except Exception as exc:  # a kernel must not raise: report it to the parent
            got = blk = fill = plan = type(exc).__name__
        results.append([got, err.tolist(), blk, fill, plan])
    json.dump(results, sys.stdout)
""")


def test_extreme_starts_sizes_counts():
    """Starts, sizes and counts near the int64 limits, in a child process so that an
    out-of-bounds access fails this test instead of killing the run."""
    chunk = bytes.fromhex("01000000" "02000000") + bytes([3, 2])
    src = list(struct.pack("<Q", 8) + chunk)
    cases = []
    for vs in [8, 0] + _EXTREMES[::2]:
        for vz in [8, 0] + _EXTREMES:
            for ls in [16, 0] + _EXTREMES[1::2]:
                for cnt in [5, 0] + _EXTREMES[::3]:
                    out_size = 20 if cnt == 5 else 4
                    cases.append((src, vs, vz, ls, 2, cnt, out_size))
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _EXTREME_CHILD],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-600:]}"
    for case, (got, err, blk, fill, plan) in zip(cases, json.loads(proc.stdout), strict=True):
        src_b, vs, vz, ls, lz, cnt, out_size = case
        want, where, _ = ref_decode_chunks(bytes(src_b), [vs], [vz], [ls], [lz], [cnt], 4, 1,
                                           out_size)
        assert got == want, case
        if where is not None:
            assert tuple(err) == where, case
        assert blk == ref_decode_block(bytes(src_b), 4, 1, cnt, out_size)[0], case
        assert fill in (rle.OK, rle.BAD_SIZE), case
        assert isinstance(plan, int), case
