"""``decompress_chunks`` (``kernels/fsst/fsst_chunks.py``): FSST strings decoded straight
from Variable mini-block chunks, against a pure-Python reference written from the
module docstring, on valid and corrupted chunks, read-only and writable inputs.

A chunk: ``cnt + 1`` offsets (u32 or u64) from the chunk's start, the codes, padding.
A chunk's codes decode as one stream (code ``c`` is symbol ``c``, 255 escapes the next
byte); then each value boundary must fall on a code, not on an escape's literal.
"""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels.fsst import fsst as kf
from lancenb.kernels.fsst import fsst_chunks as kc

from lancenb.encodings.blocks import Variable
from lancenb.encodings.physical.fsst import FsstCodec, FsstValues
from lancenb.errors import CorruptFileError

FILL = 0x5C
UNSET = -7


def table_arrays(symbols, switch=1):
    sym, lens, info = kf.new_table()
    for c, s in enumerate(symbols):
        sym[c, :len(s)] = list(s)
        lens[c] = len(s)
    info[:] = [switch, 0, 0, len(symbols)]
    return sym, lens, info


def chunk_bytes(values, w, pad=0x48):
    """A chunk's buffer: offsets from its start, the values' codes, padding to ``w``."""
    first = (len(values) + 1) * w
    offs = [first]
    for v in values:
        offs.append(offs[-1] + len(v))
    raw = b"".join(o.to_bytes(w, "little") for o in offs) + b"".join(values)
    return raw + bytes([pad]) * (-len(raw) % w)


def layout(chunks, w, gaps, order):
    """``(src, starts, sizes, counts)``: the chunks' buffers at the given gaps, stored in
    ``order`` (chunk ``order[k]`` is the ``k``-th in ``src``)."""
    bufs = [chunk_bytes(vals, w) for vals in chunks]
    src, starts = bytearray(), [0] * len(chunks)
    for k, c in enumerate(order):
        src += b"\xee" * gaps[k % len(gaps)] if gaps else b""
        starts[c] = len(src)
        src += bufs[c]
    return (bytes(src), starts, [len(b) for b in bufs], [len(v) for v in chunks])


# -- reference ------------------------------------------------------------------------------

def ref_decompress_chunks(src, starts, sizes, counts, w, symbols, switch, cap, n_offsets):
    """``(total, offsets, bytes)`` or ``(status, (chunk, position, value), None)``, checking
    in the kernel's order: per chunk its place and count, its first and last offsets, room
    for its offsets, its codes as one stream, then its inner offsets in turn."""
    if w not in (4, 8) or not len(starts) == len(sizes) == len(counts):
        return kc.BAD_ARGS, (-1, -1, -1), None
    if n_offsets < 1:
        return kf.OUTPUT_TOO_SMALL, (-1, -1, -1), None
    out, offs, j = bytearray(), [0], 0

    def rd(p):
        return int.from_bytes(src[p:p + w], "little")

    for c, (s, size, cnt) in enumerate(zip(starts, sizes, counts)):
        if s < 0 or size < 0 or cnt < 0 or s > len(src) or size > len(src) - s \
                or cnt >= size // w:
            return kc.BAD_CHUNK, (c, s, j), None
        first, last = rd(s), rd(s + cnt * w)
        if first < (cnt + 1) * w or first > size or last < first or last > size:
            return kc.BAD_CHUNK_OFFSETS, (c, s, j), None
        if cnt >= n_offsets - j:
            return kf.OUTPUT_TOO_SMALL, (c, s, j), None
        codes = src[s + first:s + last]
        base = len(out)
        if switch == 0:
            if len(codes) > cap - base:
                return kf.OUTPUT_TOO_SMALL, (c, s, j), None
            out += codes
            at = list(range(base, base + len(codes) + 1))
        else:
            at = [None] * (len(codes) + 1)
            i = 0
            while i < len(codes):
                at[i] = len(out)
                code = codes[i]
                if code == 255:
                    if i + 1 >= len(codes):
                        return kf.ESCAPE_AT_END, (c, s + first + i, -1), None
                    piece = codes[i + 1:i + 2]
                    at[i + 1] = -1
                    step = 2
                elif code < len(symbols):
                    piece, step = symbols[code], 1
                else:
                    return kf.BAD_CODE, (c, s + first + i, -1), None
                if len(out) + len(piece) > cap:
                    return kf.OUTPUT_TOO_SMALL, (c, s + first + i, -1), None
                out += piece
                i += step
            at[len(codes)] = len(out)
        prev = first
        for k in range(1, cnt):
            o = rd(s + k * w)
            if o >= 1 << 63:
                o -= 1 << 64  # the kernel reads u64 offsets as int64
            if o < prev or o > last:
                return kc.BAD_CHUNK_OFFSETS, (c, s + k * w, j + k), None
            if at[o - first] < 0:
                return kf.ESCAPE_AT_END, (c, s + o - 1, j + k - 1), None
            offs.append(at[o - first])
            prev = o
        if cnt:
            offs.append(len(out))
        j += cnt
    return len(out), offs, bytes(out)


