"""Versions and time travel: version summaries (``LanceDataset.versions()``), manifest
timestamps and ``asof`` times.

Example: ``version_summary(manifest)`` gives pylance's per-version counts,
``{"total_rows": "10", "total_fragments": "2", ...}`` (strings, as pylance has them).
"""

from __future__ import annotations

import datetime as _dt
from typing import NamedTuple

from lancenb._proto import table_pb2
from lancenb.encodings import pb
from lancenb.errors import CorruptFileError, DatasetNotFoundError, InvalidInputError
from lancenb.table.commit import (
    find_manifest,
    iter_manifest_bytes,
    list_versions,
    load_latest,
    load_manifest,
)
from lancenb.table.manifest import manifest_span, message_records, parse_manifest_message

__all__ = ["locate_manifest", "version_ranges", "as_datetime", "as_micros", "listed_micros",
           "fragment_counts", "version_summary", "manifest_time", "version_list"]


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


def as_micros(x) -> int:
    """``asof`` (see :func:`as_datetime`) as exact integer microseconds since the epoch."""
    d = as_datetime(x) - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return d // _dt.timedelta(microseconds=1)


def listed_micros(m, where: str) -> int:
    """A manifest's timestamp as ``versions()`` lists it (:func:`manifest_time`, float
    rounding of the nanoseconds included), in integer microseconds since the epoch.

    pylance resolves ``asof`` against these listed times, not the exact nanoseconds: the
    version picked is the newest whose listed time is strictly before ``asof``. So at a
    version's own listed time the version before it is picked, and a version whose
    nanoseconds round up to the next microsecond is listed (and picked) by that one.
    """
    manifest_time(m, where)  # a time no datetime can hold: CorruptFileError
    ns = int(m.timestamp.seconds) * 1_000_000_000 + int(m.timestamp.nanos)
    return int(ns // 1e9) * 1_000_000 + int((ns % 1e9) // 1e3)


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
    ns = int(t.seconds) * 1_000_000_000 + int(t.nanos)
    try:
        # pylance's conversion of its i64 nanoseconds, float rounding and all (the
        # microseconds can differ by one from the exact figure): the same datetimes
        return _dt.datetime.fromtimestamp(ns // 1e9, tz) + _dt.timedelta(
            microseconds=(ns % 1e9) // 1e3)
    except (OverflowError, OSError, ValueError) as e:
        raise CorruptFileError(f"manifest {where!r}: timestamp {t.seconds} s, {t.nanos} ns is "
                               f"not a representable time ({e})") from None


FRAGMENTS_FIELD = 2  # Manifest.fragments, a repeated DataFragment
# at most this many manifests on a local disk are read on the calling thread: handing
# each to the read pool costs more than reading it (10 versions: ~1.8 -> ~1.0 ms wall
# on the loaded 2-core machine); more, or on an object store, are read concurrently
SERIAL_READS = 16
_NO_COUNTS = (0, 0, 0, 0, 0)


class _Walked(NamedTuple):
    """What the next manifest is compared with: the bytes of the last one walked and
    where its fragment records end (``raw[start:frag_end]`` is its message up to the
    end of its fragments), with their summed counts."""

    raw: bytes
    start: int
    frag_start: int  # offset of the first fragment record from ``start``
    frag_end: int
    counts: tuple
    fragments: int


def _add(a: tuple, b: tuple) -> tuple:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def _entry(m, where: str, counts: tuple, fragments: int) -> dict:
    rows, deleted, files, size, dfiles = counts
    meta = {"total_data_file_rows": str(rows + deleted), "total_data_files": str(files),
            "total_deletion_file_rows": str(deleted), "total_deletion_files": str(dfiles),
            "total_files_size": str(size), "total_fragments": str(fragments),
            "total_rows": str(rows)}
    return {"version": int(m.version), "timestamp": manifest_time(m, where), "metadata": meta}


def _summarise(raw: bytes, where: str, prev: _Walked | None, memo: dict):
    """One manifest's :meth:`versions` entry and what the next one is compared with.

    Appends make each manifest the previous one's message plus new fragment records
    (then the few fields after the fragments): when the previous manifest's bytes up
    to the end of its fragments open this one (one ``memcmp``), their counts carry
    over and only the records after them are walked. Otherwise every record is
    walked, each fragment's counts looked up in ``memo`` by its bytes. Only new
    fragments and the fields other than fragments are decoded; fragments not in one
    run (no known writer does that) fall back to decoding the whole manifest.
    """
    a, b = manifest_span(raw, where)
    start, counts, nfrag, fs, fe = a, _NO_COUNTS, 0, None, None
    if prev is not None:
        pre = memoryview(prev.raw)[prev.start:prev.frag_end]
        if len(pre) <= b - a and raw.startswith(pre, a):
            start = fe = a + len(pre)
            fs, counts, nfrag = a + prev.frag_start, prev.counts, prev.fragments
    for field, wire, i, j, k in message_records(raw, start, b, where):
        if field != FRAGMENTS_FIELD:
            continue
        if wire != 2:
            raise CorruptFileError(f"manifest {where!r}: a fragment record of wire type {wire} "
                                   f"(a DataFragment message is length-delimited, type 2)")
        if fe is not None and i != fe:  # fragments split by other fields
            return _summarise_whole(raw[a:b], where, memo), None
        if fs is None:
            fs = i
        fe = k
        key = raw[i:k]
        c = memo.get(key)
        if c is None:
            c = memo[key] = fragment_counts(
                pb.parse(table_pb2.DataFragment, raw[j:k], f"manifest {where!r}: fragment"))
        counts = _add(counts, c)
        nfrag += 1
    if fs is None:
        return _entry(parse_manifest_message(raw[a:b], where), where, counts, 0), None
    m = parse_manifest_message(raw[a:fs] + raw[fe:b], where)  # all but the fragments
    return _entry(m, where, counts, nfrag), _Walked(raw, a, fs - a, fe, counts, nfrag)


def _summarise_whole(msg: bytes, where: str, memo: dict) -> dict:
    m = parse_manifest_message(msg, where)
    counts = _NO_COUNTS
    for f in m.fragments:
        key = f.SerializeToString()
        c = memo.get(key)
        if c is None:
            c = memo[key] = fragment_counts(f)
        counts = _add(counts, c)
    return _entry(m, where, counts, len(m.fragments))


def version_list(store, v2: bool, cache: dict) -> list[dict]:
    """``LanceDataset.versions()``: ``{"version", "timestamp", "metadata"}`` of every
    version, oldest first.

    Only what the listing adds to ``cache`` (the dataset object's: entries by version,
    fragment counts by fragment bytes, the last manifest walked) is read: the files
    concurrently, a window at a time, each summarised without decoding the fragments
    it shares with the one before (:func:`_summarise`), so appends cost time linear in
    the versions and memory in one window of manifests, not the sum of all of them.
    """
    versions, _ = list_versions(store)
    entries = cache.setdefault("entries", {})
    memo = cache.setdefault("fragment_counts", {})
    prev = cache.get("walked")
    new = [v for v in versions if v not in entries]
    if store.local and len(new) <= SERIAL_READS:  # one at a time: no pool hand-offs
        read = (got for v in new for got in iter_manifest_bytes(store, [v], v2))
    else:
        read = iter_manifest_bytes(store, new, v2)
    for v, where, raw in read:
        e, prev = _summarise(raw, where, prev, memo)
        entries[v] = {**e, "version": v}  # as listed (the file name)
    cache["walked"] = prev
    return [{**entries[v], "metadata": dict(entries[v]["metadata"])} for v in versions]


def locate_manifest(store, version=None, asof=None, tag_version=None):
    """``(manifest, v2_names)`` of the version a dataset opens at: ``version`` (a
    number, or a tag name looked up with ``tag_version(name)``), else the newest
    version listed strictly before ``asof`` (pylance's rule), else the latest.
    A numbered version is found by name and the latest through the hint, without
    listing ``_versions/`` where possible."""
    if asof is None and type(version) is int:
        found = find_manifest(store, version)  # by name, no listing
        if found is not None:
            return found
    elif asof is None and version is None:
        mf, naming = load_latest(store)  # the hint, else a listing
        if mf is not None:
            return mf, naming
    versions, naming = list_versions(store)
    if not versions:
        raise DatasetNotFoundError(f"no Lance dataset at {store.uri!r} (no manifests "
                                   f"under _versions/)")
    if version is not None and asof is not None:
        raise InvalidInputError("pass version= or asof=, not both")
    if isinstance(version, str) and not version.isdigit():
        if tag_version is None:
            raise InvalidInputError(f"version {version!r} is not a number")
        v = tag_version(version)
    elif version is not None:
        v = int(version)
        if v not in versions:
            raise DatasetNotFoundError(f"dataset {store.uri!r} has no version {v} (it has "
                                       f"{version_ranges(versions)})")
    elif asof is not None:
        cutoff = as_micros(asof)
        for v in reversed(versions):
            mf = load_manifest(store, v, naming)
            if listed_micros(mf.manifest, mf.name) < cutoff:
                return mf, naming
        raise DatasetNotFoundError(f"dataset {store.uri!r} has no version as of {asof}")
    else:
        v = versions[-1]
    return load_manifest(store, v, naming), naming
