"""Variable mini-block value buffers: ``plan_chunks``, ``fill_chunks``,
``chunk_buffer_sizes``, ``decode_size`` and ``decode_fill`` against pure-Python
references written from ``kernels/variable.py`` and FORMAT_FACTS §3.8.

A chunk's value buffer: ``n + 1`` offsets (u32 or u64) counted from the start of the
buffer (so the first is ``(n + 1) * width``), the ``n`` values' bytes, then 0x48 padding
to a multiple of the offset width.
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
from lancenb.kernels import variable as kv

PAD = 0x48
FILL = 0x5C  # initial output bytes, so untouched bytes are visible
UNSET = -7   # initial value of int64 outputs


def _u8(raw: bytes) -> np.ndarray:
    """Writable bytes, like the other arguments of the call: mixing read-only and
    writable arrays in one call would compile one more numba specialisation."""
    return np.frombuffer(bytearray(raw), np.uint8)


# -- references ---------------------------------------------------------------------------

def _le(value: int, width: int) -> bytes:
    return bytes((value >> (8 * k)) & 0xFF for k in range(width))


def _from_le(raw: bytes) -> int:
    return sum(b << (8 * k) for k, b in enumerate(raw))


def _raw_size(offsets, i0, i1, width):
    return (i1 - i0 + 1) * width + offsets[i1] - offsets[i0]


def ref_plan_chunks(offsets, width, aim_bytes, max_bytes, max_values):
    """``(count, bounds)`` or ``(TOO_LARGE, None)``."""
    n = len(offsets) - 1
    bounds, i = [], 0
    while i < n:
        remaining = n - i
        if remaining <= max_values and _raw_size(offsets, i, n, width) <= aim_bytes:
            cnt = remaining  # the last chunk takes the rest once it fits
        else:
            # the largest power of two >= 2 within what remains, max_values and the aim;
            # two when even two do not fit the aim (only the last chunk may hold one)
            powers, p = [], 2
            while p <= min(remaining, max_values):
                powers.append(p)
                p *= 2
            fits = [p for p in powers if _raw_size(offsets, i, i + p, width) <= aim_bytes]
            cnt = max(fits) if fits else min(2, remaining)
        if _raw_size(offsets, i, i + cnt, width) > max_bytes:
            return kv.TOO_LARGE, None
        bounds.append(i)
        i += cnt
    bounds.append(n)
    return len(bounds) - 1, bounds


def ref_chunk_buffer(offsets, data: bytes, i0, i1, width) -> bytes:
    first = (i1 - i0 + 1) * width
    buf = bytearray()
    for k in range(i0, i1 + 1):
        buf += _le(first + offsets[k] - offsets[i0], width)
    buf += data[offsets[i0]:offsets[i1]]
    while len(buf) % width:
        buf.append(PAD)
    return bytes(buf)


def ref_chunk_buffer_sizes(offsets, bounds, width):
    return [len(ref_chunk_buffer(offsets, b"\0" * offsets[-1], bounds[c], bounds[c + 1], width))
            for c in range(len(bounds) - 1)]


def ref_fill_chunks(offsets, data, bounds, width, out: bytearray, out_starts) -> None:
    for c, p in enumerate(out_starts):
        buf = ref_chunk_buffer(offsets, data, bounds[c], bounds[c + 1], width)
        out[p:p + len(buf)] = buf


def ref_decode_size(src: bytes, starts, sizes, counts, width):
    """``(total bytes, None)`` or ``(status, (chunk, byte offset))``."""
    total = 0
    for c, (s, size, cnt) in enumerate(zip(starts, sizes, counts, strict=True)):
        if s < 0 or size < 0 or cnt < 0 or s + size > len(src) or (cnt + 1) * width > size:
            return kv.OFFSETS_PAST_BUFFER, (c, s)
        offs = [_from_le(src[s + k * width:s + (k + 1) * width]) for k in range(cnt + 1)]
        if offs[0] < (cnt + 1) * width or offs[0] > size:
            return kv.BAD_OFFSET, (c, s)
        for k in range(1, cnt + 1):
            if offs[k] < offs[k - 1] or offs[k] > size:
                return kv.BAD_OFFSET, (c, s + k * width)
        total += offs[-1] - offs[0]
    return total, None


def ref_decode_fill(src: bytes, starts, counts, width):
    """Arrow-style offsets from 0 and the values' bytes."""
    out_offsets, out = [0], bytearray()
    for s, cnt in zip(starts, counts, strict=True):
        offs = [_from_le(src[s + k * width:s + (k + 1) * width]) for k in range(cnt + 1)]
        base = len(out)
        out_offsets += [base + o - offs[0] for o in offs[1:]]
        out += src[s + offs[0]:s + offs[-1]]
    return out_offsets, bytes(out)


