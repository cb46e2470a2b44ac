"""Cleanup of old versions, and automatic cleanup after commits.

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

Automatic cleanup (pylance's ``auto_cleanup_options``): a dataset whose manifest config
holds ``lance.auto_cleanup.interval`` (an integer N) is cleaned up after every commit
whose new version is a multiple of N, removing versions older than
``lance.auto_cleanup.older_than`` (a duration in pylance's syntax, ``"1s"``, ``"1ms"``,
``"2h 30m"``, ``"14days"``: :func:`parse_duration`) except the last
``lance.auto_cleanup.retain_versions`` if that is set. As in pylance, the version the
commit built on is kept as well as the new one, and a failed cleanup is logged, never
raised: the commit has already happened.

Where the hook runs: :func:`after_commit`, called by each caller of
:func:`lancenb.table.commit.commit` once it returns (``write_version`` in
``write/insert.py``, ``LanceDataset._commit`` in ``lance_dataset.py``,
``commit_operation`` in ``operations.py``, the Spark job commit). It cannot live inside
``commit()``: cleanup is a dataset operation (tags, the manifests of every version,
files removed), and ``lancenb.table.commit`` sits in the table layer below it; this
module imports none of its callers, so every caller can import it.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import re
import time
from dataclasses import dataclass, field
from functools import partial

from lancenb.dataset.branching import branch_store, root_of
from lancenb.errors import InvalidInputError
from lancenb.table.bases import base_file_paths
from lancenb.table.branches import Branches, shared_refs
from lancenb.table.commit import TRANSACTIONS_DIR, list_versions, load_manifest
from lancenb.table.deletion import DELETIONS_DIR, deletion_path
from lancenb.table.manifest import DATA_DIR, VERSIONS_DIR, manifest_name
from lancenb.table.rowids import ROWIDS_DIR
from lancenb.table.tags import Tags

__all__ = ["cleanup_old_versions", "cleanup_store", "CleanupStats", "after_commit",
           "parse_duration", "format_duration", "auto_cleanup_config",
           "AUTO_CLEANUP_INTERVAL", "AUTO_CLEANUP_OLDER_THAN", "AUTO_CLEANUP_RETAIN"]

_log = logging.getLogger("lancenb.cleanup")

UNVERIFIED_GRACE = _dt.timedelta(days=7)
AUTO_CLEANUP_INTERVAL = "lance.auto_cleanup.interval"
AUTO_CLEANUP_OLDER_THAN = "lance.auto_cleanup.older_than"
AUTO_CLEANUP_RETAIN = "lance.auto_cleanup.retain_versions"


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
    return cleanup_store(ds.snapshot.store, older_than, retain_versions,
                         delete_unverified=delete_unverified, dry_run=dry_run)


def cleanup_store(store, older_than: _dt.timedelta | None = None,
                  retain_versions: int | None = None, *, delete_unverified: bool = False,
                  dry_run: bool = False, keep_versions=()) -> CleanupStats:
    """:func:`cleanup_old_versions` of the dataset at ``store``; ``keep_versions``
    are kept whatever their age."""
    if older_than is None:
        older_than = _dt.timedelta(days=14)
    if not isinstance(older_than, _dt.timedelta):
        raise InvalidInputError("older_than must be a datetime.timedelta")
    if retain_versions is not None and retain_versions < 1:
        raise InvalidInputError("retain_versions must be at least 1")
    versions, v2 = list_versions(store)
    if not versions:
        return CleanupStats()
    manifests = {v: load_manifest(store, v, v2) for v in versions}
    # branches (lancenb.table.branches): tags live at the main root and name their
    # branch; files other branches reach through a base path here are kept
    branch = manifests[versions[-1]].manifest.branch or None
    root = root_of(store, branch) if branch else store
    # a tag naming a version that no longer exists protects nothing (pylance ignores it)
    tagged = {int(t["version"]) for t in Tags(root).list().values()
              if (t.get("branch") or None) == branch} & set(versions)
    cutoff = time.time() - older_than.total_seconds()
    keep = {versions[-1]} | tagged | (set(keep_versions) & set(versions))
    if retain_versions is not None:
        keep |= set(versions[-retain_versions:])
    for v, mf in manifests.items():
        if _timestamp(mf) >= cutoff:
            keep.add(v)
    remove = [v for v in versions if v not in keep]
    kept_refs = set().union(*(_referenced(manifests[v].manifest) for v in keep))
    kept_refs |= shared_refs(root, partial(branch_store, root), store.root.rstrip("/"), branch)
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
    _remove_on_bases(store, root, branch, manifests, keep, remove, stats, dry_run)
    return stats


def _remove_on_bases(store, root, branch, manifests, keep, remove, stats, dry_run) -> None:
    """Files of removed versions on other base paths (multi-base datasets): removed
    when verified, that is named by a removed version and by no kept version of any
    branch, on a confined base (:func:`lancenb.table.bases.base_file_paths`). Bases
    are never listed: another dataset may share one."""
    gone = set().union(*(base_file_paths(store, manifests[v].manifest, root.root)
                         for v in remove)) if remove else set()
    if not gone:
        return
    gone -= set().union(*(base_file_paths(store, manifests[v].manifest, root.root)
                          for v in keep))
    for b in [None] + sorted(Branches(root).list()):
        if gone and b != branch:
            st = root if b is None else branch_store(root, b)
            vs, naming = list_versions(st)
            for v in vs:
                gone -= base_file_paths(st, load_manifest(st, v, naming).manifest, root.root)
    for p in sorted(gone):
        try:
            size = store.fs.size(p)
        except Exception:  # noqa: BLE001 - already gone, or unknowable: counted as 0
            size = 0
        stats.bytes_removed += size
        stats.removed.append(p)
        if not dry_run:
            try:
                store.fs.rm(p)
            except FileNotFoundError:
                pass


# -- durations (pylance's humantime syntax) --------------------------------------------

_YEAR, _MONTH, _DAY = 31_557_600, 2_630_016, 86_400  # 365.25 and 30.44 days, in seconds
_UNITS = {  # unit -> nanoseconds
    **dict.fromkeys(("nsec", "ns"), 1),
    **dict.fromkeys(("usec", "us", "\u00b5s"), 1_000),
    **dict.fromkeys(("msec", "ms"), 1_000_000),
    **dict.fromkeys(("seconds", "second", "sec", "secs", "s"), 10**9),
    **dict.fromkeys(("minutes", "minute", "min", "mins", "m"), 60 * 10**9),
    **dict.fromkeys(("hours", "hour", "hr", "hrs", "h"), 3600 * 10**9),
    **dict.fromkeys(("days", "day", "d"), _DAY * 10**9),
    **dict.fromkeys(("weeks", "week", "w"), 7 * _DAY * 10**9),
    **dict.fromkeys(("months", "month", "M"), _MONTH * 10**9),
    **dict.fromkeys(("years", "year", "y"), _YEAR * 10**9),
}
_ITEM = re.compile(r"\s*(\d+)\s*([^\d\s]+)")


def parse_duration(text: str) -> _dt.timedelta:
    """A duration written as pylance writes them: integers with units, summed
    (``"1s"``, ``"1ms"``, ``"2h 30m"``, ``"1day 1h 1m 1s"``, ``"14days"``).

    >>> parse_duration("2h 30m")
    datetime.timedelta(seconds=9000)
    """
    s = str(text).strip()
    pos, ns = 0, 0
    if not s:
        raise InvalidInputError("empty duration")
    while pos < len(s):
        m = _ITEM.match(s, pos)
        if m is None or m.group(2) not in _UNITS:
            raise InvalidInputError(f"invalid duration {text!r}: expected numbers with "
                                    f"units such as '1s', '10ms', '2h 30m'")
        ns += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
        while pos < len(s) and s[pos].isspace():
            pos += 1
    return _dt.timedelta(microseconds=ns // 1000)


def format_duration(seconds: int) -> str:
    """Whole seconds as pylance writes them in ``lance.auto_cleanup.older_than``:
    ``90061`` -> ``"1day 1h 1m 1s"``, ``0`` -> ``"0s"``."""
    seconds = int(seconds)
    if seconds < 0:
        raise InvalidInputError(f"older_than_seconds must not be negative, not {seconds}")
    out = []
    for size, one, many in ((_YEAR, "year", "years"), (_MONTH, "month", "months"),
                            (_DAY, "day", "days"), (3600, "h", "h"), (60, "m", "m"),
                            (1, "s", "s")):
        n, seconds = divmod(seconds, size)
        if n:
            out.append(f"{n}{one if n == 1 else many}")
    return " ".join(out) or "0s"


def auto_cleanup_config(options) -> dict:
    """The config keys a new dataset written with ``auto_cleanup_options`` gets (pylance's
    defaults fill what is missing: interval 20, older than 14 days)."""
    interval = options.get("interval", 20)
    older = options.get("older_than_seconds", 14 * _DAY)
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
        raise InvalidInputError(f"auto_cleanup_options interval must be a non-negative "
                                f"integer, not {interval!r}")
    return {AUTO_CLEANUP_INTERVAL: str(interval),
            AUTO_CLEANUP_OLDER_THAN: format_duration(older)}


# -- the hook ----------------------------------------------------------------------------

def after_commit(store, mf) -> CleanupStats | None:
    """Run the automatic cleanup the new version ``mf`` asks for, if any (see the
    module docs). The version before it is kept, as pylance keeps the version its
    committing dataset had checked out. Returns what was removed, None when no cleanup
    was due or it failed (logged, never raised)."""
    config = mf.manifest.config
    if AUTO_CLEANUP_INTERVAL not in config:
        return None
    try:
        interval = int(config[AUTO_CLEANUP_INTERVAL])
        if interval < 0:
            raise ValueError("negative")
        if interval == 0 or mf.version % interval:
            return None
        older = None
        if AUTO_CLEANUP_OLDER_THAN in config:
            older = parse_duration(config[AUTO_CLEANUP_OLDER_THAN])
        retain = None
        if AUTO_CLEANUP_RETAIN in config:
            retain = int(config[AUTO_CLEANUP_RETAIN])
        stats = cleanup_store(store, older, retain,
                              keep_versions=(mf.version, mf.version - 1))
    except Exception as e:  # noqa: BLE001 - the commit has happened; pylance logs it too
        _log.error("%s: automatic cleanup after version %d failed: %s", store.uri,
                   mf.version, e)
        return None
    _log.info("%s: automatic cleanup after version %d removed %d versions (%d bytes)",
              store.uri, mf.version, stats.old_versions, stats.bytes_removed)
    return stats
