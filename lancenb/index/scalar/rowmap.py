"""Row sets as the scalar indices store them (the reference's ``RowIdTreeMap``).

A set of 64-bit row ids (row addresses ``fragment << 32 | offset``, or stable row
ids) is kept per high half: for each distinct ``id >> 32`` a roaring bitmap of the
low halves. Serialised, little-endian::

    u32 count
    count times: u32 high | u32 size | size bytes of a portable roaring bitmap
                 (size 0: every low value of that high half, "the whole fragment")

Example: the addresses ``{3, 5, 1<<32 | 7}`` are ``02000000`` then
``00000000 <n> <roaring {3, 5}>`` then ``01000000 <m> <roaring {7}>``.

In memory lancenb uses ``pyroaring.BitMap64`` (set algebra in C); these helpers
convert between the two without a per-row Python loop.
"""

from __future__ import annotations

import array
import struct

import numpy as np
from pyroaring import BitMap, BitMap64

from lancenb.errors import CorruptFileError
from lancenb.io.store import ObjectStore
from lancenb.table.deletion import read_deletions
from lancenb.table.rowids import decode_row_ids, external_bytes

__all__ = ["from_ids", "to_ids", "serialize", "deserialize", "fragment_row_ids", "live_rows",
           "span_offsets", "without"]

_HEAD = struct.Struct("<II")


def from_ids(ids: np.ndarray) -> BitMap64:
    """A ``BitMap64`` of the uint64 ids ``ids`` (any order, repeats allowed)."""
    ids = np.sort(np.asarray(ids, dtype=np.uint64))  # (sorted ids build twice as fast)
    return BitMap64(array.array("Q", ids.tobytes())) if ids.size else BitMap64()


def to_ids(rows: BitMap64) -> np.ndarray:
    """The ids of ``rows`` as a sorted uint64 array."""
    return np.frombuffer(rows.to_array(), dtype=np.uint64) if len(rows) else \
        np.zeros(0, np.uint64)


