"""LanceFragment.open_session, merge on _rowid and update_columns refusals, against
pylance on the same datasets (written by one library, read by the other)."""

import shutil

import lance
import pyarrow as pa
import pytest

import lancenb


@pytest.fixture(params=["pylance", "lancenb"])
def uri(request, tmp_path):
    writer = lance if request.param == "pylance" else lancenb
    ds = writer.write_dataset(pa.table({"a": range(100), "b": range(100, 200)}),
                              str(tmp_path / "ds"), max_rows_per_file=60)
    ds.delete("a = 3 or a = 70")
    return str(tmp_path / "ds")


@pytest.mark.parametrize("columns", [None, ["b"], ["b", "a"]])
@pytest.mark.parametrize("with_row_address", [False, True])
def test_session_take_is_pylances(uri, columns, with_row_address):
    for fid in (0, 1):
        theirs = lance.dataset(uri).get_fragment(fid).open_session(columns, with_row_address)
        ours = lancenb.dataset(uri).get_fragment(fid).open_session(columns, with_row_address)
        for idx in ([0, 1, 2, 3, 4], [2, 5, 6], list(range(20))):
            assert ours.take(idx) == theirs.take(idx)
            assert ours.take(idx) == ours.take(idx)  # repeatable


def test_session_refuses_out_of_range(uri):
    with pytest.raises(ValueError):
        lancenb.dataset(uri).get_fragment(0).open_session().take([59])


@pytest.mark.parametrize("key", ["_rowid", "_rowaddr"])
def test_merge_on_rowid_is_pylances(uri, key):
    out = {}
    for lib in (lance, lancenb):
        shutil.copytree(uri, uri + lib.__name__)
        ds = lib.dataset(uri + lib.__name__)
        merged, schema = [], None
        for frag in ds.get_fragments():
            t = frag.scanner(columns=[key]).to_table()
            t = t.add_column(0, "c", [[i * 7 for i in range(len(t))]])
            meta, schema = frag.merge(t, key)
            merged.append(meta)
        out[lib] = lib.LanceDataset.commit(uri + lib.__name__,
                                           lib.LanceOperation.Merge(merged, schema),
                                           read_version=ds.version).uri
        # each library reads the other's version the same
        assert lance.dataset(out[lib]).to_table() == lancenb.dataset(out[lib]).to_table()
    assert lance.dataset(out[lance]).to_table() == lance.dataset(out[lancenb]).to_table()


@pytest.mark.parametrize("col,words", [("_rowaddr", "reserved metadata column"),
                                       ("nope", "does not exist")])
def test_update_columns_refusals_are_pylances(uri, col, words):
    data = pa.table({"_rowid": pa.array([0, 1], pa.uint64()),
                     col: pa.array([9, 8], pa.uint64())})
    for lib in (lance, lancenb):
        with pytest.raises(ValueError, match=words):
            lib.dataset(uri).get_fragment(0).update_columns(data)
