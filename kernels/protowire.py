"""Walking protobuf wire-format bytes without decoding them (a manifest's fragments).

``fragment_rows``: the top-level records of a ``Manifest`` message, for each
``fragments`` record (field 2, a ``DataFragment``) its ``physical_rows`` (field 4,
a varint; the last one wins, as in a decoder) and whether it has a
``deletion_file`` (field 3). Example: a message of two fragments
``12 02 20 64  12 04 1a 00 20 05`` (``physical_rows`` 100; a deletion file and
``physical_rows`` 5) gives ``rows=[100, 5]``, ``deleted=[0, 1]``, returns 2.

It returns the number of fragments, or a negative status with nothing guaranteed
written: ``TRUNCATED`` (a varint, fixed-width value or length runs past the message
or a varint past 10 bytes), ``BAD_WIRE_TYPE`` (3, 4, 6 or 7: not in Lance's
messages), ``TOO_MANY`` (more fragments than ``rows`` holds).
"""

import numpy as np

from ._jit import kernel

TRUNCATED = -1
BAD_WIRE_TYPE = -2
TOO_MANY = -3

MANIFEST_FRAGMENTS = 2
FRAGMENT_DELETION_FILE = 3
FRAGMENT_PHYSICAL_ROWS = 4


@kernel
def _varint(buf, i, end):
    """``(value, next position)``, or position -1 when it runs past ``end`` or 10 bytes."""
    x = np.uint64(0)
    shift = 0
    while i < end and shift < 70:
        b = np.uint64(buf[i])
        i += 1
        x |= (b & np.uint64(0x7F)) << np.uint64(shift)
        if b < np.uint64(0x80):
            return x, i
        shift += 7
    return x, -1


@kernel
def _skip(buf, i, end, wire):
    """The position after a value of ``wire`` type starting at ``i``, or a status."""
    if wire == 0:
        _, j = _varint(buf, i, end)
        return j if j >= 0 else TRUNCATED
    if wire == 1:
        return i + 8 if i + 8 <= end else TRUNCATED
    if wire == 5:
        return i + 4 if i + 4 <= end else TRUNCATED
    if wire == 2:
        n, j = _varint(buf, i, end)
        if j < 0 or n > np.uint64(end - j):
            return TRUNCATED
        return j + np.int64(n)
    return BAD_WIRE_TYPE


@kernel
def fragment_rows(buf, start, end, rows, deleted):
    if start < 0 or end > buf.shape[0] or start > end:
        return TRUNCATED
    i = start
    count = 0
    while i < end:
        key, i = _varint(buf, i, end)
        if i < 0:
            return TRUNCATED
        field = np.int64(key >> np.uint64(3))
        wire = np.int64(key & np.uint64(7))
        if field != MANIFEST_FRAGMENTS or wire != 2:
            i = _skip(buf, i, end, wire)
            if i < 0:
                return i
            continue
        n, j = _varint(buf, i, end)
        if j < 0 or n > np.uint64(end - j):
            return TRUNCATED
        sub_end = j + np.int64(n)
        if count >= rows.shape[0]:
            return TOO_MANY
        r = np.uint64(0)
        has = 0
        while j < sub_end:
            k, j = _varint(buf, j, sub_end)
            if j < 0:
                return TRUNCATED
            f = np.int64(k >> np.uint64(3))
            w = np.int64(k & np.uint64(7))
            if f == FRAGMENT_PHYSICAL_ROWS and w == 0:
                r, j = _varint(buf, j, sub_end)
                if j < 0:
                    return TRUNCATED
                continue
            if f == FRAGMENT_DELETION_FILE and w == 2:
                has = 1
            j = _skip(buf, j, sub_end, w)
            if j < 0:
                return j
        rows[count] = r
        deleted[count] = has
        count += 1
        i = sub_end
    return count
