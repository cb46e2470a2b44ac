"""Stable row ids: the ``RowIdSequence`` of a fragment (``rowids.proto``).

With stable row ids enabled, each fragment stores the row id of every physical row
(deleted ones included) as a sequence of segments, each one of:

* ``range`` ``[start, end)``;
* ``range_with_holes``: ``[start, end)`` minus the sorted ``holes``;
* ``range_with_bitmap``: the ``i``-th value of ``[start, end)`` is present when bit
  ``i`` (LSB first) of ``bitmap`` is set;
* ``sorted_array`` / ``array``: explicit values, as an ``EncodedU64Array``:
  ``u16_array``/``u32_array`` = ``base`` + little-endian offsets, or raw
  little-endian u64 ``values``.

Example: bytes ``0a 05 0a 03 10 90 4e`` = one range segment ``[0, 10000)``.
"""

from __future__ import annotations

import numpy as np

from lancenb._proto import rowids_pb2
from lancenb.encodings import pb
from lancenb.errors import CorruptFileError
from lancenb.io.paths import check_relative

__all__ = ["set_row_ids", "INLINE_ROW_IDS_LIMIT", "ROWIDS_DIR", "decode_row_ids",
           "encode_range_row_ids", "encode_version_runs", "external_bytes",
           "encode_array_row_ids", "decode_version_runs", "encode_version_array"]

_MAX_SEGMENT = 1 << 40  # more row ids than any fragment can hold: corrupt
# Sequences larger than this would go to a file of their own (``_rowids/``, read as an
# ExternalFile relative to the dataset root). pylance 14 refuses to open manifests with
# external row-id sequences ("All fragments must have row ids"), so lancenb writes every
# sequence inline, as the reference does, and only *reads* external ones.
INLINE_ROW_IDS_LIMIT = None
ROWIDS_DIR = "_rowids"


def set_row_ids(frag, data: bytes, store=None, written: list | None = None) -> None:
    """Attach a serialised RowIdSequence to a DataFragment (inline; see above)."""
    frag.inline_row_ids = data


def _encoded_array(arr, where: str) -> np.ndarray:
    kind = arr.WhichOneof("array")
    if kind == "u16_array" or kind == "u32_array":
        sub = getattr(arr, kind)
        dt = np.dtype("<u2") if kind == "u16_array" else np.dtype("<u4")
        if len(sub.offsets) % dt.itemsize:
            raise CorruptFileError(f"{where}: {kind} offsets of {len(sub.offsets)} bytes")
        return np.frombuffer(sub.offsets, dtype=dt).astype(np.uint64) + np.uint64(sub.base)
    if kind == "u64_array":
        if len(arr.u64_array.values) % 8:
            raise CorruptFileError(f"{where}: u64_array of {len(arr.u64_array.values)} bytes")
        return np.frombuffer(arr.u64_array.values, dtype="<u8").astype(np.uint64)
    if kind is None:
        return np.zeros(0, np.uint64)
    raise CorruptFileError(f"{where}: unknown encoded array kind {kind!r}")


def _range(start: int, end: int, where: str) -> np.ndarray:
    if end < start or end - start > _MAX_SEGMENT:
        raise CorruptFileError(f"{where}: bad row id range [{start}, {end})")
    return np.arange(start, end, dtype=np.uint64)


def _segment(seg, where: str) -> np.ndarray:
    kind = seg.WhichOneof("segment")
    if kind == "range":
        return _range(seg.range.start, seg.range.end, where)
    if kind == "range_with_holes":
        s = seg.range_with_holes
        full = _range(s.start, s.end, where)
        holes = _encoded_array(s.holes, where)
        return full[~np.isin(full, holes)]
    if kind == "range_with_bitmap":
        s = seg.range_with_bitmap
        full = _range(s.start, s.end, where)
        bits = np.unpackbits(np.frombuffer(s.bitmap, np.uint8), bitorder="little")
        if len(bits) < len(full):
            raise CorruptFileError(f"{where}: bitmap of {len(bits)} bits for a range of "
                                   f"{len(full)}")
        return full[bits[: len(full)].astype(bool)]
    if kind in ("sorted_array", "array"):
        return _encoded_array(getattr(seg, kind), where)
    raise CorruptFileError(f"{where}: empty or unknown row id segment {kind!r}")


def _segment_len(seg, where: str) -> int:
    """How many ids a segment holds, from its metadata alone (nothing allocated)."""
    kind = seg.WhichOneof("segment")
    if kind in ("range", "range_with_holes", "range_with_bitmap"):
        s = getattr(seg, kind)
        if s.end < s.start:
            raise CorruptFileError(f"{where}: bad row id range [{s.start}, {s.end})")
        n = int(s.end) - int(s.start)
        if kind == "range_with_holes":
            n -= _encoded_len(s.holes)
        elif kind == "range_with_bitmap":
            if len(s.bitmap) * 8 < n:
                raise CorruptFileError(f"{where}: bitmap of {len(s.bitmap) * 8} bits for a "
                                       f"range of {n}")
            # the ids are the set bits among the range's first n (the bitmap's bytes are
            # in the file, so counting them allocates nothing the file does not hold)
            bits = np.unpackbits(np.frombuffer(s.bitmap, np.uint8), bitorder="little")
            n = int(np.count_nonzero(bits[:n]))
        return n
    if kind in ("sorted_array", "array"):
        return _encoded_len(getattr(seg, kind))
    raise CorruptFileError(f"{where}: empty or unknown row id segment {kind!r}")


