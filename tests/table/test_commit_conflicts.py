"""Concurrent commits decided as pylance decides them.

For pairs of operations built against the same version 1, the first is committed (by
pylance or by lancenb), then the second by lancenb with ``read_version=1``: lancenb
must commit it (rebased) exactly when pylance does, refuse it with the same kind of
conflict (retryable or not) when pylance refuses it, and the table it leaves must be
the one pylance leaves. The oracle is pylance committing both. The reverse (lancenb
first, pylance second) checks that pylance reads lancenb's transactions the same way.
"""

from __future__ import annotations

import json
import os

import lance
import lance.commit
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import CommitConflictError, RetryableCommitConflictError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BASE = pa.table({"a": pa.array(range(20), pa.int64()), "b": pa.array(range(100, 120),
                                                                      pa.int64())})


def _t(a, b):
    return pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64())})


def _prepare(uri: str) -> dict:
    """Version 1 (two fragments of 10 rows, written by pylance) and every staged file
    the operations below commit, as fragment JSON built against version 1."""
    lance.write_dataset(BASE, uri, max_rows_per_file=10)
    ds = lance.dataset(uri)
    f0, f1 = ds.get_fragments()
    js = {
        "f0": f0.metadata.to_json(), "f1": f1.metadata.to_json(),
        "new": lance.LanceFragment.create(uri, _t([100, 101], [0, 0])).to_json(),
        "del0": f0.delete("a < 3").to_json(),
        "del0b": f0.delete("a >= 7").to_json(),
        "del1": f1.delete("a >= 15").to_json(),
        "upd0": f0.delete("a < 2").to_json(),
        "upd0_new": lance.LanceFragment.create(uri, _t([0, 1], [-1, -1])).to_json(),
        "all01": lance.LanceFragment.create(uri, BASE).to_json(),
        "all1": lance.LanceFragment.create(uri, BASE.slice(10)).to_json(),
        "over": lance.LanceFragment.create(uri, _t([7], [7])).to_json(),
    }
    return js


def _op(lib, name: str, js: dict):
    """The operation ``name`` in library ``lib`` (pylance or lancenb)."""
    L = lib.LanceOperation

    def fm(key):
        return lib.fragment.FragmentMetadata.from_json(json.dumps(js[key]))

    schema = BASE.schema
    if name == "append":
        return L.Append([fm("new")])
    if name == "delete0":
        return L.Delete([fm("del0")], [], "a < 3")
    if name == "delete0b":
        return L.Delete([fm("del0b")], [], "a >= 7 AND a < 10")
    if name == "delete1":
        return L.Delete([fm("del1")], [], "a >= 15")
    if name == "delete_frag1":
        return L.Delete([], [js["f1"]["id"]], "a >= 10")
    if name == "update0":
        return L.Update(updated_fragments=[fm("upd0")], new_fragments=[fm("upd0_new")])
    if name == "overwrite":
        return L.Overwrite(schema, [fm("over")])
    if name == "restore":
        return L.Restore(1)
    if name.startswith("merge"):  # (merge_pn: preserves_nullability)
        return L.Merge([fm("f0"), fm("f1")], schema, name == "merge_pn")
    if name.startswith("project"):
        return L.Project(pa.schema([schema.field("a")]), name == "project_pn")
    if name == "rewrite01":
        return L.Rewrite([L.RewriteGroup([fm("f0"), fm("f1")], [fm("all01")])], [])
    if name == "rewrite1":
        return L.Rewrite([L.RewriteGroup([fm("f1")], [fm("all1")])], [])
    if name.startswith("config_"):
        key, value = {"config_k": ("k", "1"), "config_k2": ("k", "2"),
                      "config_j": ("j", "1")}[name]
        return L.UpdateConfig(config_updates=L.UpdateMap({key: value}))
    raise AssertionError(name)


