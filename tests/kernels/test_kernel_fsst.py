"""FSST kernels (``kernels/fsst/fsst.py``) against pure-Python references written from the
module docstring and FORMAT_FACTS §3.5, and against pylance's own FSST pages.

The table blob: u64 LE ``0x46535354 << 32 | switch << 24 | suffix_lim << 16 |
terminator << 8 | n``, ``n`` u64 symbols, ``n`` u8 lengths, zero fill to 2312 bytes.
A compressed value is its codes; code 255 escapes the next byte.
"""

import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels import miniblock as km
from lancenb.kernels import variable as kv
from lancenb.kernels.fsst import fsst as kf
from lancenb.kernels.fsst import fsst_build as kfb

FILL = 0x5C   # initial output bytes, so untouched bytes are visible
UNSET = -7    # initial value of int64 outputs
MAGIC = 0x46535354


def _u8(raw: bytes) -> np.ndarray:
    return np.frombuffer(bytearray(raw), np.uint8)


def _offsets(values, start=0):
    out = [start]
    for v in values:
        out.append(out[-1] + len(v))
    return out


# -- references ---------------------------------------------------------------------------

def ref_serialize(symbols, switch=1, suffix_lim=0, terminator=0) -> bytes:
    n = len(symbols)
    head = struct.pack("<Q", MAGIC << 32 | switch << 24 | suffix_lim << 16 | terminator << 8 | n)
    body = b"".join(s.ljust(8, b"\0") for s in symbols) + bytes(len(s) for s in symbols)
    return (head + body).ljust(kf.TABLE_BYTES, b"\0")


def ref_parse(blob: bytes):
    """``(OK, (symbols, switch, suffix_lim, terminator))`` or ``(status, None)``."""
    if len(blob) != kf.TABLE_BYTES:
        return kf.BAD_TABLE_SIZE, None
    (head,) = struct.unpack_from("<Q", blob)
    if head >> 32 != MAGIC:
        return kf.BAD_MAGIC, None
    if (head >> 24) & 0xFF > 1:
        return kf.BAD_SWITCH, None
    n = head & 0xFF
    lens = blob[8 + 8 * n:8 + 9 * n]
    if any(not 1 <= ln <= 8 for ln in lens):
        return kf.BAD_SYMBOL, None
    symbols = [blob[8 + 8 * c:8 + 8 * c + lens[c]] for c in range(n)]
    return kf.OK, (symbols, (head >> 24) & 0xFF, (head >> 16) & 0xFF, (head >> 8) & 0xFF)


def ref_compress_value(value: bytes, symbols) -> bytes:
    """Greedy: the longest symbol of two or more bytes (lowest code among equals), else
    the lowest one-byte symbol, else an escape."""
    out, pos = bytearray(), 0
    while pos < len(value):
        multi = [(len(s), -c) for c, s in enumerate(symbols)
                 if len(s) >= 2 and value.startswith(s, pos)]
        if multi:
            ln, neg = max(multi)
            out.append(-neg)
            pos += ln
            continue
        single = [c for c, s in enumerate(symbols) if s == value[pos:pos + 1]]
        out += bytes([single[0]]) if single else bytes([255, value[pos]])
        pos += 1
    return bytes(out)


def ref_decompress(offsets, codes: bytes, symbols, switch=1, cap=None):
    """``(total, offsets from 0, bytes)`` or ``(status, (value, position), None)``, in
    the order the kernels check: offsets, then each code in turn (``cap`` bounds the
    output, as :func:`kf.decompress` does)."""
    if not offsets:
        return kf.BAD_OFFSETS, (0, 0), None
    prev = 0
    for k, o in enumerate(offsets):
        if o < prev or o > len(codes):
            return kf.BAD_OFFSETS, (k, o), None
        prev = o
    if switch == 0:
        raw = codes[offsets[0]:offsets[-1]]
        if cap is not None and len(raw) > cap:
            return kf.OUTPUT_TOO_SMALL, None, None
        return len(raw), [o - offsets[0] for o in offsets], raw
    out, out_offsets = bytearray(), [0]
    for s in range(len(offsets) - 1):
        i, end = offsets[s], offsets[s + 1]
        while i < end:
            c = codes[i]
            if c == 255:
                if i + 1 >= end:
                    return kf.ESCAPE_AT_END, (s, i), None
                piece = codes[i + 1:i + 2]
                i += 2
            elif c < len(symbols):
                piece = symbols[c]
                i += 1
            else:
                return kf.BAD_CODE, (s, i), None
            if cap is not None and len(out) + len(piece) > cap:
                return kf.OUTPUT_TOO_SMALL, None, None
            out += piece
        out_offsets.append(len(out))
    return len(out), out_offsets, bytes(out)


