"""Schema evolution, stable row ids, compaction, cleanup, update and merge_insert:
pylance reads what lancenb commits and lancenb reads what pylance commits."""

from __future__ import annotations

import datetime as dt
import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb
from lancenb.errors import InvalidInputError, LanceError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def table(n, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "x": pa.array(ids * 0.5, mask=ids % 7 == 0),
                     "s": pa.array([f"s{i % 13}" for i in ids])})


def both(uri, **kw):
    a = lance.dataset(uri).to_table(**kw)
    b = lancenb.dataset(uri).to_table(**kw)
    assert_tables_equal(b, a)
    return b


def test_lancenb_schema_evolution_read_by_pylance(tmp_path):
    uri = str(tmp_path / "d")
    lancenb.write_dataset(table(1000), uri, max_rows_per_file=300)
    ds = lancenb.dataset(uri)
    ds.delete("id % 10 = 3")
    ds.add_columns({"double_id": "id * 2", "flag": "x > 100.0"})
    ds.add_columns(pa.field("empty", pa.string()))

    @lancenb.batch_udf(output_schema=pa.schema([("slen", pa.int32())]))
    def slen(batch):
        return pa.record_batch([pa.compute.utf8_length(batch["s"])], ["slen"])
    ds.add_columns(slen, read_columns=["s"])
    t = both(uri)
    assert t["double_id"].to_pylist() == [i * 2 for i in t["id"].to_pylist()]
    assert t["empty"].null_count == t.num_rows
    ds.drop_columns(["x"])
    ds.alter_columns({"path": "s", "name": "label"}, {"path": "slen", "data_type": pa.int64()})
    t = both(uri)
    assert t.schema.names == ["id", "label", "double_id", "flag", "empty", "slen"]
    assert t.schema.field("slen").type == pa.int64()
    ds.merge(pa.table({"k": pa.array([0, 1, 2], pa.int64()), "extra": ["a", "b", "c"]}),
             left_on="id", right_on="k")
    t = both(uri)
    assert t["extra"].to_pylist()[:3] == ["a", "b", "c"] and t["extra"].null_count == \
        t.num_rows - 3
    lancenb.write_dataset(both(uri).slice(0, 5), uri, mode="append")
    both(uri)
    for v in range(1, lancenb.dataset(uri).version + 1):
        assert_tables_equal(lancenb.dataset(uri, version=v).to_table(),
                            lance.dataset(uri, version=v).to_table())


def test_pylance_schema_evolution_read_by_lancenb(tmp_path):
    uri = str(tmp_path / "d")
    lance.write_dataset(table(500), uri, max_rows_per_file=200)
    pl = lance.dataset(uri)
    pl.add_columns({"y": "id + 1"})
    pl.add_columns(pa.field("z", pa.float32()))
    pl.drop_columns(["x"])
    pl.alter_columns({"path": "y", "name": "yy"})
    pl.alter_columns({"path": "yy", "data_type": pa.int32()})
    pl.merge(pa.table({"id": pa.array([1, 2], pa.int64()), "m": [True, False]}), "id")
    pl.update({"yy": "yy + 1"}, where="id < 3")
    for v in range(1, lance.dataset(uri).version + 1):
        assert_tables_equal(lancenb.dataset(uri, version=v).to_table(),
                            lance.dataset(uri, version=v).to_table())


def test_pylance_update_to_a_constant_string(tmp_path):
    """pylance 2.2 writes the updated rows as a constant page whose string value sits
    in a buffer (a flat column's constant page with buffers)."""
    uri = str(tmp_path / "d")
    lance.write_dataset(table(50), uri)
    lance.dataset(uri).update({"s": "'changed'"}, where="id < 3")
    assert_tables_equal(lancenb.dataset(uri).to_table(), lance.dataset(uri).to_table())


