"""Rows of a dataset named by row address (or stable row id), through the dataset's
public fragment API: the original vectors a refine re-ranks an index's candidates
with (:func:`vectors_of`), and the rows of a search's results (:func:`take_results`).

:func:`locate` turns ids into ``(fragment id, physical offset)``: a row address is
``fragment << 32 | offset``; stable row ids are looked up in a sorted index of every
live row's id, built once per dataset version (kept in its snapshot's memo table).
Ids whose row no longer exists (deleted after the index was built, its fragment gone)
are dropped. Each fragment's rows are then read at once: ``take_physical`` at the
sorted offsets for the vectors, ``LanceFragment.take`` at the live positions for the
result columns (it gives them as a scan would: blobs, extension types).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .flat import Candidates

__all__ = ["vectors_of", "locate", "take_results", "DISTANCE", "ROWID", "ROWADDR"]

DISTANCE = "_distance"
ROWID = "_rowid"
ROWADDR = "_rowaddr"
_ROW_ID_INDEX = "vector_row_id_index"
_LOW = np.uint64(0xFFFFFFFF)


def _row_id_index(ds, frags: dict):
    """``(sorted stable row ids, their fragment ids, their offsets)`` of the live rows."""
    memo = getattr(getattr(ds, "snapshot", None), "cache", None)
    hit = memo.get(_ROW_ID_INDEX) if isinstance(memo, dict) else None
    if hit is not None:
        return hit
    ids, fr, off = [], [], []
    for f in frags.values():
        live = f.live_offsets()
        o = np.arange(f.physical_rows, dtype=np.int64) if live is None else live
        ids.append(np.asarray(f.row_ids(), np.uint64)[o])
        fr.append(np.full(len(o), f.fragment_id, np.int64))
        off.append(o)
    if ids:
        all_ids = np.concatenate(ids)
        order = np.argsort(all_ids, kind="stable")
        hit = (all_ids[order], np.concatenate(fr)[order], np.concatenate(off)[order])
    else:
        hit = (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    if isinstance(memo, dict):
        memo[_ROW_ID_INDEX] = hit
    return hit


def locate(ds, ids: np.ndarray):
    """``(fragment ids, offsets, found)`` of row ids ``ids`` (addresses unless the
    dataset has stable row ids); ``found`` masks the ids of rows that still exist,
    the other two hold only those."""
    ids = np.asarray(ids, dtype=np.uint64)
    frags = {f.fragment_id: f for f in ds.get_fragments()}
    if bool(ds.has_stable_row_ids):
        sorted_ids, frag_of, off_of = _row_id_index(ds, frags)
        if not len(sorted_ids):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(len(ids), bool)
        pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
        found = sorted_ids[pos] == ids
        return frag_of[pos[found]], off_of[pos[found]], found
    fid = (ids >> np.uint64(32)).astype(np.int64)
    off = (ids & _LOW).astype(np.int64)
    found = np.zeros(len(ids), bool)
    for f in np.unique(fid).tolist():
        frag = frags.get(f)
        if frag is None:
            continue  # (a fragment deleted whole)
        sel = fid == f
        good = off < frag.physical_rows
        dead = frag.deleted_offsets()
        if len(dead):
            good &= ~np.isin(off, dead)
        found |= sel & good
    return fid[found], off[found], found


def _by_fragment(fid: np.ndarray):
    """``(fragment id, positions in fid)`` for each fragment named."""
    if len(fid) and (fid == fid[0]).all():
        return [(int(fid[0]), np.arange(len(fid)))]
    return [(f, np.flatnonzero(fid == f)) for f in np.unique(fid).tolist()]


def _matrix(col) -> np.ndarray:
    col = col.combine_chunks()
    dim = col.type.list_size
    return np.asarray(col.flatten().to_numpy(zero_copy_only=False)).reshape(-1, dim)


def _taken(frag, column: str, offsets: np.ndarray):
    """Column ``column`` (top-level, or a path ``a.b`` into struct columns) of the rows
    of ``frag`` at physical ``offsets``."""
    if column in frag.schema.names:
        return frag.take_physical([column], offsets).column(column)
    top, *path = column.split(".")
    col = frag.take_physical([top], offsets).column(top).combine_chunks()
    for name in path:
        col = col.field(name)
    return pa.chunked_array([col])


def vectors_of(ds, column: str, ids: np.ndarray):
    """``(vectors, found)``: the vectors of the rows in ``ids`` that still exist
    (``found``, a mask over ``ids``), in the order of ``ids[found]``."""
    fid, off, found = locate(ds, ids)
    if not len(fid):
        return np.zeros((0, 0), np.float32), found
    frags = {f.fragment_id: f for f in ds.get_fragments()}
    out = None
    for f, sel in _by_fragment(fid):
        uniq, inverse = np.unique(off[sel], return_inverse=True)
        got = _matrix(_taken(frags[f], column, uniq))
        got = got[inverse.reshape(-1)]
        if out is None:
            out = np.empty((len(fid), got.shape[1]), got.dtype)
        out[sel] = got
    return out, found


def take_results(ds, cand: Candidates, columns: list[str]) -> pa.Table | None:
    """The result table of ``cand``: ``columns``, ``_distance``, ``_rowid``, ``_rowaddr``,
    in ``cand``'s order, rows that no longer exist dropped; None when none remains."""
    fid, off, found = locate(ds, cand.row_id)
    if not len(fid):
        return None
    ids, dist = cand.row_id[found], cand.dist[found]
    addr = (fid.astype(np.uint64) << np.uint64(32)) | off.astype(np.uint64)
    cols = {DISTANCE: pa.array(dist, pa.float32()), ROWID: pa.array(ids, pa.uint64()),
            ROWADDR: pa.array(addr, pa.uint64())}
    if not columns:
        return pa.table(cols)
    frags = {f.fragment_id: f for f in ds.get_fragments()}
    parts, order = [], []
    for f, sel in _by_fragment(fid):
        frag = frags[f]
        live = frag.live_offsets()
        pos = off[sel] if live is None else np.searchsorted(live, off[sel])
        parts.append(frag.take(pos, columns=columns))
        order.append(sel)
    if len(parts) == 1:
        data = parts[0]
    else:
        data = pa.concat_tables(parts)
        data = data.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))
    for name, arr in cols.items():
        data = data.append_column(name, arr)
    return data


def nested_field(schema: pa.Schema, column: str) -> pa.Field | None:
    """The field ``column`` names: a top-level name (else one equal but for case), or
    a path ``a.b`` into struct columns; None when there is none."""
    if column in schema.names:
        return schema.field(column)
    names = {f.name.lower(): f for f in schema}
    if column.lower() in names:
        return names[column.lower()]
    field, fields = None, list(schema)
    for part in column.split("."):
        field = next((f for f in fields if f.name == part), None)
        if field is None:
            return None
        fields = list(field.type) if pa.types.is_struct(field.type) else []
    return None if field is None else field.with_name(column)
