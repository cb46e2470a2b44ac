"""Mini-block chunk framing: ``header_bytes``, ``chunk_bytes``, ``pack_chunks`` and
``parse_chunks`` against pure-Python references written from the layout in
``kernels/miniblock.py`` and FORMAT_FACTS §2.2.

Layout of one chunk (8-aligned): ``u16 num_levels``, a u16 size per level buffer, a
``size_width``-byte size per value buffer, 0xFE padding to 8, then each buffer padded
with 0xFE to 8 (relative to the chunk start). Metadata word per chunk:
``((chunk_bytes // 8 - 1) << 4) | log2(count)``, ``log2 = 0`` on the last chunk = "the rest".
"""

import struct
from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels import bitpack as kb
from lancenb.kernels import miniblock as km

from lancenb.encodings.physical.bitpacking import outofline_chunk_words

PAD = 0xFE
FILL = 0x5C  # initial output bytes, so untouched bytes are visible
UNSET = -7   # initial value of int64 outputs


def _u8(raw: bytes) -> np.ndarray:
    """Writable bytes, like the other arguments of the call: mixing read-only and
    writable arrays in one call would compile one more numba specialisation."""
    return np.frombuffer(bytearray(raw), np.uint8)


# -- references -------------------------------------------------------------------------

def _pad8(buf: bytearray, base: int = 0) -> None:
    while (len(buf) - base) % 8:
        buf.append(PAD)


def _le(value: int, width: int) -> bytes:
    return bytes((value >> (8 * k)) & 0xFF for k in range(width))


def _from_le(raw: bytes) -> int:
    return sum(b << (8 * k) for k, b in enumerate(raw))


def ref_header_bytes(n_level_bufs: int, n_value_bufs: int, size_width: int) -> int:
    raw = 2 + 2 * n_level_bufs + size_width * n_value_bufs
    while raw % 8:
        raw += 1
    return raw


def ref_chunk_bytes(sizes, n_level_bufs: int, size_width: int) -> list:
    out = []
    for row in sizes:
        total = ref_header_bytes(n_level_bufs, len(row) - n_level_bufs, size_width)
        for n in row:
            total += n
            while total % 8:
                total += 1
        out.append(total)
    return out


def ref_chunk(level_src, value_src, starts_row, sizes_row, num_levels, n_level_bufs,
              size_width) -> bytes:
    chunk = bytearray(_le(num_levels, 2))
    for b, n in enumerate(sizes_row):
        chunk += _le(n, 2 if b < n_level_bufs else size_width)
    _pad8(chunk)
    for b, (s, n) in enumerate(zip(starts_row, sizes_row, strict=True)):
        src = level_src if b < n_level_bufs else value_src
        chunk += src[s:s + n]
        _pad8(chunk)
    return bytes(chunk)


def ref_pack_chunks(level_src, value_src, starts, sizes, num_levels, n_level_bufs,
                    size_width, out: bytearray, out_starts) -> None:
    for c, base in enumerate(out_starts):
        chunk = ref_chunk(level_src, value_src, starts[c], sizes[c], num_levels[c],
                          n_level_bufs, size_width)
        out[base:base + len(chunk)] = chunk


@dataclass
class Parsed:
    status: int
    err: tuple = ()
    items: list = None
    levels: list = None
    starts: list = None
    sizes: list = None