# -- kernel plumbing ----------------------------------------------------------------------

def table_arrays(symbols, switch=1, suffix_lim=0, terminator=0):
    sym, lens, info = kf.new_table()
    for c, s in enumerate(symbols):
        sym[c, :len(s)] = list(s)
        lens[c] = len(s)
    info[:] = [switch, suffix_lim, terminator, len(symbols)]
    return sym, lens, info


def _table_in(table, as_input):
    return tuple(as_input(a) for a in table)


def run_compress(values, table, as_input, guarded, head=b"", tail=b""):
    """Kernel compression of ``values`` (sliced out of a larger buffer) → code values."""
    offsets = _offsets(values, len(head))
    raw = head + b"".join(values) + tail
    n_out = kf.compress_bound(np.array(offsets))
    oo = guarded(len(values) + 1, np.int64, UNSET)
    od = guarded(n_out, np.uint8, FILL)
    size = kf.compress(as_input(np.array(offsets, np.int64)), as_input(_u8(raw)),
                       *_table_in(table, as_input), oo.out, od.out)
    assert oo.intact() and od.intact()
    assert size >= 0
    assert oo.out[-1] == size and oo.out[0] == 0
    codes = od.out[:size].tobytes()
    return [codes[a:b] for a, b in zip(oo.out[:-1], oo.out[1:])]


def run_decompress(offsets, codes: bytes, table, symbols, switch, as_input, guarded):
    """decompress_size, then decompress into exactly that, both checked against the
    reference; returns the decoded values or the status."""
    o_in = as_input(np.array(offsets, np.int64).reshape(-1))
    c_in = as_input(_u8(codes))
    t_in = _table_in(table, as_input)
    err = guarded(2, np.int64, UNSET)
    total = kf.decompress_size(o_in, c_in, *t_in, err.out)
    want, want_offsets, want_data = ref_decompress(offsets, codes, symbols, switch)
    assert total == want
    assert err.intact()
    n_off = max(len(offsets), 1)
    if want < 0:
        assert tuple(err.out.tolist()) == want_offsets
        # decompress reaches the same verdict on its own, with a generous output
        oo = guarded(n_off, np.int64, UNSET)
        od = guarded(8 * len(codes) + 8, np.uint8, FILL)
        assert kf.decompress(o_in, c_in, *t_in, oo.out, od.out) == want
        assert oo.intact() and od.intact()
        return want
    assert err.out.tolist() == [UNSET, UNSET]
    oo = guarded(n_off, np.int64, UNSET)
    od = guarded(total, np.uint8, FILL)
    assert kf.decompress(o_in, c_in, *t_in, oo.out, od.out) == total
    assert oo.intact() and od.intact()
    assert oo.out.tolist() == want_offsets
    assert od.out.tobytes() == want_data
    return [want_data[a:b] for a, b in zip(want_offsets[:-1], want_offsets[1:])]


def build(values):
    offsets = np.array(_offsets(values), np.int64)
    data = _u8(b"".join(values))
    table = kf.new_table()
    n = kfb.build_table(offsets, data, *table)
    assert n == table[2][kf.N_SYMBOLS] and 0 <= n <= 255
    return table


def symbols_of(table):
    sym, lens, info = table
    return [sym[c, :lens[c]].tobytes() for c in range(int(info[kf.N_SYMBOLS]))]


# -- strategies ---------------------------------------------------------------------------

