"""Distributed writes: plan on the driver, write in tasks, commit once, or abort.

This is the protocol the Spark data source and :func:`lancenb.spark.write_lance`
share (lance-spark's, and pylance's ``write_fragments`` + ``LanceDataset.commit``):

1. :func:`plan_write` (driver, before any task runs) resolves the mode, pins
   ``read_version``, checks the DataFrame's schema against the dataset's and builds
   the Arrow schema and Lance fields to write. Every bad input fails here.
2. :func:`write_task` (one per Spark task) casts Spark's Arrow batches to that
   schema and writes data files with :func:`lancenb.dataset.write.insert.write_data_files`
   (the Python API's writer), returning the fragments, serialised, ids unset.
3. :func:`commit_job` (driver) builds **one** Append or Overwrite transaction over
   every task's fragments and commits it with :func:`lancenb.table.commit.commit`:
   the same conflict check, put-if-absent and retry loop as ``write_dataset``. The
   transaction's uuid is the job's ``write_uuid``, so anyone can tell from the
   manifests whether the job reached its commit point. Once ``commit()`` returned
   the job is committed: what follows (removing the journal) only logs its errors,
   so Spark never turns them into an abort.
4. :func:`abort_job` removes the job's files, unless the job is committed (a
   version carries its transaction) or that cannot be checked: then it removes
   nothing but the journal.

Every data file is announced in a journal object,
``_lancenb_spark/{write_uuid}/{task}.files``, *before* it is created, so abort also
finds the files of tasks that died without reporting (a killed worker, a task whose
commit message never arrived). Commit and abort remove the journal.

Stragglers. When one task fails, Spark aborts the job while the other tasks may still
be running (it kills them, asynchronously). :func:`plan_write` therefore creates a
lease object, ``_lancenb_spark/{write_uuid}/_active``, that lives until the job
commits or aborts. A task checks the lease before and after announcing each new file,
and once more when all its files are complete; a task that finds it gone removes its
own files and raises :class:`~lancenb.errors.WriteJobAbortedError`. Abort removes the
lease *first*, then the journal's files, waits :data:`ABORT_SETTLE_SECONDS` and
removes what the journal lists then. So a file is either complete before the lease
went (and abort's sweep finds it in the journal) or its task finds the lease gone
and removes it; on object stores, where a file appears only when it is complete,
that end-of-task check is what catches it. What can still be left is a file opened
more than :data:`ABORT_SETTLE_SECONDS` after its task's check by a worker killed
before its next check: never referenced by a manifest, so invisible to readers.
A task attempt that finished but whose result Spark did not use (a speculative
copy, a retried task's first attempt that did report) is cleaned up by the commit:
files of journals none of whose data files the commit references are removed.

A :class:`WriteJob` is pickled to every task: it holds only strings, ints, a
``pyarrow.Schema`` and serialised protobufs.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass, field

import pyarrow as pa

from lancenb._proto import file_pb2, table_pb2
from lancenb._version import __version__ as _lancenb_version
from lancenb.dataset.write import insert as pipeline
from lancenb.dataset.write.cleanup import after_commit
from lancenb.dataset.write.insert import (
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    cleanup,
    write_data_files,
    write_transaction,
)
from lancenb.errors import (
    CommitOutcomeUnknownError,
    InvalidInputError,
    LanceError,
    NotSupportedError,
    SchemaError,
    WriteJobAbortedError,
)
from lancenb.file.extensions import storage_schema
from lancenb.file.jsonb import text_field
from lancenb.file.schema import schema_to_fields
from lancenb.file.version import FileVersion
from lancenb.io.store import ObjectStore
from lancenb.spark.types import spark_compatible, to_lance_batch, write_schema_from_spark
from lancenb.table.commit import DEFAULT_MAX_RETRIES, commit, list_versions, load_manifest
from lancenb.table.manifest import DATA_DIR, FLAG_STABLE_ROW_IDS

__all__ = ["WriteJob", "plan_write", "write_task", "commit_job", "abort_job", "JOURNAL_DIR",
           "normalize_uri"]

JOURNAL_DIR = "_lancenb_spark"
_LEASE = "_active"  # in a job's journal directory while the job may still commit
# abort's second sweep comes this long after its first: a straggler that passed its
# lease check just before abort removed the lease has opened its file by then
ABORT_SETTLE_SECONDS = 0.5
_log = logging.getLogger("lancenb.spark")
MODES = ("append", "overwrite", "create")


def normalize_uri(uri: str) -> str:
    """``file:`` URIs (as Spark's catalog spells paths) become plain local paths."""
    uri = str(uri)
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri


@dataclass
class WriteJob:
    """Everything a task needs to write its part of one job (picklable)."""

    uri: str
    mode: str  # "append" (onto read_version) or "overwrite" (also creates)
    read_version: int
    schema: pa.Schema
    fields: list = field(default_factory=list)  # serialised lance.file.Field messages
    data_format: str = "2.1"
    v2_names: bool = True
    create_only: bool = False
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE
    max_retries: int = DEFAULT_MAX_RETRIES
    write_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    storage_options: dict | None = None
    # fault injection for tests (see lancenb.spark.datasource): fail this partition
    fail_partition: int | None = None
    fail_commit: bool = False
    fail_after_commit: bool = False

    def store(self) -> ObjectStore:
        return ObjectStore(self.uri, self.storage_options)

    @property
    def journal_dir(self) -> str:
        return f"{JOURNAL_DIR}/{self.write_uuid}"

    @property
    def lease(self) -> str:
        return f"{self.journal_dir}/{_LEASE}"

    def fields_pb(self) -> list:
        return [file_pb2.Field.FromString(b) for b in self.fields]


def plan_write(uri: str, spark_schema, *, mode: str, max_rows_per_file=None,
               max_bytes_per_file=None, data_storage_version=None, max_retries=None,
               storage_options=None) -> WriteJob:
    """Check everything a write can check before data moves; the job to run."""
    uri = normalize_uri(uri)
    if mode not in MODES:
        raise InvalidInputError(f"write mode must be one of {list(MODES)}, not {mode!r}")
    rows = DEFAULT_MAX_ROWS_PER_FILE if max_rows_per_file is None else int(max_rows_per_file)
    nbytes = DEFAULT_MAX_BYTES_PER_FILE if max_bytes_per_file is None else \
        int(max_bytes_per_file)
    if rows <= 0 or nbytes <= 0:
        raise InvalidInputError("max_rows_per_file and max_bytes_per_file must be positive")
    retries = DEFAULT_MAX_RETRIES if max_retries is None else int(max_retries)
    if retries < 0:
        raise InvalidInputError("commit_retries must be >= 0")
    # the dataset write pipeline's plan: mode, file version, schema and field ids (on 2.2
    # blob columns are blob v2, as write_dataset writes them)
    plan = pipeline.plan_write(uri, lambda: _spark_schema_to_write(spark_schema), mode=mode,
                               data_storage_version=data_storage_version,
                               storage_options=storage_options,
                               refuse_existing="mode('append') or mode('overwrite')")
    if plan.appending:
        if plan.base.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS:
            raise NotSupportedError(f"dataset {plan.store.uri!r} uses stable row ids; lancenb "
                                    f"reads such datasets but cannot append to them yet")
        _check_append(spark_schema, plan.schema, plan.store.uri)
    job = WriteJob(uri=uri, mode=plan.mode, read_version=plan.read_version,
                   schema=plan.schema, fields=[f.SerializeToString() for f in plan.fields],
                   data_format=plan.version.label, v2_names=plan.v2_names,
                   create_only=plan.create_only, max_rows_per_file=rows,
                   max_bytes_per_file=nbytes, max_retries=retries,
                   storage_options=storage_options)
    plan.store.write_bytes(job.lease, job.write_uuid.encode())  # tasks write while it exists
    return job


def _spark_schema_to_write(spark_schema) -> pa.Schema:
    schema = write_schema_from_spark(spark_schema)
    # extension columns (a DataFrame read from a dataset with JSON) as Lance stores them
    schema = storage_schema(schema) or schema
    _check_storable(schema, spark_schema)
    return schema


def _check_append(spark_schema, ds_schema: pa.Schema, uri: str) -> None:
    names = [f.name for f in spark_schema.fields]
    if sorted(names) != sorted(ds_schema.names):
        raise SchemaError(f"cannot append to {uri!r}: the DataFrame has columns {names}, the "
                          f"dataset {ds_schema.names}")
    for sf in spark_schema.fields:
        want = text_field(ds_schema.field(sf.name))  # (JSON is written from its text)
        if not spark_compatible(sf.dataType, want.type):
            raise SchemaError(f"cannot append to {uri!r}: column {sf.name!r} is "
                              f"{sf.dataType.simpleString()} in the DataFrame but {want.type} "
                              f"in the dataset")


_PROBE_ERRORS = (LanceError, pa.ArrowException, ValueError, TypeError)


def _check_storable(schema: pa.Schema, spark_schema) -> None:
    """Write a two-row probe (a null and a zero) of the columns with the dataset
    writer into memory: the writer is the authority on which types it stores (pages
    and statistics alike). One probe file holds every column (the planning step runs
    in a fresh Spark Python worker, so each file costs); only if it fails is each
    column probed alone, so that the error names the column."""
    store = ObjectStore(f"memory://lancenb-spark-probe/{uuid.uuid4().hex}")
    try:
        _probe(store, schema)
        return
    except _PROBE_ERRORS:
        pass
    spark_types = {f.name: f.dataType.simpleString() for f in spark_schema.fields}
    for f in schema:
        try:
            _probe(store, pa.schema([f]))
        except _PROBE_ERRORS as e:
            raise SchemaError(f"column {f.name!r} ({spark_types.get(f.name, '?')}, Arrow "
                              f"{f.type}) cannot be stored in a Lance dataset: {e}") from e
    try:  # no column fails alone (not expected): report the whole schema
        _probe(store, schema)
    except _PROBE_ERRORS as e:
        raise SchemaError(f"columns {schema.names} cannot be stored together in a Lance "
                          f"dataset: {e}") from e


def _probe(store: ObjectStore, schema: pa.Schema) -> None:
    probe = pa.schema([f.with_nullable(True) for f in schema])
    written: list[str] = []
    try:
        fields_pb, _ = schema_to_fields(probe)
        batch = pa.RecordBatch.from_arrays([_probe_values(f.type) for f in probe],
                                           schema=probe)
        write_data_files(store, iter([batch]), probe, fields_pb, version=FileVersion.V2_1,
                         written=written)
    finally:
        cleanup(store, written)


def _probe_values(t: pa.DataType) -> pa.Array:
    """A null and, where a cast makes one, a zero of type ``t``: a probe with a real
    value also exercises the statistics of the column."""
    for src in (pa.int64(), pa.int32()):
        try:
            return pa.array([None, 0], src).cast(t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
    return pa.nulls(2, t)


class _Journal(list):
    """The ``written`` list of :func:`write_data_files` that also records each new
    file in the job's journal object before the file is created, checking the job's
    lease before and after."""

    def __init__(self, store: ObjectStore, job: WriteJob, task: str):
        super().__init__()
        self._store = store
        self._job = job
        self.task = task
        self.rel = f"{job.journal_dir}/{task}-{uuid.uuid4().hex}.files"

    def check_lease(self) -> None:
        if not self._store.exists(self._job.lease):
            raise WriteJobAbortedError(
                f"write job {self._job.write_uuid} on {self._store.uri!r} was aborted (or "
                f"committed without task {self.task}): the task removed its files")

    def append(self, path: str) -> None:
        self.check_lease()  # an aborted job's journal is not written again
        super().append(path)
        self._store.write_bytes(self.rel, "\n".join(self).encode())
        self.check_lease()  # abort may have swept between the two: then no file is made


def write_task(job: WriteJob, batches, *, task: str) -> tuple[list[bytes], list[str]]:
    """Write one task's batches; returns (serialised fragments, files written).

    On failure the task's files are removed before the error propagates.
    """
    store = job.store()
    journal = _Journal(store, job, task)
    target = job.schema.remove_metadata()
    fail_now = job.fail_partition is not None and task.split("-")[0] == str(job.fail_partition)

    def cast():
        n = 0
        for b in batches:
            if b.num_rows:
                yield to_lance_batch(b.replace_schema_metadata(None), target)
            n += 1
            if fail_now and n >= 2:
                raise RuntimeError(f"lancenb test fault: task {task} fails mid-write")

    try:
        frags = write_data_files(store, cast(), job.schema, job.fields_pb(),
                                 version=FileVersion.resolve(job.data_format),
                                 max_rows_per_file=job.max_rows_per_file,
                                 max_bytes_per_file=job.max_bytes_per_file, written=journal)
        # every file is complete: if the lease is still there, abort (which removes it
        # first) will find them in the journal; if not, they are this task's to remove
        journal.check_lease()
    except BaseException:
        cleanup(store, list(journal))
        if journal:
            store.delete(journal.rel)
        _remove_dirs(store, job)
        raise
    return [f.SerializeToString() for f in frags], list(journal)


def commit_job(job: WriteJob, fragments: list[bytes]):
    """Commit every task's fragments as one transaction; returns the new version.

    A failure before the commit point (conflict, retries exhausted, I/O) removes
    the job's files and raises. Once the commit point is passed the job is
    committed: later errors are logged, never raised. If the outcome cannot be
    told, :class:`~lancenb.errors.CommitOutcomeUnknownError` is raised and nothing
    is removed.
    """
    store = job.store()
    frags = [table_pb2.DataFragment.FromString(b) for b in fragments]
    txn = write_transaction(job.mode, job.read_version, frags, job.fields_pb(),
                            job.schema.metadata, create_only=job.create_only)
    txn.pb.uuid = job.write_uuid  # abort_job recognises a committed job by it
    try:
        if job.fail_commit:
            raise LanceError("lancenb test fault: the commit fails")
        mf = commit(store, txn, v2_names=job.v2_names, data_format=job.data_format,
                    writer_version=_lancenb_version, max_retries=job.max_retries)
    except CommitOutcomeUnknownError:
        raise  # maybe committed: abort_job will look before removing anything
    except BaseException:
        abort_job(job)
        raise
    after_commit(store, mf)  # (logs its own failures)
    try:  # committed: from here on errors are reported, never raised
        if job.fail_after_commit:
            raise LanceError("lancenb test fault: removing the journal fails")
        committed = {f"{DATA_DIR}/{df.path}" for fr in frags for df in fr.files}
        _drop_journal(store, job, remove_files=False, committed=committed)
    except Exception as e:  # noqa: BLE001
        _log.warning("lancenb job %s committed version %d; removing its journal failed "
                     "(%s): harmless, it only names files of this committed job",
                     job.write_uuid,
                     mf.version, e)
    return mf.version


def job_committed(job: WriteJob, store: ObjectStore | None = None) -> bool | None:
    """True if a version after the job's read version carries the job's transaction,
    False if none does, None if the manifests cannot be read."""
    store = store or job.store()
    try:
        versions, naming = list_versions(store)
        for v in reversed(versions):
            if v <= job.read_version:
                break
            mf = load_manifest(store, v, naming)
            txn = mf.transaction()
            if txn is not None and txn.uuid == job.write_uuid:
                return True
            if txn is None and mf.manifest.transaction_file.startswith(
                    f"{job.read_version}-{job.write_uuid}"):
                return True
        return False
    except Exception:  # noqa: BLE001 - unknown: the caller must not delete
        return None


def abort_job(job: WriteJob, files=()) -> list[str]:
    """Remove ``files`` and every file the job's journal lists; returns them.

    A job that reached its commit point (or whose outcome cannot be checked) keeps
    every file: only its journal is removed.
    """
    store = job.store()
    state = job_committed(job, store)
    if state is not False:
        if state is None:
            _log.warning("lancenb job %s: cannot tell whether it committed; abort removes "
                         "no files", job.write_uuid)
        try:
            _drop_journal(store, job, remove_files=False)
        except Exception as e:  # noqa: BLE001
            _log.warning("lancenb job %s: removing its journal failed: %s", job.write_uuid, e)
        return []
    try:  # first: a task still running stops at its next check
        store.delete(job.lease)
    except LanceError as e:
        _log.warning("lancenb job %s: removing its lease failed (%s): tasks still running "
                     "may leave files no version references", job.write_uuid, e)
    gone = list(files)
    cleanup(store, gone)
    gone += _drop_journal(store, job, remove_files=True, remove_dirs=False)
    time.sleep(ABORT_SETTLE_SECONDS)  # see the module docstring (stragglers)
    gone += _drop_journal(store, job, remove_files=True)
    return list(dict.fromkeys(gone))


def _drop_journal(store: ObjectStore, job: WriteJob, *, remove_files: bool,
                  remove_dirs: bool = True, committed: set | None = None) -> list[str]:
    """Remove the job's journal and lease (and with ``remove_files`` the files its
    journal lists); returns the files removed.

    ``committed`` (after a commit: the data files it references): the files of task
    attempts none of whose data files were committed are removed too (a speculative
    or retried attempt that finished but whose result Spark did not use). Only when
    every committed file is found in some journal: a journal this code reads wrongly
    then removes nothing."""
    removed: list[str] = []
    try:
        names = store.list(job.journal_dir)
    except LanceError:
        return removed
    journals = {}
    for name in names:
        if name == _LEASE:
            continue
        if remove_files or committed is not None:
            try:
                journals[name] = [p for p in store.read_bytes(
                    f"{job.journal_dir}/{name}").decode().split("\n") if p]
            except LanceError:
                journals[name] = None  # unreadable: its files are left alone
    losers: set = set()
    if committed is not None and not remove_files:
        listed = {p for paths in journals.values() if paths for p in paths}
        if committed <= listed:
            losers = {n for n, paths in journals.items()
                      if paths and not committed.intersection(paths)}
    for name in sorted(names, key=lambda n: n != _LEASE):  # the lease first
        if name != _LEASE and (remove_files or name in losers):
            paths = journals.get(name) or []
            cleanup(store, paths)
            removed += paths
        store.delete(f"{job.journal_dir}/{name}")
    if remove_dirs:
        _remove_dirs(store, job)
    return removed


def _remove_dirs(store: ObjectStore, job: WriteJob) -> None:
    """The journal's directories, if empty (object stores have none to remove)."""
    if store.local:
        for d in (job.journal_dir, JOURNAL_DIR):
            try:
                os.rmdir(store.path(d))
            except OSError:
                pass
