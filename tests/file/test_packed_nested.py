"""Packed structs inside structs and lists: one leaf column stored row by row, with
the enclosing layers' rep/def levels (as pylance 14 writes them in 2.1 and 2.2)."""

import lance.file as lf
import numpy as np
import pyarrow as pa
import pytest

from lancenb.errors import NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter
from tests._tables import assert_tables_equal

PK = {"lance-encoding:packed": "true"}
POINT = pa.struct([("a", pa.int32()), ("b", pa.float32())])
N = 1500

FIELDS = {
    "in_struct": pa.field("c", pa.struct([pa.field("p", POINT, True, PK), ("x", pa.string())])),
    "in_list": pa.field("c", pa.list_(pa.field("item", POINT, True, PK))),
    "deep": pa.field("c", pa.list_(pa.struct([("q", pa.large_list(pa.field(
        "item", pa.struct([("a", pa.int16()), ("b", pa.float64())]), True, PK)))]))),
}


def _values(name, n=N):
    out = []
    for k in range(n):
        pt = None if k % 7 == 3 else {"a": k, "b": k / 2}
        if name == "in_struct":
            out.append(None if k % 11 == 5 else {"p": pt, "x": f"s{k % 5}"})
        elif name == "in_list":
            out.append(None if k % 13 == 1 else [pt] * (k % 3))
        else:
            out.append(None if k % 9 == 2 else [{"q": None if k % 4 == 0 else [pt, pt]}]
                       * (k % 3))
    return out


def _table(name):
    f = FIELDS[name]
    return pa.table({"c": pa.array(_values(name), f.type), "i": np.arange(N)},
                    schema=pa.schema([f, ("i", pa.int64())]))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_pylance_reads_lancenb(tmp_path, name, version):
    t = _table(name)
    p = str(tmp_path / "f.lance")
    with LanceFileWriter(p, version=version, data_cache_bytes=20_000) as w:
        for b in t.to_batches(max_chunksize=400):
            w.write_batch(b)
    assert_tables_equal(lf.LanceFileReader(p).read_all().to_table(), t)
    r = LanceFileReader(p)
    # the packed struct is one column whose values are packed rows
    cols = r.metadata().columns
    assert len(cols) == len(r._backend._leaves(0)) + 1 == (3 if name == "in_struct" else 2)
    enc = [str(pg.layout) for pg in cols[0].pages]
    assert all("packed_struct" in e for e in enc if "mini_block" in e)
    rows = [N - 1, 0, 399, 400, 401, 7, 7]
    assert_tables_equal(r.take_rows(rows).to_table(), t.take(rows))
    assert_tables_equal(r.read_range(390, 500).to_table(), t.slice(390, 500))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_lancenb_reads_pylance(tmp_path, name, version):
    t = _table(name)
    p = str(tmp_path / "f.lance")
    w = lf.LanceFileWriter(p, version=version)
    w.write_batch(t)
    w.close()
    r = LanceFileReader(p)
    assert_tables_equal(r.read_all().to_table(), t)
    rows = [3, N - 1, 0, 5, 5]
    assert_tables_equal(r.take_rows(rows).to_table(), t.take(rows))
    # pylance stores the packed struct as one leaf column of packed rows too
    assert "packed_struct" in str(r.metadata().columns[0].pages[0].layout)


def test_packed_with_variable_children_inside_nested_is_refused(tmp_path):
    f = pa.field("c", pa.struct([pa.field("p", pa.struct([("a", pa.int32()),
                                                          ("s", pa.string())]), True, PK)]))
    t = pa.table({"c": pa.array([{"p": {"a": 1, "s": "x"}}], f.type)}, schema=pa.schema([f]))
    with pytest.raises(NotSupportedError):
        with LanceFileWriter(str(tmp_path / "f.lance")) as w:
            w.write_batch(t)
    assert not (tmp_path / "f.lance").exists()
