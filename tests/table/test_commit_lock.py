"""A ``commit_lock`` that raises: its error reaches the caller, as in pylance.

pylance's contract: ``commit_lock(version)`` returns a context manager held while
the manifest of ``version`` is written. If taking the lock fails nothing is
committed; if releasing it fails the version was already written and stays, and
the error is still raised. pylance runs the same steps on the same data as the
oracle for what is committed.
"""

from __future__ import annotations

import contextlib
import os

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import CommitConflictError, CommitLockError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

T = pa.table({"a": pa.array(range(10), pa.int64())})


class Boom(Exception):
    pass


def _failing_on(where: str, calls: list):
    @contextlib.contextmanager
    def lock(version):
        calls.append(("enter", version))
        if where == "enter":
            raise Boom(f"no lock for {version}")
        try:
            yield
        finally:
            calls.append(("exit", version))
            if where == "exit":
                raise Boom("hello from release")
    return lock


def _versions(uri):
    try:
        return [v["version"] for v in lance.dataset(uri).versions()]
    except (ValueError, OSError):
        return []


def _files(uri, sub):
    d = os.path.join(uri, sub)
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


@pytest.mark.parametrize("where", ["enter", "exit"])
@pytest.mark.parametrize("mode", ["create", "append"])
def test_lock_error_propagates_as_pylance(tmp_path, where, mode):
    out = {}
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        uri = str(tmp_path / name)
        if mode == "append":
            lib.write_dataset(T, uri)
        calls: list = []
        with pytest.raises(Exception) as info:
            lib.write_dataset(T, uri, mode=mode, commit_lock=_failing_on(where, calls))
        want = "no lock for" if where == "enter" else "hello from release"
        assert want in str(info.value) and "Boom" in str(info.value)
        if lib is lancenb:
            assert isinstance(info.value, CommitLockError)
            assert isinstance(info.value.__cause__, Boom)
            assert info.value.committed is (where == "exit")
        out[name] = (calls, _versions(uri),
                     lance.dataset(uri).count_rows() if _versions(uri) else None)
    assert out["lancenb"] == out["lance"]


def test_failed_release_keeps_everything_written(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(T, uri)
    data_before = set(_files(uri, "data"))
    with pytest.raises(CommitLockError, match="version 2 was committed"):
        lancenb.write_dataset(T, uri, mode="append", commit_lock=_failing_on("exit", []))
    new = set(_files(uri, "data")) - data_before
    assert len(new) == 1  # the appended data file stays: version 2 refers to it
    ds = lancenb.dataset(uri)
    assert ds.version == 2 and ds.count_rows() == 20
    assert lance.dataset(uri).count_rows() == 20
    assert lancenb.dataset(uri).latest_version == 2


def test_failed_take_removes_what_the_writer_staged(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(T, uri)
    data_before, txns_before = _files(uri, "data"), _files(uri, "_transactions")
    ds = lancenb.dataset(uri, commit_lock=_failing_on("enter", []))
    with pytest.raises(CommitLockError, match="nothing was committed"):
        ds.delete("a < 3")
    assert _versions(uri) == [1]
    assert _files(uri, "data") == data_before
    assert _files(uri, "_transactions") == txns_before
    assert _files(uri, "_deletions") == []


def test_lock_raising_a_conflict_is_named(tmp_path):
    """A lock that refuses with CommitConflictError (pylance's own test does this):
    the caller sees the error's class name."""
    @contextlib.contextmanager
    def lock(version):
        raise CommitConflictError()
        yield  # pragma: no cover

    uri = str(tmp_path / "ds")
    with pytest.raises(CommitLockError, match="CommitConflictError"):
        lancenb.write_dataset(T, uri, commit_lock=lock)
    assert _versions(uri) == []


def test_working_lock_is_held_around_the_manifest_write(tmp_path):
    uri = str(tmp_path / "ds")
    seen = []

    @contextlib.contextmanager
    def lock(version):
        seen.append(("enter", version, _versions(uri)))
        yield
        seen.append(("exit", version, _versions(uri)))

    lancenb.write_dataset(T, uri, commit_lock=lock)
    lancenb.write_dataset(T, uri, mode="append", commit_lock=lock)
    assert seen == [("enter", 1, []), ("exit", 1, [1]), ("enter", 2, [1]), ("exit", 2, [1, 2])]