def _encoded_len(arr) -> int:
    kind = arr.WhichOneof("array")
    if kind == "u16_array":
        return len(arr.u16_array.offsets) // 2
    if kind == "u32_array":
        return len(arr.u32_array.offsets) // 4
    if kind == "u64_array":
        return len(arr.u64_array.values) // 8
    return 0


def decode_row_ids(data: bytes, where: str, *, expected: int | None = None) -> np.ndarray:
    """All row ids of a fragment (one per physical row), as uint64.

    With ``expected`` (the fragment's row count) the segments' sizes are checked
    against it before any segment is expanded, so a range claiming ``2**36`` ids is
    a ``CorruptFileError``, not a 512 GiB allocation.
    """
    seq = pb.parse(rowids_pb2.RowIdSequence, data, where)
    if expected is not None:
        total = sum(_segment_len(s, where) for s in seq.segments)
        if total != expected:
            raise CorruptFileError(f"{where}: segments hold {total} row ids, the fragment has "
                                   f"{expected} rows")
    parts = [_segment(s, where) for s in seq.segments]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64)


def external_bytes(store, ext, where: str) -> bytes:
    """The bytes an ``ExternalFile`` reference (path from the dataset root, offset,
    size) points to; the path must stay inside the dataset (:mod:`lancenb.io.paths`)."""
    rel = check_relative(ext.path, what="external row-id file", source=where)
    raw = store.read_bytes(rel)
    if int(ext.offset) + int(ext.size) > len(raw):
        raise CorruptFileError(f"{where}: external range [{ext.offset}, +{ext.size}) runs past "
                               f"the end of {ext.path!r} ({len(raw)} bytes)")
    return raw[ext.offset: ext.offset + ext.size]


def encode_range_row_ids(start: int, end: int) -> bytes:
    """A row-id sequence of one range ``[start, start + n)``, serialised."""
    seq = rowids_pb2.RowIdSequence()
    seg = seq.segments.add()
    seg.range.start = start
    seg.range.end = end
    return seq.SerializeToString()


def encode_version_runs(num_rows: int, version: int) -> bytes:
    """A ``RowDatasetVersionSequence`` saying all ``num_rows`` rows have ``version``."""
    seq = rowids_pb2.RowDatasetVersionSequence()
    run = seq.runs.add()
    run.span.range.start = 0
    run.span.range.end = num_rows
    run.version = version
    return seq.SerializeToString()


def _encode_segment(seg, ids: np.ndarray) -> None:
    """Fill a U64Segment with ``ids``: a range when contiguous, else an array with the
    narrowest offsets from the minimum."""
    ids = np.asarray(ids, dtype=np.uint64)
    n = len(ids)
    if n and int(ids[-1]) - int(ids[0]) == n - 1 and (n == 1 or np.all(np.diff(ids) == 1)):
        seg.range.start = int(ids[0])
        seg.range.end = int(ids[-1]) + 1
        return
    target = seg.sorted_array if n < 2 or np.all(ids[1:] > ids[:-1]) else seg.array
    base = int(ids.min()) if n else 0
    span = int(ids.max()) - base if n else 0
    if span < 1 << 16:
        target.u16_array.base = base
        target.u16_array.offsets = (ids - np.uint64(base)).astype("<u2").tobytes()
    elif span < 1 << 32:
        target.u32_array.base = base
        target.u32_array.offsets = (ids - np.uint64(base)).astype("<u4").tobytes()
    else:
        target.u64_array.values = ids.astype("<u8").tobytes()


def encode_array_row_ids(ids: np.ndarray) -> bytes:
    """A RowIdSequence for arbitrary ids (e.g. rows moved by compaction)."""
    seq = rowids_pb2.RowIdSequence()
    if len(ids):
        _encode_segment(seq.segments.add(), ids)
    return seq.SerializeToString()


def decode_version_runs(data: bytes, num_rows: int, where: str) -> np.ndarray:
    """Per-row dataset versions from a RowDatasetVersionSequence."""
    seq = pb.parse(rowids_pb2.RowDatasetVersionSequence, data, where)
    total = sum(_segment_len(run.span, where) for run in seq.runs)
    if total != num_rows:
        raise CorruptFileError(f"{where}: versions for {total} rows, the fragment has "
                               f"{num_rows}")
    parts = []
    for run in seq.runs:
        n = len(_segment(run.span, where))
        parts.append(np.full(n, run.version, dtype=np.uint64))
    out = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    if len(out) != num_rows:
        raise CorruptFileError(f"{where}: versions for {len(out)} rows, the fragment has "
                               f"{num_rows}")
    return out


def encode_version_array(versions: np.ndarray) -> bytes:
    """Runs of equal versions as a RowDatasetVersionSequence (spans are row offsets)."""
    v = np.asarray(versions, dtype=np.uint64)
    seq = rowids_pb2.RowDatasetVersionSequence()
    if len(v):
        starts = np.flatnonzero(np.concatenate([[True], v[1:] != v[:-1]]))
        ends = np.append(starts[1:], len(v))
        for s_, e_ in zip(starts.tolist(), ends.tolist()):
            run = seq.runs.add()
            run.span.range.start = s_
            run.span.range.end = e_
            run.version = int(v[s_])
    return seq.SerializeToString()
