"""read_range: pages covered mostly are scanned and sliced, others read by position,
and nested pages take a range by its two ends; every path equals slicing read_all."""

import numpy as np
import pyarrow as pa
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter
from tests._tables import assert_tables_equal

N = 30_000


def _table(seed=5):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 6, N)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    m = int(off[-1])
    null_rows = pa.array(rng.random(N) < 0.1)
    return pa.table({
        "i": pa.array(rng.integers(0, 1000, N)),
        "s": pa.array([f"v{k % 97}" if k % 13 else None for k in range(N)]),
        "l": pa.ListArray.from_arrays(pa.array(off), pa.array(rng.integers(0, 50, m),
                                                              pa.int32()), mask=null_rows),
        "st": pa.StructArray.from_arrays([pa.array(rng.random(N)), pa.array(lens)], ["a", "b"],
                                         mask=pa.array(rng.random(N) < 0.05)),
        "ls": pa.ListArray.from_arrays(pa.array(off), pa.StructArray.from_arrays(
            [pa.array(rng.integers(0, 9, m)), pa.array([f"x{k % 7}" for k in range(m)])],
            ["p", "q"])),
        "ll": pa.array([[[1, 2], [], None], None, [], [[3]]] * (N // 4), pa.list_(pa.list_(
            pa.int64()))),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    t = _table()
    out = {}
    for name, cache in (("one_page", None), ("many_pages", 60_000)):
        p = str(tmp_path_factory.mktemp("rr") / f"{name}.lance")
        with LanceFileWriter(p, data_cache_bytes=cache) as w:
            for b in t.to_batches(max_chunksize=2000):
                w.write_batch(b)
        out[name] = p
    return t, out


RANGES = [(0, N), (0, 1), (N - 1, 1), (N // 4, N // 2), (N // 3, 1000), (17, 3), (0, 0),
          (N, 0), (5, N - 10), (1234, 7000), (N - 2500, 2500)]


@pytest.mark.parametrize("name", ["one_page", "many_pages"])
def test_read_range_equals_slice(files, name):
    t, paths = files
    r = LanceFileReader(paths[name])
    if name == "many_pages":
        assert len(r.metadata().columns[0].pages) > 3
    for start, n in RANGES:
        assert_tables_equal(r.read_range(start, n).to_table(), t.slice(start, n))


def test_read_range_after_takes_uses_the_search_cache_consistently(files):
    """Small ranges read by position after takes filled the search cache."""
    t, paths = files
    r = LanceFileReader(paths["many_pages"])
    rows = [0, 99, N - 1, 4321]
    assert_tables_equal(r.take_rows(rows).to_table(), t.take(rows))
    for start, n in ((100, 10), (N // 2, 300), (N - 50, 50)):
        assert_tables_equal(r.read_range(start, n).to_table(), t.slice(start, n))


def test_read_range_out_of_bounds_is_refused(files):
    from lancenb.errors import InvalidInputError

    _, paths = files
    r = LanceFileReader(paths["one_page"])
    for start, n in ((-1, 2), (0, N + 1), (N, 1)):
        with pytest.raises(InvalidInputError):
            r.read_range(start, n)
