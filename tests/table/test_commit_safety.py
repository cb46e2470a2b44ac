"""Committed data is never lost (issue 15): failure injection at every mutating call
of every writer, SIGKILL at random points, and cleanup racing a restore.

Each writer runs on ``faulty://`` (tests/table/_faultfs.py: the local directory
through a non-local fsspec filesystem) once to count its mutating calls, then once
per call k with the k-th call failing, with and without the SQLite external manifest
store. Afterwards the dataset must open and read in lancenb and pylance, hold exactly
the old or the new state, hold the new state if the call returned normally, and,
if it holds the old state, contain no file the failed attempt wrote.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import CommitOutcomeUnknownError, DatasetNotFoundError
from lancenb.table.external import SqliteManifestStore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _faultfs as F  # noqa: E402

F.register()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANAGED = ("data", "_deletions", "_transactions", "_versions", "_refs", "_row_ids")


def _t(ids, scale=1.0):
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "v": pa.array([i * scale for i in ids], pa.float64())})


def _kw(path, store: str) -> dict:
    if store == "sqlite":
        return {"manifest_store": SqliteManifestStore(str(path) + ".sqlite")}
    return {"commit_lock": threading.Lock()}


def _build(path, kw) -> None:
    """Version 1: ids 0..29 in three fragments; version 2: ids 100..104 appended."""
    u = F.uri(path)
    lancenb.write_dataset(_t(range(30)), u, max_rows_per_file=10, **kw)
    lancenb.write_dataset(_t(range(100, 105)), u, mode="append", **kw)


def _open(path, kw):
    return lancenb.dataset(F.uri(path), **kw)


# each writer: (needs the base dataset, run(path, kw))
def _create(path, kw):
    lancenb.write_dataset(_t(range(7)), F.uri(path), max_rows_per_file=4, **kw)


def _append(path, kw):
    lancenb.write_dataset(_t(range(200, 207)), F.uri(path), mode="append", max_rows_per_file=4,
                          **kw)


def _overwrite(path, kw):
    lancenb.write_dataset(_t(range(300, 305), 2.0), F.uri(path), mode="overwrite", **kw)


def _delete(path, kw):
    _open(path, kw).delete("id < 5 OR id = 102")


def _update(path, kw):
    _open(path, kw).update({"v": "v + 1"}, where="id >= 25 AND id < 101")


def _merge_insert(path, kw):
    data = pa.table({"id": pa.array([28, 29, 200], pa.int64()),
                     "v": pa.array([-1.0, -1.0, -1.0])})
    _open(path, kw).merge_insert("id").when_matched_update_all() \
        .when_not_matched_insert_all().execute(data)


def _add_columns(path, kw):
    _open(path, kw).add_columns({"w": "id * 2"})


def _drop_columns(path, kw):
    _open(path, kw).drop_columns(["v"])


def _alter_columns(path, kw):
    _open(path, kw).alter_columns({"path": "v", "name": "v2"})


def _merge(path, kw):
    ids = list(range(30)) + list(range(100, 105))
    _open(path, kw).merge(pa.table({"id": pa.array(ids, pa.int64()),
                                    "x": pa.array([str(i) for i in ids])}), "id")


def _compact(path, kw):
    _open(path, kw).optimize.compact_files(target_rows_per_fragment=1000)


def _restore(path, kw):
    lancenb.dataset(F.uri(path), version=1, **kw).restore()


def _tag(path, kw):
    _open(path, kw).tags.create("first", 1)


WRITERS = {"create": (False, _create), "append": (True, _append),
           "overwrite": (True, _overwrite), "delete": (True, _delete),
           "update": (True, _update), "merge_insert": (True, _merge_insert),
           "add_columns": (True, _add_columns), "drop_columns": (True, _drop_columns),
           "alter_columns": (True, _alter_columns), "merge": (True, _merge),
           "compact": (True, _compact), "restore": (True, _restore), "tag": (True, _tag)}


def _files(path) -> set[str]:
    out = set()
    for d in MANAGED:
        top = os.path.join(path, d)
        for dirpath, _, names in os.walk(top):
            out |= {os.path.relpath(os.path.join(dirpath, n), path) for n in names}
    return out


def _state(path, kw):
    """What a reader sees (lancenb through faulty://, which also finishes an external
    store commit; then pylance on the plain directory must agree)."""
    try:
        ds = _open(path, kw)
    except DatasetNotFoundError:
        with pytest.raises(ValueError):
            lance.dataset(str(path))
        return None
    table = ds.to_table()
    table = table.sort_by("id") if "id" in table.column_names else table
    ref = lance.dataset(str(path))
    assert ref.version == ds.version
    theirs = ref.to_table()
    theirs = theirs.sort_by("id") if "id" in theirs.column_names else theirs
    assert theirs.equals(table), (theirs, table)
    return (ds.version, table.schema.names, table.to_pydict(), sorted(ds.tags.list()))


def _run(path, kw, writer):
    try:
        writer(path, kw)
        return None
    except Exception as e:  # noqa: BLE001 - the injected fault, as the writer reports it
        return e


@pytest.mark.parametrize("store", ["lock", "sqlite"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_fault_at_every_mutating_call(tmp_path, name, store):
    needs_base, writer = WRITERS[name]
    ref = tmp_path / "ref"
    kw = _kw(ref, store)
    F.CONTROL.reset()
    if needs_base:
        _build(ref, kw)
    old = _state(ref, kw)
    F.CONTROL.reset()
    assert _run(ref, kw, writer) is None
    n = F.CONTROL.count
    F.CONTROL.reset()
    new = _state(ref, kw)
    assert n > 0 and new != old
    for mode in ("before", "after"):
        for k in range(1, n + 1):
            path = tmp_path / f"{mode}{k}"
            kw = _kw(path, store)
            F.CONTROL.reset()
            if needs_base:
                _build(path, kw)
            before = _files(path)
            F.CONTROL.reset(fail_at=k, mode=mode)
            err = _run(path, kw, writer)
            failed = F.CONTROL.failed
            F.CONTROL.reset()
            where = f"{name}/{store}: fault {mode} call {k} of {n} ({failed}): {err!r}"
            assert not isinstance(err, CommitOutcomeUnknownError), where
            got = _state(path, kw)
            # compaction commits two versions (fragment ids reserved, then the rewrite,
            # as pylance's): a fault between them leaves the reservation, data unchanged
            between = (old[0] + 1,) + old[1:] if name == "compact" else None
            assert got in (old, new, between), where
            if err is None:
                assert got == new, where
            if got in (old, between) and mode == "before":
                # nothing of the failed attempt stays (a staged manifest of the
                # external store aside, which is never referenced; and the committed
                # reservation's transaction file)
                left = {f for f in _files(path) - before if not f.startswith("_versions/")
                        and not (got == between and f.startswith("_transactions/"))}
                assert not left, where


# -- SIGKILL ---------------------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import sys, lancenb, pyarrow as pa
    from lancenb.table.external import SqliteManifestStore
    uri, log, db = sys.argv[1], sys.argv[2], sys.argv[3]
    kw = {"manifest_store": SqliteManifestStore(db)} if db else {}
    with open(log, "a") as out:
        for step in range(1, 10**6):
            kind = step % 3
            if kind == 0:
                lancenb.write_dataset(pa.table({"id": pa.array([1000 + step], pa.int64())}),
                                      uri, mode="append", **kw)
            elif kind == 1:
                lancenb.dataset(uri, **kw).delete(f"id = {step}")
            else:
                lancenb.dataset(uri, **kw).optimize.compact_files(target_rows_per_fragment=64)
            out.write(f"{step}\\n")
            out.flush()
""")