def _full_table(seed):
    """250..255 random symbols over a small alphabet (so they overlap and match), drawn
    from a seed: far cheaper for hypothesis than 255 separate draws."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"ab\0\xffcd", np.uint8)
    return [rng.choice(alphabet, int(rng.integers(1, 9))).tobytes()
            for _ in range(int(rng.integers(250, 256)))]


symbol = st.binary(min_size=1, max_size=8)
symbol_lists = st.one_of(st.lists(symbol, max_size=12),
                         st.lists(st.sampled_from([b"a", b"ab", b"abc", b"b", b"\0", b"\0\0",
                                                   b"\xff", b"ab\0", b"abcdefgh"]), max_size=12),
                         st.integers(0, 2**32 - 1).map(_full_table))
value_lists = st.lists(st.one_of(st.binary(max_size=30),
                                 st.text(max_size=20).map(lambda t: t.encode()),
                                 st.sampled_from([b"abcabc", b"ab\0ab", b"\xff\xfe", b"http://a.b"])),
                       max_size=25)


@st.composite
def code_streams(draw, symbols):
    """Valid codes for ``symbols``: per value, symbol codes and escapes (of any byte)."""
    n = len(symbols)
    tokens = st.one_of(st.integers(0, 255).map(lambda b: bytes([255, b])),
                       *([st.integers(0, n - 1).map(lambda c: bytes([c]))] if n else []))
    return [b"".join(draw(st.lists(tokens, max_size=12))) for _ in range(draw(st.integers(0, 12)))]


# -- serialisation ------------------------------------------------------------------------

def test_docstring_example():
    table = table_arrays([b"ab", b"c"])
    blob = kf.serialize_table(*table)
    assert blob[:8].tobytes() == bytes.fromhex("0200000154535346")  # "TSSF" on disk
    assert blob[8:24].tobytes() == b"ab" + bytes(6) + b"c" + bytes(7)
    assert blob[24:26].tobytes() == b"\x02\x01" and not blob[26:].any()
    assert blob.tobytes() == ref_serialize([b"ab", b"c"])
    oo, od = np.empty(2, np.int64), np.empty(12, np.uint8)
    size = kf.compress(np.array([0, 6], np.int64), _u8(b"abcab!"), *table, oo, od)
    assert od[:size].tobytes() == bytes.fromhex("000100ff21")
    assert kf.compress_bound(np.array([0, 6])) == 12


@given(symbol_lists, st.integers(0, 1), st.integers(0, 255), st.integers(0, 255))
def test_serialize_parse_round_trip(as_input, guarded, symbols, switch, suffix_lim, term):
    table = table_arrays(symbols, switch, suffix_lim, term)
    blob = kf.serialize_table(*_table_in(table, as_input))
    assert blob.tobytes() == ref_serialize(symbols, switch, suffix_lim, term)
    sym, lens, info = (guarded(s, d, UNSET if d == np.int64 else FILL)
                       for s, d in (((256, 8), np.uint8), (256, np.uint8), (4, np.int64)))
    assert kf.parse_table(as_input(blob), sym.out, lens.out, info.out) == kf.OK
    assert sym.intact() and lens.intact() and info.intact()
    assert info.out.tolist() == [switch, suffix_lim, term, len(symbols)]
    assert symbols_of((sym.out, lens.out, info.out)) == symbols
    assert not lens.out[len(symbols):].any() and not sym.out[len(symbols):].any()


@st.composite
def mutated_blobs(draw):
    symbols = draw(symbol_lists)
    blob = bytearray(ref_serialize(symbols, draw(st.integers(0, 1))))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["header", "length", "any", "resize"]))
        if kind == "header" and len(blob) >= 8:
            blob[draw(st.integers(0, 7))] = draw(st.integers(0, 255))
        elif kind == "length" and symbols and len(blob) == kf.TABLE_BYTES:
            n = blob[0]
            blob[8 + 8 * n + draw(st.integers(0, max(n - 1, 0)))] = draw(st.integers(0, 12))
        elif kind == "any" and blob:
            blob[draw(st.integers(0, len(blob) - 1))] = draw(st.integers(0, 255))
        elif kind == "resize":
            size = draw(st.sampled_from([0, 7, 8, kf.TABLE_BYTES - 1, kf.TABLE_BYTES + 1]))
            blob = blob[:size].ljust(size, b"\0")
    return bytes(blob)


@given(mutated_blobs())
def test_parse_table_matches_reference(as_input, blob):
    sym, lens, info = (np.full((256, 8), FILL, np.uint8), np.full(256, FILL, np.uint8),
                       np.full(4, UNSET, np.int64))
    status = kf.parse_table(as_input(_u8(blob)), sym, lens, info)
    want, parsed = ref_parse(blob)
    assert status == want
    if want < 0:  # outputs untouched
        assert (sym == FILL).all() and (lens == FILL).all() and (info == UNSET).all()
        return
    symbols, switch, suffix_lim, term = parsed
    assert info.tolist() == [switch, suffix_lim, term, len(symbols)]
    assert symbols_of((sym, lens, info)) == symbols


def test_parse_table_statuses():
    good = ref_serialize([b"ab", b"c"])
    out = kf.new_table()
    assert kf.parse_table(_u8(good), *out) == kf.OK
    assert kf.parse_table(_u8(good[:-1]), *out) == kf.BAD_TABLE_SIZE
    assert kf.parse_table(_u8(good + b"\0"), *out) == kf.BAD_TABLE_SIZE
    assert kf.parse_table(_u8(good[:7] + b"G" + good[8:]), *out) == kf.BAD_MAGIC
    assert kf.parse_table(_u8(good[:3] + b"\x02" + good[4:]), *out) == kf.BAD_SWITCH
    assert kf.parse_table(_u8(good[:24] + b"\x09" + good[25:]), *out) == kf.BAD_SYMBOL
    assert kf.parse_table(_u8(good[:25] + b"\x00" + good[26:]), *out) == kf.BAD_SYMBOL
    # bytes past a symbol's length and past the lengths are ignored, as the reference does
    sloppy = bytearray(good)
    sloppy[8 + 3] = 0x77
    sloppy[2000] = 1
    assert kf.parse_table(_u8(bytes(sloppy)), *out) == kf.OK
    assert symbols_of(out) == [b"ab", b"c"]
    # a raw (switch 0) table as pylance writes it below 32 KiB: the magic and nothing else
    raw = struct.pack("<Q", MAGIC << 32).ljust(kf.TABLE_BYTES, b"\0")
    assert kf.parse_table(_u8(raw), *out) == kf.OK
    assert out[2].tolist() == [0, 0, 0, 0]


def test_write_table_rejects_malformed_arrays():
    def status(mutate):
        sym, lens, info = table_arrays([b"ab", b"c"])
        args = mutate(sym, lens, info) or (sym, lens, info)
        out = np.full(kf.TABLE_BYTES, FILL, np.uint8)
        st_ = kf.write_table(*args, out)
        if st_ < 0:
            assert (out == FILL).all()
        return st_
    assert status(lambda s, ln, i: None) == kf.OK
    assert status(lambda s, ln, i: i.__setitem__(kf.SWITCH, 2)) == kf.BAD_SWITCH
    assert status(lambda s, ln, i: i.__setitem__(kf.N_SYMBOLS, 256)) == kf.BAD_SYMBOL
    assert status(lambda s, ln, i: i.__setitem__(kf.N_SYMBOLS, -1)) == kf.BAD_SYMBOL
    assert status(lambda s, ln, i: i.__setitem__(kf.N_SYMBOLS, 3)) == kf.BAD_SYMBOL  # len 0
    assert status(lambda s, ln, i: ln.__setitem__(1, 9)) == kf.BAD_SYMBOL
    assert status(lambda s, ln, i: i.__setitem__(kf.SUFFIX_LIM, 256)) == kf.BAD_SYMBOL
    assert status(lambda s, ln, i: i.__setitem__(kf.TERMINATOR, -1)) == kf.BAD_SYMBOL
    assert status(lambda s, ln, i: (s, ln[:255].copy(), i)) == kf.BAD_SYMBOL
    assert status(lambda s, ln, i: (s[:, :7].copy(), ln, i)) == kf.BAD_SYMBOL
    with pytest.raises(ValueError):
        kf.serialize_table(*table_arrays([b""]))
    out = np.zeros(kf.TABLE_BYTES - 1, np.uint8)
    assert kf.write_table(*table_arrays([b"a"]), out) == kf.BAD_TABLE_SIZE


# -- compression --------------------------------------------------------------------------

@given(value_lists, symbol_lists, st.binary(max_size=5), st.binary(max_size=5))
def test_compress_matches_reference(as_input, guarded, values, symbols, head, tail):
    table = table_arrays(symbols)
    got = run_compress(values, table, as_input, guarded, head, tail)
    assert got == [ref_compress_value(v, symbols) for v in values]
    codes = b"".join(got)
    decoded = run_decompress(_offsets(got), codes, table, symbols, 1, as_input, guarded)
    assert decoded == values


@st.composite
def crowded_tables(draw):
    """Tables whose symbols of three or more bytes crowd a few two-byte prefixes (more
    than ``SCAN_GROUP`` per group: the compressor looks those up by length), with equal
    symbols under different codes, and values made of those symbols, their prefixes
    (partial matches, also at a value's end) and stray bytes."""
    heads = draw(st.lists(st.sampled_from([b"ho", b"ab", b"\0\0", b"\xff\x01"]),
                          min_size=1, max_size=3, unique=True))
    tails = st.binary(min_size=1, max_size=6)
    symbols = draw(st.lists(st.tuples(st.sampled_from(heads), tails).map(lambda t: t[0] + t[1]),
                            min_size=3 * kf.SCAN_GROUP + 1, max_size=120))
    symbols += draw(st.lists(st.sampled_from(symbols), max_size=5))  # equal symbols
    symbols += draw(st.lists(st.binary(min_size=1, max_size=2), max_size=10))
    symbols = symbols[:255]
    pieces = st.one_of(st.sampled_from(symbols), st.sampled_from(symbols).map(lambda x: x[:-1]),
                       st.binary(max_size=3))
    values = draw(st.lists(st.lists(pieces, max_size=8).map(b"".join), max_size=20))
    return symbols, values


@given(crowded_tables(), st.binary(max_size=5))
def test_compress_crowded_prefixes_matches_reference(as_input, guarded, case, tail):
    symbols, values = case
    table = table_arrays(symbols)
    got = run_compress(values, table, as_input, guarded, tail=tail)
    assert got == [ref_compress_value(v, symbols) for v in values]
    assert run_decompress(_offsets(got), b"".join(got), table, symbols, 1, as_input,
                          guarded) == values


def test_compress_hosts_of_one_prefix():
    # 50 eight-byte symbols that differ only in bytes 5..6, as FSST builds for URLs of
    # 50 hosts: each URL is one lookup, not a scan of 50 symbols; same codes either way
    symbols = [f"host{i}.ex".encode()[:8] for i in range(50)] + [b"://", b"ht", b"tp",
                                                                  b"s:", b"/", b"."]
    values = [f"https://host{i % 53}.example.com/{i}".encode() for i in range(300)]
    table = table_arrays(symbols)
    offsets = np.array(_offsets(values), np.int64)
    oo = np.empty(len(values) + 1, np.int64)
    od = np.empty(kf.compress_bound(offsets), np.uint8)
    size = kf.compress(offsets, _u8(b"".join(values)), *table, oo, od)
    codes = od[:size].tobytes()
    got = [codes[a:b] for a, b in zip(oo[:-1], oo[1:])]
    assert got == [ref_compress_value(v, symbols) for v in values]
    # "ht" "tp" "s:" "/" "/" then host12.e in one code
    assert got[12][:6] == bytes([51, 52, 53, 54, 54, 12])


@settings(max_examples=30)
@given(value_lists)
def test_build_compress_decompress_round_trip(as_input, guarded, values):
    table = build(values)
    symbols = symbols_of(table)
    got = run_compress(values, table, as_input, guarded)
    assert got == [ref_compress_value(v, symbols) for v in values]
    assert run_decompress(_offsets(got), b"".join(got), table, symbols, 1, as_input,
                          guarded) == values


@given(value_lists, st.binary(max_size=5))
def test_switch_zero_stores_raw(as_input, guarded, values, head):
    table = table_arrays([b"ab"], switch=0)
    got = run_compress(values, table, as_input, guarded, head)
    assert got == values
    assert run_decompress(_offsets(values, len(head)), head + b"".join(values), table, [],
                          0, as_input, guarded) == values


def test_compress_statuses():
    table = table_arrays([b"ab", b"c"])
    data = _u8(b"abcab!")
    ok = np.array([0, 3, 6], np.int64)

    def status(offsets=ok, out_offsets=3, out_data=12, tbl=table):
        oo = np.full(out_offsets, UNSET, np.int64)
        od = np.full(out_data, FILL, np.uint8)
        return kf.compress(np.array(offsets, np.int64), data, *tbl, oo, od)
    assert status() == 5
    assert status(offsets=[0, 4, 3]) == kf.BAD_OFFSETS
    assert status(offsets=[-1, 3]) == kf.BAD_OFFSETS
    assert status(offsets=[0, 7]) == kf.BAD_OFFSETS
    assert status(offsets=np.zeros(0, np.int64)) == kf.BAD_OFFSETS
    assert status(out_offsets=2) == kf.OUTPUT_TOO_SMALL
    assert status(out_data=11) == kf.OUTPUT_TOO_SMALL
    assert status(offsets=[2, 3], out_offsets=2, out_data=2) == 1   # bound of one byte
    assert status(tbl=table_arrays([b"ab", b""])) == kf.BAD_SYMBOL
    assert status(tbl=table_arrays([b"ab"], switch=3)) == kf.BAD_SWITCH
    assert status(tbl=table_arrays([b"ab"], switch=0), out_data=6) == 6
    assert status(tbl=table_arrays([b"ab"], switch=0), out_data=5) == kf.OUTPUT_TOO_SMALL
    assert status(offsets=[4], out_offsets=1, out_data=0) == 0       # no values


# -- decompression ------------------------------------------------------------------------

@given(st.data(), symbol_lists, st.binary(max_size=4))
def test_decompress_matches_reference(as_input, guarded, data, symbols, head):
    """Random tables and codes (escapes of any byte, 255 included)."""
    values = data.draw(code_streams(symbols))
    decoded = run_decompress(_offsets(values, len(head)), head + b"".join(values),
                             table_arrays(symbols), symbols, 1, as_input, guarded)
    assert decoded == [ref_decompress(_offsets([v]), v, symbols)[2] for v in values]


@st.composite
def corrupted_streams(draw):
    symbols = draw(symbol_lists)
    values = draw(code_streams(symbols))
    offsets = _offsets(values)
    codes = bytearray(b"".join(values))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["byte", "escape_end", "offset", "truncate", "empty"]))
        if kind == "byte" and codes:
            codes[draw(st.integers(0, len(codes) - 1))] = draw(st.integers(0, 255))
        elif kind == "escape_end":
            k = draw(st.integers(1, len(offsets) - 1)) if len(offsets) > 1 else None
            if k is not None:  # a value that ends in an escape
                codes[offsets[k]:offsets[k]] = b"\xff"
                offsets = offsets[:k] + [o + 1 for o in offsets[k:]]
        elif kind == "offset" and offsets:
            offsets[draw(st.integers(0, len(offsets) - 1))] = draw(
                st.integers(-2, len(codes) + 2))
        elif kind == "truncate":
            del codes[draw(st.integers(0, len(codes))):]
        elif kind == "empty":
            offsets = []
    return symbols, offsets, bytes(codes)


