"""JSON columns between lancenb and pylance 14, both ways.

pylance stores an ``arrow.json`` column (``pa.json_()``) as JSONB in a ``large_binary``
field tagged ``lance.json`` (logical type ``json``) in every file version, at any depth
(struct children, list items), and reads it back as ``arrow.json`` text in serde_json's
compact form. lancenb writes the same JSONB bytes and reads both libraries' files to
the text pylance returns; text that is not JSON is refused on write.
"""

from __future__ import annotations

import glob
import json
import random
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancenb
from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError

lance = pytest.importorskip("lance")

VERSIONS = ["2.0", "2.1", "2.2"]

# edge values: numbers (ints at every width, u64/i64 ends, doubles in both notations,
# -0.0, overflow to infinity), strings (escapes, control characters, lone surrogates,
# non-ASCII), nesting, empty containers, top-level scalars, keys to sort
EDGE = ['{"a": 1}', "[1,2,3]", "1", "-5", "0", "-0", "0.1", "1e300", "1.5", "-0.0", "1.0",
        "18446744073709551615", "18446744073709551616", "-9223372036854775808",
        "-9223372036854775809", "127", "128", "-128", "-129", "65535", "65536", "4294967296",
        "1e15", "1e16", "1e-5", "1e-6", "5e-324", "1.7976931348623157e308", "1e400",
        "-1e400", "123456.789", "0.30000000000000004", "12345678901234567890123", "3.0e2",
        "1.00000000000000011102230246251565404236316680908203125",
        '"x\\"y\\\\z"', '"\\u00e9\\n\\u0001\\u001f\\b\\t\\f\\r\\/"', '"é/€😀"', '"\\ud800"',
        '"\\ud83d\\ude00"', '"\\ud83d\\u0041"', "null", "true", "false", "{}", "[]",
        '{"b":[1,{"c":null}],"a":"s"}', '{"b":1,"a":2,"B":3,"aa":4,"é":5,"":6}',
        ' { "z" : [ 1 , 2.5 , "x" ] ,\n\t"a" : { } } ', "[[[[[]]]]]", '"a\\u0000b"']


def _jsonb_of(uri: str, column: str = "j") -> list:
    """The stored bytes of a dataset's JSON column, read with pylance's file reader."""
    out = []
    for path in sorted(glob.glob(f"{uri}/data/*.lance")):
        t = lance.file.LanceFileReader(path).read_all().to_table()
        out += t.column(column).to_pylist()
    return out


