"""lancenb.fragment and LanceOperation/LanceDataset.commit against pylance (the oracle):
fragments written by one library are committed by the other, FragmentMetadata JSON is
the same field by field, fragment reads match pylance's, and operations go through the
commit protocol (conflicts, retries)."""

import json
import pickle
import threading

import lance as pylance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancenb
from lancenb.errors import CommitConflictError, InvalidInputError
from lancenb.fragment import FragmentMetadata

LanceOperation = lancenb.LanceOperation


def _table(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                     "name": [f"n{i}" for i in range(lo, hi)],
                     "score": pa.array([i * 0.5 for i in range(lo, hi)], pa.float64())})


def test_workers_write_driver_commits_overwrite_and_append(tmp_path):
    uri = str(tmp_path / "ds")
    t = _table(0, 300)
    parts = [t.slice(0, 100), t.slice(100, 100), t.slice(200, 100)]
    metas = [lancenb.fragment.LanceFragment.create(uri, parts[0])]
    metas += lancenb.fragment.write_fragments(parts[1], uri)
    metas += lancenb.fragment.write_fragments(parts[2], uri, max_rows_per_file=40)
    assert [m.physical_rows for m in metas] == [100, 100, 40, 40, 20]
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Overwrite(t.schema, metas))
    assert ds.version == 1
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2, 3, 4]
    more = lancenb.fragment.write_fragments(_table(300, 350), uri)  # takes the dataset's ids
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Append(more), read_version=1)
    assert ds.version == 2
    ref = pylance.dataset(uri)
    assert ref.version == 2
    assert ref.to_table().equals(_table(0, 350))
    assert ds.to_table().equals(_table(0, 350))
    assert [f.fragment_id for f in ref.get_fragments()] == [0, 1, 2, 3, 4, 5]


def test_write_fragments_returns_a_transaction(tmp_path):
    uri = str(tmp_path / "ds")
    txn = lancenb.fragment.write_fragments(_table(0, 10), uri, return_transaction=True)
    assert txn.read_version == 0 and isinstance(txn.operation, LanceOperation.Overwrite)
    ds = lancenb.LanceDataset.commit(uri, txn)
    txn = lancenb.fragment.write_fragments(_table(10, 20), ds, return_transaction=True)
    assert txn.read_version == 1 and isinstance(txn.operation, LanceOperation.Append)
    lancenb.LanceDataset.commit(uri, txn)
    assert pylance.dataset(uri).to_table().equals(_table(0, 20))


def _json_equal(ours: dict, theirs: dict) -> None:
    """Field by field, ignoring nothing but the version a file was written with."""
    assert ours.keys() == theirs.keys()
    for k in ours:
        assert ours[k] == theirs[k], k


def test_fragment_metadata_json_matches_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    pylance.write_dataset(_table(0, 100), uri, max_rows_per_file=40, enable_stable_row_ids=True)
    pylance.dataset(uri).delete("id % 7 = 0")  # array deletion files
    pylance.dataset(uri).delete("id >= 80")  # a fragment removed whole, another bitmap/array
    ref = pylance.dataset(uri)
    ours = lancenb.dataset(uri)
    assert len(ref.get_fragments()) == len(ours.get_fragments()) == 2
    for a, b in zip(ours.get_fragments(), ref.get_fragments()):
        mine, theirs = a.metadata.to_json(), b.metadata.to_json()
        _json_equal(mine, theirs)
        assert mine["deletion_file"] is not None and mine["row_id_meta"] is not None
        text = json.dumps(mine)
        # both parsers accept both outputs and give the same metadata back
        assert pylance.fragment.FragmentMetadata.from_json(text).to_json() == theirs
        assert FragmentMetadata.from_json(json.dumps(theirs)).to_json() == theirs
        assert FragmentMetadata.from_json(json.dumps(theirs)).to_pb() == a._pb
    assert ours.get_fragments()[0].metadata.num_rows == ref.get_fragments()[0].count_rows()


