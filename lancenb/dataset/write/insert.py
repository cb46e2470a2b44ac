"""The dataset write pipeline: every writer of data files goes through this module.

One write is four steps, shared by ``write_dataset``, the worker-side
``write_fragments``/``LanceFragment.create``, Spark jobs (:mod:`lancenb.spark.jobs`),
``update``/``merge_insert``/``delete`` and the rewrites of schema evolution and
compaction:

1. **plan** (:func:`plan_write`): open the dataset (a URI, or a ``LanceDataset`` whose
   version the write builds on), check its feature flags, resolve the mode, the file
   version and the schema and field ids written. On 2.2 a blob column is a blob v2
   column in the dataset's schema, whoever writes it.
2. **conform** (:func:`conform_batches`): an append's batches take the dataset's
   column order and types (missing nullable columns as nulls when allowed).
3. **write files** (:func:`write_data_files`): batches stream into data files, rolled
   at ``max_rows_per_file`` rows or about ``max_bytes_per_file`` bytes, each finished
   (statistics, footer) on a worker thread while the next fills (the last one on the
   writing thread, which has nothing else to do); every path created
   is recorded in ``written`` so a failure removes it (:func:`cleanup`).
   Deletion files of changed fragments are staged by :func:`stage_deletions`.
4. **transaction** (:func:`write_transaction`): an ``Append`` or ``Overwrite`` (or the
   caller's own operation), committed by :func:`lancenb.table.commit.commit`.
"""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from lancenb._proto import table_pb2, transaction_pb2
from lancenb._version import __version__
from lancenb.dataset.catalog import provided_options
from lancenb.dataset.operations import LanceOperation
from lancenb.dataset.operations import Transaction as WriteTransaction
from lancenb.dataset.read import blob
from lancenb.dataset.write.bases import placing as placing_bases
from lancenb.dataset.write.bases import prepare as prepare_bases
from lancenb.dataset.write.cleanup import after_commit, auto_cleanup_config
from lancenb.dataset.write.inputs import check_append_schema, fill_missing, normalize_input
from lancenb.errors import (
    DatasetExistsError,
    InvalidInputError,
    LanceError,
    NotSupportedError,
    SchemaError,
)
from lancenb.file.columns import data_file_columns
from lancenb.file.reader import cached_fields_to_schema
from lancenb.file.schema import fields_to_schema, schema_to_fields
from lancenb.file.statistics import STATS_KEY, StatsCollector
from lancenb.file.version import FileVersion
from lancenb.file.writer import LanceFileWriter
from lancenb.io.pools import ThreadPool
from lancenb.table.commit import commit, load_latest, open_store
from lancenb.table.deletion import deletion_path, write_deletions
from lancenb.table.fragments import DataFile, FragmentMetadata
from lancenb.table.manifest import DATA_DIR, check_feature_flags
from lancenb.table.transaction import Op, Transaction

__all__ = ["WritePlan", "plan_write", "conform_batches", "write_data_files",
           "write_transaction", "stage_deletions", "write_version", "open_target",
           "write_fragments",
           "write_fragment_files", "create_fragment", "normalize_input", "data_file_name",
           "leaf_ids", "cleanup", "check_write_options", "DEFAULT_MAX_ROWS_PER_FILE",
           "DEFAULT_MAX_BYTES_PER_FILE"]

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3


def data_file_name() -> str:
    """A new data file name as the reference makes them: a UUIDv4 whose first three
    bytes are spelled as 24 binary digits (spreading files over object-store key
    prefixes) and whose other 13 bytes are hex."""
    b = uuid.uuid4().bytes
    return "".join(f"{x:08b}" for x in b[:3]) + b[3:].hex() + ".lance"


def leaf_ids(fields_pb, version: FileVersion | None = None) -> list[int]:
    """Field ids that own a column of a data file, in column order (a data file's
    ``DataFile.fields``): :func:`lancenb.file.columns.data_file_columns` of the schema
    (leaves in 2.1+ with packed and blob v2 structs as one column; every field in 2.0
    but a packed struct's children)."""
    if all(f.parent_id == -1 and f.logical_type != "struct" for f in fields_pb):
        # no nesting (lists and structs have children): every field is a column; a
        # 2,000-column schema spent ~20 ms rebuilding its Arrow schema for this
        return [f.id for f in fields_pb]
    _, tops = fields_to_schema(fields_pb)
    return [c.field_id for c in data_file_columns(tops, version or FileVersion.V2_1)]