def _commit(lib, uri: str, name: str, js: dict, **kw):
    """Commit operation ``name`` with ``lib`` on read version 1: "ok" or the kind of
    conflict ("retryable" / "conflict"); other errors raise."""
    try:
        lib.LanceDataset.commit(uri, _op(lib, name, js), read_version=1, **kw)
        return "ok"
    except RetryableCommitConflictError:
        return "retryable"
    except CommitConflictError:
        return "conflict"
    except lance.commit.CommitConflictError as e:
        return "retryable" if e.retryable else "conflict"


def _state(uri: str):
    """What the dataset holds, read by pylance: (latest version, sorted rows, config)."""
    ds = lance.dataset(uri)
    t = ds.to_table()
    keys = [(c, "ascending") for c in t.column_names]
    return ds.version, t.sort_by(keys).to_pydict(), dict(ds.config())


def _run(tmp_path, tag: str, first_lib, second_lib, first: str, second: str):
    uri = os.path.join(str(tmp_path), tag)
    js = _prepare(uri)
    assert _commit(first_lib, uri, first, js) == "ok"
    outcome = _commit(second_lib, uri, second, js)
    return outcome, _state(uri)


OPS = ["append", "delete0", "delete0b", "delete1", "delete_frag1", "update0", "overwrite",
       "restore", "merge", "merge_pn", "project", "project_pn", "rewrite01", "rewrite1",
       "config_k", "config_k2", "config_j"]

# (second, first) pairs the matrix skips: none yet.
PAIRS = [(s, f) for s in OPS for f in OPS]


@pytest.mark.parametrize("second,first", PAIRS)
def test_conflicts_match_pylance(tmp_path, second, first):
    want = _run(tmp_path, "oracle", lance, lance, first, second)
    got = _run(tmp_path, "lance_first", lance, lancenb, first, second)
    assert got == want, f"pylance committed {first}, then lancenb {second}"
    got = _run(tmp_path, "lancenb_first", lancenb, lancenb, first, second)
    assert got == want, f"lancenb committed {first}, then lancenb {second}"
    got = _run(tmp_path, "lancenb_then_lance", lancenb, lance, first, second)
    assert got == want, f"lancenb committed {first}, then pylance {second}"


@pytest.mark.parametrize("lib", [lance, lancenb])
def test_strict_overwrite_refuses_a_stale_read_version(tmp_path, lib):
    """max_retries=0 makes an overwrite strict: version read_version + 1 or nothing
    (the second overwrite read version 1 too and must not silently replace the
    first). With retries it is pylance's retryable conflict."""
    uri = str(tmp_path / "ds")
    frag = lance.LanceFragment.create(uri, BASE).to_json()

    def op():
        return lib.LanceOperation.Overwrite(
            BASE.schema, [lib.fragment.FragmentMetadata.from_json(json.dumps(frag))])

    assert lib.LanceDataset.commit(uri, op(), max_retries=0).version == 1
    assert lib.LanceDataset.commit(uri, op(), read_version=1, max_retries=0).version == 2
    with pytest.raises(OSError, match="Commit conflict for version 2") as info:
        lib.LanceDataset.commit(uri, op(), read_version=1, max_retries=0)
    assert type(info.value).__name__ == "CommitConflictError"
    with pytest.raises(OSError, match="etryable commit conflict for version 2") as info:
        lib.LanceDataset.commit(uri, op(), read_version=1)
    assert info.value.retryable
    assert _versions_of(uri) == [1, 2]


def _versions_of(uri):
    return [v["version"] for v in lance.dataset(uri).versions()]


@pytest.mark.parametrize("first", [lance, lancenb])
def test_dataset_delete_is_rebased_like_pylance(tmp_path, first):
    """LanceDataset.delete knows the rows it removes, so a stale handle's delete is
    rebased over another delete of the same fragment (the two sets merged), where a
    Delete operation given to LanceDataset.commit is a retryable conflict."""
    got = {}
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        uri = str(tmp_path / name)
        lance.write_dataset(BASE, uri, max_rows_per_file=10)
        stale = lib.dataset(uri)
        first.dataset(uri).delete("a < 3")
        stale.delete("a >= 7 AND a < 12")
        got[name] = _state(uri)
    assert got["lancenb"] == got["lance"]
    assert got["lance"][0] == 3 and len(got["lance"][1]["a"]) == 12


