"""Commit safety on branches (issue 33): a fault at every mutating call of a branch
creation or a write on a branch, SIGKILL of a writer on a branch, and writers on
two branches at once. Afterwards main and the branch open and read in lancenb and
pylance, main is untouched, and the branch holds the old or the new state."""

from __future__ import annotations

import os
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _faultfs as F  # noqa: E402

F.register()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _t(ids):
    return pa.table({"id": pa.array(list(ids), pa.int64())})


def _ids(ds) -> list:
    return sorted(ds.to_table()["id"].to_pylist())


def _build(path, kw):
    """main: ids 0..9 then 100..104 (version 2); branch "b" from version 1."""
    u = F.uri(path)
    ds = lancenb.write_dataset(_t(range(10)), u, max_rows_per_file=5, **kw)
    lancenb.write_dataset(_t(range(100, 105)), u, mode="append", **kw)
    ds.create_branch("b", 1)


def _state(path, kw):
    """(main ids, branch ids or None); main the same in lancenb and pylance."""
    main = lancenb.dataset(F.uri(path), **kw)
    assert _ids(lance.dataset(str(path))) == _ids(main)
    try:
        br = lancenb.dataset(F.uri(path), version=("b", None), **kw)
    except DatasetNotFoundError:
        assert "b" not in lance.dataset(str(path)).branches.list()
        return _ids(main), None
    # (pylance lists the branch; it cannot read its files here: the branch's base path
    # is the faulty:// URI it was written through)
    assert "b" in lance.dataset(str(path)).branches.list()
    return _ids(main), _ids(br)


def _create(path, kw):
    lancenb.dataset(F.uri(path), **kw).create_branch("c", 2)


def _append(path, kw):
    br = lancenb.dataset(F.uri(path), version=("b", None), **kw)
    lancenb.write_dataset(_t(range(50, 53)), br, mode="append", **kw)


def _delete(path, kw):
    lancenb.dataset(F.uri(path), version=("b", None), **kw).delete("id < 3")


def _branch_c(path, kw):
    try:
        return _ids(lancenb.dataset(F.uri(path), version=("c", None), **kw))
    except DatasetNotFoundError:
        return None


WRITERS = {"create_branch": _create, "append": _append, "delete": _delete}


@pytest.mark.parametrize("name", list(WRITERS))
def test_fault_at_every_mutating_call_on_a_branch(tmp_path, name):
    writer = WRITERS[name]
    ref = tmp_path / "ref"
    kw = {"commit_lock": threading.Lock()}
    F.CONTROL.reset()
    _build(ref, kw)
    old = (_state(ref, kw), _branch_c(ref, kw))
    F.CONTROL.reset()
    writer(ref, kw)
    n = F.CONTROL.count
    F.CONTROL.reset()
    new = (_state(ref, kw), _branch_c(ref, kw))
    assert n > 0 and new != old
    for mode in ("before", "after"):
        for k in range(1, n + 1):
            path = tmp_path / f"{mode}{k}"
            kw = {"commit_lock": threading.Lock()}
            F.CONTROL.reset()
            _build(path, kw)
            F.CONTROL.reset(fail_at=k, mode=mode)
            try:
                writer(path, kw)
                err = None
            except Exception as e:  # noqa: BLE001 - the injected fault
                err = e
            failed = F.CONTROL.failed
            F.CONTROL.reset()
            where = f"{name}: fault {mode} call {k} of {n} ({failed}): {err!r}"
            assert not isinstance(err, CommitOutcomeUnknownError), where
            got = (_state(path, kw), _branch_c(path, kw))
            assert got in (old, new), where
            if err is None:
                assert got == new, where
            # and both lines take further writes (a failed branch creation can be redone)
            if name == "create_branch" and got == old:
                _create(path, kw)
                assert _branch_c(path, kw) == new[1], where
            _append(path, kw)
            lancenb.write_dataset(_t([-1]), F.uri(path), mode="append", **kw)
            assert -1 in _state(path, kw)[0], where


_CHILD = textwrap.dedent("""
    import sys, lancenb, pyarrow as pa
    uri, log = sys.argv[1], sys.argv[2]
    with open(log, "a") as out:
        for step in range(1, 10**6):
            b = lancenb.dataset(uri, version=("b", None))
            if step % 2:
                lancenb.write_dataset(pa.table({"id": pa.array([1000 + step], pa.int64())}),
                                      b, mode="append")
            else:
                b.delete(f"id = {step}")
            out.write(f"{step}\\n")
            out.flush()
""")


def _model(steps: int) -> list[list[int]]:
    ids, states = list(range(20)), [list(range(20))]
    for step in range(1, steps + 1):
        ids = ids + [1000 + step] if step % 2 else [i for i in ids if i != step]
        states.append(sorted(ids))
    return states