def _model(steps: int) -> list[list[int]]:
    """The id sets after 0, 1, ... ``steps`` steps of the child."""
    ids, states = list(range(20)), [list(range(20))]
    for step in range(1, steps + 1):
        kind = step % 3
        if kind == 0:
            ids = ids + [1000 + step]
        elif kind == 1:
            ids = [i for i in ids if i != step]
        states.append(sorted(ids))
    return states


@pytest.mark.parametrize("store", ["local", "sqlite"])
def test_sigkill_during_writes(tmp_path, store):
    rng = random.Random(15)
    for run in range(2):
        uri = str(tmp_path / f"ds{run}")
        db = str(tmp_path / f"m{run}.sqlite") if store == "sqlite" else ""
        kw = {"manifest_store": SqliteManifestStore(db)} if db else {}
        lancenb.write_dataset(pa.table({"id": pa.array(range(20), pa.int64())}), uri,
                              max_rows_per_file=5, **kw)
        log = tmp_path / f"log{run}"
        log.write_text("")
        env = dict(os.environ, PYTHONPATH=ROOT)
        p = subprocess.Popen([sys.executable, "-c", _CHILD, uri, str(log), db], env=env,
                             stderr=subprocess.PIPE)
        # wait until the child is committing (a first step done), then kill it at a
        # random point of the following ones
        while not log.read_text() and p.poll() is None:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.6))
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate()
        assert p.returncode == -signal.SIGKILL, err[-2000:]
        done = len(log.read_text().split())
        states = _model(done + 1)
        ds = lancenb.dataset(uri, **kw)
        got = sorted(ds.to_table()["id"].to_pylist())
        assert got in (states[done], states[done + 1]), (done, got)
        assert sorted(lance.dataset(uri).to_table()["id"].to_pylist()) == got
        # and the dataset takes further writes
        lancenb.write_dataset(pa.table({"id": pa.array([-1], pa.int64())}), uri,
                              mode="append", **kw)
        assert lancenb.dataset(uri, **kw).count_rows() == len(got) + 1