@pytest.mark.parametrize("stable", [False, True])
def test_update_and_merge_insert(tmp_path, stable):
    uri = str(tmp_path / "d")
    lancenb.write_dataset(table(100), uri, max_rows_per_file=30, enable_stable_row_ids=stable)
    ds = lancenb.dataset(uri)
    before = ds.to_table(with_row_id=True)
    assert ds.update({"s": "'u'", "x": "x + 1"}, where="id >= 95") == {"num_rows_updated": 5}
    src = pa.table({"id": pa.array([1, 2, 500], pa.int64()), "x": [1.0, 2.0, 3.0],
                    "s": ["m1", "m2", "new"]})
    got = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(src)
    assert got == {"num_inserted_rows": 1, "num_updated_rows": 2, "num_deleted_rows": 0}
    t = both(uri, with_row_id=True).sort_by("id")
    assert t.num_rows == 101
    assert t.filter(pa.compute.equal(t["id"], 1))["s"].to_pylist() == ["m1"]
    assert t.filter(pa.compute.greater_equal(t["id"], 95))["s"].to_pylist() == ["u"] * 5 + \
        ["new"]
    if stable:  # moved rows keep their ids
        old = dict(zip(before["id"].to_pylist(), before["_rowid"].to_pylist()))
        new = dict(zip(t["id"].to_pylist(), t["_rowid"].to_pylist()))
        assert all(new[k] == old[k] for k in old)
        assert new[500] == 100  # next_row_id
    res = ds.merge_insert("id").when_not_matched_by_source_delete("id > 90").execute(
        pa.table({"id": pa.array([500], pa.int64()), "x": [0.0], "s": ["z"]}))
    assert res["num_deleted_rows"] == 9
    both(uri)
    with pytest.raises(InvalidInputError, match="duplicate keys"):
        ds.merge_insert("id").when_matched_update_all().execute(
            pa.table({"id": pa.array([1, 1], pa.int64()), "x": [1.0, 2.0], "s": ["a", "b"]}))


