"""Committing a transaction: one protocol with one explicit commit point.

Every writer (``write_dataset``, delete, update, merge_insert, schema changes,
compaction, restore, the Spark jobs) first *stages* its new files (data, deletion
and row-id files) under unique names no manifest references, then calls
:func:`commit` with the list of those files:

1. The transaction is written to ``_transactions/{read_version}-{uuid}.txn``.
2. Find the latest version. For every version committed after our read version,
   load the winner's transaction and check it against ours (rebasing a delete
   over another delete of the same fragment by merging the deletion sets).
3. Build the next manifest from the latest one and **publish** it: put-if-absent
   under the next version's name, or, with an external manifest store, step 2 of
   its four-step commit (see :mod:`lancenb.table.external`). This is the
   *commit point*. Losing the race means someone else committed that version: go
   back to 2 (at most ``max_retries`` times).
4. Finish: the external store's steps 3-4 and ``latest_version_hint.json``.

Before the commit point any failure removes every file this attempt wrote (the
caller's staged files, the transaction file, rebased deletion files) and raises:
the dataset is exactly as before. After it nothing this writer wrote is ever
deleted: the finishing steps are idempotent, retried a few times and then left to
readers (which complete an external-store commit themselves); their errors are
logged, not raised. When the publish itself fails and the store cannot say
whether the manifest landed (the read-back fails too), :func:`commit` raises
:class:`~lancenb.errors.CommitOutcomeUnknownError` naming the version it tried,
and removes nothing.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections import deque

import numpy as np

from lancenb._proto import transaction_pb2
from lancenb.encodings import pb
from lancenb.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    CorruptFileError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
    LanceFileNotFoundError,
    RetryableCommitConflictError,
)
from lancenb.io.pools import ThreadPool
from lancenb.io.store import ObjectStore
from lancenb.table.bases import apply_bases, build_stand_in
from lancenb.table.conflicts import check_conflict, check_gap
from lancenb.table.deletion import deletion_path, read_deletions, write_deletions
from lancenb.table.external import ExternalManifestStore
from lancenb.table.handlers import (
    Phase,
    commit_handler_for,
    handler_of,
    put_new_object,
    remove_files,
)
from lancenb.table.hint import hint_bytes, probe_latest
from lancenb.table.manifest import (
    HINT_FILE,
    VERSIONS_DIR,
    ManifestFile,
    check_feature_flags,
    frame_manifest,
    manifest_name,
    parse_manifest_file,
    parse_manifest_names,
)
from lancenb.table.transaction import (
    Op,
    Transaction,
    build_manifest,
    index_section_for,
    new_fragments,
    removed_fragment_ids,
)

__all__ = ["commit", "list_versions", "latest_version", "load_latest", "load_manifest",
           "iter_manifest_bytes", "find_manifest", "open_store", "put_new_object",
           "remove_files", "DEFAULT_MAX_RETRIES"]

DEFAULT_MAX_RETRIES = 40
TRANSACTIONS_DIR = "_transactions"

_log = logging.getLogger("lancenb.commit")


def list_versions(store) -> tuple[list[int], bool | None]:
    """All committed versions (ascending) and whether they use V2 names (None: no
    versions). A dataset mixing both naming schemes is refused."""
    handler_of(store).synchronize(store)
    v1, v2 = parse_manifest_names(store.list(VERSIONS_DIR))
    if v1 and v2:
        raise CorruptFileError(f"dataset {store.uri!r} mixes V1 and V2 manifest names "
                               f"({len(v1)} and {len(v2)} files); lancenb will not guess which "
                               f"is right")
    if not v1 and not v2:
        return [], None
    return sorted(v2 or v1), bool(v2)


# On an object store the hint's probe is a few sequential requests (the hint, the
# hinted version, the next one under both namings, the tags) where one listing request
# covers 1,000 versions: it is tried there only for datasets whose last listing in this
# process held at least PROBE_REMOTE_FROM versions (by URI, at most _LISTED_MAX URIs).
# On a local disk those are a few system calls against a pass over every name.
PROBE_REMOTE_FROM = 1000
_LISTED: dict[str, int] = {}
_LISTED_MAX = 4096


def latest_version(store) -> tuple[int, bool | None]:
    """The newest version and whether it has a V2 name: from the latest-version hint
    when it can be trusted (:mod:`lancenb.table.hint`), else from a listing (on an
    object store, the listing unless the dataset was seen to have many versions: see
    :data:`PROBE_REMOTE_FROM`). ``(0, None)`` when there are no versions."""
    local = getattr(store, "local", False)
    if local or _LISTED.get(store.uri, 0) >= PROBE_REMOTE_FROM:
        found = probe_latest(store)
        if found is not None:
            return found
    versions, naming = list_versions(store)
    if not local:
        if len(_LISTED) >= _LISTED_MAX:
            _LISTED.clear()
        _LISTED[store.uri] = len(versions)
    return (versions[-1], naming) if versions else (0, None)


def load_latest(store):
    """``(manifest file of the newest version, uses V2 names)``, ``(None, None)`` when
    there are no versions (see :func:`latest_version`)."""
    v, naming = latest_version(store)
    return (load_manifest(store, v, naming), naming) if v else (None, None)


def open_store(uri, storage_options=None, commit_lock=None, manifest_store=None) -> ObjectStore:
    """The object store of the dataset at ``uri``, with the commit lock and the
    external manifest store (an :class:`~lancenb.table.external.ExternalManifestStore`)
    its commits go through."""
    store = ObjectStore(uri, storage_options, commit_lock=commit_lock)
    if manifest_store is not None and not isinstance(manifest_store, ExternalManifestStore):
        raise InvalidInputError("manifest_store must be an "
                                "lancenb.table.external.ExternalManifestStore")
    store.manifest_store = manifest_store
    store.commit_handler = commit_handler_for(store, manifest_store)  # (chosen once, here)
    return store


def load_manifest(store, version: int, v2: bool):
    """Read and check version ``version``'s manifest (``v2``: V2 file names; a detached
    version has its own name)."""
    rel = detached_path(version) if is_detached(version) else \
        f"{VERSIONS_DIR}/{manifest_name(version, v2)}"
    try:
        raw = store.read_bytes(rel)
    except LanceFileNotFoundError:
        raise DatasetNotFoundError(f"dataset {store.uri!r} has no version {version}") from None
    return parse_manifest_file(raw, store.uri_of(rel))


def find_manifest(store, version: int):
    """``(parsed manifest, uses V2 names)`` of version ``version`` read by its name, the
    V2 one then the V1 one, without listing ``_versions/`` (as pylance opens a given
    version: one read however many versions there are); None when neither file
    exists, the number names no version, or the store's commit handler does not take a
    manifest's name as proof (an external manifest store: a listing synchronises that
    first). Unlike :func:`list_versions` it does not
    notice a dataset that mixes both naming schemes."""
    if not handler_of(store).names_are_authoritative:
        return None
    if is_detached(version):
        try:
            return load_manifest(store, version, True), True
        except DatasetNotFoundError:
            return None
    for v2 in (True, False):
        try:
            rel = f"{VERSIONS_DIR}/{manifest_name(version, v2)}"
            raw = store.read_bytes(rel)
        except (LanceFileNotFoundError, CorruptFileError):  # no such file; not a version
            continue
        return parse_manifest_file(raw, store.uri_of(rel)), v2
    return None


_MANIFEST_POOL = ThreadPool(lambda: min(16, 4 * (os.cpu_count() or 1)), "lancenb-manifests")


READ_AHEAD = 64  # manifest files in flight at once while a caller walks them in order


def iter_manifest_bytes(store, versions, v2: bool):
    """``(version, uri, raw bytes)`` of each of ``versions`` in that order, the files
    read concurrently but at most ``READ_AHEAD`` ahead of the caller, so walking
    thousands of versions (whose manifests grow with the fragments) holds a window
    of them in memory, not all."""
    names = [f"{VERSIONS_DIR}/{manifest_name(v, v2)}" for v in versions]

    def read(rel):
        try:
            return store.read_bytes(rel)
        except LanceFileNotFoundError:
            return None

    pool = _MANIFEST_POOL.get() if len(names) > 1 else None
    pending: deque = deque()
    for i, (v, rel) in enumerate(zip(versions, names)):
        if pool is None:
            raw = read(rel)
        else:
            while len(pending) < READ_AHEAD and i + len(pending) < len(names):
                pending.append(pool.submit(read, names[i + len(pending)]))
            raw = pending.popleft().result()
        if raw is None:
            raise DatasetNotFoundError(f"dataset {store.uri!r} has no version {v}")
        yield v, store.uri_of(rel), raw


def load_transaction(store, mf):
    """The transaction that made a manifest's version (inline, else its .txn file)."""
    try:
        txn = mf.transaction()
        if txn is not None:
            return txn
        if mf.manifest.transaction_file:
            raw = store.read_bytes(f"{TRANSACTIONS_DIR}/{mf.manifest.transaction_file}")
            return pb.parse(transaction_pb2.Transaction, raw,
                            f"transaction file {mf.manifest.transaction_file!r}")
    except LanceError:
        return None
    return None