# -- cleanup racing a commit -------------------------------------------------------------

def test_cleanup_keeps_files_of_a_restore_landing_during_its_plan(tmp_path):
    path = tmp_path / "ds"
    kw = {"commit_lock": threading.Lock()}
    u = F.uri(path)
    lancenb.write_dataset(_t(range(10)), u, **kw)
    lancenb.write_dataset(_t(range(10, 20)), u, mode="overwrite", **kw)
    v1 = lancenb.dataset(u, version=1, **kw)
    want = v1.to_table()
    fired = []

    def restore_while_planning(name, p):
        # cleanup lists data/ after it has planned which versions go: restore then
        if name == "ls" and p.rstrip("/").endswith("/data") and not fired:
            fired.append(p)
            v1.restore()

    cleaner = lancenb.dataset(u, **kw)
    F.CONTROL.reset(hook=restore_while_planning)
    try:
        cleaner.cleanup_old_versions(older_than=dt.timedelta(0))
    finally:
        F.CONTROL.reset()
    assert fired
    ds = lancenb.dataset(u, **kw)
    assert ds.version == 3
    assert ds.to_table().equals(want)
    assert lance.dataset(str(path)).to_table().equals(want)


def test_sqlite_store_fault_after_the_commit_point_keeps_the_data(tmp_path):
    """Finding 1: with an external manifest store, an I/O error in step 3 of the
    commit (copying the staged manifest to its final name, after step 2 made the
    version current) used to delete the append's data files."""
    path = tmp_path / "ds"
    kw = _kw(path, "sqlite")
    _build(path, kw)

    F.CONTROL.reset()
    _append(path, kw)  # count the calls up to the final manifest's copy
    finals = [k for k, (name, p) in enumerate(F.CONTROL.calls, 1)
              if name == "pipe_file" and ".manifest" in p and "/_versions/" in p]
    assert len(finals) == 2 and finals[1] > finals[0]  # staged, then final
    assert F.CONTROL.calls[finals[1] - 1][1].endswith(".manifest")
    lancenb.dataset(F.uri(path), version=2, **kw).restore()  # back to the base rows

    F.CONTROL.reset(fail_at=finals[1])
    _append(path, kw)  # committed at step 2: the error in step 3 is not the caller's
    assert F.CONTROL.failed is not None
    F.CONTROL.reset()
    ds = _open(path, kw)
    assert ds.version == 5
    assert sorted(ds.to_table()["id"].to_pylist()) == \
        sorted(list(range(30)) + list(range(100, 105)) + list(range(200, 207)))
    assert lance.dataset(str(path)).count_rows() == 42


@pytest.mark.parametrize("mode", ["before", "after"])
def test_unanswerable_publish_raises_outcome_unknown_and_keeps_files(tmp_path, mode):
    """The manifest put fails and reading it back fails too: the writer cannot tell
    whether it committed, says so with the version, and removes nothing."""
    path = tmp_path / "ds"
    kw = _kw(path, "lock")
    _build(path, kw)
    F.CONTROL.reset()
    _append(path, kw)
    k = [i for i, (name, p) in enumerate(F.CONTROL.calls, 1)
         if name == "pipe_file" and p.endswith(".manifest")][0]
    lancenb.dataset(F.uri(path), version=2, **kw).restore()  # version 4: the base rows

    def reads_fail(name, p):
        if F.CONTROL.failed and name == "cat_file" and "/_versions/" in p:
            raise OSError(5, f"injected fault: {name} {p}")

    F.CONTROL.reset(fail_at=k, mode=mode, hook=reads_fail)
    try:
        with pytest.raises(CommitOutcomeUnknownError, match="version 5") as info:
            _append(path, kw)
    finally:
        F.CONTROL.reset()
    assert info.value.version == 5 and info.value.transaction_uuid
    ds = _open(path, kw)
    n = 42 if mode == "after" else 35
    assert ds.version == (5 if mode == "after" else 4) and ds.count_rows() == n
    assert lance.dataset(str(path)).count_rows() == n
    if mode == "after":  # the committed version names this transaction
        assert ds.manifest.transaction_file.endswith(f"{info.value.transaction_uuid}.txn")