def test_stable_row_ids_match_pylance_and_survive_compaction(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for uri, lib in ((a, lancenb), (b, lance)):
        lib.write_dataset(table(1000), uri, enable_stable_row_ids=True, max_rows_per_file=100)
        lib.write_dataset(table(50, 1000), uri, mode="append")
        lib.dataset(uri).delete("id % 4 = 1")
    ta = lance.dataset(a).to_table(with_row_id=True)
    tb = lance.dataset(b).to_table(with_row_id=True)
    assert_tables_equal(ta, tb)  # same ids as pylance assigns
    assert lancenb.dataset(a).manifest.next_row_id == \
        lancenb.dataset(b).manifest.next_row_id == 1050
    m = lancenb.dataset(a).optimize.compact_files(target_rows_per_fragment=400)
    # one group by pylance's planning (the rest would not make another group of 400),
    # written as fragments of at most 400 rows (pylance writes this group as one)
    assert m.fragments_removed == 11 and m.fragments_added == 2
    assert all(f.physical_rows <= 400 for f in lancenb.dataset(a).get_fragments())
    lance.dataset(b).optimize.compact_files(target_rows_per_fragment=400)
    for uri in (a, b):
        assert_tables_equal(lancenb.dataset(uri).to_table(with_row_id=True), ta)
        assert_tables_equal(lance.dataset(uri).to_table(with_row_id=True), ta)
        ids = ta["_rowid"].to_pylist()[::97]
        assert lancenb.dataset(uri)._take_rows(ids)["id"].to_pylist() == \
            ta["id"].to_pylist()[::97]


def test_compaction_without_stable_ids(tmp_path):
    uri = str(tmp_path / "d")
    lancenb.write_dataset(table(1000), uri, max_rows_per_file=50)
    ds = lancenb.dataset(uri)
    ds.delete("id < 300")  # removes six fragments and part of a seventh
    want = ds.to_table()
    m = ds.optimize.compact_files(target_rows_per_fragment=300, batch_size=64)
    assert m.fragments_added == 3
    ds = lancenb.dataset(uri)
    assert [f.physical_rows for f in ds.get_fragments()] == [300, 300, 100]
    assert all(f.metadata.deletion_file is None for f in ds.get_fragments())
    assert_tables_equal(both(uri), want)
    txn = ds._mf.transaction()
    assert txn.WhichOneof("operation") == "rewrite"
    assert ds.optimize.compact_files(target_rows_per_fragment=300).fragments_added == 0


def test_cleanup(tmp_path):
    uri = str(tmp_path / "d")
    lancenb.write_dataset(table(100), uri)
    for k in range(4):
        lancenb.write_dataset(table(10, 100 + 10 * k), uri, mode="append")
    ds = lancenb.dataset(uri)
    ds.delete("id < 5")
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    ds.tags.create("keep", 2)
    latest = lancenb.dataset(uri).version
    data_before = set(os.listdir(os.path.join(uri, "data")))
    dry = ds.cleanup_old_versions(older_than=dt.timedelta(0), dry_run=True)
    assert set(os.listdir(os.path.join(uri, "data"))) == data_before
    stats = ds.cleanup_old_versions(older_than=dt.timedelta(0))
    assert stats.removed == dry.removed and stats.old_versions == latest - 2
    remaining = [v["version"] for v in lancenb.dataset(uri).versions()]
    assert remaining == [2, latest]
    for v in remaining:  # every retained version still reads, with both libraries
        assert_tables_equal(lancenb.dataset(uri, version=v).to_table(),
                            lance.dataset(uri, version=v).to_table())
    # only files no retained version references were removed
    referenced = {f"data/{d.path}" for v in remaining
                  for f in lancenb.dataset(uri, version=v).manifest.fragments for d in f.files}
    left = {f"data/{n}" for n in os.listdir(os.path.join(uri, "data"))}
    assert left == referenced
    assert not os.listdir(os.path.join(uri, "_deletions"))


def test_cleanup_keeps_unverified_files(tmp_path):
    uri = str(tmp_path / "d")
    lancenb.write_dataset(table(10), uri)
    orphan = os.path.join(uri, "data", "orphan-from-a-running-writer.lance")
    with open(orphan, "wb") as f:
        f.write(b"x")
    lancenb.dataset(uri).cleanup_old_versions(older_than=dt.timedelta(0))
    assert os.path.exists(orphan)
    lancenb.dataset(uri).cleanup_old_versions(older_than=dt.timedelta(0),
                                              delete_unverified=True)
    assert not os.path.exists(orphan)


@pytest.mark.parametrize("op", ["add_existing", "drop_missing", "bad_cast", "merge_dup",
                                "not_null", "bad_sql"])
def test_bad_schema_changes_leave_the_dataset_unchanged(tmp_path, op):
    uri = str(tmp_path / "d")
    lancenb.write_dataset(table(50), uri)
    ds = lancenb.dataset(uri)
    with pytest.raises(LanceError):
        if op == "add_existing":
            ds.add_columns({"id": "id + 1"})
        elif op == "drop_missing":
            ds.drop_columns(["nope"])
        elif op == "bad_cast":
            ds.alter_columns({"path": "s", "data_type": pa.int64()})
        elif op == "merge_dup":
            ds.merge(pa.table({"id": pa.array([1, 1], pa.int64()), "q": [1, 2]}), "id")
        elif op == "not_null":
            ds.alter_columns({"path": "x", "nullable": False})
        else:
            ds.add_columns({"q": "nosuch * 2"})
    assert lancenb.dataset(uri).version == 1
    assert sorted(os.listdir(os.path.join(uri, "data"))) == sorted(
        os.listdir(os.path.join(uri, "data")))
    assert len(os.listdir(os.path.join(uri, "data"))) == 1
    assert_tables_equal(lancenb.dataset(uri).to_table(), table(50))


def test_add_columns_checkpoint_resumes(tmp_path):
    uri = str(tmp_path / "d")
    lancenb.write_dataset(table(400), uri, max_rows_per_file=100)
    ckpt = str(tmp_path / "ckpt.json")
    calls = []

    @lancenb.batch_udf(output_schema=pa.schema([("sq", pa.int64())]), checkpoint_file=ckpt)
    def square(batch):
        calls.append(batch["id"][0].as_py())
        if len(calls) == 3 and not os.environ.get("RESUMED"):
            raise RuntimeError("backfill interrupted")
        return pa.record_batch([pa.compute.multiply(batch["id"], batch["id"])], ["sq"])
    ds = lancenb.dataset(uri)
    with pytest.raises(RuntimeError):
        ds.add_columns(square, read_columns=["id"])
    assert lancenb.dataset(uri).version == 1 and os.path.exists(ckpt)
    os.environ["RESUMED"] = "1"
    try:
        calls.clear()
        ds.add_columns(square, read_columns=["id"])
    finally:
        del os.environ["RESUMED"]
    assert sorted(calls) == [200, 300]  # fragments 0 and 1 came from the checkpoint
    t = both(uri)
    assert t["sq"].to_pylist() == [i * i for i in range(400)]
    assert not os.path.exists(ckpt)