def _rows_of(store, frag) -> np.ndarray:
    """The rows a fragment's deletion file deletes (none without one)."""
    if not frag.HasField("deletion_file"):
        return np.zeros(0, np.uint32)
    return read_deletions(store, frag.id, frag.deletion_file, frag.physical_rows)


def _merge_deletes(store, txn: Transaction, latest, initial, own: list) -> None:
    """Rebase our delete or update onto the latest manifest: for each fragment marked
    (same data files, deletion file changed by another writer), union the rows we
    delete with the rows deleted there now. An update whose moved rows were deleted
    or moved concurrently is a retryable conflict (its new copies of them would bring
    them back)."""
    msg = txn.message
    frags = {f.id: f for f in latest.fragments}
    before = {f.id: f for f in initial.fragments} if initial is not None else {}
    keep = []
    gone = list(removed_fragment_ids(txn.pb))
    for f in msg.updated_fragments:
        if f.id not in txn.needs_merge:
            keep.append(f)
            continue
        cur = frags[f.id]
        theirs = _rows_of(store, cur)
        mine = txn.deleted_rows.get(f.id)
        if mine is None:  # (an update: its deletion file less the version it read)
            if f.id not in before:
                raise RetryableCommitConflictError(
                    f"Retryable commit conflict for version {latest.version}: this "
                    f"{txn.op} cannot be rebased (version {txn.read_version} it read is gone)")
            mine = np.setdiff1d(_rows_of(store, f), _rows_of(store, before[f.id]))
        if txn.op is Op.UPDATE and np.intersect1d(mine, theirs).size:
            raise RetryableCommitConflictError(
                f"Retryable commit conflict for version {latest.version}: rows of fragment "
                f"{f.id} this update changes were deleted or updated concurrently; run the "
                f"update again on the new version")
        rows = np.union1d(theirs, mine).astype(np.uint32)
        g = type(f)()
        g.CopyFrom(cur)
        if len(rows) >= cur.physical_rows:
            gone.append(f.id)
            continue
        g.deletion_file.CopyFrom(write_deletions(store, f.id, rows, txn.read_version))
        own.append(deletion_path(f.id, g.deletion_file))
        keep.append(g)
    del msg.updated_fragments[:]
    msg.updated_fragments.extend(keep)
    ids = msg.deleted_fragment_ids if txn.op is Op.DELETE else msg.removed_fragment_ids
    del ids[:]
    ids.extend(sorted(set(gone)))
    txn.needs_merge = set()