def ref_parse_chunks(words, data: bytes, chunk_pos, num_items, n_level_bufs, n_value_bufs,
                     size_width) -> Parsed:
    """Chunk ``c`` starts at ``data[chunk_pos[c]]``; ``err`` = (chunk, byte position)."""
    nc = len(words)
    hdr = ref_header_bytes(n_level_bufs, n_value_bufs, size_width)
    res = Parsed(km.OK, (), [], [], [], [])
    seen = 0
    pos = None
    for c, (w, pos) in enumerate(zip(words, chunk_pos, strict=True)):
        nbytes = ((w >> 4) + 1) * 8
        log2 = w & 0xF
        if log2 == 0:
            cnt = num_items - seen
            if c != nc - 1 or cnt <= 0:     # "the rest" only on the last chunk
                return Parsed(km.BAD_ITEM_COUNT, (c, pos))
        else:
            cnt = 2**log2
        if pos < 0 or pos + nbytes > len(data):
            return Parsed(km.CHUNKS_PAST_END, (c, pos))
        if hdr > nbytes:
            return Parsed(km.HEADER_PAST_CHUNK, (c, pos))
        end = pos + nbytes
        field = pos + 2
        buf = pos + hdr
        row_starts, row_sizes = [], []
        for b in range(n_level_bufs + n_value_bufs):
            width = 2 if b < n_level_bufs else size_width
            size = _from_le(data[field:field + width])
            if buf + size > end:
                return Parsed(km.BUFFER_PAST_CHUNK, (c, field))
            row_starts.append(buf)
            row_sizes.append(size)
            buf += size
            while (buf - pos) % 8:
                buf += 1
            field += width
        res.items.append(cnt)
        res.levels.append(_from_le(data[pos:pos + 2]))
        res.starts.append(row_starts)
        res.sizes.append(row_sizes)
        seen += cnt
    if seen != num_items:
        # the position is the last chunk's (none when there are no chunks)
        return Parsed(km.BAD_ITEM_COUNT, (nc - 1, pos))
    return res


# -- strategies -------------------------------------------------------------------------

