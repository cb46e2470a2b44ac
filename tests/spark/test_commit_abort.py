"""Spark write jobs never delete a committed version (issue 15, finding 3).

The driver-side protocol (:mod:`lancenb.spark.jobs`) is run as Spark runs it (plan,
tasks, commit, and abort when anything raised) on ``faulty://`` (the local directory
through the fault-injecting filesystem of tests/table/_faultfs.py), then once
through a real Spark job.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid

import lance
import pyarrow as pa
import pytest

import lancenb
import lancenb.io.store
from lancenb.spark.jobs import JOURNAL_DIR, abort_job, commit_job, plan_write, write_task

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "table"))
import _faultfs as F  # noqa: E402

F.register()
OPTS = {"single_process_commits": True}  # one process writes these datasets


def _spark_schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("id", LongType(), False),
                       StructField("name", StringType(), True)])


def _batch(lo, hi):
    return pa.record_batch({"id": pa.array(range(lo, hi), pa.int64()),
                            "name": pa.array([f"n{i}" for i in range(lo, hi)])})


def _spark_like_job(uri, lo, hi):
    """plan, one task per 10 rows, commit; on any error abort (as Spark does)."""
    job = plan_write(uri, _spark_schema(), mode="append", storage_options=OPTS)
    frags, files = [], []
    for k, start in enumerate(range(lo, hi, 10)):
        f, w = write_task(job, iter([_batch(start, min(hi, start + 10))]), task=f"{k}-0")
        frags += f
        files += w
    try:
        return job, commit_job(job, frags), files
    except Exception:
        abort_job(job, files)
        raise


def _ids(path):
    got = sorted(lancenb.dataset(str(path)).to_table()["id"].to_pylist())
    assert sorted(lance.dataset(str(path)).to_table()["id"].to_pylist()) == got
    return got


def test_error_after_the_commit_is_logged_not_aborted(tmp_path, caplog):
    path = tmp_path / "ds"
    uri = F.uri(path)
    lancenb.write_dataset(pa.Table.from_batches([_batch(0, 5)]), uri, storage_options=OPTS)

    def journal_fails(name, p):  # removing the job journal fails (after the commit)
        if name == "rm" and f"/{JOURNAL_DIR}/" in p:
            raise OSError(5, f"injected fault: rm {p}")

    F.CONTROL.reset(hook=journal_fails)
    try:
        job, version, files = _spark_like_job(uri, 100, 130)
    finally:
        F.CONTROL.reset()
    assert version == 2
    assert "removing its journal failed" in caplog.text
    want = list(range(5)) + list(range(100, 130))
    assert _ids(path) == want
    # Spark may still call abort (another stage failed): a committed job keeps its files
    assert abort_job(job, files) == []
    assert _ids(path) == want
    journal = path / JOURNAL_DIR / job.write_uuid  # the journal goes, at the latest now
    assert not os.path.exists(journal) or not os.listdir(journal)


def test_abort_of_an_uncommitted_job_removes_its_files(tmp_path):
    path = tmp_path / "ds"
    uri = F.uri(path)
    lancenb.write_dataset(pa.Table.from_batches([_batch(0, 5)]), uri, storage_options=OPTS)
    before = set(os.listdir(path / "data"))
    job = plan_write(uri, _spark_schema(), mode="append", storage_options=OPTS)
    _, files = write_task(job, iter([_batch(10, 20)]), task="0-0")
    assert files and set(os.listdir(path / "data")) != before
    gone = abort_job(job, files)
    assert set(gone) >= set(files)
    assert set(os.listdir(path / "data")) == before
    assert _ids(path) == list(range(5))


def test_commit_fault_before_the_commit_point_aborts_cleanly(tmp_path):
    path = tmp_path / "ds"
    uri = F.uri(path)
    lancenb.write_dataset(pa.Table.from_batches([_batch(0, 5)]), uri, storage_options=OPTS)
    before = set(os.listdir(path / "data"))

    def manifest_put_fails(name, p):
        if name == "pipe_file" and "/_versions/" in p and p.endswith(".manifest"):
            raise OSError(5, f"injected fault: {name} {p}")

    F.CONTROL.reset(hook=manifest_put_fails)
    try:
        with pytest.raises(lancenb.errors.LanceIOError, match="injected fault"):
            _spark_like_job(uri, 100, 120)
    finally:
        F.CONTROL.reset()
    assert set(os.listdir(path / "data")) == before
    assert _ids(path) == list(range(5))


def test_spark_job_committed_despite_a_later_error(spark, tmp_path):
    uri = str(tmp_path / "ds")
    spark.range(0, 50, numPartitions=2).selectExpr("id", "cast(id as string) as name") \
        .write.format("lancenb").mode("append").save(uri)
    spark.range(50, 80, numPartitions=2).selectExpr("id", "cast(id as string) as name") \
        .write.format("lancenb").mode("append").option("_test_fail_after_commit", "true") \
        .save(uri)
    assert lancenb.dataset(uri).version == 2
    assert _ids(uri) == list(range(80))


def _abort_during_task(job, before: list, after: list):
    """Run write_task in a thread (a Spark task still running while the driver aborts):
    it is given the batches ``before``, then waits while the job is aborted, then is
    given ``after``. Returns what the task raised (None if it returned)."""
    paused, go_on = threading.Event(), threading.Event()
    out: dict = {}

    def batches():
        yield from before
        paused.set()
        go_on.wait(30)
        yield from after

    def run():
        try:
            out["result"] = write_task(job, batches(), task="0-0")
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    assert paused.wait(30)
    abort_job(job)
    go_on.set()
    t.join(60)
    return out.get("error")


def _files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def test_straggler_task_stops_at_its_next_file_after_abort(tmp_path):
    """A task still writing when the driver aborts (Spark kills it asynchronously)
    makes no file after the abort and removes its own: the CI failure of
    test_task_failure_leaves_no_version_and_no_files, without Spark's timing."""
    path = tmp_path / "ds"
    lancenb.write_dataset(pa.Table.from_batches([_batch(0, 5)]), str(path))
    before = _files_under(path)
    job = plan_write(str(path), _spark_schema(), mode="append")
    job.max_rows_per_file = 10
    # the first batch fills a file, the second would open another
    error = _abort_during_task(job, [_batch(10, 20)], [_batch(20, 30)])
    assert isinstance(error, lancenb.errors.WriteJobAbortedError), error
    assert "aborted" in str(error)
    assert _files_under(path) == before
    assert _ids(path) == list(range(5))