def _count_data_writes(store, txn: Transaction, staged) -> None:
    """Add the data files this commit staged to the store's write counters (the file
    writer writes them through its own handle, so the store did not see them)."""
    frags = new_fragments(txn.pb)
    if txn.op is Op.UPDATE:
        frags += list(txn.pb.update.updated_fragments)
    sizes = {f"data/{d.path}": d.file_size_bytes for f in frags for d in f.files}
    for rel in staged:
        if rel in sizes:
            store.count_write(sizes[rel])


def commit(store, txn: Transaction, *, v2_names: bool, data_format: str, writer_version: str,
           max_retries: int = DEFAULT_MAX_RETRIES, base=None, written=(),
           retry_timeout: float | None = None):
    """Commit ``txn``; returns the new :class:`ManifestFile`.

    Losing the race for a version is retried up to ``max_retries`` times, and not
    after ``retry_timeout`` seconds (pylance's ``conflict_retries``/``retry_timeout``).

    ``written`` lists the files the caller staged for this transaction (paths
    relative to the dataset root): if the commit fails before its commit point they
    are removed with everything else this call wrote; after it they belong to the
    dataset. ``base`` is the manifest the caller read (version ``txn.read_version``):
    the first attempt optimistically builds on it without listing; losing the
    put-if-absent race (someone committed since) falls back to listing and conflict
    checks.
    """
    own = list(written)  # what a failure before the commit point removes
    txn_rel = f"{TRANSACTIONS_DIR}/{txn.file_name()}"
    phase = Phase()
    try:
        own.append(txn_rel)
        store.write_bytes(txn_rel, txn.pb.SerializeToString(),
                          atomic=False)  # a unique name nothing points to yet
        mf, finish = _commit_loop(store, txn, own, phase, v2_names=v2_names,
                                  data_format=data_format, writer_version=writer_version,
                                  max_retries=max_retries, base=base,
                                  deadline=None if retry_timeout is None
                                  else time.monotonic() + float(retry_timeout))
    except CommitOutcomeUnknownError:
        _log.warning("%s: outcome of the %s commit unknown (transaction %s)", store.uri,
                     txn.op, txn.uuid)
        raise  # it may be committed: its files must stay
    except BaseException as e:
        if isinstance(e, CommitConflictError):
            _log.info("%s: %s commit (read version %d) refused: %s", store.uri, txn.op,
                      txn.read_version, e)
        if not (phase.publishing or phase.committed):  # else: in doubt, or committed
            remove_files(store, own)
        elif phase.committed:  # (committed, then the commit lock failed on release)
            _log.warning("%s: committed version %s, then: %s", store.uri,
                         phase.version, e)
            _write_hint(store, phase.version)
        raise
    # after the commit point: nothing below raises an Exception or removes a file
    finish()
    _count_data_writes(store, txn, own)
    _log.info("%s: committed version %d (%s, read version %d)", store.uri, mf.version, txn.op,
              txn.read_version)
    _write_hint(store, mf.version)
    return mf