@dataclass
class Page:
    size_width: int
    n_level: int
    n_value: int
    level_src: bytes
    value_src: bytes
    starts: list      # [chunk][buffer] into level_src / value_src
    sizes: list
    num_levels: list
    counts: list
    log2: list
    gaps: list        # bytes before each chunk in the chunk buffer (random access)

    @property
    def nb(self):
        return self.n_level + self.n_value

    @property
    def word_dtype(self):
        return np.uint16 if self.size_width == 2 else np.uint32

    def chunk_sizes(self):
        return ref_chunk_bytes(self.sizes, self.n_level, self.size_width)

    def words(self):
        pairs = zip(self.chunk_sizes(), self.log2, strict=True)
        return [((n // 8 - 1) << 4) | lg for n, lg in pairs]

    def positions(self):
        pos, out = 0, []
        for gap, n in zip(self.gaps, self.chunk_sizes(), strict=True):
            pos += gap
            out.append(pos)
            pos += n
        return out

    def data(self) -> bytes:
        """The chunks at :meth:`positions`, ``FILL`` bytes in the gaps."""
        sizes = self.chunk_sizes()
        out = bytearray([FILL] * (sum(self.gaps) + sum(sizes)))
        ref_pack_chunks(self.level_src, self.value_src, self.starts, self.sizes,
                        self.num_levels, self.n_level, self.size_width, out, self.positions())
        return bytes(out)

    def arrays(self, as_input):
        shape = (len(self.counts), self.nb)
        return (as_input(np.frombuffer(self.level_src, np.uint8)),
                as_input(np.frombuffer(self.value_src, np.uint8)),
                as_input(np.array(self.starts, np.int64).reshape(shape)),
                as_input(np.array(self.sizes, np.int64).reshape(shape)),
                as_input(np.array(self.num_levels, np.int64).reshape(-1)))


@st.composite
def pages(draw, max_chunks=5):
    size_width = draw(st.sampled_from([2, 4]))
    n_level = draw(st.integers(0, 2))
    n_value = draw(st.integers(1, 3))
    level_src = draw(st.binary(max_size=48))
    value_src = draw(st.binary(max_size=160))
    nc = draw(st.integers(0, max_chunks))
    starts, sizes = [], []
    for _ in range(nc):
        srow, nrow = [], []
        for b in range(n_level + n_value):
            src = level_src if b < n_level else value_src
            s = draw(st.integers(0, len(src)))
            srow.append(s)
            nrow.append(draw(st.integers(0, len(src) - s)))
        starts.append(srow)
        sizes.append(nrow)
    num_levels = [draw(st.integers(0, 0xFFFF)) for _ in range(nc)]
    log2 = [draw(st.integers(1, 12)) for _ in range(nc)]
    counts = [2**lg for lg in log2]
    if nc and draw(st.booleans()):
        log2[-1] = 0
        counts[-1] = draw(st.integers(1, 5000))
    # mostly adjacent chunks; sometimes gaps, as when chunks are read for random access
    gaps = [draw(st.sampled_from([0, 0, 0, 1, 5, 8, 16])) for _ in range(nc)]
    return Page(size_width, n_level, n_value, level_src, value_src, starts, sizes,
                num_levels, counts, log2, gaps)


def _run_parse(as_input, guarded, words, data: bytes, chunk_pos, num_items, nl, nv, sw,
               word_dtype):
    """parse_chunks on exactly-sized guarded outputs, checked against the reference."""
    nc, nb = len(words), nl + nv
    gs = [guarded(nc, np.int64, UNSET) for _ in range(2)]
    gs += [guarded((nc, nb), np.int64, UNSET) for _ in range(2)]
    gs.append(guarded(2, np.int64, UNSET))
    status = km.parse_chunks(as_input(np.array(words, dtype=word_dtype).reshape(-1)),
                             as_input(np.frombuffer(data, np.uint8)),
                             as_input(np.array(chunk_pos, np.int64).reshape(-1)), num_items,
                             nl, nv, sw, *(g.out for g in gs))
    assert all(g.intact() for g in gs)
    ref = ref_parse_chunks(words, data, chunk_pos, num_items, nl, nv, sw)
    assert status == ref.status
    items, levels, starts, sizes, err = (g.out for g in gs)
    if status == km.OK:
        assert items.tolist() == ref.items
        assert levels.tolist() == ref.levels
        assert starts.tolist() == ref.starts
        assert sizes.tolist() == ref.sizes
    elif nc:
        # the per-chunk outputs are unspecified after an error; err locates it
        assert tuple(err.tolist()) == ref.err
    else:
        assert err[0] == -1
    return status, (items, levels, starts, sizes)


# -- header_bytes / chunk_bytes -----------------------------------------------------------

@given(st.integers(0, 3), st.integers(0, 9), st.sampled_from([2, 4]))
def test_header_bytes_matches_reference(nl, nv, sw):
    assert km.header_bytes(nl, nv, sw) == ref_header_bytes(nl, nv, sw)


@given(st.integers(0, 2), st.integers(1, 4), st.sampled_from([2, 4]), st.data())
def test_chunk_bytes_matches_reference(as_input, nl, nv, sw, data):
    nc = data.draw(st.integers(0, 6))
    sizes = [[data.draw(st.integers(0, 70000)) for _ in range(nl + nv)] for _ in range(nc)]
    arr = as_input(np.array(sizes, np.int64).reshape(nc, nl + nv))
    got = km.chunk_bytes(arr, nl, sw)
    assert got.tolist() == ref_chunk_bytes(sizes, nl, sw)
    assert all(n % 8 == 0 for n in got.tolist())


# -- pack_chunks ----------------------------------------------------------------------------

@given(pages(), st.data())
def test_pack_chunks_matches_reference(as_input, guarded, page, data):
    sizes = page.chunk_sizes()
    out_starts, pos = [], 0
    for n in sizes:
        pos += data.draw(st.integers(0, 2)) * 8   # gaps between chunks stay untouched
        out_starts.append(pos)
        pos += n
    total = pos + data.draw(st.integers(0, 9))
    g = guarded(total, np.uint8, fill=FILL)
    expected = bytearray([FILL] * total)
    ref_pack_chunks(page.level_src, page.value_src, page.starts, page.sizes,
                    page.num_levels, page.n_level, page.size_width, expected, out_starts)
    status = km.pack_chunks(*page.arrays(as_input), page.n_level, page.size_width, g.out,
                            as_input(np.array(out_starts, np.int64).reshape(-1)))
    assert status == km.OK
    assert g.out.tobytes() == bytes(expected)
    assert g.intact()


# -- parse_chunks ---------------------------------------------------------------------------

@given(pages())
def test_parse_chunks_matches_reference(as_input, guarded, page):
    _run_parse(as_input, guarded, page.words(), page.data(), page.positions(),
               sum(page.counts), page.n_level, page.n_value, page.size_width, page.word_dtype)


@given(pages(), st.data())
def test_pack_then_parse_round_trips(as_input, guarded, page, data):
    nc = len(page.counts)
    sizes = page.chunk_sizes()
    np.testing.assert_array_equal(
        km.chunk_bytes(np.array(page.sizes, np.int64).reshape(nc, page.nb), page.n_level,
                       page.size_width), sizes)
    out_starts, pos = [], 0
    for n in sizes:
        pos += data.draw(st.integers(0, 1)) * 8
        out_starts.append(pos)
        pos += n
    buf = np.zeros(pos, np.uint8)
    assert km.pack_chunks(*page.arrays(as_input), page.n_level, page.size_width, buf,
                          as_input(np.array(out_starts, np.int64).reshape(-1))) == km.OK
    # parse every chunk, or (random access) any subset of them in order
    keep = sorted(set(data.draw(st.lists(st.integers(0, nc - 1), max_size=nc)))) \
        if nc and data.draw(st.booleans()) else list(range(nc))
    words = [page.words()[c] for c in keep]
    status, (items, levels, starts, bsizes) = _run_parse(
        as_input, guarded, words, buf.tobytes(), [out_starts[c] for c in keep],
        sum(page.counts[c] for c in keep), page.n_level, page.n_value, page.size_width,
        page.word_dtype)
    assert status == km.OK
    assert items.tolist() == [page.counts[c] for c in keep]
    assert levels.tolist() == [page.num_levels[c] for c in keep]
    assert bsizes.tolist() == [page.sizes[c] for c in keep]
    for row, c in enumerate(keep):
        for b in range(page.nb):
            src = page.level_src if b < page.n_level else page.value_src
            s, n = page.starts[c][b], page.sizes[c][b]
            assert buf[starts[row, b]:starts[row, b] + n].tobytes() == src[s:s + n]


_huge = st.sampled_from([-1, -8, -(2**63), 2**31, 2**62, 2**63 - 1, 2**63 - 8])


@st.composite
def corrupted_pages(draw):
    """A valid page, then one to four corruptions of its words, positions, bytes or
    description."""
    page = draw(pages())
    words, data, positions = page.words(), bytearray(page.data()), page.positions()
    num_items = sum(page.counts)
    nl, nv, sw = page.n_level, page.n_value, page.size_width
    max_word = 0xFFFF if sw == 2 else 0xFFFFFFFF
    kinds = ["word", "word_size", "word_log2", "byte", "size_field", "truncate", "extend",
             "num_items", "drop_chunk", "add_chunk", "position", "layout"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("word", "word_size", "word_log2", "drop_chunk", "position") and words:
            i = draw(st.integers(0, len(words) - 1))
            if kind == "word":
                words[i] = draw(st.one_of(st.integers(0, 0x7F), st.integers(0, max_word)))
            elif kind == "word_size":
                words[i] = min(max(words[i] + (draw(st.integers(-3, 3)) << 4), 0), max_word)
            elif kind == "word_log2":
                words[i] = (words[i] & ~0xF) | draw(st.integers(0, 15))
            elif kind == "position":
                positions[i] = draw(st.one_of(st.integers(-9, len(data) + 9), _huge))
            else:
                del words[i], positions[i]
        elif kind == "add_chunk":
            i = draw(st.integers(0, len(words)))
            words.insert(i, draw(st.integers(0, 0x7F)))
            positions.insert(i, draw(st.integers(0, len(data))))
        elif kind == "byte" and data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif kind == "size_field" and page.counts:
            # overwrite one buffer-size field of one chunk with a small random size
            c = draw(st.integers(0, len(page.counts) - 1))
            b = draw(st.integers(0, page.nb - 1))
            field = page.positions()[c] + 2 + 2 * min(b, nl) + sw * max(b - nl, 0)
            width = 2 if b < nl else sw
            data[field:field + width] = _le(draw(st.integers(0, 300)), width)
        elif kind == "truncate":
            del data[draw(st.integers(0, len(data))):]
        elif kind == "extend":
            data += draw(st.binary(min_size=1, max_size=16))
        elif kind == "num_items":
            num_items = max(num_items + draw(st.integers(-3, 3)), 0)
        elif kind == "layout":
            nl, nv, sw = (draw(st.integers(0, 2)), draw(st.integers(1, 4)),
                          draw(st.sampled_from([2, 4])))
    return words, bytes(data), positions, num_items, nl, nv, sw, page.word_dtype


@given(corrupted_pages())
def test_parse_chunks_corrupted_pages(as_input, guarded, case):
    _run_parse(as_input, guarded, *case)


@st.composite
def random_pages(draw):
    word_dtype = draw(st.sampled_from([np.uint16, np.uint32]))
    max_word = int(np.iinfo(word_dtype).max)
    words = draw(st.lists(st.one_of(st.integers(0, 0x5F), st.integers(0, max_word)),
                          max_size=6))
    data = draw(st.binary(max_size=160))
    positions = [draw(st.one_of(st.integers(0, 160), _huge)) for _ in words]
    return (words, data, positions, draw(st.integers(0, 10000)), draw(st.integers(0, 2)),
            draw(st.integers(1, 4)), draw(st.sampled_from([2, 4])), word_dtype)


@given(random_pages())
def test_parse_chunks_random_bytes(as_input, guarded, case):
    _run_parse(as_input, guarded, *case)


# -- known answers (FORMAT_FACTS §1.2, §2.2) -----------------------------------------------

INT32_123_CHUNK = bytes.fromhex("00000c00fefefefe" "010000000200000003000000" "fefefefe")


def test_pack_chunks_format_facts_example():
    values = _u8(struct.pack("<3i", 1, 2, 3))
    sizes = np.array([[12]], np.int64)
    assert km.chunk_bytes(sizes, 0, 2).tolist() == [24]
    out = np.full(24, FILL, np.uint8)
    status = km.pack_chunks(np.zeros(0, np.uint8), values, np.array([[0]], np.int64), sizes,
                            np.array([0], np.int64), 0, 2, out, np.array([0], np.int64))
    assert status == km.OK
    assert out.tobytes() == INT32_123_CHUNK
    assert (24 // 8 - 1) << 4 | 0 == 0x0020


def test_pack_chunks_large_chunk_sizes_and_levels():
    # 2.2 header: u16 num_levels, u16 def size, u32 value size; def levels [0, 1, 0]
    defs = struct.pack("<3H", 0, 1, 0)
    values = struct.pack("<2i", 7, -1)
    out = np.full(32, FILL, np.uint8)
    status = km.pack_chunks(_u8(defs), _u8(values),
                            np.array([[0, 0]], np.int64), np.array([[6, 8]], np.int64),
                            np.array([3], np.int64), 1, 4, out, np.array([0], np.int64))
    assert status == km.OK
    # the 8-byte header needs no padding; the 6 level bytes get 2
    expected = struct.pack("<HHI", 3, 6, 8) + defs + b"\xfe" * 2 + values
    assert len(expected) == 24
    assert out[:24].tobytes() == expected
    assert out[24:].tolist() == [FILL] * 8
    assert km.chunk_bytes(np.array([[6, 8]]), 1, 4).tolist() == [24]


def _parse(words, data, num_items, nl=0, nv=1, sw=2, positions=None):
    """parse_chunks on adjacent chunks (unless ``positions`` is given)."""
    if positions is None:
        positions = [0]
        for w in words[:-1]:
            positions.append(positions[-1] + ((w >> 4) + 1) * 8)
    nc, nb = len(words), nl + nv
    outs = [np.full(nc, UNSET, np.int64) for _ in range(2)]
    outs += [np.full((nc, nb), UNSET, np.int64) for _ in range(2)]
    err = np.full(2, UNSET, np.int64)
    wd = np.uint16 if sw == 2 else np.uint32
    status = km.parse_chunks(np.array(words, wd), _u8(data),
                             np.array(positions[:nc], np.int64), num_items, nl, nv, sw,
                             *outs, err)
    return status, err.tolist(), [o.tolist() for o in outs]


def test_parse_chunks_format_facts_example():
    data = INT32_123_CHUNK + b"\x48" * 40     # the file pads the buffer; trailing bytes ok
    status, _, (items, levels, starts, sizes) = _parse([0x0020], data, 3)
    assert status == km.OK
    assert (items, levels, starts, sizes) == ([3], [0], [[8]], [[12]])
    assert data[8:20] == struct.pack("<3i", 1, 2, 3)


def test_parse_chunks_two_chunks():
    # 4 values (log2 2) then the rest (1 value, log2 0); the second chunk is 2.2-style
    c0 = struct.pack("<HH4x", 0, 16) + bytes(range(16))
    c1 = struct.pack("<HH4x", 0, 4) + b"\x01\x02\x03\x04" + b"\xfe" * 4
    words = [(len(c0) // 8 - 1) << 4 | 2, (len(c1) // 8 - 1) << 4]
    status, _, (items, levels, starts, sizes) = _parse(words, c0 + c1, 5)
    assert status == km.OK
    assert (items, starts, sizes) == ([4, 1], [[8], [32]], [[16], [4]])
    # random access: only the second chunk, read into a buffer at byte 3
    status, _, (items, levels, starts, sizes) = _parse(words[1:], b"xyz" + c1, 1,
                                                       positions=[3])
    assert status == km.OK
    assert (items, starts, sizes) == ([1], [[11]], [[4]])


def test_parse_chunks_status_chunks_past_end():
    assert _parse([0x0030], INT32_123_CHUNK, 3)[:2] == (km.CHUNKS_PAST_END, [0, 0])
    assert _parse([0x0020], INT32_123_CHUNK, 3, positions=[8])[:2] == (km.CHUNKS_PAST_END,
                                                                      [0, 8])
    assert _parse([0x0020], INT32_123_CHUNK, 3, positions=[-8])[:2] == (km.CHUNKS_PAST_END,
                                                                       [0, -8])
    huge = _parse([0x0020], INT32_123_CHUNK, 3, positions=[2**63 - 8])
    assert huge[:2] == (km.CHUNKS_PAST_END, [0, 2**63 - 8])


def test_parse_chunks_status_bad_item_count():
    two = INT32_123_CHUNK * 2
    # "the rest" (log2 0) on a chunk that is not the last
    assert _parse([0x0020, 0x0020], two, 6)[:2] == (km.BAD_ITEM_COUNT, [0, 0])
    # counts add up to 2, the page has 3 (err: the last chunk and its position)
    assert _parse([0x0021], INT32_123_CHUNK, 3)[:2] == (km.BAD_ITEM_COUNT, [0, 0])
    # the first chunk already holds all 4 items: nothing left for "the rest"
    assert _parse([0x0022, 0x0020], two, 4)[:2] == (km.BAD_ITEM_COUNT, [1, 24])


def test_parse_chunks_status_header_past_chunk():
    # 4 u32 value sizes: 2 + 16 = 18 bytes of header in an 8-byte chunk
    assert _parse([0x0000], bytes(8), 1, nv=4, sw=4)[:2] == (km.HEADER_PAST_CHUNK, [0, 0])


def test_parse_chunks_status_buffer_past_chunk():
    bad = bytearray(INT32_123_CHUNK)
    bad[2:4] = struct.pack("<H", 17)            # 8 + 17 > 24
    assert _parse([0x0020], bytes(bad), 3)[:2] == (km.BUFFER_PAST_CHUNK, [0, 2])
    bad[2:4] = struct.pack("<H", 16)            # 8 + 16 = 24 still fits
    assert _parse([0x0020], bytes(bad), 3)[0] == km.OK


# -- outofline_pack_chunks: a page's levels packed chunk by chunk in one call --------------

@st.composite
def _level_chunks(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    counts = rng.integers(0, 2200, int(rng.integers(0, 4)))
    counts[rng.random(len(counts)) < .3] = 1024  # whole blocks
    width = int(rng.integers(0, 17))
    levels = rng.integers(0, 1 << width, int(counts.sum())).astype(np.uint16)
    bounds = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    return levels, bounds, width


@settings(max_examples=25, deadline=None)
@given(case=_level_chunks())
def test_outofline_pack_chunks_matches_per_chunk_calls(case, as_input, guarded):
    levels, bounds, width = case
    counts = np.diff(bounds)
    words = outofline_chunk_words(counts, width, 16)
    assert words.tolist() == [kb.outofline_words(int(c), width, 16) for c in counts]
    starts = np.zeros(len(counts), np.int64)
    np.cumsum(words[:-1], out=starts[1:])
    want = []
    for c in range(len(counts)):  # the reference: one outofline_pack per chunk
        out = np.zeros(int(words[c]), np.uint16)
        assert kb.outofline_pack(levels[bounds[c]:bounds[c + 1]], width, out) == words[c]
        want.append(out)
    g = guarded(int(words.sum()), np.uint16)
    assert km.outofline_pack_chunks(as_input(levels), as_input(bounds), width,
                                    as_input(starts), g.out) == km.OK
    assert g.intact()
    assert g.out.tolist() == (np.concatenate(want).tolist() if want else [])
    if words.sum():
        small = guarded(int(words.sum()) - 1, np.uint16)
        assert km.outofline_pack_chunks(as_input(levels), as_input(bounds), width,
                                        as_input(starts), small.out) == kb.BAD_OUTPUT
        assert small.intact()


# -- repetition_index: the page's repetition index in one pass ----------------------------

def ref_repetition_index(rep, max_rep, lb):
    """The numpy computation the writer used before the kernel (prefix counts of row
    starts and a running last-start index), as the reference."""
    nc = len(lb) - 1
    starts = rep == max_rep
    cs = np.zeros(len(rep) + 1, np.int64)
    np.cumsum(starts, out=cs[1:])
    rows = cs[lb[1:]] - cs[np.minimum(lb[:-1] + 1, lb[1:])]
    idx = np.where(starts, np.arange(len(rep)), -1)
    last = np.maximum.accumulate(idx) if len(idx) else idx
    ends = lb[1:]
    ls = last[ends - 1]
    left = np.where(ls >= lb[:-1], ends - ls, ends - lb[:-1])
    out = np.stack([rows, left], axis=1)
    out[-1, 0] += 1
    out[-1, 1] = 0
    first = starts[lb[1:-1]] if nc > 1 else np.zeros(0, bool)
    fix = np.flatnonzero(first & (out[:-1, 1] != 0))
    out[fix, 0] += 1
    out[fix, 1] = 0
    return out.astype(np.uint64).reshape(-1)


@st.composite
def _rep_chunks(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    max_rep = int(rng.integers(1, 4))
    n = int(rng.integers(1, 300))
    p_start = rng.choice([0.02, 0.3, 0.9])
    rep = np.where(rng.random(n) < p_start, max_rep, rng.integers(0, max_rep, n))
    rep[0] = max_rep  # a page starts a row
    cuts = np.unique(rng.integers(1, n, int(rng.integers(0, 8)))) if n > 1 else []
    lb = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    return rep.astype(np.uint16), max_rep, lb


@settings(max_examples=60, deadline=None)
@given(case=_rep_chunks())
def test_repetition_index_matches_reference(case, as_input, guarded):
    rep, max_rep, lb = case
    want = ref_repetition_index(rep, max_rep, lb)
    g = guarded(len(want), np.uint64)
    assert km.repetition_index(as_input(rep), max_rep, as_input(lb), g.out) == km.OK
    assert g.intact() and g.out.tolist() == want.tolist()


def test_repetition_index_rejects_bad_bounds():
    rep = np.array([1, 0, 1, 0], np.uint16)
    for lb in ([0, 2, 2, 4], [0, 5], [1, 0, 4], [-1, 4]):
        out = np.zeros(2 * (len(lb) - 1), np.uint64)
        assert km.repetition_index(rep, 1, np.array(lb, np.int64), out) == km.BAD_BOUNDS
    assert km.repetition_index(rep, 1, np.array([0, 4], np.int64),
                               np.zeros(1, np.uint64)) == km.BAD_BOUNDS