def test_sigkill_of_a_writer_on_a_branch(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(_t(range(20)), uri, max_rows_per_file=5)
    ds.create_branch("b")
    log = tmp_path / "log"
    log.write_text("")
    p = subprocess.Popen([sys.executable, "-c", _CHILD, uri, str(log)],
                         env=dict(os.environ, PYTHONPATH=ROOT), stderr=subprocess.PIPE)
    while not log.read_text() and p.poll() is None:
        time.sleep(0.02)
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    _, err = p.communicate()
    assert p.returncode == -signal.SIGKILL, err[-2000:]
    done = len(log.read_text().split())
    states = _model(done + 1)
    got = _ids(lancenb.dataset(uri, version=("b", None)))
    assert got in (states[done], states[done + 1]), (done, got)
    assert _ids(lance.dataset(uri).checkout_version(("b", None))) == got
    assert _ids(lancenb.dataset(uri)) == list(range(20)) == _ids(lance.dataset(uri))
    lancenb.dataset(uri, version=("b", None)).insert(_t([-1]))
    assert -1 in _ids(lance.dataset(uri).checkout_version(("b", None)))


def test_writers_on_two_branches_both_land(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(_t(range(5)), uri)
    ds.create_branch("x")
    ds.create_branch("y")
    errors = []

    def write(branch, base):
        try:
            for i in range(5):
                b = lancenb.dataset(uri, version=(branch, None))
                lancenb.write_dataset(_t([base + i]), b, mode="append")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(b, n)) for b, n in (("x", 100), ("y", 200))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    theirs = lance.dataset(uri)
    assert _ids(theirs.checkout_version(("x", None))) == list(range(5)) + list(range(100, 105))
    assert _ids(theirs.checkout_version(("y", None))) == list(range(5)) + list(range(200, 205))
    assert _ids(lancenb.dataset(uri)) == list(range(5)) == _ids(theirs)


# -- multi-base datasets ----------------------------------------------------------------

def _mb_build(path, kw):
    u = F.uri(path / "primary")
    lancenb.write_dataset(_t(range(6)), u, initial_bases=[
        lancenb.DatasetBasePath(F.uri(path / "p1"), name="p1")], target_bases=["p1"],
        max_rows_per_file=3, **kw)


def _mb_append(path, kw):
    lancenb.write_dataset(_t(range(50, 54)), F.uri(path / "primary"), mode="append",
                          target_bases=["p1"], max_rows_per_file=2, **kw)


def _mb_add_bases(path, kw):
    lancenb.dataset(F.uri(path / "primary"), **kw).add_bases(
        [lancenb.DatasetBasePath(F.uri(path / "p2"), name="p2")])


def _mb_state(path, kw):
    # (lancenb only: the bases are faulty:// URIs, which pylance cannot open)
    ds = lancenb.dataset(F.uri(path / "primary"), **kw)
    return ds.version, _ids(ds), sorted(b.name for b in ds.base_paths().values())


@pytest.mark.parametrize("writer", [_mb_append, _mb_add_bases])
def test_fault_at_every_mutating_call_of_a_multi_base_write(tmp_path, writer):
    ref = tmp_path / "ref"
    kw = {"commit_lock": threading.Lock()}
    F.CONTROL.reset()
    _mb_build(ref, kw)
    old = _mb_state(ref, kw)
    F.CONTROL.reset()
    writer(ref, kw)
    n = F.CONTROL.count
    F.CONTROL.reset()
    new = _mb_state(ref, kw)
    assert n > 0 and new != old
    for mode in ("before", "after"):
        for k in range(1, n + 1):
            path = tmp_path / f"{mode}{k}"
            kw = {"commit_lock": threading.Lock()}
            F.CONTROL.reset()
            _mb_build(path, kw)
            before = set(os.listdir(path / "p1"))
            F.CONTROL.reset(fail_at=k, mode=mode)
            try:
                writer(path, kw)
                err = None
            except Exception as e:  # noqa: BLE001 - the injected fault
                err = e
            failed = F.CONTROL.failed
            F.CONTROL.reset()
            where = f"{writer.__name__}: fault {mode} call {k} of {n} ({failed}): {err!r}"
            assert not isinstance(err, CommitOutcomeUnknownError), where
            got = _mb_state(path, kw)
            assert got in (old, new), where
            if err is None:
                assert got == new, where
            if got == old and mode == "before":  # nothing of the failed write stays
                assert set(os.listdir(path / "p1")) == before, where
            _mb_append(path, kw)  # and it takes further writes
            after = _mb_state(path, kw)[1]
            assert len(after) == len(got[1]) + 4, where
