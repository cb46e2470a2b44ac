"""Multi-base datasets (``initial_bases``, ``target_bases``, ``add_bases``) both ways
with pylance, cleanup and compaction across bases, and confinement of base paths."""

from __future__ import annotations

import datetime as dt
import os

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import CorruptFileError
from lancenb.table import bases as B


def _t(lo, hi):
    return pa.table({"id": pa.array(range(lo, hi), pa.int64())})


def _ids(ds):
    return sorted(ds.to_table()["id"].to_pylist())


def _files(d):
    return sorted(os.path.relpath(os.path.join(p, n), d) for p, _, ns in os.walk(d) for n in ns) \
        if os.path.isdir(d) else []


@pytest.fixture
def dirs(tmp_path):
    return {k: str(tmp_path / k) for k in ("primary", "p1", "p2", "p3")}


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_multi_base_round_trip(dirs, writer):
    w, r = (lancenb, lance) if writer == "lancenb" else (lance, lancenb)
    ds = w.write_dataset(_t(0, 10), dirs["primary"], initial_bases=[
        w.DatasetBasePath(dirs["p1"], name="p1"),
        w.DatasetBasePath(dirs["p2"], name="p2", is_dataset_root=True)],
        target_bases=["p1", "p2"], max_rows_per_file=3)
    # one file per base in turn; a root base keeps them under data/
    assert len(_files(dirs["p1"])) == 2 and len(_files(dirs["p2"])) == 2
    assert all(f.startswith("data/") for f in _files(dirs["p2"]))
    assert not os.path.exists(os.path.join(dirs["primary"], "data"))
    ds.add_bases([w.DatasetBasePath(dirs["p3"], name="p3")])
    w.write_dataset(_t(10, 12), ds, mode="append", target_bases=["p3"])
    w.write_dataset(_t(12, 13), dirs["primary"], mode="append")  # the primary's data/
    other = r.dataset(dirs["primary"])   # a reader that was given no bases, as pylance
    assert _ids(other) == list(range(13))
    got = {k: (v.path, v.name, v.is_dataset_root) for k, v in other.base_paths().items()}
    assert got == {1: (dirs["p1"], "p1", False), 2: (dirs["p2"], "p2", True),
                   3: (dirs["p3"], "p3", False)}
    # the reader writes on: an append to a base, and an overwrite keeps the bases
    r.write_dataset(_t(13, 14), other, mode="append", target_bases=["p1"])
    assert len(_files(dirs["p1"])) == 3
    assert _ids(w.dataset(dirs["primary"])) == list(range(14))
    r.write_dataset(_t(20, 21), dirs["primary"], mode="overwrite", target_bases=["p2"])
    back = w.dataset(dirs["primary"])
    assert _ids(back) == [20] and len(back.base_paths()) == 3


def test_cleanup_and_compaction_across_bases(dirs):
    ds = lancenb.write_dataset(_t(0, 6), dirs["primary"], initial_bases=[
        lancenb.DatasetBasePath(dirs["p1"], name="p1")], target_bases=["p1"],
        max_rows_per_file=2)
    ds.delete("id = 1")
    lancenb.write_dataset(_t(6, 7), ds, mode="append", target_bases=["p1"])
    ds = lancenb.dataset(dirs["primary"])
    ds.create_branch("keep", 2)  # holds the first three files of p1 (version 2)
    ds.optimize.compact_files(target_rows_per_fragment=100)
    ds = lancenb.dataset(dirs["primary"])
    assert _ids(ds) == [0, 2, 3, 4, 5, 6]
    assert _ids(lance.dataset(dirs["primary"])) == [0, 2, 3, 4, 5, 6]
    first = _files(dirs["p1"])
    assert len(first) == 4
    stats = ds.cleanup_old_versions(older_than=dt.timedelta(0))
    assert stats.old_versions >= 1
    # the file only removed versions named is gone; the branch's three stay
    left = _files(dirs["p1"])
    assert len(left) == 3 and set(left) < set(first)
    assert _ids(lance.dataset(dirs["primary"])) == [0, 2, 3, 4, 5, 6]
    assert _ids(lance.dataset(dirs["primary"]).checkout_version(("keep", None))) == \
        [0, 2, 3, 4, 5]
    assert _ids(lancenb.dataset(dirs["primary"], version=("keep", None))) == [0, 2, 3, 4, 5]
    ds.branches.delete("keep")
    lancenb.dataset(dirs["primary"]).cleanup_old_versions(older_than=dt.timedelta(0))
    # (what only the deleted branch held is no removed version's: bases are never
    # listed, as another dataset may share one, so those files stay)
    assert len(_files(dirs["p1"])) == 3
    assert _ids(lance.dataset(dirs["primary"])) == [0, 2, 3, 4, 5, 6]


