"""Dictionary kernels (``build_fixed``, ``build_variable``, ``decode_fixed``,
``decode_variable_size``/``decode_variable_fill``) against pure-Python references
written from ``kernels/dictionary.py``, and against pylance 14: the dictionary items
pylance writes for a page are the distinct values in our first-seen order.
"""

import json
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels import dictionary as kd
from lancenb.kernels import stats as ks

FILL = 0x5C
UNSET = -7
FIXED_WIDTHS = [1, 2, 4, 8, 3, 16]


# -- references ---------------------------------------------------------------------------

def ref_build(rows, max_distinct):
    """``(count or TOO_MANY_DISTINCT, indices, first)``."""
    seen, indices, first = {}, [], []
    for i, r in enumerate(rows):
        if r not in seen:
            if len(seen) == max_distinct:
                return kd.TOO_MANY_DISTINCT, None, None
            seen[r] = len(seen)
            first.append(i)
        indices.append(seen[r])
    return len(seen), indices, first


def ref_table_ok(size, max_distinct):
    cap = size // 2
    return max_distinct >= 0 and size % 2 == 0 and cap >= 2 and cap & (cap - 1) == 0 \
        and cap > max_distinct


def ref_offsets_ok(offsets, size):
    return len(offsets) >= 1 and offsets[0] >= 0 and offsets[-1] <= size and \
        all(b >= a for a, b in zip(offsets, offsets[1:]))


def ref_decode_variable(offsets, data: bytes, indices):
    """``(status or total, out offsets, out bytes)``."""
    if not ref_offsets_ok(offsets, len(data)):
        return kd.BAD_OFFSETS, None, None
    n_dict = len(offsets) - 1
    if any(k < 0 or k >= n_dict for k in indices):
        return kd.BAD_INDEX, None, None
    out_offsets, out = [0], bytearray()
    for k in indices:
        out += data[offsets[k]:offsets[k + 1]]
        out_offsets.append(len(out))
    return len(out), out_offsets, bytes(out)


# -- strategies ---------------------------------------------------------------------------

@st.composite
def fixed_rows(draw, max_rows=120):
    """``(width, rows)`` from a small pool, so values repeat."""
    width = draw(st.sampled_from(FIXED_WIDTHS))
    pool = draw(st.lists(st.binary(min_size=width, max_size=width), min_size=1, max_size=30))
    rows = draw(st.lists(st.sampled_from(pool), max_size=max_rows))
    return width, rows


@st.composite
def variable_values(draw, max_rows=120):
    pool = draw(st.lists(st.one_of(st.binary(max_size=3), st.binary(max_size=40)),
                         min_size=1, max_size=30))
    return draw(st.lists(st.sampled_from(pool), max_size=max_rows))


def _offsets(values, head=0):
    offs = [head]
    for v in values:
        offs.append(offs[-1] + len(v))
    return offs


def _i64(values, as_input):
    return as_input(np.array(values, dtype=np.int64).reshape(-1))


def _u8(raw: bytes, as_input=np.asarray):
    return as_input(np.frombuffer(bytearray(raw), np.uint8))


def _table(max_distinct, tight):
    """A table at load factor 1/2 or, when ``tight``, the smallest legal one (long
    probe chains and wrap-around)."""
    if not tight:
        return np.full(kd.table_size(max_distinct), 0xAB, np.uint64)
    cap = 2
    while cap <= max_distinct:
        cap *= 2
    return np.full(2 * cap, 0xAB, np.uint64)


def _build_fixed(as_input, guarded, width, rows, max_distinct, tight=False,
                 index_dtype=np.uint32):
    raw = b"".join(rows)
    idx = guarded(len(rows), index_dtype, 0xFFFF)
    first = guarded(max(min(max_distinct, len(rows)), 0), np.int64, UNSET)
    got = kd.build_fixed(_u8(raw, as_input), width, max_distinct, _table(max_distinct, tight),
                         idx.out, first.out)
    assert idx.intact() and first.intact()
    return got, idx.out, first.out


# -- build --------------------------------------------------------------------------------