def _cleaned_gap(uri: str, lib, between: str):
    """Version 1 (two fragments), a stale handle on it, then ``between`` and two
    appends, and cleanup_old_versions keeping only the latest version."""
    import datetime as dt

    lance.write_dataset(BASE, uri, max_rows_per_file=10)
    stale = lib.dataset(uri)
    if between == "delete_same":
        lance.dataset(uri).delete("a < 2")
    elif between == "delete_other":
        lance.dataset(uri).delete("a >= 18")
    elif between == "add_column":
        lance.dataset(uri).add_columns({"c": "a * 2"})
    for k in range(2):
        lance.write_dataset(_t([200 + k], [0]) if between != "add_column" else
                            pa.table({"a": pa.array([200 + k], pa.int64()),
                                      "b": pa.array([0], pa.int64()),
                                      "c": pa.array([0], pa.int64())}), uri, mode="append")
    lance.dataset(uri).cleanup_old_versions(older_than=dt.timedelta(0))
    assert len(lance.dataset(uri).versions()) == 1
    return stale


@pytest.mark.parametrize("between", ["appends", "delete_other"])
@pytest.mark.parametrize("op", ["delete", "append"])
def test_stale_commit_over_cleaned_versions_like_pylance(tmp_path, between, op):
    """Versions removed by cleanup_old_versions: pylance commits (it checks only the
    versions that exist); lancenb commits too when the fragments it changes are
    unchanged, leaving the same table."""
    got = {}
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        uri = str(tmp_path / name)
        stale = _cleaned_gap(uri, lib, between)
        if op == "delete":
            stale.delete("a >= 5 AND a < 7")
        else:
            lib.write_dataset(_t([300], [3]), stale, mode="append")
        got[name] = _state(uri)
    assert got["lancenb"] == got["lance"]


def test_stale_delete_over_cleaned_delete_keeps_both(tmp_path):
    """A delete of the same fragment was committed in a version since removed:
    lancenb merges the two deletion sets (pylance, not seeing that version, writes
    only its own and brings rows 0 and 1 back)."""
    uri = str(tmp_path / "ds")
    stale = _cleaned_gap(uri, lancenb, "delete_same")
    stale.delete("a >= 5 AND a < 7")
    rows = sorted(lance.dataset(uri).to_table()["a"].to_pylist())
    assert rows == [2, 3, 4] + list(range(7, 20)) + [200, 201]
    assert lancenb.dataset(uri).to_table()["a"].to_pylist() == lance.dataset(
        uri).to_table()["a"].to_pylist()


def test_stale_append_over_cleaned_schema_change_refused(tmp_path):
    """An append whose read version's schema changed in a version since removed is a
    retryable conflict naming the removed version, with nothing committed."""
    uri = str(tmp_path / "ds")
    stale = _cleaned_gap(uri, lancenb, "add_column")
    with pytest.raises(RetryableCommitConflictError, match="cleanup_old_versions"):
        lancenb.write_dataset(_t([300], [3]), stale, mode="append")
    assert lance.dataset(uri).version == 4