@given(corrupted_streams())
def test_decompress_corrupted_streams(as_input, guarded, case):
    symbols, offsets, codes = case
    run_decompress(offsets, codes, table_arrays(symbols), symbols, 1, as_input, guarded)


@given(st.data(), symbol_lists)
def test_decompress_output_capacity(as_input, guarded, data, symbols):
    """Any capacity: enough decodes everything, too little is OUTPUT_TOO_SMALL at the
    reference's point, and nothing is written outside the output."""
    values = data.draw(code_streams(symbols))
    offsets, codes = _offsets(values), b"".join(values)
    total = ref_decompress(offsets, codes, symbols)[0]
    cap = data.draw(st.integers(0, total + 12))
    oo = guarded(len(offsets), np.int64, UNSET)
    od = guarded(cap, np.uint8, FILL)
    got = kf.decompress(as_input(np.array(offsets, np.int64)), as_input(_u8(codes)),
                        *_table_in(table_arrays(symbols), as_input), oo.out, od.out)
    want, want_offsets, want_data = ref_decompress(offsets, codes, symbols, cap=cap)
    assert got == want
    assert oo.intact() and od.intact()
    if want >= 0:
        assert oo.out.tolist() == want_offsets and od.out[:want].tobytes() == want_data


def test_decompress_statuses():
    table = table_arrays([b"ab", b"c"])

    def run(offsets, codes):
        err = np.full(2, UNSET, np.int64)
        got = kf.decompress_size(np.array(offsets, np.int64), _u8(codes), *table, err)
        return got, err.tolist()
    assert run([0, 2, 5], b"\x00\x01\x00\xff!") == (6, [UNSET, UNSET])
    assert run([0, 2, 5], b"\x00\x02\x00\xff!") == (kf.BAD_CODE, [0, 1])
    assert run([0, 2, 4], b"\x00\x01\x00\xff!") == (kf.ESCAPE_AT_END, [1, 3])
    assert run([0, 2, 5], b"\x00\x01\x00\xff") == (kf.BAD_OFFSETS, [2, 5])
    assert run([0, 3, 2], b"\x00\x01\x00") == (kf.BAD_OFFSETS, [2, 2])
    assert run([0, 0, 0, 1, 1], b"\xff") == (kf.ESCAPE_AT_END, [2, 0])  # empty values
    assert run([], b"") == (kf.BAD_OFFSETS, [0, 0])
    assert run([3], b"abc") == (0, [UNSET, UNSET])
    bad = table_arrays([b"ab", b"c"])
    bad[1][0] = 0
    err = np.full(2, UNSET, np.int64)
    assert kf.decompress_size(np.array([0]), _u8(b""), *bad, err) == kf.BAD_SYMBOL
    assert err.tolist() == [UNSET, UNSET]
    # one pass into the 8x bound, the way a reader can skip decompress_size
    codes = bytes(range(2)) * 50
    out, oo = np.empty(8 * len(codes), np.uint8), np.empty(2, np.int64)
    assert kf.decompress(np.array([0, 100]), _u8(codes), *table, oo, out) == 150
    assert out[:150].tobytes() == b"abc" * 50


