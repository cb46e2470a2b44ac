"""Datasets of every file version: pylance writes 0.1 / 2.0 / 2.1 / 2.2 datasets and
lancenb reads them; lancenb writes 2.0 / 2.1 / 2.2 datasets and pylance reads them."""

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import LanceError, NotSupportedError
from tests._tables import assert_tables_equal

N = 6000


def _table(n=N, seed=2):
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "x": pa.array(rng.random(n)),
        "cat": pa.array([f"c{k % 11}" for k in range(n)]),
        "txt": pa.array([None if k % 17 == 0 else f"row {k} " * (k % 4) for k in range(n)]),
        "tags": pa.array([[k, k + 1] if k % 5 else [] for k in range(n)], pa.list_(pa.int32())),
        "pt": pa.array([{"u": k % 9, "v": f"p{k % 3}"} for k in range(n)]),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(4 * n).astype(np.float32)), 4),
    })


FILTERS = ["id > 5000", "cat = 'c3'", "id < 100 and pt.u > 4", "x < 0.1"]


def _compare(path):
    ours, theirs = lancenb.dataset(path), lance.dataset(path)
    assert ours.data_storage_version == theirs.data_storage_version
    assert ours.count_rows() == theirs.count_rows()
    assert_tables_equal(ours.to_table(), theirs.to_table())
    for f in FILTERS:
        assert_tables_equal(ours.to_table(filter=f), theirs.to_table(filter=f))
        assert ours.count_rows(f) == theirs.count_rows(f)
    idx = [0, 1, 999, 1000, ours.count_rows() - 1, 7, 7]
    assert_tables_equal(ours.take(idx), theirs.take(idx))
    assert_tables_equal(ours.to_table(columns=["cat", "id"]),
                        theirs.to_table(columns=["cat", "id"]))


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2"])
def test_lancenb_reads_pylance_datasets(tmp_path, version):
    t = _table()
    if version == "legacy":
        # 0.1 stores no validity for primitives and reads empty strings back as
        # null: compare with what pylance itself reads
        t = t.drop_columns(["txt"])
    path = str(tmp_path / version)
    kw = {"max_rows_per_group": 1000} if version == "legacy" else {}
    lance.write_dataset(t, path, data_storage_version=version, max_rows_per_file=2500, **kw)
    ds = lance.dataset(path)
    ds.delete("id % 97 = 5")
    lance.write_dataset(t.slice(0, 300), path, mode="append")
    _compare(path)


def test_legacy_dataset_statistics_prune_batches(tmp_path):
    """0.1 statistics pages reach the scanner's page pruning."""
    path = str(tmp_path / "leg")
    lance.write_dataset(_table().drop_columns(["txt"]), path, data_storage_version="legacy",
                        max_rows_per_group=500)
    frag = lancenb.dataset(path).get_fragments()[0]
    rpp, stats = frag.page_stats()
    assert rpp == 500
    ids = stats["id"]
    assert len(ids) == N // 500
    assert [(s.min, s.max) for s in ids[:2]] == [(0, 499), (500, 999)]


def test_legacy_dataset_appends_legacy_files(tmp_path):
    # as pylance 14: an append to a 0.1 dataset writes 0.1 files (more in
    # tests/table/test_legacy_versions.py)
    path = str(tmp_path / "leg")
    t = _table(100).drop_columns(["txt"])
    lance.write_dataset(t, path, data_storage_version="legacy")
    lancenb.write_dataset(t, path, mode="append")
    theirs = lance.dataset(path)
    assert theirs.data_storage_version == "0.1"
    assert theirs.to_table().equals(pa.concat_tables([lance.dataset(path, version=1)
                                                      .to_table()] * 2))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "stable"])
def test_pylance_reads_lancenb_datasets(tmp_path, version):
    t = _table()
    path = str(tmp_path / version)
    lancenb.write_dataset(t, path, data_storage_version=version, max_rows_per_file=2500)
    ds = lancenb.dataset(path)
    ds.delete("id % 97 = 5")
    lancenb.write_dataset(t.slice(0, 300), path, mode="append")
    theirs = lance.dataset(path)
    assert theirs.data_storage_version == {"stable": "2.2"}.get(version, version)
    for frag in theirs.get_fragments():
        for df in frag.data_files():
            want = {"2.0": (2, 0), "2.1": (2, 1)}.get(version, (2, 2))
            assert (df.file_major_version, df.file_minor_version) == want
    _compare(path)
    # pylance appends to a lancenb dataset of that version, and lancenb reads it back
    lance.write_dataset(t.slice(300, 200), path, mode="append")
    _compare(path)


def test_unknown_version_names_are_refused(tmp_path):
    with pytest.raises(LanceError):
        lancenb.write_dataset(_table(10), str(tmp_path / "x"), data_storage_version="2.9")
    with pytest.raises(NotSupportedError, match="2.3"):
        lancenb.write_dataset(_table(10), str(tmp_path / "y"), data_storage_version="next")
    assert not (tmp_path / "x" / "_versions").exists()
    assert not (tmp_path / "y" / "_versions").exists()


def test_2_0_dataset_lifecycle_through_lancenb(tmp_path):
    """Every lancenb operation that writes files keeps writing 2.0 files in a 2.0
    dataset, and pylance reads each version the same."""
    path = str(tmp_path / "d")
    n = 1000
    t = pa.table({"id": np.arange(n), "s": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
                  "l": pa.array([[i] for i in range(n)])})
    lancenb.write_dataset(t, path, data_storage_version="2.0", max_rows_per_file=300)
    extra = pa.table({"id": np.array([5, 2000]), "s": pa.array([{"a": -1, "b": "x"}] * 2),
                      "l": pa.array([[1], [2]]), "z": np.array([0, 0])})
    steps = [lambda ds: ds.add_columns({"z": "id * 2"}),
             lambda ds: ds.update({"id": "id + 1"}, where="id < 10"),
             lambda ds: ds.merge_insert("id").when_matched_update_all()
             .when_not_matched_insert_all().execute(extra),
             lambda ds: ds.drop_columns(["z"]),
             lambda ds: ds.optimize.compact_files(),
             lambda ds: ds.alter_columns({"path": "l", "name": "ll"})]
    for step in steps:
        step(lancenb.dataset(path))
        assert_tables_equal(lancenb.dataset(path).to_table(), lance.dataset(path).to_table())
    frags = lance.dataset(path).get_fragments()
    assert {(df.file_major_version, df.file_minor_version)
            for f in frags for df in f.data_files()} == {(2, 0)}
    assert lance.dataset(path).count_rows() == n + 1
