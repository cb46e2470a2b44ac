"""FastLanes bitpacking kernels (``kernels/bitpack.py``) against pure-Python references
written from FORMAT_FACTS §3.1 (the 1024-value block and InlineBitpacking) and §3.2
(OutOfLineBitpacking and its tail rule), and against files written by pylance.

Block: with ``LANES = 1024 // T``, value ``FL_ORDER[row // 8] * 16 + (row % 8) * 128 +
lane`` is bits ``row * W ..`` of lane ``lane``'s bit stream, the words ``k * LANES +
lane`` for k = 0..W (word k at stream bit ``k * T``).
"""

import numba
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels import bitpack as kb
from lancenb.kernels import miniblock as km

from lancenb.file import LanceFileReader

NO_JIT = numba.config.DISABLE_JIT
DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
T_PARAMS = pytest.mark.parametrize("t", [8, 16, 32, 64], ids=["u8", "u16", "u32", "u64"])
FILL = 0x5C   # initial output bytes, so untouched outputs are visible
UNSET = -7    # initial value of int64 outputs


def budget(jit: int, nojit: int):
    """Examples per property: pure-Python kernels are ~1000x slower without the JIT."""
    return settings(max_examples=nojit if NO_JIT else jit)


# -- references ---------------------------------------------------------------------------

FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]