# -- strategies ---------------------------------------------------------------------------

@st.composite
def value_lists(draw, max_values=60):
    """Values plus Arrow-style offsets into ``data``; offsets need not start at 0 (a
    sliced array), and ``data`` has unrelated bytes before and after."""
    values = draw(st.lists(st.one_of(st.binary(max_size=6), st.binary(max_size=300)),
                           max_size=max_values))
    head = draw(st.binary(max_size=12))
    tail = draw(st.binary(max_size=4))
    offsets = [len(head)]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    return values, offsets, head + b"".join(values) + tail


@st.composite
def bounds_for(draw, n):
    """Strictly increasing chunk bounds from 0 to ``n``."""
    if n == 0:
        return [0]
    cuts = draw(st.lists(st.integers(1, n - 1), max_size=8)) if n > 1 else []
    return [0] + sorted(set(cuts)) + [n]


widths = st.sampled_from([4, 8])


def _i64(values, as_input):
    return as_input(np.array(values, dtype=np.int64).reshape(-1))


def _run_decode(as_input, guarded, src: bytes, starts, sizes, counts, width):
    """decode_size, then (if it accepts) decode_fill; both checked against the reference."""
    err = guarded(2, np.int64, UNSET)
    got = kv.decode_size(as_input(np.frombuffer(src, np.uint8)), _i64(starts, as_input),
                         _i64(sizes, as_input), _i64(counts, as_input), width, err.out)
    want, where = ref_decode_size(src, starts, sizes, counts, width)
    assert got == want
    assert err.intact()
    if want < 0:
        assert tuple(err.out.tolist()) == where
        return None
    offs = guarded(sum(counts) + 1, np.int64, UNSET)
    data = guarded(got, np.uint8, FILL)
    status = kv.decode_fill(as_input(np.frombuffer(src, np.uint8)), _i64(starts, as_input),
                            _i64(counts, as_input), width, offs.out, data.out)
    assert status == kv.OK
    assert offs.intact() and data.intact()
    want_offsets, want_data = ref_decode_fill(src, starts, counts, width)
    assert offs.out.tolist() == want_offsets
    assert data.out.tobytes() == want_data
    return offs.out.tolist(), data.out.tobytes()


def _chunk_layout(offsets, bounds, width, gaps=None):
    """Back-to-back (or gapped) buffer starts, sizes and counts for ``bounds``."""
    sizes = ref_chunk_buffer_sizes(offsets, bounds, width)
    starts, pos = [], 0
    for c, n in enumerate(sizes):
        pos += gaps[c] if gaps else 0
        starts.append(pos)
        pos += n
    counts = [bounds[c + 1] - bounds[c] for c in range(len(sizes))]
    return starts, sizes, counts, pos


# -- plan_chunks --------------------------------------------------------------------------

plan_params = st.tuples(widths, st.integers(8, 700), st.integers(8, 1600), st.integers(2, 70))


@given(value_lists(), plan_params)
def test_plan_chunks_matches_reference(as_input, guarded, vals, params):
    _, offsets, _ = vals
    width, aim, max_bytes, max_values = params
    n = len(offsets) - 1
    g = guarded(n + 1, np.int64, UNSET)  # at most n chunks, so n + 1 bounds
    got = kv.plan_chunks(_i64(offsets, as_input), width, aim, max_bytes, max_values, g.out)
    want, bounds = ref_plan_chunks(offsets, width, aim, max_bytes, max_values)
    assert got == want
    assert g.intact()
    if want >= 0:
        assert g.out[:want + 1].tolist() == bounds