class _LostAnswerStore(SqliteManifestStore):
    """Records the version, then reports an error (the answer was lost); with
    ``blind`` its reads fail too."""

    def __init__(self, path, *, blind=False):
        super().__init__(path)
        self.armed, self.blind = False, blind

    def put_if_not_exists(self, base_uri, version, path):
        won = super().put_if_not_exists(base_uri, version, path)
        if self.armed:
            self.armed = False
            self.reading_fails = self.blind
            raise OSError(5, "injected fault: the manifest store's answer was lost")
        return won

    def get(self, base_uri, version):
        if getattr(self, "reading_fails", False):
            self.reading_fails = False
            raise OSError(5, "injected fault: the manifest store cannot be read")
        return super().get(base_uri, version)


@pytest.mark.parametrize("blind", [False, True])
def test_external_store_answer_lost_at_the_commit_point(tmp_path, blind):
    path = tmp_path / "ds"
    ms = _LostAnswerStore(str(tmp_path / "m.sqlite"), blind=blind)
    kw = {"manifest_store": ms}
    _build(path, kw)
    ms.armed = True
    if blind:  # it did commit, but the writer cannot know: it must say so, keep files
        with pytest.raises(CommitOutcomeUnknownError, match="version 3"):
            _append(path, kw)
    else:  # the read-back finds our record: committed, the call returns normally
        _append(path, kw)
    ds = _open(path, kw)
    assert ds.version == 3 and ds.count_rows() == 42
    assert lance.dataset(str(path)).count_rows() == 42


def test_cleanup_keeps_the_version_an_in_flight_restore_read(tmp_path):
    """A restore() that wrote its transaction but has not published its manifest
    when cleanup deletes: the version it restores stays, files and all."""
    path = tmp_path / "ds"
    kw = {"commit_lock": threading.Lock()}
    u = F.uri(path)
    lancenb.write_dataset(_t(range(10)), u, **kw)
    lancenb.write_dataset(_t(range(10, 20)), u, mode="overwrite", **kw)
    v1 = lancenb.dataset(u, version=1, **kw)
    want = v1.to_table()
    ran = []

    def cleanup_before_the_publish(name, p):
        if name == "pipe_file" and p.endswith(".manifest") and not ran:
            ran.append(lancenb.dataset(u, **kw).cleanup_old_versions(
                older_than=dt.timedelta(0)))

    F.CONTROL.reset(hook=cleanup_before_the_publish)
    try:
        v1.restore()
    finally:
        F.CONTROL.reset()
    assert ran and ran[0].old_versions == 0
    ds = lancenb.dataset(u, **kw)
    assert ds.version == 3 and ds.to_table().equals(want)
    assert lance.dataset(str(path)).to_table().equals(want)
    # once nothing is in flight, the old versions go
    stats = ds.cleanup_old_versions(older_than=dt.timedelta(0))
    assert stats.old_versions == 2
    assert lance.dataset(str(path)).to_table().equals(want)


def test_add_columns_checkpoint_survives_a_failed_commit(tmp_path):
    """A batch UDF's checkpointed column files are what a rerun reuses: a commit that
    fails before its commit point must not delete them."""
    path = tmp_path / "ds"
    kw = _kw(path, "lock")
    _build(path, kw)

    @lancenb.batch_udf(output_schema=pa.schema([("w", pa.float64())]),
                       checkpoint_file=str(tmp_path / "w.ckpt"))
    def double(batch):
        return pa.record_batch([pa.compute.multiply(batch["v"], 2.0)], ["w"])

    def publish_fails(name, p):
        if name == "pipe_file" and p.endswith(".manifest"):
            raise OSError(5, f"injected fault: {name} {p}")

    F.CONTROL.reset(hook=publish_fails)
    try:
        with pytest.raises(OSError, match="injected fault"):
            _open(path, kw).add_columns(double, read_columns=["v"])
    finally:
        F.CONTROL.reset()
    assert _open(path, kw).version == 2
    _open(path, kw).add_columns(double, read_columns=["v"])  # the rerun resumes
    ds = _open(path, kw)
    t = ds.to_table().sort_by("id")
    assert t["w"].to_pylist() == [2.0 * v for v in t["v"].to_pylist()]
    assert lance.dataset(str(path)).to_table().sort_by("id").equals(t)