# -- table construction -------------------------------------------------------------------

def test_build_table_layout_and_ratio():
    rng = np.random.default_rng(7)
    words = [b"lance", b"numba", b"format", b"https://", b".com/", b"the ", b"data"]
    values = [b"".join(words[i] for i in rng.integers(0, len(words), 6)) for _ in range(400)]
    table = build(values)
    sym, lens, info = table
    n = int(info[kf.N_SYMBOLS])
    assert info[kf.SWITCH] == 1 and n > 20
    ln = lens[:n].tolist()
    # codes grouped as the reference orders them: 2-byte (suffix_lim of them first), 3..8, 1
    order = [2 if x == 2 else (9 if x == 1 else x) for x in ln]
    assert order == sorted(order)
    lim = int(info[kf.SUFFIX_LIM])
    symbols = symbols_of(table)
    longer = [s for s in symbols if len(s) > 2]
    for c, s in enumerate(symbols):
        if len(s) == 2:
            assert (c < lim) == any(t[:2] == s for t in longer)
    histo = np.bincount(np.frombuffer(b"".join(values), np.uint8), minlength=256)
    assert info[kf.TERMINATOR] == int(np.argmin(histo))
    codes = [ref_compress_value(v, symbols) for v in values]
    assert sum(map(len, values)) / sum(map(len, codes)) > 4
    assert kf.serialize_table(*table).tobytes() == ref_serialize(
        symbols, 1, lim, int(info[kf.TERMINATOR]))
    again = build(values)  # deterministic
    assert all(np.array_equal(a, b) for a, b in zip(table, again))