def _rand_value(rng: random.Random, depth=0):
    r = rng.random()
    if depth < 3 and r < 0.15:
        return {rng.choice("abcdefgé") + str(i): _rand_value(rng, depth + 1)
                for i in range(rng.randint(0, 4))}
    if depth < 3 and r < 0.3:
        return [_rand_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if r < 0.45:
        return rng.randint(-2**64, 2**64)
    if r < 0.6:  # any finite double
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        return x if np.isfinite(x) else 0.5
    if r < 0.7:
        return rng.uniform(-1e6, 1e6)
    if r < 0.9:
        return "".join(rng.choice('ab"\\\n\x01é😀 ') for _ in range(rng.randint(0, 10)))
    return rng.choice([None, True, False])


def _rand_texts(n: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = json.dumps(_rand_value(rng), ensure_ascii=rng.random() < 0.5, allow_nan=False)
        out.append(None if i % 17 == 5 else text)
    return out


def _table(texts):
    js = pa.array(texts, pa.json_())
    n = len(texts)
    return pa.table({"id": pa.array(range(n), pa.int64()), "j": js,
                     "s": pa.StructArray.from_arrays([js, pa.array(range(n))], names=["x", "y"]),
                     "l": pa.ListArray.from_arrays(pa.array(range(n + 1), pa.int32()), js)})


@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_writes_lancenb_reads(tmp_path, version):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(EDGE + [None]), uri, data_storage_version=version)
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    assert ours.schema == theirs.schema
    want = theirs.to_table()
    assert ours.to_table().equals(want)
    assert ours.take([40, 3, 0]).equals(theirs.take([40, 3, 0]))
    assert ours.head(5).equals(theirs.head(5))
    got = pa.Table.from_batches(list(ours.to_batches(batch_size=7)))
    assert got.equals(want.combine_chunks())
    for f in ("j IS NULL", "j IS NOT NULL AND id > 3", "s.x IS NULL"):
        assert ours.to_table(filter=f).equals(theirs.to_table(filter=f)), f
    proj = {"k": "j", "n": "j IS NULL"}  # (pylance's n is "not null": values compared)
    assert ours.to_table(columns=proj).to_pylist() == theirs.to_table(columns=proj).to_pylist()
    assert ours.to_table(columns=proj).schema.field("k").type == pa.json_()


@pytest.mark.parametrize("version", VERSIONS)
def test_lancenb_writes_pylance_reads(tmp_path, version):
    """Same JSONB bytes as pylance's own write of the same text, and the same text
    read back by both libraries."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    t = _table(EDGE + [None])
    lancenb.write_dataset(t, ours, data_storage_version=version)
    lance.write_dataset(t, theirs, data_storage_version=version)
    assert lance.dataset(ours).lance_schema == lance.dataset(theirs).lance_schema
    assert _jsonb_of(ours) == _jsonb_of(theirs)
    want = lance.dataset(theirs).to_table()
    assert lance.dataset(ours).to_table().equals(want)
    assert lancenb.dataset(ours).to_table().equals(want)
    assert lancenb.dataset(ours).data_storage_version == version


def test_random_values_both_ways(tmp_path):
    texts = _rand_texts(3000, seed=7)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancenb.write_dataset(_table(texts), ours)
    lance.write_dataset(_table(texts), theirs)
    assert _jsonb_of(ours) == _jsonb_of(theirs)
    want = lance.dataset(theirs).to_table()
    assert lancenb.dataset(theirs).to_table().equals(want)
    assert lance.dataset(ours).to_table().equals(want)


def test_appends_from_both_sides(tmp_path):
    uri = str(tmp_path / "ds")
    a, b, c = _table(EDGE[:10]), _table(EDGE[10:30]), _table(EDGE[30:])
    lance.write_dataset(a, uri)
    lancenb.write_dataset(b, uri, mode="append")
    lance.write_dataset(c, uri, mode="append")
    lancenb.write_dataset(lancenb.dataset(uri).to_table(), uri, mode="append")  # its own reads
    want = lance.dataset(uri).to_table()
    assert want.num_rows == 2 * len(EDGE)
    assert lancenb.dataset(uri).to_table().equals(want)
    assert want.slice(len(EDGE)).equals(want.slice(0, len(EDGE)).replace_schema_metadata(None)
                                        .cast(want.schema))
    lancenb.write_dataset(_table(["[1]"]), uri, mode="overwrite")
    assert lance.dataset(uri).to_table()["j"].to_pylist() == ["[1]"]


def test_fragment_create_and_file_api(tmp_path):
    """LanceFragment.create and LanceFileWriter store JSONB as pylance's do; both
    libraries' file readers give the JSONB (tagged lance.json), as pylance's does."""
    t = _table(EDGE)
    uri = str(tmp_path / "ds")
    frag = lancenb.LanceFragment.create(uri, t)
    lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Overwrite(t.schema, [frag]))
    assert lance.dataset(uri).to_table().equals(lance.write_dataset(
        t, str(tmp_path / "theirs")).to_table())
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    with lancenb.file.LanceFileWriter(ours) as w:
        w.write_batch(t)
    with lance.file.LanceFileWriter(theirs) as w:
        w.write_batch(t)
    want = lance.file.LanceFileReader(theirs).read_all().to_table()
    assert want.schema.field("j").metadata[b"ARROW:extension:name"] == b"lance.json"
    assert lance.file.LanceFileReader(ours).read_all().to_table().equals(want)
    assert lancenb.file.LanceFileReader(theirs).read_all().to_table().equals(want)


def test_nulls_and_empty(tmp_path):
    for texts in ([None, None, None], []):
        uri = str(tmp_path / f"ds{len(texts)}")
        t = _table(texts)
        lancenb.write_dataset(t, uri)
        theirs = lance.dataset(uri)
        assert theirs.schema == t.schema and theirs.to_table().equals(t)
        assert lancenb.dataset(uri).to_table().equals(t)
    empty = lancenb.write_dataset(pa.table({"j": pa.array([], pa.json_())}),
                                  str(tmp_path / "e"), schema=pa.schema([("j", pa.json_())]))
    assert empty.schema.field("j").type == pa.json_() and empty.count_rows() == 0


def test_large_column(tmp_path):
    """100k rows: both ways equal (the conversion is kernels; no per-row Python)."""
    texts = [json.dumps({"id": i, "v": [i * 0.5, str(i), i % 3 == 0], "k": {"n": -i}})
             for i in range(100_000)]
    texts[5] = None
    uri, theirs = str(tmp_path / "ds"), str(tmp_path / "theirs")
    t = pa.table({"j": pa.array(texts, pa.json_())})
    lancenb.write_dataset(t, uri)
    lance.write_dataset(t, theirs)
    want = lance.dataset(theirs).to_table()
    assert lance.dataset(uri).to_table().equals(want)
    assert lancenb.dataset(uri).to_table().equals(want)
    assert lancenb.dataset(theirs).to_table().equals(want)


@pytest.mark.parametrize("text,where", [
    ("{nope", "byte 1"), ("[1,]", "byte 3"), ("NaN", "byte 0"), ("01", "byte 0"),
    ("'a'", "byte 0"), ("", "byte 0"), ('"tab\there"', "byte 4"), ("[1] x", "byte 4"),
    ('"\\x41"', "byte 1"), ('{"a": 1, "a": 2}', "key 'a' twice")])
def test_invalid_json_is_refused(tmp_path, text, where):
    uri = str(tmp_path / "ds")
    t = pa.table({"j": pa.array(["1", "2", text], pa.json_())})
    with pytest.raises(InvalidInputError, match=f"column 'j', row 2.*{where}"):
        lancenb.write_dataset(t, uri)
    assert not (tmp_path / "ds" / "_versions").exists()


def test_invalid_json_in_a_later_batch_names_its_row(tmp_path):
    batches = [pa.record_batch({"j": pa.array(["1"] * 10, pa.json_())}),
               pa.record_batch({"j": pa.array(["2", "[", "3"], pa.json_())})]
    with pytest.raises(InvalidInputError, match="column 'j', row 11"):
        lancenb.write_dataset(iter(batches), str(tmp_path / "ds"), schema=batches[0].schema)
    js = pa.array(["1", "{"], pa.json_())
    nested = pa.table({"l": pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), js)})
    with pytest.raises(InvalidInputError, match=r"column 'l\[\]', value 1"):
        lancenb.write_dataset(nested, str(tmp_path / "n"))


def test_filters_json_cannot_evaluate_fail_clearly(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(EDGE[:5]), uri)
    ds = lancenb.dataset(uri)
    # (JSON functions read it: tests/expr/test_json_functions.py)
    for f in ("j = '[1,2,3]'", "j LIKE '%a%'", "s.x > 'a'"):
        with pytest.raises(NotSupportedError, match="is JSON.*IS NULL"):
            ds.to_table(filter=f)
    with pytest.raises(NotSupportedError, match="is JSON"):
        ds.to_table(columns={"n": "length(j)"})
    with pytest.raises(NotSupportedError, match="is or holds JSON.*is_null / is_valid"):
        ds.to_table(filter=pc.field("j") == "1")  # (it would compare the JSONB bytes)
    assert ds.to_table(filter=pc.field("j").is_valid() & (pc.field("id") > 1)).num_rows == 3
    assert ds.count_rows("j IS NOT NULL") == 5
    ds.delete("j IS NULL OR id = 1")
    assert lance.dataset(uri).to_table()["id"].to_pylist() == [0, 2, 3, 4]


def test_corrupt_jsonb_names_the_column_and_row(tmp_path):
    """JSONB written as such (a tagged large_binary column) is stored as given; bytes
    that are not JSONB are a CorruptFileError when read, naming dataset, column, row."""
    tag = {"ARROW:extension:name": "lance.json", "ARROW:extension:metadata": ""}
    schema = pa.schema([pa.field("j", pa.large_binary(), metadata=tag)])
    good = bytes.fromhex("20000000200000025001")  # 1
    for bad, what in [(good[:-1], "runs past"), (bytes.fromhex("20000000700000000000"),
                                                  "no known type"),
                      (good + b"\0", "do not fill"), (bytes.fromhex("2000000010000001ff"),
                                                      "not UTF-8")]:
        uri = str(tmp_path / f"ds{len(bad)}{bad[-1]}")
        lancenb.write_dataset(pa.table({"j": pa.array([good, bad], pa.large_binary())},
                                       schema=schema), uri)
        assert lance.dataset(uri).schema.field("j").type == pa.json_()
        ds = lancenb.dataset(uri)
        assert ds.take([0])["j"].to_pylist() == ["1"]
        with pytest.raises(CorruptFileError, match=f"'j', row 1: corrupt JSONB: .*{what}"):
            ds.to_table()


def test_update_and_merge_insert(tmp_path):
    """``update`` sets a JSON column from text (checked, stored as JSONB: pylance reads
    what its own update writes) or from a JSON column, never from bytes; merge_insert
    takes JSON from a JSON source column, refusing text or bytes a cast would store as
    they are."""
    t = pa.table({"id": [1, 2, 3], "j": pa.array(['{"a":1}', None, "[2]"], pa.json_()),
                  "k": pa.array(["7", "8", "9"], pa.json_()),
                  "b": pa.array([b"x", b"y", b"z"], pa.large_binary())})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancenb.write_dataset(t, ours)
    lance.write_dataset(t, theirs)
    for values, where in [({"j": "'{\"b\": [2, 1.5]}'"}, "id = 1"), ({"j": "NULL"}, "id = 3"),
                          ({"j": "concat('[', CAST(id AS STRING), ']')"}, "id = 2")]:
        lancenb.dataset(ours).update(values, where=where)
        lance.dataset(theirs).update(values, where=where)
    want = lance.dataset(theirs).to_table().sort_by("id")
    assert lance.dataset(ours).to_table().sort_by("id").equals(want)
    assert lancenb.dataset(ours).to_table().sort_by("id").equals(want)
    lancenb.dataset(ours).update({"j": "k"}, where="id = 3")
    assert lance.dataset(ours).to_table().sort_by("id")["j"].to_pylist()[2] == "9"
    with pytest.raises(InvalidInputError, match="invalid JSON"):
        lancenb.dataset(ours).update({"j": "'nope'"})
    with pytest.raises(InvalidInputError, match="JSON takes text or a JSON column"):
        lancenb.dataset(ours).update({"j": "b"})
    ds = lancenb.dataset(ours)
    src = pa.table({"id": [3, 4], "j": pa.array(['{"m": 1}', "[4]"], pa.json_())})
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    got = lance.dataset(ours).to_table().sort_by("id")
    assert got["j"].to_pylist() == ['{"b":[2,1.5]}', "[2]", '{"m":1}', "[4]"]
    assert lancenb.dataset(ours).to_table().sort_by("id").equals(got)
    for col in (pa.array(['{"m": 1}', "[4]"]), pa.array([b"{}", b"[4]"])):
        with pytest.raises(lancenb.errors.SchemaError, match="'j' is JSON in the dataset"):
            lancenb.dataset(ours).merge_insert("id").when_matched_update_all() \
                .execute(pa.table({"id": [3, 4], "j": col}))
