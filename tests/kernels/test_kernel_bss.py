"""Byte-stream split (``split``, ``join``, ``chunk_bounds``) against pure-Python
references written from ``kernels/bss.py`` and FORMAT_FACTS §3.4, and against pylance
14, whose ``General{zstd, ByteStreamSplit{Flat}}`` chunks we unpack and join (and
whose transposed bytes our ``split`` reproduces).

Per chunk of ``n`` values of ``w`` bytes: output byte ``j * n + i`` = byte ``j`` of
value ``i``.
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
from lancenb.kernels import bss
from lancenb.kernels import miniblock as km

FILL = 0x5C
WIDTHS = [4, 8, 1, 2, 3, 16]


# -- references ---------------------------------------------------------------------------

def ref_split(raw: bytes, width: int, bounds) -> bytes:
    out = bytearray(len(raw))
    for c in range(len(bounds) - 1):
        v0, n = bounds[c], bounds[c + 1] - bounds[c]
        base = v0 * width
        for i in range(n):
            for j in range(width):
                out[base + j * n + i] = raw[base + i * width + j]
    return bytes(out)


def ref_join(src: bytes, starts, counts, width: int) -> bytes:
    out = bytearray()
    for s, n in zip(starts, counts, strict=True):
        for i in range(n):
            out += bytes(src[s + j * n + i] for j in range(width))
    return bytes(out)


def ref_split_status(size, width, bounds, out_size):
    if width < 1:
        return bss.BAD_WIDTH
    if size % width or out_size != size:
        return bss.BAD_SIZE
    n = size // width
    if not bounds or bounds[0] != 0 or bounds[-1] != n or \
            any(b < a for a, b in zip(bounds, bounds[1:])):
        return bss.BAD_BOUNDS
    return bss.OK


def ref_join_status(size, starts, counts, width, out_size):
    if width < 1:
        return bss.BAD_WIDTH
    if out_size % width or len(starts) != len(counts):
        return bss.BAD_SIZE
    need = 0
    for s, n in zip(starts, counts):
        if s < 0 or n < 0 or s + n * width > size:
            return bss.BAD_CHUNK
        if need + n > out_size // width:
            return bss.BAD_SIZE
        need += n
    return bss.OK if need * width == out_size else bss.BAD_SIZE


# -- strategies ---------------------------------------------------------------------------

@st.composite
def rows(draw, max_values=80):
    width = draw(st.sampled_from(WIDTHS))
    n = draw(st.integers(0, max_values))
    return width, n, draw(st.binary(min_size=n * width, max_size=n * width))


@st.composite
def bounds_for(draw, n):
    if n == 0:
        return [0]
    cuts = draw(st.lists(st.integers(1, n - 1), max_size=6)) if n > 1 else []
    return [0] + sorted(set(cuts)) + [n]


def _i64(values, as_input):
    return as_input(np.array(values, dtype=np.int64).reshape(-1))


def _u8(raw: bytes, as_input=np.asarray):
    return as_input(np.frombuffer(bytearray(raw), np.uint8))


# -- properties ---------------------------------------------------------------------------

@given(rows(), st.data())
def test_split_matches_reference(as_input, guarded, case, data):
    width, n, raw = case
    bounds = data.draw(bounds_for(n))
    out = guarded(len(raw), np.uint8, FILL)
    assert bss.split(_u8(raw, as_input), width, _i64(bounds, as_input), out.out) == bss.OK
    assert out.out.tobytes() == ref_split(raw, width, bounds)
    assert out.intact()


@given(rows(), st.data())
def test_join_undoes_split_anywhere(as_input, guarded, case, data):
    """Split chunks, scatter them with gaps in a larger buffer, join them back."""
    width, n, raw = case
    bounds = data.draw(bounds_for(n))
    split = ref_split(raw, width, bounds)
    src, starts, counts = bytearray(), [], []
    for c in range(len(bounds) - 1):
        src += data.draw(st.binary(max_size=7))
        starts.append(len(src))
        counts.append(bounds[c + 1] - bounds[c])
        src += split[bounds[c] * width:bounds[c + 1] * width]
    src += data.draw(st.binary(max_size=7))
    out = guarded(len(raw), np.uint8, FILL)
    assert bss.join(_u8(bytes(src), as_input), _i64(starts, as_input),
                    _i64(counts, as_input), width, out.out) == bss.OK
    assert out.out.tobytes() == raw == ref_join(bytes(src), starts, counts, width)
    assert out.intact()


@given(rows(max_values=20), st.data())
def test_split_bad_arguments(as_input, guarded, case, data):
    width, n, raw = case
    bounds = data.draw(st.one_of(bounds_for(n), st.lists(st.integers(-2, n + 2), max_size=5)))
    width = data.draw(st.sampled_from([width, 0, -1, width + 1]))
    out_size = len(raw) + data.draw(st.sampled_from([0, 0, 1, -1])) if raw else 0
    out = guarded(out_size, np.uint8, FILL)
    got = bss.split(_u8(raw, as_input), width, _i64(bounds, as_input), out.out)
    want = ref_split_status(len(raw), width, bounds, out_size)
    assert got == want
    assert out.intact()
    if want == bss.OK:
        assert out.out.tobytes() == ref_split(raw, width, bounds)
    else:
        assert out.out.tobytes() == bytes([FILL]) * out_size


@given(st.binary(max_size=60), st.lists(st.tuples(st.integers(-3, 70), st.integers(-2, 20)),
                                        max_size=4),
       st.sampled_from([4, 8, 0, 3]), st.integers(0, 90))
def test_join_bad_arguments(as_input, guarded, src, chunks, width, out_size):
    starts = [s for s, _ in chunks]
    counts = [n for _, n in chunks]
    out = guarded(out_size, np.uint8, FILL)
    got = bss.join(_u8(src, as_input), _i64(starts, as_input), _i64(counts, as_input), width,
                   out.out)
    want = ref_join_status(len(src), starts, counts, width, out_size)
    assert got == want
    assert out.intact()
    if want == bss.OK:
        assert out.out.tobytes() == ref_join(src, starts, counts, width)
    else:
        assert out.out.tobytes() == bytes([FILL]) * out_size


def test_join_mismatched_lengths():
    assert bss.join(_u8(bytes(8)), np.zeros(2, np.int64), np.ones(1, np.int64), 4,
                    np.zeros(4, np.uint8)) == bss.BAD_SIZE


# -- known answers ------------------------------------------------------------------------

def test_docstring_examples():
    raw = np.array([1.0, 2.0], np.float32).view(np.uint8)
    out = np.empty(8, np.uint8)
    assert bss.split(raw, 4, np.array([0, 2], np.int64), out) == bss.OK
    assert out.tobytes() == bytes.fromhex("0000" "0000" "8000" "3f40")
    # the reference's example: f32 [1, 2, 3, 4]
    raw = np.array([1.0, 2.0, 3.0, 4.0], np.float32).view(np.uint8)
    out = np.empty(16, np.uint8)
    assert bss.split(raw, 4, np.array([0, 4], np.int64), out) == bss.OK
    assert out.tobytes() == bytes.fromhex("00000000" "00000000" "80004080" "3f404040")


@pytest.mark.parametrize("width, per", [(4, 1024), (8, 512)])
def test_chunk_bounds(width, per):
    assert bss.chunk_bounds(0, width).tolist() == [0]
    assert bss.chunk_bounds(per, width).tolist() == [0, per]
    assert bss.chunk_bounds(2 * per + 5, width).tolist() == [0, per, 2 * per, 2 * per + 5]


def test_bits_round_trip():
    """NaN payloads and -0.0 survive split + join."""
    f = np.array([0.0, -0.0, np.nan, np.inf, 1e-310], np.float64)
    raw = f.view(np.uint8).copy()
    raw[16:24] = np.frombuffer(struct.pack("<Q", 0x7FF4000000000123), np.uint8)
    out = np.empty_like(raw)
    back = np.empty_like(raw)
    assert bss.split(raw, 8, np.array([0, 5], np.int64), out) == bss.OK
    assert bss.join(out, np.array([0], np.int64), np.array([5], np.int64), 8, back) == bss.OK
    assert back.tobytes() == raw.tobytes()


# -- pylance 14 as the oracle -------------------------------------------------------------

def test_pylance_bss_chunks(tmp_path, as_input, guarded):
    pa = pytest.importorskip("pyarrow")
    zstandard = pytest.importorskip("zstandard")
    import lance.file as lf

    from lancenb.file import LanceFileReader

    rng = np.random.default_rng(7)
    n = 5000
    cols = {"f32": np.round(rng.normal(size=n) * 100, 1).astype(np.float32),
            "f64": np.cumsum(rng.normal(size=n))}
    meta = {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}
    schema = pa.schema([pa.field(k, pa.from_numpy_dtype(v.dtype), metadata=meta)
                        for k, v in cols.items()])
    path = str(tmp_path / "bss.lance")
    w = lf.LanceFileWriter(path, schema, version="2.1")
    w.write_batch(pa.table(cols, schema=schema))
    w.close()
    raw = np.fromfile(path, np.uint8)
    columns = LanceFileReader(path).metadata().columns
    for col, arr in zip(columns, cols.values(), strict=True):
        width = arr.dtype.itemsize
        (page,) = col.pages
        layout = page.layout.mini_block_layout
        vc = layout.value_compression
        assert vc.WhichOneof("compression") == "general"
        assert vc.general.values.byte_stream_split.values.flat.bits_per_value == 8 * width
        m, d = page.buffers[0], page.buffers[1]
        words = raw[m.position:m.position + m.size].copy().view(np.uint16).astype(np.int64)
        data = raw[d.position:d.position + d.size].copy()
        nc = len(words)
        pos = np.zeros(nc, np.int64)
        np.cumsum((((words >> 4) + 1) * 8)[:-1], out=pos[1:])
        items, levels = np.empty(nc, np.int64), np.empty(nc, np.int64)
        starts, sizes = np.empty((nc, 1), np.int64), np.empty((nc, 1), np.int64)
        err = np.zeros(2, np.int64)
        assert km.parse_chunks(words, data, pos, layout.num_items, 0, 1, 2, items, levels,
                               starts, sizes, err) == km.OK
        # each chunk's buffer 0: u64 LE raw length + a zstd frame (FORMAT_FACTS §3.6)
        plain = bytearray()
        for c in range(nc):
            buf = data[starts[c, 0]:starts[c, 0] + sizes[c, 0]].tobytes()
            size = struct.unpack("<Q", buf[:8])[0]
            chunk = zstandard.ZstdDecompressor().decompress(buf[8:], max_output_size=size)
            assert len(chunk) == size == items[c] * width
            plain += chunk
        assert items[:-1].tolist() == [bss.VALUES_PER_CHUNK[width]] * (nc - 1)
        cstarts = np.zeros(nc, np.int64)
        np.cumsum(items[:-1] * width, out=cstarts[1:])
        out = guarded(n * width, np.uint8, FILL)
        assert bss.join(_u8(bytes(plain), as_input), as_input(cstarts), as_input(items),
                        width, out.out) == bss.OK
        assert out.out.tobytes() == arr.tobytes()
        assert out.intact()
        # our split writes the same bytes
        mine = np.empty(n * width, np.uint8)
        bounds = bss.chunk_bounds(n, width)
        assert bss.split(_u8(arr.tobytes(), as_input), width, as_input(bounds), mine) == bss.OK
        assert mine.tobytes() == bytes(plain)


# -- extreme sizes (child process) --------------------------------------------------------

_EXTREMES = [-(2**63), -20, -1, 2**61, 2**62 - 1, 2**62, 2**63 - 1]

_EXTREME_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from lancenb.kernels import bss
    results = []
    for size, start, count, width, out_size in json.load(sys.stdin):
        src = np.zeros(size, np.uint8)
        try:
            got = int(bss.join(src, np.array([start], np.int64), np.array([count], np.int64),
                               width, np.zeros(out_size, np.uint8)))
            spl = int(bss.split(src, width, np.array([0, count], np.int64),
                                np.zeros(out_size, np.uint8)))
        except Exception as exc:  # a kernel must not raise: report it to the parent
            got = spl = type(exc).__name__
        results.append([got, spl])
    json.dump(results, sys.stdout)
""")


def test_extreme_starts_and_counts():
    cases = [(16, s, n, w, o) for s in [0, 4] + _EXTREMES for n in [2, 4] + _EXTREMES
             for w in (4, 8, 2**62) for o in (16, 8)]
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _EXTREME_CHILD],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-600:]}"
    for case, (got, spl) in zip(cases, json.loads(proc.stdout), strict=True):
        size, start, count, width, out_size = case
        assert got == ref_join_status(size, [start], [count], width, out_size), case
        assert spl == ref_split_status(size, width, [0, count], out_size), case