def test_build_table_edge_cases():
    assert symbols_of(build([])) == [] and symbols_of(build([b"", b""])) == []
    assert symbols_of(build([b"a"])) == [b"a"]
    table = kf.new_table()
    assert kfb.build_table(np.array([0, 5, 3], np.int64), _u8(b"abcde"), *table) == \
        kf.BAD_OFFSETS
    assert kfb.build_table(np.array([0, 9], np.int64), _u8(b"abcde"), *table) == kf.BAD_OFFSETS
    assert kfb.build_table(np.array([0, 5], np.int64), _u8(b"abcde"), table[0],
                          table[1][:100].copy(), table[2]) == kf.BAD_SYMBOL


def test_sample_strings():
    rng = np.random.default_rng(3)
    values = [bytes(rng.integers(97, 123, int(rng.integers(0, 1500)), dtype=np.uint8))
              for _ in range(300)]
    offsets = np.array(_offsets(values, 3), np.int64)
    data = _u8(b"xyz" + b"".join(values))
    so, sd = kfb.sample_strings(offsets, data, target=5000, seed=1)
    assert so[0] == 0 and so[-1] == len(sd) and (np.diff(so) > 0).all()
    assert 5000 <= len(sd) < 5000 + kfb.SAMPLE_LINE
    joined = b"".join(values)
    for a, b in zip(so[:-1], so[1:]):
        piece = sd[a:b].tobytes()
        assert len(piece) <= kfb.SAMPLE_LINE and piece in joined
    so2, sd2 = kfb.sample_strings(offsets, data, target=5000, seed=1)
    assert np.array_equal(so, so2) and np.array_equal(sd, sd2)
    small_o, small_d = kfb.sample_strings(offsets[:4], data, target=10**6)
    assert small_d.tobytes() == b"".join(values[:3])
    assert small_o.tolist() == _offsets(values[:3])


