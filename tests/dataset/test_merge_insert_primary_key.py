"""merge_insert on the unenforced primary key: the inserted keys are recorded as pylance 14
records them (the same bloom filter bytes), and merges racing to insert one key commit it
once, whichever library runs either side, also between real processes. Without the key
metadata both libraries let the race insert the key twice, and so does lancenb."""

from __future__ import annotations

import glob
import multiprocessing as mp
import os

import lance  # the oracle
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancenb
from lancenb._proto import transaction_pb2
from lancenb.dataset.write.merge_keys import inserted_keys_filter
from lancenb.errors import RetryableCommitConflictError

PK = {b"lance-schema:unenforced-primary-key": b"true"}


def _schema(pk: bool = True, key=None):
    return pa.schema([pa.field("id", key or pa.int64(), nullable=False,
                               metadata=PK if pk else None),
                      pa.field("v", pa.string())])


def _t(ids, v="x", schema=None):
    schema = schema or _schema()
    return pa.table({"id": pa.array(ids, schema.field("id").type),
                     "v": [f"{v}{i}" for i in ids]}, schema=schema)


def _recorded(uri: str, version: int):
    """The inserted_rows filter of the transaction that made ``version``."""
    (path,) = glob.glob(os.path.join(uri, "_transactions", f"{version - 1}-*.txn"))
    pb = transaction_pb2.Transaction()
    with open(path, "rb") as f:
        pb.ParseFromString(f.read())
    return pb.update.inserted_rows if pb.update.HasField("inserted_rows") else None


@pytest.mark.parametrize("key, base, new", [
    (pa.int64(), [1, 2], [2, 3, 4, 5]),
    (pa.int32(), [1], [-8, 7]),
    (pa.uint64(), [1], [2 ** 63 + 5, 9]),
    (pa.string(), ["a"], ["a", "b", "héllo", ""]),
    (pa.binary(), [b"a"], [b"\x00\x01", b"zz"]),
])
@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_recorded_keys_equal_pylance_s(tmp_path, key, base, new, writer):
    lib = lancenb if writer == "lancenb" else lance
    schema = _schema(key=key)
    uri = str(tmp_path / "ds")
    lib.write_dataset(_t(base, schema=schema), uri)
    lib.dataset(uri).merge_insert("id").when_not_matched_insert_all().execute(
        _t(new, "n", schema))
    got = _recorded(uri, 2)
    assert got is not None and list(got.field_ids) == [0]
    inserted = _t(new, "n", schema).filter(pc.invert(pc.is_in(
        pa.array(new, key), pa.array(base, key))))
    want = inserted_keys_filter(inserted, ["id"], lancenb.dataset(uri).snapshot.top_fields)
    assert got.bloom.bitmap == want.bloom.bitmap and len(got.bloom.bitmap) == 32768
    assert (got.bloom.num_bits, got.bloom.number_of_items, got.bloom.probability) == (
        want.bloom.num_bits, want.bloom.number_of_items, want.bloom.probability)


def test_composite_key_recorded_as_pylance_records_it(tmp_path):
    schema = pa.schema([pa.field("a", pa.int64(), False, metadata=PK),
                        pa.field("b", pa.string(), False, metadata=PK),
                        pa.field("v", pa.int32())])
    t = pa.table({"a": [1, 2, 2], "b": ["x", "x", "y"], "v": [1, 2, 3]}, schema=schema)
    for lib in (lance, lancenb):
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(t.slice(0, 1), uri)
        lib.dataset(uri).merge_insert(["a", "b"]).when_not_matched_insert_all().execute(t)
    ours, theirs = (_recorded(str(tmp_path / n), 2) for n in ("lancenb", "lance"))
    assert list(ours.field_ids) == list(theirs.field_ids) == [0, 1]
    assert ours.bloom.bitmap == theirs.bloom.bitmap


