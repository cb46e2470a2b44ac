"""Map columns (Lance 2.2 only, as in pylance 14): encoded as list<entries: struct<key,
value>>, recorded as logical type ``map``; interop both ways, random access, refusals."""

import lance
import lance.file as lf
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancenb
from lancenb.errors import NotSupportedError, SchemaError
from lancenb.file import LanceFileReader, LanceFileWriter
from tests._tables import assert_tables_equal

N = 3000


def _table(n=N):
    rng = np.random.default_rng(4)
    m1 = [None if k % 11 == 0 else [(f"k{j}", None if (k + j) % 7 == 0 else k * j)
                                    for j in range(k % 4)] for k in range(n)]
    m2 = [[(k, [float(k)] * (k % 3))] if k % 5 else [] for k in range(n)]
    st = [{"id": k, "attrs": None if k % 9 == 0 else [("a", f"v{k % 13}")]} for k in range(n)]
    lm = [[[(1, "x")], None, []] if k % 2 else None for k in range(n)]
    return pa.table({
        "m": pa.array(m1, pa.map_(pa.string(), pa.int64())),
        "m2": pa.array(m2, pa.map_(pa.int32(), pa.list_(pa.float64()))),
        "st": pa.array(st, pa.struct([("id", pa.int64()), ("attrs", pa.map_(pa.string(),
                                                                               pa.string()))])),
        "lm": pa.array(lm, pa.list_(pa.map_(pa.int8(), pa.string()))),
        "x": pa.array(rng.random(n)),
    })


@pytest.fixture(scope="module")
def table():
    return _table()


def _write_lancenb(path, t, **kw):
    with LanceFileWriter(path, version="2.2", **kw) as w:
        for b in t.to_batches(max_chunksize=700):
            w.write_batch(b)


def test_lancenb_writes_maps_pylance_reads(tmp_path, table):
    p = str(tmp_path / "m.lance")
    _write_lancenb(p, table, data_cache_bytes=40_000)
    got = lf.LanceFileReader(p).read_all().to_table()
    assert got.schema.equals(table.schema)
    assert_tables_equal(got, table)


def test_pylance_writes_maps_lancenb_reads(tmp_path, table):
    p = str(tmp_path / "m.lance")
    w = lf.LanceFileWriter(p, version="2.2")
    w.write_batch(table)
    w.close()
    r = LanceFileReader(p)
    assert r.schema.equals(table.schema)
    assert_tables_equal(r.read_all().to_table(), table)
    rows = [0, 1, N - 1, 11, 11, 1500, 7]
    assert_tables_equal(r.take_rows(rows).to_table(), table.take(rows))
    assert_tables_equal(r.read_range(100, 900).to_table(), table.slice(100, 900))


def test_map_take_and_range_equal_slices(tmp_path, table):
    p = str(tmp_path / "m.lance")
    _write_lancenb(p, table, data_cache_bytes=40_000)
    r = LanceFileReader(p)
    rows = np.array([N - 1, 0, 699, 700, 701, 1234, 1234])
    assert_tables_equal(r.take_rows(rows).to_table(), table.take(rows))
    for start, n in ((0, N), (699, 2), (N - 1, 1), (500, 1500)):
        assert_tables_equal(r.read_range(start, n).to_table(), table.slice(start, n))


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_maps_need_2_2(tmp_path, table, version):
    p = str(tmp_path / "m.lance")
    with pytest.raises(NotSupportedError, match="2.2"):
        with LanceFileWriter(p, version=version) as w:
            w.write_batch(table.select(["m"]))
    with pytest.raises((NotImplementedError, RuntimeError, ValueError)):  # pylance refuses too
        w = lf.LanceFileWriter(p, version=version)
        w.write_batch(table.select(["m"]))
        w.close()


def test_sorted_keys_are_refused(tmp_path):
    t = pa.table({"m": pa.array([[(1, 2)]], pa.map_(pa.int32(), pa.int32(), keys_sorted=True))})
    with pytest.raises(SchemaError, match="keys_sorted"):
        with LanceFileWriter(str(tmp_path / "m.lance"), version="2.2") as w:
            w.write_batch(t)


def test_map_dataset_both_ways(tmp_path, table):
    a = str(tmp_path / "a")
    lancenb.write_dataset(table, a, data_storage_version="2.2", max_rows_per_file=1000)
    assert_tables_equal(lance.dataset(a).to_table(), table)
    b = str(tmp_path / "b")
    lance.write_dataset(table, b, max_rows_per_file=1000)  # pylance's default is 2.2
    ds = lancenb.dataset(b)
    assert_tables_equal(ds.to_table(), table)
    assert_tables_equal(ds.to_table(filter="x < 0.5"), table.filter(pc.less(
        table["x"], 0.5)))