# -- pylance's bytes ----------------------------------------------------------------------

def url_values(n, seed=0):
    rng = np.random.default_rng(seed)
    hosts = ["example", "github", "wikipedia", "lancedb", "python", "numba"]
    paths = ["index", "docs", "api", "blog", "users", "search", "static", "img"]
    return [f"https://{'www.' if rng.random() < .5 else ''}{hosts[rng.integers(6)]}."
            f"{['com', 'org', 'io'][rng.integers(3)]}/{paths[rng.integers(8)]}/"
            f"{rng.integers(0, 10**6)}?q={paths[rng.integers(8)]}" for _ in range(n)]


@pytest.fixture(scope="module")
def pylance_file(tmp_path_factory):
    lf = pytest.importorskip("lance.file")
    rng = np.random.default_rng(1)
    urls = url_values(5000)
    words = ["grüße", "naïve", "日本語", "emoji😀", "plain", "\x00nul", "tab\t"]
    text = ["".join(rng.choice(words, 5)) + chr(int(rng.integers(0x100, 0x3000)))
            for _ in range(5000)]
    # forced FSST on < 32 KiB of data: pylance writes a switch-0 table and raw values
    small = [f"v{i:05d}" for i in range(5000)]
    forced = pa.field("small_forced", pa.string(),
                      metadata={"lance-encoding:compression": "fsst"})
    path = str(tmp_path_factory.mktemp("fsst") / "p.lance")
    t = pa.table([pa.array(urls), pa.array(text, pa.large_string()), pa.array(small)],
                 schema=pa.schema([pa.field("url", pa.string()),
                                   pa.field("text_large", pa.large_string()), forced]))
    w = lf.LanceFileWriter(path, t.schema, version="2.1")
    w.write_batch(t)
    w.close()
    return path, t