def test_merge_on_other_columns_records_nothing(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), False, metadata=PK),
                        pa.field("v", pa.string())])
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_t([1], schema=schema), uri)
    lancenb.dataset(uri).merge_insert("v").when_not_matched_insert_all().execute(
        _t([2], "n", schema))
    assert _recorded(uri, 2) is None


def _race(uri, first, second, pk: bool):
    """Two merges read version 1; ``first`` commits key 3, then ``second`` (from version
    1) tries to insert key 3 too. Returns the final ids and values."""
    schema = _schema(pk)
    lance.write_dataset(_t([1, 2], schema=schema), uri)
    a, b = first.dataset(uri), second.dataset(uri)
    a.merge_insert("id").when_not_matched_insert_all().execute(_t([3], "a", schema))
    b.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        _t([3, 4], "b", schema))
    t = lance.dataset(uri).to_table().sort_by([("id", "ascending"), ("v", "ascending")])
    return t["id"].to_pylist(), t["v"].to_pylist()


@pytest.mark.parametrize("first, second", [(lancenb, lancenb), (lance, lancenb),
                                           (lancenb, lance), (lance, lance)],
                         ids=["nb-nb", "pl-nb", "nb-pl", "pl-pl"])
def test_racing_inserts_of_one_key_commit_it_once(tmp_path, first, second):
    ids, values = _race(str(tmp_path / "ds"), first, second, pk=True)
    # the loser ran again on the new version: key 3 matched, and was updated
    assert ids == [1, 2, 3, 4] and values[2:] == ["b3", "b4"]


@pytest.mark.parametrize("first, second", [(lancenb, lancenb), (lance, lance)],
                         ids=["nb-nb", "pl-pl"])
def test_without_the_key_metadata_the_race_inserts_twice(tmp_path, first, second):
    ids, _ = _race(str(tmp_path / "ds"), first, second, pk=False)
    assert ids == [1, 2, 3, 3, 4]


def test_primary_key_merge_retries_over_an_append(tmp_path):
    """A concurrent append may hold the key: the merge runs again and finds it."""
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_t([1]), uri)
    ds = lancenb.dataset(uri)
    lance.write_dataset(_t([5], "appended"), uri, mode="append")
    got = ds.merge_insert("id").when_not_matched_insert_all().execute(_t([5, 6], "m"))
    assert got["num_inserted_rows"] == 1 and ds.version == 3
    assert sorted(lance.dataset(uri).to_table()["id"].to_pylist()) == [1, 5, 6]


def test_no_retries_leaves_nothing_behind(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_t([1]), uri)
    a, b = lancenb.dataset(uri), lancenb.dataset(uri)
    a.merge_insert("id").when_not_matched_insert_all().execute(_t([3], "a"))
    files = set(os.listdir(os.path.join(uri, "data")))
    with pytest.raises(RetryableCommitConflictError, match="update"):
        b.merge_insert("id").when_not_matched_insert_all().conflict_retries(0).execute(
            _t([3], "b"))
    assert set(os.listdir(os.path.join(uri, "data"))) == files
    assert lancenb.dataset(uri).version == 2
    with pytest.raises(lancenb.errors.InvalidInputError):
        b.merge_insert("id").conflict_retries(-1)


def _worker(uri, ids, barrier):
    import lancenb as nb

    ds = nb.dataset(uri)
    barrier.wait()
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .conflict_retries(50).retry_timeout(120).execute(_t(ids, f"p{os.getpid()}-"))


def test_processes_racing_on_overlapping_keys_insert_each_key_once(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_t([0]), uri)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    key_sets = [list(range(i * 5, i * 5 + 12)) for i in range(4)]  # neighbours overlap
    procs = [ctx.Process(target=_worker, args=(uri, ids, barrier)) for ids in key_sets]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    ids = lance.dataset(uri).to_table()["id"].to_pylist()
    assert sorted(ids) == sorted(set(ids)) == list(range(27))
