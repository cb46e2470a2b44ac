"""Branches (pylance 14's layout: ``_refs/branches/``, ``tree/{name}/``) both ways."""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetNotFoundError,
    InvalidInputError,
)


def _rows(ds) -> list:
    return sorted(ds.to_table()["a"].to_pylist())


def _t(*vals):
    return pa.table({"a": pa.array(vals, pa.int64())})


@pytest.fixture
def uri(tmp_path):
    return str(tmp_path / "ds")


def test_pylance_branch_read_and_written_by_lancenb(uri):
    ds = lance.write_dataset(_t(1, 2, 3), uri)
    ds.delete("a = 2")
    b = ds.create_branch("exp/one", 1)
    b.insert(_t(7))
    ds.tags.create("t1", ("exp/one", 2))

    ours = lancenb.dataset(uri)
    assert list(ours.branches.list()) == ["exp/one"]
    rec = ours.branches.list()["exp/one"]
    assert rec["parent_version"] == 1 and rec["parent_branch"] is None
    assert rec == ds.branches.list()["exp/one"]
    on = ours.checkout_version(("exp/one", None))
    assert on.version == 2 and _rows(on) == [1, 2, 3, 7]
    assert _rows(ours.checkout_version(("exp/one", 1))) == [1, 2, 3]
    assert _rows(lancenb.dataset(uri, version="t1")) == [1, 2, 3, 7]
    assert _rows(lancenb.dataset(uri, version=("main", 2))) == [1, 3]
    assert _rows(ours) == [1, 3]

    on.insert(_t(8))  # commits on the branch
    on.delete("a = 1")
    assert on.version == 4 and _rows(on) == [2, 3, 7, 8]
    theirs = lance.dataset(uri).checkout_version(("exp/one", None))
    assert theirs.version == 4 and _rows(theirs) == [2, 3, 7, 8]
    assert _rows(lance.dataset(uri)) == [1, 3]  # main untouched


def test_lancenb_branch_read_and_written_by_pylance(uri):
    ds = lancenb.write_dataset(_t(1, 2, 3), uri)
    ds.delete("a = 2")
    b = ds.create_branch("feat/x")
    assert b.version == 2 and _rows(b) == [1, 3]
    assert b.uri.endswith(os.path.join("tree", "feat", "x"))
    b.delete("a = 3")
    b.insert(_t(5))
    ds.tags.create("bt", ("feat/x", 4))
    lancenb.write_dataset(_t(6), b, mode="append")

    theirs = lance.dataset(uri)
    assert set(theirs.branches.list()) == {"feat/x"}
    rec = theirs.branches.list()["feat/x"]
    assert rec["parent_version"] == 2 and rec["parent_branch"] is None
    assert len(rec["branch_identifier"]) == 1
    assert theirs.tags.list()["bt"]["branch"] == "feat/x"
    tb = theirs.checkout_version(("feat/x", None))
    assert tb.version == 5 and _rows(tb) == [1, 5, 6]
    assert _rows(lance.dataset(uri, version="bt")) == [1, 5]
    tb.insert(_t(9))
    assert _rows(lancenb.dataset(uri, version=("feat/x", None))) == [1, 5, 6, 9]
    assert _rows(lancenb.dataset(uri)) == [1, 3]
    # each line has its own latest-version hint; a branch object pickles as itself
    hint = os.path.join(uri, "tree", "feat", "x", "_versions", "latest_version_hint.json")
    main_hint = os.path.join(uri, "_versions", "latest_version_hint.json")
    assert [json.loads(Path(p).read_text()) for p in (hint, main_hint)] == \
        [{"version": 6}, {"version": 2}]
    again = pickle.loads(pickle.dumps(lancenb.dataset(uri, version=("feat/x", 5))))
    assert again.version == 5 and _rows(again) == [1, 5, 6]
    assert _rows(again.checkout_version(("main", None))) == [1, 3]


def test_branch_of_a_branch_both_ways(uri):
    ds = lancenb.write_dataset(_t(1), uri)
    a = ds.create_branch("a")
    a.insert(_t(2))
    ab = a.create_branch("a/b")  # from a's latest version
    ab.insert(_t(3))
    assert lancenb.dataset(uri).branches.list()["a/b"]["parent_branch"] == "a"
    theirs = lance.dataset(uri).checkout_version(("a/b", None))
    assert _rows(theirs) == [1, 2, 3]
    theirs.create_branch("a/b/c").insert(_t(4))
    assert _rows(lancenb.dataset(uri, version=("a/b/c", None))) == [1, 2, 3, 4]
    # a branch others hold files of cannot be deleted (pylance 14 refuses it too)
    with pytest.raises(CommitConflictError, match=r"Branch a is referenced by \[\('a/b', 2\)"):
        lancenb.dataset(uri).branches.delete("a")
    with pytest.raises(OSError, match="referenced by"):
        lance.dataset(uri).branches.delete("a/b")
    assert _rows(lance.dataset(uri).checkout_version(("a/b/c", None))) == [1, 2, 3, 4]