def test_pylance_fragments_commit_through_lancenb(tmp_path):
    uri = str(tmp_path / "ds")
    t = _table(0, 60)
    theirs = [pylance.fragment.LanceFragment.create(uri, t.slice(0, 30),
                                                    data_storage_version="2.1"),
              pylance.fragment.LanceFragment.create(uri, t.slice(30, 30),
                                                    data_storage_version="2.1")]
    # as a worker would ship them: JSON text
    metas = [FragmentMetadata.from_json(json.dumps(m.to_json())) for m in theirs]
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Overwrite(t.schema, metas))
    assert ds.to_table().equals(t)
    # pylance's own objects are accepted as they are
    more = pylance.fragment.write_fragments(_table(60, 70), uri)
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Append(more), read_version=1)
    assert pylance.dataset(uri).to_table().equals(_table(0, 70))
    assert ds.data_storage_version == "2.1"


def test_lancenb_fragments_commit_through_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 10), uri)
    ours = lancenb.fragment.write_fragments(_table(10, 30), uri, max_rows_per_file=15)
    metas = [pylance.fragment.FragmentMetadata.from_json(json.dumps(m.to_json())) for m in ours]
    pylance.LanceDataset.commit(uri, pylance.LanceOperation.Append(metas), read_version=1)
    assert lancenb.dataset(uri).to_table().equals(_table(0, 30))
    assert pylance.dataset(uri).to_table().equals(_table(0, 30))


@pytest.fixture
def deleted(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 200), uri, max_rows_per_file=100)
    lancenb.dataset(uri).delete("id % 10 = 3")
    return uri


def test_fragment_reads_match_pylance(deleted):
    ours = lancenb.dataset(deleted).get_fragments()
    theirs = pylance.dataset(deleted).get_fragments()
    for a, b in zip(ours, theirs):
        assert a.count_rows() == b.count_rows() == 90
        assert a.count_rows("score > 60") == b.count_rows("score > 60")
        assert a.to_table().equals(b.to_table())
        assert a.head(7).equals(b.head(7))
        kw = dict(columns=["name", "id"], filter="id % 2 = 0", limit=11, offset=5)
        assert a.to_table(**kw).equals(b.to_table(**kw))
        expr = pc.field("score") < 75.0
        assert a.to_table(filter=expr).equals(b.to_table(filter=expr))
        assert a.to_table(columns=["id"], with_row_id=True).equals(
            b.to_table(columns=["id"], with_row_id=True))
        got = pa.Table.from_batches(list(a.to_batches(columns=["id"], batch_size=16)))
        assert got.equals(b.to_table(columns=["id"]))
        assert all(x.num_rows <= 16 for x in a.to_batches(batch_size=16))
        idx = [0, 3, 4, 50, 89]  # logical: deleted rows are skipped
        assert a.take(idx, columns=["id", "name"]).equals(b.take(idx, columns=["id", "name"]))
        assert a.scanner(columns=["id"], limit=3).to_table().equals(
            b.scanner(columns=["id"], limit=3).to_table())
    # lancenb also takes out of order and repeated offsets
    assert ours[0].take([5, 0, 5])["id"].to_pylist() == [6, 0, 6]  # id 3 is deleted
    with pytest.raises(InvalidInputError, match="out of range"):
        ours[0].take([90])


def test_pickles_carry_uri_version_options_only(deleted):
    ds = lancenb.dataset(deleted)
    ds.to_table()  # opens files and fills caches, none of which may travel
    frag = ds.get_fragments()[1]
    sc = ds.scanner(columns=["id"], filter=pc.field("id") > 150, limit=5, fragments=[frag])
    lancenb.write_dataset(_table(500, 510), deleted, mode="append")  # a newer version
    blob = pickle.dumps((ds, frag, sc))
    assert len(blob) < 2000  # no data, no open readers
    ds2, frag2, sc2 = pickle.loads(blob)
    assert ds2.version == ds.version == 2 and ds2.uri == ds.uri
    assert ds2.to_table().equals(ds.to_table())
    assert frag2.fragment_id == 1 and frag2.to_table().equals(frag.to_table())
    assert sc2.to_table().equals(sc.to_table()) and sc2.to_table().num_rows == 5
    sc3 = pickle.loads(pickle.dumps(ds.scanner(filter="name = 'n7'", offset=0)))
    assert sc3.to_table()["id"].to_pylist() == [7]
    # storage options travel as given (here an fsspec option of the local filesystem)
    with_opts = lancenb.dataset(deleted, version=2, storage_options={"auto_mkdir": True})
    back = pickle.loads(pickle.dumps(with_opts.get_fragments()[0]))
    assert back._ds._store.storage_options == {"auto_mkdir": True}
    assert back.count_rows() == 90
    # the package itself pickles by name (cloudpickle ships task functions that use it)
    assert pickle.loads(pickle.dumps(lancenb)) is lancenb