@given(fixed_rows(), st.integers(0, 40), st.booleans())
def test_build_fixed_matches_reference(as_input, guarded, case, max_distinct, tight):
    width, rows = case
    got, idx, first = _build_fixed(as_input, guarded, width, rows, max_distinct, tight)
    want, want_idx, want_first = ref_build(rows, max_distinct)
    assert got == want
    if want >= 0:
        assert idx.tolist() == want_idx
        assert first[:want].tolist() == want_first
        # the dictionary items, gathered by first occurrence, decode back to the rows
        items = b"".join(rows[i] for i in want_first)
        out = np.full(len(rows) * width, FILL, np.uint8)
        assert kd.decode_fixed(_u8(items, as_input), width, as_input(idx), out) == kd.OK
        assert out.tobytes() == b"".join(rows)


@given(variable_values(), st.integers(0, 40), st.booleans(), st.binary(max_size=5))
def test_build_variable_matches_reference(as_input, guarded, values, max_distinct, tight,
                                          head):
    offsets = _offsets(values, len(head))
    data = head + b"".join(values) + b"tail"
    idx = guarded(len(values), np.int32, UNSET)
    first = guarded(min(max_distinct, len(values)), np.int64, UNSET)
    got = kd.build_variable(_i64(offsets, as_input), _u8(data, as_input), max_distinct,
                            _table(max_distinct, tight), idx.out, first.out)
    want, want_idx, want_first = ref_build(values, max_distinct)
    assert got == want
    assert idx.intact() and first.intact()
    if want >= 0:
        assert idx.out.tolist() == want_idx
        assert first.out[:want].tolist() == want_first


def test_build_compares_bits():
    """-0.0 and 0.0, and two NaN payloads, are different dictionary entries."""
    f = np.array([0.0, -0.0, np.nan, 0.0, -0.0, np.nan], np.float64)
    f[5] = np.frombuffer(struct.pack("<Q", 0x7FF8000000000001), np.float64)[0]
    idx, first = np.zeros(6, np.uint32), np.zeros(6, np.int64)
    assert kd.build_fixed(f.view(np.uint8), 8, 6, np.zeros(kd.table_size(6), np.uint64), idx,
                          first) == 4
    assert idx.tolist() == [0, 1, 2, 0, 1, 3]


def test_build_many_distinct_values_and_collisions():
    """Thousands of keys that agree in their low or high bits, in a tight table."""
    for keys in (np.arange(5000, dtype=np.uint64) << np.uint64(40),
                 np.arange(5000, dtype=np.uint64) * np.uint64(1 << 12),
                 np.arange(5000, dtype=np.uint64)):
        rows = np.concatenate([keys, keys[::-1]])
        idx, first = np.zeros(len(rows), np.uint32), np.zeros(5000, np.int64)
        table = np.zeros(2 * 8192, np.uint64)
        assert kd.build_fixed(rows.view(np.uint8), 8, 5000, table, idx, first) == 5000
        assert idx[:5000].tolist() == list(range(5000))
        assert idx[5000:].tolist() == list(range(4999, -1, -1))
        # 16-byte rows (hashed) over the same keys
        wide = np.zeros((len(rows), 2), np.uint64)
        wide[:, 1] = rows
        assert kd.build_fixed(wide.view(np.uint8).reshape(-1), 16, 5000, table, idx,
                              first) == 5000
        assert idx[5000:].tolist() == list(range(4999, -1, -1))
    # one more distinct value than allowed stops the build
    assert kd.build_fixed(np.arange(100, dtype=np.int32).view(np.uint8), 4, 99,
                          np.zeros(kd.table_size(99), np.uint64), np.zeros(100, np.uint32),
                          np.zeros(99, np.int64)) == kd.TOO_MANY_DISTINCT


@given(st.integers(-3, 70), st.integers(-2, 40))
def test_build_table_and_size_checks(table_len, max_distinct):
    rows = np.arange(10, dtype=np.uint8)
    got = kd.build_fixed(rows, 1, max_distinct, np.zeros(max(table_len, 0), np.uint64),
                         np.zeros(10, np.uint32), np.zeros(max(max_distinct, 0), np.int64))
    if not ref_table_ok(max(table_len, 0), max_distinct):
        assert got == kd.BAD_TABLE
    else:
        assert got == (10 if max_distinct >= 10 else kd.TOO_MANY_DISTINCT)