def run(case, as_input, guarded, cap=None, n_offsets=None):
    src, starts, sizes, counts, w, symbols, switch = case
    n = min(sum(c for c in counts if c > 0), 4096)  # (corrupt counts: room for some)
    n_offsets = n + 1 if n_offsets is None else n_offsets
    cap = kc.output_bound(len(src), np.array(sizes, np.int64)) if cap is None else cap
    want, want_offs, want_data = ref_decompress_chunks(src, starts, sizes, counts, w, symbols,
                                                       switch, cap, n_offsets)
    oo = guarded(n_offsets, np.int64, UNSET)
    od = guarded(cap, np.uint8, FILL)
    err = guarded(3, np.int64, UNSET)
    got = kc.decompress_chunks(
        as_input(np.frombuffer(src, np.uint8).copy()), as_input(np.array(starts, np.int64)),
        as_input(np.array(sizes, np.int64)), as_input(np.array(counts, np.int64)), w,
        *(as_input(a) for a in table_arrays(symbols, switch)), oo.out, od.out, err.out)
    assert oo.intact() and od.intact() and err.intact()
    assert got == want
    if want < 0:
        assert tuple(err.out.tolist()) == want_offs
        return None
    assert err.out.tolist() == [UNSET] * 3
    assert oo.out[:len(want_offs)].tolist() == want_offs
    assert od.out[:got].tobytes() == want_data
    return [want_data[a:b] for a, b in zip(want_offs[:-1], want_offs[1:])]


# -- strategies -----------------------------------------------------------------------------

symbol_lists = st.one_of(
    st.lists(st.binary(min_size=1, max_size=8), max_size=12),
    st.lists(st.sampled_from([b"a", b"ab", b"abc", b"\0", b"\xff", b"abcdefgh", b"http"]),
             min_size=1, max_size=12),
    st.integers(0, 2**32 - 1).map(lambda seed: [
        np.random.default_rng(seed).bytes(int(k)) for k in
        np.random.default_rng(seed + 1).integers(1, 9, 255)]))


@st.composite
def valid_cases(draw):
    """Chunks of valid code streams (symbol codes and escapes of any byte)."""
    symbols = draw(symbol_lists)
    n = len(symbols)
    token = st.one_of(st.integers(0, 255).map(lambda b: bytes([255, b])),
                      *([st.integers(0, n - 1).map(lambda c: bytes([c]))] if n else []))
    value = st.lists(token, max_size=10).map(b"".join)
    chunks = draw(st.lists(st.lists(value, max_size=9), max_size=6))
    w = draw(st.sampled_from([4, 8]))
    gaps = draw(st.lists(st.integers(0, 9), max_size=3))
    order = draw(st.permutations(range(len(chunks))))
    switch = draw(st.sampled_from([1, 1, 1, 0]))
    return (*layout(chunks, w, gaps, order), w, symbols, switch)


