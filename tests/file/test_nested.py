"""Nested columns (structs, lists, large lists; nulls and empty lists at every level,
depth up to 3): lancenb writes, lancenb reads, whole, by range and by take, at chunk
and page edges; damaged rep/def levels are a CorruptFileError, never a crash."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import flip_page_bytes

from lancenb.file import LanceFileReader, LanceFileWriter

N = 6000


def _lists(rng, n, inner, p_null=0.1, p_empty=0.1, maxlen=5):
    out = []
    for _ in range(n):
        r = rng.random()
        if r < p_null:
            out.append(None)
        elif r < p_null + p_empty:
            out.append([])
        else:
            out.append([inner() for _ in range(int(rng.integers(1, maxlen)))])
    return out


def nested_table(n=N, seed=3):
    rng = np.random.default_rng(seed)
    small = lambda: None if rng.random() < 0.1 else int(rng.integers(0, 1000))  # noqa: E731
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int32)),
        "l": pa.array(_lists(rng, n, small), pa.list_(pa.int32())),
        "ll": pa.array(_lists(rng, n, lambda: _lists(rng, 1, small)[0]),
                       pa.large_list(pa.list_(pa.int64()))),
        "lll": pa.array(_lists(rng, n, lambda: _lists(rng, 1, lambda: _lists(
            rng, 1, small, maxlen=3)[0], maxlen=3)[0], maxlen=3),
            pa.list_(pa.list_(pa.list_(pa.int16())))),
        "s": pa.array([None if i % 7 == 0 else
                       {"x": i, "y": None if i % 3 == 0 else f"s{i}",
                        "z": [i] * (i % 3) if i % 5 else None,
                        "t": {"u": float(i)} if i % 4 else None} for i in range(n)],
                      pa.struct([("x", pa.int64()), ("y", pa.string()),
                                 ("z", pa.list_(pa.int16())),
                                 ("t", pa.struct([("u", pa.float64())]))])),
        "ls": pa.array(_lists(rng, n, lambda: None if rng.random() < 0.1 else
                              {"p": int(rng.integers(0, 5)), "q": "ab" * int(rng.integers(0, 3))}),
                       pa.list_(pa.struct([("p", pa.int32()), ("q", pa.string())]))),
        "big": pa.array([None if i % 9 == 0 else [] if i % 5 == 0 else
                         [("v" * 300 + str(i)).encode()] * (i % 3 + 1) for i in range(n)],
                        pa.list_(pa.large_binary())),
        "nulls": pa.array([None if i % 2 else [] for i in range(n)], pa.list_(pa.int32())),
    })


@pytest.fixture(scope="module")
def table():
    return nested_table()


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def version(request):
    return request.param


@pytest.fixture(scope="module", params=[None, 64 * 1024], ids=["one-page", "small-pages"])
def written(request, table, version, tmp_path_factory):
    path = tmp_path_factory.mktemp("nested") / "t.lance"
    with LanceFileWriter(str(path), version=version, data_cache_bytes=request.param) as w:
        for i in range(0, table.num_rows, 1000):
            w.write_batch(table.slice(i, 1000))
    return str(path)


def test_read_all(written, table):
    assert LanceFileReader(written).read_all().to_table().equals(table)


def test_layouts_used(written):
    kinds = {p.description.split(":")[0] for c in LanceFileReader(written).metadata().columns
             for p in c.pages}
    assert {"mini_block", "full_zip", "constant"} <= kinds


@pytest.mark.parametrize("start,n", [(0, 1), (0, N), (N - 1, 1), (1023, 1026), (2047, 3),
                                     (4095, 2), (3333, 0)])
def test_read_range(written, table, start, n):
    assert LanceFileReader(written).read_range(start, n).to_table().equals(table.slice(start, n))


def test_take(written, table):
    rng = np.random.default_rng(0)
    idx = np.concatenate([rng.integers(0, N, 200), [0, N - 1, 1023, 1024, 4095, 4096, 5, 5]])
    assert LanceFileReader(written).take_rows(idx).to_table().equals(table.take(idx))


def test_projection(written, table):
    r = LanceFileReader(written, columns=["s", "ll"])
    assert r.read_all().to_table().equals(table.select(["s", "ll"]))


def test_zero_rows(tmp_path):
    schema = nested_table(10).schema
    path = str(tmp_path / "z.lance")
    with LanceFileWriter(path, schema) as w:
        w.write_batch(pa.table({f.name: pa.array([], f.type) for f in schema}, schema=schema))
    assert LanceFileReader(path).read_all().to_table().num_rows == 0


def test_damaged_levels_are_corrupt_file_errors(tmp_path):
    """Flip bytes across every page of the list columns: each read either succeeds or
    raises a LanceError (CorruptFileError for bad data), never anything else."""
    t = nested_table(3000, seed=9).select(["l", "ll", "ls"])
    path = tmp_path / "g.lance"
    with LanceFileWriter(str(path)) as w:
        w.write_batch(t)
    md = LanceFileReader(str(path)).metadata()
    buffers = [b for col in md.columns for page in col.pages for b in page.buffers]
    assert flip_page_bytes(tmp_path, path, buffers, 6, [0, 1500, 2999], seed=1) > 0


def _spanning_table(n=3000, seed=11):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(20)]

    def longish(i):
        if i % 97 == 5:
            return list(range(i, i + 9000))  # spans several 4096-value chunks
        return _lists(rng, 1, lambda: int(rng.integers(0, 50)))[0]

    return pa.table({
        "long": pa.array([longish(i) for i in range(n)], pa.list_(pa.int32())),
        "dict": pa.array(_lists(rng, n, lambda: None if rng.random() < 0.1 else
                                words[int(rng.integers(0, 20))]), pa.list_(pa.string())),
        "bools": pa.array(_lists(rng, n, lambda: None if rng.random() < 0.2 else
                                 bool(rng.integers(0, 2))), pa.list_(pa.bool_())),
        "vec": pa.array(_lists(rng, n, lambda: [float(x) for x in rng.random(4)]),
                        pa.list_(pa.list_(pa.float32(), 4))),
        "deep": pa.array(_lists(rng, n, lambda: None if rng.random() < 0.1 else
                                {"a": int(rng.integers(0, 9)),
                                 "b": _lists(rng, 1, lambda: int(rng.integers(0, 9)))[0]}),
                         pa.large_list(pa.struct([("a", pa.int64()),
                                                  ("b", pa.list_(pa.int8()))]))),
    })


@pytest.mark.parametrize("ver", ["2.1", "2.2"])
def test_takes_of_rows_spanning_chunks(tmp_path, ver):
    """Rows whose levels span several chunks, dictionary strings, booleans and vectors
    inside lists: takes (sorted, unsorted, repeated) and ranges gather exactly the
    rows' levels and values."""
    t = _spanning_table()
    path = str(tmp_path / "s.lance")
    with LanceFileWriter(path, version=ver) as w:
        w.write_batch(t)
    r = LanceFileReader(path)
    kinds = {p.description for c in r.metadata().columns for p in c.pages}
    assert any("dict=" in k for k in kinds)
    assert r.read_all().to_table().equals(t)
    rng = np.random.default_rng(2)
    n = t.num_rows
    long_rows = [i for i in range(n) if i % 97 == 5]
    for idx in (np.sort(rng.choice(n, 300, replace=False)), rng.integers(0, n, 300),
                np.array(long_rows[:5] + long_rows[:2] + [0, n - 1, 1, 2]),
                np.array([long_rows[3]]), np.arange(long_rows[2] - 3, long_rows[2] + 4)):
        got = LanceFileReader(path).take_rows(idx).to_table()
        got.validate(full=True)
        assert got.equals(t.take(idx))
    for start, k in [(long_rows[1], 1), (long_rows[1] - 1, 3), (0, n), (n - 7, 7)]:
        assert r.read_range(start, k).to_table().equals(t.slice(start, k))