@given(value_lists(), widths, st.integers(8, 700), st.integers(0, 900), st.integers(2, 70))
def test_plan_chunks_contract(as_input, guarded, vals, width, aim, headroom, max_values):
    """The documented contract, checked directly rather than against the reference
    (with ``aim_bytes <= max_bytes``, as callers configure it)."""
    _, offsets, _ = vals
    max_bytes = aim + headroom
    n = len(offsets) - 1
    g = guarded(n + 1, np.int64, UNSET)
    nc = kv.plan_chunks(_i64(offsets, as_input), width, aim, max_bytes, max_values, g.out)
    assert g.intact()
    if nc == kv.TOO_LARGE:
        # some chunk the rules force (two values, or a lone last one) exceeds max_bytes
        assert any(_raw_size(offsets, i, min(i + 2, n), width) > max_bytes for i in range(n))
        return
    assert nc >= 0
    bounds = g.out[:nc + 1].tolist()
    assert bounds[0] == 0 and bounds[-1] == n       # covers all values, in order
    assert all(a < b for a, b in zip(bounds, bounds[1:], strict=False))
    for c in range(nc):
        i, j = bounds[c], bounds[c + 1]
        cnt, size, last = j - i, _raw_size(offsets, i, j, width), c == nc - 1
        assert cnt <= max_values and size <= max_bytes
        if last:
            assert size <= aim or cnt <= 2       # within aim unless forced
            continue
        assert cnt >= 2 and cnt & (cnt - 1) == 0  # power of two, at least two
        assert size <= aim or cnt == 2
        rest_fits = n - i <= max_values and _raw_size(offsets, i, n, width) <= aim
        assert not rest_fits                     # the rest is taken as soon as it fits
        if size <= aim:                          # the largest power of two that fits
            nxt = 2 * cnt
            assert nxt > n - i or nxt > max_values or _raw_size(offsets, i, i + nxt,
                                                                  width) > aim


def test_plan_chunks_four_byte_strings():
    # FORMAT_FACTS §3.8: pylance puts 256 four-byte strings in a 4 KiB chunk
    offsets = np.arange(1001, dtype=np.int64) * 4
    bounds = np.full(1001, UNSET, np.int64)
    nc = kv.plan_chunks(offsets, 4, 4096, 32 * 1024 - 64, 4096, bounds)
    # 512 would need 513 * 4 + 2048 = 4100 bytes; the last 488 need 489 * 4 + 1952 = 3908
    assert nc == 3
    assert bounds[:4].tolist() == [0, 256, 512, 1000]


def test_plan_chunks_too_large():
    bounds = np.zeros(3, np.int64)
    two_big = np.array([0, 20000, 40000], np.int64)  # two values must share a chunk
    assert kv.plan_chunks(two_big, 4, 4096, 32704, 4096, bounds) == kv.TOO_LARGE
    one_huge = np.array([0, 40000], np.int64)
    assert kv.plan_chunks(one_huge, 4, 4096, 32704, 4096, bounds) == kv.TOO_LARGE
    one_big = np.array([0, 20000], np.int64)       # alone it fits max_bytes, not the aim
    assert kv.plan_chunks(one_big, 4, 4096, 32704, 4096, bounds) == 1
    assert bounds[:2].tolist() == [0, 1]


def test_plan_chunks_empty():
    bounds = np.full(1, UNSET, np.int64)
    assert kv.plan_chunks(np.zeros(1, np.int64), 4, 4096, 32704, 4096, bounds) == 0
    assert bounds.tolist() == [0]


# -- chunk_buffer_sizes / fill_chunks -----------------------------------------------------

@given(value_lists(), widths, st.data())
def test_chunk_buffer_sizes_matches_reference(as_input, vals, width, data):
    _, offsets, _ = vals
    bounds = data.draw(bounds_for(len(offsets) - 1))
    got = kv.chunk_buffer_sizes(_i64(offsets, as_input), _i64(bounds, as_input), width)
    assert got.tolist() == ref_chunk_buffer_sizes(offsets, bounds, width)