@st.composite
def corrupted_cases(draw):
    """A valid case with bytes of ``src`` overwritten, or a start, size or count moved,
    or stray codes (past the table, escapes at a value's end)."""
    src, starts, sizes, counts, w, symbols, switch = draw(valid_cases())
    src = bytearray(src)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["byte", "start", "size", "count"]))
        if kind == "byte" and src:
            src[draw(st.integers(0, len(src) - 1))] = draw(st.sampled_from([0, 1, 4, 8, 254, 255]))
        elif kind != "byte" and starts:
            arr = {"start": starts, "size": sizes, "count": counts}[kind]
            c = draw(st.integers(0, len(arr) - 1))
            arr[c] = draw(st.sampled_from([arr[c] - 1, arr[c] + 1, arr[c] + 9, -1, 2**62]))
    return bytes(src), starts, sizes, counts, w, symbols, switch


# -- properties -----------------------------------------------------------------------------

@given(valid_cases())
def test_matches_reference(as_input, guarded, case):
    assert run(case, as_input, guarded) is not None


@given(corrupted_cases())
def test_corrupted_chunks_match_reference(as_input, guarded, case):
    run(case, as_input, guarded)


@settings(max_examples=60)
@given(valid_cases(), st.data())
def test_small_outputs(as_input, guarded, case, data):
    """Any output capacity: the reference's verdict, nothing written outside."""
    full = ref_decompress_chunks(*case[:5], case[5], case[6], 1 << 30, 1 << 30)[0]
    cap = data.draw(st.integers(0, max(full, 0) + 9))
    n = sum(case[3])
    n_offsets = data.draw(st.integers(0, n + 2))
    run(case, as_input, guarded, cap=cap, n_offsets=n_offsets)


@given(st.lists(st.binary(max_size=40), max_size=40), st.sampled_from([4, 8]),
       st.integers(1, 7))
def test_round_trip_through_compress(as_input, guarded, values, w, per_chunk):
    """Values compressed with a table built from them, chunked, decode to themselves."""
    raw = np.frombuffer(b"".join(values) or b"\0", np.uint8)[:sum(map(len, values))]
    offs = np.cumsum([0] + [len(v) for v in values]).astype(np.int64)
    block = Variable(offs, raw.copy(), len(values), 32)
    codec = FsstCodec(block)
    codes = [codec.codes.data[a:b].tobytes() for a, b in
             zip(codec.codes.offsets[:-1], codec.codes.offsets[1:])]
    chunks = [codes[i:i + per_chunk] for i in range(0, len(codes), per_chunk)]
    symbols = [codec.symbols[c, :codec.lens[c]].tobytes()
               for c in range(int(codec.info[kf.N_SYMBOLS]))]
    case = (*layout(chunks, w, [3], range(len(chunks))), w, symbols,
            int(codec.info[kf.SWITCH]))
    assert run(case, as_input, guarded) == values


def test_docstring_example():
    case = (*layout([[b"\x00\x01", b"", b"\x01\xff!"]], 4, [], [0]), 4, [b"ab", b"c"], 1)
    assert case[0][:16] == bytes.fromhex("10000000120000001200000015000000")
    assert run(case, lambda a: a, _Plain) == [b"abc", b"", b"c!"]


class _Plain:
    def __init__(self, shape, dtype, fill=0):
        self.out = np.full(shape, fill, dtype)

    def intact(self):
        return True