def test_build_bad_sizes():
    t = np.zeros(kd.table_size(8), np.uint64)
    assert kd.build_fixed(np.zeros(10, np.uint8), 4, 8, t, np.zeros(3, np.uint32),
                          np.zeros(8, np.int64)) == kd.BAD_SIZE
    assert kd.build_fixed(np.zeros(8, np.uint8), 0, 8, t, np.zeros(3, np.uint32),
                          np.zeros(8, np.int64)) == kd.BAD_SIZE
    assert kd.build_fixed(np.zeros(8, np.uint8), 4, 8, t, np.zeros(1, np.uint32),
                          np.zeros(8, np.int64)) == kd.BAD_SIZE
    assert kd.build_fixed(np.zeros(8, np.uint8), 4, 8, t, np.zeros(2, np.uint32),
                          np.zeros(1, np.int64)) == kd.BAD_SIZE
    offs = np.array([0, 2, 1], np.int64)
    assert kd.build_variable(offs, np.zeros(4, np.uint8), 8, t, np.zeros(2, np.uint32),
                             np.zeros(8, np.int64)) == kd.BAD_OFFSETS
    offs = np.array([0, 2, 5], np.int64)
    assert kd.build_variable(offs, np.zeros(4, np.uint8), 8, t, np.zeros(2, np.uint32),
                             np.zeros(8, np.int64)) == kd.BAD_OFFSETS
    offs = np.array([0, 2, 4], np.int64)
    assert kd.build_variable(offs, np.zeros(4, np.uint8), 8, t, np.zeros(1, np.uint32),
                             np.zeros(8, np.int64)) == kd.BAD_SIZE
    assert kd.build_variable(np.zeros(0, np.int64), np.zeros(4, np.uint8), 8, t,
                             np.zeros(1, np.uint32), np.zeros(8, np.int64)) == kd.BAD_OFFSETS


def test_docstring_examples():
    vals = [b"b", b"a", b"b", b"b"]
    idx, first = np.zeros(4, np.uint32), np.zeros(4, np.int64)
    t = np.zeros(kd.table_size(4), np.uint64)
    assert kd.build_variable(np.array(_offsets(vals), np.int64), _u8(b"".join(vals)), 4, t,
                             idx, first) == 2
    assert idx.tolist() == [0, 1, 0, 0] and first[:2].tolist() == [0, 1]
    assert kd.build_fixed(np.array([7, 7, 9], np.int32).view(np.uint8), 4, 4, t, idx[:3],
                          first) == 2
    assert idx[:3].tolist() == [0, 0, 1] and first[:2].tolist() == [0, 2]


# -- decode -------------------------------------------------------------------------------

INDEX_DTYPES = [np.uint32, np.int32, np.uint64]  # unsigned, negative, past 2**63


@given(st.sampled_from(FIXED_WIDTHS), st.integers(0, 12), st.data())
def test_decode_fixed_matches_reference(as_input, guarded, width, n_dict, data):
    items = data.draw(st.binary(min_size=n_dict * width, max_size=n_dict * width))
    dtype = data.draw(st.sampled_from(INDEX_DTYPES))
    info = np.iinfo(dtype)
    indices = data.draw(st.lists(st.one_of(st.integers(0, n_dict + 1),
                                           st.integers(int(info.min), int(info.max))),
                                 max_size=60))
    out = guarded(len(indices) * width, np.uint8, FILL)
    got = kd.decode_fixed(_u8(items, as_input), width, as_input(np.array(indices, dtype)),
                          out.out)
    assert out.intact()
    if all(0 <= k < n_dict for k in indices):
        assert got == kd.OK
        assert out.out.tobytes() == b"".join(items[k * width:(k + 1) * width] for k in indices)
    else:
        assert got == kd.BAD_INDEX
        assert out.out.tobytes() == bytes([FILL]) * len(out.out)


def test_decode_fixed_bad_sizes():
    items = np.zeros(8, np.uint8)
    idx = np.zeros(3, np.uint32)
    assert kd.decode_fixed(items, 4, idx, np.zeros(8, np.uint8)) == kd.BAD_SIZE
    assert kd.decode_fixed(items, 4, idx, np.zeros(13, np.uint8)) == kd.BAD_SIZE
    assert kd.decode_fixed(items, 3, idx, np.zeros(9, np.uint8)) == kd.BAD_SIZE
    assert kd.decode_fixed(items, 0, idx, np.zeros(0, np.uint8)) == kd.BAD_SIZE


