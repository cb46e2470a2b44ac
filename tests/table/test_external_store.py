"""The external manifest store (SQLite): concurrent commits through it, and readers
finishing a commit whose writer died after the commit point."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import CorruptFileError
from lancenb.table.external import SqliteManifestStore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _t(vals):
    return pa.table({"id": pa.array(vals, pa.int64())})


def test_processes_commit_through_sqlite(tmp_path):
    uri, db = str(tmp_path / "ds"), str(tmp_path / "manifests.sqlite")
    lancenb.write_dataset(_t([-1]), uri, manifest_store=SqliteManifestStore(db))
    code = textwrap.dedent("""
        import sys, lancenb, pyarrow as pa
        from lancenb.table.external import SqliteManifestStore
        uri, db, w = sys.argv[1], sys.argv[2], int(sys.argv[3])
        store = SqliteManifestStore(db)
        for k in range(10):
            t = pa.table({"id": pa.array([w * 100 + k], pa.int64())})
            lancenb.write_dataset(t, uri, mode="append", manifest_store=store)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", code, uri, db, str(w)], env=env,
                              stderr=subprocess.PIPE, text=True) for w in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    store = SqliteManifestStore(db)
    ds = lancenb.dataset(uri, manifest_store=store)
    want = sorted([-1] + [w * 100 + k for w in range(4) for k in range(10)])
    assert sorted(ds.to_table()["id"].to_pylist()) == want
    assert [v["version"] for v in ds.versions()] == list(range(1, 42))
    latest = store.get_latest(ds._store.uri_of(""))
    assert latest[0] == 41 and latest[1].endswith(".manifest")
    # no staging files left behind, and pylance (which knows nothing of the store) agrees
    assert not [n for n in os.listdir(os.path.join(uri, "_versions")) if "-" in n]
    assert sorted(lance.dataset(uri).to_table()["id"].to_pylist()) == want


def test_reader_finishes_a_commit_stopped_after_the_commit_point(tmp_path):
    uri, db = str(tmp_path / "ds"), str(tmp_path / "m.sqlite")
    store = SqliteManifestStore(db)
    lancenb.write_dataset(_t([1, 2]), uri, manifest_store=store)
    ds = lancenb.write_dataset(_t([3]), uri, mode="append", manifest_store=store)
    base = ds._store.uri_of("")
    final = os.path.join(uri, "_versions", f"{2**64 - 1 - 2:020d}.manifest")
    # rewind to "after step 2": the staged manifest exists and the store points at
    # it, but the final manifest was never written
    staged_rel = f"_versions/{os.path.basename(final)}-2b1c4a54-0000-4000-8000-000000000000"
    os.replace(final, os.path.join(uri, staged_rel))
    store.put_if_exists(base, 2, staged_rel)
    assert lance.dataset(uri).version == 1  # a reader unaware of the store: one behind
    ds = lancenb.dataset(uri, manifest_store=store)
    assert ds.version == 2 and ds.to_table()["id"].to_pylist() == [1, 2, 3]
    assert os.path.exists(final) and store.get(base, 2) == f"_versions/{os.path.basename(final)}"
    assert lance.dataset(uri).version == 2


def test_unsynchronisable_commit_refuses_to_load(tmp_path):
    uri, db = str(tmp_path / "ds"), str(tmp_path / "m.sqlite")
    store = SqliteManifestStore(db)
    ds = lancenb.write_dataset(_t([1]), uri, manifest_store=store)
    store.put_if_not_exists(ds._store.uri_of(""), 2, "_versions/gone.manifest-1234")
    with pytest.raises(CorruptFileError, match="could not be synchronised"):
        lancenb.dataset(uri, manifest_store=store)


def test_put_if_not_exists_is_exclusive(tmp_path):
    a = SqliteManifestStore(tmp_path / "x.sqlite")
    b = SqliteManifestStore(tmp_path / "x.sqlite")
    assert a.put_if_not_exists("u", 1, "p1")
    assert not b.put_if_not_exists("u", 1, "p2")
    assert a.get("u", 1) == "p1" and a.get_latest("u") == (1, "p1")
    assert a.get_latest("other") is None
    with pytest.raises(CorruptFileError):
        a.put_if_exists("u", 9, "p")
