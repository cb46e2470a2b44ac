"""Many local ranged reads from one kernel call (``lancenb.kernels.fileio``).

``pread_ranges`` against a Python reference (the file's bytes sliced), jit and under
``NUMBA_DISABLE_JIT``; ``RangeReader.read_ranges_np`` through it (short reads and a
file cut after opening still name the problem); takes of binary rows written by
pylance read the same through lancenb.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels import fileio

from lancenb.errors import LanceIOError
from lancenb.io import RangeReader, resolve

FILL = 0x5C
DATA = bytes(np.random.default_rng(7).integers(0, 256, 50_000, dtype=np.uint8))


def ref_pread_ranges(data: bytes, out: bytearray, starts, sizes, pos, first) -> int:
    """The reference: slices of the file's bytes; the first range not wholly inside the
    file stops the reads (its bytes inside the file are read, as a short pread)."""
    for i in range(first, len(starts)):
        if sizes[i] < 0 or pos[i] < 0 or pos[i] + sizes[i] > len(out):
            return -1
    for i in range(first, len(starts)):
        s, n, p = starts[i], sizes[i], pos[i]
        got = data[s:s + n]
        out[p:p + len(got)] = got
        if len(got) < n:
            return i
    return len(starts)


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pread") / "data.bin"
    path.write_bytes(DATA)
    return str(path)


ranges = st.lists(st.tuples(st.integers(0, len(DATA) + 100), st.integers(-1, 3000)),
                  max_size=40)


@settings(max_examples=150, deadline=None)
@given(ranges, st.integers(0, 5), st.integers(0, 200), st.booleans())
def test_pread_ranges_matches_reference(data_file, rs, first, slack, packed):
    starts = np.array([s for s, _ in rs], np.int64)
    sizes = np.array([n for _, n in rs], np.int64)
    pos = np.cumsum(np.maximum(sizes, 0)) - np.maximum(sizes, 0)
    if not packed:  # reversed order, with gaps
        pos = pos[::-1].copy() + np.arange(len(pos))
    size = int((pos + np.maximum(sizes, 0)).max(initial=0)) + slack - 100
    out = np.full(max(size, 0), FILL, np.uint8)
    want = bytearray(out.tobytes())
    first = min(first, len(rs))
    expected = ref_pread_ranges(DATA, want, starts.tolist(), sizes.tolist(), pos.tolist(),
                                first)
    fd = os.open(data_file, os.O_RDONLY)
    try:
        got = fileio.pread_ranges(fd, out, starts, sizes, pos, first)
    finally:
        os.close(fd)
    assert got == expected
    if expected >= 0:
        done = slice(0, None)
        if expected < len(rs):  # bytes past the stopping range are not promised
            keep = np.ones(len(out), bool)
            for i in range(expected, len(rs)):
                keep[pos[i]:pos[i] + max(sizes[i], 0)] = False
            done = keep
        assert np.array_equal(out[done], np.frombuffer(bytes(want), np.uint8)[done])
    else:
        assert (out == FILL).all()


_CHILD = textwrap.dedent("""
    import os, sys, numpy as np
    from lancenb.kernels import fileio
    fd = os.open(sys.argv[1], os.O_RDONLY)
    out = np.full(40, 0x5C, np.uint8)
    r = fileio.pread_ranges(fd, out, np.array([5, 49_990, 0]), np.array([10, 20, 5]),
                            np.array([0, 10, 30]), 0)
    print(r, out.tobytes().hex())
""")


def test_pread_ranges_without_jit_is_the_same(data_file):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    runs = [subprocess.run([sys.executable, "-W", "error", "-c", _CHILD, data_file],
                           capture_output=True, text=True, timeout=300, env=e)
            for e in (env, None)]
    for p in runs:
        assert p.returncode == 0, p.stderr[-600:]
    assert runs[0].stdout == runs[1].stdout
    status, hexed = runs[1].stdout.split()
    out = bytes.fromhex(hexed)
    assert int(status) == 1  # the second range runs past the end of the file
    assert out[:10] == DATA[5:15] and out[10:20] == DATA[49_990:]


def _reader(path):
    fs, p = resolve(path)
    return RangeReader(fs, p)


def test_read_ranges_np_many_ranges(data_file):
    rng = np.random.default_rng(1)
    offs = rng.integers(0, len(DATA) - 500, 300)
    lens = rng.integers(0, 500, 300)
    r = _reader(data_file)
    buf, pos = r.read_ranges_np(offs, lens)
    for o, n, p in zip(offs.tolist(), lens.tolist(), pos.tolist()):
        assert bytes(buf[p:p + n]) == DATA[o:o + n]
    assert r.stats.bytes_read == len(buf)


def test_read_ranges_np_file_cut_after_open(tmp_path):
    path = tmp_path / "cut.bin"
    path.write_bytes(DATA)
    r = _reader(str(path))
    offs = np.arange(0, 50_000, 5000, dtype=np.int64)  # 10 requests, none merged
    with open(path, "r+b") as f:
        f.truncate(30_000)
    with pytest.raises(LanceIOError, match="short read at offset 30000"):
        r.read_ranges_np(offs, np.full(len(offs), 100, np.int64))


def test_binary_takes_match_pylance(tmp_path):
    lance = pytest.importorskip("lance")
    import lancenb

    rng = np.random.default_rng(5)
    vals = [rng.bytes(int(n)) for n in rng.integers(0, 9000, 3000)]
    vals[7] = None
    table = pa.table({"id": np.arange(3000), "img": pa.array(vals, pa.binary()),
                      "vec": pa.FixedSizeListArray.from_arrays(
                          pa.array(rng.random(3000 * 16, dtype=np.float32)), 16)})
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(table, uri, max_rows_per_file=1000)
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    for idx in (np.sort(rng.choice(3000, 256, replace=False)), rng.choice(3000, 64),
                np.arange(990, 1020), [7, 3, 7]):
        assert ours.take(idx).equals(theirs.take(idx))