@given(value_lists(), widths, st.data())
def test_fill_chunks_matches_reference(as_input, guarded, vals, width, data):
    _, offsets, raw = vals
    bounds = data.draw(bounds_for(len(offsets) - 1))
    gaps = [data.draw(st.integers(0, 2)) * width for _ in bounds]
    starts, _, _, end = _chunk_layout(offsets, bounds, width, gaps)
    total = end + data.draw(st.integers(0, 9))
    g = guarded(total, np.uint8, FILL)
    expected = bytearray([FILL] * total)
    ref_fill_chunks(offsets, raw, bounds, width, expected, starts)
    status = kv.fill_chunks(_i64(offsets, as_input), as_input(np.frombuffer(raw, np.uint8)),
                            _i64(bounds, as_input), width, g.out, _i64(starts, as_input))
    assert status == kv.OK
    assert g.out.tobytes() == bytes(expected)
    assert g.intact()


# -- decode_size / decode_fill ------------------------------------------------------------

@given(value_lists(), widths, st.data())
def test_decode_matches_reference(as_input, guarded, vals, width, data):
    values, offsets, raw = vals
    bounds = data.draw(bounds_for(len(values)))
    gaps = [data.draw(st.integers(0, 9)) for _ in bounds]  # any start, not only aligned
    starts, sizes, counts, end = _chunk_layout(offsets, bounds, width, gaps)
    src = bytearray(data.draw(st.binary(min_size=end + 8, max_size=end + 8)))
    for c, s in enumerate(starts):
        buf = ref_chunk_buffer(offsets, raw, bounds[c], bounds[c + 1], width)
        src[s:s + len(buf)] = buf
    decoded = _run_decode(as_input, guarded, bytes(src), starts, sizes, counts, width)
    assert decoded is not None
    want_offsets = [0]
    for v in values:
        want_offsets.append(want_offsets[-1] + len(v))
    assert decoded == (want_offsets, b"".join(values))


