"""Blobs inside structs (as pylance 14 writes them): the blob page's descriptors carry
each null row's definition level, whichever struct layer made it null. Blobs inside
lists are refused (pylance 14 writes but cannot read them)."""

import pathlib

import lance.file as lf
import pyarrow as pa
import pytest

from lancenb.errors import NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter
from tests._tables import assert_tables_equal, flip_page_bytes

BLOB = {"lance-encoding:blob": "true"}
N = 600

FIELDS = {
    "struct": pa.field("c", pa.struct([pa.field("b", pa.large_binary(), True, BLOB),
                                       ("x", pa.int32())])),
    "deep": pa.field("c", pa.struct([("s", pa.struct([pa.field("b", pa.large_binary(), True,
                                                                 BLOB)]))])),
    "not_null": pa.field("c", pa.struct([pa.field("b", pa.large_binary(), False, BLOB)]),
                         False),
}


def _values(name):
    out = []
    for i in range(N):
        val = b"v%d;" % i * (i % 40)
        if name == "struct":
            out.append(None if i % 7 == 3 else {"b": None if i % 5 == 1 else val, "x": i})
        elif name == "deep":
            out.append(None if i % 9 == 2 else {"s": None if i % 4 == 1 else
                                                {"b": None if i % 6 == 5 else val}})
        else:
            out.append({"b": val})
    return out


def _table(name):
    f = FIELDS[name]
    return pa.table({"c": pa.array(_values(name), f.type)}, schema=pa.schema([f]))


ROWS = [0, 1, 2, 3, 99, 100, 101, 599]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_lancenb_writes_pylance_reads(tmp_path, name, version):
    t = _table(name)
    p = str(tmp_path / "f.lance")
    with LanceFileWriter(p, version=version) as w:
        for b in t.to_batches(max_chunksize=100):
            w.write_batch(b)
    theirs = lf.LanceFileReader(p)
    assert_tables_equal(theirs.read_all().to_table(), t)
    assert_tables_equal(theirs.take_rows(ROWS).to_table(), t.take(ROWS))
    ours = LanceFileReader(p)
    assert "blob_layout" in str(ours.metadata().columns[0].pages[0].layout)
    assert_tables_equal(ours.take_rows([599, 3, 3, 0]).to_table(), t.take([599, 3, 3, 0]))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_pylance_writes_lancenb_reads(tmp_path, name, version):
    t = _table(name)
    p = str(tmp_path / "f.lance")
    w = lf.LanceFileWriter(p, version=version)
    w.write_batch(t)
    w.close()
    r = LanceFileReader(p)
    assert_tables_equal(r.read_all().to_table(), t)
    assert_tables_equal(r.take_rows([5, 0, 7, 7, N - 1]).to_table(), t.take([5, 0, 7, 7, N - 1]))
    assert_tables_equal(r.read_range(3, 200).to_table(), t.slice(3, 200))


def test_blobs_inside_lists_are_refused(tmp_path):
    f = pa.field("c", pa.list_(pa.field("item", pa.large_binary(), True, BLOB)))
    t = pa.table({"c": pa.array([[b"ab"]], f.type)}, schema=pa.schema([f]))
    with pytest.raises(NotSupportedError, match="inside lists"):
        with LanceFileWriter(str(tmp_path / "f.lance")) as w:
            w.write_batch(t)
    assert not (tmp_path / "f.lance").exists()


def test_damaged_descriptors_raise_lance_errors(tmp_path):
    t = _table("struct")
    p = pathlib.Path(tmp_path / "f.lance")
    with LanceFileWriter(str(p)) as w:
        w.write_batch(t)
    bufs = LanceFileReader(str(p)).metadata().columns[0].pages[0].buffers
    assert flip_page_bytes(tmp_path, p, bufs, 8, [0, 300, N - 1], seed=3) > 0
