"""Versions and time travel: version summaries (``LanceDataset.versions()``), manifest
timestamps and ``asof`` times.

Example: ``version_summary(manifest)`` gives pylance's per-version counts,
``{"total_rows": "10", "total_fragments": "2", ...}`` (strings, as pylance has them).
"""

from __future__ import annotations

import datetime as _dt

from lancenb.dataset.commit import list_versions, load_manifests
from lancenb.errors import CorruptFileError, InvalidInputError

__all__ = ["version_ranges", "as_datetime", "fragment_counts", "version_summary",
           "manifest_time", "version_list"]


def version_ranges(vs: list[int]) -> str:
    """``1..5`` for consecutive versions, else the list (for messages)."""
    return f"{vs[0]}..{vs[-1]}" if vs and vs[-1] - vs[0] + 1 == len(vs) else str(vs)


def as_datetime(x) -> _dt.datetime:
    """``asof`` as an aware datetime: a datetime, date or ISO string; naive means
    local time, as pylance reads it."""
    if isinstance(x, str):
        x = _dt.datetime.fromisoformat(x)
    if isinstance(x, _dt.date) and not isinstance(x, _dt.datetime):
        x = _dt.datetime(x.year, x.month, x.day)
    if not isinstance(x, _dt.datetime):
        raise InvalidInputError(f"asof must be a datetime or ISO string, not {type(x).__name__}")
    if x.tzinfo is None:
        x = x.astimezone()  # naive = local time, as pylance reads it
    return x


def fragment_counts(f) -> tuple[int, int, int, int, int]:
    """(live rows, deleted rows, data files, bytes, deletion files) of one fragment."""
    has_del = f.HasField("deletion_file")
    nd = int(f.deletion_file.num_deleted_rows) if has_del else 0
    return (int(f.physical_rows) - nd, nd, len(f.files),
            sum(int(d.file_size_bytes) for d in f.files), int(has_del))


def version_summary(m, memo: dict | None = None) -> dict:
    """pylance's version summary. ``memo`` (serialized fragment -> its counts) spares
    re-reading the fields of the fragments successive versions share: versions()
    would otherwise be quadratic in fragments x versions of Python."""
    rows = deleted = files = size = dfiles = 0
    for f in m.fragments:
        if memo is None:
            c = fragment_counts(f)
        else:
            key = f.SerializeToString()
            c = memo.get(key)
            if c is None:
                c = memo[key] = fragment_counts(f)
        rows += c[0]
        deleted += c[1]
        files += c[2]
        size += c[3]
        dfiles += c[4]
    return {"total_data_file_rows": str(rows + deleted), "total_data_files": str(files),
            "total_deletion_file_rows": str(deleted), "total_deletion_files": str(dfiles),
            "total_files_size": str(size), "total_fragments": str(len(m.fragments)),
            "total_rows": str(rows)}


def manifest_time(m, where: str, tz=None) -> _dt.datetime:
    """A manifest's timestamp as a datetime; one no datetime can hold (``2**62``
    seconds) is a ``CorruptFileError`` naming the manifest."""
    t = m.timestamp
    try:
        return _dt.datetime.fromtimestamp(t.seconds, tz) + _dt.timedelta(
            microseconds=t.nanos // 1000)
    except (OverflowError, OSError, ValueError) as e:
        raise CorruptFileError(f"manifest {where!r}: timestamp {t.seconds} s, {t.nanos} ns is "
                               f"not a representable time ({e})") from None


def version_list(store, v2: bool, manifest_cache: dict, memo: dict) -> list[dict]:
    """``LanceDataset.versions()``: ``{"version", "timestamp", "metadata"}`` of every
    version, manifests read concurrently and kept in ``manifest_cache``, fragment counts
    in ``memo``."""
    versions, _ = list_versions(store)
    return [{"version": v, "timestamp": manifest_time(mf.manifest, mf.name),
             "metadata": version_summary(mf.manifest, memo)}
            for v, mf in zip(versions, load_manifests(store, versions, v2, manifest_cache))]