def write_data_files(store, batches: Iterator[pa.RecordBatch], schema: pa.Schema, fields_pb, *,
                     version: FileVersion, max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                     max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                     written: list | None = None, write_stats: bool = True,
                     progress=None, progress_names_file: bool = False) -> list:
    """Write ``batches`` as new data files; returns DataFragment messages (ids unset).

    ``written`` collects the relative paths of every file created (complete or not),
    so a caller can delete them when its commit fails. ``progress``: an object with
    pylance's ``FragmentWriteProgress`` methods, ``begin(fragment)`` when a data file
    is opened (a ``FragmentMetadata`` without files, or with ``progress_names_file``
    naming that file: pylance's ``LanceFragment.create`` does) and ``complete(fragment)`` when
    it is finished (with its file and row count; the id is assigned at commit).
    """
    if max_rows_per_file <= 0 or max_bytes_per_file <= 0:
        raise InvalidInputError("max_rows_per_file and max_bytes_per_file must be positive")
    written = [] if written is None else written
    legacy = version is FileVersion.LEGACY  # every field is a column; no page statistics
    ids = [f.id for f in fields_pb] if legacy else leaf_ids(fields_pb, version)
    write_stats = write_stats and not legacy
    if legacy and ids != list(range(len(ids))):
        # (a 0.1 file's page table is indexed by the dataset's field ids)
        raise NotSupportedError(f"lancenb writes legacy (0.1) data files only for schemas whose "
                                f"field ids are 0..n-1 in order, not {ids[:8]}")
    if legacy and any(f.logical_type.startswith("dict:") for f in fields_pb):
        # (pylance keeps a legacy dataset's dictionaries in its manifest files)
        raise NotSupportedError("lancenb does not write dictionary columns into legacy (0.1) "
                                "datasets; cast them to their value type")
    frags = []
    writer = None
    name = ""
    rows = 0
    write_schema = schema.remove_metadata()
    # 2.2 blob v2 columns: the file writer takes them as WRITE_V2 arrays, values over
    # 64 KiB go to sidecar files (lancenb.dataset.read.blob)
    v2 = blob.v2_columns(fields_pb) if version is FileVersion.V2_2 else set()
    writer_schema = blob.file_schema(write_schema, v2) if v2 else write_schema
    sidecars = None

    top_ids = [f.id for f in fields_pb if f.parent_id == -1]
    collector = None
    # the open file's statistics are folded in on the statistics thread, in order, while
    # this thread encodes (kernels release the GIL): futures of its pending batches
    stats_q: list = []
    # a full file is finished (its last pages encoded, statistics, footer) on a
    # worker thread while the next one fills: kernels release the GIL, and at most
    # MAX_FILES_IN_FLIGHT files are buffered at once, so memory stays bounded
    pending: list = []
    open_writers: set = set()  # writers not closed yet (aborted if the write fails)

    def add_stats(part):
        if part.num_rows < STATS_THREAD_MIN_ROWS and not stats_q:
            collector.add(part)  # small appends: the hand-off would cost more
            return
        stats_q.append(_stats_pool().submit(collector.add, part))
        while len(stats_q) > MAX_STATS_PENDING:  # bounded: batches wait, memory does not grow
            stats_q.pop(0).result()

    def finish_file(w, coll, fname, coll_pending):
        for f in coll_pending:
            f.result()
        stats = coll.finish() if coll is not None else None
        if stats is not None:
            data, info = stats
            info["global_buffer"] = w.add_global_buffer(data)
            w.add_schema_metadata(STATS_KEY, json.dumps(info, separators=(",", ":")))
        n = w.close()
        open_writers.discard(w)  # closed: nothing to abort, and its memory can go
        df = table_pb2.DataFile(path=fname, fields=ids,
                                column_indices=[] if legacy else list(range(len(ids))),
                                file_major_version=version.data_file[0],
                                file_minor_version=version.data_file[1],
                                file_size_bytes=w.size_bytes)
        frag = table_pb2.DataFragment(physical_rows=n)
        frag.files.append(df)
        return frag

    def done(frag):
        frags.append(frag)
        if progress is not None:
            progress.complete(FragmentMetadata.from_pb(frag))

    def finish(last: bool = False):
        nonlocal writer
        if sidecars is not None:
            sidecars.close()
        w, writer = writer, None
        if last:
            # the input is exhausted: this thread would only wait for the pool, so it
            # finishes the file itself (a small append saves the hand-off; an earlier
            # file still finishing on the pool overlaps with it as before)
            frag = finish_file(w, collector, name, stats_q[:])
            stats_q.clear()
            while pending:
                done(pending.pop(0).result())
            done(frag)
            return
        pending.append(_finish_pool().submit(finish_file, w, collector, name, stats_q[:]))
        stats_q.clear()
        while len(pending) >= MAX_FILES_IN_FLIGHT:
            done(pending.pop(0).result())

    try:
        for batch in batches:
            pos = 0
            while pos < batch.num_rows:
                if writer is None:
                    name = data_file_name()
                    written.append(f"{DATA_DIR}/{name}")
                    writer = LanceFileWriter(store.uri_of(f"{DATA_DIR}/{name}"), writer_schema,
                                             version=version.label,
                                             storage_options=store.storage_options)
                    open_writers.add(writer)
                    if progress is not None:
                        opened = [DataFile(name, [], [], *version.data_file)] \
                            if progress_names_file else []  # (no fields or rows yet)
                        progress.begin(FragmentMetadata(id=0, files=opened,
                                                        physical_rows=None))
                    if v2:
                        sidecars = blob.V2Sidecars(store, name, written)
                    rows = 0
                    collector = StatsCollector(write_schema, top_ids) if write_stats else None
                take = min(batch.num_rows - pos, max_rows_per_file - rows)
                part = batch.slice(pos, take)
                wpart = part.replace_schema_metadata(None) if part.schema.metadata else part
                if sidecars is not None:
                    wpart = sidecars.convert_batch(wpart, writer_schema)
                if collector is not None:
                    add_stats(part)  # first: the statistics thread works while this encodes
                writer.write_batch(wpart)
                pos += take
                rows += take
                # (bytes on disk, as pylance counts them: pages not yet flushed do not)
                if rows >= max_rows_per_file or writer.bytes_written >= max_bytes_per_file:
                    finish()
        if writer is not None and rows:
            finish(last=True)
        while pending:
            done(pending.pop(0).result())
    except BaseException:
        if sidecars is not None:
            sidecars.abort()
        for f in stats_q + pending:
            try:
                f.result()
            except BaseException:
                pass
        for w in list(open_writers):
            w.abort()
        raise
    return frags


