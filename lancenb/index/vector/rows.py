"""Original vectors of rows named by row address (or stable row id), through the
dataset's public API: a refine step re-ranks an index's candidates with them.

Without stable row ids a row address is ``fragment id << 32 | offset``; the offset
counts deleted rows too, while ``LanceFragment.take`` counts live rows only, so each
fragment's live addresses (``with_row_address``, no column read) give the position;
a fragment without deletions needs no lookup (the offset is the position).
With stable row ids each fragment's live row ids are read the same way.
"""

from __future__ import annotations

import numpy as np

__all__ = ["vectors_of"]


def _ids_of(frag, stable: bool) -> np.ndarray:
    col = "_rowid" if stable else "_rowaddr"
    t = frag.to_table(columns=[], with_row_id=stable, with_row_address=not stable)
    return np.asarray(t.column(col).to_numpy(), dtype=np.uint64)


def vectors_of(ds, column: str, ids: np.ndarray):
    """``(vectors, found)``: the vectors of the rows in ``ids`` that still exist
    (``found``, a mask over ``ids``), in the order of ``ids[found]``."""
    ids = np.asarray(ids, dtype=np.uint64)
    stable = bool(getattr(ds, "stable_row_ids", False))
    found = np.zeros(len(ids), bool)
    parts: list = [None] * len(ids)
    frags = ds.get_fragments()
    if not stable:
        by_frag = {}
        for i, fid in enumerate((ids >> np.uint64(32)).tolist()):
            by_frag.setdefault(fid, []).append(i)
        frags = [f for f in frags if f.fragment_id in by_frag]
    for frag in frags:
        if not stable and frag.count_rows() == frag.physical_rows:
            # no deletions: an address's offset is the row's position among live rows
            hit = ((ids >> np.uint64(32)) == np.uint64(frag.fragment_id)) & ~found
            offs = (ids & np.uint64(0xFFFFFFFF)).astype(np.int64)
            hit &= offs < frag.physical_rows
            where = np.nonzero(hit)[0]
            if not len(where):
                continue
            pos_sel = offs[where]
        else:
            live = _ids_of(frag, stable)
            if not len(live):
                continue
            pos = np.searchsorted(live, ids)
            pos_c = np.minimum(pos, len(live) - 1)
            hit = (live[pos_c] == ids) & ~found
            if not hit.any():
                continue
            where = np.nonzero(hit)[0]
            pos_sel = pos_c[where]
        t = frag.take(pos_sel.tolist(), columns=[column])
        vec = t.column(column).combine_chunks()
        dim = vec.type.list_size
        arr = np.asarray(vec.flatten().to_numpy(zero_copy_only=False)).reshape(-1, dim)
        for j, i in enumerate(where.tolist()):
            parts[i] = arr[j]
        found |= hit
    keep = np.nonzero(found)[0]
    if not len(keep):
        return np.zeros((0, 0), np.float32), found
    return np.stack([parts[i] for i in keep.tolist()]), found
