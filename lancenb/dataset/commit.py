"""Committing a transaction: the version-listing, conflict-checking, retrying loop.

1. The transaction is written to ``_transactions/{read_version}-{uuid}.txn``.
2. Find the latest version. For every version committed after our read version,
   load the winner's transaction and check it against ours (rebasing a delete
   over another delete of the same fragment by merging the deletion sets).
3. Build the next manifest from the latest one and put it with *put-if-absent*
   under the next version's name. Losing that race means someone else committed
   the same version: go back to 2 (at most ``max_retries`` times).
4. Best effort: update ``latest_version_hint.json``.

Nothing a failed commit wrote is referenced by any manifest, so it stays invisible;
the caller removes its data files.
"""

from __future__ import annotations

import json
import random
import time

import numpy as np

from lancenb._proto import transaction_pb2
from lancenb.dataset.deletion import read_deletions, write_deletions
from lancenb.dataset.manifest import (
    HINT_FILE,
    VERSIONS_DIR,
    check_feature_flags,
    frame_manifest,
    manifest_name,
    parse_manifest_file,
    parse_manifest_name,
)
from lancenb.dataset.transaction import Transaction, build_manifest, check_conflict
from lancenb.encodings import pb
from lancenb.errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetNotFoundError,
    LanceError,
    LanceFileNotFoundError,
)

__all__ = ["commit", "list_versions", "load_manifest", "DEFAULT_MAX_RETRIES"]

DEFAULT_MAX_RETRIES = 40
TRANSACTIONS_DIR = "_transactions"


def list_versions(store) -> tuple[list[int], bool | None]:
    """All committed versions (ascending) and whether they use V2 names (None: no
    versions). A dataset mixing both naming schemes is refused."""
    ext = getattr(store, "manifest_store", None)
    if ext is not None:
        _sync_external(store, ext)
    v1, v2 = [], []
    for name in store.list(VERSIONS_DIR):
        parsed = parse_manifest_name(name)
        if parsed is None:
            continue
        (v2 if parsed[1] else v1).append(parsed[0])
    if v1 and v2:
        raise CorruptFileError(f"dataset {store.uri!r} mixes V1 and V2 manifest names "
                               f"({len(v1)} and {len(v2)} files); lancenb will not guess which "
                               f"is right")
    if not v1 and not v2:
        return [], None
    return sorted(v2 or v1), bool(v2)


def _sync_external(store, ext) -> None:
    """Finish the latest commit if its writer died between steps 2 and 4."""
    from lancenb.dataset.external import synchronize

    latest = ext.get_latest(store.uri_of(""))
    if latest is None:
        return
    version, path = latest
    if path.endswith(".manifest"):
        return
    names = store.list(VERSIONS_DIR)
    v2 = not any((p := parse_manifest_name(n)) and not p[1] for n in names)
    synchronize(store, ext, store.uri_of(""), version, path,
                f"{VERSIONS_DIR}/{manifest_name(version, v2)}")


def _publish(store, rel: str, raw: bytes, version: int) -> bool:
    """Make ``raw`` version ``version`` unless that version exists; True on success."""
    ext = getattr(store, "manifest_store", None)
    if ext is None:
        return store.put_if_absent(rel, raw, version)
    import uuid

    staged = f"{rel}-{uuid.uuid4()}"
    store.write_bytes(staged, raw)  # 1. stage
    if not ext.put_if_not_exists(store.uri_of(""), version, staged):  # 2. commit point
        store.delete(staged)
        return False
    store.write_bytes(rel, raw)  # 3. finalise (a reader would do it if we died)
    ext.put_if_exists(store.uri_of(""), version, rel)  # 4.
    store.delete(staged)
    return True


def load_manifest(store, version: int, v2: bool):
    name = manifest_name(version, v2)
    rel = f"{VERSIONS_DIR}/{name}"
    try:
        raw = store.read_bytes(rel)
    except LanceFileNotFoundError:
        raise DatasetNotFoundError(f"dataset {store.uri!r} has no version {version}") from None
    return parse_manifest_file(raw, store.uri_of(rel))


def _load_transaction(store, mf):
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