MAX_FILES_IN_FLIGHT = 2
_FINISH_POOL = ThreadPool(lambda: MAX_FILES_IN_FLIGHT, "lancenb-write")  # per process
# page statistics run on one thread per process (a collector's batches must go in
# order); batches under STATS_THREAD_MIN_ROWS rows are folded in on the writing thread
# while none of its file's are queued, and at most MAX_STATS_PENDING wait
STATS_THREAD_MIN_ROWS = 16384
MAX_STATS_PENDING = 4
_STATS_POOL = ThreadPool(lambda: 1, "lancenb-stats")


def _stats_pool() -> ThreadPoolExecutor:
    return _STATS_POOL.get()


def _finish_pool() -> ThreadPoolExecutor:
    return _FINISH_POOL.get()


def cleanup(store, paths: list[str]) -> None:
    """Best-effort removal of files a failed write or commit left behind."""
    for p in paths:
        try:
            store.delete(p)
        except LanceError:
            pass


# pylance's write_dataset options that only tune its writer: accepted
_WRITE_TUNING = ("data_cache_bytes", "max_page_bytes", "session",
                 "blob_pack_file_size_threshold")
# pylance's options for features lancenb does not have: refused when used
_WRITE_UNSUPPORTED = {"base_store_params": None, "external_blob_mode": "reference",
                      "allow_external_blob_outside_bases": False, "namespace_client": None,
                      "table_id": None}


def check_write_options(kwargs: dict) -> None:
    """Keywords of pylance's ``write_dataset`` beyond lancenb's own: tuning ones are
    accepted, unimplemented features raise ``NotSupportedError`` when set, anything
    else is a ``TypeError`` (a misspelling)."""
    for k, v in kwargs.items():
        if k in _WRITE_TUNING:
            continue
        if k in _WRITE_UNSUPPORTED:
            if v is not None and v != _WRITE_UNSUPPORTED[k]:
                raise NotSupportedError(f"write_dataset({k}=...) is not supported by lancenb")
            continue
        raise TypeError(f"write_dataset() got an unexpected keyword argument {k!r}")