def test_stale_delete_operation_over_cleaned_delete_refused(tmp_path):
    """A Delete operation (its rows unknown, as for pylance) of a fragment whose
    deletions changed in a version since removed cannot be rebased: retryable."""
    import datetime as dt

    uri = str(tmp_path / "ds")
    lance.write_dataset(BASE, uri, max_rows_per_file=10)
    lance.dataset(uri).tags.create("keep", 1)  # (cleanup keeps version 1: the read one)
    js = lance.dataset(uri).get_fragments()[0].delete("a >= 5 AND a < 7").to_json()
    lance.dataset(uri).delete("a < 2")
    lance.write_dataset(_t([200], [0]), uri, mode="append")
    lance.dataset(uri).cleanup_old_versions(older_than=dt.timedelta(0),
                                            error_if_tagged_old_versions=False)
    assert _versions_of(uri) == [1, 3]
    op = lancenb.LanceOperation.Delete(
        [lancenb.fragment.FragmentMetadata.from_json(json.dumps(js))], [], "a >= 5 AND a < 7")
    with pytest.raises(RetryableCommitConflictError, match="version 2 .*cleanup_old_versions"):
        lancenb.LanceDataset.commit(uri, op, read_version=1)
    assert _versions_of(uri) == [1, 3]


def _merge_insert(value: int):
    def run(ds):
        src = pa.table({"a": pa.array([value], pa.int64()), "b": pa.array([-value], pa.int64())})
        ds.merge_insert("a").when_matched_update_all().execute(src)
    return run


ROW_FIRST = {  # committed first, by pylance, on version 1
    "delete_a<2": lambda ds: ds.delete("a < 2"),
    "delete_a>=18": lambda ds: ds.delete("a >= 18"),
    "update_a=3": lambda ds: ds.update({"b": "b + 1000"}, "a = 3"),
    "update_a=15": lambda ds: ds.update({"b": "b + 1000"}, "a = 15"),
    "merge_insert_a=4": _merge_insert(4),
}
ROW_SECOND = {  # then through a handle still on version 1
    "update_a=5": lambda ds: ds.update({"b": "b + 2000"}, "a = 5"),
    "update_a=1": lambda ds: ds.update({"b": "b + 2000"}, "a = 1"),
    "delete_a=6": lambda ds: ds.delete("a = 6"),
    "merge_insert_a=7": _merge_insert(7),
}


def _row_change(uri, lib, first, second):
    lance.write_dataset(BASE, uri, max_rows_per_file=10)
    stale = lib.dataset(uri)
    ROW_FIRST[first](lance.dataset(uri))
    try:
        ROW_SECOND[second](stale)
        outcome = "ok"
    except CommitConflictError as e:
        outcome = "retryable" if e.retryable else "conflict"
    return outcome, _state(uri)


@pytest.mark.parametrize("first", sorted(ROW_FIRST))
@pytest.mark.parametrize("second", sorted(ROW_SECOND))
def test_stale_row_changes_rebased_like_pylance(tmp_path, first, second):
    """LanceDataset.update, merge_insert and delete know the rows they change, so
    (as pylance) they are rebased over a concurrent delete/update/merge_insert of the
    same fragment: the deletion sets are merged and the table is pylance's. One
    difference: an update of a row the other deleted (a = 1 after a < 2) is refused
    as retryable with nothing committed, where pylance commits it without the row."""
    want = _row_change(str(tmp_path / "lance"), lance, first, second)
    got = _row_change(str(tmp_path / "lancenb"), lancenb, first, second)
    if (first, second) == ("delete_a<2", "update_a=1"):
        assert want[0] == "ok" and 1 not in want[1][1]["a"]
        assert got[0] == "retryable" and got[1][0] == 2
        return
    assert got == want


def _after_index(uri: str, lib, second: str):
    js = _prepare(uri)
    lance.dataset(uri).create_scalar_index("a", "BTREE")  # version 2: CreateIndex
    return _commit(lib, uri, second, js), _state(uri)


@pytest.mark.parametrize("second", OPS)
def test_after_pylance_index_creation_like_pylance(tmp_path, second):
    """An index built by pylance (a CreateIndex transaction covering both fragments)
    committed after version 1: each operation on read version 1 is compatible or
    refused as pylance decides (a rewrite of indexed fragments: retryable)."""
    want = _after_index(str(tmp_path / "lance"), lance, second)
    got = _after_index(str(tmp_path / "lancenb"), lancenb, second)
    assert got == want
