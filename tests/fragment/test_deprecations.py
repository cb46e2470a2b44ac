"""pylance's deprecated fragment APIs warn in lancenb as in pylance, and still work."""

import pickle

import lance
import pyarrow as pa
import pytest

import lancenb


@pytest.fixture
def uri(tmp_path):
    lance.write_dataset(pa.table({"a": range(10)}), str(tmp_path / "ds"))
    return str(tmp_path / "ds")


@pytest.mark.parametrize("lib", [lance, lancenb])
def test_data_file_path_call_warns(uri, lib):
    df = lib.dataset(uri).get_fragments()[0].metadata.files[0]
    with pytest.deprecated_call():
        called = df.path()
    assert called == df.path and isinstance(called, str)
    assert pickle.loads(pickle.dumps(df)) == df
    with pytest.deprecated_call():
        assert df.field_ids() == [0]
    with pytest.deprecated_call():
        assert lib.dataset(uri).get_fragments()[0].metadata.data_files()[0] == df


def test_paths_equal_pylances(uri):
    ours = lancenb.dataset(uri).get_fragments()[0].metadata
    theirs = lance.dataset(uri).get_fragments()[0].metadata
    assert ours.files[0].path == theirs.files[0].path
    assert repr(ours.files[0]).startswith(repr(theirs.files[0])[:-1].split(", fields")[0])
    assert ours.to_json()["files"][0]["path"] == theirs.to_json()["files"][0]["path"]


@pytest.mark.parametrize("lib", [lance, lancenb])
def test_merge_with_a_pyarrow_schema_warns(uri, lib):
    frag = lib.dataset(uri).get_fragments()[0]
    meta, schema = frag.merge_columns(lambda b: pa.record_batch({"c": pa.array(range(10))}))
    with pytest.deprecated_call():
        op = lib.LanceOperation.Merge([meta], schema.to_pyarrow())
    ds = lib.LanceDataset.commit(uri, op, read_version=1)
    assert ds.to_table().column_names == ["a", "c"]
    # the LanceSchema merge_columns returns does not warn (pytest: warnings are errors)
    lib.LanceOperation.Merge([meta], schema)
    # a committed Merge read back does not warn either
    assert lancenb.dataset(uri).read_transaction(2) is not None


def test_unpickled_path_still_callable(uri):
    meta = lancenb.dataset(uri).get_fragments()[0].metadata
    back = pickle.loads(pickle.dumps(meta))
    assert back == meta
    with pytest.deprecated_call():
        assert back.files[0].path() == meta.files[0].path


def test_data_file_repr_is_pylances(uri):
    ours = lancenb.dataset(uri).get_fragments()[0].metadata.files[0]
    theirs = lance.dataset(uri).get_fragments()[0].metadata.files[0]
    assert repr(ours) == repr(theirs)