# -- 1. plan ---------------------------------------------------------------------------

def open_target(target, *, storage_options=None, commit_lock=None, manifest_store=None):
    """``(store, base manifest file or None, manifest naming or None)`` of the dataset
    a write goes to. ``target`` is a URI, or a ``LanceDataset``: then the write builds
    on that dataset's version, through its store."""
    # a LanceDataset, recognised by its parts (lancenb.dataset.lance_dataset builds on this module)
    store, mf = getattr(target, "_store", None), getattr(target, "_mf", None)
    if store is not None and mf is not None:
        return store, mf, getattr(target, "_v2", None)
    store = open_store(target, storage_options, commit_lock, manifest_store)
    mf, naming = load_latest(store)
    return store, mf, naming


@dataclass
class WritePlan:
    """What one write of new data files writes, resolved before any data moves.

    ``schema`` is the Arrow schema batches are written with (on an append, the
    dataset's, with blob v2 columns as their input form); ``fields`` the Lance fields
    of the data files (and, unless appending, of the new schema, whose Arrow form is
    ``manifest_schema``).
    """

    store: object
    base: object  # the manifest file written on top of, or None (a new dataset)
    mode: str  # "append" or "overwrite" (which also creates)
    create_only: bool
    schema: pa.Schema
    manifest_schema: pa.Schema
    fields: list
    version: FileVersion
    v2_names: bool

    @property
    def read_version(self) -> int:
        """The version written on top of (0: a new dataset)."""
        return self.base.version if self.base is not None else 0

    @property
    def appending(self) -> bool:
        """Whether the write adds fragments to an existing dataset's schema."""
        return self.mode == "append"

    def transaction(self, frags, **kwargs) -> Transaction:
        """The ``Append``/``Overwrite`` transaction adding ``frags`` (see
        :func:`write_transaction` for the keywords)."""
        return write_transaction(self.mode, self.read_version, frags, self.fields,
                                 self.schema.metadata,
                                 create_only=self.create_only, **kwargs)


def plan_write(target, new_schema: pa.Schema | Callable[[], pa.Schema], *, mode: str,
               data_storage_version: str | None = None, enable_v2_manifest_paths=True,
               storage_options=None, commit_lock=None, manifest_store=None,
               refuse_existing: str | None = None) -> WritePlan:
    """Plan a write of new data files to ``target`` (see :func:`open_target`).

    Parameters
    ----------
    target : str, Path or LanceDataset
    new_schema : pa.Schema or callable returning one
        The schema of the data when the write makes a new schema (``"create"``,
        ``"overwrite"``, or an append to no dataset); a callable is only called then.
    mode : {"append", "create", "overwrite"}
        An append to an existing dataset keeps its schema, field ids and file version.
    data_storage_version : str, optional
        File version of new data; an append must match the dataset's, an overwrite
        keeps the dataset's unless given; default: the file layer's default.
    refuse_existing : str, optional
        With ``mode="create"``, raise ``DatasetExistsError`` when the dataset exists,
        suggesting this text.

    Examples
    --------
    >>> plan = plan_write("/tmp/ds", table.schema, mode="create")  # doctest: +SKIP
    >>> frags = write_data_files(plan.store, iter(table.to_batches()), plan.schema,
    ...                          plan.fields, version=plan.version)  # doctest: +SKIP
    """
    store, base, naming = open_target(target, storage_options=storage_options,
                                       commit_lock=commit_lock, manifest_store=manifest_store)
    if base is not None:
        check_feature_flags(base.manifest, base.name, write=True)
    if mode == "create" and base is not None and refuse_existing is not None:
        if not (isinstance(target, str) and store.renew_memory_root()):
            raise DatasetExistsError(f"dataset {store.uri!r} already exists (version "
                                     f"{base.version}); use {refuse_existing}")
        base = naming = None  # (memory://: a new empty store for it, as pylance)
    v2 = naming if naming is not None else bool(enable_v2_manifest_paths)
    if mode == "append" and base is not None:
        m = base.manifest
        # (memoised: every append to a dataset rebuilt the same schema)
        ds_schema, _ = cached_fields_to_schema(m.fields, m.schema_metadata)
        fmt = m.data_format.version or "2.0"
        if data_storage_version is not None and FileVersion.resolve(data_storage_version) != \
                FileVersion.resolve(fmt):
            raise InvalidInputError(f"cannot append {data_storage_version} files to a dataset "
                                    f"of {fmt} files")
        version = FileVersion.resolve(fmt)
        # blob v2 columns take their values as input (large_binary)
        plan = WritePlan(store, base, "append", False, blob.input_schema(ds_schema), ds_schema,
                         list(m.fields), version, v2)
    else:
        if data_storage_version is None and base is not None and mode == "overwrite":
            data_storage_version = base.manifest.data_format.version or None
        version = FileVersion.resolve(data_storage_version)
        schema = new_schema() if callable(new_schema) else new_schema
        # 2.2: a blob column is blob v2 in the dataset's schema, as pylance makes it
        stored = blob.manifest_schema(schema) if version is FileVersion.V2_2 else schema
        fields, _ = schema_to_fields(stored)
        plan = WritePlan(store, base, "overwrite", mode == "create", schema, stored, fields,
                         version, v2)
    if not plan.version.writable:
        raise NotSupportedError(f"lancenb writes datasets with 2.0, 2.1 or 2.2 data files, not "
                                f"{version.label} (it reads {version.label} datasets)")
    return plan


