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

__all__ = ["from_ids", "to_ids", "serialize", "deserialize"]

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