@pytest.mark.parametrize("where", ["publish", "finish"])
def test_interrupt_at_or_after_the_commit_point_removes_nothing(tmp_path, where):
    """Ctrl-C while the manifest is being published (outcome in doubt) or while an
    external-store commit is being finished (committed): no file is removed."""
    path = tmp_path / "ds"
    kw = _kw(path, "sqlite" if where == "finish" else "lock")
    _build(path, kw)

    def interrupt(name, p):
        hit = p.endswith(".manifest") and "/_versions/" in p
        if name == "pipe_file" and hit:
            raise KeyboardInterrupt

    F.CONTROL.reset(hook=interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            _append(path, kw)
    finally:
        F.CONTROL.reset()
    ds = _open(path, kw)
    if where == "finish":  # committed at step 2: a reader finishes steps 3-4
        assert ds.version == 3 and ds.count_rows() == 42
    else:  # the put never happened; the staged files stay (in doubt), invisible
        assert ds.version == 2 and ds.count_rows() == 35
        assert any(n.startswith("2-") for n in os.listdir(path / "_transactions"))
    assert lance.dataset(str(path)).count_rows() == ds.count_rows()


def _manifest_versions(uri: str) -> list[int]:
    from lancenb.table.manifest import parse_manifest_name

    names = os.listdir(os.path.join(uri, "_versions"))
    return sorted(p[0] for p in (parse_manifest_name(n) for n in names) if p is not None)


@pytest.mark.parametrize("tagged", [True, False])
@pytest.mark.parametrize("op", ["append", "delete", "restore", "overwrite"])
def test_commit_from_a_handle_whose_next_versions_were_cleaned_up(tmp_path, tagged, op):
    """A handle read version 1; versions 2..4 were committed and cleanup removed all but
    the latest (and the tagged version 1). The handle's commit must not take the freed
    number 2 below the latest 4, a commit no reader would see: it lands as version 5,
    or, where conflicts can no longer be checked (the versions in between are gone),
    is refused with nothing written."""
    from lancenb.errors import CommitConflictError

    uri = str(tmp_path / "ds")
    t = pa.table({"id": pa.array(range(10), pa.int64())})
    lancenb.write_dataset(t, uri)
    if tagged:
        lancenb.dataset(uri).tags.create("keep", 1)
    handle = lancenb.dataset(uri)
    for k in range(3):
        lancenb.write_dataset(pa.table({"id": pa.array([100 + k], pa.int64())}), uri,
                              mode="append")
    lancenb.dataset(uri).cleanup_old_versions(older_than=dt.timedelta(0),
                                              error_if_tagged_old_versions=False)
    assert _manifest_versions(uri) == ([1, 4] if tagged else [4])
    data_before = sorted(os.listdir(os.path.join(uri, "data")))
    try:
        if op == "append":
            lancenb.write_dataset(pa.table({"id": pa.array([7], pa.int64())}), handle,
                                  mode="append")
        elif op == "delete":
            handle.delete("id = 3")
        elif op == "restore":
            if not tagged:
                pytest.skip("version 1 is gone")
            handle.restore()
        else:
            lancenb.write_dataset(pa.table({"id": pa.array([9], pa.int64())}), handle,
                                  mode="overwrite")
    except CommitConflictError as e:
        assert op in ("append", "delete") and "cleanup_old_versions" in str(e)
        assert _manifest_versions(uri) == ([1, 4] if tagged else [4])
        assert sorted(os.listdir(os.path.join(uri, "data"))) == data_before
        assert lancenb.dataset(uri).count_rows() == 13
        return
    # (append and delete land too: the fragments they change are unchanged since, as
    # pylance, which checks only the versions that exist, commits them)
    assert _manifest_versions(uri)[-1] == 5 and 2 not in _manifest_versions(uri)
    for lib in (lancenb, lance):
        ds = lib.dataset(uri)
        assert ds.version == 5
        assert ds.count_rows() == {"restore": 10, "overwrite": 1, "append": 14,
                                   "delete": 12}[op]