def conform_batches(plan: WritePlan, in_schema: pa.Schema, batches, *,
                    allow_subset: bool = False):
    """An append's batches in the dataset's column order and types (``allow_subset``:
    the dataset's other nullable columns filled with nulls); other writes' unchanged."""
    if not plan.appending:
        return batches
    ds_schema = plan.schema
    if allow_subset and set(in_schema.names) < set(ds_schema.names):
        in_schema, batches = fill_missing(in_schema, batches, ds_schema, plan.store.uri)
    check_append_schema(in_schema, ds_schema, plan.store.uri)
    if in_schema.names != ds_schema.names or not in_schema.equals(ds_schema,
                                                                  check_metadata=False):
        _, batches = normalize_input(pa.RecordBatchReader.from_batches(in_schema, batches),
                                     ds_schema.remove_metadata())
    return batches


# -- 4. transaction ----------------------------------------------------------------------

def write_transaction(mode: str, read_version: int, frags, fields, schema_metadata=None, *,
                      create_only: bool = False, enable_stable_row_ids: bool | None = None,
                      properties: dict | None = None) -> Transaction:
    """The transaction of a write: ``Append`` of ``frags`` (``mode="append"``), or
    ``Overwrite`` with the schema ``fields`` and ``schema_metadata``."""
    T = transaction_pb2.Transaction
    if mode == "append":
        txn = Transaction(read_version, Op.APPEND, T.Append(fragments=frags))
    else:
        op = T.Overwrite(fragments=frags, schema=fields)
        for k, v in (schema_metadata or {}).items():
            op.schema_metadata[k.decode() if isinstance(k, bytes) else k] = v
        txn = Transaction(read_version, Op.OVERWRITE, op)
        txn.create_only = create_only
        if enable_stable_row_ids is not None:
            txn.enable_stable_row_ids = bool(enable_stable_row_ids)
    for k, v in (properties or {}).items():
        txn.pb.transaction_properties[str(k)] = str(v)
    return txn


def stage_deletions(store, fragments, deleted: dict, version: int, written: list):
    """New deletion files for rows deleted from ``fragments`` (``LanceFragment``s of
    dataset version ``version``): ``deleted`` maps fragment id to the physical offsets
    newly deleted. Returns ``(updated fragment protobufs, ids of fragments left with no
    row)``, in fragment order; the files written are added to ``written``."""
    updated, removed = [], []
    for frag in fragments:
        rows = deleted.get(frag.fragment_id)
        if rows is None:
            continue
        before = frag.deleted_offsets()
        rows = np.asarray(rows)
        if len(before) or (len(rows) > 1 and not (rows[1:] > rows[:-1]).all()):
            allrows = np.union1d(before, rows).astype(np.uint32)
        else:  # (nothing deleted before and ``rows`` sorted and unique: nothing to merge)
            allrows = rows.astype(np.uint32)
        if len(allrows) >= frag.physical_rows:
            removed.append(frag.fragment_id)
            continue
        df = write_deletions(store, frag.fragment_id, allrows, version)
        written.append(deletion_path(frag.fragment_id, df))
        g = table_pb2.DataFragment()
        g.CopyFrom(frag.protobuf)
        g.deletion_file.CopyFrom(df)
        updated.append(g)
    return updated, removed