def serialize(ids: np.ndarray) -> bytes:
    """The serialised row set of the uint64 ``ids`` (sorted or not)."""
    ids = np.asarray(ids, dtype=np.uint64)
    if ids.size > 1 and not (ids[1:] > ids[:-1]).all():  # (sorted and unique: as they are)
        ids = np.sort(ids)
        ids = ids[np.concatenate([[True], ids[1:] != ids[:-1]])]
    highs = (ids >> np.uint64(32)).astype(np.uint32)
    cuts = np.flatnonzero(np.diff(highs)) + 1 if ids.size else np.zeros(0, np.int64)
    starts = np.concatenate([[0], cuts]) if ids.size else np.zeros(0, np.int64)
    ends = np.concatenate([cuts, [ids.size]]) if ids.size else np.zeros(0, np.int64)
    parts = [struct.pack("<I", len(starts))]
    lows = (ids & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    for a, b in zip(starts.tolist(), ends.tolist()):
        bm = BitMap(array.array("I", lows[a:b].tobytes()))
        raw = bm.serialize()
        parts.append(_HEAD.pack(int(highs[a]), len(raw)))
        parts.append(raw)
    return b"".join(parts)


def deserialize(raw: bytes, *, full_rows=None, where: str = "row set") -> BitMap64:
    """The ``BitMap64`` of a serialised row set. ``full_rows(high)`` gives the number
    of rows of a fragment stored whole (size 0); without it such an entry is an error."""
    raw = bytes(raw)
    if len(raw) < 4:
        raise CorruptFileError(f"{where}: {len(raw)} bytes, not a row set")
    (count,) = struct.unpack_from("<I", raw, 0)
    pos, out = 4, BitMap64()
    for _ in range(count):
        if pos + 8 > len(raw):
            raise CorruptFileError(f"{where}: truncated at byte {pos} of {len(raw)}")
        high, size = _HEAD.unpack_from(raw, pos)
        pos += 8
        if size == 0:
            if full_rows is None:
                raise CorruptFileError(f"{where}: fragment {high} is stored whole, and its "
                                       f"row count is unknown")
            n = int(full_rows(high))
            base = high << 32
            out.add_range(base, base + n)
            continue
        if pos + size > len(raw):
            raise CorruptFileError(f"{where}: a bitmap of {size} bytes at {pos} passes the "
                                   f"end ({len(raw)} bytes)")
        try:
            bm = BitMap.deserialize(raw[pos:pos + size])
        except Exception as e:  # noqa: BLE001 - pyroaring raises plain ValueError etc.
            raise CorruptFileError(f"{where}: not a roaring bitmap: {e}") from e
        pos += size
        lows = np.frombuffer(bm.to_array(), dtype=np.uint32).astype(np.uint64)
        out |= from_ids(lows | np.uint64(high << 32))
    return out


def _deleted(store, f) -> np.ndarray:
    """Offsets of a fragment's deleted rows (``f``: its ``FragmentMetadata``)."""
    if f.deletion_file is None:
        return np.zeros(0, np.uint32)
    return read_deletions(store, int(f.id), f.deletion_file.to_pb(), int(f.physical_rows))


def fragment_row_ids(store, f) -> np.ndarray:
    """The row id of each physical row of a fragment (stable row ids)."""
    pbf = f.to_pb()
    where = f"fragment {f.id} row ids"
    data = pbf.inline_row_ids if pbf.WhichOneof("row_id_sequence") == "inline_row_ids" \
        else external_bytes(store, pbf.external_row_ids, where)
    return decode_row_ids(data, where, expected=int(f.physical_rows))


def live_rows(view, rows: BitMap64, covered: set[int], stable: bool) -> BitMap64:
    """``rows`` restricted to the live rows of the covered fragments: by address
    (``fragment << 32 | offset``), or with stable row ids by the fragments' row-id
    sequences (deleted rows' ids dropped)."""
    store = ObjectStore(view.uri)
    if stable:
        out = BitMap64()
        for f in view.fragments:
            if int(f.id) not in covered:
                continue
            ids = fragment_row_ids(store, f)
            dead = _deleted(store, f)
            if dead.size:
                ids = np.delete(ids, dead.astype(np.int64))
            out |= rows & from_ids(ids)
        return out
    addrs = to_ids(rows)  # (sorted: the fragments present are its runs)
    high = addrs >> np.uint64(32)
    present = high[np.r_[True, high[1:] != high[:-1]]].tolist() if addrs.size else []
    out = rows
    if any(int(p) not in covered for p in present):
        out = from_ids(addrs[np.isin(high, np.array(sorted(covered), np.uint64))])
    by_id = {int(f.id): f for f in view.fragments}
    gone = []
    for fid in present:
        f = by_id.get(int(fid))
        if f is not None and int(fid) in covered and f.deletion_file is not None:
            dead = _deleted(store, f)
            if dead.size:
                gone.append(dead.astype(np.uint64) | np.uint64(int(fid) << 32))
    if gone:
        out = out - from_ids(np.concatenate(gone))
    return out


def span_offsets(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The sorted distinct offsets of the ranges ``[lo[i], hi[i])`` (which may overlap).

    Examples
    --------
    >>> span_offsets(np.array([5, 0, 6]), np.array([8, 2, 9])).tolist()
    [0, 1, 5, 6, 7, 8]
    """
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return np.zeros(0, np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    new = np.ones(len(lo), bool)
    new[1:] = lo[1:] > reach[:-1]
    first = np.flatnonzero(new)
    s, e = lo[first], reach[np.append(first[1:], len(lo)) - 1]
    n = e - s
    before = np.zeros(len(n), np.int64)
    np.cumsum(n[:-1], out=before[1:])
    return np.arange(int(n.sum()), dtype=np.int64) + np.repeat(s - before, n)


def without(offsets: np.ndarray, deleted: np.ndarray) -> np.ndarray:
    """Sorted ``offsets`` less the sorted ``deleted`` ones (a binary search each).

    Examples
    --------
    >>> without(np.array([1, 4, 5, 9]), np.array([0, 4, 9, 12], np.uint32)).tolist()
    [1, 5]
    """
    if not len(deleted) or not len(offsets):
        return offsets
    deleted = np.asarray(deleted, np.int64)
    pos = np.searchsorted(offsets, deleted)
    ok = pos < len(offsets)
    pos = pos[ok]
    pos = pos[offsets[pos] == deleted[ok]]
    if not len(pos):
        return offsets
    keep = np.ones(len(offsets), bool)
    keep[pos] = False
    return offsets[keep]
