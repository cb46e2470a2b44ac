"""Booleans in full-zip pages (``structural-encoding=fullzip``): pylance zips them one
byte a value (``flat(8)``, 0 or 1), top-level, in structs and in lists. lancenb reads
and writes the same bytes (found by the dataset round-trip property test: a pylance
``list<bool>`` page was refused as "8-bit values for a bool column")."""

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader as PyReader
from lance.file import LanceFileWriter as PyWriter

from lancenb.errors import CorruptFileError
from lancenb.file import LanceFileReader, LanceFileWriter

META = {"lance-encoding:structural-encoding": "fullzip"}


def _cases():
    rng = np.random.default_rng(3)
    flat = pa.array([None if i % 7 == 0 else bool(i % 3) for i in range(300)])
    lists = pa.array([None if i % 13 == 0 else
                      [bool(x) if x < 2 else None for x in rng.integers(0, 3, i % 5)]
                      for i in range(300)], pa.list_(pa.bool_()))
    struct = pa.StructArray.from_arrays([flat], ["b"])
    return {"flat": flat, "list": lists, "struct": struct}


def _write(cls, path, t, version):
    w = cls(str(path), t.schema, version=version)
    w.write_batch(t)
    w.close()
    return str(path)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("case", ["flat", "list", "struct"])
def test_booleans_zipped_a_byte_each_both_ways(tmp_path, version, case):
    arr = _cases()[case]
    t = pa.Table.from_arrays([arr], schema=pa.schema([pa.field("c", arr.type, metadata=META)]))
    ours = _write(LanceFileWriter, tmp_path / "a.lance", t, version)
    theirs = _write(PyWriter, tmp_path / "b.lance", t, version)
    assert (tmp_path / "a.lance").read_bytes() == (tmp_path / "b.lance").read_bytes()
    assert LanceFileReader(ours).metadata().columns[0].pages[0].description == "full_zip:flat(8)"
    idx = [299, 0, 13, 77, 150]
    for path in (ours, theirs):
        assert PyReader(path).read_all().to_table().equals(t)
        r = LanceFileReader(path)
        assert r.read_all().to_table().equals(t)
        assert r.take_rows(idx).to_table().equals(t.take(idx))


def test_a_boolean_byte_other_than_0_or_1_is_corrupt(tmp_path):
    arr = pa.array([True, False, True, True])
    t = pa.Table.from_arrays([arr], schema=pa.schema([pa.field("c", arr.type, metadata=META)]))
    path = _write(LanceFileWriter, tmp_path / "a.lance", t, "2.1")
    raw = bytearray((tmp_path / "a.lance").read_bytes())
    assert raw[:4] == bytes([1, 0, 1, 1])  # the page starts the file: one byte a value
    raw[2] = 7
    (tmp_path / "a.lance").write_bytes(bytes(raw))
    with pytest.raises(CorruptFileError, match="not 0 or 1"):
        LanceFileReader(path).read_all()