def write_version(data, target, schema=None, *, mode: str = "create",
                  max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                  max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                  data_storage_version=None, storage_options=None,
                  enable_v2_manifest_paths: bool = True, commit_lock=None, manifest_store=None,
                  enable_stable_row_ids=None, use_legacy_format=None, progress=None,
                  commit_message=None, transaction_properties=None,
                  auto_cleanup_options=None, what: str = "write_dataset", initial_bases=None,
                  target_bases=None, target_all_bases=None):
    """``write_dataset``'s whole pipeline: plan, conform, write the files, commit an
    ``Append`` or ``Overwrite``. Returns ``(store, manifest file committed)``; nothing of
    the write stays if it fails before the commit point. ``auto_cleanup_options``
    configure automatic cleanup when the write creates the dataset (ignored otherwise,
    as pylance ignores them; :mod:`lancenb.dataset.write.cleanup`)."""
    properties = dict(transaction_properties or {})
    if commit_message is not None:  # pylance's key; the message wins over a property
        properties["__lance_commit_message"] = str(commit_message)
    if mode not in ("create", "append", "overwrite"):
        raise InvalidInputError(f"mode must be 'create', 'append' or 'overwrite', not {mode!r}")
    if use_legacy_format:
        data_storage_version = data_storage_version or "legacy"
    in_schema, batches = normalize_input(data, schema, what=what)
    plan = plan_write(target, in_schema, mode=mode, data_storage_version=data_storage_version,
                      enable_v2_manifest_paths=enable_v2_manifest_paths,
                      storage_options=storage_options, commit_lock=commit_lock,
                      manifest_store=manifest_store, refuse_existing="mode='append' or 'overwrite'")
    batches = conform_batches(plan, in_schema, batches, allow_subset=True)
    written: list[str] = []
    try:
        # multi-base datasets (lancenb.dataset.write.bases): where the files go
        store, targets, init = prepare_bases(plan, mode, initial_bases, target_bases,
                                             target_all_bases)
        frags = write_data_files(store, batches, plan.schema, plan.fields,
                                 version=plan.version, max_rows_per_file=max_rows_per_file,
                                 max_bytes_per_file=max_bytes_per_file, written=written,
                                 progress=progress)
        if targets is not None:
            targets.mark(frags)
        txn = plan.transaction(frags, enable_stable_row_ids=enable_stable_row_ids,
                               properties=properties)
        if init and txn.op is Op.OVERWRITE:
            txn.pb.overwrite.initial_bases.extend(init)
        if auto_cleanup_options is not None and plan.base is None and txn.op is Op.OVERWRITE:
            txn.pb.overwrite.config_upsert_values.update(
                auto_cleanup_config(auto_cleanup_options))
    except BaseException:  # before the commit point: nothing of this write stays
        cleanup(plan.store, written)
        raise
    mf = commit(plan.store, txn, v2_names=plan.v2_names, data_format=plan.version.label,
                writer_version=__version__, base=plan.base, written=written)
    after_commit(plan.store, mf)
    return plan.store, mf


# -- the worker side of distributed writes -----------------------------------------------

def write_fragment_files(data, dataset_uri, schema=None, *, mode: str = "append",
                         max_rows_per_file: int | None = None,
                         max_bytes_per_file: int | None = None,
                         data_storage_version: str | None = None, storage_options=None,
                         what: str = "write_fragments", columns_required: bool = False,
                         progress=None, progress_names_file: bool = False,
                         target_bases=None, target_all_bases=None):
    """Write ``data`` as data files of new fragments (nothing committed).

    Returns ``(fragment protobufs, write plan)``. In ``"append"`` mode against an
    existing dataset the data takes the dataset's schema, field ids and file version;
    otherwise (``"create"``/``"overwrite"``, or no dataset yet) field ids are assigned
    afresh from the data's schema. ``progress``, ``progress_names_file``: as
    :func:`write_data_files`.
    """
    if mode not in ("append", "create", "overwrite"):
        raise InvalidInputError(f"mode must be 'append', 'create' or 'overwrite', not {mode!r}")
    in_schema, batches = normalize_input(data, schema, what=what)
    if columns_required and not len(in_schema):
        raise SchemaError(f"{what}: Cannot write with an empty schema (the data has no "
                          f"columns)")
    plan = plan_write(dataset_uri, in_schema, mode=mode,
                      data_storage_version=data_storage_version,
                      storage_options=storage_options)
    batches = conform_batches(plan, in_schema, batches)
    written: list[str] = []
    try:
        bases = plan.base.manifest.base_paths if plan.base is not None else []
        store, targets = placing_bases(plan.store, bases, target_bases, target_all_bases)
        frags = write_data_files(store, batches, plan.schema, plan.fields,
                                 version=plan.version,
                                 max_rows_per_file=max_rows_per_file or DEFAULT_MAX_ROWS_PER_FILE,
                                 max_bytes_per_file=max_bytes_per_file
                                 or DEFAULT_MAX_BYTES_PER_FILE, written=written,
                                 progress=progress, progress_names_file=progress_names_file)
        if targets is not None:
            targets.mark(frags)
    except BaseException:
        cleanup(plan.store, written)
        raise
    return frags, plan