@given(variable_values(max_rows=12), st.data())
def test_decode_variable_matches_reference(as_input, guarded, items, data):
    head = data.draw(st.binary(max_size=4))
    offsets = _offsets(items, len(head))
    raw = head + b"".join(items) + data.draw(st.binary(max_size=4))
    if data.draw(st.booleans()):  # a corrupt dictionary
        offsets[data.draw(st.integers(0, len(offsets) - 1))] = data.draw(st.integers(-3, 200))
    indices = data.draw(st.lists(st.integers(-1, len(items)), max_size=40))
    want, want_offsets, want_data = ref_decode_variable(offsets, raw, indices)
    args = (_i64(offsets, as_input), _u8(raw, as_input), _i64(indices, as_input))
    got = kd.decode_variable_size(*args)
    assert got == want
    size = want if want >= 0 else data.draw(st.integers(0, 50))
    out_offsets = guarded(len(indices) + 1, np.int64, UNSET)
    out_data = guarded(size, np.uint8, FILL)
    status = kd.decode_variable_fill(*args, out_offsets.out, out_data.out)
    assert out_offsets.intact() and out_data.intact()
    if want >= 0:
        assert status == kd.OK
        assert out_offsets.out.tolist() == want_offsets
        assert out_data.out.tobytes() == want_data
    else:
        assert status == want
        assert (out_offsets.out == UNSET).all() and (out_data.out == FILL).all()


def test_decode_variable_fill_checks_its_outputs():
    offs = np.array([0, 2, 5], np.int64)
    data = _u8(b"abcde")
    idx = np.array([1, 0, 1], np.int64)
    assert kd.decode_variable_size(offs, data, idx) == 8
    assert kd.decode_variable_fill(offs, data, idx, np.zeros(3, np.int64),
                                   np.zeros(8, np.uint8)) == kd.BAD_SIZE
    assert kd.decode_variable_fill(offs, data, idx, np.zeros(4, np.int64),
                                   np.zeros(7, np.uint8)) == kd.BAD_SIZE
    oo, od = np.zeros(4, np.int64), np.zeros(8, np.uint8)
    assert kd.decode_variable_fill(offs, data, idx, oo, od) == kd.OK
    assert oo.tolist() == [0, 3, 5, 8] and od.tobytes() == b"cdeabcde"


# -- pylance 14 as the oracle -------------------------------------------------------------

def test_pylance_dictionary_items(tmp_path):
    """pylance's dictionary (page buffer 2) holds the distinct values in first-seen
    order: ``Variable`` block format for binary (FORMAT_FACTS §3.9), raw rows for
    fixed_size_binary(16)."""
    pa = pytest.importorskip("pyarrow")
    import lance.file as lf

    from lancenb.file import LanceFileReader

    rng = np.random.default_rng(5)
    n = 6000
    words = [(b"w%d" % i) * (1 + i % 3) for i in range(40)]
    strings = [words[i] for i in rng.integers(0, 40, n)]
    pool = [rng.bytes(16) for _ in range(200)]
    fixed = [pool[i] for i in rng.integers(0, 200, n)]
    table = pa.table({"s": pa.array(strings, pa.binary()), "f": pa.array(fixed, pa.binary(16))})
    path = str(tmp_path / "dict.lance")
    w = lf.LanceFileWriter(path, table.schema, version="2.1")
    w.write_batch(table)
    w.close()
    with open(path, "rb") as fh:
        raw = fh.read()
    s_col, f_col = LanceFileReader(path).metadata().columns
    (s_page,), (f_page,) = s_col.pages, f_col.pages

    b = s_page.buffers[2]
    block = raw[b.position:b.position + b.size]
    bits, start = struct.unpack("<2I", block[:8])
    assert bits == 32
    n_items = s_page.layout.mini_block_layout.num_dictionary_items
    offs = struct.unpack(f"<{n_items + 1}I", block[8:start])
    items = [block[start + offs[k]:start + offs[k + 1]] for k in range(n_items)]
    idx, first = np.zeros(n, np.uint32), np.zeros(1000, np.int64)
    got = kd.build_variable(np.array(_offsets(strings), np.int64), _u8(b"".join(strings)), 1000,
                            np.zeros(kd.table_size(1000), np.uint64), idx, first)
    assert got == n_items == 40
    assert [strings[i] for i in first[:got]] == items

    b = f_page.buffers[2]
    block = raw[b.position:b.position + b.size]
    n_items = f_page.layout.mini_block_layout.num_dictionary_items
    got = kd.build_fixed(_u8(b"".join(fixed)), 16, 1000,
                         np.zeros(kd.table_size(1000), np.uint64), idx, first)
    assert got == n_items == 200
    assert b"".join(fixed[i] for i in first[:got]) == block


