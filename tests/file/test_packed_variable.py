"""2.2 packed structs with variable-width children (VariablePackedStruct in full-zip
pages), as pylance 14 writes them; refusals where pylance refuses."""

import pathlib

import lance.file as lf
import numpy as np
import pyarrow as pa
import pytest

from lancenb.encodings.physical import packed_struct_variable as vpacked
from lancenb.errors import NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter
from tests._tables import assert_tables_equal, flip_page_bytes

PK = {"lance-encoding:packed": "true"}
N = 5000
TYPE = pa.struct([("s", pa.large_string()), ("b", pa.binary()), ("u", pa.uint8()),
                  ("f", pa.float64()), ("t", pa.string())])


def _table(n=N):
    rows = [{"s": "x" * (i % 3), "b": b"yy" * (i % 4), "u": i % 250, "f": i / 3,
             "t": f"row {i}" * (i % 2)} for i in range(n)]
    f = pa.field("c", TYPE, False, PK)
    return pa.table({"c": pa.array(rows, TYPE), "i": np.arange(n)},
                    schema=pa.schema([f, ("i", pa.int64())]))


ROWS = [0, 1, 999, 1000, 4999]


def test_lancenb_writes_pylance_reads(tmp_path):
    t = _table()
    p = str(tmp_path / "f.lance")
    with LanceFileWriter(p, version="2.2", data_cache_bytes=60_000) as w:
        for b in t.to_batches(max_chunksize=1000):
            w.write_batch(b)
    theirs = lf.LanceFileReader(p)
    assert_tables_equal(theirs.read_all().to_table(), t)
    assert_tables_equal(theirs.take_rows(ROWS).to_table(), t.take(ROWS))
    pages = LanceFileReader(p).metadata().columns[0].pages
    assert len(pages) > 1
    assert all("variable_packed_struct" in str(pg.layout) for pg in pages)


def test_pylance_writes_lancenb_reads(tmp_path):
    t = _table()
    p = str(tmp_path / "f.lance")
    w = lf.LanceFileWriter(p, version="2.2")
    w.write_batch(t)
    w.close()
    r = LanceFileReader(p)
    assert_tables_equal(r.read_all().to_table(), t)
    assert_tables_equal(r.take_rows([7, 0, 4999, 7]).to_table(), t.take([7, 0, 4999, 7]))
    assert_tables_equal(r.read_range(123, 3000).to_table(), t.slice(123, 3000))
    # pylance FSST-compresses the values of child "t" inside the rows
    vc = str(r.metadata().columns[0].pages[0].layout)
    assert "fsst" in vc


def test_same_bytes_as_pylance_without_compressed_children(tmp_path):
    typ = pa.struct([("s", pa.large_string()), ("b", pa.binary()), ("u", pa.uint8())])
    arr = pa.array([{"s": "x" * (i % 3), "b": b"yy" * (i % 4), "u": i % 250}
                    for i in range(N)], typ)
    t = pa.table({"c": arr}, schema=pa.schema([pa.field("c", typ, False, PK)]))
    theirs, mine = str(tmp_path / "p.lance"), str(tmp_path / "m.lance")
    w = lf.LanceFileWriter(theirs, version="2.2")
    w.write_batch(t)
    w.close()
    with LanceFileWriter(mine, version="2.2") as w:
        w.write_batch(t)
    assert pathlib.Path(mine).read_bytes() == pathlib.Path(theirs).read_bytes()


def test_pack_unpack_reference():
    """pack_rows lays children out as the module docstring says."""
    t = pa.array([{"a": 1, "s": "x"}, {"a": 2, "s": ""}], pa.struct([("a", pa.int32()),
                                                                    ("s", pa.string())]))
    block = vpacked.pack_rows(t)
    assert bytes(block.data) == bytes.fromhex("01000000" "01000000" "78" "02000000" "00000000")
    assert vpacked.unpack_rows(t.type, block, "x").equals(t)


def test_refusals(tmp_path):
    t = _table(10)
    with pytest.raises(NotSupportedError, match="2.2"):
        with LanceFileWriter(str(tmp_path / "a.lance"), version="2.1") as w:
            w.write_batch(t)
    nulls = pa.table({"c": pa.array([{"s": None, "b": b"", "u": 1, "f": 1.0, "t": ""}], TYPE)},
                     schema=pa.schema([pa.field("c", TYPE, True, PK)]))
    with pytest.raises(NotSupportedError, match="nulls"):
        with LanceFileWriter(str(tmp_path / "b.lance"), version="2.2") as w:
            w.write_batch(nulls)
    boolean = pa.struct([("s", pa.string()), ("ok", pa.bool_())])
    with pytest.raises(NotSupportedError, match="packed structs need"):
        with LanceFileWriter(str(tmp_path / "c.lance"), version="2.2") as w:
            w.write_batch(pa.table({"c": pa.array([{"s": "a", "ok": True}], boolean)},
                                   schema=pa.schema([pa.field("c", boolean, True, PK)])))
    for name in "abc":
        assert not (tmp_path / f"{name}.lance").exists()


def test_damaged_rows_raise_lance_errors(tmp_path):
    p = tmp_path / "f.lance"
    with LanceFileWriter(str(p), version="2.2") as w:
        w.write_batch(_table(300))
    bufs = LanceFileReader(str(p)).metadata().columns[0].pages[0].buffers
    assert flip_page_bytes(tmp_path, p, bufs, 10, [0, 150, 299], seed=5) > 0


VEC = pa.struct([("a", pa.int32()), ("v", pa.list_(pa.float32(), 3)), ("w", pa.list_(
    pa.int16(), 2))])


def _vector_table(n=300):
    rows = [{"a": i, "v": [i, i + 1.0, 2.0], "w": [i, -i]} for i in range(n)]
    return pa.table({"c": pa.array(rows, VEC)}, schema=pa.schema([pa.field("c", VEC, True,
                                                                            PK)]))


def test_vector_children_pack_as_pylance_does(tmp_path):
    """pylance packs a struct with vector children as a VariablePackedStruct (2.2 only),
    each vector a fixed-size field."""
    t = _vector_table()
    theirs, mine = str(tmp_path / "p.lance"), str(tmp_path / "m.lance")
    w = lf.LanceFileWriter(theirs, version="2.2")
    w.write_batch(t)
    w.close()
    with LanceFileWriter(mine, version="2.2") as w:
        w.write_batch(t)
    assert pathlib.Path(mine).read_bytes() == pathlib.Path(theirs).read_bytes()
    assert_tables_equal(LanceFileReader(theirs).read_all().to_table(), t)
    part = t.slice(7, 150)  # a sliced batch: the vectors' item offsets count
    with LanceFileWriter(mine, version="2.2") as w:
        w.write_batch(part)
    assert_tables_equal(lf.LanceFileReader(mine).read_all().to_table(), part)
    assert_tables_equal(LanceFileReader(mine).take_rows([149, 0, 3]).to_table(),
                        part.take([149, 0, 3]))
    with pytest.raises(NotSupportedError, match="2.2"):
        with LanceFileWriter(str(tmp_path / "x.lance"), version="2.1") as w:
            w.write_batch(t)