class _WithFragmentId:
    """Progress callbacks given the fragment id ``LanceFragment.create`` was asked for
    (files a FileSystemFragmentWriteProgress keeps are named by it)."""

    def __init__(self, progress, fragment_id: int):
        self._progress, self._id = progress, fragment_id

    def begin(self, fragment, **kwargs):
        fragment.id = self._id
        return self._progress.begin(fragment, **kwargs)

    def complete(self, fragment, **kwargs):
        fragment.id = self._id
        return self._progress.complete(fragment, **kwargs)


def write_fragments(data, dataset_uri, schema=None, *, return_transaction: bool = False,
                    mode: str = "append", max_rows_per_file: int = 1024 * 1024,
                    max_rows_per_group: int | None = 1024, max_bytes_per_file: int | None = None,
                    progress=None, data_storage_version: str | None = None,
                    use_legacy_format=None, storage_options=None,
                    enable_stable_row_ids: bool = False, target_bases=None,
                    target_all_bases=None, **kwargs):
    """See :func:`lancenb.fragment.write_fragments`."""
    storage_options = provided_options(storage_options,
                                       kwargs.pop("storage_options_provider", None))
    unknown = sorted(k for k in kwargs if k not in ("data_cache_bytes", "max_page_bytes",
                                                    "session"))
    if unknown:
        raise InvalidInputError(f"unsupported write_fragments options: {unknown}")
    if use_legacy_format:
        raise NotSupportedError("lancenb does not write legacy (0.1) data files")
    frags, plan = write_fragment_files(
        data, dataset_uri, schema, mode=mode, max_rows_per_file=max_rows_per_file,
        max_bytes_per_file=max_bytes_per_file, data_storage_version=data_storage_version,
        storage_options=storage_options, progress=progress, target_bases=target_bases,
        target_all_bases=target_all_bases)
    metas = [FragmentMetadata.from_pb(f) for f in frags]
    if not return_transaction:
        return metas
    if plan.appending:
        op = LanceOperation.Append(metas)
    else:
        op = LanceOperation.Overwrite(plan.manifest_schema, metas)
    return WriteTransaction(read_version=plan.read_version, operation=op)


def create_fragment(dataset_uri, data, fragment_id=None, schema=None, max_rows_per_group=1024,
                    progress=None, mode: str = "append", *, data_storage_version=None,
                    use_legacy_format=None, storage_options=None, **kwargs):
    """See :meth:`lancenb.fragment.LanceFragment.create`: one fragment, one data file."""
    unknown = sorted(k for k in kwargs if k not in ("session",))
    if unknown:
        raise InvalidInputError(f"unsupported LanceFragment.create options: {unknown}")
    if use_legacy_format:
        raise NotSupportedError("lancenb does not write legacy (0.1) data files")
    frags, _ = write_fragment_files(data, dataset_uri, schema, mode=mode,
                                    max_rows_per_file=1 << 62, max_bytes_per_file=1 << 62,
                                    data_storage_version=data_storage_version,
                                    storage_options=storage_options,
                                    what="LanceFragment.create", columns_required=True,
                                    progress=None if progress is None else
                                    _WithFragmentId(progress, int(fragment_id or 0)),
                                    progress_names_file=True)
    if not frags:  # (an OSError, as pylance's "Input data was empty")
        raise SchemaError("LanceFragment.create: Input data was empty (no rows to write)")
    meta = FragmentMetadata.from_pb(frags[0])
    meta.id = int(fragment_id or 0)
    return meta