def test_restore_rewrite_project_delete_operations(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 40), uri, max_rows_per_file=10)
    ds = lancenb.dataset(uri)
    # Delete: pylance's fragment.delete() builds the deletion file, lancenb commits it
    f0 = pylance.dataset(uri).get_fragment(0).delete("id < 4")
    f1 = pylance.dataset(uri).get_fragment(1).delete("id < 20")
    assert f1 is None
    op = LanceOperation.Delete([FragmentMetadata.from_json(json.dumps(f0.to_json()))], [1],
                               "id < 4 or (id >= 10 and id < 20)")
    ds = lancenb.LanceDataset.commit(uri, op, read_version=1)
    assert ds.to_table()["id"].to_pylist() == list(range(4, 10)) + list(range(20, 40))
    # Rewrite: fragments 2 and 3 compacted into one
    old = [f.metadata for f in ds.get_fragments() if f.fragment_id in (2, 3)]
    new = lancenb.fragment.write_fragments(_table(20, 40), uri)
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Rewrite(
        [LanceOperation.RewriteGroup(old, new)]), read_version=ds.version)
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 4]
    assert pylance.dataset(uri).to_table().equals(ds.to_table())
    # Project: drop a column (schema given as Arrow: ids kept by name)
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Project(
        pa.schema([ds.schema.field("id"), ds.schema.field("score")])), read_version=ds.version)
    assert pylance.dataset(uri).schema.names == ["id", "score"]
    assert pylance.dataset(uri).to_table()["score"].equals(ds.to_table()["score"])
    # Restore version 1 as a new version
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Restore(1))
    assert ds.version == 5 and pylance.dataset(uri).to_table().equals(_table(0, 40))


def test_merge_operation_with_pylance_merged_fragments(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 20), uri, max_rows_per_file=10)
    extra = pa.table({"id": pa.array(range(20), pa.int64()), "double": [i * 2 for i in range(20)]})
    merged = [pylance.dataset(uri).get_fragment(i).merge(extra, "id")[0] for i in (0, 1)]
    schema = _table(0, 1).schema.append(pa.field("double", pa.int64()))
    with pytest.deprecated_call():  # a pyarrow schema, deprecated as in pylance
        op = LanceOperation.Merge(merged, schema)
    ds = lancenb.LanceDataset.commit(uri, op, read_version=1)
    want = _table(0, 20).append_column("double", pa.array([i * 2 for i in range(20)]))
    assert ds.to_table().equals(want)
    assert pylance.dataset(uri).to_table().equals(want)


def test_commit_checks_conflicts_and_retries(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 10), uri)
    frags = [lancenb.fragment.write_fragments(_table(10 * i, 10 * i + 10), uri)
             for i in range(1, 7)]
    errors = []

    def commit(fs):
        try:
            lancenb.LanceDataset.commit(uri, LanceOperation.Append(fs), read_version=1)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=commit, args=(fs,)) for fs in frags]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ref = pylance.dataset(uri)
    assert ref.version == 7
    assert ref.to_table().sort_by("id").equals(_table(0, 70))
    # an Append read before an Overwrite cannot land after it
    lancenb.LanceDataset.commit(uri, LanceOperation.Overwrite(
        _table(0, 1).schema, lancenb.fragment.write_fragments(_table(0, 5), uri,
                                                              mode="overwrite")))
    late = lancenb.fragment.write_fragments(_table(5, 6), uri)
    with pytest.raises(CommitConflictError, match="overwrite"):
        lancenb.LanceDataset.commit(uri, LanceOperation.Append(late), read_version=7)
    assert pylance.dataset(uri).count_rows() == 5


