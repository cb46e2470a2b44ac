"""Arrow extension types (uuid, fixed_shape_tensor, bool8, json, pylance's blob v2, and
one nested in a struct) round-trip between lancenb and pylance in both directions.
JSON is the exception to what follows: Lance stores it as JSONB (more in
``test_json_interop.py``).

Lance stores them as their storage type tagged with ``ARROW:extension:*`` metadata
(``lancenb/file/extensions.py``); pylance reads lancenb's datasets back as the extension
types, and lancenb reads pylance's (and its own) as the same extension types.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.file.extensions import extension_schema, storage_schema

lance = pytest.importorskip("lance")
lance_blob = pytest.importorskip("lance.blob")

N = 5


def _tables():
    rng = np.random.default_rng(3)
    uuids = pa.array([uuid.UUID(int=int(i) + 1).bytes for i in range(N)], pa.uuid())
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(
        rng.standard_normal((N, 2, 3)).astype(np.float32))
    return {
        "uuid": pa.table({"id": np.arange(N), "u": uuids}),
        "tensor": pa.table({"id": np.arange(N), "t": tensor}),
        "bool8": pa.table({"b": pa.ExtensionArray.from_storage(
            pa.bool8(), pa.array([1, 0, None, 1, 0], pa.int8()))}),
        "nested": pa.table({"s": pa.StructArray.from_arrays(
            [uuids, pa.array(np.arange(N))], names=["u", "i"])}),
    }


@pytest.mark.parametrize("name", sorted(_tables()))
@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_extension_columns_round_trip(tmp_path, name, writer):
    t = _tables()[name]
    uri = str(tmp_path / "ds")
    (lancenb if writer == "lancenb" else lance).write_dataset(t, uri)
    assert lance.dataset(uri).to_table().equals(t)
    ds, theirs = lancenb.dataset(uri), lance.dataset(uri)
    # the extension types come back (stored as tagged storage types), as pylance gives them
    assert ds.schema.equals(t.schema) and ds.schema.equals(theirs.schema, check_metadata=True)
    got = ds.to_table()
    assert got.equals(t) and got.schema.equals(t.schema, check_metadata=True)
    for read in (lambda d: d.take([3, 0, 3]), lambda d: d.head(2),
                 lambda d: pa.Table.from_batches(list(d.to_batches(batch_size=2)),
                                                 schema=d.schema),
                 lambda d: d.scanner(batch_size=2).to_reader().read_all(),
                 lambda d: d.get_fragments()[0].take([1]),
                 lambda d: d.to_table(limit=0)):
        mine, want = read(ds), read(theirs)
        assert mine.equals(want) and mine.schema.equals(want.schema, check_metadata=True)
    # what lancenb works on inside: the storage types with the extension tags
    assert ds._schema.equals(storage_schema(t.schema), check_metadata=True)
    assert ds.to_table(filter="1 = 1").equals(t)


def test_extension_columns_append_and_fragments(tmp_path):
    t = _tables()["uuid"]
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri)
    lancenb.write_dataset(t, uri, mode="append")          # extension input again
    back = lancenb.dataset(uri).to_table()
    assert back.schema.equals(t.schema)
    lancenb.write_dataset(back, uri, mode="append")       # what it reads appends again
    stored = back.cast(storage_schema(t.schema))
    lancenb.write_dataset(stored, uri, mode="append")     # so does the stored form
    frag = lancenb.LanceFragment.create(uri, t)
    ds = lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Append([frag]),
                                     read_version=4)
    want = pa.concat_tables([t] * 7)  # t, t, back (t twice), stored (t twice), the fragment's t
    assert lance.dataset(uri).to_table().equals(want)
    assert ds.count_rows() == 7 * N and ds.to_table().equals(want)


def test_json_columns_are_stored_as_jsonb(tmp_path):
    """arrow.json is stored as pylance stores it (JSONB, lance.json) and read back as
    pylance reads it (tests/compat/test_json_interop.py has the details); text that is
    not JSON is refused with the column and row, and nothing is committed."""
    t = pa.table({"j": pa.array(['{"a": 1}', None], pa.json_())})
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri)
    want = lance.dataset(uri).to_table()
    assert want["j"].to_pylist() == ['{"a":1}', None]
    assert lancenb.dataset(uri).to_table().equals(want)
    bad = pa.table({"j": pa.array(["[1]", "{nope"], pa.json_())})
    with pytest.raises(lancenb.errors.InvalidInputError, match="column 'j', row 1"):
        lancenb.write_dataset(bad, str(tmp_path / "bad"))
    assert not (tmp_path / "bad" / "_versions").exists()


def test_blob_v2_input_column(tmp_path):
    """pylance's ``blob_array`` (extension ``lance.blob.v2``) as write input: a 2.2 blob
    column, whose bytes both libraries read back through ``take_blobs``."""
    payloads = [b"hello", b"world" * 300, None]
    t = pa.table({"id": [1, 2, 3], "b": lance_blob.blob_array(payloads)})
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri, data_storage_version="2.2")
    for ds in (lance.dataset(uri), lancenb.dataset(uri)):
        files = ds.take_blobs("b", indices=[0, 1])
        assert [f.read() for f in files] == payloads[:2]
    assert lancenb.dataset(uri).to_table(columns=["id"])["id"].to_pylist() == [1, 2, 3]


def test_storage_schema_leaves_plain_schemas_alone():
    s = pa.schema([("a", pa.int64()), ("l", pa.list_(pa.struct([("x", pa.string())])))])
    assert storage_schema(s) is None
    assert extension_schema(s) is s


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_extension_columns_through_the_file_api(tmp_path, version, writer):
    """``LanceFileWriter`` takes extension columns (stored tagged, as pylance's does)
    and ``LanceFileReader``'s reads give them back as extension types, both ways."""
    from lance.file import LanceFileReader as TheirReader
    from lance.file import LanceFileWriter as TheirWriter

    from lancenb.file import LanceFileReader, LanceFileWriter

    t = _tables()["uuid"].append_column("t", _tables()["tensor"]["t"])
    path = str(tmp_path / "f.lance")
    cls = LanceFileWriter if writer == "lancenb" else TheirWriter
    with cls(path, version=version) as w:
        w.write_batch(t)
        w.write_batch(t.slice(1, 2).to_batches()[0])
    want = pa.concat_tables([t, t.slice(1, 2)])
    r = LanceFileReader(path)
    assert r.read_all().to_table().equals(want)
    assert r.read_all().to_table().schema.equals(want.schema, check_metadata=True)
    assert r.read_range(2, 4).to_table().equals(want.slice(2, 4))
    assert r.take_rows([6, 0, 3]).to_table().equals(want.take([6, 0, 3]))
    assert r.metadata().schema.equals(want.schema)
    assert r.schema.equals(storage_schema(want.schema), check_metadata=True)  # as stored
    assert TheirReader(path).read_all().to_table().equals(want)


def test_pylance_json_columns(tmp_path):
    """A pylance dataset with an ``arrow.json`` column (stored as JSONB, logical type
    ``json``) reads as pylance reads it (``arrow.json`` text) through scans, takes and
    ``IS NULL`` filters; deletes and schema evolution keep it, and pylance still reads
    the JSON after lancenb's commits."""
    uri = str(tmp_path / "ds")
    t = pa.table({"j": pa.array(['{"a": 1}', None, "[1,2]", '"s"'], pa.json_()),
                  "x": [1, 2, 3, 4]})
    lance.write_dataset(t, uri)
    ds = lancenb.dataset(uri)
    theirs = lance.dataset(uri)
    assert ds.schema == theirs.schema and ds.count_rows("x > 1") == 3
    assert ds.to_table().equals(theirs.to_table())
    assert ds.take([3, 0]).equals(theirs.take([3, 0]))
    assert ds.to_table(columns=["x"], filter="j IS NULL")["x"].to_pylist() == [2]
    ds.delete("x = 2")
    lancenb.dataset(uri).add_columns({"y": "x * 10"})
    want = lance.dataset(uri).to_table()
    assert want["j"].to_pylist() == ['{"a":1}', "[1,2]", '"s"']
    assert lancenb.dataset(uri).to_table().equals(want)