@given(value_lists(), widths, st.integers(8, 4096), st.integers(2, 4096))
def test_plan_fill_decode_round_trip(as_input, guarded, vals, width, aim, max_values):
    values, offsets, raw = vals
    n = len(values)
    bounds = np.full(n + 1, UNSET, np.int64)
    nc = kv.plan_chunks(_i64(offsets, as_input), width, aim, 1 << 20, max_values, bounds)
    assert nc >= 0
    bounds = bounds[:nc + 1]
    sizes = kv.chunk_buffer_sizes(np.array(offsets, np.int64), bounds, width)
    starts = np.zeros(nc, np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    out = np.full(int(sizes.sum()), FILL, np.uint8)
    assert kv.fill_chunks(_i64(offsets, as_input), as_input(np.frombuffer(raw, np.uint8)),
                          as_input(bounds), width, out, as_input(starts)) == kv.OK
    assert all(int(s) % width == 0 for s in sizes)
    decoded = _run_decode(as_input, guarded, out.tobytes(), starts.tolist(), sizes.tolist(),
                          np.diff(bounds).tolist(), width)
    want_offsets = [0]
    for v in values:
        want_offsets.append(want_offsets[-1] + len(v))
    assert decoded == (want_offsets, b"".join(values))


@given(value_lists(max_values=40), widths, st.sampled_from([2, 4]))
def test_variable_chunks_through_miniblock_framing(as_input, guarded, vals, width, sw):
    """plan → fill → pack_chunks → parse_chunks → decode_size/decode_fill."""
    values, offsets, raw = vals
    n = len(values)
    bounds = np.empty(n + 1, np.int64)
    nc = kv.plan_chunks(np.array(offsets, np.int64), width, 512, 1 << 20, 4096, bounds)
    bounds = bounds[:nc + 1]
    vsizes = kv.chunk_buffer_sizes(np.array(offsets, np.int64), bounds, width)
    vstarts = np.zeros(nc, np.int64)
    np.cumsum(vsizes[:-1], out=vstarts[1:])
    vbuf = np.empty(int(vsizes.sum()), np.uint8)
    kv.fill_chunks(np.array(offsets, np.int64), _u8(raw), bounds, width,
                   vbuf, vstarts)
    sizes2d = vsizes.reshape(nc, 1).astype(np.int64)
    cbytes = km.chunk_bytes(sizes2d, 0, sw)
    out_starts = np.zeros(nc, np.int64)
    np.cumsum(cbytes[:-1], out=out_starts[1:])
    page = np.empty(int(cbytes.sum()), np.uint8)
    km.pack_chunks(np.zeros(0, np.uint8), vbuf, vstarts.reshape(nc, 1), sizes2d,
                   np.zeros(nc, np.int64), 0, sw, page, out_starts)
    counts = np.diff(bounds)
    log2 = [int(c).bit_length() - 1 for c in counts[:-1]] + [0] * (nc > 0)
    words = np.array([(int(b) // 8 - 1) << 4 | lg for b, lg in zip(cbytes, log2, strict=True)],
                     np.uint16 if sw == 2 else np.uint32)
    data = as_input(np.frombuffer(page.tobytes(), np.uint8))
    items, levels = np.empty(nc, np.int64), np.empty(nc, np.int64)
    starts, sizes = np.empty((nc, 1), np.int64), np.empty((nc, 1), np.int64)
    err = np.zeros(2, np.int64)
    assert km.parse_chunks(as_input(words), data, as_input(out_starts), n, 0, 1, sw, items,
                           levels, starts, sizes, err) == km.OK
    assert items.tolist() == counts.tolist()
    decoded = _run_decode(as_input, guarded, page.tobytes(), starts[:, 0].tolist(),
                          sizes[:, 0].tolist(), items.tolist(), width)
    want_offsets = [0]
    for v in values:
        want_offsets.append(want_offsets[-1] + len(v))
    assert decoded == (want_offsets, b"".join(values))


@st.composite
def corrupted_chunks(draw):
    """Valid chunk buffers, then one to four corruptions of offsets, bytes or layout."""
    _, offsets, raw = draw(value_lists(max_values=30))
    width = draw(widths)
    bounds = draw(bounds_for(len(offsets) - 1))
    starts, sizes, counts, end = _chunk_layout(offsets, bounds, width)
    src = bytearray()
    for c in range(len(counts)):
        src += ref_chunk_buffer(offsets, raw, bounds[c], bounds[c + 1], width)
    kinds = ["offset", "byte", "size", "count", "start", "truncate"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        if not counts:
            if kind == "byte" and src:
                src[draw(st.integers(0, len(src) - 1))] = draw(st.integers(0, 255))
            continue
        c = draw(st.integers(0, len(counts) - 1))
        if kind == "offset":
            k = draw(st.integers(0, counts[c]))
            pos = starts[c] + k * width
            value = draw(st.one_of(st.integers(0, sizes[c] + 2 * width),
                                   st.integers(0, 2 ** (8 * width) - 1)))
            if pos + width <= len(src):
                src[pos:pos + width] = _le(value, width)
        elif kind == "byte" and src:
            src[draw(st.integers(0, len(src) - 1))] = draw(st.integers(0, 255))
        elif kind == "size":
            sizes[c] = max(sizes[c] + draw(st.integers(-2 * width, 2 * width)), 0)
        elif kind == "count":
            counts[c] = max(counts[c] + draw(st.integers(-2, 2)), 0)
        elif kind == "start":
            starts[c] = max(starts[c] + draw(st.integers(-9, 9)), 0)
        elif kind == "truncate":
            del src[draw(st.integers(0, len(src))):]
    return bytes(src), starts, sizes, counts, width


@given(corrupted_chunks())
def test_decode_corrupted_chunks(as_input, guarded, case):
    _run_decode(as_input, guarded, *case)


# -- known answers (the kernels/variable.py docstring, FORMAT_FACTS §3.8) -------------------

AB_EMPTY_C_U32 = bytes.fromhex("10000000" "12000000" "12000000" "13000000" "616263" "48")
AB_EMPTY_C_U64 = struct.pack("<4Q", 32, 34, 34, 35) + b"abc" + b"\x48" * 5


@pytest.mark.parametrize("width, expected", [(4, AB_EMPTY_C_U32), (8, AB_EMPTY_C_U64)])
def test_fill_chunks_docstring_example(width, expected):
    offsets = np.array([0, 2, 2, 3], np.int64)
    bounds = np.array([0, 3], np.int64)
    assert expected[:4 * width] == struct.pack("<4I" if width == 4 else "<4Q",
                                               *[4 * width + o for o in (0, 2, 2, 3)])
    assert kv.chunk_buffer_sizes(offsets, bounds, width).tolist() == [len(expected)]
    out = np.full(len(expected), FILL, np.uint8)
    assert kv.fill_chunks(offsets, _u8(b"abc"), bounds, width, out,
                          np.zeros(1, np.int64)) == kv.OK
    assert out.tobytes() == expected


@pytest.mark.parametrize("width, chunk", [(4, AB_EMPTY_C_U32), (8, AB_EMPTY_C_U64)])
def test_decode_docstring_example(width, chunk):
    src = _u8(chunk)
    args = (np.array([0], np.int64), np.array([len(chunk)], np.int64), np.array([3], np.int64))
    err = np.zeros(2, np.int64)
    assert kv.decode_size(src, *args, width, err) == 3
    offsets, data = np.empty(4, np.int64), np.empty(3, np.uint8)
    assert kv.decode_fill(src, args[0], args[2], width, offsets, data) == kv.OK
    assert offsets.tolist() == [0, 2, 2, 3]
    assert data.tobytes() == b"abc"


def _decode_size(chunk: bytes, count: int, size=None, start=0, width=4):
    err = np.full(2, UNSET, np.int64)
    size = len(chunk) - start if size is None else size
    got = kv.decode_size(_u8(chunk), np.array([start], np.int64),
                         np.array([size], np.int64), np.array([count], np.int64), width, err)
    return got, err.tolist()


def test_decode_size_statuses():
    ok = AB_EMPTY_C_U32
    assert _decode_size(ok, 3) == (3, [UNSET, UNSET])
    # the 4 offsets (16 bytes) do not fit in a 15-byte buffer; 6 do not fit in 20 bytes
    assert _decode_size(ok, 3, size=15) == (kv.OFFSETS_PAST_BUFFER, [0, 0])
    assert _decode_size(ok, 5) == (kv.OFFSETS_PAST_BUFFER, [0, 0])
    assert _decode_size(ok, 3, size=21) == (kv.OFFSETS_PAST_BUFFER, [0, 0])  # past src
    # first offset below the offset table
    bad = struct.pack("<4I", 12, 18, 18, 19) + b"abc\x48"
    assert _decode_size(bad, 3) == (kv.BAD_OFFSET, [0, 0])
    # decreasing offsets
    bad = struct.pack("<4I", 16, 18, 17, 19) + b"abc\x48"
    assert _decode_size(bad, 3) == (kv.BAD_OFFSET, [0, 8])
    # an offset past the buffer
    bad = struct.pack("<4I", 16, 18, 18, 21) + b"abc\x48"
    assert _decode_size(bad, 3) == (kv.BAD_OFFSET, [0, 12])
    # the last offset may point at the very end (padding counted as value bytes is legal)
    assert _decode_size(struct.pack("<4I", 16, 18, 18, 20) + b"abc\x48", 3)[0] == 4


# -- decode_size range checks ------------------------------------------------------------
# Regression: decode_size used to accept negative starts (reading through negative-index
# wraparound, after which decode_fill raised ValueError) and computed (cnt + 1) * width in
# int64, so cnt = 2**62 - 1 wrapped to 0 and the offset loop read past src.

def test_decode_size_rejects_negative_start():
    src = bytes(4) + struct.pack("<2I", 8, 12) + b"\x01\x02\x03\x04"
    assert _decode_size(src, 1, size=12, start=-12) == (kv.OFFSETS_PAST_BUFFER, [0, -12])


def test_decode_size_rejects_overflowing_count():
    # src is the first 8 bytes of a larger block whose next bytes are an invalid offset,
    # so a read past src would show up as BAD_OFFSET at byte 8 instead of wandering off
    block = _u8(struct.pack("<3I", 4, 8, 0xFFFFFFFF))
    src = block[:8]
    err = np.full(2, UNSET, np.int64)
    got = kv.decode_size(src, np.array([0], np.int64), np.array([8], np.int64),
                         np.array([2**62 - 1], np.int64), 4, err)
    assert (got, err.tolist()) == (kv.OFFSETS_PAST_BUFFER, [0, 0])


_EXTREMES = [-(2**63), -20, -1, 2**61, 2**62 - 1, 2**62, 2**63 - 1]

_EXTREME_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lancenb.kernels import variable as kv
    results = []
    for src, start, size, count, width in json.load(sys.stdin):
        err = np.zeros(2, np.int64)
        try:
            got = int(kv.decode_size(np.frombuffer(bytearray(bytes(src)), np.uint8),
                                     np.array([start], np.int64), np.array([size], np.int64),
                                     np.array([count], np.int64), width, err))
        except Exception as exc:  # a kernel must not raise: report it to the parent
            got = type(exc).__name__
        results.append([got, err.tolist()])
    json.dump(results, sys.stdout)
""")


def test_decode_size_extreme_starts_sizes_counts():
    """Starts, sizes and counts near the int64 limits (in a child process, so that an
    out-of-bounds read fails this test instead of killing the run)."""
    cases = []
    for width, chunk in ((4, AB_EMPTY_C_U32), (8, AB_EMPTY_C_U64)):
        src = list(chunk + bytes(4))
        for start in [0, 4] + _EXTREMES:
            for size in [len(chunk), 0, len(src), len(src) + 1] + _EXTREMES:
                for count in [3, 0, 4] + _EXTREMES:
                    cases.append((src, start, size, count, width))
    # -W error: under NUMBA_DISABLE_JIT an int64 overflow warning counts as a failure
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _EXTREME_CHILD],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-600:]}"
    results = json.loads(proc.stdout)
    for (src, start, size, count, width), (got, err) in zip(cases, results, strict=True):
        want, where = ref_decode_size(bytes(src), [start], [size], [count], width)
        assert got == want, (start, size, count, width)
        if want < 0:
            assert tuple(err) == where, (start, size, count, width)


# -- value_bounds (string page statistics) ----------------------------------------------------

def ref_value_bounds(values, valid):
    """Indices of the least and greatest valid value (Python bytes order: unsigned, a
    prefix first), the first of equals; -1 when none is valid."""
    lo = hi = -1
    for i, v in enumerate(values):
        if valid is not None and not valid[i]:
            continue
        if lo < 0 or v < values[lo]:
            lo = i
        if hi < 0 or v > values[hi]:
            hi = i
    return [lo, hi]


# few distinct bytes, lengths past sixteen: ties, shared prefixes, prefixes of others
_bytes_values = st.lists(st.sampled_from([0, 1, 0x80, 255]), max_size=27).map(bytes)


@given(st.lists(_bytes_values, max_size=40),
       st.lists(st.booleans(), min_size=40, max_size=40), st.booleans(), st.booleans())
def test_value_bounds_matches_reference(as_input, values, mask, nullable, wide):
    offsets = np.array([0] + np.cumsum([len(v) for v in values]).tolist(),
                       np.int64 if wide else np.int32)
    data = np.frombuffer(b"".join(values) + b"\xff" * 3, np.uint8)  # bytes past the end
    valid = np.array(mask[:len(values)], np.uint8) if nullable else np.zeros(0, np.uint8)
    out = np.full(2, UNSET, np.int64)
    assert kv.value_bounds(as_input(offsets), as_input(data), as_input(valid), out) == kv.OK
    assert out.tolist() == ref_value_bounds(values, mask if nullable else None)


def test_value_bounds_statuses_and_prefixes():
    vals = [b"ab", b"a", b"abc\x00", b"", b"abc", b"b\xff", b"b\xff"]
    offsets = np.array([0] + np.cumsum([len(v) for v in vals]).tolist(), np.int64)
    data = np.frombuffer(b"".join(vals), np.uint8)
    out = np.full(2, UNSET, np.int64)
    assert kv.value_bounds(offsets, data, np.zeros(0, np.uint8), out) == kv.OK
    assert out.tolist() == [3, 5]  # "" first; the first of the two greatest
    assert kv.value_bounds(offsets, data, np.array([0, 0, 1, 0, 1, 0, 0], np.uint8),
                           out) == kv.OK
    assert out.tolist() == [4, 2]  # "abc" < "abc\0"
    assert kv.value_bounds(offsets, data, np.zeros(7, np.uint8), out) == kv.OK
    assert out.tolist() == [-1, -1]
    assert kv.value_bounds(offsets, data, np.zeros(3, np.uint8), out) == kv.BAD_SIZE
    assert kv.value_bounds(offsets, data, np.zeros(0, np.uint8), out[:1]) == kv.BAD_SIZE
    assert kv.value_bounds(offsets[::-1].copy(), data, np.zeros(0, np.uint8),
                           out) == kv.BAD_OFFSET
    assert kv.value_bounds(offsets + 1, data, np.zeros(0, np.uint8), out) == kv.BAD_OFFSET