def _merge_deletes(store, txn: Transaction, latest) -> None:
    """Rebase our delete onto the latest manifest: union our deleted rows with the
    deletion files others wrote for the same fragments."""
    frags = {f.id: f for f in latest.fragments}
    keep = []
    gone = list(txn.pb.delete.deleted_fragment_ids)
    for f in txn.pb.delete.updated_fragments:
        if f.id not in txn.needs_merge:
            keep.append(f)
            continue
        cur = frags[f.id]
        theirs = (read_deletions(store, f.id, cur.deletion_file, cur.physical_rows)
                  if cur.HasField("deletion_file") else np.zeros(0, np.uint32))
        rows = np.union1d(theirs, txn.deleted_rows[f.id]).astype(np.uint32)
        g = type(f)()
        g.CopyFrom(cur)
        if len(rows) >= cur.physical_rows:
            gone.append(f.id)
            continue
        g.deletion_file.CopyFrom(write_deletions(store, f.id, rows, txn.read_version))
        keep.append(g)
    del txn.pb.delete.updated_fragments[:]
    txn.pb.delete.updated_fragments.extend(keep)
    del txn.pb.delete.deleted_fragment_ids[:]
    txn.pb.delete.deleted_fragment_ids.extend(sorted(set(gone)))
    txn.needs_merge = set()


def commit(store, txn: Transaction, *, v2_names: bool, data_format: str, writer_version: str,
           max_retries: int = DEFAULT_MAX_RETRIES, base=None):
    """Commit ``txn``; returns the new :class:`ManifestFile`.

    ``base`` is the manifest the caller read (version ``txn.read_version``): the first
    attempt optimistically builds on it without listing; losing the put-if-absent race
    (someone committed since) falls back to listing and conflict checks.
    """
    store.write_bytes(f"{TRANSACTIONS_DIR}/{txn.file_name()}", txn.pb.SerializeToString(),
                      atomic=False)  # a unique name nothing points to yet
    checked_upto = txn.read_version
    for attempt in range(max_retries + 1):
        if attempt == 0 and base is not None and base.version == txn.read_version and \
                getattr(store, "manifest_store", None) is None:
            latest_v, latest = base.version, base
        else:
            versions, naming = list_versions(store)
            if naming is not None:
                v2_names = naming
            latest_v = versions[-1] if versions else 0
            latest = load_manifest(store, latest_v, v2_names) if latest_v else None
        if latest is not None:
            check_feature_flags(latest.manifest, latest.name, write=True)
        if txn.create_only and latest is not None:
            from lancenb.errors import DatasetExistsError

            raise DatasetExistsError(f"dataset {store.uri!r} was created concurrently (version "
                                     f"{latest_v} exists)")
        if txn.op not in ("overwrite", "restore") and latest is None:
            raise DatasetNotFoundError(f"dataset {store.uri!r} does not exist")
        for v in range(checked_upto + 1, latest_v + 1):
            mf = latest if v == latest_v else load_manifest(store, v, v2_names)
            check_conflict(txn, _load_transaction(store, mf), v, latest.manifest)
        checked_upto = max(checked_upto, latest_v)
        if txn.needs_merge:
            _merge_deletes(store, txn, latest.manifest)
        base = latest.manifest if latest is not None else None
        m = build_manifest(base, txn, latest_v + 1, data_format=data_format,
                           writer_version=writer_version)
        index = None
        if latest is not None and txn.op in ("append", "delete", "update", "merge", "project"):
            index = latest.index_section_bytes()
        elif txn.op == "restore":
            index = txn.restore_index_section
        raw = frame_manifest(m, txn.pb, index)
        rel = f"{VERSIONS_DIR}/{manifest_name(latest_v + 1, v2_names)}"
        if _publish(store, rel, raw, latest_v + 1):
            try:
                store.write_bytes(HINT_FILE, json.dumps({"version": latest_v + 1},
                                                        separators=(",", ":")).encode())
            except LanceError:
                pass  # the hint is an optimisation; listing stays correct
            return parse_manifest_file(raw, store.uri_of(rel))
        # lost the race for this version: back off a little and look again
        time.sleep(random.uniform(0, min(0.05, 0.002 * (attempt + 1))))
    raise CommitConflictError(f"dataset {store.uri!r}: commit conflict: gave up after "
                              f"{max_retries} retries (too many concurrent writers)")
