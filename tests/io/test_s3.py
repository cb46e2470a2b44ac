"""Datasets on a real S3 API (moto's server, ``tests/_s3server.py``): the commit point
is S3's conditional put (``If-None-Match: *``), checked here end to end, across
processes, and against pylance in both directions."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor

import pyarrow as pa
import pytest
from _s3server import append_worker
from _tables import assert_tables_equal

import lancenb
from lancenb.errors import DatasetNotFoundError
from lancenb.io.store import ObjectStore


def ids(lo, hi):
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()),
                     "s": pa.array([f"r{i}" for i in range(lo, hi)])})


def test_moto_honours_if_none_match(s3):
    """The server refuses a second create-only put (else the tests below prove nothing)."""
    import s3fs

    fs = s3fs.S3FileSystem(**s3.lancenb_options)
    path = f"{s3.bucket}/probe/{s3.uri().rsplit('/', 1)[1]}"
    fs.pipe_file(path, b"first", mode="create")
    with pytest.raises(FileExistsError):
        fs.pipe_file(path, b"second", mode="create")
    assert fs.cat_file(path) == b"first"


def test_store_detects_conditional_put(s3):
    store = ObjectStore(s3.uri(), s3.lancenb_options)
    assert store.conditional_put == "create"
    assert store.put_if_absent("_versions/x", b"mine")
    assert not store.put_if_absent("_versions/x", b"theirs")
    assert store.read_bytes("_versions/x") == b"mine"
    # a retried request that meets the object it created itself reports success
    assert store.put_if_absent("_versions/x", b"mine")


@pytest.mark.parametrize("options", ["lancenb", "pylance"])
def test_create_append_delete_time_travel(s3, options):
    opts = s3.lancenb_options if options == "lancenb" else s3.pylance_options
    uri = s3.uri()
    lancenb.write_dataset(ids(0, 100), uri, max_rows_per_file=40, storage_options=opts)
    lancenb.write_dataset(ids(100, 150), uri, mode="append", storage_options=opts)
    ds = lancenb.dataset(uri, storage_options=opts)
    ds.delete("id % 10 = 0")
    ds = lancenb.dataset(uri, storage_options=opts)
    assert ds.version == 3 and [v["version"] for v in ds.versions()] == [1, 2, 3]
    assert ds.count_rows() == 135
    assert sorted(ds.to_table()["id"].to_pylist()) == [i for i in range(150) if i % 10]
    assert_tables_equal(lancenb.dataset(uri, version=1, storage_options=opts).to_table(),
                        ids(0, 100))
    assert lancenb.dataset(uri, version=2, storage_options=opts).count_rows() == 150
    with pytest.raises(DatasetNotFoundError):
        lancenb.dataset(uri, version=9, storage_options=opts)


def test_concurrent_appends_from_processes(s3):
    """4 processes x 25 appends racing on one dataset: every append that returned is
    in the dataset exactly once, and the versions are 1..101 with no gap."""
    uri = s3.uri()
    opts = s3.lancenb_options
    lancenb.write_dataset(pa.table({"id": pa.array([-1], pa.int64())}), uri,
                          storage_options=opts)
    with ProcessPoolExecutor(4, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(append_worker, uri, opts, w, 25) for w in range(4)]
        reported = sorted(r for f in futures for r in f.result(timeout=300))
    assert len(reported) == 100
    ds = lancenb.dataset(uri, storage_options=opts)
    got = sorted(ds.to_table()["id"].to_pylist())
    assert got == [-1] + reported
    assert ds.version == 101
    assert [v["version"] for v in ds.versions()] == list(range(1, 102))


def test_pylance_reads_lancenb_dataset(s3):
    lance = pytest.importorskip("lance")
    uri = s3.uri()
    lancenb.write_dataset(ids(0, 60), uri, storage_options=s3.lancenb_options)
    lancenb.write_dataset(ids(60, 90), uri, mode="append", storage_options=s3.lancenb_options)
    ds = lance.dataset(uri, storage_options=s3.pylance_options)
    assert ds.version == 2
    assert_tables_equal(ds.to_table().sort_by("id"), ids(0, 90))
    # and pylance can commit on top of what lancenb wrote
    lance.write_dataset(ids(90, 100), uri, mode="append", storage_options=s3.pylance_options)
    assert lancenb.dataset(uri, storage_options=s3.lancenb_options).count_rows() == 100


def test_lancenb_reads_pylance_dataset(s3):
    lance = pytest.importorskip("lance")
    uri = s3.uri()
    lance.write_dataset(ids(0, 70), uri, storage_options=s3.pylance_options)
    lance.write_dataset(ids(70, 80), uri, mode="append", storage_options=s3.pylance_options)
    ds = lancenb.dataset(uri, storage_options=s3.pylance_options)
    assert ds.version == 2
    assert_tables_equal(ds.to_table().sort_by("id"), ids(0, 80))
    lancenb.write_dataset(ids(80, 85), uri, mode="append", storage_options=s3.pylance_options)
    assert lance.dataset(uri, storage_options=s3.pylance_options).count_rows() == 85


def test_commit_lock_replaces_conditional_put(s3):
    """A commit_lock is the escape hatch for S3-compatible servers that ignore
    If-None-Match: given one, lancenb takes it for every commit, as pylance does."""
    calls = []

    class Lock:
        def __init__(self, version):
            calls.append(version)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    uri = s3.uri()
    assert ObjectStore(uri, s3.lancenb_options, commit_lock=Lock).conditional_put == \
        "commit_lock"
    lancenb.write_dataset(ids(0, 5), uri, storage_options=s3.lancenb_options, commit_lock=Lock)
    lancenb.write_dataset(ids(5, 9), uri, mode="append", storage_options=s3.lancenb_options,
                          commit_lock=Lock)
    assert calls == [1, 2]
    assert lancenb.dataset(uri, storage_options=s3.lancenb_options).count_rows() == 9


def test_lancenb_and_pylance_racing_on_one_dataset(s3):
    """Both libraries' conditional puts guard the same manifest names: lancenb in two
    processes and pylance in this one, appending at once, lose nothing."""
    lance = pytest.importorskip("lance")
    uri = s3.uri()
    lancenb.write_dataset(pa.table({"id": pa.array([-1], pa.int64())}), uri,
                          storage_options=s3.lancenb_options)
    theirs = []
    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(append_worker, uri, s3.pylance_options, w, 10) for w in (1, 2)]
        for k in range(10):
            lance.write_dataset(pa.table({"id": pa.array([9000 + k], pa.int64())}), uri,
                                mode="append", storage_options=s3.pylance_options)
            theirs.append(9000 + k)
        ours = [r for f in futures for r in f.result(timeout=300)]
    want = sorted([-1] + ours + theirs)
    assert len(want) == 31
    assert sorted(lancenb.dataset(uri, storage_options=s3.lancenb_options)
                  .to_table()["id"].to_pylist()) == want
    ds = lance.dataset(uri, storage_options=s3.pylance_options)
    assert ds.version == 31 and sorted(ds.to_table()["id"].to_pylist()) == want


def test_latest_version_from_the_hint_on_s3(s3):
    """On S3 the newest version comes from the hint plus a few one-byte reads; a
    stale or missing hint (pylance on S3 writes none) still finds the latest."""
    from lancenb.table.commit import open_store
    from lancenb.table.hint import hint_bytes, probe_latest
    from lancenb.table.manifest import HINT_FILE

    uri, opts = s3.uri(), s3.lancenb_options
    lancenb.write_dataset(ids(0, 10), uri, storage_options=opts)
    for k in range(1, 5):
        lancenb.write_dataset(ids(10 * k, 10 * k + 10), uri, mode="append",
                              storage_options=opts)
    store = open_store(uri, opts)
    assert store.read_bytes(HINT_FILE) == hint_bytes(5)
    assert probe_latest(store) == (5, True)
    store.write_bytes(HINT_FILE, hint_bytes(2))  # stale
    assert probe_latest(open_store(uri, opts)) == (5, True)
    store.fs.rm_file(store.path(HINT_FILE))  # missing: the listing answers
    assert probe_latest(open_store(uri, opts)) is None
    ds = lancenb.dataset(uri, storage_options=opts)
    assert ds.version == 5 and ds.count_rows() == 50


def test_remote_latest_version_lists_unless_versions_are_many(s3, monkeypatch, listed_dirs):
    """On an object store a listing (one request per 1,000 versions) beats the hint's
    few sequential requests until a dataset has many versions."""
    from lancenb.table import commit as C

    uri, opts = s3.uri(), s3.lancenb_options
    lancenb.write_dataset(ids(0, 10), uri, storage_options=opts)
    lancenb.write_dataset(ids(10, 20), uri, mode="append", storage_options=opts)
    listed_dirs.clear()
    store = C.open_store(uri, opts)
    assert C.latest_version(store) == (2, True)
    assert listed_dirs == ["_versions"] and C._LISTED[store.uri] == 2
    listed_dirs.clear()
    monkeypatch.setitem(C._LISTED, store.uri, C.PROBE_REMOTE_FROM)  # as if seen with many
    assert C.latest_version(store) == (2, True)
    assert "_versions" not in listed_dirs  # the hint answered