def test_cleanup_keeps_what_branches_and_tags_reference(uri):
    ds = lancenb.write_dataset(_t(1, 2, 3), uri)
    ds.delete("a = 2")
    b = ds.create_branch("x")
    ds.tags.create("old", 1)
    lancenb.write_dataset(_t(9), uri, mode="overwrite")
    stats = lancenb.dataset(uri).cleanup_old_versions(older_than=dt.timedelta(0))
    assert stats.old_versions == 1  # version 2 goes, the tagged version 1 stays
    assert _rows(lancenb.dataset(uri, version=("x", None))) == [1, 3]
    assert _rows(lance.dataset(uri).checkout_version(("x", None))) == [1, 3]
    b.insert(_t(4))
    b.insert(_t(5))
    ds.tags.create("on_x", ("x", 3))
    got = lancenb.dataset(uri, version=("x", None)).cleanup_old_versions(
        older_than=dt.timedelta(0))
    assert got.old_versions == 1  # x's version 2 (3 is tagged, 4 latest)
    assert _rows(lancenb.dataset(uri, version="on_x")) == [1, 3, 4]
    assert _rows(lance.dataset(uri).checkout_version(("x", None))) == [1, 3, 4, 5]
    assert _rows(lancenb.dataset(uri)) == [9]


def test_delete_branch_and_names(uri):
    ds = lancenb.write_dataset(_t(1), uri)
    ds.create_branch("keep/me")
    ds.create_branch("keep")
    ds.branches.delete("keep")
    assert set(ds.branches.list()) == {"keep/me"}
    assert _rows(lance.dataset(uri).checkout_version(("keep/me", None))) == [1]
    assert not os.path.exists(os.path.join(uri, "tree", "keep", "_versions"))
    for bad in ("main", "", "/a", "a//b", "a/../b", "x.lock", "sp ace"):
        with pytest.raises(InvalidInputError):
            ds.create_branch(bad)
    with pytest.raises(InvalidInputError, match="already exists"):
        ds.create_branch("keep/me")
    with pytest.raises(DatasetNotFoundError, match="no branch"):
        ds.checkout_version(("nope", None))
    with pytest.raises(DatasetNotFoundError):
        ds.branches.delete("nope")
    ds.branches.replace_metadata("keep/me", {"k": "v"})
    assert lance.dataset(uri).branches.list()["keep/me"]["metadata"] == {"k": "v"}


def test_manifest_base_outside_the_dataset_is_refused(uri, tmp_path):
    """Under confine_bases, a branch manifest naming a base path outside the dataset and
    its branches must not make lancenb read there."""
    from lancenb.table.bases import confine_bases
    from lancenb.table.commit import load_manifest, open_store
    from lancenb.table.manifest import VERSIONS_DIR, frame_manifest, manifest_name

    outside = tmp_path / "elsewhere"
    lancenb.write_dataset(_t(41), str(outside))
    ds = lancenb.write_dataset(_t(1), uri)
    ds.create_branch("x")
    st = open_store(os.path.join(uri, "tree", "x"))
    mf = load_manifest(st, 1, True)
    m = mf.manifest
    m.base_paths[0].path = str(outside)
    outside_name = os.listdir(outside / "data")[0]
    m.fragments[0].files[0].path = outside_name
    st.write_bytes(f"{VERSIONS_DIR}/{manifest_name(1, True)}", frame_manifest(m))
    confine_bases(True)
    try:
        with pytest.raises(CorruptFileError, match="outside the dataset"):
            lancenb.dataset(uri, version=("x", 1))
    finally:
        confine_bases(None)
    # by default it is read, as pylance reads it
    assert lancenb.dataset(uri, version=("x", 1)).to_table() == \
        lance.dataset(uri).checkout_version(("x", 1)).to_table()


def test_shallow_clone_both_ways(tmp_path):
    src = str(tmp_path / "src")
    lancenb.write_dataset(_t(1, 2, 3), src)
    ds = lancenb.write_dataset(_t(4, 5), src, mode="overwrite")
    ds.delete("a = 4")
    ds.tags.create("v1", 1)
    c3 = ds.shallow_clone(str(tmp_path / "c3"), 3)
    ds.shallow_clone(str(tmp_path / "c1"), version="v1")  # (pylance's older keyword)
    assert c3.version == 3 and _rows(c3) == [5]
    assert _rows(lance.dataset(str(tmp_path / "c3"))) == [5]
    assert _rows(lance.dataset(str(tmp_path / "c1"))) == [1, 2, 3]
    assert not os.path.exists(tmp_path / "c3" / "data")  # metadata only
    c3.insert(_t(9))  # the clone's own writes stay in the clone
    assert _rows(lance.dataset(str(tmp_path / "c3"))) == [5, 9]
    assert _rows(lancenb.dataset(src)) == [5]
    lance.dataset(src).shallow_clone(str(tmp_path / "pc"), ("main", 1))
    assert _rows(lancenb.dataset(str(tmp_path / "pc"))) == [1, 2, 3]
    with pytest.raises(lancenb.DatasetExistsError):
        ds.shallow_clone(str(tmp_path / "c3"), 3)