# -- extreme sizes (child process) --------------------------------------------------------

_EXTREMES = [-(2**63), -20, -1, 2**61, 2**62 - 1, 2**62, 2**63 - 1]

_EXTREME_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lancenb.kernels import dictionary as kd
    results = []
    for offsets, index, max_distinct, table_len in json.load(sys.stdin):
        data = np.frombuffer(bytearray(b"abcdefgh"), np.uint8)
        offs = np.array(offsets, np.int64)
        idx = np.array([index], np.int64)
        try:
            size = int(kd.decode_variable_size(offs, data, idx))
            fill = int(kd.decode_variable_fill(offs, data, idx, np.zeros(2, np.int64),
                                               np.zeros(8, np.uint8)))
            fixed = int(kd.decode_fixed(data, 4, idx, np.zeros(4, np.uint8)))
            build = int(kd.build_variable(offs, data, max_distinct,
                                          np.zeros(table_len, np.uint64),
                                          np.zeros(len(offsets), np.uint32),
                                          np.zeros(4, np.int64)))
        except Exception as exc:  # a kernel must not raise: report it to the parent
            size = fill = fixed = build = type(exc).__name__
        results.append([size, fill, fixed, build])
    json.dump(results, sys.stdout)
""")


def test_extreme_offsets_and_indices():
    cases = []
    for o in [3] + _EXTREMES:
        for index in [0, 1] + _EXTREMES:
            for max_distinct, table_len in [(2, 8), (2**62, 8), (-1, 8), (3, 2**4 + 2)]:
                cases.append(([0, 2, o], index, max_distinct, table_len))
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _EXTREME_CHILD],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-600:]}"
    for case, (size, fill, fixed, build) in zip(cases, json.loads(proc.stdout), strict=True):
        offsets, index, max_distinct, table_len = case
        want = ref_decode_variable(offsets, b"abcdefgh", [index])[0]
        assert size == want, case
        assert fill == (kd.OK if want >= 0 and want <= 8 else
                        (want if want < 0 else kd.BAD_SIZE)), case
        assert fixed == (kd.OK if 0 <= index < 2 else kd.BAD_INDEX), case
        if not ref_offsets_ok(offsets, 8):
            assert build == kd.BAD_OFFSETS, case
        elif not ref_table_ok(table_len, max_distinct):
            assert build == kd.BAD_TABLE, case
        else:
            assert isinstance(build, int), case


@settings(max_examples=60, deadline=None)
@given(variable_values(), st.integers(0, 40), st.booleans())
def test_build_variable_hashed_reuses_the_sketch_hashes(as_input, guarded, values,
                                                        max_distinct, tight):
    """hll_variable_hashes: the registers of hll_variable plus each value's XXH64; the
    build keyed by those hashes gives the reference's entries and indices."""
    offsets, data = _i64(_offsets(values), as_input), _u8(b"".join(values), as_input)
    reg, reg2 = np.zeros(16, np.uint8), np.zeros(16, np.uint8)
    hashes = guarded(len(values), np.uint64)
    assert ks.hll_variable_hashes(offsets, data, 0, reg, hashes.out) == len(values)
    assert ks.hll_variable(offsets, data, 0, reg2) == len(values)
    assert hashes.intact() and reg.tolist() == reg2.tolist()
    raw = b"".join(values)
    pos = _offsets(values)
    assert hashes.out.tolist() == [int(ks.xxh64(np.frombuffer(raw, np.uint8), pos[i],
                                                len(v), 0)) for i, v in enumerate(values)]
    idx = guarded(len(values), np.int32, UNSET)
    first = guarded(min(max_distinct, len(values)), np.int64, UNSET)
    got = kd.build_variable_hashed(offsets, data, as_input(hashes.out), max_distinct,
                                   _table(max_distinct, tight), idx.out, first.out)
    want, want_idx, want_first = ref_build(values, max_distinct)
    assert got == want and idx.intact() and first.intact()
    if want >= 0:
        assert idx.out.tolist() == want_idx
        assert first.out[:want].tolist() == want_first
    if len(values) >= 2:  # fewer hashes than values (none at all: hashed in the kernel)
        assert kd.build_variable_hashed(
            offsets, data, as_input(hashes.out[:-1]), len(values), _table(len(values), False),
            np.zeros(len(values), np.int32), np.zeros(len(values), np.int64)) == kd.BAD_SIZE