def test_task_that_completes_after_abort_removes_its_files():
    """On a store where a file appears only once it is complete (object stores; the
    memory store behaves so), a task whose last file completes after abort's sweep
    finds the lease gone at its end-of-task check and removes the file itself."""
    uri = f"memory://straggler-{uuid.uuid4().hex}/ds"
    lancenb.write_dataset(pa.Table.from_batches([_batch(0, 5)]), uri, storage_options=OPTS)
    store = lancenb.io.store.ObjectStore(uri, OPTS)
    before = sorted(store.list("data"))
    job = plan_write(uri, _spark_schema(), mode="append", storage_options=OPTS)
    # the task's file is still open (not on the store) while abort sweeps
    error = _abort_during_task(job, [_batch(10, 20)], [])
    assert isinstance(error, lancenb.errors.WriteJobAbortedError), error
    assert sorted(store.list("data")) == before
    assert store.list(JOURNAL_DIR + "/" + job.write_uuid) == []
    assert lancenb.dataset(uri, storage_options=OPTS).count_rows() == 5


def test_plan_leases_and_commit_releases(tmp_path):
    """The lease exists from planning to the commit; tasks of a committed job find it
    gone (a speculative attempt still running after the commit removes its files)."""
    path = tmp_path / "ds"
    job = plan_write(str(path), _spark_schema(), mode="append")
    assert os.path.exists(path / job.lease)
    frags, _ = write_task(job, iter([_batch(0, 10)]), task="0-0")
    assert commit_job(job, frags) == 1
    assert not os.path.exists(path / JOURNAL_DIR)
    data = _files_under(path / "data")
    with pytest.raises(lancenb.errors.WriteJobAbortedError, match="aborted"):
        write_task(job, iter([_batch(10, 20)]), task="0-1")
    assert _files_under(path / "data") == data
    assert not os.path.exists(path / JOURNAL_DIR)
    assert _ids(path) == list(range(10))


def test_commit_removes_the_files_of_attempts_it_did_not_use(tmp_path):
    """Task 0 ran twice (a speculative copy that also finished); Spark committed one
    attempt's fragments: the other attempt's files are removed by the commit, and the
    committed ones stay."""
    path = tmp_path / "ds"
    lancenb.write_dataset(pa.Table.from_batches([_batch(0, 5)]), str(path))
    before = set(_files_under(path / "data"))
    job = plan_write(str(path), _spark_schema(), mode="append")
    _, lost = write_task(job, iter([_batch(10, 20)]), task="0-0")
    used0, files0 = write_task(job, iter([_batch(10, 20)]), task="0-1")
    used1, files1 = write_task(job, iter([_batch(20, 30)]), task="1-0")
    assert commit_job(job, used0 + used1) == 2
    now = set(_files_under(path / "data"))
    assert now == before | {os.path.relpath(f, "data") for f in files0 + files1}
    assert not any(os.path.exists(path / f) for f in lost)
    assert _ids(path) == list(range(5)) + list(range(10, 30))
    assert not os.path.exists(path / JOURNAL_DIR)


def test_commit_keeps_every_file_when_the_journal_does_not_name_the_committed_ones(tmp_path):
    """If some committed data file is in no journal (the journal is not what this code
    expects), the commit removes nothing beyond the journal."""
    path = tmp_path / "ds"
    job = plan_write(str(path), _spark_schema(), mode="append")
    _, spare = write_task(job, iter([_batch(0, 10)]), task="0-0")
    frag = lancenb.LanceFragment.create(str(path), pa.Table.from_batches([_batch(50, 60)]),
                                        schema=pa.Table.from_batches([_batch(0, 1)]).schema)
    assert commit_job(job, [frag.to_pb().SerializeToString()]) == 1
    assert all(os.path.exists(path / f) for f in spare)  # not referenced, but kept
    assert _ids(path) == list(range(50, 60))