# -- detached commits ----------------------------------------------------------------
#
# A detached version (pylance's ``commit(..., detached=True)``) is a manifest no
# listing counts: its number is a random u64 with the high bit set and its file is
# ``_versions/d{version}.manifest`` (after every V2 name in a listing, and not a
# manifest name to parse_manifest_name). It is opened by number, can be the read version
# of another detached commit, and never becomes the latest. Only datasets with V2
# manifest names take them, as in the reference.

DETACHED_MASK = 1 << 63


def is_detached(version: int) -> bool:
    """Whether ``version`` is a detached version's number."""
    return bool(int(version) & DETACHED_MASK)


def detached_path(version: int) -> str:
    """Where a detached version's manifest lives (relative to the dataset root)."""
    return f"{VERSIONS_DIR}/d{int(version)}.manifest"


def commit_detached(store, txn: Transaction, *, base, data_format: str, writer_version: str,
                    max_retries: int = DEFAULT_MAX_RETRIES, written=()):
    """Commit ``txn`` on top of ``base`` (the :class:`ManifestFile` it read) as a
    detached version; returns its :class:`ManifestFile`. No conflict check: nothing
    else builds on a detached version unless asked to."""
    own = list(written) + [f"{TRANSACTIONS_DIR}/{txn.file_name()}"]
    try:
        store.write_bytes(own[-1], txn.pb.SerializeToString(), atomic=False)
        for _ in range(max_retries + 1):
            v = random.getrandbits(64) | DETACHED_MASK
            m = build_manifest(base.manifest, txn, v, data_format=data_format,
                               writer_version=writer_version)
            index = index_section_for(base, txn, m)
            raw = frame_manifest(m, txn.pb, index, base=base)
            rel = detached_path(v)
            if put_new_object(store, rel, raw):
                _log.info("%s: committed detached version %d (%s, read version %d)",
                          store.uri, v, txn.op, txn.read_version)
                return ManifestFile(m, raw, store.uri_of(rel), len(raw))
    except CommitOutcomeUnknownError:
        raise
    except BaseException:
        remove_files(store, own)
        raise
    remove_files(store, own)
    raise CommitConflictError(f"Failed to find an unused detached version after "
                              f"{max_retries} retries", retryable=True)


def _write_hint(store, version: int) -> None:
    try:
        store.write_bytes(HINT_FILE, hint_bytes(version))
    except Exception as e:  # noqa: BLE001 - the hint is an optimisation; listing stays right
        _log.debug("could not update %s: %s", HINT_FILE, e)


def _read_version_manifest(store, txn: Transaction, v2_names: bool):
    """The manifest of the version ``txn`` read, None if it is gone too."""
    try:
        return load_manifest(store, txn.read_version, v2_names).manifest
    except DatasetNotFoundError:
        return None


_RESTORES = frozenset({Op.RESTORE, Op.CLONE})  # a whole manifest, from another version
_REPLACES = _RESTORES | {Op.OVERWRITE}  # (need no dataset to commit onto)