def test_target_and_initial_base_errors(dirs):
    base = [lancenb.DatasetBasePath(dirs["p1"], name="p1")]
    with pytest.raises(lancenb.InvalidInputError, match="not found"):
        lancenb.write_dataset(_t(0, 1), dirs["primary"], initial_bases=base,
                              target_bases=["nope"])
    ds = lancenb.write_dataset(_t(0, 1), dirs["primary"], initial_bases=base,
                               target_bases=["p1"])
    with pytest.raises(lancenb.InvalidInputError, match="Append mode"):
        lancenb.write_dataset(_t(1, 2), ds, mode="append", initial_bases=[
            lancenb.DatasetBasePath(dirs["p2"], name="p2")])
    with pytest.raises(lancenb.InvalidInputError, match="already exists"):
        ds.add_bases([lancenb.DatasetBasePath(dirs["p2"], name="p1")])
    assert ds.add_bases([]) is ds and ds.version == 1


@pytest.fixture
def confined():
    B.confine_bases(True)
    yield
    B.confine_bases(None)


def _manifest_naming(dirs, tmp_path) -> str:
    """A dataset whose manifest names a base outside it that this process never wrote
    (a hostile or copied manifest); the base's path."""
    from lancenb.table.commit import load_manifest, open_store
    from lancenb.table.manifest import VERSIONS_DIR, frame_manifest, manifest_name

    secret = str(tmp_path / "secret")
    lance.write_dataset(_t(41, 42), secret)
    lancenb.write_dataset(_t(0, 1), dirs["primary"])
    st = open_store(dirs["primary"])
    m = load_manifest(st, 1, True).manifest
    m.base_paths.add(id=7, path=secret, is_dataset_root=True)
    theirs = load_manifest(open_store(secret), 1, True).manifest
    m.fragments[0].files[0].CopyFrom(theirs.fragments[0].files[0])  # path, sizes, fields
    m.fragments[0].files[0].base_id = 7
    st.write_bytes(f"{VERSIONS_DIR}/{manifest_name(1, True)}", frame_manifest(m))
    return secret


def test_a_base_another_process_listed_is_read_as_pylance_reads_it(dirs, tmp_path):
    """By default every base a manifest lists is read, as pylance reads it."""
    _manifest_naming(dirs, tmp_path)
    assert _ids(lancenb.dataset(dirs["primary"])) == [41] == _ids(lance.dataset(
        dirs["primary"]))


def test_confined_reads_refuse_a_base_no_one_gave(dirs, tmp_path, confined):
    """With confine_bases on, a base outside the dataset that this process was not given
    is refused, not read, until the user vouches for it."""
    secret = _manifest_naming(dirs, tmp_path)
    with pytest.raises(CorruptFileError, match="outside the dataset"):
        lancenb.dataset(dirs["primary"])
    B.allow_bases([secret])  # the user vouches for it: read
    assert _ids(lancenb.dataset(dirs["primary"])) == [41]


def test_confinement_from_the_environment(dirs, tmp_path, monkeypatch):
    _manifest_naming(dirs, tmp_path)
    monkeypatch.setenv("LANCENB_CONFINE_BASES", "1")
    with pytest.raises(CorruptFileError, match="outside the dataset"):
        lancenb.dataset(dirs["primary"])
    monkeypatch.setenv("LANCENB_CONFINE_BASES", "0")
    assert _ids(lancenb.dataset(dirs["primary"])) == [41]


def test_a_file_name_cannot_leave_its_base(dirs, tmp_path):
    """Whatever the base, a file of it is one name inside it."""
    from lancenb.table.commit import load_manifest, open_store
    from lancenb.table.manifest import VERSIONS_DIR, frame_manifest, manifest_name

    secret = _manifest_naming(dirs, tmp_path)
    st = open_store(dirs["primary"])
    m = load_manifest(st, 1, True).manifest
    m.fragments[0].files[0].path = "../" + os.listdir(os.path.join(secret, "data"))[0]
    st.write_bytes(f"{VERSIONS_DIR}/{manifest_name(1, True)}", frame_manifest(m))
    with pytest.raises(CorruptFileError, match="data file path"):
        lancenb.dataset(dirs["primary"]).to_table()


