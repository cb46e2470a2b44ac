"""Cleanup of old versions, and ``ds.optimize`` (compaction itself is in
:mod:`lancenb.dataset.compaction`).

``cleanup_old_versions`` removes manifests older than ``older_than`` (never the latest,
the last ``retain_versions`` or a tagged one) and then every data, deletion and
transaction file no remaining version references. A file no manifest ever named
(left by a failed write) is only removed once it is older than 7 days, or with
``delete_unverified=True``, because it may belong to a commit still in progress.

Cleanup races commits, so it is conservative:

* it re-lists the versions immediately before deleting and keeps every file that a
  version committed since its plan references (a ``restore()`` of a version being
  removed, say);
* a version an in-flight transaction read (its ``_transactions/{read_version}-*.txn``
  file exists, no manifest names it, and it is younger than 7 days) is kept with its
  files: a ``restore()`` of it or a delete built on it may be about to commit;
* a file no manifest names is kept, even with ``delete_unverified=True``, when it
  was modified at or after the oldest in-flight transaction it can see (a
  ``_transactions/*.txn`` file no manifest names, younger than 7 days) or after
  the timestamp of the version that transaction read: it may be that commit's.
  (The reference keeps every file newer than the oldest retained manifest; lancenb
  applies the time rule to unverified files only, so files of removed versions
  newer than a tagged old version are still removed);
* manifests are deleted before the files they name.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import dataclass, field

from lancenb.dataset.commit import TRANSACTIONS_DIR, list_versions, load_manifest
from lancenb.dataset.compaction import CompactionMetrics, compact_files
from lancenb.dataset.deletion import DELETIONS_DIR, deletion_path
from lancenb.dataset.manifest import DATA_DIR, VERSIONS_DIR, manifest_name
from lancenb.dataset.rowids import (
    ROWIDS_DIR,
)
from lancenb.errors import InvalidInputError

__all__ = ["cleanup_old_versions", "CleanupStats", "Optimize"]

UNVERIFIED_GRACE = _dt.timedelta(days=7)


# -- cleanup ---------------------------------------------------------------------------

@dataclass
class CleanupStats:
    """What :func:`cleanup_old_versions` removed (pylance's ``lance.CleanupStats``
    counters, plus the relative paths in ``removed``)."""

    bytes_removed: int = 0
    old_versions: int = 0
    removed: list = field(default_factory=list)  # relative paths (what a dry run lists)
    failed_deletes: int = 0
    index_files_removed: int = 0

    def _count(self, prefix: str) -> int:
        return sum(p.startswith(prefix) for p in self.removed)

    @property
    def data_files_removed(self) -> int:
        """Data files removed (pylance's counter name)."""
        return self._count(f"{DATA_DIR}/")

    @property
    def transaction_files_removed(self) -> int:
        """Transaction files removed."""
        return self._count(f"{TRANSACTIONS_DIR}/")

    @property
    def deletion_files_removed(self) -> int:
        """Deletion files removed."""
        return self._count("_deletions/")


def _referenced(m) -> set[str]:
    out = set()
    for f in m.fragments:
        for d in f.files:
            out.add(f"{DATA_DIR}/{d.path}")
        if f.HasField("deletion_file"):
            out.add(deletion_path(f.id, f.deletion_file))
        for kind in ("external_row_ids", "external_created_at_versions",
                     "external_last_updated_at_versions"):
            if f.HasField(kind):
                out.add(getattr(f, kind).path)
    if m.transaction_file:
        out.add(f"{TRANSACTIONS_DIR}/{m.transaction_file}")
    return out


def _mtime(store, rel: str) -> float | None:
    try:
        return os.path.getmtime(store.path(rel)) if store.local else \
            store.fs.modified(store.path(rel)).timestamp()
    except (OSError, NotImplementedError, AttributeError, ValueError):
        return None


def _timestamp(mf) -> float:
    ts = mf.manifest.timestamp
    return ts.seconds + ts.nanos / 1e9


def cleanup_old_versions(ds, older_than: _dt.timedelta | None = None,
                         retain_versions: int | None = None, *, delete_unverified: bool = False,
                         error_if_tagged_old_versions: bool = True,
                         dry_run: bool = False) -> CleanupStats:
    """Remove old versions and the files only they reference (see module docs)."""
    store = ds._store
    if older_than is None:
        older_than = _dt.timedelta(days=14)
    if not isinstance(older_than, _dt.timedelta):
        raise InvalidInputError("older_than must be a datetime.timedelta")
    if retain_versions is not None and retain_versions < 1:
        raise InvalidInputError("retain_versions must be at least 1")
    versions, v2 = list_versions(store)
    if not versions:
        return CleanupStats()
    # a tag naming a version that no longer exists protects nothing (pylance ignores it)
    tagged = {int(t["version"]) for t in ds.tags.list().values()} & set(versions)
    cutoff = time.time() - older_than.total_seconds()
    manifests = {v: load_manifest(store, v, v2) for v in versions}
    keep = {versions[-1]} | tagged
    if retain_versions is not None:
        keep |= set(versions[-retain_versions:])
    for v, mf in manifests.items():
        if _timestamp(mf) >= cutoff:
            keep.add(v)
    remove = [v for v in versions if v not in keep]
    kept_refs = set().union(*(_referenced(manifests[v].manifest) for v in keep))
    removed_refs = set().union(*(_referenced(manifests[v].manifest) for v in remove)) \
        if remove else set()
    now = time.time()
    listed = {d: store.list(d) for d in (DATA_DIR, DELETIONS_DIR, ROWIDS_DIR)}

    # immediately before deleting: whatever committed since the plan keeps its files
    latest, _ = list_versions(store)
    for v in latest:
        if v not in manifests:
            manifests[v] = load_manifest(store, v, v2)
            keep.add(v)
            kept_refs |= _referenced(manifests[v].manifest)
    # in-flight commits (a transaction file no manifest names, younger than the grace
    # period): the version each read stays with its files (a restore() of it, a delete
    # rebased on it), and unverified files at least as new as that version or the
    # transaction may be the commit's own
    listed[TRANSACTIONS_DIR] = store.list(TRANSACTIONS_DIR)
    newest_ok = float("inf")
    for name in listed[TRANSACTIONS_DIR]:
        rel = f"{TRANSACTIONS_DIR}/{name}"
        if rel in kept_refs or rel in removed_refs:
            continue
        t = _mtime(store, rel)
        if t is None or now - t > UNVERIFIED_GRACE.total_seconds():
            continue
        newest_ok = min(newest_ok, t)
        read = name.split("-", 1)[0]
        if read.isdigit() and int(read) in manifests:
            newest_ok = min(newest_ok, _timestamp(manifests[int(read)]))
            if int(read) not in keep:
                keep.add(int(read))
                kept_refs |= _referenced(manifests[int(read)].manifest)
    remove = [v for v in remove if v not in keep]
    stats = CleanupStats(old_versions=len(remove))

    to_delete = [f"{VERSIONS_DIR}/{manifest_name(v, v2)}" for v in remove]
    for d, names in listed.items():
        for name in names:
            rel = f"{d}/{name}"
            if rel in kept_refs:
                continue
            if rel in removed_refs:  # verified: only removed versions name it
                to_delete.append(rel)
                continue
            t = _mtime(store, rel)
            if t is None or t >= newest_ok:
                continue  # may belong to a commit under way, or unknowable
            if delete_unverified or now - t > UNVERIFIED_GRACE.total_seconds():
                to_delete.append(rel)
    for rel in to_delete:  # manifests first: no remaining version names a deleted file
        try:
            size = store.size(rel)
        except Exception:
            size = 0
        stats.bytes_removed += size
        stats.removed.append(rel)
        if not dry_run:
            store.delete(rel)
    return stats


class Optimize:
    """``ds.optimize``: pylance's namespace for compaction."""

    def __init__(self, ds):
        self._ds = ds

    def compact_files(self, **kwargs) -> CompactionMetrics:
        """Rewrite small fragments into fewer, larger ones (see :func:`compact_files`)."""
        return compact_files(self._ds, **kwargs)