def ref_index(row: int, lane: int) -> int:
    return FL_ORDER[row // 8] * 16 + (row % 8) * 128 + lane


def ref_pack_block(values, w: int, t: int) -> list[int]:
    """1024 values (each < 2**w) -> w * LANES words."""
    lanes = 1024 // t
    words = [0] * (w * lanes)
    for lane in range(lanes):
        stream = 0
        for row in range(t):
            stream |= values[ref_index(row, lane)] << (row * w)
        for k in range(w):
            words[k * lanes + lane] = (stream >> (k * t)) & ((1 << t) - 1)
    return words


def ref_unpack_block(words, w: int, t: int) -> list[int]:
    lanes = 1024 // t
    assert len(words) == w * lanes
    out = [0] * 1024
    for lane in range(lanes):
        stream = 0
        for k in range(w):
            stream |= words[k * lanes + lane] << (k * t)
        for row in range(t):
            out[ref_index(row, lane)] = (stream >> (row * w)) & ((1 << w) - 1)
    return out


def ref_inline_pack(values, t: int) -> list[int]:
    words = []
    for b in range(0, len(values), 1024):
        block = list(values[b:b + 1024])
        w = max(block).bit_length()
        words += [w] + ref_pack_block(block + [0] * (1024 - len(block)), w, t)
    return words


def ref_inline_unpack(words, n: int, t: int):
    """``(status, values or None)``."""
    lanes = 1024 // t
    p, out = 0, []
    for b in range(0, n, 1024):
        if p >= len(words):
            return kb.TRUNCATED, None
        w = words[p]
        if w > t:
            return kb.BAD_WIDTH, None
        if p + 1 + w * lanes > len(words):
            return kb.TRUNCATED, None
        out += ref_unpack_block(words[p + 1:p + 1 + w * lanes], w, t)[:min(1024, n - b)]
        p += 1 + w * lanes
    if p != len(words):
        return kb.BAD_LENGTH, None
    return kb.OK, out


def ref_outofline_pack(values, w: int, t: int) -> list[int]:
    n = len(values)
    full, r = divmod(n, 1024)
    words = []
    for b in range(full):
        words += ref_pack_block(list(values[b * 1024:(b + 1) * 1024]), w, t)
    tail = list(values[full * 1024:])
    if r and w * (1024 - r) < (t - w) * r:   # padding costs less than it saves: pack it
        words += ref_pack_block(tail + [0] * (1024 - r), w, t)
    else:
        words += tail
    return words


def ref_outofline_unpack(words, w: int, n: int, t: int):
    """``(status, values or None)``; raw tail exactly when ``len == full * W * LANES + r``."""
    if not 0 <= w <= t:
        return kb.BAD_WIDTH, None
    lanes = 1024 // t
    full, r = divmod(n, 1024)
    wpb = w * lanes
    base = full * wpb
    nw = len(words)
    if r == 0:
        if nw != base:
            return (kb.TRUNCATED if nw < base else kb.BAD_LENGTH), None
        raw = False
    elif nw == base + r:
        raw = True
    elif nw == base + wpb:
        raw = False
    else:
        return (kb.BAD_LENGTH if nw > max(base + r, base + wpb) else kb.TRUNCATED), None
    out = []
    for b in range(full):
        out += ref_unpack_block(words[b * wpb:(b + 1) * wpb], w, t)
    if r:
        out += words[base:base + r] if raw else ref_unpack_block(words[base:], w, t)[:r]
    return kb.OK, out


def _le(value: int, width: int) -> bytes:
    return value.to_bytes(width, "little")


def _from_le(raw: bytes) -> int:
    return int.from_bytes(raw, "little")


def _words_of(raw: bytes, t: int) -> list[int]:
    isz = t // 8
    return [_from_le(raw[k:k + isz]) for k in range(0, len(raw), isz)]


def _bytes_of(words, t: int) -> bytes:
    return b"".join(_le(x, t // 8) for x in words)


def ref_inline_unpack_chunks(data: bytes, starts, sizes, counts, n_out: int, t: int):
    """``(status, (chunk, start) or None, values or None)``."""
    isz, lanes = t // 8, 1024 // t
    for c, (s, size, cnt) in enumerate(zip(starts, sizes, counts, strict=True)):
        if not 0 <= cnt <= 1024:
            return kb.BAD_COUNT, (c, s), None
        if s < 0 or size < 0 or s + size > len(data):
            return kb.OUT_OF_BOUNDS, (c, s), None
        if size < isz:
            return kb.TRUNCATED, (c, s), None
        w = _from_le(data[s:s + isz])
        if w > t:
            return kb.BAD_WIDTH, (c, s), None
        need = (1 + w * lanes) * isz
        if size != need:
            return (kb.TRUNCATED if size < need else kb.BAD_LENGTH), (c, s), None
    if sum(counts) != n_out:
        return kb.BAD_OUTPUT, None, None
    out = []
    for s, size, cnt in zip(starts, sizes, counts, strict=True):
        words = _words_of(data[s:s + size], t)
        out += ref_unpack_block(words[1:], words[0], t)[:cnt]
    return kb.OK, None, out


def ref_outofline_unpack_chunks(data: bytes, starts, sizes, counts, w, n_out, t):
    """``(status, (chunk, start) or None, values or None)``."""
    if not 0 <= w <= t:
        return kb.BAD_WIDTH, None, None
    isz = t // 8
    out = []
    for c, (s, size, cnt) in enumerate(zip(starts, sizes, counts, strict=True)):
        if cnt < 0 or cnt > n_out:
            return kb.BAD_COUNT, (c, s), None
        if s < 0 or size < 0 or s + size > len(data):
            return kb.OUT_OF_BOUNDS, (c, s), None
        if size % isz:
            return kb.BAD_LENGTH, (c, s), None
        status, vals = ref_outofline_unpack(_words_of(data[s:s + size], t), w, cnt, t)
        if status != kb.OK:
            return status, (c, s), None
        out += vals
    if len(out) != n_out:
        return kb.BAD_OUTPUT, None, None
    return kb.OK, None, out


# -- strategies and helpers ---------------------------------------------------------------

def make_values(t: int, n: int, w: int, kind: str, seed: int) -> np.ndarray:
    """``n`` values of at most ``w`` bits (exactly ``w`` for one of them unless all are
    zero) as the unsigned T dtype."""
    rng = np.random.default_rng(seed)
    hi = (1 << w) - 1
    if kind == "max":
        v = np.full(n, hi, np.uint64)
    elif kind == "zero":
        v = np.zeros(n, np.uint64)
    else:
        v = rng.integers(0, 2**64, n, dtype=np.uint64) & np.uint64(hi)
        if kind == "sparse":
            v[rng.random(n) < 0.97] = 0
        if n:
            v[rng.integers(n)] = hi
    return v.astype(DTYPES[t])


kinds = st.sampled_from(["random", "sparse", "max", "zero"])
seeds = st.integers(0, 2**32 - 1)
counts_st = st.one_of(st.integers(0, 3200), st.sampled_from([1, 1023, 1024, 1025, 2048, 3072]))


@st.composite
def value_blocks(draw, t: int, n=None, width=None):
    """Values whose 1024-blocks each draw their own width (so inline chunks differ)."""
    n = draw(counts_st) if n is None else n
    parts = []
    for b in range(0, n, 1024):
        w = draw(st.integers(0, t)) if width is None else width
        parts.append(make_values(t, min(1024, n - b), w, draw(kinds), draw(seeds)))
    return np.concatenate(parts) if parts else np.zeros(0, DTYPES[t])


def _arr(values, t: int, as_input):
    return as_input(np.array(values, dtype=DTYPES[t]).reshape(-1))


def _i64(values):
    return np.array(values, dtype=np.int64).reshape(-1)


def _u8(raw: bytes, as_input):
    """The chunk bytes as the reader has them: read-only file bytes (or writable), next
    to starts/sizes/counts it computed itself (writable int64)."""
    return as_input(np.frombuffer(raw, np.uint8))


# -- single blocks ------------------------------------------------------------------------

@T_PARAMS
@budget(25, 6)
@given(data=st.data())
def test_pack_block_matches_reference(t, as_input, guarded, data):
    w = data.draw(st.integers(0, t))
    values = make_values(t, 1024, w, data.draw(kinds), data.draw(seeds))
    g = guarded(w * 1024 // t, DTYPES[t], FILL)
    assert kb.pack_block(_arr(values, t, as_input), w, g.out) == kb.OK
    assert g.intact()
    assert g.out.tolist() == ref_pack_block(values.tolist(), w, t)


@T_PARAMS
@budget(25, 6)
@given(data=st.data())
def test_unpack_block_matches_reference(t, as_input, guarded, data):
    """Any words decode (every bit pattern is a valid block)."""
    w = data.draw(st.integers(0, t))
    words = make_values(t, w * 1024 // t, t, "random", data.draw(seeds))
    g = guarded(1024, DTYPES[t], FILL)
    assert kb.unpack_block(_arr(words, t, as_input), w, g.out) == kb.OK
    assert g.intact()
    assert g.out.tolist() == ref_unpack_block(words.tolist(), w, t)


@T_PARAMS
def test_block_round_trip_every_width(t):
    for w in range(t + 1):
        values = make_values(t, 1024, w, "random", w)
        words = np.full(w * 1024 // t, FILL, DTYPES[t])
        assert kb.pack_block(values, w, words) == kb.OK
        if w in (0, 1, t // 2 + 1, t):
            assert words.tolist() == ref_pack_block(values.tolist(), w, t)
        back = np.full(1024, FILL, DTYPES[t])
        assert kb.unpack_block(words, w, back) == kb.OK
        assert np.array_equal(back, values), w


def test_block_known_answers():
    # kernels/bitpack.py docstring: u8, W = 1, value 128 (row 1, lane 0) -> bit 1 of word 0
    values = np.zeros(1024, np.uint8)
    values[128] = 1
    words = np.zeros(128, np.uint8)
    assert kb.pack_block(values, 1, words) == kb.OK
    assert words.tobytes() == b"\x02" + bytes(127)
    # W = T copies: word row * LANES + lane holds value (row, lane)
    values = np.arange(1024, dtype=np.uint16)
    words = np.zeros(1024, np.uint16)
    assert kb.pack_block(values, 16, words) == kb.OK
    assert words[:64].tolist() == list(range(64))           # row 0: index 0..63
    assert words[64 * 8:64 * 9].tolist() == list(range(64, 128))  # row 8 = o 1 (16*4)
    # W = 0 stores no words and decodes to zeros
    out = np.full(1024, 9, np.uint64)
    assert kb.unpack_block(np.zeros(0, np.uint64), 0, out) == kb.OK
    assert not out.any()


def test_inline_known_answer_0_to_1023():
    # FORMAT_FACTS §3.1: 0..1023 as u32 -> 0a 00 00 00 then 320 words (1284 bytes)
    values = np.arange(1024, dtype=np.uint32)
    assert kb.inline_chunk_words(values).tolist() == [321]
    out = np.zeros(321, np.uint32)
    assert kb.inline_pack(values, out) == 321
    raw = out.tobytes()
    assert len(raw) == 1284
    assert raw[:4] == bytes.fromhex("0a000000")
    # lane 0's first word: rows 0, 1, 2 (values 0, 128, 256) and 2 bits of row 3 (384)
    assert raw[4:8] == bytes.fromhex("00000210")
    assert raw == _bytes_of(ref_inline_pack(list(range(1024)), 32), 32)
    back = np.zeros(1024, np.uint32)
    assert kb.inline_unpack(out, 1024, back) == kb.OK
    assert np.array_equal(back, values)


# -- bit widths ---------------------------------------------------------------------------

@T_PARAMS
@budget(30, 8)
@given(data=st.data())
def test_bit_widths_match_python(t, as_input, guarded, data):
    values = data.draw(value_blocks(t))
    v = _arr(values, t, as_input)
    py = [int(x) for x in values.tolist()]
    assert kb.bit_width(v) == max(py, default=0).bit_length()
    nb = (len(py) + 1023) // 1024
    g = guarded(nb, np.int64, UNSET)
    assert kb.block_bit_widths(v, g.out) == kb.OK
    assert g.intact()
    want = [max(py[b:b + 1024]).bit_length() for b in range(0, len(py), 1024)]
    assert g.out.tolist() == want
    assert kb.inline_chunk_words(v).tolist() == [1 + w * 1024 // t for w in want]
    assert kb.block_bit_widths(v, np.zeros(nb + 1, np.int64)) == kb.BAD_OUTPUT


# -- InlineBitpacking ---------------------------------------------------------------------

@T_PARAMS
@budget(25, 6)
@given(data=st.data())
def test_inline_matches_reference(t, as_input, guarded, data):
    values = data.draw(value_blocks(t))
    n = len(values)
    want = ref_inline_pack(values.tolist(), t)
    v = _arr(values, t, as_input)
    total = int(kb.inline_chunk_words(v).sum())
    assert total == len(want)
    g = guarded(total + data.draw(st.integers(0, 3)), DTYPES[t], FILL)
    assert kb.inline_pack(v, g.out) == total
    assert g.intact()
    assert g.out[:total].tolist() == want
    assert (g.out[total:] == FILL).all()
    back = guarded(n, DTYPES[t], FILL)
    assert kb.inline_unpack(_arr(want, t, as_input), n, back.out) == kb.OK
    assert back.intact()
    assert np.array_equal(back.out, values)


@T_PARAMS
def test_inline_pack_output_too_small(t, guarded):
    values = make_values(t, 1500, t - 1, "random", 1)
    total = int(kb.inline_chunk_words(values).sum())
    g = guarded(total - 1, DTYPES[t], FILL)
    assert kb.inline_pack(values, g.out) == kb.BAD_OUTPUT
    assert g.intact() and (g.out == FILL).all()


@st.composite
def corrupted_inline(draw, t):
    """Valid inline words for n values, then one to three corruptions."""
    values = draw(value_blocks(t, n=draw(st.integers(0, 2600))))
    words, n = ref_inline_pack(values.tolist(), t), len(values)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["width", "word", "truncate", "extend", "count"]))
        if kind in ("width", "word") and words:
            heads = [0]
            while heads[-1] < len(words) and words[heads[-1]] <= t:
                heads.append(heads[-1] + 1 + words[heads[-1]] * 1024 // t)
            at = draw(st.sampled_from([h for h in heads if h < len(words)] or [0]))
            if kind == "word":
                at = draw(st.integers(0, len(words) - 1))
            words[at] = draw(st.one_of(st.integers(0, t + 2), st.integers(0, 2**t - 1)))
        elif kind == "truncate":
            del words[draw(st.integers(0, len(words))):]
        elif kind == "extend":
            words += draw(st.lists(st.integers(0, 2**t - 1), min_size=1, max_size=3))
        elif kind == "count":
            n = max(0, n + draw(st.integers(-1100, 1100)))
    return words, n


@T_PARAMS
@budget(30, 8)
@given(data=st.data())
def test_inline_unpack_corrupted(t, as_input, guarded, data):
    words, n = data.draw(corrupted_inline(t))
    want, values = ref_inline_unpack(words, n, t)
    g = guarded(n, DTYPES[t], FILL)
    assert kb.inline_unpack(_arr(words, t, as_input), n, g.out) == want
    assert g.intact()
    if want == kb.OK:
        assert g.out.tolist() == values
    else:  # nothing is written before every chunk has been checked
        assert (g.out == FILL).all()


@T_PARAMS
def test_inline_unpack_statuses(t):
    lanes = 1024 // t
    good = ref_inline_pack(list(range(3)) + [0] * 1021 + [5], t)   # two chunks, W 2 and 3
    out = np.zeros(1025, DTYPES[t])

    def run(words, n=1025, o=out):
        return kb.inline_unpack(np.array(words, DTYPES[t]), n, o)

    assert run(good) == kb.OK
    assert run([t + 1] + good[1:]) == kb.BAD_WIDTH                     # W > T
    assert run(good[:-1]) == kb.TRUNCATED                              # last word missing
    assert run(good[:1 + 2 * lanes]) == kb.TRUNCATED                   # second chunk missing
    assert run(good + [0]) == kb.BAD_LENGTH                            # a word left over
    assert run(good, 1024, np.zeros(1024, DTYPES[t])) == kb.BAD_LENGTH  # a chunk left over
    assert run(good, 1026, np.zeros(1026, DTYPES[t])) == kb.OK   # reads a padding 0
    assert run(good, 2049, np.zeros(2049, DTYPES[t])) == kb.TRUNCATED   # a chunk missing
    assert run(good, 1025, np.zeros(1024, DTYPES[t])) == kb.BAD_OUTPUT
    assert run(good, -1, np.zeros(0, DTYPES[t])) == kb.BAD_OUTPUT
    if t == 32:  # element sizes differ (one dtype: each pair is one more compilation)
        assert kb.inline_unpack(np.array(good, np.uint32), 1025,
                                np.zeros(1025, np.uint16)) == kb.BAD_OUTPUT


# -- inline chunks in a byte buffer (the mini-block reader's call) --------------------------

@st.composite
def inline_chunk_buffers(draw, t, corrupt):
    """Chunks at any byte offset (not only aligned ones), each one inline block holding
    1..1024 values, with unrelated bytes around them; optionally corrupted."""
    nc = draw(st.integers(0, 4))
    data, starts, sizes, counts, values = bytearray(), [], [], [], []
    for _ in range(nc):
        cnt = draw(st.one_of(st.integers(1, 1024), st.just(1024)))
        vals = make_values(t, cnt, draw(st.integers(0, t)), draw(kinds), draw(seeds))
        chunk = _bytes_of(ref_inline_pack(vals.tolist(), t), t)
        data += draw(st.binary(max_size=9))
        starts.append(len(data))
        sizes.append(len(chunk))
        counts.append(cnt)
        values += vals.tolist()
        data += chunk
    data += draw(st.binary(max_size=9))
    n_out = len(values)
    for _ in range(draw(st.integers(1, 3)) if corrupt else 0):
        kind = draw(st.sampled_from(["size", "start", "count", "width", "byte", "truncate",
                                     "out"]))
        if kind == "out":
            n_out = max(0, n_out + draw(st.integers(-3, 3)))
            continue
        if kind == "truncate":
            del data[draw(st.integers(0, len(data))):]
            continue
        if not counts:
            continue
        c = draw(st.integers(0, len(counts) - 1))
        if kind == "size":
            sizes[c] += draw(st.integers(-2 * t, 2 * t))
        elif kind == "start":
            starts[c] += draw(st.integers(-9, 9))
        elif kind == "count":
            counts[c] = draw(st.integers(-2, 1026))
        elif kind == "width" and starts[c] < len(data):
            data[starts[c]] = draw(st.integers(0, 255))
        elif kind == "byte" and data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data), starts, sizes, counts, n_out, values


def _run_inline_chunks(t, as_input, guarded, data, starts, sizes, counts, n_out):
    want, where, values = ref_inline_unpack_chunks(data, starts, sizes, counts, n_out, t)
    g = guarded(n_out, DTYPES[t], FILL)
    err = guarded(2, np.int64, UNSET)
    got = kb.inline_unpack_chunks(_u8(data, as_input), _i64(starts), _i64(sizes),
                                  _i64(counts), g.out, err.out)
    _same_outcome(got, g, err, want, where, values)
    return got, g.out


def _same_outcome(got, g, err, want, where, values):
    """A chunk kernel's status and outputs against its reference's: the values on OK,
    else the output untouched and ``err`` as the reference says."""
    assert got == want
    assert g.intact() and err.intact()
    if want == kb.OK:
        assert g.out.tolist() == values
    else:
        assert (g.out == FILL).all()
        assert tuple(err.out.tolist()) == (where or (UNSET, UNSET))


@T_PARAMS
@budget(25, 6)
@given(data=st.data())
def test_inline_unpack_chunks_matches_reference(t, as_input, guarded, data):
    buf, starts, sizes, counts, n_out, values = data.draw(inline_chunk_buffers(t, False))
    got, out = _run_inline_chunks(t, as_input, guarded, buf, starts, sizes, counts, n_out)
    assert got == kb.OK and out.tolist() == values


@T_PARAMS
@budget(40, 8)
@given(data=st.data())
def test_inline_unpack_chunks_corrupted(t, as_input, guarded, data):
    buf, starts, sizes, counts, n_out, _ = data.draw(inline_chunk_buffers(t, True))
    _run_inline_chunks(t, as_input, guarded, buf, starts, sizes, counts, n_out)


def test_inline_unpack_chunks_extremes():
    """Starts, sizes and counts near the int64 limits are rejected before any read."""
    chunk = _bytes_of(ref_inline_pack([1, 2, 3], 32), 32)   # W = 2: 4 + 256 bytes
    data = np.frombuffer(bytes(3) + chunk + bytes(5), np.uint8)
    big = [-(2**63), -1, 2**62, 2**63 - 1]
    for s in [3] + big:
        for size in [len(chunk)] + big:
            for cnt in [3] + big:
                want, where, _ = ref_inline_unpack_chunks(data.tobytes(), [s], [size], [cnt],
                                                          3, 32)
                out = np.zeros(3, np.uint32)
                err = np.full(2, UNSET, np.int64)
                got = kb.inline_unpack_chunks(data, _i64([s]), _i64([size]), _i64([cnt]),
                                              out, err)
                assert got == want, (s, size, cnt)
                if where:
                    assert tuple(err.tolist()) == where


def ref_inline_gather_chunks(data: bytes, starts, sizes, counts, slot, local, t: int):
    """``(status, err or None, values or None)``: the chunks ``slot`` names checked in
    chunk order as ref_inline_unpack_chunks checks them, then the positions, then each
    wanted value taken from its whole unpacked chunk."""
    nc = len(starts)
    if any(not 0 <= c < nc for c in slot):
        return kb.BAD_OUTPUT, None, None
    for c in sorted(set(slot)):
        status, where, _ = ref_inline_unpack_chunks(data, [starts[c]], [sizes[c]],
                                                    [counts[c]], counts[c], t)
        if status != kb.OK:
            return status, (c, starts[c]), None
    for k, (c, v) in enumerate(zip(slot, local, strict=True)):
        if not 0 <= v < counts[c]:
            return kb.BAD_POSITION, (k, c), None
    out = []
    for c, v in zip(slot, local, strict=True):
        words = _words_of(data[starts[c]:starts[c] + sizes[c]], t)
        out.append(ref_unpack_block(words[1:], words[0], t)[v])
    return kb.OK, None, out


@st.composite
def gathers(draw, t, corrupt):
    """Inline chunks (optionally corrupted) and positions into them (optionally some
    past a chunk's count or naming no chunk)."""
    buf, starts, sizes, counts, _, _ = draw(inline_chunk_buffers(t, corrupt))
    slot, local = [], []
    if counts:
        for _ in range(draw(st.integers(0, 40))):
            c = draw(st.integers(0, len(counts) - 1))
            top = max(counts[c], 1)
            slot.append(c)
            local.append(draw(st.integers(0, top - 1)))
    if corrupt and slot and draw(st.booleans()):
        k = draw(st.integers(0, len(slot) - 1))
        if draw(st.booleans()):
            local[k] = draw(st.sampled_from([-1, counts[slot[k]], 1024, 2**40]))
        else:
            slot[k] = draw(st.sampled_from([-1, len(counts)]))
    return buf, starts, sizes, counts, slot, local


def _run_gather(t, as_input, guarded, buf, starts, sizes, counts, slot, local):
    want, where, values = ref_inline_gather_chunks(buf, starts, sizes, counts, slot, local, t)
    g = guarded(len(slot), DTYPES[t], FILL)
    err = guarded(2, np.int64, UNSET)
    got = kb.inline_gather_chunks(_u8(buf, as_input), as_input(_i64(starts)),
                                  as_input(_i64(sizes)), as_input(_i64(counts)),
                                  as_input(_i64(slot)), as_input(_i64(local)), g.out, err.out)
    _same_outcome(got, g, err, want, where, values)
    return got


@T_PARAMS
@budget(25, 6)
@given(data=st.data())
def test_inline_gather_chunks_matches_reference(t, as_input, guarded, data):
    assert _run_gather(t, as_input, guarded, *data.draw(gathers(t, False))) == kb.OK


@T_PARAMS
@budget(40, 8)
@given(data=st.data())
def test_inline_gather_chunks_corrupted(t, as_input, guarded, data):
    _run_gather(t, as_input, guarded, *data.draw(gathers(t, True)))


@T_PARAMS
def test_inline_gather_chunks_every_position(t):
    """Every position of full chunks of every width, against the unpacked chunk."""
    rng = np.random.default_rng(t)
    for w in range(t + 1):
        vals = (rng.integers(0, 2**63, 1024, dtype=np.uint64) & np.uint64((1 << w) - 1)
                if w < 64 else rng.integers(0, 2**63, 1024, dtype=np.uint64) * np.uint64(2)
                + np.uint64(1)).astype(DTYPES[t])
        chunk = bytes(3) + _bytes_of(ref_inline_pack(vals.tolist(), t), t)
        data = np.frombuffer(chunk, np.uint8)
        out = np.zeros(1024, DTYPES[t])
        err = np.zeros(2, np.int64)
        got = kb.inline_gather_chunks(data, _i64([3]), _i64([len(chunk) - 3]), _i64([1024]),
                                      np.zeros(1024, np.int64),
                                      np.arange(1024, dtype=np.int64)[::-1].copy(), out, err)
        assert got == kb.OK and (out[::-1] == vals).all(), w


# -- OutOfLineBitpacking ------------------------------------------------------------------

@T_PARAMS
@budget(25, 6)
@given(data=st.data())
def test_outofline_matches_reference(t, as_input, guarded, data):
    w = data.draw(st.integers(0, t))
    values = data.draw(value_blocks(t, width=w))
    n = len(values)
    want = ref_outofline_pack(values.tolist(), w, t)
    assert kb.outofline_words(n, w, t) == len(want)
    g = guarded(len(want) + data.draw(st.integers(0, 2)), DTYPES[t], FILL)
    assert kb.outofline_pack(_arr(values, t, as_input), w, g.out) == len(want)
    assert g.intact()
    assert g.out[:len(want)].tolist() == want
    back = guarded(n, DTYPES[t], FILL)
    assert kb.outofline_unpack(_arr(want, t, as_input), w, n, back.out) == kb.OK
    assert back.intact()
    assert np.array_equal(back.out, values)


@T_PARAMS
@budget(40, 8)
@given(data=st.data())
def test_outofline_unpack_lengths(t, as_input, guarded, data):
    """Words of any length around the two valid ones: the form is told by length, and
    every other length is TRUNCATED or BAD_LENGTH."""
    w = data.draw(st.integers(0, t))
    n = data.draw(counts_st)
    lanes = 1024 // t
    full, r = divmod(n, 1024)
    near = [full * w * lanes + r, (full + (r > 0)) * w * lanes]
    nw = max(0, data.draw(st.sampled_from(near)) + data.draw(st.integers(-2, 2)))
    words = make_values(t, nw, t, "random", data.draw(seeds))
    want, values = ref_outofline_unpack(words.tolist(), w, n, t)
    g = guarded(n, DTYPES[t], FILL)
    assert kb.outofline_unpack(_arr(words, t, as_input), w, n, g.out) == want
    assert g.intact()
    if want == kb.OK:
        assert g.out.tolist() == values
    else:
        assert (g.out == FILL).all()


@pytest.mark.parametrize("t, w, n, words, raw", [
    (16, 1, 1025, 65, True),       # kernels/bitpack.py docstring: 64 words + 1 raw level
    (16, 1, 1024 + 64, 128, True),  # r == W * LANES: both forms have one length; raw wins
    (16, 1, 1024 + 65, 128, False),  # one more value and padding pays: packed tail
    (16, 0, 1500, 0, False),       # W = 0 packs every tail (to nothing)
    (32, 32, 1030, 1030, True),    # W = T never packs a tail
    (8, 3, 700, 384, False),
    (64, 63, 1, 1, True),
])
def test_outofline_tail_rule(t, w, n, words, raw):
    values = make_values(t, n, w, "random", n)
    assert kb.outofline_words(n, w, t) == words
    out = np.zeros(words, DTYPES[t])
    assert kb.outofline_pack(values, w, out) == words
    r = n % 1024
    if raw:
        assert np.array_equal(out[words - r:], values[n - r:])
    back = np.zeros(n, DTYPES[t])
    assert kb.outofline_unpack(out, w, n, back) == kb.OK
    assert np.array_equal(back, values)


@st.composite
def outofline_chunk_buffers(draw, t, corrupt):
    """Level buffers in the out-of-line form at one page-wide width, at any byte offset."""
    w = draw(st.integers(0, t))
    nc = draw(st.integers(0, 4))
    data, starts, sizes, counts, values = bytearray(), [], [], [], []
    for _ in range(nc):
        cnt = draw(st.one_of(st.integers(0, 2200), st.sampled_from([1, 1024, 1025])))
        vals = make_values(t, cnt, w, draw(kinds), draw(seeds))
        buf = _bytes_of(ref_outofline_pack(vals.tolist(), w, t), t)
        data += draw(st.binary(max_size=9))
        starts.append(len(data))
        sizes.append(len(buf))
        counts.append(cnt)
        values += vals.tolist()
        data += buf
    data += draw(st.binary(max_size=9))
    n_out = len(values)
    for _ in range(draw(st.integers(1, 3)) if corrupt else 0):
        kind = draw(st.sampled_from(["size", "start", "count", "width", "truncate", "out"]))
        if kind == "width":
            w = draw(st.integers(-1, t + 1))
        elif kind == "out":
            n_out = max(0, n_out + draw(st.integers(-3, 3)))
        elif kind == "truncate":
            del data[draw(st.integers(0, len(data))):]
        elif counts:
            c = draw(st.integers(0, len(counts) - 1))
            if kind == "size":
                sizes[c] += draw(st.integers(-9, 9))
            elif kind == "start":
                starts[c] += draw(st.integers(-9, 9))
            else:
                counts[c] += draw(st.integers(-1030, 1030))
    return bytes(data), starts, sizes, counts, w, n_out, values


def _run_outofline_chunks(t, as_input, guarded, data, starts, sizes, counts, w, n_out):
    want, where, values = ref_outofline_unpack_chunks(data, starts, sizes, counts, w, n_out, t)
    g = guarded(n_out, DTYPES[t], FILL)
    err = guarded(2, np.int64, UNSET)
    got = kb.outofline_unpack_chunks(_u8(data, as_input), _i64(starts), _i64(sizes),
                                     _i64(counts), w, g.out, err.out)
    assert got == want
    assert g.intact() and err.intact()
    if want == kb.OK:
        assert g.out.tolist() == values
    else:
        assert (g.out == FILL).all()
        assert tuple(err.out.tolist()) == (where or (UNSET, UNSET))
    return got


@T_PARAMS
@budget(25, 6)
@given(data=st.data())
def test_outofline_unpack_chunks_matches_reference(t, as_input, guarded, data):
    case = data.draw(outofline_chunk_buffers(t, False))
    assert _run_outofline_chunks(t, as_input, guarded, *case[:-1]) == kb.OK


@T_PARAMS
@budget(40, 8)
@given(data=st.data())
def test_outofline_unpack_chunks_corrupted(t, as_input, guarded, data):
    case = data.draw(outofline_chunk_buffers(t, True))
    _run_outofline_chunks(t, as_input, guarded, *case[:-1])


# -- statuses shared by every kernel --------------------------------------------------------

@T_PARAMS
def test_bad_widths_and_outputs(t, guarded):
    dt = DTYPES[t]
    v = make_values(t, 1024, 3, "random", 0)
    for w in (-1, t + 1):
        g = guarded(8, dt, FILL)
        assert kb.pack_block(v, w, g.out) == kb.BAD_WIDTH
        assert kb.unpack_block(g.out, w, np.zeros(1024, dt)) == kb.BAD_WIDTH
        assert kb.outofline_pack(v, w, g.out) == kb.BAD_WIDTH
        assert kb.outofline_unpack(g.out, w, 0, np.zeros(0, dt)) == kb.BAD_WIDTH
        assert kb.outofline_unpack_chunks(np.zeros(0, np.uint8), _i64([]), _i64([]),
                                          _i64([]), w, np.zeros(0, dt),
                                          np.zeros(2, np.int64)) == kb.BAD_WIDTH
        assert g.intact() and (g.out == FILL).all()
    # a chunk whose width word says T + 1
    chunk = _le(t + 1, t // 8) + bytes(t // 8 * 1024)
    err = np.full(2, UNSET, np.int64)
    assert kb.inline_unpack_chunks(np.frombuffer(b"\0" + chunk, np.uint8), _i64([1]),
                                   _i64([len(chunk)]), _i64([1]), np.zeros(1, dt),
                                   err) == kb.BAD_WIDTH
    assert err.tolist() == [0, 1]
    # values wider than W
    g = guarded(2 * 1024 // t, dt, FILL)
    assert kb.pack_block(v, 2, g.out) == kb.TOO_WIDE
    assert kb.outofline_pack(v, 2, g.out) == kb.TOO_WIDE
    assert g.intact() and (g.out == FILL).all()
    # wrong sizes: values, output, output too small for the out-of-line form
    assert kb.pack_block(v[:-1], 3, np.zeros(3 * 1024 // t, dt)) == kb.BAD_LENGTH
    assert kb.pack_block(v, 3, np.zeros(3 * 1024 // t + 1, dt)) == kb.BAD_OUTPUT
    assert kb.unpack_block(np.zeros(3 * 1024 // t, dt), 3, np.zeros(1023, dt)) == kb.BAD_OUTPUT
    assert kb.unpack_block(np.zeros(3 * 1024 // t - 1, dt), 3,
                           np.zeros(1024, dt)) == kb.TRUNCATED
    assert kb.unpack_block(np.zeros(3 * 1024 // t + 1, dt), 3,
                           np.zeros(1024, dt)) == kb.BAD_LENGTH
    g = guarded(kb.outofline_words(1024, 3, t) - 1, dt, FILL)
    assert kb.outofline_pack(v, 3, g.out) == kb.BAD_OUTPUT
    assert g.intact() and (g.out == FILL).all()
    if t == 32:  # element sizes that differ between words and output
        assert kb.unpack_block(np.zeros(96, dt), 3, np.zeros(1024, np.uint16)) \
            == kb.BAD_OUTPUT
        assert kb.outofline_unpack(np.zeros(0, dt), 0, 5, np.zeros(5, np.uint16)) \
            == kb.BAD_OUTPUT
    # argument arrays of different lengths
    assert kb.inline_unpack_chunks(np.zeros(8, np.uint8), _i64([0]), _i64([]), _i64([1]),
                                   np.zeros(1, dt), np.zeros(2, np.int64)) == kb.BAD_OUTPUT


# -- the real oracle: pages written by pylance ------------------------------------------------

def _write_with_pylance(path, table):
    lf = pytest.importorskip("lance.file")
    w = lf.LanceFileWriter(str(path), table.schema, version="2.1")
    w.write_batch(table)
    w.close()


def _chunks(path, column):
    """``(layout, data, items, levels, starts, sizes)`` of a one-page mini-block column,
    located with lancenb's metadata and the mini-block framing kernel."""
    md = LanceFileReader(str(path)).metadata()
    (page,) = md.columns[column].pages
    layout = page.layout.mini_block_layout
    raw = path.read_bytes()
    meta, chunks = page.buffers[:2]
    words = np.frombuffer(raw[meta.position:meta.position + meta.size], np.uint16)
    data = np.frombuffer(raw[chunks.position:chunks.position + chunks.size], np.uint8)
    nbytes = ((words.astype(np.int64) >> 4) + 1) * 8
    pos = np.concatenate([[0], np.cumsum(nbytes)[:-1]]).astype(np.int64)
    nl = 1 if layout.HasField("def_compression") else 0
    nc = len(words)
    items, levels = np.empty(nc, np.int64), np.empty(nc, np.int64)
    starts, sizes = np.empty((nc, nl + 1), np.int64), np.empty((nc, nl + 1), np.int64)
    assert km.parse_chunks(words, data, pos, layout.num_items, nl, 1, 2, items, levels,
                           starts, sizes, np.zeros(2, np.int64)) == km.OK
    return layout, data, items, levels, starts, sizes


def _check_values(path, column, source, t):
    """Decode the column's InlineBitpacking chunks; also re-pack them with our writer
    kernels and compare byte for byte with pylance's."""
    layout, data, items, _, starts, sizes = _chunks(path, column)
    vc = layout.value_compression
    assert vc.WhichOneof("compression") == "inline_bitpacking"
    assert vc.inline_bitpacking.uncompressed_bits_per_value == t
    vs, vz = starts[:, -1].copy(), sizes[:, -1].copy()
    out = np.full(int(items.sum()), FILL, DTYPES[t])
    err = np.zeros(2, np.int64)
    assert kb.inline_unpack_chunks(data, vs, vz, items, out, err) == kb.OK
    src = np.ascontiguousarray(source).view(DTYPES[t])
    valid = np.ones(len(src), bool) if not hasattr(source, "mask") else ~source.mask
    assert np.array_equal(out[valid], src[valid])
    j = 0
    widths = []
    for c in range(len(items)):
        block = out[j:j + items[c]]
        mine = np.zeros(int(kb.inline_chunk_words(block).sum()), DTYPES[t])
        assert kb.inline_pack(block, mine) == len(mine)
        assert mine.tobytes() == data[vs[c]:vs[c] + vz[c]].tobytes()
        widths.append(int(mine[0]))
        j += items[c]
    return items, widths


def _check_def_levels(path, column, validity):
    """Decode the def levels (OutOfLineBitpacking(16, Flat(W)) per chunk, or
    InlineBitpacking(16) when the page has at most 1024 levels) and re-pack them."""
    layout, data, items, levels, starts, sizes = _chunks(path, column)
    dc = layout.def_compression
    kind = dc.WhichOneof("compression")
    defs = np.full(int(levels.sum()), FILL, np.uint16)
    err = np.zeros(2, np.int64)
    ds, dz = starts[:, 0].copy(), sizes[:, 0].copy()
    if kind == "inline_bitpacking":
        assert dc.inline_bitpacking.uncompressed_bits_per_value == 16
        w = None
        assert kb.inline_unpack_chunks(data, ds, dz, levels, defs, err) == kb.OK
    else:
        assert kind == "out_of_line_bitpacking"
        assert dc.out_of_line_bitpacking.uncompressed_bits_per_value == 16
        w = dc.out_of_line_bitpacking.values.flat.bits_per_value
        assert kb.outofline_unpack_chunks(data, ds, dz, levels, w, defs, err) == kb.OK
    assert np.array_equal(defs, (~validity).astype(np.uint16))
    j = 0
    for c in range(len(levels)):   # our writer kernels make the same bytes
        block = defs[j:j + levels[c]]
        if w is None:
            mine = np.zeros(int(kb.inline_chunk_words(block).sum()), np.uint16)
            assert kb.inline_pack(block, mine) == len(mine)
        else:
            mine = np.zeros(kb.outofline_words(int(levels[c]), w, 16), np.uint16)
            assert kb.outofline_pack(block, w, mine) == len(mine)
        assert mine.tobytes() == data[ds[c]:ds[c] + dz[c]].tobytes()
        j += levels[c]
    return w, dz


def test_pylance_inline_bitpacked_columns(tmp_path):
    rng = np.random.default_rng(7)
    n = 5000  # four 1024-value chunks and a last one of 904
    cols = {
        "i32": rng.integers(0, 1000, n).astype(np.int32),
        "u16": rng.integers(0, 300, n).astype(np.uint16),
        "i64": rng.integers(0, 100_000, n).astype(np.int64),
        "f32": rng.random(n).astype(np.float32),   # [0, 1): the top bits are zero
        "u8": rng.integers(0, 5, n).astype(np.uint8),
    }
    path = tmp_path / "narrow.lance"
    _write_with_pylance(path, pa.table({k: pa.array(v) for k, v in cols.items()}))
    for i, (name, t) in enumerate([("i32", 32), ("u16", 16), ("i64", 64), ("f32", 32),
                                   ("u8", 8)]):
        items, widths = _check_values(path, i, cols[name], t)
        assert items.tolist() == [1024] * 4 + [904], name
        bw = np.empty(5, np.int64)
        kb.block_bit_widths(cols[name].view(DTYPES[t]), bw)
        assert widths == bw.tolist(), name   # W = bit width of each block's maximum


def test_pylance_nullable_column_def_levels(tmp_path):
    rng = np.random.default_rng(8)
    n = 4097  # the last chunk holds one value, so its one def level is a raw tail
    values = rng.integers(0, 1000, n).astype(np.int32)
    values[:1024] = 0      # an all-zero chunk: W = 0, the value buffer is the width word
    values[4000] = -5      # no zigzag: a negative value packs its chunk at W = 32
    validity = rng.random(n) > 0.3
    validity[4000] = True
    path = tmp_path / "nullable.lance"
    _write_with_pylance(path, pa.table({"x": pa.array(values, mask=~validity)}))
    items, widths = _check_values(path, 0, np.ma.masked_array(values, ~validity), 32)
    assert items.tolist() == [1024] * 4 + [1]
    assert widths[0] == 0 and widths[3] == 32
    w, def_sizes = _check_def_levels(path, 0, validity)
    assert w == 1
    # 1024 levels at W = 1 are one block of 64 u16; the lone last level is raw
    assert def_sizes.tolist() == [128] * 4 + [2]


@pytest.mark.parametrize("n", [300, 1000])
def test_pylance_inline_def_levels(tmp_path, n):
    """At most 1024 levels in the page: the def levels are one InlineBitpacking(16) block
    (a u16 width word, then 64 words at W = 1: 130 bytes), even when the values are
    flat (300 rows)."""
    rng = np.random.default_rng(n)
    values = rng.integers(0, 1000, n).astype(np.int32)
    validity = rng.random(n) > 0.3
    path = tmp_path / "small.lance"
    _write_with_pylance(path, pa.table({"x": pa.array(values, mask=~validity)}))
    w, def_sizes = _check_def_levels(path, 0, validity)
    assert w is None and def_sizes.tolist() == [130]