def test_statuses():
    good = layout([[b"\x00", b"\x01"]], 4, [], [0])
    table = table_arrays([b"ab", b"c"])

    def status(src=good[0], starts=good[1], sizes=good[2], counts=good[3], w=4,
               tab=table, n_off=3, cap=64):
        err = np.zeros(3, np.int64)
        return kc.decompress_chunks(np.frombuffer(src, np.uint8), np.array(starts, np.int64),
                                    np.array(sizes, np.int64), np.array(counts, np.int64),
                                    w, *tab, np.zeros(n_off, np.int64),
                                    np.zeros(cap, np.uint8), err)

    assert status() == 3
    assert status(w=2) == kc.BAD_ARGS
    assert status(sizes=[16, 1]) == kc.BAD_ARGS
    assert status(starts=[1]) == kc.BAD_CHUNK          # past the end of the data
    assert status(counts=[4]) == kc.BAD_CHUNK          # offsets larger than the chunk
    assert status(counts=[-1]) == kc.BAD_CHUNK
    assert status(sizes=[2**62]) == kc.BAD_CHUNK
    assert status(src=b"\x00" + good[0][1:]) == kc.BAD_CHUNK_OFFSETS  # first < table
    assert status(src=good[0][:4] + b"\x14" + good[0][5:]) == kc.BAD_CHUNK_OFFSETS
    assert status(n_off=2) == kf.OUTPUT_TOO_SMALL
    assert status(cap=2) == kf.OUTPUT_TOO_SMALL
    assert status(tab=table_arrays([b"ab"])) == kf.BAD_CODE
    bad = table_arrays([b"ab", b"c"])
    bad[1][0] = 9
    assert status(tab=bad) == kf.BAD_SYMBOL
    esc = layout([[b"\xff", b"a"]], 4, [], [0])     # the escape takes the next value's byte
    assert status(*esc) == kf.ESCAPE_AT_END
    assert status(*layout([[b"\x00\xff"]], 4, [], [0])) == kf.ESCAPE_AT_END


# -- through the decoder --------------------------------------------------------------------

def _urls(n, seed=0):
    rng = np.random.default_rng(seed)
    return [f"https://host{rng.integers(50)}.example.com/{rng.integers(10**9)}".encode()
            for _ in range(n)]


def test_decoder_round_trip_and_corrupt_offsets():
    values = _urls(3000)
    offs = np.cumsum([0] + [len(v) for v in values]).astype(np.int64)
    block = Variable(offs, np.frombuffer(b"".join(values), np.uint8).copy(), len(values), 32)
    codec = FsstCodec(block)
    bounds = codec.plan(block)
    src, starts, sizes, desc = codec.encode_chunks(block, bounds)
    where = "file f.lance, column url, page 0"
    dec = FsstValues(desc, where)
    counts = np.diff(bounds)
    got = dec.decode(np.frombuffer(src.tobytes(), np.uint8), starts, sizes, counts, where)
    assert got.offsets.tolist() == offs.tolist()
    assert got.data.tobytes() == b"".join(values)
    bad = src.copy()
    bad[int(starts[1, 0]) + 4:int(starts[1, 0]) + 8] = 0xFF   # chunk 1's second offset
    with pytest.raises(CorruptFileError, match=r"column url, page 0, chunk 1, value .*"
                                               r"offsets decrease or point outside"):
        dec.decode(bad, starts, sizes, counts, where)


@pytest.mark.parametrize("writer", ["pylance", "lancenb"])
def test_strings_scan_matches_pylance(tmp_path, writer):
    """Pages FSST chooses (>= 32 KiB of URLs) written by either library read alike."""
    lance = pytest.importorskip("lance")
    import lancenb

    table = pa.table({"url": pa.array([v.decode() for v in _urls(20000, 1)]),
                      "n": pa.array(np.arange(20000))})
    uri = str(tmp_path / "t.lance")
    (lance if writer == "pylance" else lancenb).write_dataset(table, uri,
                                                              max_rows_per_file=7000)
    ours = lancenb.dataset(uri).to_table()
    theirs = lance.dataset(uri).to_table()
    assert ours.equals(theirs) and ours.equals(table)