def test_commit_refuses_what_it_cannot_do(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 10), uri)
    frags = lancenb.fragment.write_fragments(_table(10, 20), uri)
    with pytest.raises(InvalidInputError, match="read_version is required"):
        lancenb.LanceDataset.commit(uri, LanceOperation.Append(frags))
    with pytest.raises(InvalidInputError, match="not a version"):
        lancenb.LanceDataset.commit(uri, LanceOperation.Append(frags), read_version=9)
    # (DataReplacement commits since issue 32: tests/dataset/test_detached_replacement.py;
    # an empty one is a new version, as pylance's)
    assert lancenb.LanceDataset.commit(uri, LanceOperation.DataReplacement([]),
                                       read_version=1).version == 2
    # (UpdateConfig commits since issue 20: tests/dataset/test_parity.py)
    with pytest.raises(InvalidInputError, match="list of FragmentMetadata"):
        LanceOperation.Append(tuple(frags))
    lancenb.dataset(uri).delete("id = 1")
    with_deletions = [f.metadata for f in lancenb.dataset(uri).get_fragments()]
    with pytest.raises(InvalidInputError, match="deletion files"):
        lancenb.LanceDataset.commit(uri, LanceOperation.Overwrite(_table(0, 1).schema,
                                                                  with_deletions))
    with pytest.raises(InvalidInputError, match="2.0 data files to a dataset of 2.2"):
        other = lancenb.fragment.write_fragments(_table(0, 5), str(tmp_path / "x"),
                                                 data_storage_version="2.0")
        lancenb.LanceDataset.commit(uri, LanceOperation.Append(other), read_version=2)
    with pytest.raises(InvalidInputError, match="no fragment 42"):
        lancenb.fragment.LanceFragment(lancenb.dataset(uri), 42)
    assert pylance.dataset(uri).count_rows() == 9


def test_update_operation_and_commit_message(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 20), uri, max_rows_per_file=10)
    # rows 0..4 move: deleted in fragment 0, rewritten (scores doubled) in a new fragment
    old = pylance.dataset(uri).get_fragment(0).delete("id < 5")
    moved = _table(0, 5).set_column(2, "score", pa.array([i * 1.0 for i in range(5)]))
    new = lancenb.fragment.write_fragments(moved, uri)
    op = LanceOperation.Update(updated_fragments=[FragmentMetadata.from_json(
        json.dumps(old.to_json()))], new_fragments=new, fields_modified=[2])
    ds = lancenb.LanceDataset.commit(uri, op, read_version=1, commit_message="move 5 rows")
    got = pylance.dataset(uri).to_table().sort_by("id")
    assert got["score"].to_pylist() == [float(i) for i in range(5)] + \
        [i * 0.5 for i in range(5, 20)]
    assert ds.to_table().sort_by("id").equals(got)
    from lancenb._proto import transaction_pb2

    msg = transaction_pb2.Transaction()
    with open(f"{uri}/_transactions/{ds.manifest.transaction_file}", "rb") as f:
        msg.ParseFromString(f.read())
    assert msg.WhichOneof("operation") == "update"
    assert dict(msg.transaction_properties) == {"__lance_commit_message": "move 5 rows"}


def test_fragment_delete_then_one_delete_operation(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(0, 30), uri, max_rows_per_file=10)
    ds = lancenb.dataset(uri)
    updated, gone = [], []
    for frag in pickle.loads(pickle.dumps(ds.get_fragments())):  # as workers would
        meta = frag.delete("id % 3 = 0 or id >= 20")
        if meta is None:
            gone.append(frag.fragment_id)
        elif meta.deletion_file is not None:
            updated.append(meta)
    assert gone == [2] and [m.num_deletions for m in updated] == [4, 3]
    assert ds.get_fragments()[0].delete("id > 100") == ds.get_fragments()[0].metadata
    ds = lancenb.LanceDataset.commit(uri, LanceOperation.Delete(updated, gone, "id % 3 = 0"),
                                     read_version=1)
    want = [i for i in range(20) if i % 3]
    assert pylance.dataset(uri).to_table()["id"].to_pylist() == want
    assert ds.to_table()["id"].to_pylist() == want
    # the same deletion files as pylance's fragment.delete writes
    theirs = pylance.dataset(uri, version=1).get_fragment(1).delete("id % 3 = 0")
    assert theirs.deletion_file.num_deleted_rows == updated[1].num_deletions
    with pytest.raises(InvalidInputError, match="offsets must be in 0..9"):
        ds.get_fragments()[0].delete_rows([10])
