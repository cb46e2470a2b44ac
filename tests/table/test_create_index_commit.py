"""CreateIndex commits in the table layer, against pylance 14.

An index pylance built, its files copied into another dataset and committed there by
lancenb with ``LanceOperation.CreateIndex``, is listed and used by pylance as in the
dataset it came from; names replace, ``removed_indices`` remove by uuid; concurrent
commits are decided as pylance decides them; later operations keep the index section
as pylance does (an overwrite drops it, dropping the indexed column drops the index,
deletes and compaction keep it and queries stay exact).
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

sys.path.insert(0, os.path.dirname(__file__))
from test_commit_conflicts import OPS, _commit, _prepare, _state  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _table(n: int = 3000) -> pa.Table:
    i = np.arange(n)
    return pa.table({"id": pa.array(i, pa.int64()), "meta": [f"m{k % 37}" for k in i],
                     "price": (i % 101).astype(np.float64)})


def _with_index(tmp_path, kind: str = "BTREE") -> tuple[str, dict]:
    src = str(tmp_path / "src")
    ds = lance.write_dataset(_table(), src, max_rows_per_file=1000)
    ds.create_scalar_index("meta", kind)
    return src, lance.dataset(src).list_indices()[0]


def _copy_index(src: str, dst: str, uuid: str) -> None:
    shutil.copytree(os.path.join(src, "_indices", uuid), os.path.join(dst, "_indices", uuid))


def _Index(lib):
    """``lance.dataset.Index`` / ``lancenb.dataset.Index`` (the module, not the
    function ``lib.dataset``)."""
    return importlib.import_module(lib.__name__ + ".dataset").Index


def _index(lib, ds, entry, *, name=None, version=None):
    return _Index(lib)(uuid=entry["uuid"], name=name or entry["name"],
                             fields=[ds.lance_schema.field("meta").id()],
                             dataset_version=version if version is not None else ds.version,
                             fragment_ids={f.fragment_id for f in ds.get_fragments()},
                             index_version=0)


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP"])
def test_pylance_index_recommitted_by_lancenb(tmp_path, kind):
    src, entry = _with_index(tmp_path, kind)
    dst = str(tmp_path / "dst")
    lancenb.write_dataset(_table(), dst, max_rows_per_file=1000)
    _copy_index(src, dst, entry["uuid"])
    ours = lancenb.dataset(dst)
    op = lancenb.LanceOperation.CreateIndex(new_indices=[_index(lancenb, ours, entry)],
                                            removed_indices=[])
    ours = lancenb.LanceDataset.commit(dst, op, read_version=ours.version)
    assert ours.version == 2
    theirs = lance.dataset(dst)
    got = theirs.list_indices()
    # (the committed Index has no details: pylance lists such an index as "Unknown")
    assert [(e["name"], e["uuid"], e["fields"], sorted(e["fragment_ids"])) for e in got] == \
        [(entry["name"], entry["uuid"], ["meta"], [0, 1, 2])]
    assert lancenb.dataset(dst).list_indices() == [
        {**got[0], "fragment_ids": lancenb.dataset(dst).list_indices()[0]["fragment_ids"]}]
    plan = theirs.scanner(filter="meta = 'm5'").explain_plan()
    assert "ScalarIndexQuery" in plan, plan
    a = theirs.to_table(filter="meta = 'm5' OR meta = 'm7'")
    b = theirs.to_table(filter="meta = 'm5' OR meta = 'm7'", use_scalar_index=False)
    assert a.sort_by("id").equals(b.sort_by("id")) and a.num_rows == 162
    # the transaction is pylance's CreateIndex: pylance reads it back
    txn = theirs.read_transaction(2) if hasattr(theirs, "read_transaction") else None
    assert txn is None or type(txn.operation).__name__ == "CreateIndex"


def test_index_with_details_keeps_its_type(tmp_path):
    src, entry = _with_index(tmp_path)
    dst = str(tmp_path / "dst")
    lancenb.write_dataset(_table(), dst, max_rows_per_file=1000)
    _copy_index(src, dst, entry["uuid"])
    ours = lancenb.dataset(dst)
    idx = _index(lancenb, ours, entry)
    idx.index_details = ("/lance.table.BTreeIndexDetails", b"")
    lancenb.LanceDataset.commit(dst, lancenb.LanceOperation.CreateIndex([idx], []),
                                read_version=1)
    assert lance.dataset(dst).list_indices()[0]["type"] == "BTree"
    assert lancenb.dataset(dst).list_indices()[0]["type"] == "BTree"


def test_same_name_replaces_and_removed_by_uuid(tmp_path):
    src, entry = _with_index(tmp_path)
    ds = lance.dataset(src)
    ds.create_scalar_index("price", "BTREE")
    other = next(e for e in lance.dataset(src).list_indices() if e["name"] == "price_idx")
    ours = lancenb.dataset(src)
    # a new segment under the name meta_idx (same files) replaces the old one
    new_uuid = "0f0e0d0c-0b0a-4908-8706-050403020100"
    shutil.copytree(os.path.join(src, "_indices", entry["uuid"]),
                    os.path.join(src, "_indices", new_uuid))
    idx = _index(lancenb, ours, {**entry, "uuid": new_uuid})
    gone = _Index(lancenb)(uuid=other["uuid"], name="price_idx", fields=[2],
                                 dataset_version=other["version"], fragment_ids={0, 1, 2},
                                 index_version=0)
    lancenb.LanceDataset.commit(src, lancenb.LanceOperation.CreateIndex([idx], [gone]),
                                read_version=ours.version)
    for lib in (lance, lancenb):
        got = lib.dataset(src).list_indices()
        assert [(e["name"], e["uuid"]) for e in got] == [("meta_idx", new_uuid)]
    t = lance.dataset(src).to_table(filter="meta = 'm3'")
    assert t.num_rows == 81


def _after(uri: str, lib, first: str):
    """Version 1 by pylance, ``first`` committed by pylance on it, then a CreateIndex
    on read version 1 by ``lib``."""
    js = _prepare(uri)
    ds = lance.dataset(uri)
    frags = sorted(f.fragment_id for f in ds.get_fragments())
    assert _commit(lance, uri, first, js) == "ok"
    idx = _Index(lib)(uuid="11111111-2222-4333-8444-555555555555", name="a_idx",
                            fields=[0], dataset_version=1, fragment_ids=set(frags),
                            index_version=0)
    try:
        lib.LanceDataset.commit(uri, lib.LanceOperation.CreateIndex([idx], []), read_version=1)
        outcome = "ok"
    except lancenb.errors.CommitConflictError as e:
        outcome = "retryable" if e.retryable else "conflict"
    except lance.commit.CommitConflictError as e:
        outcome = "retryable" if e.retryable else "conflict"
    names = sorted(e["name"] for e in lance.dataset(uri).list_indices())
    return outcome, _state(uri), names


@pytest.mark.parametrize("first", OPS)
def test_create_index_conflicts_like_pylance(tmp_path, first):
    want = _after(str(tmp_path / "lance"), lance, first)
    got = _after(str(tmp_path / "lancenb"), lancenb, first)
    assert got == want


def _history(uri: str, lib) -> list:
    """Index names pylance lists after each step of a history run by ``lib``."""
    lance.write_dataset(_table(), uri, max_rows_per_file=1000)
    lance.dataset(uri).create_scalar_index("meta", "BTREE")
    lance.dataset(uri).create_scalar_index("price", "BITMAP")
    out = []

    def seen(ds):
        got = lance.dataset(uri)
        out.append(sorted((e["name"], tuple(sorted(e["fragment_ids"])))
                          for e in got.list_indices()))
        out.append(got.to_table(filter="meta = 'm4' AND id < 2600").num_rows)
        out.append(lib.dataset(uri).count_rows("meta = 'm4' AND id < 2600"))

    ds = lib.dataset(uri)
    ds.delete("id < 1500")  # fragment 0 removed whole, fragment 1 gets a deletion file
    seen(ds)
    lib.write_dataset(_table(200), uri, mode="append")
    seen(ds)
    # (pylance compacts in both runs: lancenb refuses to compact an indexed dataset,
    # its compaction cannot remap index bitmaps yet)
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
    seen(ds)
    lib.dataset(uri).drop_columns(["price"])
    seen(ds)
    lib.write_dataset(_table(10), uri, mode="overwrite")
    seen(ds)
    return out


def test_index_section_through_later_commits(tmp_path):
    """The index section after a delete, an append, drop_columns and an overwrite
    committed by lancenb is the one pylance's commits leave, and filters give the
    same rows in both libraries."""
    want = _history(str(tmp_path / "lance"), lance)
    got = _history(str(tmp_path / "lancenb"), lancenb)
    assert got == want


def test_list_indices_fragment_ids_equal_a_set_as_pylance_s(tmp_path):
    """pylance's list_indices() gives a Bitmap that equals the set of fragment ids."""
    uri = str(tmp_path / "ds")
    t = pa.table({"id": list(range(300))})
    lance.write_dataset(t, uri, max_rows_per_file=100).create_scalar_index("id", "BTREE")
    ours = lancenb.dataset(uri).list_indices()[0]["fragment_ids"]
    theirs = lance.dataset(uri).list_indices()[0]["fragment_ids"]
    assert ours == {0, 1, 2} == theirs and ours != {0} and sorted(ours) == [0, 1, 2]