def _layout(dirs) -> dict:
    """Data files per location: the primary's data/ and each base."""
    return {k: len([f for f in _files(d) if f.endswith(".lance") and "_versions" not in f
                    and "_transactions" not in f and "_deletions" not in f])
            for k, d in dirs.items()}


def _three_bases(lib, dirs):
    return lib.write_dataset(_t(0, 2), dirs["primary"], initial_bases=[
        lib.DatasetBasePath(dirs["p1"], name="p1"),
        lib.DatasetBasePath(dirs["p2"], name="p2", is_dataset_root=True),
        lib.DatasetBasePath(dirs["p3"], name="p3")])


@pytest.mark.parametrize("include_primary", [True, False])
def test_target_all_bases_spreads_files_as_pylance(tmp_path, include_primary):
    layouts = {}
    for lib in (lancenb, lance):
        dirs = {k: str(tmp_path / lib.__name__ / k) for k in ("primary", "p1", "p2", "p3")}
        _three_bases(lib, dirs)
        before = _layout(dirs)
        lib.write_dataset(_t(2, 10), dirs["primary"], mode="append", max_rows_per_file=1,
                          target_all_bases=include_primary)
        after = _layout(dirs)
        layouts[lib.__name__] = {k: after[k] - before[k] for k in after}
        other = lance if lib is lancenb else lancenb
        assert _ids(other.dataset(dirs["primary"])) == list(range(10))
    assert layouts["lancenb"] == layouts["lance"]
    assert layouts["lancenb"]["primary"] == (2 if include_primary else 0)


def test_target_bases_may_name_the_dataset_itself(dirs):
    ds = _three_bases(lancenb, dirs)
    before = _layout(dirs)
    lancenb.write_dataset(_t(2, 6), ds, mode="append", max_rows_per_file=1,
                          target_bases=[dirs["primary"], "p1"])
    after = _layout(dirs)
    assert {k: after[k] - before[k] for k in after} == {"primary": 2, "p1": 2, "p2": 0,
                                                         "p3": 0}
    assert _ids(lance.dataset(dirs["primary"])) == list(range(6))
    with pytest.raises(lancenb.InvalidInputError, match="cannot be combined"):
        lancenb.write_dataset(_t(6, 7), ds, mode="append", target_bases=["p1"],
                              target_all_bases=True)


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_merge_insert_writes_new_files_to_target_bases(tmp_path, writer):
    w, r = (lancenb, lance) if writer == "lancenb" else (lance, lancenb)
    dirs = {k: str(tmp_path / k) for k in ("primary", "p1", "p2", "p3")}
    ds = _three_bases(w, dirs)
    before = _layout(dirs)
    new = pa.table({"id": pa.array([1, 5, 6], pa.int64())})
    w.dataset(dirs["primary"]).merge_insert("id").when_matched_update_all() \
        .when_not_matched_insert_all().target_bases(["p3"]).execute(new)
    after = _layout(dirs)
    assert {k: after[k] - before[k] for k in after} == {"primary": 0, "p1": 0, "p2": 0,
                                                         "p3": 1}
    assert _ids(r.dataset(dirs["primary"])) == [0, 1, 5, 6]
    del ds
    # the deletion file of the updated row stays in the primary's storage
    assert any("_deletions" in f for f in _files(dirs["primary"]))
    r.dataset(dirs["primary"]).merge_insert("id").when_not_matched_insert_all() \
        .target_all_bases(False).execute(pa.table({"id": pa.array([7], pa.int64())}))
    assert _ids(w.dataset(dirs["primary"])) == [0, 1, 5, 6, 7]


def test_write_fragments_to_a_base_then_commit(dirs):
    _three_bases(lancenb, dirs)
    frags = lancenb.fragment.write_fragments(_t(2, 4), dirs["primary"], target_bases=["p2"])
    assert len(_files(dirs["p2"])) == 1
    op = lancenb.LanceOperation.Append(frags)
    lancenb.LanceDataset.commit(dirs["primary"], op, read_version=1)
    assert _ids(lance.dataset(dirs["primary"])) == list(range(4))
