"""Regression tests for bugs the property tests (``property_tests/``) found, each
named after what it reproduces and carrying the minimised input."""

from __future__ import annotations

import os

import lance.file as lf
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

from lancenb.file import LanceFileReader, LanceFileWriter


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_fullzip_struct_leaf_without_any_nulls(tmp_path, version):
    """A struct child whose page went full-zip (a value >= 256 B) with no null struct
    and no null value has no rep/def levels at all: the writer wrote no items."""
    long = "bbcbbaaaacbcbccbcacaacacabcccccbbaccbcacbbaacbcbacabcaabb" * 6
    t = pa.table({"c1": pa.array([{"a": long}])})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, version=version) as w:
        w.write_batch(t)
    assert_tables_equal(LanceFileReader(path).read_all().to_table(), t)
    assert_tables_equal(lf.LanceFileReader(path).read_all().to_table(), t)


def test_nan_inside_nested_vectors_round_trips_bit_for_bit(tmp_path):
    """list<struct<fixed_size_list<float>[8]>> with NaN: values survive exactly (the
    first failure here was the test helper comparing NaN with Arrow's equality)."""
    t = pa.table({"c0": pa.array([[{"a": [None] * 7 + [float("nan")]}]],
                                 pa.list_(pa.struct([("a", pa.list_(pa.float32(), 8))])))})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, t.schema, version="2.1") as w:
        w.write_batch(t)
    got = LanceFileReader(path).read_all().to_table()
    assert_tables_equal(got, t)
    assert_tables_equal(lf.LanceFileReader(path).read_all().to_table(), t)


def test_top_level_metadata_applies_to_nested_leaves(tmp_path):
    """Found by the property above: pylance applies a nested field's
    ``lance-encoding:*`` metadata to its leaf columns (and uses the top-level field's,
    not the leaf's); lancenb must do the same."""
    t = pa.table({"c0": pa.array([[[i, i + 1]] for i in range(10)],
                                 pa.list_(pa.list_(pa.int8())))})
    s = pa.schema([t.schema.field(0).with_metadata(
        {"lance-encoding:structural-encoding": "fullzip"})])
    kinds = {}
    for who in ("lancenb", "pylance"):
        path = str(tmp_path / f"{who}.lance")
        w = (LanceFileWriter if who == "lancenb" else lf.LanceFileWriter)(path, s,
                                                                          version="2.1")
        w.write_batch(t.cast(s))
        w.close()
        kinds[who] = [p.layout.WhichOneof("layout")
                      for c in LanceFileReader(path).metadata().columns for p in c.pages]
    assert kinds["pylance"] == ["full_zip_layout"]
    assert kinds["lancenb"] == kinds["pylance"]


@pytest.mark.parametrize("typ, value", [
    (pa.bool_(), True), (pa.bool_(), False), (pa.large_string(), "q" * 40),
    (pa.large_binary(), b"xyz"), (pa.large_binary(), b""), (pa.string(), "qq"),
])
@pytest.mark.parametrize("shape", ["flat", "struct", "list", "nullable"])
def test_pylance_22_constant_pages(tmp_path, typ, value, shape):
    """Found by the pylance differential property: pylance 2.2 stores a constant
    boolean as one byte, and a large_string/large_binary constant with a 16-byte
    length part; lancenb refused both."""
    if shape == "struct":
        arr = pa.array([{"b": value}] * 3, pa.struct([("b", typ)]))
    elif shape == "list":
        arr = pa.array([[value, value], None, []], pa.list_(typ))
    elif shape == "nullable":
        arr = pa.array([value, None, value], typ)
    else:
        arr = pa.array([value] * 3, typ)
    t = pa.table({"c": arr})
    path = str(tmp_path / "p.lance")
    w = lf.LanceFileWriter(path, t.schema, version="2.2")
    w.write_batch(t)
    w.close()
    r = LanceFileReader(path)
    assert_tables_equal(r.read_all().to_table(), t)
    assert_tables_equal(r.take_rows([2, 0]).to_table(), t.take([2, 0]))


def test_lz4_unit_claiming_more_than_2gib_is_corrupt():
    """scripts/fuzz_corrupt.py: a pylance 2.2 file whose LZ4 size prefix was damaged
    to more than 2^31 made the lz4 library raise OverflowError."""
    from lancenb.errors import CorruptFileError

    path = os.path.join(os.path.dirname(__file__), "corrupt_inputs", "lz4_size_over_2gib.lance")
    with pytest.raises(CorruptFileError, match="LZ4 unit claims"):
        r = LanceFileReader(path)
        r.read_all().to_table()


def test_fixed_size_list_of_structs_is_refused_cleanly(tmp_path):
    """A fixed-size list of structs reached the vector path and failed with a numpy
    ValueError; until such lists are supported the writer says so."""
    from lancenb.errors import NotSupportedError

    t = pa.table({"f": pa.array([[{"a": 1}, {"a": 2}]] * 3,
                                pa.list_(pa.struct([("a", pa.int32())]), 2))})
    with pytest.raises(NotSupportedError, match="fixed_size_list"):  # (2.1; 2.2 has them)
        with LanceFileWriter(str(tmp_path / "f.lance"), t.schema, version="2.1") as w:
            w.write_batch(t)