def _commit_loop(store, txn: Transaction, own: list, phase: Phase, *, v2_names, data_format,
                 writer_version, max_retries, base, deadline=None):
    checked_upto = txn.read_version
    handler = handler_of(store)
    # an overwrite with max_retries=0 is pylance's "strict overwrite": version
    # read_version + 1 or nothing, whatever was committed since
    strict = txn.op is Op.OVERWRITE and max_retries == 0
    initial = base.manifest if base is not None and base.version == txn.read_version else None
    for attempt in range(max_retries + 1):
        # (always looked up, never assumed to be the version read: cleanup_old_versions
        # may have removed the versions after it (all of them but a tagged one and the
        # latest), and a put-if-absent of the read version + 1 would then succeed
        # below the latest, a commit no reader would ever see)
        latest_v, naming = latest_version(store)
        if naming is not None:
            v2_names = naming
        if strict and latest_v != txn.read_version:
            raise CommitConflictError(
                f"Commit conflict for version {txn.read_version + 1}: Failed to commit the "
                f"transaction after 0 retries: this strict overwrite (max_retries=0) read "
                f"version {txn.read_version} of {store.uri!r}, whose latest version is now "
                f"{latest_v}", retryable=True)
        if attempt == 0 and base is not None and base.version == latest_v:
            latest = base
        else:
            latest = load_manifest(store, latest_v, v2_names) if latest_v else None
        if latest is not None:
            check_feature_flags(latest.manifest, latest.name, write=True)
        if txn.create_only and latest is not None:
            raise DatasetExistsError(f"dataset {store.uri!r} was created concurrently (version "
                                     f"{latest_v} exists)")
        if txn.op not in _REPLACES and latest is None:
            raise DatasetNotFoundError(f"dataset {store.uri!r} does not exist")
        for v in range(checked_upto + 1, latest_v + 1):
            if txn.op in _RESTORES:
                break  # (they conflict with nothing lancenb commits)
            try:
                mf = latest if v == latest_v else load_manifest(store, v, v2_names)
            except DatasetNotFoundError:
                if txn.op is Op.OVERWRITE:
                    # (replaces whatever was there: pylance checks it only against the
                    # versions that still exist, for another overwrite or a config key)
                    continue
                # removed by cleanup_old_versions: decided from what the fragments this
                # transaction changes look like now (pylance skips such versions)
                if initial is None:
                    initial = _read_version_manifest(store, txn, v2_names)
                check_gap(txn, initial, latest.manifest, v, store.uri)
                continue
            check_conflict(txn, load_transaction(store, mf), v)
        checked_upto = max(checked_upto, latest_v)
        if txn.needs_merge:
            if initial is None:
                initial = _read_version_manifest(store, txn, v2_names)
            _merge_deletes(store, txn, latest.manifest, initial, own)
        base = latest.manifest if latest is not None else None
        new_v = txn.clone_version or latest_v + 1
        built = build_stand_in(txn)  # (UpdateBases: lancenb.table.bases)
        m = build_manifest(base, built, new_v, data_format=data_format,
                           writer_version=writer_version)
        apply_bases(m, base, txn)
        index = index_section_for(latest, built, m)
        raw = frame_manifest(m, txn.pb, index, base=latest)
        rel = f"{VERSIONS_DIR}/{manifest_name(new_v, v2_names)}"
        try:
            finish = handler.publish(store, rel, raw, new_v, phase)
        except CommitOutcomeUnknownError as e:
            e.transaction_uuid = txn.uuid
            raise
        if finish is not None:  # (m is what raw holds: frame_manifest serialised it)
            return ManifestFile(m, raw, store.uri_of(rel), len(raw)), finish
        # lost the race for this version: back off a little and look again
        _log.debug("%s: version %d was committed by another writer; retrying the %s commit "
                   "(attempt %d of %d)", store.uri, latest_v + 1, txn.op, attempt + 1,
                   max_retries + 1)
        if deadline is not None and time.monotonic() >= deadline:
            raise CommitConflictError(
                f"Commit conflict for version {latest_v + 1}: Failed to commit the "
                f"transaction within the retry timeout after {attempt + 1} attempts: "
                f"dataset {store.uri!r} (too many concurrent writers)", retryable=True)
        time.sleep(random.uniform(0, min(0.05, 0.002 * (attempt + 1))))
    raise CommitConflictError(f"Commit conflict for version {latest_v + 1}: Failed to commit "
                              f"the transaction after {max_retries} retries: dataset "
                              f"{store.uri!r} (too many concurrent writers)", retryable=True)