def fsst_pages(path, column):
    """``(symbol table blob, code offsets, codes, rows)`` of each page of a column,
    unwrapped with lancenb's mini-block and Variable kernels."""
    from lancenb.file import LanceFileReader
    md = LanceFileReader(path).metadata()
    with open(path, "rb") as f:
        raw = f.read()
    for page in md.columns[column].pages:
        layout = page.layout.mini_block_layout
        vc = layout.value_compression
        assert vc.WhichOneof("compression") == "fsst"
        width = vc.fsst.values.variable.offsets.flat.bits_per_value // 8
        b0, b1 = page.buffers[:2]
        words = np.frombuffer(raw[b0.position:b0.position + b0.size], np.uint16)
        data = np.frombuffer(raw[b1.position:b1.position + b1.size], np.uint8)
        nbytes = ((words.astype(np.int64) >> 4) + 1) * 8
        pos = np.zeros(len(words), np.int64)
        np.cumsum(nbytes[:-1], out=pos[1:])
        nc = len(words)
        items, levels = np.empty(nc, np.int64), np.empty(nc, np.int64)
        starts, sizes = np.empty((nc, 1), np.int64), np.empty((nc, 1), np.int64)
        err = np.zeros(2, np.int64)
        assert km.parse_chunks(words, data, pos, layout.num_items, 0, 1, 2, items, levels,
                               starts, sizes, err) == km.OK
        total = kv.decode_size(data, starts[:, 0].copy(), sizes[:, 0].copy(), items, width,
                               err)
        assert total >= 0
        offsets = np.empty(int(items.sum()) + 1, np.int64)
        codes = np.empty(total, np.uint8)
        kv.decode_fill(data, starts[:, 0].copy(), items, width, offsets, codes)
        yield np.frombuffer(vc.fsst.symbol_table, np.uint8), offsets, codes, page.num_rows


@pytest.mark.parametrize("column, name, switch", [(0, "url", 1), (1, "text_large", 1),
                                                  (2, "small_forced", 0)])
def test_decompress_pylance_pages(pylance_file, column, name, switch):
    path, t = pylance_file
    expected = t.column(name).to_pylist()
    row = 0
    for blob, offsets, codes, rows in fsst_pages(path, column):
        assert blob.size == kf.TABLE_BYTES and blob[4:8].tobytes() == b"TSSF"
        table = kf.new_table()
        assert kf.parse_table(blob, *table) == kf.OK
        sym, lens, info = table
        assert info[kf.SWITCH] == switch and (info[kf.N_SYMBOLS] > 0) == (switch == 1)
        assert kf.serialize_table(*table).tobytes() == blob.tobytes()
        err = np.zeros(2, np.int64)
        total = kf.decompress_size(offsets, codes, *table, err)
        assert total > len(codes) if switch else total == len(codes)
        out_o, out = np.empty(len(offsets), np.int64), np.empty(total, np.uint8)
        assert kf.decompress(offsets, codes, *table, out_o, out) == total
        got = [out[a:b].tobytes().decode() for a, b in zip(out_o[:-1], out_o[1:])]
        assert got == expected[row:row + rows]
        row += rows
    assert row == len(expected)


def test_our_tables_and_codes_decode_like_the_reference():
    """The converse direction, as far as this module goes: a table built here, written
    in the 2312-byte format, with codes from compress, decodes (by the reference decoder
    written from the spec) to the input; the full pylance read of lancenb's pages is the
    integration tests' job."""
    values = [u.encode() for u in url_values(2000, seed=5)]
    offsets = np.array(_offsets(values), np.int64)
    data = _u8(b"".join(values))
    table = kf.new_table()
    so, sd = kfb.sample_strings(offsets, data)
    assert kfb.build_table(so, sd, *table) > 100
    blob = kf.serialize_table(*table).tobytes()
    status, (symbols, switch, _, _) = ref_parse(blob)
    assert status == kf.OK and switch == 1
    oo, od = np.empty(len(offsets), np.int64), np.empty(kf.compress_bound(offsets), np.uint8)
    size = kf.compress(offsets, data, *table, oo, od)
    assert len(data) / size > 2.5
    total, out_offsets, out = ref_decompress(oo.tolist(), od[:size].tobytes(), symbols)
    assert total == len(data) and out == data.tobytes() and out_offsets == offsets.tolist()
